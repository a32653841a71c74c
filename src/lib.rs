//! wan-vae-bench: measure the Wan 2.1 and Wan 2.2 video VAEs (encode/decode) with candle,
//! PyTorch, diffusers and ComfyUI engines.
//!
//! The house, in the order data flows through a `run` (each module opens with a `//!`
//! saying what it owns and what it must not do; imports point down this list's layers,
//! docs/architecture.md draws them):
//!
//! 1. [`cli`]: the command line, one room per subcommand (its arguments and entry
//!    function); each parses and calls the rooms below, and none imports another.
//! 2. [`model`], [`weights`]: the Wan VAEs on candle (on a GPU, its vendor's convolution
//!    library: cuDNN and the crate's own kernels in `--features cudnn` builds), and the
//!    checkpoints they load (layouts, `.safetensors`/`.pth`, synthetic weights, Hub and
//!    ComfyUI references).
//! 3. [`plan`]: the flags and the matrix file become a checked list of cases (the axes,
//!    options, matrix, references, shard, budgets), before anything runs.
//! 4. [`run`], [`engine`]: the run measures the plan (scheduler, worker processes,
//!    telemetry; `validate` too); the engines are what a case runs on (what each engine is
//!    and can run, the worker protocol, candle's worker, the Python worker).
//! 5. [`report`], [`analysis`]: the JSON report a run writes (case settings, outcomes,
//!    quality, profiles), and everything read from reports (the answer, exports, compare,
//!    merge, history).
//! 6. [`rocm`]: what ROCm's libraries log (MIOpen, hipBLASLt), read for `run` and `logs`,
//!    and the bundle AMD asks for.
//! 7. [`machine`]: the machine's facts (system, devices, this build, env limits).
//! 8. [`util`]: the services every stage uses (files, reads, locks, signals, child
//!    processes, output, formats, statistics, errors).
//!
//! Must not: hold logic of its own; it only declares the modules.

// Process groups, signals, /proc and sysfs: the tool is built for Linux (README, "Platforms").
#[cfg(not(unix))]
compile_error!(
    "wan-vae-bench runs on Linux only (it needs process groups, signals, /proc and sysfs); \
     on Windows, build and run it under WSL2"
);

pub mod cli;

pub mod model;
pub mod weights;

pub mod plan;

pub mod engine;
pub mod run;

pub mod analysis;
pub mod report;

pub mod rocm;

pub mod machine;

pub mod util;
