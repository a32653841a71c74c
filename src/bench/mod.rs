//! The benchmark run: matrix config, scheduler, worker processes, progress, report writing.
#[derive(Debug, clap::Args)]
pub struct RunArgs {}
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {}
pub fn run_command(_args: RunArgs) -> anyhow::Result<i32> {
    anyhow::bail!("run: not implemented yet")
}
pub fn worker_command(_args: WorkerArgs) -> anyhow::Result<i32> {
    anyhow::bail!("worker: not implemented yet")
}
