//! `wan-vae-bench validate`: run every case of a golden cases file and report, per output,
//! how far our encode/decode is from the expected tensors (exit 0 within tolerance, 1 not, 2
//! bad input), through candle in this process or an engine's Python worker
//! ([`crate::run::validate`] holds the cases, tolerances, checks and the worker's run).
use std::path::PathBuf;

use anyhow::Context;
use candle_core::{DType, Device, Tensor};

use crate::engine::{EngineDirs, WorkerKind};
use crate::model::{ConvImpl, Precision, RunOptions, WanVae};
use crate::report::values::{self, Engine, Switch, TileSetting};
use crate::run::validate::{
    check_cases_model, check_output, checked_verdict, print_text, read_cases, run_worker, CaseReport, Ended, Tolerance,
    ValidateReport,
};
use crate::util::error::UserError;

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
    /// convolutions), judged against the TF32 rule when TF32 is in force. candle: off (true
    /// fp32), or on on cuda:N of a CUDA build (judged against the TF32 rule).
    #[arg(long, default_value = "off", value_parser = values::tf32_flag)]
    pub tf32: crate::report::values::Switch,
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

/// `wan-vae-bench validate`: settings the engine cannot run are refused (exit 2), then the
/// cases run in this process (candle) or in the Python worker.
pub fn command(mut args: ValidateArgs) -> anyhow::Result<i32> {
    let engine = crate::engine::spec(args.engine);
    if let Some(why) = engine.unsupported(args.chunk, &args.device, args.precision) {
        return Err(UserError::Other(why).into());
    }
    args.levers.check(args.engine)?;
    // candle: true fp32, or TF32 where it acts (`on`: cuDNN and cuBLAS on a CUDA build's GPU).
    let on_cuda = cfg!(feature = "cuda") && crate::engine::device_kind(&args.device) == "cuda";
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

/// The golden cases through candle, in this process.
fn candle_command(args: &ValidateArgs) -> anyhow::Result<i32> {
    let device = crate::machine::device::parse(&args.device)?;
    // Cases first: a bad cases file must not start a 508 MB download.
    let cases = read_cases(&args.cases)?;
    crate::util::files::check_distinct(
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
        crate::util::files::check_output(path, "--save-outputs file")?;
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
        crate::util::files::write_atomic_with(path, |tmp| {
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
    crate::util::read::check_file(&args.cases, "cases file", crate::util::read::MAX_TENSOR_FILE_BYTES)?;
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
    crate::util::interrupt::install()?;
    let status = match run_worker(cmd, std::time::Duration::from_secs_f64(args.timeout)) {
        Ok(Ended::Exited(status)) => status,
        Ok(Ended::Signal(sig)) => {
            crate::errln!(
                "interrupted by {}: the Python worker's process group was killed",
                crate::util::interrupt::name(sig)
            );
            return Ok(128 + sig);
        }
        Ok(Ended::TimedOut) => {
            return Err(UserError::Other(format!(
                "engine {}: the Python worker ({interpreter}) did not finish within --timeout {}: its process \
                 group was killed; give it more time with --timeout SECONDS",
                args.engine,
                crate::util::format::seconds(args.timeout)
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
