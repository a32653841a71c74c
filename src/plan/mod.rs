//! What a run will do, decided before anything runs: from the `run` flags and the matrix
//! file to a checked list of cases. [`options`] the merged options and the axes' values;
//! [`flags`] the `run` flags (one per axis of `crate::plan::axes::AXES`); [`env_sweep`] the
//! `--env-var` sweeps; [`config`] the TOML matrix file; [`user_input`] the user's `--input`
//! file; [`weights_choice`] which weights the run loads; [`budgets`] the `[budgets]` limits
//! (and, after the run, their verdicts); [`levers`] which engines take which lever values;
//! [`matrix`] case expansion and the references; [`control`] the A/A control of each compared
//! workload's default; [`check`] the size limit, the one-per-run notes and `run --list`;
//! [`forecast`] how long the cases will take, from rates measured on this machine (`--list`'s
//! forecast, the run's warning); [`shard`] the part a `--shard K/N` run measures; [`run_files`]
//! the run's input and output files, checked against each other; [`ready`] the checked
//! [`ready::Plan`], built in one step, which is all `crate::run` takes.
//!
//! Must not: spawn workers, time anything or write a report (that is [`crate::run`]); nothing
//! here imports from `run`.
pub mod axes;
pub mod budgets;
pub mod check;
pub mod config;
pub mod control;
pub mod env_sweep;
pub mod flags;
pub mod forecast;
pub mod levers;
pub mod matrix;
pub mod options;
pub mod ready;
pub mod run_files;
pub mod shard;
pub mod user_input;
pub mod weights_choice;
