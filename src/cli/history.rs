//! `wan-vae-bench history REPORTS|DIR...`: many reports over time, which update made a case
//! slower ([`crate::analysis::history`] fits and judges each series); exit 1 when some case
//! is slower now, 2 on unusable input.
use std::path::PathBuf;

use crate::analysis::history::{
    analyse, keep_what_history_reads, newest_per_machine, render, report_files, svg, time, SetAside,
};
use crate::report::Report;
use crate::util::error::UserError;

#[derive(Debug, clap::Args)]
pub struct HistoryArgs {
    /// Reports, or folders whose `*.json` files are reports, in any order (they are ordered
    /// by their `created_at`).
    #[arg(required = true, value_name = "REPORTS|DIR")]
    pub inputs: Vec<PathBuf>,
    /// Slowdown of the newest segment against the best earlier one that is a regression,
    /// percent (`5` or `5%`), as `compare`'s.
    #[arg(long, default_value = "5", value_parser = crate::analysis::compare::parse_percent)]
    pub threshold: f64,
    /// Significance level of Welch's t-test between the two segments' samples.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Read the other reports when some are dated more than an hour after now (a clock set
    /// wrong), and set those aside, each named; without it they are refused (exit 2): a
    /// report dated in the future would stay the newest run of every later history.
    #[arg(long = "skip-future-dates")]
    pub skip_future_dates: bool,
    /// Exit 1 also where the newest run of a series alone is slower beyond the threshold but
    /// its one or two samples cannot tell a noisy run from a slower one (said `RERUN`,
    /// exit 0 without it).
    #[arg(long = "fail-on-rerun")]
    pub fail_on_rerun: bool,
    /// Print the table as Markdown (for a CI job summary).
    #[arg(long)]
    pub markdown: bool,
    /// Also write each series with its steps, marked and labelled by what changed, as SVG.
    #[arg(long = "export-svg", value_name = "FILE")]
    pub export_svg: Option<PathBuf>,
    /// Also write the history as JSON (every field: docs/report-schema.md, "history --export-json").
    #[arg(long = "export-json", value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// BMF / github-action-benchmark exports: the newest report of each machine.
    #[command(flatten)]
    pub dashboards: crate::analysis::export::DashboardExports,
}

/// `wan-vae-bench history`.
pub fn command(args: HistoryArgs) -> anyhow::Result<i32> {
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        return Err(UserError::invalid("--alpha", args.alpha.to_string(), "a number in (0, 1)").into());
    }
    for (flag, p) in [("--export-svg", &args.export_svg), ("--export-json", &args.export_json)] {
        if let Some(p) = p {
            crate::util::files::check_output(p, &format!("{flag} file"))?;
        }
    }
    args.dashboards.check()?;
    exports_outside_inputs(&args)?;
    let files = report_files(&args.inputs)?;
    // No export may be one of the reports read, nor another export's file.
    let labels: Vec<String> = files.iter().map(|p| format!("input report {}", p.display())).collect();
    let inputs: Vec<_> = labels
        .iter()
        .zip(&files)
        .map(|(l, p)| (l.as_str(), Some(p.as_path())))
        .collect();
    let outputs = [
        &[
            ("--export-svg", args.export_svg.as_deref()),
            ("--export-json", args.export_json.as_deref()),
        ][..],
        &args.dashboards.files(),
    ]
    .concat();
    crate::util::files::check_distinct(&inputs, &outputs)?;
    let mut loaded = Vec::with_capacity(files.len());
    let mut future = Vec::new();
    let now = time::now();
    for path in files {
        let mut report = crate::analysis::compare::compat::load(&path)?;
        keep_what_history_reads(&mut report);
        let t = time::check(&report.created_at)
            .map_err(|why| UserError::file(&path, format!("created_at {:?} {why}", report.created_at)))?;
        // Reports are ordered by their time: one a clock put in the future would be the
        // newest run of every later history, and hide tonight's (issue 64).
        if t.0 > now + time::FUTURE_SLACK_S {
            let ahead = time::span(t.0 - now);
            if !args.skip_future_dates {
                return Err(UserError::file(
                    &path,
                    format!(
                        "created_at {:?} is {ahead} after now ({} by this machine's clock): a clock set wrong? \
                         Reports are ordered by their time, so this one would stay the newest run of every \
                         later history. Correct its created_at, move it aside, or pass --skip-future-dates \
                         to read the others",
                        report.created_at,
                        time::format(now)
                    ),
                )
                .into());
            }
            future.push(SetAside {
                path: path.display().to_string(),
                reason: format!(
                    "dated {}, {ahead} after now by this machine's clock: its place in time is unknown \
                     (--skip-future-dates)",
                    report.created_at
                ),
            });
            continue;
        }
        loaded.push((t, path, report));
    }
    if loaded.is_empty() {
        return Err(UserError::Other(format!(
            "every report is dated more than an hour after now ({}), and --skip-future-dates set them all \
             aside: nothing to read",
            future.iter().map(|f| f.path.as_str()).collect::<Vec<_>>().join(", ")
        ))
        .into());
    }
    if let Some((_, p, r)) = loaded
        .iter()
        .find(|(_, _, r)| r.schema_version != loaded[0].2.schema_version)
    {
        return Err(UserError::file(
            p,
            format!(
                "schema version {} differs from the others' {}",
                r.schema_version, loaded[0].2.schema_version
            ),
        )
        .into());
    }
    loaded.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let (paths, reports): (Vec<PathBuf>, Vec<Report>) = loaded.into_iter().map(|(_, p, r)| (p, r)).unzip();
    let mut history = analyse(&paths, &reports, args.threshold, args.alpha);
    history.set_aside.splice(0..0, future);
    let out = if args.markdown {
        render::markdown(&history)
    } else {
        render::text(&history)
    };
    crate::out!("{out}");
    if let Some(p) = &args.export_json {
        crate::util::files::write_new(p, serde_json::to_string_pretty(&history)? + "\n")?;
    }
    if let Some(p) = &args.export_svg {
        crate::util::files::write_new(p, svg::render(&history))?;
    }
    if args.dashboards.export_bmf.is_some() || args.dashboards.export_gab.is_some() {
        let mut exports = crate::analysis::export::ExportManager::default();
        args.dashboards.add_to(&mut exports);
        exports.write_all(&newest_per_machine(reports))?;
    }
    let fails = history.series.iter().any(|s| s.verdict.fails());
    Ok(i32::from(fails || (args.fail_on_rerun && history.reruns > 0)))
}

/// No export may be a `*.json` file of a folder given as input: the next `history` of that
/// folder would take it for a report and stop on it (exit 2). Refused before anything is
/// read, naming it, rather than skipped when read: a file of the folder that is not a
/// report is otherwise an error (a report cut short is never quietly left out), so history
/// would have to tell its own exports from a damaged report; and the user learns now, not
/// on tomorrow's run, that the export belongs beside the folder.
fn exports_outside_inputs(args: &HistoryArgs) -> Result<(), UserError> {
    let folders: Vec<(&PathBuf, PathBuf)> = args
        .inputs
        .iter()
        .filter(|p| p.is_dir())
        .filter_map(|p| Some((p, crate::util::files::resolve(p)?)))
        .collect();
    let exports = [
        ("--export-json", args.export_json.as_deref()),
        ("--export-svg", args.export_svg.as_deref()),
    ]
    .into_iter()
    .chain(args.dashboards.files());
    for (flag, path) in exports {
        let Some(path) = path else { continue };
        let Some(real) = crate::util::files::resolve(path) else {
            continue;
        };
        if real.extension().is_none_or(|x| x != "json") {
            continue; // history reads only `*.json` files of a folder
        }
        if let Some((folder, _)) = folders.iter().find(|(_, f)| real.parent() == Some(f.as_path())) {
            return Err(UserError::file(
                path,
                format!(
                    "{flag} is a .json file in {}, a folder history reads: every .json file there is taken \
                     for a report, so the next `history {}` would stop on it; write it beside the folder",
                    folder.display(),
                    folder.display()
                ),
            ));
        }
    }
    Ok(())
}
