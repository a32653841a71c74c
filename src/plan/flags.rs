//! The flags of `run` that replace the matrix file's values ([`MatrixFlags`]): one flag per
//! axis of `axes::AXES` ([`AxisFlags`], built from the table), and the run-wide flags
//! (weights, device, runs, order, ...). Each value is parsed by the same function the
//! matrix file uses, so a value means the same thing and fails the same way everywhere,
//! naming the flag the user typed.
//!
//! Must not: merge flags into the options (that is `options`) or read files.
use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, Command};

use crate::model::ModelKind;
use crate::plan::axes::{Axis, AXES};
use crate::report::values::{self, Order, TorchPrecision};

/// `--allow-status`: a status other than `ok` that may appear without failing the run.
pub fn allow_status_flag(value: &str) -> Result<crate::report::CaseStatus, String> {
    use crate::report::CaseStatus;
    let allowed = [
        CaseStatus::Unsupported,
        CaseStatus::Oom,
        CaseStatus::Timeout,
        CaseStatus::Failed,
    ];
    allowed
        .into_iter()
        .find(|s| s.name() == value.trim())
        .ok_or_else(|| format!("`{value}` is not a status to allow; valid: unsupported, oom, timeout, failed"))
}

/// `--cooldown`: seconds from 0 to 3600.
fn control_flag(s: &str) -> Result<values::Switch, String> {
    match s.trim() {
        "on" => Ok(values::Switch::On),
        "off" => Ok(values::Switch::Off),
        _ => Err(format!("`{s}`: expected `on` or `off`")),
    }
}

fn cooldown_flag(s: &str) -> Result<f64, String> {
    number_in(s, 0.0..=3600.0, "a number of seconds from 0 to 3600")
}

/// `--wait-temp`: degrees Celsius from 20 to 120.
fn wait_temp_flag(s: &str) -> Result<f64, String> {
    number_in(s, 20.0..=120.0, "a temperature from 20 to 120 (degrees Celsius)")
}

/// A finite number within `range`, else an error saying it is not `what`.
fn number_in(s: &str, range: std::ops::RangeInclusive<f64>, what: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && range.contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not {what}")),
    }
}

/// Flags of `run` that replace the matrix file's values when given (an empty list means
/// "not given"); list flags take comma-separated values.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct MatrixFlags {
    #[command(flatten)]
    pub axes: AxisFlags,
    /// Tile sizes in pixels, comma-separated (0 = untiled); overlap from --overlap-px, else a
    /// quarter of the tile rounded down to a multiple of 8, at least 8 (none for an 8 px
    /// tile, which cannot overlap).
    #[arg(
        long = "tile-px",
        alias = "tile_px",
        value_name = "PX,...",
        value_delimiter = ',',
        conflicts_with = "tile"
    )]
    pub tile_px: Vec<usize>,
    /// Tile overlap in pixels for --tile-px.
    #[arg(long = "overlap-px", alias = "overlap_px", value_name = "PX", requires = "tile_px")]
    pub overlap_px: Option<usize>,
    /// Sweep an environment variable: NAME=V1,V2,... (repeatable; several make their
    /// product; `@unset` removes the variable). Each combination is an env variant named
    /// after its values, run next to `baseline` (and the --env variants, if given).
    #[arg(long = "env-var", value_name = "NAME=V1,V2", value_parser = super::env_sweep::parse_flag)]
    pub env_var: Vec<super::env_sweep::EnvSweep>,
    /// Stream each worker's stderr (MIOpen's and ComfyUI's logs) to the terminal.
    #[arg(long = "show-output")]
    pub show_output: bool,
    /// Warmup passes per case (timed and reported separately).
    #[arg(long, short = 'w')]
    pub warmup: Option<usize>,
    /// Timed passes per case.
    #[arg(long, short = 'r')]
    pub runs: Option<usize>,
    // The interpreter of the engines whose worker is the Python worker.
    #[arg(long, help = format!(
        "Python interpreter of the {} engines (default: the venv/ or .venv/ of an engine's \
         folder, such as --comfyui DIR, else $WAN_VAE_BENCH_PYTHON, else python3)",
        crate::engine::engine_names(|s| s.runs_python())
    ))]
    pub python: Option<String>,
    // How the Python engines run bf16/fp16; the defaults come from `engine::ENGINES`.
    #[arg(long = "torch-precision", value_parser = values::torch_precision_flag, help = format!(
        "How the Python engines run bf16/fp16: cast (model.to(dtype)) or autocast (default: {})",
        crate::engine::precision_mode_defaults()
    ))]
    pub torch_precision: Option<TorchPrecision>,
    /// Weights: `synthetic` (the default: the real layout, seeded values), a local
    /// .safetensors/.pth file, or a hub reference.
    #[arg(long)]
    pub weights: Option<String>,
    /// Model of `synthetic` weights: wan2.1 (default) or wan2.2; with a file it must agree.
    #[arg(long)]
    pub model: Option<ModelKind>,
    /// Device: cpu, cuda:N (NVIDIA GPUs, and AMD GPUs under ROCm: a ROCm torch names them
    /// cuda:N too), metal [default: cpu].
    #[arg(long)]
    pub device: Option<String>,
    /// Per-case time limit in seconds.
    #[arg(long = "timeout", alias = "timeout_s")]
    pub timeout_s: Option<f64>,
    /// Case order: `shuffled` (default, seed recorded) or `as-written`.
    #[arg(long, value_parser = values::order_flag)]
    pub order: Option<Order>,
    /// Seed of the case shuffle (and of each round's order).
    #[arg(long)]
    pub seed: Option<u64>,
    /// How the cases are timed: `rounds` (default: the cases of a workload interleaved, a
    /// few runs per visit, each round in a fresh random order, every setting in a worker of
    /// its own, alive side by side) or `blocks` (each case's runs in one go, one worker at a
    /// time: less memory, but load that changes between cases reads as a difference).
    #[arg(long, value_enum)]
    pub schedule: Option<values::Schedule>,
    /// With `--schedule rounds`: timed runs per visit [default: 1].
    #[arg(long = "round-runs", value_name = "N", value_parser = clap::value_parser!(usize))]
    pub round_runs: Option<usize>,
    /// `on` (default): measure each compared workload's default twice, the second time in a
    /// worker of its own (the A/A control): no setting is called faster or slower by less
    /// than the two differ. `off`: no control (no drift floor).
    #[arg(long, value_name = "on|off", value_parser = control_flag)]
    pub control: Option<values::Switch>,
    /// Run part K of N of the planned cases (e.g. `2/4`, one per CI job or machine): a case
    /// stays with its quality reference, the parts are balanced by GFLOP and do not depend on
    /// the seed; the report records the part and the plan's fingerprint, and `merge` of the N
    /// reports checks that they are the parts of one plan.
    #[arg(long, value_name = "K/N", value_parser = crate::report::values::shard_flag)]
    pub shard: Option<crate::report::values::ShardSpec>,
    /// Sample the device's clock, temperature, power and load every MS milliseconds while a
    /// case runs (in the parent; 0 turns it off) [default: 100].
    #[arg(long = "telemetry-ms", value_name = "MS", value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub telemetry_ms: Option<u64>,
    /// Wait SECONDS between cases, so the device cools down.
    #[arg(long, value_name = "SECONDS", value_parser = cooldown_flag)]
    pub cooldown: Option<f64>,
    /// Before each case, wait until the device is below C degrees Celsius (at most 10
    /// minutes per case; the wait is reported).
    #[arg(long = "wait-temp", value_name = "C", value_parser = wait_temp_flag)]
    pub wait_temp: Option<f64>,
    /// Report file (default `results/<UTC time>-<host>.json`); `-`: the report on stdout, as
    /// --json (the file then goes to the default place).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// No progress bar and no per-case lines.
    #[arg(long, short)]
    pub quiet: bool,
    /// Input file: a latent [1,z,t,h,w] or [z,t,h,w], or a video [1,3,T,H,W] in [-1,1], as
    /// .safetensors, ComfyUI .latent or .npy; frames and size come from it.
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// The tensor of --input to use when the file holds several.
    #[arg(long = "input-tensor", alias = "input_tensor")]
    pub input_tensor: Option<String>,
}

/// The axis flags given, by axis key: canonical values, checked by the axis's parser
/// (an axis absent here was not given). clap builds one flag per entry of [`AXES`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AxisFlags {
    given: BTreeMap<&'static str, Vec<String>>,
}

impl AxisFlags {
    /// The values given for `axis`, `None` when its flag was not given.
    pub fn get(&self, axis: &Axis) -> Option<&[String]> {
        self.given.get(axis.key).map(Vec::as_slice)
    }
}

impl clap::FromArgMatches for AxisFlags {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = AxisFlags::default();
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for axis in AXES {
            if let Some(values) = matches.get_many::<String>(axis.key) {
                self.given.insert(axis.key, values.cloned().collect());
            }
        }
        Ok(())
    }
}

impl clap::Args for AxisFlags {
    fn augment_args(cmd: Command) -> Command {
        AXES.iter().fold(cmd, |cmd, &axis| cmd.arg(flag(axis)))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

/// The flag of `axis`: comma-separated values, each made canonical by the axis's parser
/// (a bad one is an error naming the flag, exit 2, before anything runs).
fn flag(axis: &'static Axis) -> Arg {
    Arg::new(axis.key)
        .long(axis.flag.trim_start_matches('-'))
        .aliases(axis.aliases)
        .help(format!("{}; comma-separated, repeatable", axis.help_text()))
        // Built once per process; clap keeps names as `&'static str`.
        .value_name(&*Box::leak(format!("{},...", axis.key.to_uppercase()).into_boxed_str()))
        .action(ArgAction::Append)
        .value_delimiter(',')
        .value_parser(move |v: &str| axis.canonical(axis.flag, v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::axes::{CUDNN_BENCHMARK, FRAMES, SIZE, TEMPORAL_TILE};
    use clap::Parser;

    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(flatten)]
        flags: MatrixFlags,
    }

    fn parse(args: &[&str]) -> Result<MatrixFlags, clap::Error> {
        Cli::try_parse_from(std::iter::once("run").chain(args.iter().copied())).map(|c| c.flags)
    }

    #[test]
    fn every_axis_has_its_flag_and_values_come_back_canonical() {
        let f = parse(&[
            "--size",
            "64*32,16x8",
            "--cudnn_benchmark",
            "true",
            "--temporal-tile",
            "none",
        ])
        .unwrap();
        assert_eq!(f.axes.get(&SIZE).unwrap(), ["64x32", "16x8"]);
        assert_eq!(f.axes.get(&CUDNN_BENCHMARK).unwrap(), ["on"]);
        assert_eq!(f.axes.get(&TEMPORAL_TILE).unwrap(), ["none"]);
        assert_eq!(f.axes.get(&FRAMES), None);
        let cmd = <Cli as clap::CommandFactory>::command();
        for axis in AXES {
            let arg = cmd.get_arguments().find(|a| a.get_id() == axis.key);
            assert_eq!(
                arg.and_then(|a| a.get_long()),
                Some(axis.flag.trim_start_matches('-')),
                "{axis:?}"
            );
        }
    }

    #[test]
    fn warmup_and_runs_have_hyperfine_short_flags() {
        let f = parse(&["-w", "2", "-r", "5"]).unwrap();
        assert_eq!((f.warmup, f.runs), (Some(2), Some(5)));
    }

    #[test]
    fn bad_values_name_the_flag() {
        let e = parse(&["--chunk", "1,0"]).unwrap_err().to_string();
        assert!(e.contains("--chunk") && e.contains("at least 1"), "{e}");
        let e = parse(&["--miopen-db", "shared"]).unwrap_err().to_string();
        assert!(e.contains("shared") && e.contains("user or fresh"), "{e}");
        assert!(
            parse(&["--tile", "none", "--tile_px", "64"]).is_err(),
            "--tile and --tile_px conflict"
        );
        let e = parse(&["--env-var", "MIOPEN_FIND_MODE"]).unwrap_err().to_string();
        assert!(e.contains("--env-var") && e.contains("NAME=VALUE1"), "{e}");
    }

    #[test]
    fn tile_px_is_spelled_with_dashes_and_the_seed_spelling_still_works() {
        let f = parse(&["--tile-px", "64,128", "--overlap-px", "16"]).unwrap();
        assert_eq!((f.tile_px.clone(), f.overlap_px), (vec![64, 128], Some(16)));
        let g = parse(&["--tile_px", "64,128", "--overlap_px", "16"]).unwrap();
        assert_eq!((g.tile_px, g.overlap_px), (f.tile_px, f.overlap_px));
        let help = <Cli as clap::CommandFactory>::command().render_long_help().to_string();
        assert!(help.contains("--tile-px") && !help.contains("--tile_px"), "{help}");
        assert!(help.contains("comma-separated"), "{help}");
        assert!(help.contains("ROCm"), "{help}");
    }
}
