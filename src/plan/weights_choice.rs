//! The weights a run measures, settled once in the parent before anything runs: the
//! user's (`--weights`, `[model] weights`), else the Wan VAE in the `--comfyui` folder
//! (`weights::source::comfyui`, said on stderr), else synthetic weights, said in one line
//! with what that means for quality; then resolved (Hub cache first) and their header read.
//!
//! Must not: run cases or read tensor data beyond the header.
use super::options::BenchOptions;
use crate::model::Config;
use crate::report::ModelInfo;
use crate::weights::WeightsSource;

/// Without weights of the user's choosing: the ComfyUI folder's own Wan VAE of the run's
/// model when the run has one (said on stderr, and recorded as any file is); then, for
/// synthetic weights, one line saying what that means for quality.
pub fn own_weights(opts: &mut BenchOptions) -> anyhow::Result<()> {
    use crate::weights::source::comfyui;
    if !opts.weights_given {
        if let Some(dir) = opts.engine_dirs.get(crate::report::values::Engine::Comfyui).cloned() {
            let model = opts.model.unwrap_or(crate::model::ModelKind::Wan21);
            let found = comfyui::find(&dir, model)?;
            crate::errln!("{}", comfyui::describe(&dir, model, &found));
            if let Some(path) = found.chosen {
                opts.weights = path.display().to_string();
            }
        }
    }
    if matches!(
        crate::weights::source::parse(&opts.weights)?,
        crate::weights::source::WeightsRef::Synthetic
    ) {
        crate::errln!("{}", crate::weights::synthetic::SYNTHETIC_NOTE);
    }
    Ok(())
}

/// The weights, resolved once in the parent (a hub download happens here, not in every
/// worker), with the report's model facts and the model's config.
pub struct ResolvedModel {
    pub source: WeightsSource,
    pub info: ModelInfo,
    pub cfg: Config,
}

impl ResolvedModel {
    pub fn resolve(opts: &BenchOptions) -> anyhow::Result<ResolvedModel> {
        let resolved = crate::weights::source::resolve(&opts.weights)?;
        let mut info = resolved.info;
        if let WeightsSource::File(path) = &resolved.source {
            // Header, key layout and shapes, once, without loading the data.
            let header = crate::weights::header::check_file(path)?;
            info.params = header.checked.params;
            info.dim = header.checked.config.dim;
            info.z_dim = header.checked.config.z_dim;
            info.on_disk_dtype = dtype_names(&header.checked.on_disk_dtypes);
        }
        // The model (from the file's shapes, or --model for synthetic weights) decides the
        // size and tile rules.
        let cfg = crate::weights::resolve_config(&resolved.source, opts.model)?;
        if matches!(resolved.source, WeightsSource::Synthetic { .. }) {
            // Synthetic weights (f32, as `weights::synthetic` builds them): the layout is the config's, known before any case runs (a
            // run whose every case fails still names its model).
            info.params = crate::weights::layout::param_count(&crate::weights::layout::expected_tensors(&cfg));
            info.dim = cfg.dim;
            info.z_dim = cfg.z_dim;
            info.on_disk_dtype = "f32".to_string();
        }
        Ok(ResolvedModel {
            source: resolved.source,
            info,
            cfg,
        })
    }
}

/// `f32`, or several on-disk dtypes joined by `+` (as the workers report it).
fn dtype_names(dtypes: &[candle_core::DType]) -> String {
    dtypes.iter().map(|d| d.as_str()).collect::<Vec<_>>().join("+")
}
