//! Exporters of a finished report, each behind the one [`Exporter`] trait (as hyperfine's
//! `export/` module): the terminal table ([`text`]), the Markdown table ([`markdown`]), both
//! followed by the answer block ([`answer`]) when the report has a `summary`, the CSV rows
//! ([`csv_table`]), the SVG bar chart ([`svg`]) and the CI dashboard formats
//! ([`dashboards`]: Bencher's BMF, github-action-benchmark's); [`rows`] orders the tables'
//! and the chart's rows by their axes and names them by what differs; [`ExportManager`] writes the
//! ones a command asked for ([`flags`]: which). Also the `plot REPORT.json -o FILE.svg` command.
//!
//! A new export format is one module here with an [`Exporter`] impl, plus its flag in
//! [`flags`] feeding [`ExportManager::add`].
//!
//! Must not: read workers' results or change the report; exporters only render it.
use std::path::{Path, PathBuf};

pub mod answer;
pub mod csv_table;
pub mod dashboards;
pub mod flags;
pub mod markdown;
pub mod profile;
pub mod rows;
pub mod svg;
pub mod text;

pub use flags::{DashboardExports, RunExports};
pub use markdown::markdown_table;
pub use svg::svg_chart;

use crate::report::{PassStats, Report};

/// Renders a finished report in one format.
pub trait Exporter {
    /// The report as this format's text.
    fn render(&self, report: &Report) -> anyhow::Result<String>;
}

/// Plain-text, column-aligned table for the terminal ([`text`]), then the answer block.
pub struct TextTable;

impl Exporter for TextTable {
    fn render(&self, report: &Report) -> anyhow::Result<String> {
        let block = report.summary.as_ref().map(answer::text).unwrap_or_default();
        Ok(text::render_table(report) + &profile::text(report) + &block + &profile::answer_text(report))
    }
}

/// Markdown table ([`markdown`]), then the answer section.
pub struct MarkdownTable;

impl Exporter for MarkdownTable {
    fn render(&self, report: &Report) -> anyhow::Result<String> {
        let block = report.summary.as_ref().map(answer::markdown).unwrap_or_default();
        Ok(markdown_table(report) + &profile::markdown(report) + &block + &profile::answer_markdown(report))
    }
}

/// One CSV row per case ([`csv_table`]).
pub struct CsvTable;

impl Exporter for CsvTable {
    fn render(&self, report: &Report) -> anyhow::Result<String> {
        csv_table::csv_rows(report)
    }
}

/// SVG bar chart ([`svg`]).
pub struct SvgChart;

impl Exporter for SvgChart {
    fn render(&self, report: &Report) -> anyhow::Result<String> {
        svg_chart(report)
    }
}

/// Bencher Metric Format JSON ([`dashboards::bmf`]).
pub struct BencherMetrics;

impl Exporter for BencherMetrics {
    fn render(&self, report: &Report) -> anyhow::Result<String> {
        dashboards::bmf(report)
    }
}

/// github-action-benchmark's `customSmallerIsBetter` JSON ([`dashboards::gab`]).
pub struct GithubActionBenchmark;

impl Exporter for GithubActionBenchmark {
    fn render(&self, report: &Report) -> anyhow::Result<String> {
        dashboards::gab(report)
    }
}

/// The exports a run asked for, each written to its file.
#[derive(Default)]
pub struct ExportManager {
    targets: Vec<(Box<dyn Exporter>, PathBuf)>,
}

impl ExportManager {
    /// Also write `exporter`'s rendering to `path` when a path is given.
    pub fn add(&mut self, exporter: impl Exporter + 'static, path: Option<&Path>) {
        if let Some(path) = path {
            self.targets.push((Box::new(exporter), path.to_path_buf()));
        }
    }

    /// Render and write every export (creating parent folders).
    pub fn write_all(&self, report: &Report) -> anyhow::Result<()> {
        for (exporter, path) in &self.targets {
            crate::util::files::write_new(path, exporter.render(report)?)?;
        }
        Ok(())
    }
}

/// Encode and decode stats of a case that was measured.
fn passes(case: &crate::report::CaseRecord) -> [(&'static str, Option<&PassStats>); 2] {
    [
        ("encode", case.outcome.encode.as_ref()),
        ("decode", case.outcome.decode.as_ref()),
    ]
}
