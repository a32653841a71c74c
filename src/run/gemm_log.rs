//! hipBLASLt's log for a case: a variant that sets `HIPBLASLT_LOG_MASK` (32: the bench lines
//! that replay each GEMM) and no `HIPBLASLT_LOG_FILE` gets the file pointed into the run's
//! scratch folder, one per worker environment (hipBLASLt reads its variables once per
//! process, so the cases of one worker append to one file). Each case reads back only what
//! was appended while it ran, through `crate::rocm::hipblaslt`, into its `hipblaslt` record.
//!
//! Must not: start workers (the executor does) or read MIOpen's lines (stderr's, `crate::rocm`).
use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::report::HipblasltLog;

/// hipBLASLt's variables this reads.
pub const MASK_VAR: &str = "HIPBLASLT_LOG_MASK";
pub const FILE_VAR: &str = "HIPBLASLT_LOG_FILE";

/// The log of one case: the file and where the case's lines start in it.
#[derive(Debug)]
pub struct GemmLog {
    path: PathBuf,
    offset: u64,
}

impl GemmLog {
    /// For a case whose environment `vars` sets `HIPBLASLT_LOG_MASK`: the log file (the
    /// user's own `HIPBLASLT_LOG_FILE`, else one in `scratch` named after the environment,
    /// added to `vars`), and its current end.
    pub fn start(scratch: &Path, vars: &mut BTreeMap<String, String>) -> Option<GemmLog> {
        vars.get(MASK_VAR)?;
        let path = match vars.get(FILE_VAR) {
            Some(p) => PathBuf::from(p),
            None => {
                let env: String = vars.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
                use sha2::Digest;
                let digest = sha2::Sha256::digest(env.as_bytes());
                let hash: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
                let p = scratch.join(format!("hipblaslt-{hash}.log"));
                vars.insert(FILE_VAR.to_string(), p.display().to_string());
                p
            }
        };
        let offset = std::fs::metadata(&path).map_or(0, |m| m.len());
        Some(GemmLog { path, offset })
    }

    /// The GEMMs logged since [`GemmLog::start`]; `None` when none (or the file is gone).
    pub fn read(self) -> Option<HipblasltLog> {
        let mut file = std::fs::File::open(&self.path).ok()?;
        file.seek(SeekFrom::Start(self.offset)).ok()?;
        let mut reader = crate::rocm::LogReader::default();
        crate::rocm::read_stream(file.by_ref(), &mut reader).ok()?;
        reader.finish().hipblaslt
    }
}
