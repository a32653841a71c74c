//! `compare BASELINE CURRENT`: per-case timing ratios, Welch's t-test, quality drops.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Baseline report.
    pub baseline: std::path::PathBuf,
    /// Current report.
    pub current: std::path::PathBuf,
}
pub fn command(_args: CompareArgs) -> anyhow::Result<i32> {
    anyhow::bail!("compare: not implemented yet")
}
