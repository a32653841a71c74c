//! wan-vae-bench: measure the Wan 2.1 and Wan 2.2 video VAEs (encode/decode) with candle,
//! PyTorch, diffusers and ComfyUI engines.
//!
//! Module map (each module opens with a `//!` saying what it owns):
//! - [`model`]: the Wan 2.1 and Wan 2.2 VAEs (config, blocks, causal conv3d, chunking, tiling;
//!   on CUDA cuDNN's convolution and the crate's own kernels); [`conv_bench`]: the time of
//!   each distinct convolution of a decode through the device's library (a hidden command).
//! - [`weights`]: loading `.safetensors` / `.pth`, synthetic weights, hub references.
//! - [`device`]: `--device` parsing and the devices this build supports; [`env_limits`]:
//!   whether an env variant's variables fit in a new process.
//! - [`validate`], [`inspect`]: the correctness and checkpoint-inspection commands.
//! - [`rocm`]: reading what ROCm's libraries log (MIOpen, hipBLASLt), shared by `run` and
//!   [`logs`], the command that reads any program's log.
//! - The pipeline of `run`, one folder a stage: [`plan`] (flags and matrix file -> a checked
//!   list of cases) -> [`run`] (the scheduler, the worker processes, the report written as
//!   cases end), with [`telemetry`] (the device's clock, temperature and power while a case
//!   runs). What is made of a run: [`report`], [`answer`], [`export`], [`compare`],
//!   [`history`], [`merge`], [`profile`].
//! - [`settings`], [`axes`], [`values`]: what one case measures; the table of the matrix's
//!   axes (flag, key, parser, id part of each); the value types and parsers they share.
//! - [`engine`]: one description per engine, the parent <-> worker protocol, and the
//!   workers (candle's in this binary, the shipped Python worker).
//! - [`stats`], [`report`], [`system`], [`tool`]: statistics, the JSON report schema, system
//!   context, tool and build facts.
//! - [`files`], [`format`]: writing files (create parent, temp + rename; no output that is
//!   also an input) and rendering seconds and PSNR, each in one place; [`read`]: reading
//!   the user's files with a bound; [`lock`]: output locks and folder ownership
//!   (kernel file locks); [`shuffle`]: the seeded case order; [`process`]: child processes
//!   in their own group, killed with it.
//! - [`quality`], [`compare`], [`merge`], [`export`]: output quality, regression compare,
//!   merging reports, Markdown/CSV/SVG exports; [`answer`]: what to set, from a finished run.
//! - [`cli`], [`completions`]: the command line and its shell completions.
//!
//! Must not: hold logic of its own; it only declares the modules.

// Process groups, signals, /proc and sysfs: the tool is built for Linux (README, "Platforms").
#[cfg(not(unix))]
compile_error!(
    "wan-vae-bench runs on Linux only (it needs process groups, signals, /proc and sysfs); \
     on Windows, build and run it under WSL2"
);
pub mod answer;
pub mod axes;
pub mod cli;
pub mod compare;
pub mod completions;
pub mod conv_bench;
pub mod device;
pub mod engine;
pub mod env_limits;
pub mod error;
pub mod export;
pub mod files;
pub mod format;
pub mod history;
pub mod inspect;
pub mod lock;
pub mod logs;
pub mod merge;
pub mod model;
pub mod out;
pub mod plan;
pub mod process;
pub mod profile;
pub mod quality;
pub mod read;
pub mod report;
pub mod rocm;
pub mod run;
pub mod settings;
pub mod shuffle;
pub mod stats;
pub mod system;
pub mod telemetry;
pub mod tool;
pub mod validate;
pub mod values;
pub mod weights;
