//! The integration tests, in one binary (as ripgrep does): linking candle once instead of
//! once per file. Each module is one former test file, kept under its name (so a test's path,
//! `history_cli::...`, stays what docs and notes cite), in a folder per stage of the house as
//! `src/` has them; [`util`] holds the shared helpers.

// tests/cli/: the front door: `run`, `validate`, shards, the Hub, the documented commands, a newcomer's checkout.
#[path = "cli/bench_cli.rs"]
mod bench_cli;
#[path = "cli/bench_orchestration.rs"]
mod bench_orchestration;
#[path = "cli/bench_system.rs"]
mod bench_system;
#[path = "cli/examples.rs"]
mod examples;
#[path = "cli/hub_cli.rs"]
mod hub_cli;
#[path = "cli/newcomer.rs"]
mod newcomer;
#[path = "cli/run_cli.rs"]
mod run_cli;
#[path = "cli/shard_cli.rs"]
mod shard_cli;
#[path = "cli/strix_path.rs"]
mod strix_path;
#[path = "cli/validate_cli.rs"]
mod validate_cli;

// tests/model/: the model and its weights.
#[path = "model/bench_model.rs"]
mod bench_model;
#[path = "model/hub.rs"]
mod hub;
#[path = "model/model.rs"]
mod model;
#[path = "model/real_weights.rs"]
mod real_weights;
#[path = "model/workloads.rs"]
mod workloads;

// tests/engine/: the engines and their workers (torch, diffusers, ComfyUI, levers, the GPU checks, telemetry, profiles).
#[path = "engine/comfyui_setup.rs"]
mod comfyui_setup;
#[path = "engine/comfyui_today.rs"]
mod comfyui_today;
#[path = "engine/engine_comfyui.rs"]
mod engine_comfyui;
#[path = "engine/engines.rs"]
mod engines;
#[path = "engine/gpu_check.rs"]
mod gpu_check;
#[path = "engine/gpu_lent.rs"]
mod gpu_lent;
#[path = "engine/gpu_truth.rs"]
mod gpu_truth;
#[path = "engine/gpu_verdicts.rs"]
mod gpu_verdicts;
#[path = "engine/levers.rs"]
mod levers;
#[path = "engine/profile.rs"]
mod profile;
#[path = "engine/shared_truth.rs"]
mod shared_truth;
#[path = "engine/shared_workers.rs"]
mod shared_workers;
#[path = "engine/telemetry.rs"]
mod telemetry;

// tests/analysis/: what is read from reports: the answer, compare, merge and plot, history.
#[path = "analysis/answer_advice.rs"]
mod answer_advice;
#[path = "analysis/answer_cli.rs"]
mod answer_cli;
#[path = "analysis/bench_quality.rs"]
mod bench_quality;
#[path = "analysis/busy_compare.rs"]
mod busy_compare;
#[path = "analysis/busy_machine.rs"]
mod busy_machine;
#[path = "analysis/compare_cli.rs"]
mod compare_cli;
#[path = "analysis/history_asv.rs"]
mod history_asv;
#[path = "analysis/history_cli.rs"]
mod history_cli;
#[path = "analysis/history_generic.rs"]
mod history_generic;
#[path = "analysis/history_inputs.rs"]
mod history_inputs;
#[path = "analysis/history_levels.rs"]
mod history_levels;
#[path = "analysis/history_oracle.rs"]
mod history_oracle;
#[path = "analysis/history_score.rs"]
mod history_score;
#[path = "analysis/history_spread.rs"]
mod history_spread;
#[path = "analysis/machines.rs"]
mod machines;
#[path = "analysis/merge_plot_cli.rs"]
mod merge_plot_cli;
#[path = "analysis/tables.rs"]
mod tables;

// tests/rocm/: ROCm's logs.
#[path = "rocm/logs_cli.rs"]
mod logs_cli;
#[path = "rocm/logs_hostile.rs"]
mod logs_hostile;
#[path = "rocm/logs_paste.rs"]
mod logs_paste;

// tests/reliability/: the rounds of trying to break the tool: bad input, outputs, signals, bounds.
#[path = "reliability/bounded_reads.rs"]
mod bounded_reads;
#[path = "reliability/budgets.rs"]
mod budgets;
#[path = "reliability/bundle_folders.rs"]
mod bundle_folders;
#[path = "reliability/gate_scripts.rs"]
mod gate_scripts;
#[path = "reliability/locked_outputs.rs"]
mod locked_outputs;
#[path = "reliability/own_paths.rs"]
mod own_paths;
#[path = "reliability/reliability_input.rs"]
mod reliability_input;
#[path = "reliability/reliability_numbers.rs"]
mod reliability_numbers;
#[path = "reliability/reliability_outputs.rs"]
mod reliability_outputs;
#[path = "reliability/reliability_setup.rs"]
mod reliability_setup;
#[path = "reliability/reliability_workers.rs"]
mod reliability_workers;
#[path = "reliability/same_file.rs"]
mod same_file;
#[path = "reliability/up_front_checks.rs"]
mod up_front_checks;

mod util;
