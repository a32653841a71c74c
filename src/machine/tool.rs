//! Tool and build facts: the program's name and version, and what `build.rs` captured at
//! build time (git commit, rustc and candle-core versions). Owns [`ToolInfo`], recorded as a
//! report's `tool` and copied into its `system`.
//!
//! Must not: look at the machine (that is [`crate::machine::system`]) or know the report layout
//! beyond [`ToolInfo`]; so `report` and `system` both depend on this module, not on each other.
use serde::{Deserialize, Serialize};

/// Name, version and build of the tool.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ToolInfo {
    /// Always `wan-vae-bench`.
    pub name: String,
    /// Crate version.
    pub version: String,
    /// Git commit the binary was built from, when known.
    pub git_commit: Option<String>,
}

/// Tool identity for this binary. The git commit is known when `build.rs` ran inside a git
/// checkout (`git rev-parse HEAD`); otherwise it is `None`.
pub fn this_tool() -> ToolInfo {
    ToolInfo {
        name: env!("CARGO_PKG_NAME").to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: option_env!("WAN_VAE_BENCH_GIT_COMMIT").map(str::to_string),
    }
}

/// `rustc --version` of the compiler that built this binary.
pub fn rustc_version() -> Option<String> {
    option_env!("WAN_VAE_BENCH_RUSTC_VERSION").map(str::to_string)
}

/// The candle-core version in `Cargo.lock` at build time.
pub fn candle_version() -> Option<String> {
    option_env!("WAN_VAE_BENCH_CANDLE_VERSION").map(str::to_string)
}
