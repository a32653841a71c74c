//! Exporters of a finished report: Markdown table and SVG bar chart.
#[derive(Debug, clap::Args)]
pub struct PlotArgs {
    /// Report to plot.
    pub report: std::path::PathBuf,
    /// SVG file to write.
    #[arg(short, long)]
    pub output: std::path::PathBuf,
}
pub fn plot_command(_args: PlotArgs) -> anyhow::Result<i32> {
    anyhow::bail!("plot: not implemented yet")
}
