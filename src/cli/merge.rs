//! `wan-vae-bench merge A.json B.json ... -o ALL.json`: one report from several runs,
//! machines or the parts of a sharded run ([`crate::analysis::merge`] checks and merges).
//!
//! The output is locked while it is written (`<output>.lock`); a SIGINT or SIGTERM meanwhile
//! (reading an input that blocks, a FIFO) removes the lock and exits with 128 + the signal
//! number ([`crate::util::interrupt::guard_setup`]).
use std::path::PathBuf;

use crate::analysis::merge::merge_checked;

#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// Reports to merge.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Output report.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Merge even with different schema versions or model weights, or with parts of a
    /// sharded run missing.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub dashboards: crate::analysis::export::DashboardExports,
}

/// `wan-vae-bench merge`.
pub fn command(args: MergeArgs) -> anyhow::Result<i32> {
    let labels: Vec<String> = (1..=args.inputs.len()).map(|i| format!("input report {i}")).collect();
    let inputs: Vec<_> = labels
        .iter()
        .zip(&args.inputs)
        .map(|(l, p)| (l.as_str(), Some(p.as_path())))
        .collect();
    // The merged report and the dashboard exports: none an input, none another's file.
    let outputs = [&[("-o", Some(args.output.as_path()))][..], &args.dashboards.files()].concat();
    crate::util::files::check_distinct(&inputs, &outputs)?;
    crate::util::files::check_output(&args.output, "merged report")?;
    args.dashboards.check()?;
    let _lock = crate::util::lock::OutputLock::acquire(&args.output)?;
    // Reading the inputs may block (a FIFO): a SIGINT/SIGTERM until we are done removes the
    // lock file and exits with 128 + the signal number.
    let _guard = crate::util::interrupt::guard_setup(&[crate::util::lock::OutputLock::path_for(&args.output)])?;
    let mut reports = Vec::with_capacity(args.inputs.len());
    for path in &args.inputs {
        // As compare does: today's ids, and no negative, absurd or self-contradicting timings merged.
        let report = crate::analysis::compare::compat::load(path)?;
        reports.push(report);
    }
    let (merged, renames) = merge_checked(&args.inputs, reports, args.force)?;
    for r in &renames {
        crate::errln!(
            "note: duplicate case id {:?} from {} renamed to {:?}",
            r.from,
            args.inputs[r.input].display(),
            r.to
        );
    }
    let machines = crate::machine::identity::distinct_machines(
        merged.cases.iter().map(|c| c.system.as_ref().unwrap_or(&merged.system)),
    );
    if machines.len() > 1 {
        crate::errln!(
            "warning: the merged cases were timed on {} machines ({}): the answer calls no winner across \
             them, and `compare` names each pair's machines",
            machines.len(),
            machines.join("; ")
        );
    }
    merged.save_atomic(&args.output)?;
    let mut exports = crate::analysis::export::ExportManager::default();
    args.dashboards.add_to(&mut exports);
    // The dashboards get each case under its machine's name (`ID@HOST`), whatever else merged.
    exports.write_all(&crate::analysis::export::dashboards::with_machine_names(&merged))?;
    crate::errln!(
        "merged {} from {} into {}",
        crate::util::format::count(merged.cases.len(), "case"),
        crate::util::format::count(args.inputs.len(), "report"),
        args.output.display()
    );
    Ok(0)
}
