//! The axes of the matrix, each declared once in [`AXES`]: its `run` flag, its key in
//! `[matrix]` and `[[budgets.case]]`, its default, its parser and canonical spelling, its
//! part of the case id ([`ID_ORDER`] places the parts), and whether it multiplies every case,
//! is a PyTorch knob recorded `n/a` where it does not act ([`crate::engine::knobs_apply`]), or
//! is a lever whose other values only some engines take ([`Axis::takes`]). The
//! flags (`plan::flags`), the matrix file (`plan::config`), the matrix's values and count
//! (`plan::options::Axes`), case expansion (`plan::matrix`), budget filters
//! (`plan::budgets`), [`CaseSettings::defaults`] and [`CaseSettings::id`] all read it.
//!
//! Adding an axis: a field of [`CaseSettings`] with its JSON key in `settings`' `Wire`
//! (`#[serde(default)]`, so older reports load); its value type and parser in `values`;
//! one `static` [`Axis`] here, listed in [`AXES`] (matrix order: the last varies fastest)
//! and in [`ID_ORDER`] (its id part empty at its default, so older ids stay valid); and,
//! when it matters for quality, its reference value in [`CaseSettings::reference`].
//! Adding a value to an axis is a change to its parser only.
//!
//! Must not: know about processes, files, TOML or clap (the table holds names only).
use crate::model::Precision;
use crate::report::settings::{CaseSettings, Knobs, BASELINE};
use crate::report::values::{self, Conv3dMode, Engine, Layout, MiopenDb, Passes, Switch, NOT_APPLICABLE};
use crate::util::error::UserError;

impl CaseSettings {
    /// Every axis at its [`Axis::default`], knobs included (expansion makes them `n/a`
    /// where they do not act).
    pub fn defaults() -> CaseSettings {
        // A placeholder that every axis overwrites below.
        let mut s = CaseSettings {
            engine: Engine::ALL[0],
            precision: Precision::Fp32,
            chunk: 1,
            tiling: None,
            frames: 1,
            width: 8,
            height: 8,
            env_variant: String::new(),
            knobs: Knobs::default(),
            passes: Passes::Both,
            temporal_tile: None,
            layout: Layout::Ncdhw,
            conv3d: Conv3dMode::Native,
        };
        for axis in AXES {
            (axis.set)(&mut s, axis.key, axis.default).expect("every axis default parses");
        }
        s
    }

    /// Stable id, the axes' id parts in [`ID_ORDER`], e.g.
    /// `fp32-chunk1-untiled-5x64x64-baseline`; tiled as `tile256o64`; size as frames x W x
    /// H. Temporal tiling adds `-ttile64o8` after the spatial tiling and a single pass adds
    /// `-decode` / `-encode` after the env variant, then the levers `-cl3d` (layout
    /// `channels_last_3d`) and `-split` (conv3d `split`); all are absent at their defaults
    /// (untiled in time, both passes, `ncdhw`, `native`). A Python engine prefixes its name (`torch-fp32-...`)
    /// and knobs that apply are appended (`...-cudnn_off-bench_on-miopen_fresh`), so candle
    /// ids are those of reports written before these axes. `compare` and `merge` match
    /// cases by it.
    pub fn id(&self) -> String {
        ID_ORDER.iter().map(|axis| (axis.id)(self)).collect()
    }
}

/// Where an axis multiplies cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applies {
    /// Every case takes each of its values.
    Always,
    /// A PyTorch knob (a field of [`Knobs`]): multiplied where knobs act
    /// ([`crate::engine::knobs_apply`]), recorded `n/a` elsewhere.
    WhereKnobsAct,
    /// A lever: its default everywhere, its other values only in the engines that take them
    /// ([`Axis::takes`]); a case of a value its engine does not take is not planned.
    WhereEngineTakes,
}

/// One axis of the matrix: what the flags, the matrix file, expansion, the case id and
/// budget filters need to know about it. [`AXES`] lists every axis.
pub struct Axis {
    /// Its key in `[matrix]` and in `[[budgets.case]]`, and its name in messages.
    pub key: &'static str,
    /// Its `run` flag.
    pub flag: &'static str,
    /// Other spellings of the flag, without the dashes.
    pub aliases: &'static [&'static str],
    /// The flag's help (see [`Axis::help_text`]).
    pub help: &'static str,
    /// Its value when neither the matrix file nor a flag gives one.
    pub default: &'static str,
    /// Whether it multiplies every case.
    pub applies: Applies,
    /// Parse one value into a case's settings; the error names `what` (the flag or key the
    /// user wrote) and what would be valid.
    pub set: fn(&mut CaseSettings, what: &str, value: &str) -> Result<(), UserError>,
    /// A case's value, canonically spelled (`n/a` for a knob that does not act).
    pub get: fn(&CaseSettings) -> String,
    /// Its part of the case id, separators included; empty where older ids lack it.
    pub id: fn(&CaseSettings) -> String,
}

impl Axis {
    /// The flag's help: [`Axis::help`], for the engine axis followed by the engines of
    /// [`crate::engine::ENGINES`], so a new engine shows up without editing the axis.
    pub fn help_text(&self) -> String {
        if std::ptr::eq(self, &ENGINE) {
            format!("{}: {}", self.help, crate::engine::engines_help())
        } else {
            self.help.to_string()
        }
    }

    /// The canonical spelling of `value`; the error names `what`.
    pub fn canonical(&self, what: &str, value: &str) -> Result<String, UserError> {
        let mut s = CaseSettings::defaults();
        (self.set)(&mut s, what, value)?;
        Ok((self.get)(&s))
    }

    /// [`Axis::canonical`], and for a knob also `n/a`: the values a case record may hold.
    pub fn canonical_recorded(&self, what: &str, value: &str) -> Result<String, UserError> {
        if self.applies == Applies::WhereKnobsAct && value.trim().eq_ignore_ascii_case(NOT_APPLICABLE) {
            return Ok(NOT_APPLICABLE.to_string());
        }
        self.canonical(what, value)
    }

    /// Whether this axis multiplies a case like `s` (its engine) on `device`.
    pub fn multiplies(&self, s: &CaseSettings, device: &str) -> bool {
        match self.applies {
            Applies::Always | Applies::WhereEngineTakes => true,
            Applies::WhereKnobsAct => crate::engine::knobs_apply(s.engine, device),
        }
    }

    /// Whether `engine` runs `value` of this axis where it is a lever
    /// ([`Applies::WhereEngineTakes`]): every engine its default, the engines whose worker is
    /// the Python worker (`wan_levers.py` acts on their PyTorch model) every value.
    pub fn takes(&self, engine: crate::report::values::Engine, value: &str) -> bool {
        value == self.default || crate::engine::spec(engine).runs_python()
    }

    /// How many cases of `values` a case like `s` (its engine) on `device` becomes: all of
    /// them, one where a knob does not act, those its engine takes for a lever.
    pub fn planned_count(&self, s: &CaseSettings, device: &str, values: &[String]) -> u64 {
        match self.applies {
            _ if !self.multiplies(s, device) => 1,
            Applies::WhereEngineTakes => values.iter().filter(|v| self.takes(s.engine, v)).count() as u64,
            _ => values.len() as u64,
        }
    }
}

impl std::fmt::Debug for Axis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Axis({})", self.key)
    }
}

impl PartialEq for Axis {
    fn eq(&self, other: &Axis) -> bool {
        self.key == other.key
    }
}

/// The axis with `key` in `[matrix]` and `[[budgets.case]]`.
pub fn axis(key: &str) -> Option<&'static Axis> {
    AXES.iter().copied().find(|a| a.key == key)
}

/// Every axis's key, `engine, frames, ...` (what an unknown key could have been).
pub fn keys() -> String {
    AXES.iter().map(|a| a.key).collect::<Vec<_>>().join(", ")
}

/// Every axis, in matrix order (the last varies fastest).
pub static AXES: [&Axis; 15] = [
    &ENGINE,
    &FRAMES,
    &SIZE,
    &PRECISION,
    &TILE,
    &TEMPORAL_TILE,
    &CHUNK,
    &ENV,
    &PASSES,
    &LAYOUT,
    &CONV3D,
    &CUDNN,
    &CUDNN_BENCHMARK,
    &MIOPEN_DB,
    &TF32,
];

/// The order of the axes' parts in [`CaseSettings::id`]: `torch-` `bf16` `-chunk2`
/// `-tile256o64` `-ttile64o8` `-17` `x320x320` `-baseline` `-decode` `-cl3d` `-split`
/// `-cudnn_off` `-bench_on` `-miopen_fresh` `-tf32_off`.
pub static ID_ORDER: [&Axis; 15] = [
    &ENGINE,
    &PRECISION,
    &CHUNK,
    &TILE,
    &TEMPORAL_TILE,
    &FRAMES,
    &SIZE,
    &ENV,
    &PASSES,
    &LAYOUT,
    &CONV3D,
    &CUDNN,
    &CUDNN_BENCHMARK,
    &MIOPEN_DB,
    &TF32,
];

pub static ENGINE: Axis = Axis {
    key: "engine",
    flag: "--engine",
    aliases: &[],
    // `Axis::help_text` appends the engines of `engine::ENGINES`.
    help: "Engines",
    default: "candle",
    applies: Applies::Always,
    set: |s, what, v| {
        s.engine = Engine::parse(what, v)?;
        Ok(())
    },
    get: |s| s.engine.name().to_string(),
    // The default engine's cases keep the ids they had before there were other engines.
    id: |s| match s.engine.name() {
        n if n == ENGINE.default => String::new(),
        n => format!("{n}-"),
    },
};

pub static FRAMES: Axis = Axis {
    key: "frames",
    flag: "--frames",
    aliases: &[],
    help: "Video frames per clip",
    default: "5",
    applies: Applies::Always,
    set: |s, what, v| {
        s.frames = values::parse_frames(what, v)?;
        Ok(())
    },
    get: |s| s.frames.to_string(),
    id: |s| format!("-{}", s.frames),
};

pub static SIZE: Axis = Axis {
    key: "size",
    flag: "--size",
    aliases: &[],
    help: "Clip size, `WxH` or `W*H` (multiples of 8)",
    default: "64x64",
    applies: Applies::Always,
    set: |s, what, v| {
        (s.width, s.height) = values::parse_size(what, v)?;
        Ok(())
    },
    get: |s| format!("{}x{}", s.width, s.height),
    id: |s| format!("x{}x{}", s.width, s.height),
};

pub static PRECISION: Axis = Axis {
    key: "precision",
    flag: "--precision",
    aliases: &[],
    help: "Precisions: fp32, bf16, fp16, auto (comfyui: ComfyUI picks its own dtype)",
    default: "fp32",
    applies: Applies::Always,
    set: |s, what, v| {
        s.precision = values::parse_precision(what, v)?;
        Ok(())
    },
    get: |s| s.precision.name().to_string(),
    id: |s| s.precision.name().to_string(),
};

pub static TILE: Axis = Axis {
    key: "tile",
    flag: "--tile",
    aliases: &[],
    help: "Spatial tiling: `none`, `TILE` or `TILE:OVERLAP` in pixels (TILE alone: overlap as for --tile-px)",
    default: "none",
    applies: Applies::Always,
    set: |s, what, v| {
        s.tiling = values::parse_tile(what, v)?;
        Ok(())
    },
    get: |s| values::tile_name(s.tiling),
    id: |s| match s.tiling {
        None => "-untiled".to_string(),
        Some(t) => format!("-tile{}o{}", t.tile_px, t.overlap_px),
    },
};

pub static TEMPORAL_TILE: Axis = Axis {
    key: "temporal_tile",
    flag: "--temporal-tile",
    aliases: &["temporal_tile"],
    help: "Temporal tiling of the decode as ComfyUI's VAEDecodeTiled: `none` or TILE:OVERLAP in video \
           frames (its defaults: 64:8)",
    default: "none",
    applies: Applies::Always,
    set: |s, what, v| {
        s.temporal_tile = values::parse_temporal_tile(what, v)?;
        Ok(())
    },
    get: |s| values::temporal_tile_name(s.temporal_tile),
    id: |s| match s.temporal_tile {
        None => String::new(),
        Some(t) => format!("-ttile{}o{}", t.tile_frames, t.overlap_frames),
    },
};

pub static CHUNK: Axis = Axis {
    key: "chunk",
    flag: "--chunk",
    aliases: &[],
    help: "Latent frames per decoder call",
    default: "1",
    applies: Applies::Always,
    set: |s, what, v| {
        s.chunk = values::parse_chunk(what, v)?;
        Ok(())
    },
    get: |s| s.chunk.to_string(),
    id: |s| format!("-chunk{}", s.chunk),
};

pub static ENV: Axis = Axis {
    key: "env",
    flag: "--env",
    aliases: &[],
    help: "Env variants (names of `[env.NAME]` tables; `baseline` always exists)",
    default: BASELINE,
    applies: Applies::Always,
    set: |s, _, v| {
        s.env_variant = v.to_string();
        Ok(())
    },
    get: |s| s.env_variant.clone(),
    id: |s| format!("-{}", s.env_variant),
};

pub static PASSES: Axis = Axis {
    key: "passes",
    flag: "--passes",
    aliases: &[],
    help: "Timed passes: encode, decode or both (default both); a decode-only case decodes --input's \
           latent, or an untimed encode of the clip",
    default: "both",
    applies: Applies::Always,
    set: |s, what, v| {
        s.passes = Passes::parse(what, v)?;
        Ok(())
    },
    get: |s| s.passes.name().to_string(),
    id: |s| match s.passes {
        Passes::Both => String::new(),
        p => format!("-{}", p.name()),
    },
};

/// A lever: an axis of two values whose other value only the Python engines take
/// ([`Axis::takes`]), a field of [`CaseSettings`] of type `$ty` (with `parse` and `name`), and
/// an id part only at the other value.
macro_rules! lever_axis {
    ($name:ident, $key:literal, $field:ident: $ty:ident, default $default:literal, id $other:ident => $suffix:literal, $help:expr) => {
        pub static $name: Axis = Axis {
            key: $key,
            flag: concat!("--", $key),
            aliases: &[],
            help: $help,
            default: $default,
            applies: Applies::WhereEngineTakes,
            set: |s, what, v| {
                s.$field = $ty::parse(what, v)?;
                Ok(())
            },
            get: |s| s.$field.name().to_string(),
            id: |s| match s.$field {
                $ty::$other => $suffix.to_string(),
                _ => String::new(),
            },
        };
    };
}

/// A PyTorch knob: a field of [`Knobs`] of type `$ty` (with `parse` and `name`), multiplied
/// where knobs act, its id part `-PREFIX_VALUE` unless `auto` or `n/a` ([`knob_id`]).
macro_rules! knob_axis {
    ($name:ident, $key:literal, $flag:literal, aliases $aliases:expr, $field:ident: $ty:ident, default $default:literal, id $prefix:literal, $help:expr) => {
        pub static $name: Axis = Axis {
            key: $key,
            flag: $flag,
            aliases: $aliases,
            help: $help,
            default: $default,
            applies: Applies::WhereKnobsAct,
            set: |s, what, v| {
                s.knobs.$field = $ty::parse(what, v)?;
                Ok(())
            },
            get: |s| s.knobs.$field.name().to_string(),
            id: |s| knob_id($prefix, s.knobs.$field.name()),
        };
    };
}

// The levers (issue 40): the Python engines take both values; candle only the default
// (`Axis::takes`), and the run says once which cases that leaves unplanned.
lever_axis!(
    LAYOUT,
    "layout",
    layout: Layout,
    default "ncdhw",
    id ChannelsLast3d => "-cl3d",
    "Memory layout of the model's Conv3d weights and its causal convolutions' inputs: ncdhw (as the \
     engines leave it), channels_last_3d (NDHWC, with a causal pad that keeps it; not candle)"
);

lever_axis!(
    CONV3D,
    "conv3d",
    conv3d: Conv3dMode,
    default "native",
    id Split => "-split",
    "Causal 3D convolutions: native (one conv3d each), split (each as conv2d over its time offsets, \
     summed: the same arithmetic and cache; not candle)"
);

// `auto` by default: the knobs as the engine leaves them (torch's defaults, cuDNN/MIOpen on and
// benchmark off, for torch and diffusers; ComfyUI's start-up choice for comfyui).
knob_axis!(
    CUDNN,
    "cudnn",
    "--cudnn",
    aliases &[],
    cudnn: Switch,
    default "auto",
    id "cudnn",
    "torch.backends.cudnn.enabled (MIOpen on ROCm): auto (as the engine leaves it: on in torch, off in \
     ComfyUI on AMD), on, off; set after the engine's start-up (Python engines on cuda:N only)"
);

knob_axis!(
    CUDNN_BENCHMARK,
    "cudnn_benchmark",
    "--cudnn-benchmark",
    aliases &["cudnn_benchmark"],
    cudnn_benchmark: Switch,
    default "auto",
    id "bench",
    "torch.backends.cudnn.benchmark: auto (as the engine leaves it: off unless ComfyUI's --fast \
     autotune), off, on (Python engines on cuda:N only)"
);

knob_axis!(
    MIOPEN_DB,
    "miopen_db",
    "--miopen-db",
    aliases &["miopen_db"],
    miopen_db: MiopenDb,
    default "user",
    id "miopen",
    "MIOpen database: user, fresh (an empty directory per case; Python engines on cuda:N only)"
);

// `auto` by default, as the engine leaves it: on NVIDIA, torch lets cuDNN run fp32 convolutions
// in TF32 (matmuls not); the reference of every case sets it `off` (`CaseSettings::reference`).
knob_axis!(
    TF32,
    "tf32",
    "--tf32",
    aliases &[],
    tf32: Switch,
    default "auto",
    id "tf32",
    "TF32 for fp32 convolutions and matmuls (NVIDIA since Ampere): auto (as the engine leaves it: \
     torch's default is TF32 convolutions, fp32 matmuls), on, off; set after the engine's start-up \
     (Python engines on cuda:N only; recorded not applicable on ROCm). The fp32 reference is always off"
);

/// A knob's part of the id: none where it does not apply or is left to the engine (`auto`).
fn knob_id(prefix: &str, value: &str) -> String {
    match value {
        NOT_APPLICABLE | "auto" => String::new(),
        v => format!("-{prefix}_{v}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_axis_is_in_each_list_once_with_a_canonical_default() {
        let keys = |list: &[&Axis]| list.iter().map(|a| a.key).collect::<std::collections::BTreeSet<_>>();
        assert_eq!(keys(&AXES).len(), AXES.len(), "keys are unique");
        assert_eq!(keys(&ID_ORDER), keys(&AXES));
        let flags: std::collections::BTreeSet<_> = AXES.iter().map(|a| a.flag).collect();
        assert_eq!(flags.len(), AXES.len(), "flags are unique");
        let defaults = CaseSettings::defaults();
        for a in AXES {
            assert_eq!(axis(a.key), Some(a));
            assert!(a.flag.starts_with("--"), "{a:?}");
            assert_eq!(a.canonical(a.key, a.default).unwrap(), (a.get)(&defaults), "{a:?}");
        }
        assert_eq!(axis("framez"), None);
        assert_eq!(defaults.id(), "fp32-chunk1-untiled-5x64x64-baseline-miopen_user");
    }

    #[test]
    fn axis_values_are_canonical_and_errors_name_what_was_written() {
        assert_eq!(SIZE.canonical("--size", "64*32").unwrap(), "64x32");
        assert_eq!(TILE.canonical("t", "256").unwrap(), "256:64");
        assert_eq!(TILE.canonical("t", "0").unwrap(), "none");
        assert_eq!(ENGINE.canonical("e", "PyTorch").unwrap(), "torch");
        assert_eq!(CUDNN_BENCHMARK.canonical("c", "false").unwrap(), "off");
        assert_eq!(PASSES.canonical("p", "encode+decode").unwrap(), "both");
        let e = CHUNK.canonical("matrix.chunk", "0").unwrap_err().to_string();
        assert!(e.contains("matrix.chunk") && e.contains("at least 1"), "{e}");
        let e = TEMPORAL_TILE.canonical("--temporal-tile", "8").unwrap_err().to_string();
        assert!(e.contains("--temporal-tile") && e.contains("TILE:OVERLAP"), "{e}");
        // `n/a` is recorded where a knob does not act, never chosen.
        assert!(CUDNN.canonical("c", "n/a").is_err());
        assert_eq!(TF32.canonical("--tf32", "TRUE").unwrap(), "on");
        let e = TF32.canonical("--tf32", "tf32").unwrap_err().to_string();
        assert!(e.contains("--tf32") && e.contains("auto, on or off"), "{e}");
        assert_eq!(TF32.canonical_recorded("tf32", "n/a").unwrap(), "n/a");
        assert_eq!(LAYOUT.canonical("--layout", "CL3D").unwrap(), "channels_last_3d");
        assert_eq!(CONV3D.canonical("--conv3d", " Split ").unwrap(), "split");
        let e = LAYOUT.canonical("matrix.layout", "nhwc").unwrap_err().to_string();
        assert!(
            e.contains("matrix.layout") && e.contains("ncdhw or channels_last_3d"),
            "{e}"
        );
        let e = CONV3D.canonical("--conv3d", "im2col").unwrap_err().to_string();
        assert!(e.contains("--conv3d") && e.contains("native or split"), "{e}");
        assert_eq!(MIOPEN_DB.canonical_recorded("m", "N/A").unwrap(), "n/a");
        assert!(PASSES.canonical_recorded("p", "n/a").is_err());
        let torch = crate::engine::spec(Engine::Torch).run_as(&CaseSettings::defaults(), "cuda:0");
        assert!(CUDNN.multiplies(&torch, "cuda:0") && !CUDNN.multiplies(&torch, "cpu"));
        assert!(FRAMES.multiplies(&CaseSettings::defaults(), "cpu"));
    }
}
