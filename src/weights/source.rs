//! Weight references (`--weights`, `[model] weights`): parsing `synthetic`, local paths,
//! `hf://OWNER/REPO/PATH[@REVISION]` and presets, and resolving them to a local file plus
//! the report's `model` record (Hub cache first, offline-aware, download on a miss).
//!
//! Resolve once in the parent process and give workers [`ResolvedWeights::source`] (a
//! local path): workers never talk to the Hub.
//!
//! Owns references and their resolution; must not read tensors (that is `weights`).
use std::fmt;
use std::path::{Path, PathBuf};

use crate::report::ModelInfo;
use crate::util::error::UserError;
use crate::weights::WeightsSource;

pub mod comfyui;
pub mod digest;
pub mod hub;
mod pypath;
mod pyyaml;

pub use digest::sha256_cached_in;
pub use hub::HubSettings;

/// A parsed `--weights` reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WeightsRef {
    /// Built-in synthetic weights.
    Synthetic,
    /// A local `.pth` / `.safetensors` file.
    Local(PathBuf),
    /// A file in a Hugging Face Hub model repo.
    Hub(HubRef),
}

/// A file in a Hugging Face Hub model repo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubRef {
    /// `OWNER/NAME`.
    pub repo: String,
    /// Path of the file inside the repo.
    pub file: String,
    /// Branch, tag or commit sha; `None` means `main`.
    pub revision: Option<String>,
}

impl fmt::Display for HubRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hf://{}/{}", self.repo, self.file)?;
        if let Some(rev) = &self.revision {
            write!(f, "@{rev}")?;
        }
        Ok(())
    }
}

impl fmt::Display for WeightsRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WeightsRef::Synthetic => f.write_str("synthetic"),
            WeightsRef::Local(p) => write!(f, "{}", p.display()),
            WeightsRef::Hub(h) => h.fmt(f),
        }
    }
}

/// A named shortcut for a Hub reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    pub reference: &'static str,
    pub description: &'static str,
}

/// The presets `--weights` accepts by name.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "wan2.1",
        reference: "hf://Wan-AI/Wan2.1-T2V-1.3B/Wan2.1_VAE.pth",
        description: "official Wan 2.1 VAE, PyTorch .pth, fp32, 508 MB",
    },
    Preset {
        name: "wan2.1-comfy",
        reference: "hf://Comfy-Org/Wan_2.1_ComfyUI_repackaged/split_files/vae/wan_2.1_vae.safetensors",
        description: "ComfyUI repackage of the same VAE, .safetensors, 16-bit, 254 MB",
    },
    Preset {
        name: "wan2.2",
        reference: "hf://Wan-AI/Wan2.2-TI2V-5B/Wan2.2_VAE.pth",
        description: "official Wan 2.2 VAE (TI2V-5B), PyTorch .pth, fp32, 2.82 GB",
    },
    Preset {
        name: "wan2.2-comfy",
        reference: "hf://Comfy-Org/Wan_2.2_ComfyUI_Repackaged/split_files/vae/wan2.2_vae.safetensors",
        description: "ComfyUI repackage of the Wan 2.2 VAE, .safetensors, 16-bit, 1.41 GB",
    },
];

/// `~` or `~/x` under `home` (as a shell expands them in paths read from files and
/// variables); anything else, or no home, as it is.
pub fn expand_home(v: &str, home: Option<&Path>) -> PathBuf {
    match (v.strip_prefix("~/"), home) {
        (Some(rest), Some(h)) => h.join(rest),
        (None, Some(h)) if v == "~" => h.to_path_buf(),
        _ => PathBuf::from(v),
    }
}

/// The forms `--weights` accepts, for error messages.
const FORMS: &str = "`synthetic`, a preset (`wan2.1`, `wan2.1-comfy`, `wan2.2`, `wan2.2-comfy`; see \
                     `inspect --list-presets`), \
                     hf://OWNER/REPO/PATH/IN/REPO[@REVISION], or a local .pth / .safetensors file";

/// Parse a reference: `synthetic`, a preset name, `hf://OWNER/REPO/PATH[@REVISION]`, else a
/// local path (not checked here; [`resolve`] checks it exists).
pub fn parse(reference: &str) -> Result<WeightsRef, UserError> {
    let r = reference.trim();
    if r.is_empty() {
        return Err(UserError::invalid("--weights", reference, FORMS));
    }
    if r.eq_ignore_ascii_case("synthetic") {
        return Ok(WeightsRef::Synthetic);
    }
    if let Some(p) = PRESETS.iter().find(|p| p.name.eq_ignore_ascii_case(r)) {
        return parse_hub(p.reference).map(WeightsRef::Hub);
    }
    // `get`, not `[..5]`: the reference may start with a multi-byte character.
    if r.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("hf://")) {
        return parse_hub(r).map(WeightsRef::Hub);
    }
    Ok(WeightsRef::Local(PathBuf::from(reference)))
}

/// The local file `reference` names, found without downloading: the path itself, or the
/// Hub cache's copy when it is there; `None` for synthetic weights, an uncached Hub file or
/// a reference that does not parse. For checks such as "is this output an input?".
pub fn local_file(reference: &str) -> Option<PathBuf> {
    match parse(reference).ok()? {
        WeightsRef::Synthetic => None,
        WeightsRef::Local(p) => Some(p),
        WeightsRef::Hub(h) => hub::lookup_cache(&HubSettings::from_env().cache_dir, &h)
            .ok()
            .map(|hit| hit.path),
    }
}

fn parse_hub(reference: &str) -> Result<HubRef, UserError> {
    let bad = |why: &str| {
        UserError::invalid(
            "--weights",
            reference,
            format!(
                "{why}; expected hf://OWNER/REPO/PATH/IN/REPO[@REVISION], e.g. {}",
                PRESETS[0].reference
            ),
        )
    };
    let rest = &reference[5..];
    // The revision may itself contain '/' (e.g. `refs/pr/3`), so split it off first.
    let (path, revision) = match rest.rsplit_once('@') {
        Some((p, rev)) => {
            let rev = rev.trim();
            if rev.is_empty() {
                return Err(bad("empty revision after '@'"));
            }
            if rev.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
                return Err(bad("invalid revision"));
            }
            (p, Some(rev.to_string()))
        }
        None => (rest, None),
    };
    let parts: Vec<&str> = path.split('/').collect();
    if parts.len() < 3 {
        return Err(bad("needs an owner, a repo name and a file path"));
    }
    if parts.iter().any(|c| c.is_empty() || *c == "." || *c == "..") {
        return Err(bad("empty, '.' or '..' path component"));
    }
    Ok(HubRef {
        repo: format!("{}/{}", parts[0], parts[1]),
        file: parts[2..].join("/"),
        revision,
    })
}

/// A reference resolved to something local, with the report's `model` record.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedWeights {
    /// What the loader (and workers) load.
    pub source: WeightsSource,
    /// `source`, `repo`, `file`, `revision`, `local_path`, `file_size_bytes` and `sha256`
    /// filled; `on_disk_dtype`, `params`, `dim`, `z_dim` left for the loader.
    pub info: ModelInfo,
}

/// Resolve a reference with settings from the environment (see [`HubSettings::from_env`]).
pub fn resolve(reference: &str) -> anyhow::Result<ResolvedWeights> {
    resolve_with(reference, &HubSettings::from_env())
}

/// Resolve a reference: the Hub cache first (no network), then a download unless offline.
pub fn resolve_with(reference: &str, settings: &HubSettings) -> anyhow::Result<ResolvedWeights> {
    let mut info = ModelInfo {
        source: reference.to_string(),
        ..ModelInfo::default()
    };
    match parse(reference)? {
        WeightsRef::Synthetic => Ok(ResolvedWeights {
            source: WeightsSource::Synthetic { seed: 0 },
            info,
        }),
        WeightsRef::Local(path) => {
            if !path.exists() {
                return Err(UserError::file(&path, format!("no such file; --weights takes {FORMS}")).into());
            }
            if !path.is_file() {
                return Err(UserError::file(&path, format!("not a file; --weights takes {FORMS}")).into());
            }
            // Absolute, so workers started in another directory still find it.
            let path = std::path::absolute(&path).unwrap_or(path);
            fill_file(&mut info, &path, settings)?;
            Ok(ResolvedWeights {
                source: WeightsSource::File(path),
                info,
            })
        }
        WeightsRef::Hub(hub) => {
            hub::check_cached_ref(&settings.cache_dir, &hub)?;
            let hit = match hub::lookup_cache(&settings.cache_dir, &hub) {
                Ok(hit) => hit,
                Err(reason) if settings.offline => return Err(hub::offline_miss(&hub, settings, &reason).into()),
                Err(_) => hub::download(&hub, settings)?,
            };
            let hit = hub::CacheHit {
                path: std::path::absolute(&hit.path).unwrap_or(hit.path),
                ..hit
            };
            fill_file(&mut info, &hit.path, settings)?;
            check_blob_digest(&hit.path, info.sha256.as_deref());
            info.repo = Some(hub.repo);
            info.file = Some(hub.file);
            info.revision = Some(hit.commit);
            Ok(ResolvedWeights {
                source: WeightsSource::File(hit.path),
                info,
            })
        }
    }
}

fn fill_file(info: &mut ModelInfo, path: &Path, settings: &HubSettings) -> anyhow::Result<()> {
    let meta = std::fs::metadata(path).map_err(|e| UserError::file(path, format!("cannot read: {e}")))?;
    info.local_path = Some(path.display().to_string());
    info.file_size_bytes = Some(meta.len());
    info.sha256 = Some(sha256_cached_in(path, settings.digest_cache_dir.as_deref())?);
    Ok(())
}

/// Downloaders store large (LFS) files as `blobs/<sha256>`: warn when the content differs.
fn check_blob_digest(path: &Path, sha256: Option<&str>) {
    let (Ok(target), Some(sha)) = (std::fs::read_link(path), sha256) else {
        return;
    };
    let Some(name) = target.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    if digest::is_hex64(name) && !name.eq_ignore_ascii_case(sha) {
        crate::errln!(
            "warning: {} has sha256 {sha} but its cache blob is named {name}: the cached file may be corrupt; \
             delete it from the cache and download it again",
            path.display()
        );
    }
}

/// The text of `inspect --list-presets`.
pub fn list_presets() -> String {
    let width = PRESETS
        .iter()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(0)
        .max("synthetic".len());
    let mut out = String::from("Weights presets (--weights NAME):\n");
    for p in PRESETS {
        out.push_str(&format!(
            "  {:width$}  {}\n  {:width$}  {}\n",
            p.name, p.reference, "", p.description
        ));
    }
    out.push_str(&format!(
        "\nOther forms:\n  {:width$}  built-in random weights of the real layout (no download; --model wan2.1|wan2.2)\n  \
         {:width$}  a local .pth or .safetensors file\n  {:width$}  hf://OWNER/REPO/PATH/IN/REPO[@REVISION]\n\n\
         Hub files are looked up in the Hugging Face cache first (HF_HUB_CACHE, else HF_HOME/hub, else \
         ~/.cache/huggingface/hub) and downloaded only on a miss; HF_HUB_OFFLINE=1 forbids downloads; \
         HF_TOKEN is sent for gated or private repos.\n",
        "synthetic", "PATH", "hf://…"
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hub(repo: &str, file: &str, rev: Option<&str>) -> WeightsRef {
        WeightsRef::Hub(HubRef {
            repo: repo.into(),
            file: file.into(),
            revision: rev.map(Into::into),
        })
    }

    #[test]
    fn parses_every_form() {
        assert_eq!(parse("synthetic").unwrap(), WeightsRef::Synthetic);
        assert_eq!(
            parse("wan2.1").unwrap(),
            hub("Wan-AI/Wan2.1-T2V-1.3B", "Wan2.1_VAE.pth", None)
        );
        assert_eq!(
            parse("wan2.1-comfy").unwrap(),
            hub(
                "Comfy-Org/Wan_2.1_ComfyUI_repackaged",
                "split_files/vae/wan_2.1_vae.safetensors",
                None
            )
        );
        assert_eq!(
            parse("wan2.2").unwrap(),
            hub("Wan-AI/Wan2.2-TI2V-5B", "Wan2.2_VAE.pth", None)
        );
        assert_eq!(
            parse("wan2.2-comfy").unwrap(),
            hub(
                "Comfy-Org/Wan_2.2_ComfyUI_Repackaged",
                "split_files/vae/wan2.2_vae.safetensors",
                None
            )
        );
        assert_eq!(parse("hf://a/b/c.pth@v1").unwrap(), hub("a/b", "c.pth", Some("v1")));
        assert_eq!(
            parse("hf://a/b/d/c.pth@refs/pr/3").unwrap(),
            hub("a/b", "d/c.pth", Some("refs/pr/3"))
        );
        assert_eq!(parse("model.pth").unwrap(), WeightsRef::Local("model.pth".into()));
        assert_eq!(
            parse("/x/y.safetensors").unwrap(),
            WeightsRef::Local("/x/y.safetensors".into())
        );
    }

    #[test]
    fn rejects_bad_hub_references() {
        for bad in [
            "hf://a/b",
            "hf://a",
            "hf://",
            "hf://a//c",
            "hf://a/b/../c",
            "hf://a/b/c@",
            "hf://a/b/c@x/../y",
            "",
        ] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(err.contains("--weights"), "{bad}: {err}");
        }
    }

    #[test]
    fn display_round_trips() {
        for s in ["hf://a/b/c/d.pth@main", "hf://a/b/c.pth", "synthetic"] {
            assert_eq!(parse(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn presets_parse_and_list() {
        let text = list_presets();
        for p in PRESETS {
            assert!(matches!(parse(p.reference).unwrap(), WeightsRef::Hub(_)));
            assert!(text.contains(p.name) && text.contains(p.reference));
        }
    }
}
