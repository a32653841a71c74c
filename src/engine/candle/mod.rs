//! The candle engine's worker: this binary's hidden `worker` command ([`command`]), which
//! measures one case in its own process ([`worker`]), with its testing hook ([`fault`]) and
//! process memory ([`memory`]).
//!
//! Must not: spawn processes or write the report (the parent does both).
use std::path::PathBuf;

use super::protocol;
use crate::error::UserError;

pub mod fault;
pub mod memory;
pub mod worker;

/// Arguments of the hidden `worker` command.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// The case to run, as [`protocol::WorkerSpec`] JSON.
    #[arg(long = "case-json")]
    pub case_json: String,
    /// Where to write the [`protocol::WorkerResult`] JSON.
    #[arg(long)]
    pub result: PathBuf,
}

/// `wan-vae-bench worker` (hidden): run one case, write its result JSON.
pub fn command(args: WorkerArgs) -> anyhow::Result<i32> {
    let spec: protocol::WorkerSpec = serde_json::from_str(&args.case_json)
        .map_err(|e| UserError::invalid("--case-json", &args.case_json, e.to_string()))?;
    let result = worker::run(&spec);
    crate::files::write_atomic(&args.result, serde_json::to_string_pretty(&result)?)?;
    Ok(result.exit_code())
}
