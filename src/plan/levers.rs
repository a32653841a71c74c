//! The levers of issue 40, the `layout` and `conv3d` axes (`axes::LAYOUT`, `axes::CONV3D`):
//! which engines take which of their values ([`Axis::takes`]), the filter that leaves a case of a
//! value its engine does not take unplanned ([`planned`]), the one-per-run note naming those
//! ([`unplanned_note`]), and `validate`'s `--layout` / `--conv3d` ([`LeverArgs`]).
//!
//! The Python engines take both levers (`src/engine/python/wan_levers.py` applies them and
//! reads them back); candle, this tool's Rust port, computes NCDHW with its own conv3d and
//! takes neither: its layout is fixed, and a split was not implemented because it was not
//! measured faster there.
//!
//! Must not: run anything, or know how the Python engines apply a lever.
use crate::plan::axes::{Applies, Axis, AXES, ENGINE};
use crate::plan::options::BenchOptions;
use crate::report::settings::CaseSettings;
use crate::report::values::{Conv3dMode, Engine, Layout};
use crate::util::error::UserError;

/// Why `engine` does not take a lever's other values (`None`: it takes them).
pub fn why_not(engine: Engine) -> Option<String> {
    let spec = crate::engine::spec(engine);
    (!spec.runs_python()).then(|| {
        format!(
            "{} ({}) computes NCDHW with its own conv3d (no channels_last_3d layout; a split was not implemented, not \
             having been measured faster there)",
            spec.name(),
            spec.about
        )
    })
}

/// Whether both levers of `s` are at their defaults (`ncdhw`, `native`).
pub fn at_defaults(s: &CaseSettings) -> bool {
    s.layout == Layout::default() && s.conv3d == Conv3dMode::default()
}

/// The lever axes.
fn levers() -> impl Iterator<Item = &'static Axis> {
    AXES.iter().copied().filter(|a| a.applies == Applies::WhereEngineTakes)
}

/// Whether a case of `s` is planned: its engine takes each of its levers' values.
pub fn planned(s: &CaseSettings) -> bool {
    levers().all(|a| a.takes(s.engine, &(a.get)(s)))
}

/// The note for lever values given that an engine of the matrix does not take: their cases
/// are not planned, and the run says so once, naming the values, the engines and why; `None`
/// when every value given is planned for every engine.
pub fn unplanned_note(opts: &BenchOptions) -> Option<String> {
    let mut parts = Vec::new();
    let mut why = Vec::new();
    for axis in levers() {
        for e in opts.axes.each(&ENGINE) {
            let dropped: Vec<&str> = opts
                .axes
                .get(axis)
                .iter()
                .map(String::as_str)
                .filter(|v| !axis.takes(e.engine, v))
                .collect();
            if !dropped.is_empty() {
                parts.push(format!("{} {} for {}", axis.flag, dropped.join(","), e.engine));
                if let Some(w) = why_not(e.engine).filter(|w| !why.contains(w)) {
                    why.push(w);
                }
            }
        }
    }
    (!parts.is_empty()).then(|| {
        format!(
            "note: lever values that an engine does not take are not planned: {}; {}",
            parts.join("; "),
            why.join("; ")
        )
    })
}

/// `validate`'s lever flags: the run's `--layout` and `--conv3d`, one value each.
#[derive(Debug, Clone, clap::Args)]
pub struct LeverArgs {
    /// Memory layout of the Python engines' model: ncdhw (default) or channels_last_3d (its
    /// Conv3d weights and causal convolutions' inputs NDHWC); candle takes ncdhw only.
    #[arg(long, default_value = "ncdhw", value_parser = |s: &str| Layout::parse("--layout", s))]
    pub layout: Layout,
    /// Causal 3D convolutions: native (default) or split (each as conv2d over its time
    /// offsets, summed); candle takes native only.
    #[arg(long, default_value = "native", value_parser = |s: &str| Conv3dMode::parse("--conv3d", s))]
    pub conv3d: Conv3dMode,
}

impl LeverArgs {
    /// Refuse (exit 2) a lever value that `engine` does not take, naming the flag and why.
    pub fn check(&self, engine: Engine) -> Result<(), UserError> {
        use crate::plan::axes::{CONV3D, LAYOUT};
        for (axis, value) in [(&LAYOUT, self.layout.name()), (&CONV3D, self.conv3d.name())] {
            if !axis.takes(engine, value) {
                return Err(UserError::invalid(
                    axis.flag,
                    value,
                    format!(
                        "{} with --engine {engine}: {}",
                        axis.default,
                        why_not(engine).unwrap_or_default()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The flags for the Python worker's `validate`.
    pub fn args(&self) -> [String; 4] {
        [
            "--layout".into(),
            self.layout.name().into(),
            "--conv3d".into(),
            self.conv3d.name().into(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::axes::{CONV3D, LAYOUT};

    #[test]
    fn candle_takes_only_the_defaults_and_the_python_engines_every_value() {
        for e in [Engine::Torch, Engine::Diffusers, Engine::Comfyui] {
            assert!(LAYOUT.takes(e, "channels_last_3d") && CONV3D.takes(e, "split"), "{e}");
            assert!(why_not(e).is_none());
        }
        assert!(LAYOUT.takes(Engine::Candle, "ncdhw") && CONV3D.takes(Engine::Candle, "native"));
        assert!(!LAYOUT.takes(Engine::Candle, "channels_last_3d") && !CONV3D.takes(Engine::Candle, "split"));
        let mut s = CaseSettings::defaults();
        assert!(planned(&s));
        s.conv3d = Conv3dMode::Split;
        assert!(!planned(&s), "candle split");
        s.engine = Engine::Torch;
        assert!(planned(&s));
    }

    #[test]
    fn validate_refuses_a_lever_candle_does_not_take() {
        let a = LeverArgs {
            layout: Layout::ChannelsLast3d,
            conv3d: Conv3dMode::Native,
        };
        assert!(a.check(Engine::Torch).is_ok());
        let e = a.check(Engine::Candle).unwrap_err().to_string();
        assert!(
            e.contains("--layout") && e.contains("channels_last_3d") && e.contains("ncdhw"),
            "{e}"
        );
        assert_eq!(a.args().join(" "), "--layout channels_last_3d --conv3d native");
    }
}
