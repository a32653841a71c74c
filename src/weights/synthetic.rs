//! Synthetic weights: the full real layout of a model (Wan 2.1: 194 tensors, 126,892,531
//! parameters; Wan 2.2: 196 tensors, 704,688,668), deterministic from a seed, scaled so
//! activations stay finite through the network.
//!
//! Convolution and projection weights are uniform with standard deviation
//! `1/sqrt(fan_in)` (variance-preserving), biases small, RMS-norm gammas 1. Each tensor has
//! its own stream (seed mixed with its name), so generation runs in parallel and a tensor's
//! values do not depend on the others. Each tensor's values are generated straight into the
//! buffer the tensor then owns: the weights exist once in memory (2.8 GB for Wan 2.2).
//!
//! Must not hard-code keys or shapes: they come from the layout of the given config.
use std::collections::HashMap;
use std::path::Path;

use candle_core::{Device, Tensor};
use rayon::prelude::*;

use super::layout::{expected_tensors, TensorSpec};
use super::Weights;
use crate::model::Config;
use crate::util::error::UserError;

/// Build synthetic weights for `cfg` from `seed`.
pub fn build(cfg: &Config, seed: u64) -> Result<Weights, UserError> {
    let specs = expected_tensors(cfg);
    let tensors: Vec<(String, Tensor)> = specs
        .par_iter()
        .map(|spec| {
            let data = values(spec, seed);
            let t = Tensor::from_vec(data, spec.shape.as_slice(), &Device::Cpu).expect("shape matches data");
            (spec.name.clone(), t)
        })
        .collect();
    let map: HashMap<String, Tensor> = tensors.into_iter().collect();
    Weights::from_tensors(map, "synthetic", Path::new("synthetic"))
}

fn values(spec: &TensorSpec, seed: u64) -> Vec<f32> {
    let n: usize = spec.shape.iter().product();
    if spec.name.ends_with(".gamma") {
        return vec![1.0; n];
    }
    let std = if spec.name.ends_with(".bias") {
        0.02
    } else {
        // fan_in = in_channels * kernel volume
        let fan_in: usize = spec.shape[1..].iter().product();
        1.0 / (fan_in as f64).sqrt()
    };
    let half_width = (3.0f64).sqrt() * std; // uniform(-a, a) has std a/sqrt(3)
    let mut state = seed ^ fnv1a(spec.name.as_bytes());
    (0..n)
        .map(|_| {
            let u = (splitmix64(&mut state) >> 40) as f64 / (1u64 << 24) as f64; // [0, 1)
            ((2.0 * u - 1.0) * half_width) as f32
        })
        .collect()
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

/// The line `run` prints when its weights are synthetic, and the answer's note.
pub const SYNTHETIC_NOTE: &str = "weights: synthetic (random values in the real layout): the times are real, but \
    quality against fp32 describes random weights, not your VAE, and their tiling and chunking seams are far larger \
    than your VAE's, so those do not decide the answer; measure yours with --weights FILE, or --comfyui DIR to use \
    the VAE in your ComfyUI folder";
