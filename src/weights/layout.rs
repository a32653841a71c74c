//! The checkpoint layout: every tensor name and shape a model `Config` has, in the order
//! of the official state dict, and inferring the model (Wan 2.1 or 2.2) and its config
//! from a checkpoint's shapes.
//!
//! Derives everything from the config's stage tables and block paths; must not repeat a
//! width or stage table of its own. A test builds the model on a recording `VarBuilder`
//! to check that the model asks for exactly these keys.
use crate::model::blocks::ResampleMode;
use crate::model::{Config, ModelKind, Stage};

/// One expected tensor: original checkpoint key and shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSpec {
    pub name: String,
    pub shape: Vec<usize>,
}

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

    /// `resample.1` (conv2d `c -> out`) and, for the 3d modes, `time_conv`.
    fn resample(&mut self, p: &str, c: usize, out: usize, mode: ResampleMode) {
        self.conv2d(&format!("{p}.resample.1"), out, c, 3);
        match mode {
            ResampleMode::Downsample3d => self.conv3d(&format!("{p}.time_conv"), c, c, [3, 1, 1]),
            ResampleMode::Upsample3d => self.conv3d(&format!("{p}.time_conv"), 2 * c, c, [3, 1, 1]),
            ResampleMode::Downsample2d | ResampleMode::Upsample2d => {}
        }
    }

    /// A `downsamples` / `upsamples` list: residual blocks and resamples, keyed as the
    /// model's layer walk keys them ([`Config::block_path`]).
    fn stages(&mut self, cfg: &Config, p: &str, list: &str, stages: &[Stage]) {
        let mut flat = 0;
        for (i, st) in stages.iter().enumerate() {
            let mut inp = st.inp;
            for j in 0..st.blocks() {
                let q = format!("{p}.{}", cfg.block_path(list, i, j, flat));
                match st.resample {
                    Some(mode) if j == st.res_blocks => {
                        self.resample(&q, st.out, st.resampled, mode);
                    }
                    _ => self.residual(&q, inp, st.out),
                }
                inp = st.out;
                flat += 1;
            }
        }
    }
}

/// Every tensor of the model for `cfg`, in state-dict order.
pub fn expected_tensors(cfg: &Config) -> Vec<TensorSpec> {
    let z = cfg.z_dim;
    let mut b = Builder(Vec::with_capacity(200));
    b.conv3d("encoder.conv1", cfg.dim, cfg.image_channels(), [3, 3, 3]);
    b.stages(cfg, "encoder", "downsamples", &cfg.encoder_stages());
    b.middle("encoder", cfg.encoder_width());
    b.head("encoder", cfg.encoder_width(), 2 * z);
    b.conv3d("conv1", 2 * z, 2 * z, [1, 1, 1]);
    b.conv3d("conv2", z, z, [1, 1, 1]);

    let stages = cfg.decoder_stages();
    b.conv3d("decoder.conv1", cfg.decoder_width(), z, [3, 3, 3]);
    b.middle("decoder", cfg.decoder_width());
    b.stages(cfg, "decoder", "upsamples", &stages);
    let last = stages.last().map_or(cfg.decoder_width(), |s| s.resampled);
    b.head("decoder", last, cfg.image_channels());
    b.0
}

/// Total parameter count of a layout.
pub fn param_count(specs: &[TensorSpec]) -> u64 {
    specs.iter().map(|s| s.shape.iter().product::<usize>() as u64).sum()
}

/// Infer the model and its widths from three shapes: `encoder.conv1.weight` is
/// `[dim, 3, 3, 3, 3]` in Wan 2.1 and `[dim, 12, 3, 3, 3]` (patchified RGB) in Wan 2.2,
/// `conv2.weight` `[z, z, 1, 1, 1]`, and in Wan 2.2 `decoder.head.2.weight`
/// `[12, dec_dim, 3, 3, 3]`. Returns a message naming the key on failure.
pub fn infer_config(shape_of: impl Fn(&str) -> Option<Vec<usize>>) -> Result<Config, String> {
    let conv1 = shape_of("encoder.conv1.weight").ok_or("missing key encoder.conv1.weight (needed to infer dim)")?;
    let conv2 = shape_of("conv2.weight").ok_or("missing key conv2.weight (needed to infer z_dim)")?;
    let kind = match conv1.as_slice() {
        [d, 3, 3, 3, 3] if *d > 0 => ModelKind::Wan21,
        [d, 12, 3, 3, 3] if *d > 0 => ModelKind::Wan22,
        _ => {
            return Err(format!(
                "encoder.conv1.weight has shape {conv1:?}, expected [dim, 3, 3, 3, 3] (Wan 2.1) \
                 or [dim, 12, 3, 3, 3] (Wan 2.2)"
            ))
        }
    };
    if conv2.len() != 5 || conv2[0] != conv2[1] || conv2[2..] != [1, 1, 1] || conv2[0] == 0 {
        return Err(format!(
            "conv2.weight has shape {conv2:?}, expected [z_dim, z_dim, 1, 1, 1]"
        ));
    }
    let (dim, z) = (conv1[0], conv2[0]);
    match kind {
        ModelKind::Wan21 => Ok(Config::wan21_sized(dim, z)),
        ModelKind::Wan22 => {
            let head = shape_of("decoder.head.2.weight")
                .ok_or("missing key decoder.head.2.weight (needed to infer dec_dim of this Wan 2.2 VAE checkpoint)")?;
            match head.as_slice() {
                [12, d, 3, 3, 3] if *d > 0 => Ok(Config::wan22_sized(dim, *d, z)),
                _ => Err(format!(
                    "decoder.head.2.weight has shape {head:?}, expected [12, dec_dim, 3, 3, 3] (Wan 2.2)"
                )),
            }
        }
    }
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
        let specs = expected_tensors(&Config::wan21());
        assert_eq!(specs.len(), 194);
        assert_eq!(keys.len(), 194);
        for s in &specs {
            let want: Vec<usize> =
                serde_json::from_value(keys[&s.name].clone()).unwrap_or_else(|_| panic!("{}", s.name));
            assert_eq!(want, s.shape, "{}", s.name);
        }
        assert_eq!(param_count(&specs), 126_892_531);
    }

    /// Wan 2.2's key layout is derived from a config that differs from Wan 2.1 only in
    /// fields.
    #[test]
    fn wan22_layout_matches_key_list() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/wan22_vae_keys.json"
        ))
        .unwrap();
        let keys: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).unwrap();
        let specs = expected_tensors(&Config::wan22());
        assert_eq!(specs.len(), 196);
        let mut names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        names.sort();
        assert_eq!(names, keys.keys().map(String::as_str).collect::<Vec<_>>());
        for s in &specs {
            let want: Vec<usize> = serde_json::from_value(keys[&s.name].clone()).unwrap();
            assert_eq!(want, s.shape, "{}", s.name);
        }
        assert_eq!(param_count(&specs), 704_688_668);
    }

    /// A `VarBuilder` backend that records every name and shape the model asks for and
    /// hands back zeros (a broadcast scalar: no memory per tensor).
    #[derive(Clone, Default)]
    struct Recorder(std::sync::Arc<std::sync::Mutex<Vec<Key>>>);

    /// A tensor name and shape.
    type Key = (String, Vec<usize>);

    impl candle_nn::var_builder::SimpleBackend for Recorder {
        fn get(
            &self,
            s: candle_core::Shape,
            name: &str,
            _: candle_nn::Init,
            dtype: candle_core::DType,
            dev: &candle_core::Device,
        ) -> candle_core::Result<candle_core::Tensor> {
            self.0.lock().unwrap().push((name.to_string(), s.dims().to_vec()));
            candle_core::Tensor::zeros((), dtype, dev)?.broadcast_as(s)
        }
        fn get_unchecked(
            &self,
            name: &str,
            _: candle_core::DType,
            _: &candle_core::Device,
        ) -> candle_core::Result<candle_core::Tensor> {
            candle_core::bail!("{name} requested without a shape: the model must name every shape")
        }
        fn contains_tensor(&self, _: &str) -> bool {
            true
        }
    }

    /// Build the model for `cfg` on a [`Recorder`] and compare what it asked for with the
    /// layout, key by key and shape by shape.
    fn assert_model_asks_for_the_layout(cfg: &Config, count: usize) {
        use crate::model::{ConvImpl, WanVae};
        let rec = Recorder::default();
        // candle's conv keeps no f32 copy of the weights, and the zeros are broadcast scalars.
        let vb = candle_nn::VarBuilder::from_backend(
            Box::new(rec.clone()),
            candle_core::DType::F16,
            candle_core::Device::Cpu,
        );
        WanVae::new(cfg, vb, ConvImpl::Candle).unwrap();
        let asked: Vec<Key> = rec.0.lock().unwrap().clone();
        let mut asked_sorted = asked.clone();
        asked_sorted.sort();
        asked_sorted.dedup();
        assert_eq!(asked_sorted.len(), asked.len(), "a key was requested twice");
        let mut layout: Vec<Key> = expected_tensors(cfg).into_iter().map(|s| (s.name, s.shape)).collect();
        layout.sort();
        let missing: Vec<_> = layout.iter().filter(|k| !asked_sorted.contains(k)).collect();
        let unlisted: Vec<_> = asked_sorted.iter().filter(|k| !layout.contains(k)).collect();
        assert!(missing.is_empty(), "layout keys the model never asks for: {missing:?}");
        assert!(
            unlisted.is_empty(),
            "keys the model asks for outside the layout: {unlisted:?}"
        );
        assert_eq!(layout.len(), count);
    }

    #[test]
    fn the_wan21_model_asks_for_exactly_the_layout_keys() {
        assert_model_asks_for_the_layout(&Config::wan21(), 194);
    }

    #[test]
    fn the_wan22_model_asks_for_exactly_the_layout_keys() {
        // With `wan22_layout_matches_key_list`: the model asks for the real checkpoint's keys.
        assert_model_asks_for_the_layout(&Config::wan22(), 196);
    }

    #[test]
    fn the_model_is_inferred_from_shapes() {
        let shapes = |cfg: &Config| -> std::collections::HashMap<String, Vec<usize>> {
            expected_tensors(cfg).into_iter().map(|s| (s.name, s.shape)).collect()
        };
        for cfg in [
            Config::wan21(),
            Config::wan22(),
            Config::wan21_sized(8, 4),
            Config::wan22_sized(8, 16, 48),
        ] {
            let s = shapes(&cfg);
            assert_eq!(infer_config(|k| s.get(k).cloned()).unwrap(), cfg);
        }
        let mut s = shapes(&Config::wan22());
        s.insert("encoder.conv1.weight".into(), vec![160, 6, 3, 3, 3]);
        let err = infer_config(|k| s.get(k).cloned()).unwrap_err();
        assert!(err.contains("[dim, 12, 3, 3, 3] (Wan 2.2)"), "{err}");
        s.insert("encoder.conv1.weight".into(), vec![160, 12, 3, 3, 3]);
        s.remove("decoder.head.2.weight");
        let err = infer_config(|k| s.get(k).cloned()).unwrap_err();
        assert!(err.contains("missing key decoder.head.2.weight"), "{err}");
    }
}
