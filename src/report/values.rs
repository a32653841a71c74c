//! The values that settings and options take, and how they are spelled: the engines,
//! PyTorch on/off knobs, MIOpen databases, the levers ([`Layout`], [`Conv3dMode`]), timed passes, 16-bit modes of the Python engines
//! ([`TorchPrecision`]), case order ([`Order`]), worker sharing ([`Isolate`]), the Python interpreter
//! ([`python_interpreter`]), and the parsers of sizes, tilings, counts and devices with the
//! canonical names that go with them. Every parser takes `what` (the flag or key the user
//! wrote) and its error names it and what would be valid.
//!
//! Lives below every module that uses these values (`settings`, `bench`'s options, config,
//! scheduler, protocol and Python worker, `validate`), so none of them imports another for
//! a value type.
//!
//! Must not: know about the matrix, cases, files or processes.
use serde::{Deserialize, Serialize};

use crate::model::{Precision, TemporalTiling, Tiling};
use crate::util::error::UserError;

/// Which implementation computes the VAE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// This binary's candle port (the `worker` command).
    #[default]
    Candle,
    /// The official Wan computation on PyTorch (the Python worker).
    Torch,
    /// diffusers' `AutoencoderKLWan` from the interpreter's own install (the Python worker).
    Diffusers,
    /// The user's own ComfyUI (`--comfyui DIR`): its `comfy.sd.VAE`, as its VAE nodes run it.
    Comfyui,
}

impl Engine {
    /// Every engine, in the order tables list them.
    pub const ALL: [Engine; 4] = [Engine::Candle, Engine::Torch, Engine::Diffusers, Engine::Comfyui];

    /// `candle`, `torch`, `diffusers` or `comfyui` (the JSON and flag spelling).
    pub fn name(self) -> &'static str {
        match self {
            Engine::Candle => "candle",
            Engine::Torch => "torch",
            Engine::Diffusers => "diffusers",
            Engine::Comfyui => "comfyui",
        }
    }

    /// Whether the `tf32` knob acts in it alone on an NVIDIA GPU (`cuda:N`), where the
    /// PyTorch knobs do not, with `auto` its true fp32: candle's (cuDNN's math type and
    /// cuBLAS's compute type; TF32 only when a case says `on`), not torch's (whose `auto`
    /// lets cuDNN run fp32 convolutions in TF32). Its `auto` case is its own fp32 reference.
    pub fn tf32_alone(self) -> bool {
        self == Engine::Candle
    }

    /// Parse an engine name; the error names `what` and the valid names.
    pub fn parse(what: &str, s: &str) -> Result<Engine, UserError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "candle" => Ok(Engine::Candle),
            "torch" | "pytorch" => Ok(Engine::Torch),
            "diffusers" => Ok(Engine::Diffusers),
            "comfyui" | "comfy" => Ok(Engine::Comfyui),
            _ => {
                let names = Engine::ALL.map(Engine::name);
                let (last, rest) = names.split_last().expect("at least one engine");
                Err(UserError::invalid(what, s, format!("{} or {last}", rest.join(", "))))
            }
        }
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A PyTorch on/off flag (`torch.backends.cudnn.*`): set on or off by the worker once the
/// engine has started, left as the engine leaves it (`auto`: torch's default for torch and
/// diffusers, what ComfyUI's start-up sets for comfyui, which turns cuDNN off on AMD), or
/// not applicable (candle, or the CPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub enum Switch {
    #[serde(rename = "auto")]
    Auto,
    #[serde(rename = "on")]
    On,
    #[serde(rename = "off")]
    Off,
    #[default]
    #[serde(rename = "n/a")]
    NotApplicable,
}

impl Switch {
    /// `auto`, `on`, `off` or `n/a`.
    pub fn name(self) -> &'static str {
        match self {
            Switch::Auto => "auto",
            Switch::On => "on",
            Switch::Off => "off",
            Switch::NotApplicable => NOT_APPLICABLE,
        }
    }

    /// `auto`, `on` or `off` (also `true`/`false`, `1`/`0`).
    pub fn parse(what: &str, s: &str) -> Result<Switch, UserError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Switch::Auto),
            "on" | "true" | "1" => Ok(Switch::On),
            "off" | "false" | "0" => Ok(Switch::Off),
            _ => Err(UserError::invalid(what, s, "auto, on or off")),
        }
    }
}

/// How a setting that does not apply to a case is recorded (knobs of candle, or on the CPU).
pub const NOT_APPLICABLE: &str = "n/a";

/// Which MIOpen database a case uses: the user's (`~/.config/miopen`, `~/.cache/miopen` or
/// what the variant sets), or a fresh empty directory per case (the "first decode after an
/// update" case: the warmup pass carries the whole find and compile cost).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub enum MiopenDb {
    #[serde(rename = "user")]
    User,
    #[serde(rename = "fresh")]
    Fresh,
    #[default]
    #[serde(rename = "n/a")]
    NotApplicable,
}

impl MiopenDb {
    /// `user`, `fresh` or `n/a`.
    pub fn name(self) -> &'static str {
        match self {
            MiopenDb::User => "user",
            MiopenDb::Fresh => "fresh",
            MiopenDb::NotApplicable => NOT_APPLICABLE,
        }
    }

    /// `user` or `fresh`.
    pub fn parse(what: &str, s: &str) -> Result<MiopenDb, UserError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "user" => Ok(MiopenDb::User),
            "fresh" => Ok(MiopenDb::Fresh),
            _ => Err(UserError::invalid(what, s, "user or fresh")),
        }
    }
}

/// The memory layout of a Python engine's model (issue 40's first lever): its Conv3d weights
/// and the activations its causal convolutions see, as torch's memory formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub enum Layout {
    /// `torch.contiguous_format` (NCDHW): what every engine does unless asked.
    #[default]
    #[serde(rename = "ncdhw")]
    Ncdhw,
    /// `torch.channels_last_3d` (NDHWC), with a causal pad that keeps it.
    #[serde(rename = "channels_last_3d")]
    ChannelsLast3d,
}

impl Layout {
    /// `ncdhw` or `channels_last_3d`.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Ncdhw => "ncdhw",
            Layout::ChannelsLast3d => "channels_last_3d",
        }
    }

    /// `ncdhw` (also `contiguous`) or `channels_last_3d` (also `cl3d`, `ndhwc`).
    pub fn parse(what: &str, s: &str) -> Result<Layout, UserError> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "ncdhw" | "contiguous" => Ok(Layout::Ncdhw),
            "channels_last_3d" | "cl3d" | "ndhwc" => Ok(Layout::ChannelsLast3d),
            _ => Err(UserError::invalid(what, s, "ncdhw or channels_last_3d")),
        }
    }
}

/// How a Python engine runs its causal 3D convolutions (issue 40's second lever).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Conv3dMode {
    /// One `conv3d` per causal convolution, as the model's code has it.
    #[default]
    Native,
    /// Each causal convolution with a time kernel of k > 1 frames as k `conv2d` over its
    /// time offsets, summed (the same arithmetic; the same cache).
    Split,
}

impl Conv3dMode {
    /// `native` or `split`.
    pub fn name(self) -> &'static str {
        match self {
            Conv3dMode::Native => "native",
            Conv3dMode::Split => "split",
        }
    }

    /// `native` or `split`.
    pub fn parse(what: &str, s: &str) -> Result<Conv3dMode, UserError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "native" => Ok(Conv3dMode::Native),
            "split" => Ok(Conv3dMode::Split),
            _ => Err(UserError::invalid(what, s, "native or split")),
        }
    }
}

/// The passes a case times: `encode`, `decode` or `both` (the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Passes {
    Encode,
    Decode,
    #[default]
    Both,
}

impl Passes {
    /// `encode`, `decode` or `both` (the JSON and matrix-file spelling).
    pub fn name(self) -> &'static str {
        match self {
            Passes::Encode => "encode",
            Passes::Decode => "decode",
            Passes::Both => "both",
        }
    }
    /// Whether the encode pass is timed.
    pub fn encodes(self) -> bool {
        self != Passes::Decode
    }
    /// Whether the decode pass is timed.
    pub fn decodes(self) -> bool {
        self != Passes::Encode
    }
    /// `encode`, `decode` or `both` (also `encode+decode`).
    pub fn parse(what: &str, s: &str) -> Result<Passes, UserError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "encode" => Ok(Passes::Encode),
            "decode" => Ok(Passes::Decode),
            "both" | "encode+decode" => Ok(Passes::Both),
            _ => Err(UserError::invalid(what, s, "encode, decode or both")),
        }
    }
}

impl std::str::FromStr for Passes {
    type Err = UserError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Passes::parse("passes", s)
    }
}

/// How a Python engine applies a 16-bit precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

    /// `cast` or `autocast`.
    pub fn parse(what: &str, s: &str) -> Result<TorchPrecision, UserError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cast" => Ok(TorchPrecision::Cast),
            "autocast" => Ok(TorchPrecision::Autocast),
            _ => Err(UserError::invalid(what, s, "cast or autocast")),
        }
    }
}

/// How cases are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Random permutation from a seed recorded in the report.
    Shuffled,
    /// Matrix order: the last axis varies fastest.
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

/// A tiling value: `None` = untiled. Spelled `::std::option::Option` where clap derives a
/// flag from it, so clap parses `none` instead of treating the flag as optional.
pub type TileSetting = ::std::option::Option<Tiling>;

/// A whole number.
pub fn parse_count(what: &str, s: &str) -> Result<usize, UserError> {
    s.trim()
        .parse()
        .map_err(|_| UserError::invalid(what, s, "a whole number"))
}

/// Video frames: a whole number, at least 1.
pub fn parse_frames(what: &str, s: &str) -> Result<usize, UserError> {
    match parse_count(what, s)? {
        0 => Err(UserError::invalid(what, s, "at least 1 frame")),
        f => Ok(f),
    }
}

/// Latent frames per decoder call: a whole number, at least 1.
pub fn parse_chunk(what: &str, s: &str) -> Result<usize, UserError> {
    match parse_count(what, s)? {
        0 => Err(UserError::invalid(what, s, "a chunk of at least 1 latent frame")),
        c => Ok(c),
    }
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

/// `fp32`, `bf16`, `fp16` (also `f32`, `float32`, ...) or `auto` (the engine's own pick;
/// comfyui only, other engines' cases are `unsupported`).
pub fn parse_precision(what: &str, s: &str) -> Result<Precision, UserError> {
    s.parse::<Precision>()
        .map_err(|_| UserError::invalid(what, s, "fp32, bf16, fp16 or auto (the comfyui engine's own choice)"))
}

/// `none`, `TILE` or `TILE:OVERLAP` in pixels (the model's rules: multiples of 8, overlap <
/// tile, overlap defaulting to [`Tiling::default_overlap`]).
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

/// Canonical name of a tiling: `none` or `TILE:OVERLAP`.
pub fn tile_name(t: Option<Tiling>) -> String {
    match t {
        None => "none".to_string(),
        Some(t) => format!("{}:{}", t.tile_px, t.overlap_px),
    }
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

/// Canonical name of a temporal tiling: `none` or `TILE:OVERLAP` (video frames).
pub fn temporal_tile_name(t: Option<TemporalTiling>) -> String {
    match t {
        None => "none".to_string(),
        Some(t) => format!("{}:{}", t.tile_frames, t.overlap_frames),
    }
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

/// `--precision` value (clap value parser).
pub fn precision_flag(s: &str) -> Result<Precision, UserError> {
    parse_precision("--precision", s)
}

/// `--chunk` value (clap value parser).
pub fn chunk_flag(s: &str) -> Result<usize, UserError> {
    parse_chunk("--chunk", s)
}

/// `--tile` value (clap value parser).
pub fn tile_flag(s: &str) -> Result<TileSetting, UserError> {
    parse_tile("--tile", s)
}

/// `--engine` value (clap value parser).
pub fn engine_flag(s: &str) -> Result<Engine, UserError> {
    Engine::parse("--engine", s)
}

/// `--torch-precision` value (clap value parser).
pub fn torch_precision_flag(s: &str) -> Result<TorchPrecision, UserError> {
    TorchPrecision::parse("--torch-precision", s)
}

/// `validate --tf32` value (clap value parser).
pub fn tf32_flag(s: &str) -> Result<Switch, UserError> {
    Switch::parse("--tf32", s)
}

/// `--order` value (clap value parser).
pub fn order_flag(s: &str) -> Result<Order, UserError> {
    Order::parse("--order", s)
}

/// How cases are spread over worker processes (`run --isolate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Isolate {
    /// Cases that may share a process do (`run::pool::worker_key`).
    #[default]
    Worker,
    /// One process per case.
    Case,
}

impl Isolate {
    /// The report's `run.isolate`.
    pub fn name(self) -> &'static str {
        match self {
            Isolate::Worker => "worker",
            Isolate::Case => "case",
        }
    }
}

/// How the cases are timed (`run --schedule`, `[run] schedule`; `run::rounds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Schedule {
    /// The cases of a workload in interleaved rounds, a few runs per visit (the default).
    #[default]
    Rounds,
    /// Each case's runs in one block, cases grouped by worker (the order before issue 63).
    Blocks,
}

impl Schedule {
    /// `rounds` or `blocks` (the report's `run.schedule`).
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Rounds => "rounds",
            Schedule::Blocks => "blocks",
        }
    }

    /// `rounds` or `blocks`, for the matrix file's `[run] schedule`.
    pub fn parse(what: &str, s: &str) -> Result<Schedule, UserError> {
        match s.trim() {
            "rounds" => Ok(Schedule::Rounds),
            "blocks" => Ok(Schedule::Blocks),
            _ => Err(UserError::invalid(what, s, "`rounds` or `blocks`")),
        }
    }
}

/// `--shard K/N`: part `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSpec {
    /// K, 1..=N.
    pub index: usize,
    /// N, at least 1.
    pub count: usize,
}

/// Parse `K/N` (clap value parser of `--shard`).
pub fn shard_flag(s: &str) -> Result<ShardSpec, String> {
    let bad = || format!("expected K/N with 1 <= K <= N <= {MAX_SHARDS} (e.g. 2/4), got {s:?}");
    let (k, n) = s.trim().split_once('/').ok_or_else(bad)?;
    let (index, count): (usize, usize) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if count == 0 || index == 0 || index > count || count > MAX_SHARDS {
        return Err(bad());
    }
    Ok(ShardSpec { index, count })
}

/// Most parts a run may be split into (`--shard K/N`): far above any CI matrix (GitHub Actions
/// runs at most 256 jobs of one matrix), and small enough that the parts' bookkeeping stays
/// small (4294967296 parts aborted the run, 2^64 - 1 overflowed it).
pub const MAX_SHARDS: usize = 100_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_counts_are_bounded() {
        assert_eq!(shard_flag("1/100000").map(|s| s.count), Ok(100_000));
        for huge in [
            "1/100001",
            "1/4294967296",
            "1/18446744073709551615",
            "1/18446744073709551616",
        ] {
            let e = shard_flag(huge).unwrap_err();
            assert!(e.contains("N <= 100000") && e.contains(huge), "{e}");
        }
    }

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
        let tiling = |tile_px, overlap_px| Some(Tiling { tile_px, overlap_px });
        assert_eq!(parse_tile("t", "none").unwrap(), None);
        assert_eq!(parse_tile("t", "256:64").unwrap(), tiling(256, 64));
        assert_eq!(parse_tile("t", "256").unwrap(), tiling(256, 64));
        assert_eq!(parse_tile("t", "64").unwrap(), tiling(64, 16));
        assert_eq!(tile_name(tiling(64, 16)), "64:16");
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
        assert_eq!(Passes::parse("p", "decode").unwrap(), Passes::Decode);
        assert_eq!("both".parse::<Passes>().unwrap(), Passes::Both);
        assert!(Passes::parse("p", "both-ways")
            .unwrap_err()
            .to_string()
            .contains("both-ways"));
    }

    #[test]
    fn counts_precisions_and_names() {
        assert_eq!(parse_frames("f", " 17 ").unwrap(), 17);
        assert!(parse_frames("--frames", "0")
            .unwrap_err()
            .to_string()
            .contains("at least 1 frame"));
        assert!(parse_chunk("--chunk", "x").unwrap_err().to_string().contains("--chunk"));
        assert_eq!(parse_precision("p", "BF16").unwrap(), Precision::Bf16);
        assert!(parse_precision("p", "int8").unwrap_err().to_string().contains("int8"));
        assert_eq!(Engine::parse("e", "Torch").unwrap(), Engine::Torch);
        assert!(Engine::parse("--engine", "onnx")
            .unwrap_err()
            .to_string()
            .contains("onnx"));
        assert_eq!(Switch::parse("s", "false").unwrap().name(), "off");
        assert_eq!(MiopenDb::default().name(), NOT_APPLICABLE);
        assert_eq!(Order::parse("o", "as_written").unwrap().name(), "as-written");
        assert!(TorchPrecision::parse("--torch-precision", "half")
            .unwrap_err()
            .to_string()
            .contains("cast or autocast"));
        assert!(check_device("d", "cuda:1").is_ok() && check_device("d", "tpu").is_err());
    }
}
