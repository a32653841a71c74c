//! `wan-vae-bench logs FILE...|-`: what ROCm's libraries logged in any program's output,
//! read by [`crate::rocm`] ([`crate::rocm::summary::read_all`]); printed as text, written as
//! JSON (`--json`) or as the bundle ROCm/TheRock #2591 asks for (`--bundle`).
//!
//! Every input is read before anything is printed or written ([`crate::rocm::summary`]): a
//! file that cannot be read, or that holds no line of MIOpen's and no GEMM line, exits 2
//! naming it; outputs are checked before any input is read.
use std::path::PathBuf;

use crate::rocm::summary::{json_text, read_all};
use crate::rocm::{bundle, render};
use crate::util::error::UserError;

/// Arguments of `wan-vae-bench logs`.
#[derive(Debug, clap::Args)]
pub struct LogsArgs {
    /// Logs to read: any program's output with MIOpen lines (`MIOPEN_ENABLE_LOGGING_CMD=1`,
    /// `MIOPEN_LOG_LEVEL=5`) or hipBLASLt bench lines (`HIPBLASLT_LOG_MASK=32`), as logged,
    /// grepped or counted with `sort | uniq -c`; a bundle folder `--bundle` wrote; `-` reads
    /// standard input.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Also write the summary as JSON to FILE (`-`: on stdout, instead of the text).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write what AMD asks for in ROCm/TheRock #2591, ready to attach, into DIR (a new or
    /// empty folder): the unique hipBLASLt lines and MIOpenDriver commands sorted by count,
    /// the system context, and a README.
    #[arg(long, value_name = "DIR")]
    pub bundle: Option<PathBuf>,
}

/// `wan-vae-bench logs`.
pub fn command(args: LogsArgs) -> anyhow::Result<i32> {
    let stdin_inputs = args.files.iter().filter(|p| p.as_os_str() == "-").count();
    if stdin_inputs > 1 {
        return Err(UserError::Other("`-` (standard input) can be given once".into()).into());
    }
    // Outputs are checked before any input is read: nothing the user owns is overwritten.
    let json_file = args.json.as_ref().filter(|p| p.as_os_str() != "-");
    if let Some(path) = json_file {
        // The same file however spelled (a link, `./`, an absolute path) is refused; a
        // bundle folder stands for the count files read in it.
        let read: Vec<PathBuf> = args
            .files
            .iter()
            .filter(|f| f.as_os_str() != "-")
            .flat_map(|f| crate::rocm::summary::read_through(f))
            .collect();
        let inputs: Vec<crate::util::files::Named> = read.iter().map(|f| ("log file", Some(f.as_path()))).collect();
        crate::util::files::check_distinct(&inputs, &[("--json", Some(path.as_path()))])?;
        if stdin_inputs > 0 {
            check_not_stdin(path)?;
        }
        crate::util::files::check_output(path, "--json file")?;
    }
    if let Some(dir) = &args.bundle {
        bundle::check(dir)?;
        bundle::check_apart(dir, json_file.map(|p| ("--json", p.as_path())))?;
    }
    let json = read_all(&args.files)?;
    let to_stdout = args.json.as_ref().is_some_and(|p| p.as_os_str() == "-");
    if to_stdout {
        crate::outln!("{}", json_text(&json)?);
    } else {
        crate::out!("{}", render::text(&json));
    }
    if let Some(path) = json_file {
        crate::util::files::write_atomic(path, json_text(&json)? + "\n")?;
    }
    if let Some(dir) = &args.bundle {
        bundle::write(dir, &json, None)?;
        crate::errln!("bundle: {}", dir.display());
    }
    Ok(0)
}

/// Refuse (exit 2) a `--json` FILE that is the file standard input reads (`logs - --json FILE
/// < FILE`): writing it would replace the log being read. Standard input's file is known by
/// its own identity (`fstat` of descriptor 0), whatever path reached it.
fn check_not_stdin(path: &std::path::Path) -> Result<(), UserError> {
    let Ok(stdin) = crate::rocm::summary::stdin_metadata() else {
        return Ok(());
    };
    let Ok(out) = std::fs::metadata(path) else {
        return Ok(());
    };
    let same = crate::util::files::identity(&stdin).is_some_and(|id| Some(id) == crate::util::files::identity(&out));
    if same {
        return Err(UserError::file(
            path,
            "--json is the file standard input (`-`) reads: writing it would replace the log being read; \
             give --json another path",
        ));
    }
    Ok(())
}
