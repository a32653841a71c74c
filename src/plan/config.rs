//! The TOML matrix file: `[model]`, `[run]`, `[matrix]` (one key per axis of
//! `axes::AXES`, each a list), `[env.NAME]` and `[budgets]` (its syntax is `budgets`')
//! tables, parsed strictly (an unknown key, an unknown env variant, an invalid value or an
//! empty axis is an error naming it) into [`BenchOptions`]. Also the built-in smoke matrix.
//!
//! Must not: apply flags (that is `options`) or expand cases (that is `matrix`).
use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::budgets;
use super::options::{Axes, BenchOptions};
use crate::engine::EngineDirs;
use crate::plan::axes;
use crate::report::settings::BASELINE;
use crate::report::values::{Order, TorchPrecision};
use crate::util::error::UserError;

/// The built-in smoke matrix (`configs/smoke.toml`), run when no `--config` is given.
pub const SMOKE_TOML: &str = include_str!("../../configs/smoke.toml");

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    model: ModelSection,
    #[serde(default)]
    run: RunSection,
    /// Axis key -> list of values.
    #[serde(default)]
    matrix: toml::Table,
    #[serde(default)]
    env: BTreeMap<String, BTreeMap<String, toml::Value>>,
    #[serde(default)]
    budgets: budgets::BudgetsSection,
}

/// `[model]`: its fixed keys, plus one key per engine folder (`comfyui = "DIR"`, the keys
/// of `engine::folder_keys`); any other key is refused by [`ModelSection::engine_dirs`].
#[derive(Debug, Default, Deserialize)]
struct ModelSection {
    weights: Option<String>,
    /// `wan2.1` or `wan2.2` (synthetic weights; with a file it must agree).
    model: Option<String>,
    device: Option<String>,
    python: Option<String>,
    torch_precision: Option<String>,
    /// The other keys: engine folders, checked by name and type.
    #[serde(flatten)]
    folders: BTreeMap<String, toml::Value>,
}

impl ModelSection {
    /// The engine folders the section names (as written: `load` makes them relative to the
    /// file's folder); an unknown key or a value that is not a string is an error naming it.
    fn engine_dirs(&self) -> Result<EngineDirs, UserError> {
        let mut dirs = EngineDirs::default();
        for (key, value) in &self.folders {
            let Some(engine) = crate::engine::folder_engine(key) else {
                return Err(UserError::invalid(
                    "[model] key",
                    key,
                    format!(
                        "one of weights, model, device, python, torch_precision, {}",
                        crate::engine::folder_keys().join(", ")
                    ),
                ));
            };
            let toml::Value::String(dir) = value else {
                return Err(UserError::invalid(
                    format!("model.{key}"),
                    value.to_string(),
                    format!("the path of the {engine} engine's folder, as a string"),
                ));
            };
            if dir.is_empty() {
                return Err(UserError::invalid(
                    format!("model.{key}"),
                    dir,
                    format!("the path of the {engine} engine's folder (an empty string names no folder)"),
                ));
            }
            dirs.0.insert(engine, dir.into());
        }
        Ok(dirs)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunSection {
    warmup: Option<usize>,
    runs: Option<usize>,
    timeout_s: Option<f64>,
    order: Option<String>,
    seed: Option<u64>,
    schedule: Option<String>,
    round_runs: Option<usize>,
    control: Option<bool>,
    /// Relative to the matrix file's folder.
    input: Option<String>,
    input_tensor: Option<String>,
}

/// Read and parse a matrix file; errors name the file and the culprit.
pub fn load(path: &Path) -> anyhow::Result<BenchOptions> {
    let text = crate::util::read::text(path, "matrix file", crate::util::read::MAX_REPORT_BYTES)?;
    let mut opts = parse(&text).map_err(|e| UserError::file(path, format!("{e:#}")))?;
    opts.config_path = Some(path.to_path_buf());
    if let Some(dir) = path.parent() {
        if let Some(input) = &opts.input {
            opts.input = Some(dir.join(input));
        }
        for (engine, folder) in opts.engine_dirs.0.iter_mut() {
            *folder = dir.join(&*folder);
            // Checked here, so that the error names the file and its key, not a flag.
            if !folder.is_dir() {
                let key = crate::engine::spec(*engine).folder.map_or("?", |f| f.flag);
                return Err(UserError::file(
                    path,
                    format!(
                        "[model] {key} = {:?} is not an existing folder: expected the {engine} engine's folder",
                        folder.display().to_string()
                    ),
                )
                .into());
            }
        }
    }
    Ok(opts)
}

/// The built-in smoke matrix.
pub fn smoke() -> BenchOptions {
    parse(SMOKE_TOML).expect("built-in smoke matrix is valid")
}

/// Parse matrix-file text. Missing sections take defaults (synthetic weights on the CPU,
/// warmup 1, runs 3, 900 s) and missing axes their `Axis::default` (5 frames of 64x64,
/// fp32, untiled, chunk 1, baseline, engine candle, cudnn on, cudnn_benchmark off,
/// miopen_db user); an axis that is present must not be empty.
pub fn parse(text: &str) -> anyhow::Result<BenchOptions> {
    let file: File = toml::from_str(text).map_err(|e| UserError::Other(format!("invalid matrix file: {e}")))?;
    let axes = matrix_axes(&file.matrix)?;
    let mut variants = BTreeMap::new();
    variants.insert(BASELINE.to_string(), BTreeMap::new());
    for (name, vars) in file.env {
        let mut out = BTreeMap::new();
        for (key, value) in vars {
            if key.is_empty() || key.contains(['=', '\0']) {
                return Err(UserError::invalid(format!("env.{name}"), key, "an environment variable name").into());
            }
            let value = match value {
                toml::Value::String(s) => s,
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => (if b { "1" } else { "0" }).to_string(),
                other => {
                    return Err(UserError::invalid(
                        format!("env.{name}.{key}"),
                        other.to_string(),
                        "a string, number or boolean",
                    )
                    .into())
                }
            };
            out.insert(key, value);
        }
        variants.insert(name, out);
    }
    let engine_dirs = file.model.engine_dirs()?;
    let order = match &file.run.order {
        Some(o) => Order::parse("run.order", o)?,
        None => Order::Shuffled,
    };
    let opts = BenchOptions {
        weights_given: file.model.weights.is_some(),
        weights: file.model.weights.unwrap_or_else(|| "synthetic".into()),
        model: match &file.model.model {
            Some(m) => Some(
                m.parse()
                    .map_err(|_| UserError::invalid("model.model", m, "wan2.1 or wan2.2"))?,
            ),
            None => None,
        },
        device: file.model.device.unwrap_or_else(|| "cpu".into()),
        warmup: file.run.warmup.unwrap_or(1),
        runs: file.run.runs.unwrap_or(3),
        timeout_s: file.run.timeout_s.unwrap_or(900.0),
        order,
        seed: file.run.seed,
        schedule: match &file.run.schedule {
            Some(s) => crate::report::values::Schedule::parse("run.schedule", s)?,
            None => Default::default(),
        },
        round_runs: file.run.round_runs.unwrap_or(1),
        control: file.run.control.unwrap_or(true),
        output: None,
        quiet: false,
        config_path: None,
        axes,
        variants,
        unset: BTreeMap::new(),
        input: match file.run.input {
            Some(i) if i.is_empty() => {
                return Err(UserError::invalid("run.input", i, "the path of a .safetensors or .npy file").into())
            }
            i => i.map(Into::into),
        },
        input_tensor: file.run.input_tensor,
        budgets: file.budgets.into_budgets()?,
        python: file.model.python,
        torch_precision: file
            .model
            .torch_precision
            .as_deref()
            .map(|s| TorchPrecision::parse("model.torch_precision", s))
            .transpose()?,
        engine_dirs,
    };
    opts.validate()?;
    Ok(opts)
}

/// The `[matrix]` table: each key an axis, each value a list; axes not written keep their
/// defaults.
fn matrix_axes(matrix: &toml::Table) -> anyhow::Result<Axes> {
    let mut out = Axes::defaults();
    for (key, value) in matrix {
        let Some(axis) = axes::axis(key) else {
            return Err(UserError::invalid("[matrix] key", key, format!("an axis: {}", axes::keys())).into());
        };
        let what = format!("matrix.{key}");
        let toml::Value::Array(list) = value else {
            return Err(UserError::invalid(
                &what,
                value.to_string(),
                format!("a list of values, e.g. {key} = [{}]", toml::Value::from(axis.default)),
            )
            .into());
        };
        let values = list
            .iter()
            .map(|v| budgets::value_text(&what, v))
            .collect::<Result<Vec<_>, _>>()?;
        out.set(axis, &values, &what)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        format!("{:#}", parse(text).unwrap_err())
    }

    #[test]
    fn smoke_is_the_documented_default() {
        let o = smoke();
        assert_eq!(o.weights, "synthetic");
        assert_eq!((o.warmup, o.runs), (1, 2));
        assert_eq!(o.axes.get(&axes::SIZE), ["64x64"]);
        assert_eq!(o.case_count(), 2);
    }

    #[test]
    fn issue_example_parses() {
        let o = parse(
            r#"
[model]
weights = "synthetic"
device = "cpu"
[run]
warmup = 1
runs = 3
timeout_s = 900
[matrix]
frames = [5]
size = ["64x64"]
precision = ["fp32", "bf16"]
tile = ["none", "256:64"]
chunk = [1, 2]
env = ["baseline", "fastfind"]
[env.baseline]
[env.fastfind]
MIOPEN_FIND_MODE = "2"
"#,
        )
        .unwrap();
        assert_eq!(o.case_count(), 16);
        assert_eq!(o.variants["fastfind"]["MIOPEN_FIND_MODE"], "2");
    }

    #[test]
    fn errors_name_the_culprit() {
        assert!(err("[matrix]\nframez = [5]").contains("framez"));
        assert!(err("[run]\nwarmup = 1\nbogus = 2").contains("bogus"));
        assert!(err("[matrix]\nenv = [\"nope\"]").contains("nope"));
        let e = err("[matrix]\nsize = [\"65x64\"]");
        assert!(e.contains("65x64") && e.contains("64x64"), "{e}");
        assert!(err("[matrix]\nchunk = []").contains("matrix.chunk is empty"));
        assert!(err("[matrix]\nprecision = [\"int4\"]").contains("int4"));
        assert!(err("[matrix]\ntile = [\"100:8\"]").contains("100:8"));
        assert!(err("[run]\nruns = 0").contains("runs"));
        assert!(err("[matrix]\nframes = [5, 5]").contains("duplicate"));
    }

    #[test]
    fn workload_keys_parse() {
        let o = parse(
            "[run]\ninput = \"l.latent\"\n[matrix]\npasses = [\"decode\"]\ntemporal_tile = [\"none\", \"64:8\"]\n\
             [budgets]\npeak_rss_gb = 50\n[[budgets.case]]\nframes = 17\nsize = \"320x320\"\ndecode_median_s = 10",
        )
        .unwrap();
        assert_eq!(o.case_count(), 2);
        assert_eq!(o.input.as_deref(), Some(std::path::Path::new("l.latent")));
        assert_eq!(o.budgets.cases.len(), 1);
        assert!(err("[matrix]\npasses = [\"twice\"]").contains("twice"));
        assert!(err("[matrix]\ntemporal_tile = [\"64:5\"]").contains("64:5"));
        assert!(err("[budgets]\ndecode_s = 1").contains("decode_s"));
        assert!(err("[[budgets.case]]\nframez = 17\ndecode_median_s = 1").contains("framez"));
    }

    #[test]
    fn shipped_configs_parse_and_the_amd_ones_expand_as_documented() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                load(&path).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
            }
        }
        let gfx = load(&dir.join("gfx1151-miopen.toml")).unwrap();
        assert_eq!(
            (gfx.device.as_str(), gfx.axes.get(&axes::ENGINE)),
            ("cuda:0", &["torch".to_string()][..])
        );
        assert_eq!(gfx.case_count(), 64, "with conv3d native, split");
        let comfy = load(&dir.join("comfyui-amd.toml")).unwrap();
        assert_eq!(comfy.torch_precision, Some(TorchPrecision::Cast));
        assert_eq!(comfy.axes.get(&axes::CUDNN), ["auto", "on", "off"]);
        // torch, comfyui x bf16 x untiled, 512:128 x auto, on, off x baseline, find_fast: no
        // case `unsupported` by design (torch has no `auto`).
        assert_eq!(comfy.axes.get(&axes::PRECISION), ["bf16"]);
        assert_eq!(comfy.case_count(), 24);
    }

    #[test]
    fn numeric_env_values_become_strings() {
        let o = parse("[matrix]\nenv = [\"x\"]\n[env.x]\nMIOPEN_FIND_MODE = 2\nFLAG = true").unwrap();
        assert_eq!(o.variants["x"]["MIOPEN_FIND_MODE"], "2");
        assert_eq!(o.variants["x"]["FLAG"], "1");
    }
}
