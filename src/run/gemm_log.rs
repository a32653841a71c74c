//! hipBLASLt's log for a case: a variant that sets `HIPBLASLT_LOG_MASK` (32: the bench lines
//! that replay each GEMM) and no `HIPBLASLT_LOG_FILE` gets the file pointed into the run's
//! scratch folder as `hipblaslt-HASH-%i.log`: hipBLASLt puts the process id for `%i` and
//! opens the file truncated, once per process, so each worker writes a file of its own (HASH
//! names the engine and environment). Each case reads back only what its worker appended
//! while it ran, through `crate::rocm::hipblaslt`, into its `hipblaslt` record. A path the
//! user gives is read the same way (`%i` is the worker's pid there too).
//!
//! Must not: start workers (the executor does) or read MIOpen's lines (stderr's, `crate::rocm`).
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::report::HipblasltLog;

/// hipBLASLt's variables this reads.
pub const MASK_VAR: &str = "HIPBLASLT_LOG_MASK";
pub const FILE_VAR: &str = "HIPBLASLT_LOG_FILE";
/// What hipBLASLt replaces by the process id in `HIPBLASLT_LOG_FILE`.
const PID: &str = "%i";

/// The log of one case: the file name (with `%i`) and each existing file's end when the case
/// started.
#[derive(Debug)]
pub struct GemmLog {
    pattern: PathBuf,
    ends: BTreeMap<PathBuf, u64>,
}

impl GemmLog {
    /// For a case of `engine` whose environment `vars` sets `HIPBLASLT_LOG_MASK`: the log
    /// file name (the user's `HIPBLASLT_LOG_FILE`, else one in `scratch`, added to `vars`),
    /// and where each of its files ends now.
    pub fn start(scratch: &Path, engine: &str, vars: &mut BTreeMap<String, String>) -> Option<GemmLog> {
        vars.get(MASK_VAR)?;
        let pattern = match vars.get(FILE_VAR) {
            Some(p) => PathBuf::from(p),
            None => {
                use sha2::Digest;
                let env: String = vars.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
                let digest = sha2::Sha256::digest(format!("{engine}\n{env}").as_bytes());
                let hash: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
                let p = scratch.join(format!("hipblaslt-{hash}-{PID}.log"));
                vars.insert(FILE_VAR.to_string(), p.display().to_string());
                p
            }
        };
        let ends = existing(&pattern)
            .into_iter()
            .filter_map(|p| Some((p.clone(), std::fs::metadata(&p).ok()?.len())))
            .collect();
        Some(GemmLog { pattern, ends })
    }

    /// The GEMMs the worker `pid` logged since [`GemmLog::start`]; `None` when none (or no
    /// file). A file shorter than it was (a new process truncated it) is read whole.
    pub fn read(self, pid: Option<u32>) -> Option<HipblasltLog> {
        let path = match self.pattern.to_str() {
            Some(p) if p.contains(PID) => PathBuf::from(p.replacen(PID, &pid?.to_string(), 1)),
            _ => self.pattern.clone(),
        };
        let mut file = std::fs::File::open(&path).ok()?;
        let len = file.metadata().ok()?.len();
        let offset = self.ends.get(&path).copied().filter(|end| *end <= len).unwrap_or(0);
        file.seek(SeekFrom::Start(offset)).ok()?;
        let mut reader = crate::rocm::LogReader::default();
        crate::rocm::read_stream(file.by_ref(), &mut reader).ok()?;
        reader.finish().hipblaslt
    }
}

/// The files `pattern` names now: itself, or with `%i` every file of its folder whose name
/// has its prefix and suffix.
fn existing(pattern: &Path) -> Vec<PathBuf> {
    let name = pattern.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let Some((prefix, suffix)) = name.split_once(PID) else {
        return vec![pattern.to_path_buf()];
    };
    let dir = pattern
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            n.len() > prefix.len() + suffix.len() && n.starts_with(prefix) && n.ends_with(suffix)
        })
        .map(|e| e.path())
        .collect()
}
