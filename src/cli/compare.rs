//! `wan-vae-bench compare BASELINE CURRENT`: per-case timing ratios, Welch's t-test and
//! quality drops ([`crate::analysis::compare`]); exit 1 on a regression, 2 on unusable input.
use std::path::PathBuf;

use crate::analysis::compare::{compat, layers, load, machine_differences, render, verdict};
use crate::util::error::UserError;

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Baseline report.
    pub baseline: PathBuf,
    /// Current report.
    pub current: PathBuf,
    /// Slowdown a pass must exceed to be a regression, in percent (`5` or `5%`; a bare value
    /// between 0 and 1 is refused as ambiguous: write `0.5%` for half a percent).
    #[arg(long, default_value = "5", value_parser = crate::analysis::compare::parse_percent)]
    pub threshold: f64,
    /// Significance level of Welch's t-test.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// PSNR drop (dB) of the latent, decoded or round-trip output that is a regression.
    #[arg(long, default_value_t = 1.0)]
    pub psnr_drop: f64,
    /// PSNR (dB) treated as numerically lossless: values above it (and identical outputs,
    /// PSNR +inf) are clamped to it before comparing.
    #[arg(long, default_value_t = 100.0)]
    pub psnr_ceiling: f64,
    /// Compare even with different schema versions or model weights.
    #[arg(long)]
    pub force: bool,
    /// Refuse (exit 2) reports from machines with a different CPU model, instruction set
    /// or GPU, instead of warning.
    #[arg(long = "strict-system")]
    pub strict_system: bool,
    /// Print the comparison as JSON (every field: docs/report-schema.md, "compare --json").
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the comparison as Markdown (for a PR comment).
    #[arg(long)]
    pub markdown: bool,
}

/// `wan-vae-bench compare`.
pub fn command(args: CompareArgs) -> anyhow::Result<i32> {
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        return Err(UserError::invalid("--alpha", args.alpha.to_string(), "a number in (0, 1)").into());
    }
    if args.psnr_drop.is_nan() || args.psnr_drop < 0.0 {
        return Err(UserError::invalid("--psnr-drop", args.psnr_drop.to_string(), "a non-negative dB value").into());
    }
    let baseline = compat::load(&args.baseline)?;
    let current = compat::load(&args.current)?;
    let machine = machine_differences(&baseline, &current);
    if !machine.is_empty() && args.strict_system {
        return Err(UserError::Other(format!(
            "refusing to compare {} and {}: measured on different machines: {}; drop --strict-system to \
             compare anyway",
            args.baseline.display(),
            args.current.display(),
            machine.join("; ")
        ))
        .into());
    }
    let problems = compat::incompatibilities(&baseline, &current);
    if !problems.is_empty() && !args.force {
        return Err(UserError::Other(format!(
            "refusing to compare {} and {}: {}; pass --force to compare anyway",
            args.baseline.display(),
            args.current.display(),
            problems.join("; ")
        ))
        .into());
    }
    let rules = verdict::Rules {
        threshold: args.threshold,
        alpha: args.alpha,
        psnr_drop_db: args.psnr_drop,
        psnr_ceiling_db: args.psnr_ceiling,
    };
    let mut cmp = verdict::compare(&baseline, &current, rules);
    if cmp.cases.is_empty() {
        return Err(UserError::Other(format!(
            "{} and {} have no case id in common, so nothing was compared ({} case(s) only in the baseline, \
             {} only in the current report); run the same matrix for both",
            args.baseline.display(),
            args.current.display(),
            cmp.only_in_baseline.len(),
            cmp.only_in_current.len()
        ))
        .into());
    }
    for w in load::busy_warnings(&baseline, &current) {
        crate::errln!("warning: {w}");
        cmp.warnings.push(w);
    }
    load::attribute(&mut cmp, &current);
    for m in machine {
        crate::errln!("warning: {m}: timings may differ for that reason alone");
        cmp.warnings
            .push(format!("{m}: timings may differ for that reason alone"));
    }
    for (side, report) in [("baseline", &baseline), ("current", &current)] {
        let throttled: Vec<&str> = report
            .cases
            .iter()
            .filter(|c| c.outcome.throttled())
            .map(|c| c.id.as_str())
            .collect();
        if let Some(first) = throttled.first() {
            let w = format!(
                "the {side} report has {} case(s) that ran throttled (e.g. {first}): their times measure the \
                 device's cooling, so a difference there may be heat, not a regression",
                throttled.len()
            );
            crate::errln!("warning: {w}");
            cmp.warnings.push(w);
        }
    }
    cmp.baseline = args.baseline.display().to_string();
    cmp.current = args.current.display().to_string();
    for p in problems {
        crate::errln!("warning: {p} (compared anyway: --force)");
        cmp.warnings.push(format!("{p} (compared anyway: --force)"));
    }
    let out = if args.json {
        render::json(&cmp)?
    } else if args.markdown {
        render::markdown(&cmp) + &layers::render(&cmp.layer_changes, true)
    } else {
        render::text(&cmp) + &layers::render(&cmp.layer_changes, false)
    };
    crate::out!("{out}");
    Ok(i32::from(cmp.regression))
}
