//! The one helper module of the integration tests: [`cli`] runs the binary's `run` command
//! and reads its report; [`reports`] crafts reports for `compare`, `merge` and `plot`.
pub mod cli;
pub mod reports;
