//! Which case of one workload and engine is **the default**: what changing nothing gives.
//! The answer measures every other case against it (`analysis::answer`), and the plan adds
//! its A/A control, a second measurement of it (`plan::control`): one rule for both, kept
//! with the engines because an engine's own dtype choice decides its default precision.
//!
//! The default is untiled in space and time, chunk 1, the `baseline` env variant, the levers
//! at their defaults, the knobs as the engine leaves them (`auto`, or `n/a` where they do not
//! act; else set to torch's own defaults: cuDNN/MIOpen on, benchmark off, TF32 auto or off;
//! the user's MIOpen database), and fp32, or for an engine with its own dtype choice
//! (`engine::EngineSpec::own_dtype`, comfyui) its `auto` precision when the cases have it.
//!
//! Must not: read outcomes (a default is a setting, measured or not).
use crate::model::Precision;
use crate::report::settings::{CaseSettings, BASELINE};
use crate::report::values::{Conv3dMode, Layout, MiopenDb, Switch};

/// The index in `items` of the default among them (one workload, one engine), read through
/// `settings`; `None` when none is.
pub fn default_index<'a, T>(items: &[T], settings: impl Fn(&T) -> &'a CaseSettings) -> Option<usize> {
    let own_auto = items.iter().any(|c| {
        let s = settings(c);
        crate::engine::spec(s.engine).own_dtype && s.precision == Precision::Auto
    });
    let precision = if own_auto { Precision::Auto } else { Precision::Fp32 };
    let fits = |s: &CaseSettings, knobs: &[Switch], bench: &[Switch], tf32: &[Switch]| {
        let k = &s.knobs;
        s.precision == precision
            && s.tiling.is_none()
            && s.temporal_tile.is_none()
            && s.chunk == 1
            && s.env_variant == BASELINE
            && knobs.contains(&k.cudnn)
            && bench.contains(&k.cudnn_benchmark)
            && tf32.contains(&k.tf32)
            && matches!(k.miopen_db, MiopenDb::User | MiopenDb::NotApplicable)
            && s.layout == Layout::default()
            && s.conv3d == Conv3dMode::default()
    };
    // The knobs as the engine leaves them; else, set to torch's own defaults.
    let left = [Switch::Auto, Switch::NotApplicable];
    items
        .iter()
        .position(|c| fits(settings(c), &left, &left, &left))
        .or_else(|| {
            items.iter().position(|c| {
                fits(
                    settings(c),
                    &[Switch::On],
                    &[Switch::Off, Switch::Auto],
                    &[Switch::Auto, Switch::NotApplicable, Switch::Off],
                )
            })
        })
}
