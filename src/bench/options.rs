//! Typed benchmark options: the run settings, the matrix axes, the env variants, the
//! command-line flags that override the matrix file ([`MatrixFlags`], typed by clap value
//! parsers), and the value parsers themselves (`WxH`, `TILE:OVERLAP`/`none`, precision names,
//! frames, chunks, order). The TOML parser (`config`) and the flags (also `validate`'s) call
//! the same parsers, so a value means the same thing and fails the same way everywhere.
//!
//! Must not: read files or run anything.
use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::UserError;
use crate::model::{ModelKind, Precision, TemporalTiling, Tiling};
use crate::settings::{Engine, MiopenDb, Passes, Switch};

use super::scheduler::Order;

pub use crate::settings::BASELINE;

/// Longest per-case time limit accepted, seconds (one year; a `Duration` overflows near 1.8e19).
pub const MAX_TIMEOUT_S: f64 = 31_536_000.0;

/// The axes of the matrix; every combination is one case.
#[derive(Debug, Clone, PartialEq)]
pub struct Axes {
    /// Video frames.
    pub frames: Vec<usize>,
    /// `(width, height)` in pixels, multiples of 8.
    pub sizes: Vec<(usize, usize)>,
    /// Model precisions.
    pub precisions: Vec<Precision>,
    /// Spatial tilings; `None` = untiled.
    pub tiles: Vec<Option<Tiling>>,
    /// Latent frames per decoder call.
    pub chunks: Vec<usize>,
    /// Env variant names (keys of [`BenchOptions::variants`]).
    pub envs: Vec<String>,
    /// Timed passes (encode, decode or both).
    pub passes: Vec<Passes>,
    /// Temporal tilings of the decode (ComfyUI's); `None` = untiled in time.
    pub temporal_tiles: Vec<Option<TemporalTiling>>,
    /// Engines (candle, torch, diffusers).
    pub engines: Vec<Engine>,
    /// `torch.backends.cudnn.enabled` values (Python engines on a GPU only).
    pub cudnn: Vec<Switch>,
    /// `torch.backends.cudnn.benchmark` values (Python engines on a GPU only).
    pub cudnn_benchmark: Vec<Switch>,
    /// MIOpen database choices (Python engines on a GPU only).
    pub miopen_db: Vec<MiopenDb>,
}

/// Everything a `run` needs, after the config file and the flags are merged.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchOptions {
    /// Weights reference (`synthetic`, a path, a hub reference or preset).
    pub weights: String,
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
    /// The user's input file (`--input`, `[run] input`): a latent or a video.
    pub input: Option<PathBuf>,
    /// Which tensor of the input file (`--input-tensor`, `[run] input_tensor`).
    pub input_tensor: Option<String>,
    /// Limits checked after the run (`[budgets]`).
    pub budgets: super::budgets::Budgets,
    /// Python interpreter of the torch and diffusers engines (`--python`, `[model] python`);
    /// `None`: [`PYTHON_ENV_VAR`], else `python3` (see [`BenchOptions::python`]).
    pub python: Option<String>,
    /// How the Python engines run 16-bit precisions (`cast` or `autocast`); `None`: each
    /// engine's default (autocast for torch, as the official wrapper; cast for diffusers).
    pub torch_precision: Option<TorchPrecision>,
}

/// How a Python engine applies a 16-bit precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TorchPrecision {
    /// The model's weights and activations are cast (`model.to(dtype)`, as ComfyUI does).
    Cast,
    /// f32 weights under `torch.autocast` (the official Wan wrapper).
    Autocast,
}

impl TorchPrecision {
    /// `cast` or `autocast`.
    pub fn name(self) -> &'static str {
        match self {
            TorchPrecision::Cast => "cast",
            TorchPrecision::Autocast => "autocast",
        }
    }
}

/// `cast` or `autocast`.
pub fn parse_torch_precision(what: &str, s: &str) -> Result<TorchPrecision, UserError> {
    match s.trim().to_ascii_lowercase().as_str() {
        "cast" => Ok(TorchPrecision::Cast),
        "autocast" => Ok(TorchPrecision::Autocast),
        _ => Err(UserError::invalid(what, s, "cast or autocast")),
    }
}

/// `--torch-precision` value (clap value parser).
pub fn torch_precision_flag(s: &str) -> Result<TorchPrecision, UserError> {
    parse_torch_precision("--torch-precision", s)
}

/// Environment variable naming the Python interpreter when neither `--python` nor
/// `[model] python` does.
pub const PYTHON_ENV_VAR: &str = "WAN_VAE_BENCH_PYTHON";

/// The interpreter of the Python engines: `given` (flag or matrix file), else
/// [`PYTHON_ENV_VAR`], else `python3`.
pub fn python_interpreter(given: Option<&str>) -> String {
    given
        .map(str::to_string)
        .or_else(|| std::env::var(PYTHON_ENV_VAR).ok().filter(|s| !s.trim().is_empty()))
        .unwrap_or_else(|| "python3".to_string())
}

/// Flags of `run` that replace the matrix file's values when given (an empty list means
/// "not given"); list flags take comma-separated values. Each value is parsed by the same
/// function the matrix file uses.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct MatrixFlags {
    /// Video frames per clip.
    #[arg(long, value_delimiter = ',', value_parser = frames_flag)]
    pub frames: Vec<usize>,
    /// Clip size, `WxH` or `W*H` (multiples of 8).
    #[arg(long, value_delimiter = ',', value_parser = size_flag)]
    pub size: Vec<(usize, usize)>,
    /// Spatial tiling: `none`, `TILE` or `TILE:OVERLAP` in pixels.
    #[arg(long, value_delimiter = ',', conflicts_with = "tile_px", value_parser = tile_flag)]
    pub tile: Vec<TileSetting>,
    /// Tile size in pixels (0 = untiled); overlap from --overlap_px or a quarter of the tile.
    #[arg(long = "tile_px", alias = "tile-px", value_delimiter = ',')]
    pub tile_px: Vec<usize>,
    /// Tile overlap in pixels for --tile_px.
    #[arg(long = "overlap_px", alias = "overlap-px", requires = "tile_px")]
    pub overlap_px: Option<usize>,
    /// Warmup passes per case (timed and reported separately).
    #[arg(long)]
    pub warmup: Option<usize>,
    /// Timed passes per case.
    #[arg(long)]
    pub runs: Option<usize>,
    /// Precisions: fp32, bf16, fp16.
    #[arg(long, value_delimiter = ',', value_parser = precision_flag)]
    pub precision: Vec<Precision>,
    /// Latent frames per decoder call.
    #[arg(long, value_delimiter = ',', value_parser = chunk_flag)]
    pub chunk: Vec<usize>,
    /// Env variants (names of `[env.NAME]` tables; `baseline` always exists).
    #[arg(long, value_delimiter = ',')]
    pub env: Vec<String>,
    /// Engines: candle (default), torch, diffusers.
    #[arg(long, value_delimiter = ',', value_parser = engine_flag)]
    pub engine: Vec<Engine>,
    /// torch.backends.cudnn.enabled: on, off (Python engines on cuda:N only).
    #[arg(long, value_delimiter = ',', value_parser = cudnn_flag)]
    pub cudnn: Vec<Switch>,
    /// torch.backends.cudnn.benchmark: off, on (Python engines on cuda:N only).
    #[arg(long = "cudnn-benchmark", alias = "cudnn_benchmark", value_delimiter = ',', value_parser = benchmark_flag)]
    pub cudnn_benchmark: Vec<Switch>,
    /// MIOpen database: user, fresh (an empty directory per case; Python engines on cuda:N only).
    #[arg(long = "miopen-db", alias = "miopen_db", value_delimiter = ',', value_parser = miopen_db_flag)]
    pub miopen_db: Vec<MiopenDb>,
    /// Python interpreter of the torch and diffusers engines (default: $WAN_VAE_BENCH_PYTHON, else python3).
    #[arg(long)]
    pub python: Option<String>,
    /// How the Python engines run bf16/fp16: cast (model.to(dtype)) or autocast (default: autocast
    /// for torch, cast for diffusers).
    #[arg(long = "torch-precision", value_parser = torch_precision_flag)]
    pub torch_precision: Option<TorchPrecision>,
    /// Weights: `synthetic`, a local file, or a hub reference.
    #[arg(long)]
    pub weights: Option<String>,
    /// Model of `synthetic` weights: wan2.1 (default) or wan2.2; with a file it must agree.
    #[arg(long)]
    pub model: Option<ModelKind>,
    /// Device: cpu, cuda:N, metal.
    #[arg(long)]
    pub device: Option<String>,
    /// Per-case time limit in seconds.
    #[arg(long = "timeout", alias = "timeout_s")]
    pub timeout_s: Option<f64>,
    /// Case order: `shuffled` (default, seed recorded) or `as-written`.
    #[arg(long, value_parser = order_flag)]
    pub order: Option<Order>,
    /// Seed of the case shuffle.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Report file (default `results/<UTC time>-<host>.json`).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// No progress bar and no per-case lines.
    #[arg(long, short)]
    pub quiet: bool,
    /// Timed passes: encode, decode or both (default both); a decode-only case decodes
    /// --input's latent, or an untimed encode of the clip.
    #[arg(long, value_delimiter = ',', value_parser = passes_flag)]
    pub passes: Vec<Passes>,
    /// Temporal tiling of the decode as ComfyUI's VAEDecodeTiled: `none` or
    /// TILE:OVERLAP in video frames (its defaults: 64:8).
    #[arg(long = "temporal-tile", alias = "temporal_tile", value_delimiter = ',', value_parser = temporal_tile_flag)]
    pub temporal_tile: Vec<TemporalTileSetting>,
    /// Input file: a latent [1,z,t,h,w] or [z,t,h,w], or a video [1,3,T,H,W] in [-1,1], as
    /// .safetensors, ComfyUI .latent or .npy; frames and size come from it.
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// The tensor of --input to use when the file holds several.
    #[arg(long = "input-tensor", alias = "input_tensor")]
    pub input_tensor: Option<String>,
}

/// A temporal tiling axis value (see [`TileSetting`] for the spelling).
pub type TemporalTileSetting = ::std::option::Option<TemporalTiling>;

/// A tiling axis value: `None` = untiled. Spelled `::std::option::Option` where clap
/// derives a flag from it, so clap parses `none` instead of treating the flag as optional.
pub type TileSetting = ::std::option::Option<Tiling>;

impl BenchOptions {
    /// Apply command-line flags; cross-setting checks follow (errors name the flag).
    pub fn apply(&mut self, o: &MatrixFlags) -> anyhow::Result<()> {
        if !o.frames.is_empty() {
            self.axes.frames = o.frames.clone();
        }
        if !o.size.is_empty() {
            self.axes.sizes = o.size.clone();
        }
        let mut tiles = o.tile.clone();
        for &t in &o.tile_px {
            // `--tile_px T [--overlap_px O]` is the older spelling of `--tile T[:O]`.
            let spelled = match (t, o.overlap_px) {
                (0, _) => "none".to_string(),
                (t, Some(o)) => format!("{t}:{o}"),
                (t, None) => t.to_string(),
            };
            // Name the flags the user typed, not the `--tile` spelling they became.
            let tile = parse_tile("--tile_px", &spelled).map_err(|_| {
                let given = match o.overlap_px {
                    Some(ov) => format!("--tile_px {t} --overlap_px {ov}"),
                    None => format!("--tile_px {t}"),
                };
                UserError::invalid(
                    "--tile_px/--overlap_px",
                    given,
                    "a tile in pixels (a multiple of 8, 0 = untiled) and an overlap that is a multiple of 8 \
                     smaller than the tile, e.g. --tile_px 256 --overlap_px 64",
                )
            })?;
            tiles.push(tile);
        }
        if !tiles.is_empty() {
            self.axes.tiles = tiles;
        }
        if !o.precision.is_empty() {
            self.axes.precisions = o.precision.clone();
        }
        if !o.chunk.is_empty() {
            self.axes.chunks = o.chunk.clone();
        }
        if !o.env.is_empty() {
            self.axes.envs = o.env.clone();
        }
        if !o.passes.is_empty() {
            self.axes.passes = o.passes.clone();
        }
        if !o.temporal_tile.is_empty() {
            self.axes.temporal_tiles = o.temporal_tile.clone();
        }
        if o.input.is_some() {
            self.input = o.input.clone();
        }
        if o.input_tensor.is_some() {
            self.input_tensor = o.input_tensor.clone();
        }
        if !o.engine.is_empty() {
            self.axes.engines = o.engine.clone();
        }
        if !o.cudnn.is_empty() {
            self.axes.cudnn = o.cudnn.clone();
        }
        if !o.cudnn_benchmark.is_empty() {
            self.axes.cudnn_benchmark = o.cudnn_benchmark.clone();
        }
        if !o.miopen_db.is_empty() {
            self.axes.miopen_db = o.miopen_db.clone();
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
        }
        if o.model.is_some() {
            self.model = o.model;
        }
        if let Some(d) = &o.device {
            self.device = d.clone();
        }
        self.order = o.order.unwrap_or(self.order);
        self.seed = o.seed.or(self.seed);
        if o.output.is_some() {
            self.output = o.output.clone();
        }
        self.quiet |= o.quiet;
        self.validate()
    }

    /// Checks that span several settings: run counts, timeout, env variants exist,
    /// no duplicate axis values.
    pub fn validate(&self) -> anyhow::Result<()> {
        check_device("device", &self.device)?;
        if self.runs == 0 {
            return Err(UserError::invalid("runs", "0", "at least 1 timed run").into());
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0 && self.timeout_s <= MAX_TIMEOUT_S) {
            return Err(UserError::invalid(
                "timeout (--timeout, [run] timeout_s)",
                self.timeout_s.to_string(),
                format!("a number of seconds greater than 0 and at most {MAX_TIMEOUT_S} (one year)"),
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
        for name in &self.axes.envs {
            if !self.variants.contains_key(name) {
                let known: Vec<&str> = self.variants.keys().map(String::as_str).collect();
                return Err(UserError::invalid(
                    "env variant",
                    name,
                    format!("one of the defined variants: {}", known.join(", ")),
                )
                .into());
            }
        }
        let a = &self.axes;
        no_duplicates("frames", a.frames.iter().map(|f| f.to_string()))?;
        no_duplicates("size", a.sizes.iter().map(|(w, h)| format!("{w}x{h}")))?;
        no_duplicates("precision", a.precisions.iter().map(|p| p.name().to_string()))?;
        no_duplicates("tile", a.tiles.iter().map(|t| tile_name(*t)))?;
        no_duplicates("chunk", a.chunks.iter().map(|c| c.to_string()))?;
        no_duplicates("env", a.envs.iter().cloned())?;
        no_duplicates("passes", a.passes.iter().map(|p| p.name().to_string()))?;
        no_duplicates("temporal_tile", a.temporal_tiles.iter().map(|t| temporal_tile_name(*t)))?;
        if self.input_tensor.is_some() && self.input.is_none() {
            return Err(UserError::Other("--input-tensor (run.input_tensor) needs --input (run.input)".into()).into());
        }
        no_duplicates("engine", a.engines.iter().map(|e| e.name().to_string()))?;
        no_duplicates("cudnn", a.cudnn.iter().map(|s| s.name().to_string()))?;
        no_duplicates(
            "cudnn_benchmark",
            a.cudnn_benchmark.iter().map(|s| s.name().to_string()),
        )?;
        no_duplicates("miopen_db", a.miopen_db.iter().map(|s| s.name().to_string()))?;
        Ok(())
    }

    /// Number of cases the matrix expands to (knobs that do not apply are not multiplied in),
    /// counted from the axes without building any case.
    pub fn case_count(&self) -> usize {
        let a = &self.axes;
        let knobs = a.cudnn.len() * a.cudnn_benchmark.len() * a.miopen_db.len();
        let engines: usize = a
            .engines
            .iter()
            .map(|&e| match crate::engine::knobs_apply(e, &self.device) {
                true => knobs,
                false => 1,
            })
            .sum();
        a.frames.len()
            * a.sizes.len()
            * a.precisions.len()
            * a.tiles.len()
            * a.chunks.len()
            * a.envs.len()
            * a.passes.len()
            * a.temporal_tiles.len()
            * engines
    }

    /// The interpreter of the Python engines ([`python_interpreter`]).
    pub fn python(&self) -> String {
        python_interpreter(self.python.as_deref())
    }
}

fn no_duplicates(axis: &str, values: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for v in values {
        if !seen.insert(v.clone()) {
            return Err(UserError::invalid(format!("matrix.{axis}"), v, "each value once (duplicate)").into());
        }
    }
    Ok(())
}

/// Frames must be at least 1.
pub fn check_frames(what: &str, frames: Vec<usize>) -> anyhow::Result<Vec<usize>> {
    if let Some(bad) = frames.iter().find(|&&f| f == 0) {
        return Err(UserError::invalid(what, bad.to_string(), "at least 1 frame").into());
    }
    Ok(frames)
}

/// Chunks must be at least 1.
pub fn check_chunks(what: &str, chunks: Vec<usize>) -> anyhow::Result<Vec<usize>> {
    if let Some(bad) = chunks.iter().find(|&&c| c == 0) {
        return Err(UserError::invalid(what, bad.to_string(), "a chunk of at least 1 latent frame").into());
    }
    Ok(chunks)
}

/// `WxH` or `W*H`, both positive multiples of 8; the error names the nearest valid sizes.
pub fn parse_size(what: &str, s: &str) -> Result<(usize, usize), UserError> {
    let parts: Vec<&str> = s.trim().split(['x', 'X', '*']).collect();
    let parsed = match parts.as_slice() {
        [w, h] => w.trim().parse::<usize>().ok().zip(h.trim().parse::<usize>().ok()),
        _ => None,
    };
    let Some((w, h)) = parsed else {
        return Err(UserError::invalid(
            what,
            s,
            "WIDTHxHEIGHT (or WIDTH*HEIGHT), e.g. 832x480",
        ));
    };
    if w % 8 == 0 && h % 8 == 0 && w > 0 && h > 0 {
        return Ok((w, h));
    }
    let down = |v: usize| (v / 8 * 8).max(8);
    let up = |v: usize| v.div_ceil(8).max(1) * 8;
    let mut near = vec![format!("{}x{}", down(w), down(h))];
    let hi = format!("{}x{}", up(w), up(h));
    if !near.contains(&hi) {
        near.push(hi);
    }
    Err(UserError::invalid(
        what,
        s,
        format!(
            "width and height must be positive multiples of 8 (nearest valid: {})",
            near.join(" or ")
        ),
    ))
}

/// `none`, `TILE` or `TILE:OVERLAP` in pixels (the model's rules: multiples of 8, overlap <
/// tile, overlap defaulting to a quarter of the tile rounded down to 8).
pub fn parse_tile(what: &str, s: &str) -> Result<Option<Tiling>, UserError> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("none") || s == "0" {
        return Ok(None);
    }
    s.parse::<Tiling>().map(Some).map_err(|_| {
        UserError::invalid(
            what,
            s,
            "`none`, TILE or TILE:OVERLAP in pixels (multiples of 8, overlap < tile), e.g. 256:64",
        )
    })
}

/// `none` or `TILE:OVERLAP` in video frames (ComfyUI's `temporal_size:temporal_overlap`).
pub fn parse_temporal_tile(what: &str, s: &str) -> Result<Option<TemporalTiling>, UserError> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    s.parse::<TemporalTiling>().map(Some).map_err(|e| match e {
        UserError::InvalidValue { expected, .. } => UserError::invalid(what, s, expected),
        other => other,
    })
}

/// `encode`, `decode` or `both`.
pub fn parse_passes(what: &str, s: &str) -> Result<Passes, UserError> {
    s.parse::<Passes>()
        .map_err(|_| UserError::invalid(what, s, "encode, decode or both"))
}

/// `--passes` value (clap value parser).
pub fn passes_flag(s: &str) -> Result<Passes, UserError> {
    parse_passes("--passes", s)
}

/// `--temporal-tile` value (clap value parser).
pub fn temporal_tile_flag(s: &str) -> Result<TemporalTileSetting, UserError> {
    parse_temporal_tile("--temporal-tile", s)
}

/// Canonical name of a temporal tiling: `none` or `TILE:OVERLAP` (video frames).
pub fn temporal_tile_name(t: Option<TemporalTiling>) -> String {
    match t {
        None => "none".to_string(),
        Some(t) => format!("{}:{}", t.tile_frames, t.overlap_frames),
    }
}

/// `fp32`, `bf16` or `fp16` (also `f32`, `float32`, ...).
pub fn parse_precision(what: &str, s: &str) -> Result<Precision, UserError> {
    s.parse::<Precision>()
        .map_err(|_| UserError::invalid(what, s, "fp32, bf16 or fp16"))
}

/// `--frames` value (clap value parser).
pub fn frames_flag(s: &str) -> anyhow::Result<usize> {
    Ok(check_frames("--frames", vec![parse_count("--frames", s)?])?[0])
}

/// `--chunk` value (clap value parser).
pub fn chunk_flag(s: &str) -> anyhow::Result<usize> {
    Ok(check_chunks("--chunk", vec![parse_count("--chunk", s)?])?[0])
}

/// `--size` value (clap value parser).
pub fn size_flag(s: &str) -> Result<(usize, usize), UserError> {
    parse_size("--size", s)
}

/// `--tile` value (clap value parser).
pub fn tile_flag(s: &str) -> Result<TileSetting, UserError> {
    parse_tile("--tile", s)
}

/// `--precision` value (clap value parser).
pub fn precision_flag(s: &str) -> Result<Precision, UserError> {
    parse_precision("--precision", s)
}

/// `--engine` value (clap value parser).
pub fn engine_flag(s: &str) -> Result<Engine, UserError> {
    Engine::parse("--engine", s)
}

/// `--cudnn` value (clap value parser).
pub fn cudnn_flag(s: &str) -> Result<Switch, UserError> {
    Switch::parse("--cudnn", s)
}

/// `--cudnn-benchmark` value (clap value parser).
pub fn benchmark_flag(s: &str) -> Result<Switch, UserError> {
    Switch::parse("--cudnn-benchmark", s)
}

/// `--miopen-db` value (clap value parser).
pub fn miopen_db_flag(s: &str) -> Result<MiopenDb, UserError> {
    MiopenDb::parse("--miopen-db", s)
}

/// `--order` value (clap value parser).
pub fn order_flag(s: &str) -> Result<Order, UserError> {
    Order::parse("--order", s)
}

fn parse_count(what: &str, s: &str) -> Result<usize, UserError> {
    s.trim()
        .parse()
        .map_err(|_| UserError::invalid(what, s, "a whole number"))
}

/// `cpu`, `cuda[:N]` or `metal[:N]` (syntax only: whether this build and machine have it is
/// the worker's to find out, reported as `unsupported`).
pub fn check_device(what: &str, s: &str) -> Result<(), UserError> {
    let spec = s.trim().to_ascii_lowercase();
    let (kind, index) = spec.split_once(':').unwrap_or((spec.as_str(), "0"));
    if matches!(kind, "cpu" | "cuda" | "metal") && index.parse::<usize>().is_ok() {
        Ok(())
    } else {
        Err(UserError::invalid(what, s, "cpu, cuda:N or metal:N"))
    }
}

/// Canonical name of a tiling: `none` or `TILE:OVERLAP`.
pub fn tile_name(t: Option<Tiling>) -> String {
    match t {
        None => "none".to_string(),
        Some(t) => format!("{}:{}", t.tile_px, t.overlap_px),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("s", "832x480").unwrap(), (832, 480));
        assert_eq!(parse_size("s", "64*32").unwrap(), (64, 32));
        let e = parse_size("matrix.size", "65x64").unwrap_err().to_string();
        assert!(e.contains("matrix.size") && e.contains("64x64 or 72x64"), "{e}");
        assert!(parse_size("s", "64").is_err());
        assert!(parse_size("s", "0x64").is_err());
    }

    #[test]
    fn tiles() {
        assert_eq!(parse_tile("t", "none").unwrap(), None);
        assert_eq!(
            parse_tile("t", "256:64").unwrap(),
            Some(Tiling {
                tile_px: 256,
                overlap_px: 64
            })
        );
        assert_eq!(
            parse_tile("t", "256").unwrap(),
            Some(Tiling {
                tile_px: 256,
                overlap_px: 64
            })
        );
        assert_eq!(
            parse_tile("t", "64").unwrap(),
            Some(Tiling {
                tile_px: 64,
                overlap_px: 16
            })
        );
        assert!(parse_tile("t", "64:64").is_err());
        assert!(parse_tile("t", "60:8").is_err());
        assert!(parse_tile("t", "big").is_err());
    }

    #[test]
    fn temporal_tiles_and_passes() {
        assert_eq!(parse_temporal_tile("t", "none").unwrap(), None);
        assert_eq!(
            parse_temporal_tile("t", "64:8").unwrap(),
            Some(TemporalTiling::COMFYUI_DEFAULT)
        );
        let e = parse_temporal_tile("matrix.temporal_tile", "64:3")
            .unwrap_err()
            .to_string();
        assert!(e.contains("matrix.temporal_tile") && e.contains("64:3"), "{e}");
        assert_eq!(parse_passes("p", "decode").unwrap(), Passes::Decode);
        assert!(parse_passes("p", "both-ways")
            .unwrap_err()
            .to_string()
            .contains("both-ways"));
    }

    #[test]
    fn precisions() {
        assert_eq!(parse_precision("p", "BF16").unwrap(), Precision::Bf16);
        assert!(parse_precision("p", "int8").unwrap_err().to_string().contains("int8"));
    }
}
