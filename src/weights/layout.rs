//! The checkpoint layout: every tensor name and shape the Wan 2.1 VAE has for a given
//! `dim` / `z_dim`, in the order of the official state dict, and config inference.
use crate::model::VaeConfig;

/// One expected tensor: original checkpoint key and shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSpec {
    pub name: String,
    pub shape: Vec<usize>,
}

/// The real model's width and latent channels.
pub const REAL_CONFIG: VaeConfig = VaeConfig { dim: 96, z_dim: 16 };

struct Builder(Vec<TensorSpec>);

impl Builder {
    fn push(&mut self, name: String, shape: &[usize]) {
        self.0.push(TensorSpec {
            name,
            shape: shape.to_vec(),
        });
    }
    fn conv3d(&mut self, p: &str, out: usize, inp: usize, k: [usize; 3]) {
        self.push(format!("{p}.weight"), &[out, inp, k[0], k[1], k[2]]);
        self.push(format!("{p}.bias"), &[out]);
    }
    fn conv2d(&mut self, p: &str, out: usize, inp: usize, k: usize) {
        self.push(format!("{p}.weight"), &[out, inp, k, k]);
        self.push(format!("{p}.bias"), &[out]);
    }
    fn residual(&mut self, p: &str, inp: usize, out: usize) {
        self.push(format!("{p}.residual.0.gamma"), &[inp, 1, 1, 1]);
        self.conv3d(&format!("{p}.residual.2"), out, inp, [3, 3, 3]);
        self.push(format!("{p}.residual.3.gamma"), &[out, 1, 1, 1]);
        self.conv3d(&format!("{p}.residual.6"), out, out, [3, 3, 3]);
        if inp != out {
            self.conv3d(&format!("{p}.shortcut"), out, inp, [1, 1, 1]);
        }
    }
    fn attention(&mut self, p: &str, c: usize) {
        self.push(format!("{p}.norm.gamma"), &[c, 1, 1]);
        self.conv2d(&format!("{p}.to_qkv"), 3 * c, c, 1);
        self.conv2d(&format!("{p}.proj"), c, c, 1);
    }
    fn middle(&mut self, p: &str, c: usize) {
        self.residual(&format!("{p}.middle.0"), c, c);
        self.attention(&format!("{p}.middle.1"), c);
        self.residual(&format!("{p}.middle.2"), c, c);
    }
    fn head(&mut self, p: &str, c: usize, out: usize) {
        self.push(format!("{p}.head.0.gamma"), &[c, 1, 1, 1]);
        self.conv3d(&format!("{p}.head.2"), out, c, [3, 3, 3]);
    }
}

/// Every tensor of the model for `cfg`, in state-dict order.
pub fn expected_tensors(cfg: &VaeConfig) -> Vec<TensorSpec> {
    let (d, z) = (cfg.dim, cfg.z_dim);
    let mut b = Builder(Vec::with_capacity(200));

    // Encoder: stages [d->d, d->2d, 2d->4d, 4d->4d], two residual blocks each, a resample
    // after the first three (downsample2d, downsample3d, downsample3d).
    b.conv3d("encoder.conv1", d, 3, [3, 3, 3]);
    let dims = [d, d, 2 * d, 4 * d, 4 * d];
    let mut idx = 0;
    for stage in 0..4 {
        let (mut inp, out) = (dims[stage], dims[stage + 1]);
        for _ in 0..2 {
            b.residual(&format!("encoder.downsamples.{idx}"), inp, out);
            inp = out;
            idx += 1;
        }
        if stage < 3 {
            b.conv2d(&format!("encoder.downsamples.{idx}.resample.1"), out, out, 3);
            if stage > 0 {
                b.conv3d(&format!("encoder.downsamples.{idx}.time_conv"), out, out, [3, 1, 1]);
            }
            idx += 1;
        }
    }
    b.middle("encoder", 4 * d);
    b.head("encoder", 4 * d, 2 * z);
    b.conv3d("conv1", 2 * z, 2 * z, [1, 1, 1]);
    b.conv3d("conv2", z, z, [1, 1, 1]);

    // Decoder: stages [4d->4d, 2d->4d, 2d->2d, d->d] (input halved by the previous
    // upsample), three residual blocks each, upsample3d, upsample3d, upsample2d.
    b.conv3d("decoder.conv1", 4 * d, z, [3, 3, 3]);
    b.middle("decoder", 4 * d);
    let ddims = [4 * d, 4 * d, 4 * d, 2 * d, d];
    let mut idx = 0;
    for stage in 0..4 {
        let out = ddims[stage + 1];
        let mut inp = if stage == 0 { ddims[0] } else { ddims[stage] / 2 };
        for _ in 0..3 {
            b.residual(&format!("decoder.upsamples.{idx}"), inp, out);
            inp = out;
            idx += 1;
        }
        if stage < 3 {
            b.conv2d(&format!("decoder.upsamples.{idx}.resample.1"), out / 2, out, 3);
            if stage < 2 {
                b.conv3d(&format!("decoder.upsamples.{idx}.time_conv"), 2 * out, out, [3, 1, 1]);
            }
            idx += 1;
        }
    }
    b.head("decoder", d, 3);
    b.0
}

/// Total parameter count of a layout.
pub fn param_count(specs: &[TensorSpec]) -> u64 {
    specs.iter().map(|s| s.shape.iter().product::<usize>() as u64).sum()
}

/// Infer `dim` and `z_dim` from two shapes: `encoder.conv1.weight` `[dim,3,3,3,3]` and
/// `conv2.weight` `[z,z,1,1,1]`. Returns a message naming the key on failure.
pub fn infer_config(shape_of: impl Fn(&str) -> Option<Vec<usize>>) -> Result<VaeConfig, String> {
    let conv1 = shape_of("encoder.conv1.weight").ok_or("missing key encoder.conv1.weight (needed to infer dim)")?;
    let conv2 = shape_of("conv2.weight").ok_or("missing key conv2.weight (needed to infer z_dim)")?;
    if conv1.len() != 5 || conv1[1..] != [3, 3, 3, 3] || conv1[0] == 0 {
        return Err(format!(
            "encoder.conv1.weight has shape {conv1:?}, expected [dim, 3, 3, 3, 3]"
        ));
    }
    if conv2.len() != 5 || conv2[0] != conv2[1] || conv2[2..] != [1, 1, 1] || conv2[0] == 0 {
        return Err(format!(
            "conv2.weight has shape {conv2:?}, expected [z_dim, z_dim, 1, 1, 1]"
        ));
    }
    Ok(VaeConfig {
        dim: conv1[0],
        z_dim: conv2[0],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_layout_matches_key_list() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/wan21_vae_keys.json"
        ))
        .unwrap();
        let keys: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).unwrap();
        let specs = expected_tensors(&REAL_CONFIG);
        assert_eq!(specs.len(), 194);
        assert_eq!(keys.len(), 194);
        for s in &specs {
            let want: Vec<usize> =
                serde_json::from_value(keys[&s.name].clone()).unwrap_or_else(|_| panic!("{}", s.name));
            assert_eq!(want, s.shape, "{}", s.name);
        }
        assert_eq!(param_count(&specs), 126_892_531);
    }
}
