//! Validation against golden cases (the `validate` command's pieces): the cases file, the
//! tolerance rules, each output's check, the report, and the Python worker's run and verdict.
//!
//! Cases file (see `tests/fixtures/README.md`): f32 tensors `<case>.input`, optional
//! `<case>.latent` (then input is a video: encode is checked, and decode of the expected
//! latent), and `<case>.decoded`.
//!
//! With an engine whose worker is the Python worker (`--engine torch`, ...) the same
//! cases run through its `validate` mode (same rules, same output; see
//! `src/engine/python/`), started once with the chosen interpreter, as `run` starts its
//! workers ([`crate::util::process`]): in its own process group, which is killed when the worker
//! exits, at `--timeout` (exit 2) or at a SIGINT/SIGTERM (exit 128 + the signal number), so
//! nothing it started outlives `validate`. Settings the engine cannot run
//! ([`crate::engine::EngineSpec::unsupported`]) are refused first (exit 2).
//!
//! Must not: write a benchmark report; candle runs in this process.
use std::collections::BTreeMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor};
use serde::Serialize;

use crate::model::Precision;
use crate::util::error::UserError;

/// One golden case.
pub struct Case {
    pub name: String,
    pub input: Tensor,
    pub latent: Option<Tensor>,
    pub decoded: Tensor,
}

/// Read a cases file into cases sorted by name; any unknown tensor name is an error.
pub fn read_cases(path: &Path) -> Result<Vec<Case>, UserError> {
    let bytes = crate::util::read::tensor_file(path, "cases file")?;
    let tensors = candle_core::safetensors::load_buffer(&bytes, &Device::Cpu)
        .map_err(|e| UserError::file(path, format!("cannot read cases file (expected safetensors): {e}")))?;
    let mut parts: BTreeMap<String, BTreeMap<String, Tensor>> = BTreeMap::new();
    for (name, t) in tensors {
        let (case, role) = name
            .rsplit_once('.')
            .ok_or_else(|| UserError::file(path, format!("tensor {name:?} is not named <case>.<role>")))?;
        if !matches!(role, "input" | "latent" | "decoded") {
            return Err(UserError::file(
                path,
                format!("tensor {name:?} has role {role:?}; expected input, latent or decoded"),
            ));
        }
        parts.entry(case.to_string()).or_default().insert(
            role.to_string(),
            t.to_dtype(DType::F32)
                .map_err(|e| UserError::file(path, e.to_string()))?,
        );
    }
    if parts.is_empty() {
        return Err(UserError::file(path, "no cases in file"));
    }
    parts
        .into_iter()
        .map(|(name, mut roles)| {
            let mut take = |role: &str| roles.remove(role);
            let input =
                take("input").ok_or_else(|| UserError::file(path, format!("case {name:?} has no {name}.input")))?;
            let decoded =
                take("decoded").ok_or_else(|| UserError::file(path, format!("case {name:?} has no {name}.decoded")))?;
            Ok(Case {
                latent: take("latent"),
                name,
                input,
                decoded,
            })
        })
        .collect()
}

/// Error of one output against its expected tensor.
#[derive(Debug, Clone, Serialize)]
pub struct OutputCheck {
    /// `latent` or `decoded`.
    pub output: String,
    pub shape: Vec<usize>,
    pub max_abs_error: f64,
    pub mean_abs_error: f64,
    /// PSNR over the [-1, 1] range; null when identical.
    pub psnr_db: Option<f64>,
    /// Largest |expected| value.
    pub max_abs_expected: f64,
    /// Allowed value of the rule's metric (see `tolerance_rule`).
    pub tolerance: f64,
    pub pass: bool,
}

#[derive(Debug, Serialize)]
pub struct CaseReport {
    pub case: String,
    pub outputs: Vec<OutputCheck>,
}

#[derive(Debug, Serialize)]
pub struct ValidateReport {
    pub weights: String,
    /// `wan2.1` or `wan2.2`.
    pub model: crate::model::ModelKind,
    pub precision: String,
    pub compute_dtype: String,
    pub chunk: usize,
    pub tile: Option<String>,
    pub device: String,
    pub conv: String,
    pub tolerance_rule: String,
    pub cases: Vec<CaseReport>,
    pub pass: bool,
}

/// The pass rule of one output: `metric <= factor * max(1, max|expected|)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// `max_abs_error` or `mean_abs_error`.
    pub metric: &'static str,
    pub factor: f64,
}

impl Tolerance {
    /// - fp32 untiled (any chunk): max abs error, 1e-4: rounding only.
    /// - fp32 with TF32 in force (the Python engines on NVIDIA, `validate --tf32 on|auto`):
    ///   max abs, [`Tolerance::TF32_FACTOR`].
    /// - bf16: max abs, 1e-1; fp16: max abs, 2e-2: rounding of 8- and 11-bit mantissas
    ///   through ~40 layers (measured on the fixtures: at most 0.054 and 0.0062).
    /// - tiled (any precision): mean abs error, 0.2. Tiles are encoded/decoded separately
    ///   and blended, so every pixel near a seam sees less context than untiled: that is
    ///   the method, not rounding (measured: tiles of 32-64 px on 96 px clips give
    ///   PSNR 15-20 dB on the decoded video with random weights). The bound catches broken
    ///   stitching, not seam differences; `tiling::tests` checks stitching exactly.
    pub fn for_settings(precision: Precision, tiled: bool) -> Tolerance {
        if tiled {
            return Tolerance {
                metric: "mean_abs_error",
                factor: 0.2,
            };
        }
        let factor = match precision {
            Precision::Fp32 => 1e-4,
            Precision::Fp16 => 2e-2,
            Precision::Bf16 | Precision::Auto => 1e-1,
        };
        Tolerance {
            metric: "max_abs_error",
            factor,
        }
    }

    /// The rule of fp32 with TF32 in force (`wan_validate.tolerance_rule` applies it): 1e-2.
    /// TF32 rounds the inputs of each convolution and matmul to a 10-bit mantissa (unit
    /// roundoff 2^-11, fp16's) and accumulates in fp32, and activations stay fp32 between
    /// layers, so its error is below fp16's, whose rule is 2e-2 (activations stored in fp16
    /// too): half of fp16's. Measured on an H100 (torch 2.11, cuDNN 9.19): 3.97e-3 at
    /// max|expected| 2.30 (1.7e-3 relative), a margin of 5.8x.
    pub const TF32_FACTOR: f64 = 1e-2;

    pub fn describe(&self) -> String {
        format!("{} <= {:e} x max(1, max|expected|)", self.metric, self.factor)
    }
}

/// Compare `got` with `expected` (same shape, f32).
pub fn check_output(output: &str, got: &Tensor, expected: &Tensor, tol: Tolerance) -> anyhow::Result<OutputCheck> {
    if got.dims() != expected.dims() {
        anyhow::bail!(
            "{output}: computed shape {:?} differs from expected {:?}",
            got.dims(),
            expected.dims()
        );
    }
    let g = got.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
    let e = expected.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
    let stats = crate::report::quality::error_stats(&e, &g);
    let max_abs_expected = e.iter().fold(0f64, |m, v| m.max(v.abs() as f64));
    let tolerance = tol.factor * max_abs_expected.max(1.0);
    let measured = if tol.metric == "mean_abs_error" {
        stats.mean_abs
    } else {
        stats.max_abs
    };
    let finite = g.iter().all(|v| v.is_finite());
    Ok(OutputCheck {
        output: output.to_string(),
        shape: got.dims().to_vec(),
        max_abs_error: stats.max_abs,
        mean_abs_error: stats.mean_abs,
        psnr_db: stats.psnr_db,
        max_abs_expected,
        tolerance,
        pass: finite && measured <= tolerance,
    })
}

/// Every latent of the cases file (an expected one, or a decode-only case's input) has the
/// model's channel count: a cases file of the other model is refused naming the file, the
/// case and both models, before any case runs.
pub fn check_cases_model(path: &Path, cases: &[Case], cfg: &crate::model::Config) -> Result<(), UserError> {
    for case in cases {
        let latent = case.latent.as_ref().unwrap_or(&case.input);
        let channels = latent.dims().get(1).copied().unwrap_or(0);
        if channels != cfg.z_dim {
            let other = crate::model::ModelKind::ALL
                .into_iter()
                .find(|k| k.config().z_dim == channels)
                .map_or(String::new(), |k| format!(": this cases file is for the {}", k.title()));
            return Err(UserError::file(
                path,
                format!(
                    "case {} holds a latent of {channels} channels{other}, but the weights are the {}'s ({} \
                     channels); give the cases file of that model, or weights of the other model",
                    case.name,
                    cfg.kind().title(),
                    cfg.z_dim
                ),
            ));
        }
    }
    Ok(())
}

pub fn print_text(r: &ValidateReport) {
    crate::outln!(
        "weights {} ({})  precision {} (computes {})  chunk {}  tile {}  device {}",
        r.weights,
        r.model,
        r.precision,
        r.compute_dtype,
        r.chunk,
        r.tile.as_deref().unwrap_or("none"),
        r.device
    );
    crate::outln!("tolerance: {}", r.tolerance_rule);
    crate::outln!(
        "{:<10} {:<8} {:>13} {:>13} {:>9} {:>11}  result",
        "case",
        "output",
        "max_abs_err",
        "mean_abs_err",
        "psnr_db",
        "tolerance"
    );
    for c in &r.cases {
        for o in &c.outputs {
            let psnr = crate::util::format::psnr(o.psnr_db, 2, "inf");
            let verdict = if o.pass { "ok" } else { "FAIL" };
            crate::outln!(
                "{:<10} {:<8} {:>13.3e} {:>13.3e} {:>9} {:>11.3e}  {verdict}",
                c.case,
                o.output,
                o.max_abs_error,
                o.mean_abs_error,
                psnr,
                o.tolerance
            );
        }
    }
    crate::outln!(
        "{}",
        if r.pass {
            "all outputs within tolerance"
        } else {
            "some outputs exceed the tolerance"
        }
    );
}

/// The exit code of a Python `validate` from the verdict its worker wrote, checked as `run`
/// checks a result: a report whose `pass` agrees with the exit code (0 pass, 1 not, every
/// output judged), or a `{status, error}` with exit 2. Anything else (an interpreter that is
/// not this tool's worker, one that exits early or lies) is an error naming it.
pub fn checked_verdict(
    path: &Path,
    status: std::process::ExitStatus,
    interpreter: &str,
    engine: &str,
) -> anyhow::Result<i32> {
    let fail = |what: String| -> anyhow::Result<i32> {
        Err(UserError::Other(format!(
            "engine {engine}: the Python worker ({interpreter}) {what}: no verdict was reached; check that \
             {interpreter} is a Python with torch (--python PATH)"
        ))
        .into())
    };
    let how = match status.code() {
        Some(c) => format!("exited with code {c}"),
        None => format!("ended by {status}"),
    };
    let text = match crate::util::read::text(path, "validate verdict", crate::util::read::MAX_REPORT_BYTES) {
        Ok(t) => t,
        Err(_) => return fail(format!("{how} without writing its verdict")),
    };
    let v: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return fail(format!("{how} and wrote a verdict that is not JSON ({e})")),
    };
    let judged = |c: &serde_json::Value| {
        c["outputs"]
            .as_array()
            .is_some_and(|o| !o.is_empty() && o.iter().all(|o| o["pass"].is_boolean()))
    };
    let cases_ok = v["cases"]
        .as_array()
        .is_some_and(|c| !c.is_empty() && c.iter().all(judged));
    match (status.code(), v["pass"].as_bool(), v["status"].as_str()) {
        (Some(0), Some(true), _) if cases_ok => Ok(0),
        (Some(1), Some(false), _) if cases_ok => Ok(1),
        (Some(2), None, Some(_)) => Ok(2),
        _ => fail(format!(
            "{how}, which does not match the verdict it wrote (pass = {})",
            v["pass"]
        )),
    }
}

/// How the Python worker of `validate` ended.
pub enum Ended {
    Exited(std::process::ExitStatus),
    TimedOut,
    /// A SIGINT or SIGTERM stopped `validate`.
    Signal(i32),
}

/// Run the Python worker as the run's workers are ([`crate::util::process::isolate`]: its own
/// process group, killed with us), its stdout and stderr passed on line by line; kill its
/// group at the timeout, at a SIGINT/SIGTERM, and after it exits (so a background child it
/// left, one holding our stderr open say, goes too). Its output is waited for a bounded
/// time once the group is gone.
pub fn run_worker(mut cmd: std::process::Command, timeout: std::time::Duration) -> std::io::Result<Ended> {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    crate::util::process::isolate(&mut cmd);
    let mut child = cmd.spawn()?;
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let out = child
        .stdout
        .take()
        .map(|r| pass_on(r, std::io::stdout, done_tx.clone()));
    let err = child.stderr.take().map(|r| pass_on(r, std::io::stderr, done_tx));
    let deadline = Instant::now() + timeout;
    let ended = loop {
        if let Some(status) = child.try_wait()? {
            break Ended::Exited(status);
        }
        if let Some(sig) = crate::util::interrupt::received() {
            crate::util::process::kill_group(child.id());
            let _ = child.wait();
            break Ended::Signal(sig);
        }
        if Instant::now() >= deadline {
            crate::util::process::kill_group(child.id());
            let _ = child.wait();
            break Ended::TimedOut;
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    crate::util::process::kill_group(child.id());
    // Both readers end when the pipes close (every writer gone with the group); one held
    // by a process that left the group is not waited for past this.
    let close_by = Instant::now() + Duration::from_secs(2);
    for _ in out.into_iter().chain(err) {
        let _ = done_rx.recv_timeout(close_by.saturating_duration_since(Instant::now()));
    }
    Ok(ended)
}

/// A thread copying `from` to `to()` as it comes (a buffer at a time), sending on `done`
/// at its end.
pub fn pass_on<R, W>(mut from: R, to: fn() -> W, done: std::sync::mpsc::Sender<()>) -> std::thread::JoinHandle<()>
where
    R: std::io::Read + Send + 'static,
    W: std::io::Write + 'static,
{
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 8192];
        while let Ok(n @ 1..) = from.read(&mut buf) {
            let mut w = to();
            let _ = w.write_all(&buf[..n]).and_then(|()| w.flush());
        }
        let _ = done.send(());
    })
}
