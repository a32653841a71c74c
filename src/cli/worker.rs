//! The hidden `wan-vae-bench worker --session DIR`: the candle engine's worker process,
//! started by `run` ([`crate::engine::candle::serve`]).

/// Arguments of the hidden `worker` command.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// Read cases from stdin, one line each: the spec file's path, a tab, the result
    /// file's path (docs/worker-protocol.md); end at the end of stdin. The value is the
    /// run's scratch folder (it names the run on the worker's command line).
    #[arg(long, value_name = "SCRATCH_DIR")]
    pub session: std::path::PathBuf,
}

/// `wan-vae-bench worker --session DIR`.
pub fn command(_args: WorkerArgs) -> anyhow::Result<i32> {
    crate::engine::candle::serve()
}
