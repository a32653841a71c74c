//! Exporters of a finished report: Markdown table ([`markdown`]) and SVG bar chart
//! ([`svg`]), and the `plot REPORT.json -o FILE.svg` command.
pub mod markdown;
pub mod svg;

pub use markdown::markdown_table;
pub use svg::svg_chart;

use crate::report::{PassStats, Report};

#[derive(Debug, clap::Args)]
pub struct PlotArgs {
    /// Report to plot.
    pub report: std::path::PathBuf,
    /// SVG file to write.
    #[arg(short, long)]
    pub output: std::path::PathBuf,
}

pub fn plot_command(args: PlotArgs) -> anyhow::Result<i32> {
    let report = Report::load(&args.report)?;
    let svg = svg_chart(&report)?;
    crate::files::write_new(&args.output, svg)?;
    eprintln!("wrote {} ({} cases)", args.output.display(), report.cases.len());
    Ok(0)
}

/// Encode and decode stats of a case that was measured.
fn passes(case: &crate::report::CaseRecord) -> [(&'static str, Option<&PassStats>); 2] {
    [("encode", case.encode.as_ref()), ("decode", case.decode.as_ref())]
}
