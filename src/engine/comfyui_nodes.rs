//! ComfyUI's tiled VAE nodes as a user meets them: the widget limits of `VAEDecodeTiled` and
//! `VAEEncodeTiled` (ComfyUI 0.3.64's `nodes.py`, which the tests read from the tarball), and
//! the check that refuses, before anything runs, a `comfyui` case whose spatial tile no user
//! could type into those nodes (ComfyUI answers "Value 32 smaller than min of 64"). The
//! temporal axis already takes only what the nodes take (`model::temporal_tiling`).
//!
//! Must not: run anything, or know how cases are planned.
use crate::report::settings::CaseSettings;
use crate::report::values::Engine;
use crate::util::error::UserError;

/// `tile_size`: the smallest the nodes take, pixels.
pub const TILE_SIZE_MIN: usize = 64;
/// `tile_size` and `overlap`: the largest the nodes take, pixels.
pub const TILE_SIZE_MAX: usize = 4096;
/// `temporal_size`: the smallest the nodes take, video frames.
pub const TEMPORAL_SIZE_MIN: usize = 8;
/// `temporal_overlap`: the smallest the nodes take, video frames.
pub const TEMPORAL_OVERLAP_MIN: usize = 4;

/// Refuse (exit 2) a `comfyui` case whose spatial tile the nodes do not take: `tile_size`
/// below 64 or above 4096 pixels, `overlap` above 4096. Other engines take any tile their
/// model does.
pub fn check(s: &CaseSettings) -> Result<(), UserError> {
    let Some(t) = s.tiling.filter(|_| s.engine == Engine::Comfyui) else {
        return Ok(());
    };
    let node = match (s.passes.encodes(), s.passes.decodes()) {
        (true, true) => "VAEEncodeTiled and VAEDecodeTiled",
        (true, false) => "VAEEncodeTiled",
        _ => "VAEDecodeTiled",
    };
    if t.tile_px < TILE_SIZE_MIN || t.tile_px > TILE_SIZE_MAX || t.overlap_px > TILE_SIZE_MAX {
        return Err(UserError::invalid(
            "--tile (engine comfyui)",
            format!("{}:{}", t.tile_px, t.overlap_px),
            format!(
                "ComfyUI's {node} node takes tile_size {TILE_SIZE_MIN} to {TILE_SIZE_MAX} pixels and overlap at most \
                 {TILE_SIZE_MAX} (a smaller tile is refused: \"Value {} smaller than min of {TILE_SIZE_MIN}\"), so no \
                 ComfyUI user can set it; use e.g. --tile 64:32 for this engine, or run the smaller tile with \
                 another engine",
                t.tile_px
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Tiling;

    #[test]
    fn comfyui_tiles_below_the_nodes_minimum_are_refused_by_name() {
        let mut s = CaseSettings::defaults();
        s.engine = Engine::Comfyui;
        s.tiling = Some(Tiling::new(32, 16).unwrap());
        let e = check(&s).unwrap_err().to_string();
        assert!(
            e.contains("32:16") && e.contains("VAEEncodeTiled and VAEDecodeTiled"),
            "{e}"
        );
        assert!(e.contains("smaller than min of 64"), "{e}");
        s.tiling = Some(Tiling::new(64, 32).unwrap());
        assert!(check(&s).is_ok());
        s.engine = Engine::Torch;
        s.tiling = Some(Tiling::new(32, 16).unwrap());
        assert!(check(&s).is_ok(), "only ComfyUI's nodes have the limit");
    }
}
