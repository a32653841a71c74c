//! The integration tests, in one binary (as ripgrep does): linking candle once instead of
//! once per file. Each module is one former test file; [`util`] holds the shared helpers.
mod answer_cli;
mod bench_cli;
mod bench_model;
mod bench_orchestration;
mod bench_quality;
mod bench_system;
mod bounded_reads;
mod budgets;
mod compare_cli;
mod engine_comfyui;
mod engines;
mod gpu_check;
mod hub;
mod hub_cli;
mod merge_plot_cli;
mod model;
mod newcomer;
mod reliability_input;
mod reliability_numbers;
mod reliability_outputs;
mod reliability_workers;
mod same_file;
mod up_front_checks;
mod util;
mod validate_cli;
mod workloads;
