//! The user's own Wan VAE in their ComfyUI folder: the files ComfyUI itself would offer in
//! its VAE loader, found as its `folder_paths` does. Searched: the `vae` folders of
//! `DIR/extra_model_paths.yaml` marked `is_default: true` first, then `DIR/models/vae/`,
//! then the other `vae` folders of that file, in file order (each entry's paths one per
//! line, under its `base_path`, which is relative to the file's folder when not absolute;
//! without a `base_path`, relative paths are too). Each folder is walked (links followed,
//! at most [`MAX_DEPTH`] levels), its files in name order. A file is a candidate when its
//! header reads as a Wan VAE ([`crate::weights::peek_config`]); the model is told by its
//! shapes, as `inspect` does. The first candidate of the asked model wins; the others are
//! named so the user can pick one with `--weights`.
//!
//! Must not: read tensor data (headers only) or talk to the Hub.
use std::path::{Path, PathBuf};

use crate::error::UserError;
use crate::model::ModelKind;

/// How deep a VAE folder is walked (ComfyUI walks without a limit; links may loop).
pub const MAX_DEPTH: usize = 8;

/// The extensions ComfyUI lists in a model folder that this tool can read.
const EXTENSIONS: [&str; 6] = ["safetensors", "sft", "pth", "pt", "ckpt", "bin"];

/// What the search found for one model.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The file to use; `None` when no file of the model is there.
    pub chosen: Option<PathBuf>,
    /// Other files of the same model, in search order.
    pub others: Vec<PathBuf>,
    /// Files of the other Wan model (not chosen, named in messages).
    pub other_model: Vec<PathBuf>,
}

/// The folders searched for `dir`, in order (existing or not); an unreadable or malformed
/// `extra_model_paths.yaml` is an error naming the file.
pub fn vae_folders(dir: &Path) -> Result<Vec<PathBuf>, UserError> {
    let yaml = dir.join("extra_model_paths.yaml");
    let (default_first, rest) = if yaml.is_file() {
        extra_vae_folders(&yaml)?
    } else {
        (Vec::new(), Vec::new())
    };
    // ComfyUI puts each `is_default` folder in front of the list: the last one given first.
    let mut out: Vec<PathBuf> = default_first.into_iter().rev().collect();
    out.push(dir.join("models").join("vae"));
    out.extend(rest);
    // The same folder reached twice (a relative DIR, a base_path back to it) is walked once.
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|p| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())));
    Ok(out)
}

/// The `vae` folders of an `extra_model_paths.yaml`: (those of `is_default` entries, the rest).
fn extra_vae_folders(yaml: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>), UserError> {
    let text = std::fs::read_to_string(yaml).map_err(|e| UserError::file(yaml, format!("cannot read: {e}")))?;
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).map_err(|e| {
        UserError::file(
            yaml,
            format!("not valid YAML ({e}); ComfyUI would not start with it either"),
        )
    })?;
    let yaml_dir = std::path::absolute(yaml)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    let home = std::env::var_os("HOME").map(PathBuf::from).or_else(std::env::home_dir);
    let expand = |p: &str| super::expand_home(p, home.as_deref());
    let (mut first, mut rest) = (Vec::new(), Vec::new());
    let Some(entries) = doc.as_mapping() else {
        return Ok((first, rest));
    };
    for (_, conf) in entries {
        let Some(conf) = conf.as_mapping() else { continue };
        let get = |k: &str| conf.get(serde_yaml_ng::Value::String(k.into()));
        let base = get("base_path").and_then(|v| v.as_str()).map(|b| {
            let b = expand(b);
            if b.is_absolute() {
                b
            } else {
                yaml_dir.join(b)
            }
        });
        let is_default = get("is_default").and_then(|v| v.as_bool()).unwrap_or(false);
        let Some(paths) = get("vae").and_then(|v| v.as_str()) else {
            continue;
        };
        for line in paths.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let p = expand(line);
            let full = match &base {
                Some(b) => b.join(p),
                None if p.is_absolute() => p,
                None => yaml_dir.join(p),
            };
            if is_default { &mut first } else { &mut rest }.push(full);
        }
    }
    Ok((first, rest))
}

/// The files under `folder` with a model extension, in name order, depth first; a folder
/// or file already seen (through a link, or a loop of links) is skipped.
fn files_under(folder: &Path, depth: usize, seen: &mut std::collections::BTreeSet<PathBuf>, out: &mut Vec<PathBuf>) {
    let Ok(real) = std::fs::canonicalize(folder) else {
        return;
    };
    if !seen.insert(real) {
        return;
    }
    let Ok(entries) = std::fs::read_dir(folder) else { return };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            if depth < MAX_DEPTH {
                files_under(&p, depth + 1, seen, out);
            }
        } else if p.is_file()
            && std::fs::canonicalize(&p).is_ok_and(|real| seen.insert(real))
            && p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
        {
            out.push(p);
        }
    }
}

/// The Wan VAE of `model` that ComfyUI in `dir` would offer (`chosen`), and what else is there.
pub fn find(dir: &Path, model: ModelKind) -> Result<Found, UserError> {
    let (mut files, mut seen) = (Vec::new(), std::collections::BTreeSet::new());
    for folder in vae_folders(dir)? {
        files_under(&folder, 0, &mut seen, &mut files);
    }
    let (mut same, mut other) = (Vec::new(), Vec::new());
    for f in files {
        match crate::weights::peek_config(&f) {
            Ok(cfg) if cfg.kind() == model => same.push(f),
            Ok(_) => other.push(f),
            Err(_) => {} // another kind of VAE, or not a checkpoint
        }
    }
    let chosen = (!same.is_empty()).then(|| same.remove(0));
    Ok(Found {
        chosen,
        others: same,
        other_model: other,
    })
}

/// The line `run` prints for a search of `dir` for `model`: what was chosen and how to pick
/// another, or that none fits and the run falls back to synthetic weights.
pub fn describe(dir: &Path, model: ModelKind, found: &Found) -> String {
    let list = |v: &[PathBuf]| v.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    match &found.chosen {
        Some(chosen) => {
            let mut s = format!(
                "weights: {} ({}, found in the ComfyUI folder {})",
                chosen.display(),
                model.title(),
                dir.display()
            );
            if !found.others.is_empty() {
                s.push_str(&format!(
                    "; also there: {} (the first in ComfyUI's search order was taken; pick another with --weights FILE)",
                    list(&found.others)
                ));
            }
            s
        }
        None => {
            let other = match found.other_model.is_empty() {
                true => String::new(),
                false => format!(
                    " (there: {}, of the other Wan VAE; --model picks the model)",
                    list(&found.other_model)
                ),
            };
            format!(
                "warning: no {} in the ComfyUI folder {} (models/vae/ and extra_model_paths.yaml's vae folders){other}: \
                 synthetic weights instead; give your VAE with --weights FILE",
                model.title(),
                dir.display()
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_of_links_is_walked_once() {
        let dir = tempfile::tempdir().unwrap();
        let vae = dir.path().join("vae");
        std::fs::create_dir_all(vae.join("sub")).unwrap();
        std::fs::write(vae.join("a.safetensors"), b"x").unwrap();
        std::fs::write(vae.join("sub/b.pth"), b"x").unwrap();
        std::fs::write(vae.join("notes.txt"), b"x").unwrap();
        std::os::unix::fs::symlink(&vae, vae.join("sub/loop")).unwrap();
        std::os::unix::fs::symlink(vae.join("a.safetensors"), vae.join("z.safetensors")).unwrap();
        let (mut files, mut seen) = (Vec::new(), std::collections::BTreeSet::new());
        files_under(&vae, 0, &mut seen, &mut files);
        assert_eq!(files, [vae.join("a.safetensors"), vae.join("sub/b.pth")]);
    }

    #[test]
    fn extra_model_paths_are_read_as_comfyui_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let yaml = dir.path().join("extra_model_paths.yaml");
        std::fs::write(
            &yaml,
            "comfyui:\n  base_path: shared/\n  is_default: true\n  vae: |\n    models/vae\n    more/vae\n\
             a111:\n  base_path: /opt/sd\n  vae: models/VAE\nloose:\n  vae: rel/vae\nempty:\n",
        )
        .unwrap();
        let root = std::path::absolute(dir.path()).unwrap();
        let got = vae_folders(dir.path()).unwrap();
        assert_eq!(
            got,
            [
                root.join("shared/more/vae"),
                root.join("shared/models/vae"),
                dir.path().join("models/vae"),
                PathBuf::from("/opt/sd/models/VAE"),
                root.join("rel/vae"),
            ]
        );
        std::fs::write(&yaml, "a: [unclosed").unwrap();
        let e = vae_folders(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("extra_model_paths.yaml") && e.contains("not valid YAML"),
            "{e}"
        );
    }
}
