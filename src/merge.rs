//! `merge A.json B.json ... -o ALL.json`: one report from several runs or machines.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// Reports to merge.
    pub inputs: Vec<std::path::PathBuf>,
    /// Output report.
    #[arg(short, long)]
    pub output: std::path::PathBuf,
}
pub fn command(_args: MergeArgs) -> anyhow::Result<i32> {
    anyhow::bail!("merge: not implemented yet")
}
