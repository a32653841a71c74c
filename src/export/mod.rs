//! Exporters of a finished report: Markdown table ([`markdown`]) and SVG bar chart
//! ([`svg`]), and the `plot REPORT.json -o FILE.svg` command.
pub mod markdown;
pub mod svg;

pub use markdown::markdown_table;
pub use svg::svg_chart;

use anyhow::Context;

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
    if let Some(dir) = args.output.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(&args.output, svg).with_context(|| format!("cannot write {}", args.output.display()))?;
    eprintln!("wrote {} ({} cases)", args.output.display(), report.cases.len());
    Ok(0)
}

/// Encode and decode stats of a case that was measured.
fn passes(case: &crate::report::CaseRecord) -> [(&'static str, Option<&PassStats>); 2] {
    [("encode", case.encode.as_ref()), ("decode", case.decode.as_ref())]
}
