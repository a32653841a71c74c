//! `validate`: run every case of a golden cases file and report, per output, how far our
//! encode/decode is from the expected tensors (exit 0 within tolerance, 1 not, 2 bad input).
//!
//! Cases file (see `tests/fixtures/README.md`): f32 tensors `<case>.input`, optional
//! `<case>.latent` (then input is a video: encode is checked, and decode of the expected
//! latent), and `<case>.decoded`.
//!
//! With an engine whose worker is the Python worker (`--engine torch`, ...) the same
//! cases run through its `validate` mode (same rules, same output; see
//! `src/engine/python/`), started once with the chosen interpreter, as `run` starts its
//! workers ([`crate::process`]): in its own process group, which is killed when the worker
//! exits, at `--timeout` (exit 2) or at a SIGINT/SIGTERM (exit 128 + the signal number), so
//! nothing it started outlives `validate`. Settings the engine cannot run
//! ([`crate::engine::EngineSpec::unsupported`]) are refused first (exit 2).
//!
//! Must not: write a benchmark report; candle runs in this process.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use candle_core::{DType, Device, Tensor};
use serde::Serialize;

use crate::engine::{EngineDirs, WorkerKind};
use crate::error::UserError;
use crate::model::{ConvImpl, Precision, RunOptions, WanVae};
use crate::values::{self, Engine, Switch, TileSetting};

/// Arguments of `wan-vae-bench validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Weights: `synthetic`, a `.safetensors`/`.pth` path, `hf://OWNER/REPO/FILE[@REV]` or a preset.
    #[arg(long)]
    pub weights: String,
    /// Model of `synthetic` weights: wan2.1 (default) or wan2.2. With a file the model is
    /// read from it, and a different --model is an error (exit 2).
    #[arg(long)]
    pub model: Option<crate::model::ModelKind>,
    /// Cases file: a safetensors file of `<case>.input`, `<case>.latent`, `<case>.decoded`.
    #[arg(long)]
    pub cases: PathBuf,
    /// Precision: fp32, bf16 or fp16.
    #[arg(long, default_value = "fp32", value_parser = values::precision_flag)]
    pub precision: Precision,
    /// Latent frames per decoder call after the first (encoder: 4x); 1 = reference.
    #[arg(long, default_value_t = 1, value_parser = values::chunk_flag)]
    pub chunk: usize,
    /// Spatial tiling: `none` (default), TILE or TILE_PX:OVERLAP_PX in pixels (multiples of 8),
    /// e.g. 256:64; the same values as `run --tile`.
    #[arg(long, default_value = "none", value_parser = values::tile_flag)]
    pub tile: TileSetting,
    /// Device: cpu, cuda:N (NVIDIA GPUs, and AMD GPUs under ROCm: a ROCm torch names them
    /// cuda:N too), metal (candle needs the cargo feature for cuda and metal).
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Convolution implementation: auto (im2col+gemm on CPU) or candle (conv2d).
    #[arg(long, default_value = "auto", value_parser = parse_conv_impl)]
    pub conv: ConvImpl,
    /// TF32 for fp32 convolutions and matmuls on NVIDIA GPUs (Python engines): off (default:
    /// true fp32, judged against the 1e-4 rule), on or auto (as torch leaves it: TF32
    /// convolutions), judged against the TF32 rule when TF32 is in force. candle computes
    /// true fp32 and takes off only.
    #[arg(long, default_value = "off", value_parser = values::tf32_flag)]
    pub tf32: crate::values::Switch,
    #[command(flatten)]
    pub levers: crate::plan::levers::LeverArgs,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write what we computed as an f32 safetensors file (`<case>.latent`, `<case>.decoded`).
    #[arg(long)]
    pub save_outputs: Option<PathBuf>,
    // The engine; its help lists the engines of `engine::ENGINES`.
    #[arg(long, default_value = "candle", value_parser = values::engine_flag,
          help = format!("Engine: {}", crate::engine::engines_help()))]
    pub engine: Engine,
    // The interpreter of the engines whose worker is the Python worker.
    #[arg(long, help = format!(
        "Python interpreter of the {} engines (default: $WAN_VAE_BENCH_PYTHON, else python3)",
        crate::engine::engine_names(|s| s.runs_python())
    ))]
    pub python: Option<String>,
    /// The Python engines: seconds the Python worker may take before its process group is
    /// killed (exit 2).
    #[arg(long, value_name = "SECONDS", default_value_t = 900.0, value_parser = timeout_flag)]
    pub timeout: f64,
    /// The folders of engines that run the user's own install (one flag per such engine).
    #[command(flatten)]
    pub engine_dirs: EngineDirs,
}

/// `--timeout`: seconds, more than 0 and at most a year.
fn timeout_flag(s: &str) -> Result<f64, String> {
    let max = crate::plan::options::MAX_TIMEOUT_S;
    match s.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 && t <= max => Ok(t),
        _ => Err(format!(
            "`{s}` is not a number of seconds greater than 0 and at most {max} (one year)"
        )),
    }
}

pub fn parse_conv_impl(s: &str) -> Result<ConvImpl, String> {
    match s {
        "auto" => Ok(ConvImpl::Auto),
        "candle" => Ok(ConvImpl::Candle),
        _ => Err(format!("unknown conv implementation {s:?}: expected auto or candle")),
    }
}

/// One golden case.
pub struct Case {
    pub name: String,
    pub input: Tensor,
    pub latent: Option<Tensor>,
    pub decoded: Tensor,
}

/// Read a cases file into cases sorted by name; any unknown tensor name is an error.
pub fn read_cases(path: &Path) -> Result<Vec<Case>, UserError> {
    let bytes = crate::read::tensor_file(path, "cases file")?;
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
struct CaseReport {
    case: String,
    outputs: Vec<OutputCheck>,
}

#[derive(Debug, Serialize)]
struct ValidateReport {
    weights: String,
    /// `wan2.1` or `wan2.2`.
    model: crate::model::ModelKind,
    precision: String,
    compute_dtype: String,
    chunk: usize,
    tile: Option<String>,
    device: String,
    conv: String,
    tolerance_rule: String,
    cases: Vec<CaseReport>,
    pass: bool,
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
    let stats = crate::quality::error_stats(&e, &g);
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

/// `wan-vae-bench validate`: settings the engine cannot run are refused (exit 2), then the
/// cases run in this process (candle) or in the Python worker.
pub fn command(mut args: ValidateArgs) -> anyhow::Result<i32> {
    let engine = crate::engine::spec(args.engine);
    if let Some(why) = engine.unsupported(args.chunk, &args.device, args.precision) {
        return Err(UserError::Other(why).into());
    }
    args.levers.check(args.engine)?;
    // candle: true fp32, or TF32 where it acts (`on`: cuDNN and cuBLAS on a CUDA build's GPU).
    let on_cuda = cfg!(feature = "cuda") && args.device.trim().to_ascii_lowercase().starts_with("cuda");
    if !engine.runs_python() && args.tf32 != Switch::Off && !(on_cuda && args.tf32 == Switch::On) {
        let valid = format!(
            "off with --engine {} (true fp32), on only on cuda:N of a CUDA build",
            args.engine
        );
        return Err(UserError::invalid("--tf32", args.tf32.name(), valid).into());
    }
    // As in `run`: the flag, else the environment; the folder's own venv, else the usual
    // interpreter rule.
    args.engine_dirs = args.engine_dirs.clone().or(&EngineDirs::from_env());
    args.engine_dirs.check([args.engine])?;
    if args.python.is_none() {
        args.python = args
            .engine_dirs
            .venv_python([args.engine])
            .map(|p| p.display().to_string());
    }
    match engine.worker {
        WorkerKind::Python { module, .. } => python_command(&args, module),
        WorkerKind::ThisBinary => candle_command(&args),
    }
}

/// Every latent of the cases file (an expected one, or a decode-only case's input) has the
/// model's channel count: a cases file of the other model is refused naming the file, the
/// case and both models, before any case runs.
fn check_cases_model(path: &Path, cases: &[Case], cfg: &crate::model::Config) -> Result<(), UserError> {
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

/// The golden cases through candle, in this process.
fn candle_command(args: &ValidateArgs) -> anyhow::Result<i32> {
    let device = crate::device::parse(&args.device)?;
    // Cases first: a bad cases file must not start a 508 MB download.
    let cases = read_cases(&args.cases)?;
    crate::files::check_distinct(
        &[
            ("--cases", Some(&args.cases)),
            (
                "--weights",
                crate::weights::source::local_file(&args.weights).as_deref(),
            ),
        ],
        &[("--save-outputs", args.save_outputs.as_deref())],
    )?;
    if let Some(path) = &args.save_outputs {
        crate::files::check_output(path, "--save-outputs file")?;
    }
    let source = crate::weights::source::resolve(&args.weights)?.source;
    check_cases_model(
        &args.cases,
        &cases,
        &crate::weights::resolve_config(&source, args.model)?,
    )?;
    let weights = crate::weights::load_model(&source, args.model)?;
    let tf32 = args.tf32 == Switch::On; // only where it acts (checked above)
    crate::model::conv::device::set_tf32(tf32);
    let vae = WanVae::new(&weights.config, weights.var_builder(args.precision, &device), args.conv)?;
    let opts = RunOptions {
        chunk: args.chunk,
        tiling: args.tile,
    };
    let mut tol = Tolerance::for_settings(args.precision, args.tile.is_some());
    if tf32 && args.precision == Precision::Fp32 && args.tile.is_none() {
        tol.factor = Tolerance::TF32_FACTOR;
    }
    let mut saved: Vec<(String, Tensor)> = Vec::new();
    let mut reports = Vec::new();
    for case in &cases {
        let mut outputs = Vec::new();
        let decode_input = match &case.latent {
            Some(expected_latent) => {
                let latent = vae
                    .encode(&case.input, &opts)
                    .with_context(|| format!("case {}: encode", case.name))?;
                outputs.push(check_output("latent", &latent, expected_latent, tol)?);
                saved.push((
                    format!("{}.latent", case.name),
                    latent.to_dtype(DType::F32)?.to_device(&Device::Cpu)?,
                ));
                expected_latent.clone()
            }
            None => case.input.clone(),
        };
        let decoded = vae
            .decode(&decode_input, &opts)
            .with_context(|| format!("case {}: decode", case.name))?;
        outputs.push(check_output("decoded", &decoded, &case.decoded, tol)?);
        saved.push((
            format!("{}.decoded", case.name),
            decoded.to_dtype(DType::F32)?.to_device(&Device::Cpu)?,
        ));
        reports.push(CaseReport {
            case: case.name.clone(),
            outputs,
        });
    }
    if let Some(path) = &args.save_outputs {
        let map: std::collections::HashMap<String, Tensor> = saved.into_iter().collect();
        crate::files::write_atomic_with(path, |tmp| {
            candle_core::safetensors::save(&map, tmp).with_context(|| format!("cannot write {}", tmp.display()))
        })?;
    }
    let pass = reports.iter().all(|c| c.outputs.iter().all(|o| o.pass));
    let report = ValidateReport {
        weights: args.weights.clone(),
        model: vae.config().kind(),
        precision: args.precision.to_string(),
        compute_dtype: vae.compute_dtype(),
        chunk: args.chunk,
        tile: args.tile.map(|t| format!("{}:{}", t.tile_px, t.overlap_px)),
        device: args.device.clone(),
        conv: format!("{:?}", args.conv).to_lowercase(),
        tolerance_rule: tol.describe(),
        cases: reports,
        pass,
    };
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_text(&report);
    }
    Ok(if pass { 0 } else { 1 })
}

fn print_text(r: &ValidateReport) {
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
            let psnr = crate::format::psnr(o.psnr_db, 2, "inf");
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

/// `validate --engine E` with a Python engine: the Python worker's `validate` mode, given the
/// engine's `module` (its entry's), whose output and exit code (0 pass, 1 not, 2 could not
/// run: no torch, no diffusers, no device) are passed through. A missing interpreter is
/// exit 2 here.
fn python_command(args: &ValidateArgs, module: &str) -> anyhow::Result<i32> {
    let interpreter = values::python_interpreter(args.python.as_deref());
    if let Some(problem) = crate::engine::python::interpreter_problem(&interpreter) {
        return Err(UserError::Other(format!("engine {} needs Python: {problem}", args.engine)).into());
    }
    if args.save_outputs.is_some() {
        return Err(UserError::invalid(
            "--save-outputs",
            format!("with --engine {}", args.engine),
            "--engine candle (the Python engines do not save outputs in validate)",
        )
        .into());
    }
    crate::read::check_file(&args.cases, "cases file", crate::read::MAX_TENSOR_FILE_BYTES)?;
    let source = crate::weights::source::resolve(&args.weights)?.source;
    let cfg = crate::weights::resolve_config(&source, args.model)?;
    check_cases_model(&args.cases, &read_cases(&args.cases)?, &cfg)?;
    let dir = tempfile::Builder::new()
        .prefix("wan-vae-bench-validate-")
        .tempdir()
        .context("cannot create a temporary folder for the Python worker")?;
    let worker = crate::engine::python::PythonWorker::write(dir.path(), interpreter.clone())?;
    let weights = match source {
        crate::weights::WeightsSource::File(path) => path,
        synthetic => {
            // The Python worker reads files only: write the synthetic weights once.
            let w = crate::weights::load(&synthetic)?;
            let path = dir.path().join("weights-synthetic.safetensors");
            candle_core::safetensors::save(&w.tensors, &path)
                .with_context(|| format!("cannot write {}", path.display()))?;
            path
        }
    };
    let mut cmd = worker.command();
    cmd.arg("validate")
        .arg("--engine")
        .arg(args.engine.name())
        .arg("--module")
        .arg(module)
        .arg("--weights")
        .arg(&weights)
        .arg("--cases")
        .arg(&args.cases)
        .arg("--precision")
        .arg(args.precision.name())
        .arg("--chunk")
        .arg(args.chunk.to_string())
        .arg("--device")
        .arg(&args.device)
        .arg("--tf32")
        .arg(args.tf32.name())
        .args(args.levers.args());
    if let Some(t) = args.tile {
        cmd.arg("--tile").arg(format!("{}:{}", t.tile_px, t.overlap_px));
    }
    if let Some(dir) = args.engine_dirs.get(args.engine) {
        cmd.arg("--engine-dir").arg(dir);
    }
    if args.json {
        cmd.arg("--json");
    }
    // The verdict must come from what the worker wrote, not from an exit code alone.
    let verdict_file = dir.path().join("verdict.json");
    cmd.arg("--verdict").arg(&verdict_file);
    crate::run::interrupt::install()?;
    let status = match run_worker(cmd, std::time::Duration::from_secs_f64(args.timeout)) {
        Ok(Ended::Exited(status)) => status,
        Ok(Ended::Signal(sig)) => {
            crate::errln!(
                "interrupted by {}: the Python worker's process group was killed",
                crate::run::interrupt::name(sig)
            );
            return Ok(128 + sig);
        }
        Ok(Ended::TimedOut) => {
            return Err(UserError::Other(format!(
                "engine {}: the Python worker ({interpreter}) did not finish within --timeout {}: its process \
                 group was killed; give it more time with --timeout SECONDS",
                args.engine,
                crate::format::seconds(args.timeout)
            ))
            .into())
        }
        Err(e) => {
            return Err(UserError::Other(format!(
                "engine {}: cannot run the Python interpreter {interpreter}: {e}",
                args.engine
            ))
            .into())
        }
    };
    checked_verdict(&verdict_file, status, &interpreter, args.engine.name())
}

/// The exit code of a Python `validate` from the verdict its worker wrote, checked as `run`
/// checks a result: a report whose `pass` agrees with the exit code (0 pass, 1 not, every
/// output judged), or a `{status, error}` with exit 2. Anything else (an interpreter that is
/// not this tool's worker, one that exits early or lies) is an error naming it.
fn checked_verdict(
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
    let text = match crate::read::text(path, "validate verdict", crate::read::MAX_REPORT_BYTES) {
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
enum Ended {
    Exited(std::process::ExitStatus),
    TimedOut,
    /// A SIGINT or SIGTERM stopped `validate`.
    Signal(i32),
}

/// Run the Python worker as the run's workers are ([`crate::process::isolate`]: its own
/// process group, killed with us), its stdout and stderr passed on line by line; kill its
/// group at the timeout, at a SIGINT/SIGTERM, and after it exits (so a background child it
/// left, one holding our stderr open say, goes too). Its output is waited for a bounded
/// time once the group is gone.
fn run_worker(mut cmd: std::process::Command, timeout: std::time::Duration) -> std::io::Result<Ended> {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    crate::process::isolate(&mut cmd);
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
        if let Some(sig) = crate::run::interrupt::received() {
            crate::process::kill_group(child.id());
            let _ = child.wait();
            break Ended::Signal(sig);
        }
        if Instant::now() >= deadline {
            crate::process::kill_group(child.id());
            let _ = child.wait();
            break Ended::TimedOut;
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    crate::process::kill_group(child.id());
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
fn pass_on<R, W>(mut from: R, to: fn() -> W, done: std::sync::mpsc::Sender<()>) -> std::thread::JoinHandle<()>
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
