//! The scheduler: case order (shuffled with a recorded seed, the default, so slow drift of
//! the machine does not line up with one axis of the matrix, or as written), and
//! [`Scheduler::run`], which runs each case through the executor, records it in the report,
//! fills quality as references finish, and rewrites the report after every case.
//!
//! Must not: parse options, spawn processes itself (the executor does) or render tables.
use std::path::Path;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::executor::Executor;
use super::matrix::Case;
use super::outputs::QualityBook;
use super::progress::Progress;
use super::protocol::{WorkerResult, WorkerSpec};
use crate::error::UserError;
use crate::report::{CaseRecord, CaseStatus, Report};
use crate::weights::WeightsSource;

/// How cases are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Random permutation from a seed recorded in the report.
    Shuffled,
    /// Matrix order: the last axis (env) varies fastest.
    AsWritten,
}

impl Order {
    /// `shuffled` or `as-written`.
    pub fn parse(what: &str, s: &str) -> Result<Order, UserError> {
        match s.trim() {
            "shuffled" | "shuffle" | "random" => Ok(Order::Shuffled),
            "as-written" | "as_written" | "written" => Ok(Order::AsWritten),
            _ => Err(UserError::invalid(what, s, "`shuffled` or `as-written`")),
        }
    }
    /// Name recorded in the report.
    pub fn name(self) -> &'static str {
        match self {
            Order::Shuffled => "shuffled",
            Order::AsWritten => "as-written",
        }
    }
}

/// Order `items`; returns the seed used (`None` when not shuffled). A `None` seed draws one.
pub fn schedule<T>(items: &mut [T], order: Order, seed: Option<u64>) -> Option<u64> {
    match order {
        Order::AsWritten => None,
        Order::Shuffled => {
            // Drawn seeds stay below 2^53 so that JSON readers using doubles keep them exact.
            let seed = seed.unwrap_or_else(|| rand::thread_rng().gen::<u64>() >> 11);
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            items.shuffle(&mut rng);
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
    pub device: String,
    pub warmup: usize,
    pub runs: usize,
    /// The weights file every engine reads (synthetic weights written once by the parent
    /// when a Python engine runs); `None`: each worker loads `weights` itself.
    pub weights_path: Option<std::path::PathBuf>,
    /// The folder holding the input clips the parent wrote (one per frames x size), when
    /// a Python engine runs; `None`: each worker builds its own clip.
    pub inputs_dir: Option<std::path::PathBuf>,
    /// `cast` or `autocast` for the Python engines' 16-bit cases (`None`: their default).
    pub torch_precision: Option<super::options::TorchPrecision>,
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
        }
    }

    /// Print a line above the progress display.
    pub fn println(&self, line: &str) {
        self.progress.println(line);
    }

    /// Run every case: spec it, run it in a worker, record it in `report` (the first case
    /// that loaded the model also fills `report.model`), fill quality as references finish,
    /// and rewrite the report at `output` after each case, so a crash loses at most the
    /// case in flight.
    pub fn run(&mut self, report: &mut Report, output: &Path) -> anyhow::Result<()> {
        let mut model_known = false;
        let recorded = recorded_vars();
        for case in &self.cases {
            self.progress.start_case(&case.id);
            let spec = WorkerSpec {
                id: case.id.clone(),
                settings: case.settings.clone(),
                weights: self.run_wide.weights.clone(),
                device: self.run_wide.device.clone(),
                warmup: self.run_wide.warmup,
                runs: self.run_wide.runs,
                variant_vars: case.env_vars.keys().cloned().chain(recorded.iter().cloned()).collect(),
                outputs: Some(self.executor.outputs_path(&case.id)),
                weights_path: self.run_wide.weights_path.clone(),
                input_path: self.run_wide.input_path(&case.settings),
                torch_precision: self
                    .run_wide
                    .torch_precision
                    .filter(|_| case.settings.engine.is_python()),
            };
            let progress = &self.progress;
            let result = self.executor.run(&spec, &case.env_vars, &mut |p| progress.phase(p));
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
        Ok(())
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
    }
}

/// The per-case line: timings when ok, otherwise the status and the error's first line.
fn case_line(c: &CaseRecord) -> String {
    use crate::format::seconds;
    match (c.status, &c.encode, &c.decode) {
        (CaseStatus::Ok, Some(e), Some(d)) => format!(
            "ok       {}  encode {} ± {}  decode {} ± {}",
            c.id,
            seconds(e.median_s),
            seconds(e.stddev_s),
            seconds(d.median_s),
            seconds(d.stddev_s)
        ),
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
