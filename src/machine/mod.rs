//! The machine's facts: [`system`] (CPU, memory, OS, GPUs through sysfs, KFD and
//! nvidia-smi, the ROCm and driver versions a report records), [`device`] (`--device` and
//! the devices this build supports), [`tool`] (this build: version, commit, rustc, candle),
//! [`cpu_bf16`] (whether the CPU computes bf16 in hardware), [`env_limits`] (whether an env
//! variant's variables fit in a new process), [`identity`] (which machine a record was
//! measured on: host, CPU, machine id, board, memory), [`sysfs`] (the files the host is read
//! from, the layer below the others).
//!
//! Must not: know what a run or a report is beyond the facts it hands them.
pub mod cpu_bf16;
pub mod device;
pub mod env_limits;
pub mod identity;
pub mod sysfs;
pub mod system;
pub mod tool;
