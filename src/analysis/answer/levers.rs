//! The apply text of the levers (issue 40): how to get a case's `layout` and `conv3d`
//! outside this tool, in the user's code, per engine: the calls for torch and diffusers, what
//! ComfyUI lets a user set and what needs a change to its code, and where the conv3d split
//! goes. Nothing for a lever at its default, nor for candle (it takes neither).
//!
//! Must not: choose the case, read anything but the engine and the two values, or name an
//! engine to decide what to say (its entry's [`ApplyAs`] does).
use crate::engine::ApplyAs;
use crate::report::values::{Conv3dMode, Engine, Layout};

/// Where the layout's format-keeping pad and the split are implemented in this tool.
const OURS: &str = "wan-vae-bench's src/engine/python/wan_levers.py";

/// The lines that say how to apply `layout` and `conv3d` with `engine` (empty at the defaults).
pub fn steps(engine: Engine, layout: Layout, conv3d: Conv3dMode) -> Vec<String> {
    let mut out = Vec::new();
    // The causal convolution's forward each engine's code has.
    let how = crate::engine::spec(engine).apply;
    let forward = match how {
        ApplyAs::ToolFlags => return out,
        ApplyAs::PyTorch => "CausalConv3d.forward (the official wan/modules/vae.py and vae2_2.py)",
        ApplyAs::Diffusers => "WanCausalConv3d.forward (diffusers.models.autoencoders.autoencoder_kl_wan)",
        ApplyAs::ComfyuiNodes => "CausalConv3d.forward in comfy/ldm/wan/vae.py (vae2_2.py imports it)",
    };
    let comfyui = how == ApplyAs::ComfyuiNodes;
    if layout == Layout::ChannelsLast3d {
        let model = if comfyui { "vae.first_stage_model" } else { "vae" };
        let convert = format!(
            "for m in {model}.modules(): m.to(memory_format=torch.channels_last_3d) if isinstance(m, torch.nn.Conv3d) \
             else None (the Conv3d weights only: {model}.to(memory_format=torch.channels_last_3d) refuses the model's 4D \
             Conv2d weights)"
        );
        let pad = format!(
            "keep the format through the causal pad, in {forward}: allocate the padded input once with \
             torch.empty(..., memory_format=torch.channels_last_3d), zero its borders and copy the cached frames and the \
             input into it; torch.cat + F.pad keep only the format they are given (a conv3d on the CPU returns NCDHW) and \
             a repeat + cat pad converts back every time (causal_pad in {OURS})"
        );
        if comfyui {
            out.push(format!(
                "ComfyUI has no setting for the memory format; after loading the VAE, a custom node (or a few lines of \
                 code) converts its weights: {convert}"
            ));
            out.push(format!("and a code change to ComfyUI: {pad}"));
        } else {
            out.push(format!("convert the VAE's Conv3d weights: {convert}"));
            out.push(pad);
        }
    }
    if conv3d == Conv3dMode::Split {
        let (change, weights) = match comfyui {
            true => (
                "a code change to ComfyUI (it has no setting for it): ",
                " with the weight and bias its Conv3d would use (comfy.ops.cast_bias_weight)",
            ),
            false => ("", ""),
        };
        out.push(format!(
            "{change}split each causal convolution with a time kernel of k > 1 frames in {forward}, after its causal pad: \
             the sum over t in 0..k of F.conv2d(frames t, t+1, ... of the padded input, weight[:, :, t]){weights}, the \
             bias added once; the same products and the same cache; lay the padded input out frames-major (or \
             channels_last_3d) so that each offset's frames are a view, not a copy (split_conv in {OURS})"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_engine_gets_its_own_lever_text_and_the_defaults_none() {
        for e in [Engine::Candle, Engine::Torch, Engine::Diffusers, Engine::Comfyui] {
            assert!(steps(e, Layout::Ncdhw, Conv3dMode::Native).is_empty(), "{e}");
        }
        assert!(steps(Engine::Candle, Layout::ChannelsLast3d, Conv3dMode::Split).is_empty());
        let torch = steps(Engine::Torch, Layout::ChannelsLast3d, Conv3dMode::Native).join("\n");
        assert!(torch.contains("m.to(memory_format=torch.channels_last_3d)"), "{torch}");
        assert!(
            torch.contains("torch.empty(..., memory_format=torch.channels_last_3d)"),
            "{torch}"
        );
        assert!(torch.contains("repeat + cat") && !torch.contains("conv2d"), "{torch}");
        let diffusers = steps(Engine::Diffusers, Layout::Ncdhw, Conv3dMode::Split);
        assert_eq!(diffusers.len(), 1);
        assert!(
            diffusers[0].contains("WanCausalConv3d.forward") && diffusers[0].contains("F.conv2d"),
            "{diffusers:?}"
        );
        let comfy = steps(Engine::Comfyui, Layout::ChannelsLast3d, Conv3dMode::Split);
        assert_eq!(comfy.len(), 3, "{comfy:?}");
        assert!(comfy[0].contains("no setting") && comfy[0].contains("vae.first_stage_model.modules()"));
        assert!(comfy[1].contains("code change") && comfy[1].contains("comfy/ldm/wan/vae.py"));
        assert!(comfy[2].contains("code change") && comfy[2].contains("cast_bias_weight"));
    }
}
