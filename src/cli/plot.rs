//! `wan-vae-bench plot REPORT -o FILE`: a report as an SVG bar chart
//! ([`crate::analysis::export::svg`]).
use crate::analysis::export::{ExportManager, SvgChart};

#[derive(Debug, clap::Args)]
pub struct PlotArgs {
    /// Report to plot.
    pub report: std::path::PathBuf,
    /// SVG file to write.
    #[arg(short, long)]
    pub output: std::path::PathBuf,
}

/// `wan-vae-bench plot REPORT -o FILE`.
pub fn command(args: PlotArgs) -> anyhow::Result<i32> {
    crate::util::files::check_distinct(&[("report", Some(&args.report))], &[("-o", Some(&args.output))])?;
    crate::util::files::check_output(&args.output, "plot output")?;
    // The output may be another run's report: its lock says so (and is held while we write).
    let _lock = crate::util::lock::OutputLock::acquire(&args.output)?;
    // As compare does: today's ids, and no negative, absurd or self-contradicting timings drawn.
    let report = crate::analysis::compare::compat::load(&args.report)?;
    let mut exports = ExportManager::default();
    exports.add(SvgChart, Some(&args.output));
    exports.write_all(&report)?;
    let cases = crate::util::format::count(report.cases.len(), "case");
    crate::errln!("wrote {} ({cases})", args.output.display());
    Ok(0)
}
