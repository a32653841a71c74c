//! The scheduler: case order (shuffled with a recorded seed, the default, so slow drift of
//! the machine does not line up with one axis of the matrix, or as written), and
//! [`Scheduler::run`], which runs each case through the executor, records it in the report,
//! fills quality as references finish, and rewrites the report after every case.
//!
//! Must not: parse options, spawn processes itself (the executor does) or render tables.
use std::collections::BTreeMap;
use std::path::Path;

use super::executor::Executor;
use super::matrix::Case;
use super::outputs::QualityBook;
use super::progress::Progress;
use super::protocol::{InputKind, WorkerInput, WorkerResult, WorkerSpec};
use crate::report::{CaseRecord, CaseStatus, Report};
use crate::settings::CaseSettings;
use crate::values::{Order, Passes, TorchPrecision};
use crate::weights::WeightsSource;

/// Order `items`; returns the seed used (`None` when not shuffled). A `None` seed draws one.
pub fn schedule<T>(items: &mut [T], order: Order, seed: Option<u64>) -> Option<u64> {
    match order {
        Order::AsWritten => None,
        Order::Shuffled => {
            // Drawn seeds stay below 2^53 so that JSON readers using doubles keep them exact.
            let seed = seed.unwrap_or_else(crate::shuffle::fresh_seed);
            crate::shuffle::shuffle(items, seed);
            Some(seed)
        }
    }
}

/// Names extra variables for the workers to record in each case's `env`
/// (comma-separated), e.g. the variable `scripts/sweep_env.sh` sweeps.
pub const RECORD_ENV_VAR: &str = "WAN_VAE_BENCH_RECORD_ENV";

/// The run-wide part of every worker spec.
#[derive(Debug, Clone)]
pub struct RunWide {
    /// Weights resolved by the parent (a local file or synthetic).
    pub weights: WeightsSource,
    /// The model the weights must hold (from the file, or `--model` for synthetic weights).
    pub model: Option<crate::model::ModelKind>,
    pub device: String,
    pub warmup: usize,
    pub runs: usize,
    /// The user's input as the parent saved it for the workers (`--input`), if any.
    pub input: Option<WorkerInput>,
    /// The weights file every engine reads (synthetic weights written once by the parent
    /// when a Python engine runs); `None`: each worker loads `weights` itself.
    pub weights_path: Option<std::path::PathBuf>,
    /// The folder holding the input clips the parent wrote (one per frames x size), when
    /// a Python engine runs; `None`: each worker builds its own clip.
    pub inputs_dir: Option<std::path::PathBuf>,
    /// `cast` or `autocast` for the Python engines' 16-bit cases (`None`: their default).
    pub torch_precision: Option<TorchPrecision>,
}

impl RunWide {
    /// The input clip file of a case, when the parent wrote the clips.
    fn input_path(&self, s: &crate::settings::CaseSettings) -> Option<std::path::PathBuf> {
        let dir = self.inputs_dir.as_ref()?;
        Some(super::protocol::input_path(dir, s.frames, s.width, s.height))
    }
}

/// Runs the cases of a report, in the order given, one worker process each.
pub struct Scheduler {
    cases: Vec<Case>,
    run_wide: RunWide,
    /// The worker processes and the run's scratch directory.
    pub executor: Executor,
    progress: Progress,
    book: QualityBook,
    /// Latents prepared for decode-only cases, by (frames, width, height): the path, or
    /// why the untimed encode failed.
    prepared: BTreeMap<(usize, usize, usize), Result<WorkerInput, String>>,
}

impl Scheduler {
    /// A scheduler over `cases` (already ordered, references included).
    pub fn new(cases: Vec<Case>, run_wide: RunWide, executor: Executor, progress: Progress) -> Scheduler {
        let book = QualityBook::new(&cases);
        Scheduler {
            cases,
            run_wide,
            executor,
            progress,
            book,
            prepared: BTreeMap::new(),
        }
    }

    /// The input of a case's worker: a decode-only case decodes the user's latent or, when
    /// there is none, the latent of an untimed fp32 encode of the video (the user's or the
    /// built-in clip), computed once per frames and size in a worker of its own and never
    /// reported; a case that encodes gets the user's video (or none: the clip).
    fn input_for(&mut self, s: &CaseSettings) -> Result<Option<WorkerInput>, String> {
        let user = self.run_wide.input.clone();
        if s.passes.encodes() {
            return Ok(user.filter(|i| i.kind == InputKind::Video));
        }
        if let Some(i) = user.as_ref().filter(|i| i.kind == InputKind::Latent) {
            return Ok(Some(i.clone()));
        }
        let key = (s.frames, s.width, s.height);
        if let Some(p) = self.prepared.get(&key) {
            return p.clone().map(Some);
        }
        // One latent per frames x size, encoded by candle (always available), so every
        // engine decodes the same bits.
        let settings = CaseSettings {
            passes: Passes::Encode,
            env_variant: crate::settings::BASELINE.to_string(),
            engine: crate::values::Engine::Candle,
            knobs: Default::default(),
            ..s.reference()
        };
        let id = format!("prepare-latent-{}x{}x{}", s.frames, s.width, s.height);
        let path = self.executor.outputs_path(&id);
        let spec = WorkerSpec {
            id,
            input_path: self.run_wide.input_path(&settings),
            settings,
            weights: self.run_wide.weights.clone(),
            model: self.run_wide.model,
            device: self.run_wide.device.clone(),
            warmup: 0,
            runs: 1,
            variant_vars: Vec::new(),
            outputs: Some(path.clone()),
            input: user,
            weights_path: self.run_wide.weights_path.clone(),
            torch_precision: None,
        };
        let progress = &self.progress;
        let r = self.executor.run(&spec, &BTreeMap::new(), &mut |p| {
            progress.phase(&format!("prepare latent: {p}"))
        });
        let prepared = match (r.status, r.error) {
            (CaseStatus::Ok, _) if path.is_file() => Ok(WorkerInput {
                path,
                kind: InputKind::Latent,
            }),
            (status, error) => Err(format!(
                "the untimed encode that prepares the latent to decode ended {status}: {}",
                error.or(r.outputs_error).unwrap_or_default()
            )),
        };
        self.prepared.insert(key, prepared.clone());
        prepared.map(Some)
    }

    /// Print a line above the progress display.
    pub fn println(&self, line: &str) {
        self.progress.println(line);
    }

    /// Run every case: spec it, run it in a worker, record it in `report` (the first case
    /// that loaded the model also fills `report.model`), fill quality as references finish,
    /// and rewrite the report at `output` after each case, so a crash loses at most the
    /// case in flight. A SIGINT/SIGTERM stops the loop: the case in flight is dropped, the
    /// report says `run.interrupted`, and the signal is returned.
    pub fn run(&mut self, report: &mut Report, output: &Path) -> anyhow::Result<Option<i32>> {
        // The parent already read the model facts from the checkpoint's header.
        let mut model_known = report.model.params > 0;
        let recorded = recorded_vars();
        let total = self.cases.len();
        for case in self.cases.clone() {
            let case = &case;
            if let Some(sig) = super::interrupt::received() {
                return self.interrupted(report, output, sig, total);
            }
            self.progress.start_case(&case.id);
            let input = self.input_for(&case.settings);
            let spec = WorkerSpec {
                id: case.id.clone(),
                settings: case.settings.clone(),
                weights: self.run_wide.weights.clone(),
                model: self.run_wide.model,
                device: self.run_wide.device.clone(),
                warmup: self.run_wide.warmup,
                runs: self.run_wide.runs,
                variant_vars: case.env_vars.keys().cloned().chain(recorded.iter().cloned()).collect(),
                outputs: Some(self.executor.outputs_path(&case.id)),
                input: input.clone().unwrap_or_default(),
                weights_path: self.run_wide.weights_path.clone(),
                input_path: self.run_wide.input_path(&case.settings),
                torch_precision: self
                    .run_wide
                    .torch_precision
                    .filter(|_| case.settings.engine.is_python()),
            };
            let progress = &self.progress;
            let result = match input {
                Ok(_) => self.executor.run(&spec, &case.env_vars, &mut |p| progress.phase(p)),
                Err(why) => WorkerResult::empty(CaseStatus::Failed, Some(why), BTreeMap::new()),
            };
            if let Some(sig) = super::interrupt::received() {
                return self.interrupted(report, output, sig, total);
            }
            if let (false, Some(m)) = (model_known, &result.model) {
                report.model.on_disk_dtype = m.on_disk_dtype.clone();
                report.model.params = m.params;
                report.model.dim = m.dim;
                report.model.z_dim = m.z_dim;
                model_known = true;
            }
            if let Some(ctx) = &result.engine_context {
                let engine = case.settings.engine.name().to_string();
                report.engines.entry(engine).or_insert_with(|| ctx.clone());
            }
            let roundtrip = result.roundtrip_psnr_db;
            if let Some(e) = &result.outputs_error {
                self.progress.println(&format!(
                    "  warning: {} could not save its outputs (no quality): {e}",
                    case.id
                ));
            }
            let record = to_record(case, result);
            self.progress.finish_case(&case_line(&record));
            for (name, pass) in [("encode", &record.encode), ("decode", &record.decode)] {
                if let Some(p) = pass.as_ref().filter(|p| p.outliers > 0) {
                    self.progress.println(&format!(
                        "  warning: {} statistical outlier(s) in {name} of {} (hyperfine's MAD rule); \
                         consider more --warmup or --runs, or a quieter machine",
                        p.outliers, record.id
                    ));
                }
            }
            report.cases.push(record);
            for w in self.book.finished(report, &case.id, roundtrip, spec.outputs.clone()) {
                self.progress.println(&format!("  warning: {w}"));
            }
            report.save_atomic(output)?;
        }
        self.progress.finish();
        Ok(None)
    }

    fn interrupted(&self, report: &mut Report, output: &Path, sig: i32, total: usize) -> anyhow::Result<Option<i32>> {
        self.progress.finish();
        report.run.interrupted = Some(format!(
            "{} after {} of {total} cases",
            super::interrupt::name(sig),
            report.cases.len()
        ));
        report.save_atomic(output)?;
        Ok(Some(sig))
    }
}

/// Extra variable names every worker records ([`RECORD_ENV_VAR`]).
fn recorded_vars() -> Vec<String> {
    std::env::var(RECORD_ENV_VAR)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn to_record(case: &Case, r: WorkerResult) -> CaseRecord {
    CaseRecord {
        id: case.id.clone(),
        added_as_reference: case.added_as_reference,
        settings: case.settings.clone(),
        frames_used: crate::model::frames_used(case.settings.frames).ok(),
        compute_dtype: r.compute_dtype,
        env: r.env,
        status: r.status,
        error: r.error,
        encode: r.encode,
        decode: r.decode,
        load_s: r.load_s,
        peak_rss_bytes: r.peak_rss_bytes,
        device_memory_bytes: r.device_memory_bytes,
        device_peak_allocated_bytes: r.device_peak_allocated_bytes,
        device_peak_reserved_bytes: r.device_peak_reserved_bytes,
        miopen: r.miopen,
        quality: None,
        system: None,
        budgets: Vec::new(),
        run: None,
    }
}

/// The per-case line: timings of the passes it ran when ok, otherwise the status and the
/// error's first line.
fn case_line(c: &CaseRecord) -> String {
    use crate::format::median_spread;
    match c.status {
        CaseStatus::Ok => {
            let mut line = format!("ok       {}", c.id);
            for (name, p) in [("encode", &c.encode), ("decode", &c.decode)] {
                if let Some(p) = p {
                    line.push_str(&format!(
                        "  {name} {}",
                        median_spread(p.median_s, p.stddev_s, p.samples_s.len())
                    ));
                }
            }
            line
        }
        _ => {
            let first = c.error.as_deref().and_then(|e| e.lines().next()).unwrap_or("");
            format!("{:<8} {}  {first}", c.status.name(), c.id)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_order() {
        let mut a: Vec<u32> = (0..20).collect();
        let mut b = a.clone();
        assert_eq!(schedule(&mut a, Order::Shuffled, Some(7)), Some(7));
        schedule(&mut b, Order::Shuffled, Some(7));
        assert_eq!(a, b);
        assert_ne!(a, (0..20).collect::<Vec<_>>());
        let mut c: Vec<u32> = (0..20).collect();
        assert_eq!(schedule(&mut c, Order::AsWritten, Some(7)), None);
        assert_eq!(c, (0..20).collect::<Vec<_>>());
    }
}
