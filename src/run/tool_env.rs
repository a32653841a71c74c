//! The tool's own environment variables that change what a run measures or records:
//! `WAN_VAE_BENCH_CPU_ISA` (caps the candle engine's CPU kernels, which the workers inherit)
//! and `WAN_VAE_BENCH_SYSFS_ROOT` (replaces `/` for the `/sys` facts of the report's
//! `system`). When set in `run`'s environment each is named on stderr and recorded in the
//! report's `run.overrides`, so no number is quietly shaped by a variable exported long
//! ago. A CPU ISA value the kernels would ignore is an error (exit 2) naming it.
//!
//! Must not: change the variables (the workers get them as they are).
use std::collections::BTreeMap;

use crate::machine::sysfs::SYSFS_ROOT_ENV;
use crate::model::kernels::{Isa, ISA_ENV};
use crate::util::error::UserError;

/// The variables set (name -> value), each announced on stderr; an unusable value is an error.
pub fn collect() -> Result<BTreeMap<String, String>, UserError> {
    let found = read(|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))?;
    for (name, value) in &found {
        crate::errln!(
            "note: {name}={value} {}; recorded as run.overrides",
            effect(name, value)
        );
    }
    Ok(found)
}

/// [`collect`] over `get` (the environment, or a test's map), without printing.
fn read(get: impl Fn(&str) -> Option<String>) -> Result<BTreeMap<String, String>, UserError> {
    let mut found = BTreeMap::new();
    if let Some(v) = get(ISA_ENV) {
        if Isa::parse(&v).is_none() {
            return Err(UserError::invalid(
                format!("{ISA_ENV} (environment variable)"),
                v,
                "portable, avx512 or avx512-bf16; unset it to use the best the CPU has",
            ));
        }
        found.insert(ISA_ENV.to_string(), v);
    }
    if let Some(v) = get(SYSFS_ROOT_ENV) {
        found.insert(SYSFS_ROOT_ENV.to_string(), v);
    }
    Ok(found)
}

/// What the variable does to this run, for the notice.
fn effect(name: &str, value: &str) -> String {
    if name == ISA_ENV {
        let cap = Isa::parse(value).unwrap_or(Isa::Portable);
        let hw = Isa::hardware();
        format!(
            "caps the candle engine's CPU kernels at {} (this CPU has {})",
            cap.min(hw).name(),
            hw.name()
        )
    } else {
        "replaces / for the facts read from /sys: the report's GPUs and CPU governor are that folder's".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_set_variables_are_recorded_and_a_bad_isa_is_named() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
        };
        assert!(read(env(&[])).unwrap().is_empty());
        let both = read(env(&[(ISA_ENV, "portable"), (SYSFS_ROOT_ENV, "/fake"), ("OTHER", "x")])).unwrap();
        assert_eq!(both.len(), 2);
        assert_eq!(both[ISA_ENV], "portable");
        assert_eq!(both[SYSFS_ROOT_ENV], "/fake");
        let e = read(env(&[(ISA_ENV, "sse9")])).unwrap_err().to_string();
        assert!(e.contains("WAN_VAE_BENCH_CPU_ISA") && e.contains("sse9"), "{e}");
    }
}
