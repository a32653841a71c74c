//! What an out-of-memory case tells the user: the clip (frames x size), the pass it timed and
//! the phase it died in, the precision and tiling, the device's total and free memory when
//! it failed, and what to try (a tile size, bf16, temporal tiles, chunk 1). Its first line
//! is what the table, the CSV and the answer show; the engine's own text (torch's allocator
//! message, the worker's stderr) follows on the next lines.
//!
//! Must not: run anything; the memory of the CPU is read from `/proc/meminfo` once the
//! worker has died, a GPU's is what the worker reported.
use crate::report::settings::CaseSettings;
use crate::report::MemoryAtFailure;

/// The memory of `device` now, when the worker could not say it: the CPU's total and
/// available memory (`/proc/meminfo`). `None` for a GPU or when unreadable.
pub fn read_now(device: &str) -> Option<MemoryAtFailure> {
    if crate::engine::device_kind(device) != "cpu" {
        return None;
    }
    let kib = |key: &str| crate::util::memory::proc_kib_field("/proc/meminfo", key);
    Some(MemoryAtFailure {
        device: device.to_string(),
        total_bytes: kib("MemTotal:")?,
        free_bytes: kib("MemAvailable:")?,
        torch_reserved_bytes: None,
        source: "/proc/meminfo (MemTotal, MemAvailable) when the worker had died".into(),
    })
}

/// The error of an `oom` case: one first line with what the user acts on, then `original`.
pub fn explain(
    s: &CaseSettings,
    device: &str,
    phase: Option<&str>,
    memory: Option<&MemoryAtFailure>,
    original: &str,
) -> String {
    let pass = match s.passes.name() {
        "both" => "encode+decode",
        p => p,
    };
    let tiling = match (s.tiling, s.temporal_tile) {
        (None, None) => "untiled".to_string(),
        (t, tt) => [
            t.map(|t| format!("tiles {}:{} px", t.tile_px, t.overlap_px)),
            tt.map(|t| format!("temporal tiles {}:{} frames", t.tile_frames, t.overlap_frames)),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", "),
    };
    let when = match phase {
        Some(p) if !p.is_empty() => format!("failed in `{p}`"),
        _ => "failed before its first phase".to_string(),
    };
    let gib = |b: u64| format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64);
    let mem = match memory {
        Some(m) => {
            let held = m
                .torch_reserved_bytes
                .map(|r| format!(", {} held by torch's cache", gib(r)))
                .unwrap_or_default();
            format!(
                "{} total, {} free when it failed{held}",
                gib(m.total_bytes),
                gib(m.free_bytes)
            )
        }
        None => "its memory when it failed is unknown (the worker died before reporting it)".to_string(),
    };
    format!(
        "out of memory: {} frames at {}x{}, {pass}, {}, {tiling}, chunk {} on {device} ({when}; {mem}); try {}",
        s.frames,
        s.width,
        s.height,
        s.precision.name(),
        s.chunk,
        remedies(s).join(", or ")
    ) + &match original.trim() {
        "" => String::new(),
        o => format!("\n{o}"),
    }
}

/// What to try, most effective first, as `run` flags with ComfyUI's node where it has one.
fn remedies(s: &CaseSettings) -> Vec<String> {
    let mut out = Vec::new();
    match s.tiling {
        None => {
            out.push("spatial tiles, --tile 512:128 or --tile 256:64 (ComfyUI: VAEDecodeTiled / VAEEncodeTiled)".into())
        }
        Some(t) if t.tile_px > 128 => out.push(format!(
            "smaller tiles, --tile {}:{}",
            (t.tile_px / 2 / 8 * 8).max(64),
            (t.overlap_px / 2 / 8 * 8).max(8).min(t.tile_px / 4 / 8 * 8)
        )),
        Some(_) => {}
    }
    if s.precision.name() == "fp32" || s.precision.name() == "auto" {
        out.push("--precision bf16 (half the activation memory; ComfyUI: --bf16-vae)".into());
    }
    if s.passes.decodes() && s.temporal_tile.is_none() && s.frames > 16 {
        out.push("temporal tiles in the decode, --temporal-tile 64:8 (ComfyUI's VAEDecodeTiled defaults)".into());
    }
    if s.chunk > 1 {
        out.push("--chunk 1 (one latent frame per decoder call)".into());
    }
    if out.is_empty() {
        out.push("fewer frames or a smaller size (every memory setting is already at its smallest)".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(text: &str) -> CaseSettings {
        let mut s = CaseSettings::defaults();
        for kv in text.split_whitespace() {
            let (k, v) = kv.split_once('=').unwrap();
            let axis = crate::plan::axes::axis(k).unwrap();
            (axis.set)(&mut s, k, v).unwrap();
        }
        s
    }

    #[test]
    fn the_first_line_names_clip_pass_precision_tiling_memory_and_remedies() {
        let s = settings("frames=5 size=3072x1792 precision=fp32 passes=decode");
        let m = MemoryAtFailure {
            device: "cuda:0".into(),
            total_bytes: 80 << 30,
            free_bytes: 1 << 29,
            torch_reserved_bytes: Some(70 << 30),
            source: "torch.cuda.mem_get_info".into(),
        };
        let e = explain(
            &s,
            "cuda:0",
            Some("decode run 1/3"),
            Some(&m),
            "OutOfMemoryError: Tried to allocate 11.83 GiB",
        );
        let (first, rest) = e.split_once('\n').unwrap();
        for needle in [
            "5 frames at 3072x1792",
            "decode,",
            "fp32",
            "untiled",
            "on cuda:0",
            "`decode run 1/3`",
            "80.00 GiB total, 0.50 GiB free",
            "70.00 GiB held by torch's cache",
            "--tile 512:128",
            "--precision bf16",
        ] {
            assert!(first.contains(needle), "{needle}: {first}");
        }
        assert!(
            !first.contains("--temporal-tile"),
            "5 frames: temporal tiles do not help: {first}"
        );
        assert_eq!(rest, "OutOfMemoryError: Tried to allocate 11.83 GiB");
    }

    #[test]
    fn tiled_bf16_cases_are_told_smaller_tiles_and_time_tiles() {
        let s = settings("frames=81 size=1280x704 precision=bf16 tile=512:128 chunk=2");
        let e = explain(&s, "cuda:0", None, None, "");
        for needle in [
            "81 frames",
            "encode+decode",
            "tiles 512:128 px",
            "failed before its first phase",
            "unknown",
            "--tile 256:64",
            "--temporal-tile 64:8",
            "--chunk 1",
        ] {
            assert!(e.contains(needle), "{needle}: {e}");
        }
        assert!(!e.contains("--precision bf16") && !e.contains('\n'), "{e}");
    }
}
