//! The export flags: `run`'s (`--export-markdown`, `--export-svg`, `--export-csv`) and the
//! CI dashboard exports that `run`, `merge` and `history` share (`--export-bmf`,
//! `--export-gab`), each a file name and the [`super::Exporter`] that fills it.
//!
//! Must not: render (the exporters do) or decide where the report goes.
use std::path::{Path, PathBuf};

use super::{BencherMetrics, CsvTable, ExportManager, GithubActionBenchmark, MarkdownTable, SvgChart};

/// `run`'s exports, written at the end of the run.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct RunExports {
    /// Also write the results table in Markdown to FILE (at the end of the run).
    #[arg(long = "export-markdown", value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Also write a bar chart of the results as SVG to FILE (at the end of the run).
    #[arg(long = "export-svg", value_name = "FILE")]
    pub export_svg: Option<PathBuf>,
    /// Also write one CSV row per case to FILE (at the end of the run).
    #[arg(long = "export-csv", value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    #[command(flatten)]
    pub dashboards: DashboardExports,
}

impl RunExports {
    /// Each export's flag and file (`None` when not asked for).
    pub fn files(&self) -> Vec<(&'static str, Option<&Path>)> {
        let mut v = vec![
            ("--export-markdown", self.export_markdown.as_deref()),
            ("--export-svg", self.export_svg.as_deref()),
            ("--export-csv", self.export_csv.as_deref()),
        ];
        v.extend(self.dashboards.files());
        v
    }

    /// The exports asked for.
    pub fn manager(&self) -> ExportManager {
        let mut m = ExportManager::default();
        m.add(MarkdownTable, self.export_markdown.as_deref());
        m.add(SvgChart, self.export_svg.as_deref());
        m.add(CsvTable, self.export_csv.as_deref());
        self.dashboards.add_to(&mut m);
        m
    }
}

/// The CI dashboard exports of `run`, `merge` and `history`.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct DashboardExports {
    /// Also write Bencher Metric Format JSON to FILE (`bencher run --adapter json --file
    /// FILE`): each case id with its encode and decode median (lower and upper value: the
    /// fastest and slowest run) and peak memory.
    #[arg(long = "export-bmf", value_name = "FILE")]
    pub export_bmf: Option<PathBuf>,
    /// Also write github-action-benchmark's `customSmallerIsBetter` JSON to FILE: one entry
    /// per case and measure (encode and decode median in s, peak memory in MiB).
    #[arg(long = "export-gab", value_name = "FILE")]
    pub export_gab: Option<PathBuf>,
}

impl DashboardExports {
    /// Each export's flag and file (`None` when not asked for).
    pub fn files(&self) -> [(&'static str, Option<&Path>); 2] {
        [
            ("--export-bmf", self.export_bmf.as_deref()),
            ("--export-gab", self.export_gab.as_deref()),
        ]
    }

    /// Add the exports asked for to `m`.
    pub fn add_to(&self, m: &mut ExportManager) {
        m.add(BencherMetrics, self.export_bmf.as_deref());
        m.add(GithubActionBenchmark, self.export_gab.as_deref());
    }

    /// Refuse (exit 2) an export file that may not be written, before anything is read.
    pub fn check(&self) -> anyhow::Result<()> {
        for (flag, path) in self.files() {
            if let Some(p) = path {
                crate::util::files::check_output(p, &format!("{flag} file"))?;
            }
        }
        Ok(())
    }
}
