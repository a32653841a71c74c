//! Which engine encodes the latents that decode-only cases share when the run has no
//! `--input` latent: an untimed fp32 encode per frames and size, so every engine of the run
//! decodes the same bits. This binary's worker (candle) where this build has the run's
//! device; otherwise the first engine of the run, in [`ENGINES`] order, that may prepare
//! latents and runs on that device (torch on a GPU, for a build without `--features cuda`,
//! which is every AMD machine's). None: a clear error naming the device and what to do.
//!
//! Must not: run anything (the scheduler runs the encode).
use super::{spec, EngineSpec, WorkerKind, ENGINES};
use crate::model::Precision;
use crate::report::values::Engine;

/// Whether this build's own worker (candle) has `device` compiled in: always the CPU, CUDA
/// and Metal only with their cargo features. `fault_hooks`: the run lets the testing hook act.
pub fn this_build_has(device: &str, fault_hooks: bool) -> bool {
    use super::candle::fault::{CANDLE_LACKS_DEVICE, FAULT_VAR};
    if fault_hooks && std::env::var(FAULT_VAR).is_ok_and(|v| v == CANDLE_LACKS_DEVICE) {
        return false;
    }
    match super::device_kind(device).as_str() {
        "cpu" => true,
        // A CUDA build cannot reach an AMD GPU (ROCm names it cuda:N too).
        "cuda" => cfg!(feature = "cuda") && !crate::machine::system::amd_gpus_only(),
        "metal" => cfg!(feature = "metal"),
        _ => false,
    }
}

/// The engine that prepares the shared latents of a run of `in_run` on `device`, given
/// whether this build has the device ([`this_build_has`]); the error says why none can.
pub fn latent_preparer(device: &str, in_run: &[Engine], build_has_device: bool) -> Result<&'static EngineSpec, String> {
    let runs_there = |s: &EngineSpec| s.unsupported(1, device, Precision::Fp32).is_none();
    let found = ENGINES
        .iter()
        .filter(|s| s.prepares_latents && runs_there(s))
        .find(|s| match s.worker {
            WorkerKind::ThisBinary => build_has_device,
            WorkerKind::Python { .. } => in_run.contains(&s.engine),
        });
    if let Some(s) = found {
        return Ok(s);
    }
    let own: Vec<&str> = ENGINES
        .iter()
        .filter(|s| s.prepares_latents && s.worker == WorkerKind::ThisBinary)
        .map(|s| s.name())
        .collect();
    let others: Vec<&str> = ENGINES
        .iter()
        .filter(|s| s.prepares_latents && s.runs_python() && runs_there(s))
        .map(|s| s.name())
        .collect();
    let first = others.first().copied().unwrap_or("torch");
    Err(format!(
        "decode-only cases on {device} need a latent to decode, and no engine here can encode one on {device}: \
         this build's {} has no {} support (its cargo feature), and the run has none of {}; give the latent with \
         --input LATENT.safetensors, or add --engine {first} (its untimed fp32 encode prepares it)",
        own.join("/"),
        super::device_kind(device),
        if others.is_empty() {
            "the Python engines".to_string()
        } else {
            others.join(", ")
        },
    ))
}

/// Before anything runs: when some of `cases` decode only and the run has no latent of its
/// own (`latent_input`), an engine must be able to prepare one; else the error of
/// [`latent_preparer`] (exit 2).
pub fn check_run(
    device: &str,
    cases: &[crate::report::settings::CaseSettings],
    latent_input: bool,
    fault_hooks: bool,
) -> Result<(), crate::util::error::UserError> {
    if latent_input || cases.iter().all(|c| c.passes.encodes()) {
        return Ok(());
    }
    let in_run = engines_of(cases.iter().map(|c| &c.engine));
    latent_preparer(device, &in_run, this_build_has(device, fault_hooks))
        .map(|_| ())
        .map_err(crate::util::error::UserError::Other)
}

/// The words the scheduler's message uses when the untimed encode that prepares a
/// decode-only case's latent ended `unsupported`.
pub const ENDED_UNSUPPORTED: &str = "that prepares the latent to decode ended unsupported";

/// The status of a decode-only case whose latent could not be prepared (`why`): `unsupported`
/// when the preparing encode was (the engine, its install or the device cannot run it: a
/// Python without torch, a `cuda:N` torch sees no GPU for), else `failed` (issue 67).
pub fn status_without_latent(why: &str) -> crate::report::CaseStatus {
    // A second preparer's try is `first; then second`: unsupported when both were.
    if why.split("; then ").all(|part| part.contains(ENDED_UNSUPPORTED)) {
        crate::report::CaseStatus::Unsupported
    } else {
        crate::report::CaseStatus::Failed
    }
}

/// The engines of `cases`' settings, each once.
pub fn engines_of<'a>(engines: impl IntoIterator<Item = &'a Engine>) -> Vec<Engine> {
    let mut v: Vec<Engine> = Vec::new();
    for e in engines {
        if !v.contains(e) {
            v.push(*e);
        }
    }
    v
}

/// The preparer's description in messages and the report: `torch (untimed fp32 encode)`.
pub fn describe(engine: Engine) -> String {
    format!("{} (an untimed fp32 encode per frames and size)", spec(engine).name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candle_where_the_build_has_the_device_else_the_runs_first_python_engine() {
        use Engine::*;
        let pick = |device, run: &[Engine], has| latent_preparer(device, run, has).map(|s| s.engine);
        assert_eq!(pick("cpu", &[Torch, Candle], true), Ok(Candle));
        assert_eq!(pick("cuda:0", &[Comfyui, Torch, Candle], true), Ok(Candle));
        // A build without --features cuda (every AMD machine's): the GPU's own engine.
        assert_eq!(pick("cuda:0", &[Comfyui, Diffusers, Candle], false), Ok(Diffusers));
        assert_eq!(pick("cuda:1", &[Comfyui], false), Ok(Comfyui));
        // An engine that does not run on the device is never chosen.
        let e = pick("metal", &[Torch, Candle], false).unwrap_err();
        assert!(
            e.contains("metal") && e.contains("candle") && e.contains("--input"),
            "{e}"
        );
        let e = pick("cuda:0", &[Candle], false).unwrap_err();
        for needle in [
            "cuda:0",
            "candle has no cuda support",
            "--input LATENT.safetensors",
            "--engine torch",
        ] {
            assert!(e.contains(needle), "{needle}: {e}");
        }
    }

    #[test]
    fn the_cpu_is_always_in_the_build_and_gpus_follow_the_features() {
        assert!(this_build_has("cpu", false));
        assert_eq!(this_build_has("cuda:0", false), cfg!(feature = "cuda"));
        assert!(!this_build_has("tpu", false));
        assert_eq!(
            engines_of(&[Engine::Torch, Engine::Candle, Engine::Torch]),
            [Engine::Torch, Engine::Candle]
        );
    }
}
