//! What a run will do, decided before anything runs: the matrix size limit (counted from
//! the axes, before a single case is built), the one-per-run warning for frame counts that
//! are not `1+4k`, the one-per-run note naming knob values that collapse where they do not
//! act (and, from `levers`, lever values an engine does not take), and `run --list` (the planned cases with their analytic cost).
//!
//! Must not: spawn workers or write files.
use std::fmt::Write;

use unicode_width::UnicodeWidthStr;

use super::forecast::{self, Rates};
use super::matrix;
use super::options::BenchOptions;
use crate::machine::cpu_bf16::CpuBf16;
use crate::model::Config;
use crate::plan::axes::{Applies, AXES, ENGINE, FRAMES};
use crate::report::settings::CaseSettings;
use crate::util::error::UserError;

/// Default largest matrix `run` accepts (`--max-cases` raises it).
pub const DEFAULT_MAX_CASES: u64 = 10_000;

/// Refuse a matrix larger than `max_cases` (exit 2, naming its size and the way out). The
/// count comes from the axes, before a single case is built.
pub fn check_size(opts: &BenchOptions, max_cases: u64) -> Result<u64, UserError> {
    let n = opts.case_count();
    if n > max_cases {
        return Err(UserError::Other(format!(
            "the matrix has {n} cases ({}), more than the limit of {max_cases}; shrink an axis, or raise the \
             limit with --max-cases {n}",
            opts.axes.describe()
        )));
    }
    Ok(n)
}

/// The warning for frame counts that are not `1+4k` (the VAE uses the first `1+4k`
/// frames), one line for the whole run; `None` when every count is `1+4k`.
pub fn frames_warning(opts: &BenchOptions) -> Option<String> {
    let odd: Vec<String> = opts
        .axes
        .each(&FRAMES)
        .filter_map(|s| {
            let f = s.frames;
            let used = crate::model::frames_used(f).ok()?;
            (used != f).then(|| format!("{f} -> {used}"))
        })
        .collect();
    (!odd.is_empty()).then(|| {
        format!(
            "warning: frame counts that are not 1+4k: the VAE encodes only the first 1+4k frames ({}); \
             each case records frames_used and its frames/s counts those",
            odd.join(", ")
        )
    })
}

/// The warnings and notes a run prints once before it starts: [`frames_warning`],
/// [`no_gpu_warning`], [`bf16_warning`], [`collapsed_knobs`], [`collapsed_temporal`] and the levers' unplanned values ([`crate::plan::levers::unplanned_note`]).
pub fn notes(opts: &BenchOptions, fault_hooks: bool) -> impl Iterator<Item = String> {
    [
        frames_warning(opts),
        // `--fault-hooks`' fake workers need no GPU.
        no_gpu_warning(opts).filter(|_| !fault_hooks),
        bf16_warning(opts),
        collapsed_knobs(opts),
        collapsed_temporal(opts),
        crate::plan::levers::unplanned_note(opts),
    ]
    .into_iter()
    .flatten()
}

/// The note for knob values given that do not act for an engine on the device (the PyTorch
/// knobs but TF32 with candle, all of them on the CPU, TF32 on an AMD-only machine): they collapse into one
/// case recorded `n/a`, and the run says so once, naming the values, the engines and why;
/// `None` when every value given is planned.
pub fn collapsed_knobs(opts: &BenchOptions) -> Option<String> {
    let device = &opts.device;
    let mut parts = Vec::new();
    for axis in AXES.iter().filter(|a| a.applies == Applies::WhereKnobsAct) {
        let given = opts.axes.get(axis);
        if given.len() == 1 && given[0] == axis.default {
            continue; // nothing asked for
        }
        let mut engines = Vec::new();
        for e in opts.axes.each(&ENGINE) {
            let spec = crate::engine::spec(e.engine);
            let planned: std::collections::BTreeSet<String> = opts
                .axes
                .each(axis)
                .map(|s| (axis.get)(&spec.run_as(&CaseSettings { engine: e.engine, ..s }, device)))
                .collect();
            if planned.len() < given.len() || planned.iter().any(|v| !given.contains(v)) {
                engines.push(format!(
                    "{} ({})",
                    e.engine.name(),
                    planned.into_iter().collect::<Vec<_>>().join(",")
                ));
            }
        }
        if !engines.is_empty() {
            parts.push(format!(
                "{} {}: planned as {}",
                axis.flag,
                given.join(","),
                engines.join(", ")
            ));
        }
    }
    (!parts.is_empty()).then(|| {
        format!(
            "note: knob values that do not act on {device} were collapsed: {}; the PyTorch knobs act only with \
             the Python engines on cuda:N, and TF32 only on NVIDIA GPUs (candle's too)",
            parts.join("; ")
        )
    })
}

/// Every case checked before any runs (exit 2): its clip against what a tensor can hold
/// ([`crate::engine::clip::check_shape`]), its size and spatial tile against the model, and a `comfyui` case's tile against ComfyUI's node limits
/// ([`crate::engine::comfyui_nodes::check`]).
pub fn check_cases(cases: &[matrix::Case], cfg: &Config) -> Result<(), UserError> {
    for case in cases {
        let s = &case.settings;
        crate::engine::clip::check_shape(s.frames, s.width, s.height)?;
        cfg.check_size(case.settings.width, case.settings.height)?;
        if let Some(t) = &case.settings.tiling {
            cfg.check_tiling(t)?;
        }
        crate::engine::comfyui_nodes::check(&case.settings)?;
    }
    Ok(())
}

/// The note for temporal tiles given with encode-only workloads: temporal tiling splits the
/// decode only, so such a case would time the same encode as the untiled one; it is planned
/// untiled in time ([`matrix::expand`]), and the run says so once. `None` when nothing collapsed.
pub fn collapsed_temporal(opts: &BenchOptions) -> Option<String> {
    let tiles = opts.axes.get(&crate::plan::axes::TEMPORAL_TILE);
    let encode_only = opts.axes.each(&crate::plan::axes::PASSES).any(|s| !s.passes.decodes());
    (encode_only && tiles.iter().any(|t| t != "none")).then(|| {
        format!(
            "note: --temporal-tile {} does not act on encode-only cases (temporal tiling splits the decode only): \
             they are planned untiled in time",
            tiles.join(",")
        )
    })
}

/// `run --list`: every planned case (references included; with `--shard K/N`, those of part
/// K) with its passes, the GFLOP of each pass as the model computes it (a tiled case's
/// tiles with their overlap: [`crate::model::flops::computed_gflop`]), the total over warmup
/// and timed passes, and its forecast from the rates measured on this machine
/// ([`super::forecast`]; "no rate measured yet" without one).
pub fn list(
    opts: &BenchOptions,
    cfg: &Config,
    config_note: &str,
    shard: Option<super::shard::ShardSpec>,
) -> Result<String, UserError> {
    let mut cases = matrix::expand(opts);
    check_cases(&cases, cfg)?;
    matrix::add_references(&mut cases);
    matrix::check_unique(&cases)?;
    if opts.control {
        super::control::add_controls(&mut cases);
    }
    let part = super::shard::apply(&mut cases, shard, opts, cfg);
    let passes = opts.warmup + opts.runs;
    let this = crate::machine::system::collect();
    let rates = Rates::read(&forecast::folders(opts.output.as_deref()), &this);
    let cpu = crate::machine::cpu_bf16::cpu_bf16();
    let ids: Vec<String> = cases
        .iter()
        .map(|c| {
            if c.added_as_reference {
                format!("{} (added)", c.id)
            } else if c.added_as_control {
                format!("{} (A/A control)", c.id)
            } else {
                c.id.clone()
            }
        })
        .collect();
    // Display width, not chars: env names may be wide (CJK) or non-ASCII.
    let width = ids.iter().map(|id| id.width()).max().unwrap_or(4).max(4);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<width$}  {:<13}  {:>12}  {:>12}  {:>14}  forecast",
        "case", "passes", "encode GFLOP", "decode GFLOP", "total GFLOP"
    );
    let (mut grand, mut grand_s, mut unrated) = (0.0, 0.0, std::collections::BTreeSet::new());
    let mut emulated = 0;
    for (c, id) in cases.iter().zip(&ids) {
        let s = &c.settings;
        // Only the passes the case runs are counted, each tile with its overlap.
        let (e, d) = forecast::gflop(cfg, s);
        let label = match (s.passes.encodes(), s.passes.decodes()) {
            (true, true) => "encode+decode",
            (true, false) => "encode",
            _ => "decode",
        };
        let total = (e + d) * passes as f64;
        grand += total;
        let mut when = match rates.forecast(cfg, s, &opts.device, passes) {
            Some(f) => {
                grand_s += f;
                let past = if f > opts.timeout_s { " (past the timeout)" } else { "" };
                format!("{}{past}", forecast::duration(f))
            }
            None => {
                unrated.insert(format!("{} {} on {}", s.engine.name(), s.precision.name(), opts.device));
                "-".to_string()
            }
        };
        if bf16_emulated(s, &opts.device, &cpu) {
            emulated += 1;
            when.push_str(" (bf16 emulated: may wait out the timeout)");
        }
        let pad = " ".repeat(width - id.width());
        let _ = writeln!(
            out,
            "{id}{pad}  {label:<13}  {e:>12.2}  {d:>12.2}  {total:>14.2}  {when}"
        );
    }
    if let Some(p) = part {
        let _ = write!(
            out,
            "shard {} of plan {}: {} of its {} cases; ",
            p.label(),
            p.plan_fingerprint,
            p.shard_cases,
            p.planned_cases
        );
    }
    let _ = writeln!(
        out,
        "{} case(s), {} warmup + {} timed pass(es) of each, {grand:.2} GFLOP in total; timed in {}{config_note}",
        cases.len(),
        opts.warmup,
        opts.runs,
        match opts.schedule {
            crate::report::values::Schedule::Rounds => format!(
                "interleaved rounds of {} run(s) a visit, each workload's settings in workers alive side by side",
                opts.round_runs
            ),
            crate::report::values::Schedule::Blocks => "blocks, one worker at a time".to_string(),
        }
    );
    let rated = cases.len()
        - cases
            .iter()
            .filter(|c| rates.forecast(cfg, &c.settings, &opts.device, passes).is_none())
            .count();
    let _ = writeln!(out, "{}", forecast_line(&rates, rated, cases.len(), grand_s, &unrated));
    if emulated > 0 {
        let _ = writeln!(
            out,
            "{} in bf16 on a CPU without native bf16, which PyTorch emulates (the warning above): leave bf16 out \
             or raise --timeout",
            crate::util::format::count(emulated, "PyTorch case")
        );
    }
    Ok(out)
}

/// The forecast's line under `--list`: the total of the cases with a measured rate, where the
/// rates come from, and which engines and precisions have none yet.
fn forecast_line(
    rates: &Rates,
    rated: usize,
    all: usize,
    seconds: f64,
    unrated: &std::collections::BTreeSet<String>,
) -> String {
    let none: Vec<&str> = unrated.iter().map(String::as_str).collect();
    let missing = format!(
        "no rate measured yet for {} (a run of one small case of each on this machine, its report in {}, gives one)",
        crate::util::format::bounded(&none, ", ", 4),
        rates.places()
    );
    if rated == 0 {
        return format!("forecast: {missing}");
    }
    let of = if rated == all {
        format!("the {}", crate::util::format::count(all, "case"))
    } else {
        format!("{rated} of the {all} cases")
    };
    let mut line = format!(
        "forecast: {} for the passes of {of} (from {}; a forecast, not a measurement: model loads and worker \
         starts not included)",
        forecast::duration(seconds),
        rates.source()
    );
    if !unrated.is_empty() {
        line.push_str(&format!("; {missing}"));
    }
    line
}

/// The warning of a `cuda:N` run on a machine that shows no GPU
/// ([`crate::machine::device::no_gpu_for`]): its cases end `unsupported` without a worker.
pub fn no_gpu_warning(opts: &BenchOptions) -> Option<String> {
    let why = crate::machine::device::no_gpu_for(&opts.device)?;
    Some(format!(
        "warning: {why}; the {} of this matrix will each end `unsupported` without running",
        crate::util::format::count(opts.case_count() as usize, "case")
    ))
}

/// Whether a case's bf16 is emulated on this CPU (issue 67, item 2): a PyTorch engine in
/// bf16 on the CPU of a machine whose flags name no native bf16
/// ([`crate::machine::cpu_bf16`]); candle has its own kernels.
pub fn bf16_emulated(s: &CaseSettings, device: &str, cpu: &CpuBf16) -> bool {
    *cpu == CpuBf16::Emulated
        && device.trim().eq_ignore_ascii_case("cpu")
        && s.precision == crate::model::Precision::Bf16
        && crate::engine::spec(s.engine).runs_python()
}

/// The warning, before a run (and `--list`), of PyTorch bf16 cases on a CPU that emulates
/// bf16: each may run until its timeout. `None` when no case is one.
pub fn bf16_warning(opts: &BenchOptions) -> Option<String> {
    let cpu = crate::machine::cpu_bf16::cpu_bf16();
    if cpu != CpuBf16::Emulated {
        return None;
    }
    let cases: Vec<matrix::Case> = matrix::expand(opts)
        .into_iter()
        .filter(|c| bf16_emulated(&c.settings, &opts.device, &cpu))
        .collect();
    let first = cases.first()?;
    let engines: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.settings.engine.name()).collect();
    Some(format!(
        "warning: this CPU has no native bf16 (neither {} in /proc/cpuinfo's flags): PyTorch emulates it, so \
         the {} in bf16 on the cpu ({}, e.g. {}) may each run until the timeout ({}): on such a CPU a torch bf16 \
         case of 5 frames at 64x64 took over 8 minutes where fp32 takes seconds; leave bf16 out (--precision \
         fp32) or raise --timeout",
        crate::machine::cpu_bf16::NATIVE_BF16_FLAGS.join(" nor "),
        crate::util::format::count(cases.len(), "case"),
        engines.into_iter().collect::<Vec<_>>().join(", "),
        first.id,
        forecast::duration(opts.timeout_s)
    ))
}

/// The model config `run --list` costs the cases with: the checkpoint's when it is local
/// (or already in the Hub cache), else that of `--model`, of the model the Hub reference
/// names (Wan 2.2 for `wan2.2`), or the Wan 2.1 VAE's, said in the returned note. Never
/// downloads.
pub fn list_config(
    reference: &str,
    model: Option<crate::model::ModelKind>,
) -> anyhow::Result<(crate::model::Config, String)> {
    use crate::weights::source::{self, WeightsRef};
    let mut named = None;
    let path = match source::parse(reference)? {
        WeightsRef::Synthetic => None,
        WeightsRef::Local(p) => Some(p),
        WeightsRef::Hub(h) => {
            // Not cached: the model its name says (`Wan2.2-TI2V-5B`, `wan2.2_vae`).
            let name = format!("{}/{}", h.repo, h.file).to_ascii_lowercase();
            if name.contains("2.2") || name.contains("2_2") {
                named = Some(crate::model::ModelKind::Wan22);
            }
            source::hub::lookup_cache(&source::HubSettings::from_env().cache_dir, &h)
                .ok()
                .map(|hit| hit.path)
        }
    };
    let asked = model.or(named).unwrap_or(crate::model::ModelKind::Wan21);
    Ok(match path {
        None if reference.trim().eq_ignore_ascii_case("synthetic") => (asked.config(), String::new()),
        None => (
            asked.config(),
            format!(" (weights not in the cache: costed as the {})", asked.title()),
        ),
        Some(p) => (crate::weights::header::check_file(&p)?.checked.config, String::new()),
    })
}
