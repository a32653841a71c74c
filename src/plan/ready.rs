//! The checked plan, [`Plan`]: the one step from the merged options, the model's config and
//! the user's input file to the cases a run measures. Every check of what a run will do is
//! made here, once, before anything runs ("parse, don't validate"): the matrix size and
//! `--list` ([`check_matrix`]), the input against `--frames`/`--size`/`--passes`, each case
//! against the model, the unique ids, the shard, the order, the trace files a profiled pass
//! will write, what the device and the engines can run, and the memory every engine's clip
//! needs. A [`Plan`] is only made by [`Plan::build`]; `crate::run` takes one and checks no
//! flag again.
//!
//! Must not: spawn workers, time anything or write a report (that is `crate::run`).
use std::path::Path;

use super::check;
use super::flags::MatrixFlags;
use super::matrix::{self, Case};
use super::options::BenchOptions;
use super::shard::{self, ShardSpec};
use super::user_input::{self, InputFile};
use super::weights_choice::ResolvedModel;
use crate::plan::axes::{ENV, FRAMES, PASSES, SIZE};
use crate::report::values::Order;
use crate::util::error::UserError;

/// What the run's flags say of the plan beyond the options.
pub struct Request<'a> {
    /// The `run` flags of the matrix (to tell a `--frames`/`--size` the input overrides).
    pub flags: &'a MatrixFlags,
    /// `--max-cases`, or its default.
    pub max_cases: u64,
    /// `--list`: print the planned cases and end.
    pub list: bool,
    /// `--shard K/N`.
    pub shard: Option<ShardSpec>,
    /// `--export-trace DIR`: the trace files each profiled pass writes there.
    pub export_trace: Option<&'a Path>,
    /// `--fault-hooks` (tests only).
    pub fault_hooks: bool,
}

/// What the check of the matrix leaves: go on, or the `--list` text (the run ends there).
pub enum Checked {
    Go,
    Listed(String),
}

/// The matrix's size against `--max-cases` (counted from the axes, before a case is built),
/// the one-per-run notes (printed), and `--list`. Called before the weights are resolved
/// when the frames and size are the flags', else by [`Plan::build`] once the input is read.
pub fn check_matrix(opts: &BenchOptions, req: &Request) -> anyhow::Result<Checked> {
    check::check_size(opts, req.max_cases)?;
    for w in check::notes(opts, req.fault_hooks) {
        crate::errln!("{w}");
    }
    if !req.list {
        return Ok(Checked::Go);
    }
    let (cfg, note) = check::list_config(&opts.weights, opts.model)?;
    Ok(Checked::Listed(check::list(opts, &cfg, &note, req.shard)?))
}

/// The run's checked plan: the options as the input left them, the model, the input, the
/// cases in run order with the references they need, the shuffle seed and the shard.
// The private field, not `#[non_exhaustive]` (which binds only other crates), keeps the other
// modules of this crate from making a `Plan` without `Plan::build`.
#[allow(clippy::manual_non_exhaustive)]
pub struct Plan {
    pub opts: BenchOptions,
    pub model: ResolvedModel,
    pub input: Option<InputFile>,
    pub cases: Vec<Case>,
    pub seed: Option<u64>,
    pub shard: Option<crate::report::shard::ShardRecord>,
    /// Only [`Plan::build`] makes one.
    _checked: (),
}

impl Plan {
    /// Check everything a run will do and expand its cases (see the module). `Ok(Err(text))`
    /// is `--list`'s text when the input decided the frames and size.
    pub fn build(mut opts: BenchOptions, model: ResolvedModel, req: &Request) -> anyhow::Result<Result<Plan, String>> {
        // Read and checked once, in the parent, against the model's config; the workers get
        // the checked tensor as a file.
        let input = match opts.input.clone() {
            None => None,
            Some(path) => {
                let file = user_input::load(&path, opts.input_tensor.as_deref(), &model.cfg)?;
                apply_input(&mut opts, req.flags, &file)?;
                if let Checked::Listed(text) = check_matrix(&opts, req)? {
                    return Ok(Err(text));
                }
                Some(file)
            }
        };
        let mut cases = matrix::expand(&opts);
        if cases.is_empty() {
            // Unusable input, not a run of nothing: no report is written (an existing one stays).
            let why = super::levers::unplanned_note(&opts).map_or(String::new(), |n| format!(" ({n})"));
            return Err(UserError::Other(format!("nothing to run: the matrix plans no case{why}")).into());
        }
        check::check_cases(&cases, &model.cfg)?;
        matrix::add_references(&mut cases);
        matrix::check_unique(&cases)?;
        // Before the shard, so that the plan's fingerprint and counts hold the controls
        // whichever part runs them; a control shares its default's part (`shard::units`).
        if opts.control {
            super::control::add_controls(&mut cases);
            matrix::check_unique(&cases)?;
        }
        let shard = shard::apply(&mut cases, req.shard, &opts, &model.cfg);
        let seed = order(&mut cases, opts.order, opts.seed);
        if let Some(dir) = req.export_trace {
            check_traces(&cases, dir)?;
        }
        let settings: Vec<_> = cases.iter().map(|c| c.settings.clone()).collect();
        let latent = input.as_ref().is_some_and(|i| i.is_latent);
        crate::engine::preparer::check_run(&opts.device, &settings, latent, req.fault_hooks)?;
        let plan = Plan {
            opts,
            model,
            input,
            cases,
            seed,
            shard,
            _checked: (),
        };
        // Every engine's clip must fit in memory (the parent makes it for the Python worker,
        // candle's worker makes its own, and the parent reads each decoded video back for
        // its quality): checked before anything is created.
        let sizes: std::collections::BTreeSet<_> = plan
            .cases
            .iter()
            .map(|c| (c.settings.frames, c.settings.width, c.settings.height))
            .collect();
        for (frames, width, height) in sizes {
            crate::engine::clip::check_fits(frames, width, height)?;
        }
        Ok(Ok(plan))
    }

    /// Whether any case runs in the Python worker (the run then needs an interpreter, and
    /// the files every engine reads).
    pub fn runs_python(&self) -> bool {
        self.cases
            .iter()
            .any(|c| crate::engine::spec(c.settings.engine).runs_python())
    }

    /// The variables each env variant of the plan sets or removes, by variant (the report's
    /// `run.env_variants`; every part of a sharded plan records all of them).
    pub fn env_variants(&self) -> std::collections::BTreeMap<String, Vec<String>> {
        let opts = &self.opts;
        let names = |variant: &String| -> Vec<String> {
            let set = opts.variants.get(variant).into_iter().flat_map(|v| v.keys());
            let unset = opts.unset.get(variant).into_iter().flatten();
            let all: std::collections::BTreeSet<&String> = set.chain(unset).collect();
            all.into_iter().cloned().collect()
        };
        opts.axes.get(&ENV).iter().map(|v| (v.clone(), names(v))).collect()
    }

    /// The clips the parent writes for the Python worker, one per frames x size of the run;
    /// none when no case runs in it.
    pub fn clip_sizes(&self) -> std::collections::BTreeSet<(usize, usize, usize)> {
        if !self.runs_python() {
            return Default::default();
        }
        let size = |c: &Case| (c.settings.frames, c.settings.width, c.settings.height);
        self.cases.iter().map(size).collect()
    }
}

/// The run order: as written, or shuffled with the seed (drawn when none is given; drawn
/// seeds stay below 2^53 so that JSON readers using doubles keep them exact).
pub fn order<T>(items: &mut [T], order: Order, seed: Option<u64>) -> Option<u64> {
    match order {
        Order::AsWritten => None,
        Order::Shuffled => {
            let seed = seed.unwrap_or_else(crate::util::shuffle::fresh_seed);
            crate::util::shuffle::shuffle(items, seed);
            Some(seed)
        }
    }
}

/// Each trace a profiled pass will write, checked as every output is, before any case runs:
/// a folder or a FIFO at its name would be replaced (torch's rename) or found only when the
/// case's profile is lost.
fn check_traces(cases: &[Case], dir: &Path) -> anyhow::Result<()> {
    for c in cases {
        let stem = crate::report::profile::options::file_name(&c.id);
        let passes = [
            ("encode", c.settings.passes.encodes()),
            ("decode", c.settings.passes.decodes()),
        ];
        for (pass, _) in passes.iter().filter(|(_, timed)| *timed) {
            crate::util::files::check_output(
                &crate::report::profile::options::trace_file(&dir.join(&stem), pass),
                "--export-trace file",
            )?;
        }
    }
    Ok(())
}

/// Frames and size come from the input file: a `--frames`/`--size` that disagrees is an
/// error naming both; a latent can only be decoded.
fn apply_input(opts: &mut BenchOptions, flags: &MatrixFlags, file: &InputFile) -> anyhow::Result<()> {
    let path = file.record.path.as_str();
    let what = format!(
        "--input {path} (tensor `{}` {:?}: {} frames at {}x{})",
        file.record.tensor, file.record.shape, file.frames, file.width, file.height
    );
    let frames = file.frames.to_string();
    if let Some(given) = flags.axes.get(&FRAMES).filter(|g| *g != [frames.as_str()]) {
        return Err(UserError::Other(format!(
            "--frames {} conflicts with {what}: frames come from the input; drop --frames",
            given.join(",")
        ))
        .into());
    }
    let size = format!("{}x{}", file.width, file.height);
    if let Some(given) = flags.axes.get(&SIZE).filter(|g| *g != [size.as_str()]) {
        return Err(UserError::Other(format!(
            "--size {} conflicts with {what}: the size comes from the input; drop --size",
            given.join(",")
        ))
        .into());
    }
    if file.is_latent {
        if let Some(p) = opts.axes.each(&PASSES).map(|s| s.passes).find(|p| p.encodes()) {
            return Err(UserError::Other(format!(
                "{what} is a latent, which can only be decoded, but passes includes `{}`: use --passes decode",
                p.name()
            ))
            .into());
        }
    }
    opts.axes.set(&FRAMES, &[frames], "--input")?;
    opts.axes.set(&SIZE, &[size], "--input")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_order() {
        let mut a: Vec<u32> = (0..20).collect();
        let mut b = a.clone();
        assert_eq!(order(&mut a, Order::Shuffled, Some(7)), Some(7));
        order(&mut b, Order::Shuffled, Some(7));
        assert_eq!(a, b);
        assert_ne!(a, (0..20).collect::<Vec<_>>());
        let mut c: Vec<u32> = (0..20).collect();
        assert_eq!(order(&mut c, Order::AsWritten, Some(7)), None);
        assert_eq!(c, (0..20).collect::<Vec<_>>());
    }
}
