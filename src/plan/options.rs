//! The options of a `run`: [`BenchOptions`], everything a run needs once the matrix file
//! (`config`) and the flags (`flags`) are merged; its [`Axes`], the values of every axis of
//! `axes::AXES` with where each was written; the merge itself
//! ([`BenchOptions::apply`]) and the checks that span several settings.
//!
//! Must not: read files, declare flags (that is `flags`) or run anything.
use std::collections::BTreeMap;
use std::path::PathBuf;

use super::budgets::Budgets;
use super::flags::MatrixFlags;
use crate::model::ModelKind;
use crate::plan::axes::{Axis, AXES, ENGINE, ENV, TILE};
use crate::report::settings::CaseSettings;
use crate::report::values::{self, Order, TorchPrecision};
use crate::util::error::UserError;

/// Longest per-case time limit accepted, seconds (one year; a `Duration` overflows near 1.8e19).
pub const MAX_TIMEOUT_S: f64 = 31_536_000.0;

/// Shortest per-case time limit, seconds: a worker cannot start in less.
pub const MIN_TIMEOUT_S: f64 = 0.001;

/// Most warmup or timed passes per case (a million passes of the smallest clip are days).
pub const MAX_PASSES: usize = 1_000_000;

/// The values of every axis of [`AXES`], canonically spelled; every combination is one case.
#[derive(Debug, Clone, PartialEq)]
pub struct Axes {
    /// Per axis, in [`AXES`] order: its values (at least one, each once) and where they
    /// were written (`matrix.size`, `--size`, `--input`), which messages name.
    values: Vec<(Vec<String>, String)>,
}

impl Axes {
    /// Every axis at its default.
    pub fn defaults() -> Axes {
        let values = AXES
            .iter()
            .map(|a| (vec![a.default.to_string()], format!("matrix.{}", a.key)))
            .collect();
        Axes { values }
    }

    /// The values of `axis`.
    pub fn get(&self, axis: &Axis) -> &[String] {
        &self.values[index(axis)].0
    }

    /// The engines of the matrix (the `engine` axis' values, already checked by its parser).
    pub fn engines(&self) -> Vec<values::Engine> {
        self.get(&ENGINE)
            .iter()
            .filter_map(|e| values::Engine::parse("engine", e).ok())
            .collect()
    }

    /// Where the values of `axis` were written (`matrix.KEY` for a default).
    pub fn written_in(&self, axis: &Axis) -> &str {
        &self.values[index(axis)].1
    }

    /// Replace the values of `axis` with `values`, written in `from` (a flag, `matrix.KEY`).
    /// Each is made canonical by the axis's parser; an empty list, an invalid value or a
    /// value given twice is an error naming `from`.
    pub fn set(&mut self, axis: &Axis, values: &[impl AsRef<str>], from: &str) -> Result<(), UserError> {
        if values.is_empty() {
            return Err(UserError::Other(format!("{from} is empty: give at least one value")));
        }
        let mut canonical: Vec<String> = Vec::with_capacity(values.len());
        // A set beside the list: checking for duplicates stays linear in the values given.
        let mut seen = std::collections::HashSet::with_capacity(values.len());
        for v in values {
            let c = axis.canonical(from, v.as_ref())?;
            if !seen.insert(c.clone()) {
                return Err(UserError::invalid(from, c, "each value once (duplicate)"));
            }
            canonical.push(c);
        }
        self.values[index(axis)] = (canonical, from.to_string());
        Ok(())
    }

    /// One case per value of `axis`, every other axis at its default, for typed reads:
    /// `axes.each(&FRAMES).map(|s| s.frames)`.
    pub fn each<'a>(&'a self, axis: &'a Axis) -> impl Iterator<Item = CaseSettings> + 'a {
        self.get(axis).iter().map(move |v| {
            let mut s = CaseSettings::defaults();
            (axis.set)(&mut s, axis.key, v).expect("stored axis values are canonical");
            s
        })
    }

    /// Number of cases the axes expand to on `device`, counted without building any case:
    /// per engine, the product of the axes that multiply its cases (knobs only where they
    /// act). Saturating: a count that overflows is more than any limit.
    pub fn count(&self, device: &str) -> u64 {
        self.each(&ENGINE)
            .map(|engine| {
                AXES.iter().filter(|a| ***a != ENGINE).fold(1u64, |n, a| {
                    n.saturating_mul(a.planned_count(&engine, device, self.get(a)))
                })
            })
            .fold(0, u64::saturating_add)
    }

    /// The axes with more than one value, e.g. `25 frames x 20 size x 3 precision`.
    pub fn describe(&self) -> String {
        let many: Vec<String> = AXES
            .iter()
            .filter(|a| self.get(a).len() > 1)
            .map(|a| format!("{} {}", self.get(a).len(), a.key))
            .collect();
        match many.is_empty() {
            true => "one value per axis".to_string(),
            false => many.join(" x "),
        }
    }
}

/// The place of `axis` in [`AXES`].
fn index(axis: &Axis) -> usize {
    AXES.iter().position(|a| *a == axis).expect("an axis of axes::AXES")
}

/// Everything a `run` needs, after the config file and the flags are merged.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchOptions {
    /// Weights reference (`synthetic`, a path, a hub reference or preset).
    pub weights: String,
    /// Whether the user chose them (`--weights`, or `[model] weights` of their matrix file);
    /// else a ComfyUI folder's own VAE is searched first (`weights::source::comfyui`).
    pub weights_given: bool,
    /// `--model` / `[model] model`: the architecture of synthetic weights (Wan 2.1 when
    /// `None`); with a file it must agree with the file.
    pub model: Option<ModelKind>,
    /// Device string (`cpu`, `cuda:0`, `metal`).
    pub device: String,
    /// Warmup passes per case.
    pub warmup: usize,
    /// Timed passes per case.
    pub runs: usize,
    /// Per-case time limit, seconds.
    pub timeout_s: f64,
    /// Case order.
    pub order: Order,
    /// Shuffle seed; drawn at random when `None`.
    pub seed: Option<u64>,
    /// How the cases are timed: interleaved rounds or blocks (`run::rounds`).
    pub schedule: values::Schedule,
    /// With rounds: timed runs per visit.
    pub round_runs: usize,
    /// Add the A/A control of each compared workload's default (`plan::control`).
    pub control: bool,
    /// Report path; `results/<UTC time>-<host>.json` when `None`.
    pub output: Option<PathBuf>,
    /// No progress bar, no per-case lines.
    pub quiet: bool,
    /// The matrix file, if any (`None` for the built-in smoke matrix).
    pub config_path: Option<PathBuf>,
    /// The matrix axes.
    pub axes: Axes,
    /// Env variants: name -> variables the worker gets on top of the parent's environment.
    pub variants: BTreeMap<String, BTreeMap<String, String>>,
    /// Variables an env variant removes from the worker's environment (`--env-var
    /// NAME=@unset`); variants absent here remove none.
    pub unset: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// The user's input file (`--input`, `[run] input`): a latent or a video.
    pub input: Option<PathBuf>,
    /// Which tensor of the input file (`--input-tensor`, `[run] input_tensor`).
    pub input_tensor: Option<String>,
    /// Limits checked after the run (`[budgets]`).
    pub budgets: Budgets,
    /// Python interpreter of the torch and diffusers engines (`--python`, `[model] python`);
    /// `None`: `values::PYTHON_ENV_VAR`, else `python3` (see [`BenchOptions::python`]).
    pub python: Option<String>,
    /// How the Python engines run 16-bit precisions (`cast` or `autocast`); `None`: each
    /// engine's default (autocast for torch, as the official wrapper; cast for diffusers).
    pub torch_precision: Option<TorchPrecision>,
    /// The folders of engines that run the user's own install (`--comfyui DIR`, `[model]
    /// comfyui`, `WAN_VAE_BENCH_COMFYUI`, in that order of precedence; see
    /// `options_from_args`).
    pub engine_dirs: crate::engine::EngineDirs,
}

impl BenchOptions {
    /// Apply command-line flags; cross-setting checks follow (errors name the flag).
    pub fn apply(&mut self, o: &MatrixFlags) -> anyhow::Result<()> {
        for axis in AXES {
            if let Some(values) = o.axes.get(axis) {
                self.axes.set(axis, values, axis.flag)?;
            }
        }
        if !o.env_var.is_empty() {
            self.add_env_sweeps(o)?;
        }
        if !o.tile_px.is_empty() {
            self.axes.set(&TILE, &tile_px_values(o)?, "--tile-px")?;
        }
        if o.input.is_some() {
            self.input = o.input.clone();
        }
        if o.input_tensor.is_some() {
            self.input_tensor = o.input_tensor.clone();
        }
        if o.python.is_some() {
            self.python = o.python.clone();
        }
        self.torch_precision = o.torch_precision.or(self.torch_precision);
        self.warmup = o.warmup.unwrap_or(self.warmup);
        self.runs = o.runs.unwrap_or(self.runs);
        self.timeout_s = o.timeout_s.unwrap_or(self.timeout_s);
        if let Some(w) = &o.weights {
            self.weights = w.clone();
            self.weights_given = true;
        }
        if o.model.is_some() {
            self.model = o.model;
        }
        if let Some(d) = &o.device {
            self.device = d.clone();
        }
        self.order = o.order.unwrap_or(self.order);
        self.seed = o.seed.or(self.seed);
        self.schedule = o.schedule.unwrap_or(self.schedule);
        self.round_runs = o.round_runs.unwrap_or(self.round_runs);
        if let Some(c) = o.control {
            self.control = c == values::Switch::On;
        }
        if o.output.is_some() {
            self.output = o.output.clone();
        }
        self.quiet |= o.quiet;
        self.validate()
    }

    /// `--env-var`: every combination becomes a variant, run next to `baseline` (or the
    /// `--env` variants when given): the env axis becomes those plus the sweep's.
    fn add_env_sweeps(&mut self, o: &MatrixFlags) -> Result<(), UserError> {
        let swept = super::env_sweep::variants(&o.env_var).map_err(UserError::Other)?;
        let mut names: Vec<String> = match o.axes.get(&ENV) {
            Some(given) => given.to_vec(),
            None => vec![crate::report::settings::BASELINE.to_string()],
        };
        for v in swept {
            if self.variants.contains_key(&v.name) {
                return Err(UserError::invalid(
                    "--env-var",
                    &v.name,
                    "a variant name the matrix file does not define already",
                ));
            }
            names.push(v.name.clone());
            self.variants.insert(v.name.clone(), v.set);
            if !v.unset.is_empty() {
                self.unset.insert(v.name, v.unset);
            }
        }
        self.axes.set(&ENV, &names, "--env-var")
    }

    /// Checks that span several settings: device, run counts, timeout, env variants exist
    /// and hold valid variables, `input_tensor` needs `input`.
    pub fn validate(&self) -> anyhow::Result<()> {
        values::check_device("device", &self.device)?;
        if self.runs == 0 {
            return Err(UserError::invalid("runs", "0", "at least 1 timed run").into());
        }
        if self.round_runs == 0 {
            return Err(UserError::invalid(
                "round_runs (--round-runs, [run] round_runs)",
                "0",
                "at least 1 timed run per visit",
            )
            .into());
        }
        for (what, n) in [
            ("runs (--runs, [run] runs)", self.runs),
            ("warmup (--warmup, [run] warmup)", self.warmup),
        ] {
            if n > MAX_PASSES {
                return Err(UserError::invalid(what, n.to_string(), format!("at most {MAX_PASSES} passes")).into());
            }
        }
        if !(self.timeout_s.is_finite() && self.timeout_s >= MIN_TIMEOUT_S && self.timeout_s <= MAX_TIMEOUT_S) {
            return Err(UserError::invalid(
                "timeout (--timeout, [run] timeout_s)",
                self.timeout_s.to_string(),
                format!("a number of seconds at least {MIN_TIMEOUT_S} and at most {MAX_TIMEOUT_S} (one year)"),
            )
            .into());
        }
        for (name, vars) in &self.variants {
            for (key, value) in vars {
                if key.is_empty() || key.contains(['=', '\0']) {
                    return Err(UserError::invalid(
                        format!("variable name {key:?} of env variant {name:?}"),
                        key,
                        "a name that is not empty and has no `=` or NUL byte",
                    )
                    .into());
                }
                if value.contains('\0') {
                    return Err(UserError::invalid(
                        format!("variable {key} of env variant {name:?}"),
                        value,
                        "a value without NUL bytes (the environment cannot hold them)",
                    )
                    .into());
                }
            }
        }
        crate::machine::env_limits::check_variants(&self.variants)?;
        for name in self.axes.get(&ENV) {
            if !self.variants.contains_key(name) {
                let known: Vec<&str> = self.variants.keys().map(String::as_str).collect();
                return Err(UserError::invalid(
                    format!("env variant ({})", self.axes.written_in(&ENV)),
                    name,
                    format!("one of the defined variants: {}", known.join(", ")),
                )
                .into());
            }
        }
        if self.input_tensor.is_some() && self.input.is_none() {
            return Err(UserError::Other("--input-tensor (run.input_tensor) needs --input (run.input)".into()).into());
        }
        Ok(())
    }

    /// Number of cases the matrix expands to ([`Axes::count`] on this device).
    pub fn case_count(&self) -> u64 {
        self.axes.count(&self.device)
    }

    /// The interpreter of the Python engines ([`values::python_interpreter`]).
    pub fn python(&self) -> String {
        values::python_interpreter(self.python.as_deref())
    }
}

/// `--tile-px T [--overlap-px O]`, the older spelling of `--tile T[:O]`, as `--tile`
/// values; an invalid tile names the flags the user typed.
fn tile_px_values(o: &MatrixFlags) -> Result<Vec<String>, UserError> {
    o.tile_px
        .iter()
        .map(|&t| {
            let spelled = match (t, o.overlap_px) {
                (0, _) => "none".to_string(),
                (t, Some(o)) => format!("{t}:{o}"),
                (t, None) => t.to_string(),
            };
            TILE.canonical("--tile-px", &spelled).map_err(|_| {
                let given = match o.overlap_px {
                    Some(ov) => format!("--tile-px {t} --overlap-px {ov}"),
                    None => format!("--tile-px {t}"),
                };
                UserError::invalid(
                    "--tile-px/--overlap-px",
                    given,
                    "a tile in pixels (a multiple of 8, 0 = untiled) and an overlap that is a multiple of 8 \
                     smaller than the tile, e.g. --tile-px 256 --overlap-px 64",
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::axes::{CUDNN, FRAMES, MIOPEN_DB, PRECISION, SIZE};

    #[test]
    fn values_are_canonical_once_each_and_errors_name_where_they_were_written() {
        let mut a = Axes::defaults();
        assert_eq!(a.get(&SIZE), ["64x64"]);
        assert_eq!(a.written_in(&SIZE), "matrix.size");
        a.set(&SIZE, &["64*32", "16X8"], "--size").unwrap();
        assert_eq!(
            (a.get(&SIZE), a.written_in(&SIZE)),
            (&["64x32".to_string(), "16x8".into()][..], "--size")
        );
        let e = a
            .set(&SIZE, &["64x32", "64*32"], "matrix.size")
            .unwrap_err()
            .to_string();
        assert!(e.contains("matrix.size") && e.contains("duplicate"), "{e}");
        let e = a.set(&PRECISION, &["int4"], "--precision").unwrap_err().to_string();
        assert!(e.contains("--precision") && e.contains("int4"), "{e}");
        let e = a.set(&FRAMES, &[] as &[&str], "matrix.frames").unwrap_err().to_string();
        assert_eq!(e, "matrix.frames is empty: give at least one value");
        a.set(&FRAMES, &["5", "17"], "--frames").unwrap();
        assert_eq!(a.each(&FRAMES).map(|s| s.frames).collect::<Vec<_>>(), [5, 17]);
        assert_eq!(a.describe(), "2 frames x 2 size");
    }

    #[test]
    fn knobs_are_counted_only_where_they_act() {
        let mut a = Axes::defaults();
        assert_eq!(a.count("cuda:0"), 1);
        a.set(&ENGINE, &["candle", "torch", "diffusers"], "e").unwrap();
        a.set(&CUDNN, &["on", "off"], "c").unwrap();
        a.set(&MIOPEN_DB, &["user", "fresh"], "m").unwrap();
        a.set(&FRAMES, &["1", "5", "9"], "f").unwrap();
        assert_eq!(a.count("cpu"), 3 * 3);
        assert_eq!(a.count("cuda:0"), 3 * (1 + 2 * 2 * 2));
    }
}
