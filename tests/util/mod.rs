//! The one helper module of the integration tests: [`cli`] runs the binary's `run` command
//! and reads its report; [`reports`] crafts reports for `compare`, `merge` and `plot`;
//! [`files`] runs it under a time and memory bound and writes `.npy` and `.pth` files;
//! [`procs`] starts it in its own process group, kills its whole tree when a test gives
//! up, and writes fake Python interpreters.
pub mod cli;
pub mod files;
pub mod histories;
pub mod procs;
pub mod reports;
