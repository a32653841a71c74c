//! The machine's facts: [`system`] (CPU, memory, OS, GPUs through sysfs, KFD and
//! nvidia-smi, the ROCm and driver versions a report records), [`device`] (`--device` and
//! the devices this build supports), [`tool`] (this build: version, commit, rustc, candle),
//! [`env_limits`] (whether an env variant's variables fit in a new process).
//!
//! Must not: know what a run or a report is beyond the facts it hands them.
pub mod device;
pub mod env_limits;
pub mod system;
pub mod tool;
