//! The user's own Wan VAE in their ComfyUI folder: the files ComfyUI itself would offer in
//! its VAE loader, found as its `folder_paths` does. Searched: the `vae` folders of
//! `DIR/extra_model_paths.yaml` marked `is_default` first, then `DIR/models/vae/`, then the
//! other `vae` folders of that file, in file order. Each folder is walked (links followed,
//! at most [`MAX_DEPTH`] levels), its files in name order. A file is a candidate when its
//! header reads as a Wan VAE ([`crate::weights::peek_config`]); the model is told by its
//! shapes, as `inspect` does. The first candidate of the asked model wins; the others are
//! named so the user can pick one with `--weights`.
//!
//! `extra_model_paths.yaml` is read as ComfyUI 0.3.64's `load_extra_path_config` reads it:
//! with PyYAML's `safe_load` ([`super::pyyaml`]: YAML 1.1 booleans, merge keys, the last of
//! duplicate keys winning); `base_path` through `expanduser` then `expandvars`, relative to
//! the file's folder (links resolved) when not absolute; `is_default` by Python's truthiness
//! (`yes` is true, a quoted `"no"` too); each folder line as written (no `~` or `$`
//! expanded, spaces kept, empty lines skipped), under `base_path` when given, else under the
//! file's folder when relative, then `normpath`ed ([`super::pypath`]). What makes ComfyUI
//! raise at start-up (a `base_path` or folder value that is not a string, an entry that is
//! not a mapping, a file that is empty or not a mapping) is refused saying so; what this
//! tool does not read as PyYAML would is refused saying that instead.
//!
//! Must not: read tensor data (headers only) or talk to the Hub.
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use super::pypath;
use super::pyyaml::Py;
use crate::model::ModelKind;
use crate::util::error::UserError;

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

/// The folders searched for `dir`, in order (existing or not); an `extra_model_paths.yaml`
/// that ComfyUI would not start with, or that this tool cannot read as ComfyUI does, is an
/// error naming the file, the entry and the value.
pub fn vae_folders(dir: &Path) -> Result<Vec<PathBuf>, UserError> {
    let yaml = dir.join("extra_model_paths.yaml");
    let extra = if yaml.is_file() {
        extra_vae_folders(&yaml)?
    } else {
        Vec::new()
    };
    // ComfyUI puts each `is_default` folder in front of the list (one given again moves to
    // the front): the last one given first.
    let mut out: Vec<PathBuf> = extra.iter().rev().filter(|(_, d)| *d).map(|(p, _)| p.clone()).collect();
    out.push(dir.join("models").join("vae"));
    out.extend(extra.into_iter().filter(|(_, d)| !*d).map(|(p, _)| p));
    // The same folder reached twice (a relative DIR, a base_path back to it) is walked once.
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|p| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())));
    Ok(out)
}

/// The largest `extra_model_paths.yaml` read (ComfyUI's example has 50 lines).
pub const MAX_EXTRA_PATHS_BYTES: u64 = 1 << 20;

/// The `vae` folders ComfyUI's `load_extra_path_config` adds from `yaml`, in file order, each
/// with its entry's `is_default` (Python's truthiness of the value).
fn extra_vae_folders(yaml: &Path) -> Result<Vec<(PathBuf, bool)>, UserError> {
    // A few lines in practice: a larger file (or a FIFO that never ends) stops at the cap.
    let text = crate::util::read::text(yaml, "extra_model_paths.yaml", MAX_EXTRA_PATHS_BYTES)?;
    let refused = |what: String| {
        UserError::file(
            yaml,
            format!("{what}; ComfyUI would not start with it either (its load_extra_path_config raises)"),
        )
    };
    let doc = super::pyyaml::safe_load(&text).map_err(|e| match e {
        super::pyyaml::Error::Raises(m) => refused(m),
        super::pyyaml::Error::NotRead(m) => UserError::file(
            yaml,
            format!(
                "this tool does not read {m} as ComfyUI (PyYAML) would; write it plainly, or give \
                 the VAE with --weights FILE"
            ),
        ),
    })?;
    // ComfyUI reads the file next to its main.py, whose folder it takes with links resolved.
    let folder = yaml.parent().unwrap_or(Path::new("."));
    let yaml_dir = std::fs::canonicalize(folder)
        .or_else(|_| std::path::absolute(folder))
        .map(|p| p.into_os_string().into_vec())
        .unwrap_or_default();
    let entries: &[(Py, Py)] = match &doc {
        Py::Dict(entries) => entries,
        Py::Str(s) if s.is_empty() => &[],
        Py::List(v) if v.is_empty() => &[],
        other => {
            return Err(refused(format!(
                "the file holds {} instead of a mapping of entries",
                other.describe()
            )))
        }
    };
    let mut out = Vec::new();
    for (name, conf) in entries {
        let entry = match name {
            Py::Str(s) => s.clone(),
            other => other.describe(),
        };
        let keys = match conf {
            Py::None => continue,
            Py::Str(s) if s.is_empty() => continue,
            Py::List(v) if v.is_empty() => continue,
            Py::Dict(keys) => keys,
            other => {
                return Err(refused(format!(
                    "entry `{entry}` is {}, not a mapping of folders",
                    other.describe()
                )))
            }
        };
        let base = match conf.get("base_path") {
            None => None,
            Some(Py::Str(b)) => {
                let b = pypath::expandvars(&pypath::expanduser(b.as_bytes()));
                Some(match b.first() == Some(&b'/') {
                    true => b,
                    false => pypath::abspath(&pypath::join(&yaml_dir, &b)),
                })
            }
            Some(other) => {
                return Err(refused(format!(
                    "entry `{entry}`: base_path is {}, not a string",
                    other.describe()
                )))
            }
        };
        let is_default = conf.get("is_default").is_some_and(Py::truthy);
        for (key, value) in keys {
            if matches!(key, Py::Str(k) if k == "base_path" || k == "is_default") {
                continue;
            }
            let Py::Str(lines) = value else {
                let key = match key {
                    Py::Str(k) => k.clone(),
                    other => other.describe(),
                };
                return Err(refused(format!(
                    "entry `{entry}`: {key} is {}, not a string of folders, one a line",
                    value.describe()
                )));
            };
            if !matches!(key, Py::Str(k) if k == "vae") {
                continue;
            }
            // Lines as written (spaces kept), empty ones skipped; no `~` or `$` expanded.
            for line in lines.split('\n').filter(|l| !l.is_empty()) {
                let line = line.as_bytes();
                let full = match &base {
                    Some(b) => pypath::join(b, line),
                    None if line.first() == Some(&b'/') => line.to_vec(),
                    None => pypath::abspath(&pypath::join(&yaml_dir, line)),
                };
                out.push((PathBuf::from(OsString::from_vec(pypath::normpath(&full))), is_default));
            }
        }
    }
    Ok(out)
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

    /// `vae_folders` of a ComfyUI folder whose `extra_model_paths.yaml` holds `yaml`.
    fn folders(yaml: &str) -> (tempfile::TempDir, PathBuf, Result<Vec<PathBuf>, String>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("extra_model_paths.yaml"), yaml).unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let got = vae_folders(dir.path()).map_err(|e| e.to_string());
        (dir, root, got)
    }

    #[test]
    fn base_path_is_expanded_as_python_expands_it_and_path_lines_are_not() {
        // A name no other test sets; set before any thread reads it.
        std::env::set_var("WVB_COMFYUI_TEST_SHARED", "/srv/shared");
        std::env::remove_var("WVB_COMFYUI_TEST_UNSET");
        let (_d, root, got) = folders(
            "a:\n  base_path: $WVB_COMFYUI_TEST_SHARED/models\n  vae: vae\n\
             b:\n  base_path: ${WVB_COMFYUI_TEST_SHARED}/../x/$WVB_COMFYUI_TEST_UNSET\n  vae: v\n\
             c:\n  vae: |\n    ~/vae\n    $WVB_COMFYUI_TEST_SHARED/vae\n    ./one/../two//  \n",
        );
        assert_eq!(
            got.unwrap()[1..],
            [
                PathBuf::from("/srv/shared/models/vae"),
                PathBuf::from("/srv/x/$WVB_COMFYUI_TEST_UNSET/v"),
                root.join("~/vae"),
                root.join("$WVB_COMFYUI_TEST_SHARED/vae"),
                root.join("two/  "),
            ]
        );
        // `~` of base_path is the home folder.
        let Some(home) = std::env::var_os("HOME").filter(|h| h.len() > 1) else {
            return;
        };
        let (_d, _, got) = folders("a:\n  base_path: ~/shared\n  vae: vae\n");
        assert_eq!(got.unwrap()[1], PathBuf::from(home).join("shared/vae"));
    }

    #[test]
    fn merge_keys_duplicate_entries_and_yaml_1_1_booleans_count() {
        let (d, root, got) = folders(
            "common: &common\n  base_path: /srv/common\n  is_default: yes\n\
             merged:\n  <<: *common\n  vae: merged/vae\n\
             twice:\n  vae: first/vae\n\
             quoted:\n  base_path: /q\n  is_default: \"no\"\n  vae: vae\n\
             off:\n  base_path: /off\n  is_default: off\n  vae: vae\n\
             twice:\n  vae: last/vae\n",
        );
        let models = d.path().join("models/vae");
        assert_eq!(
            got.unwrap(),
            [
                PathBuf::from("/q/vae"),
                PathBuf::from("/srv/common/merged/vae"),
                models,
                root.join("last/vae"),
                PathBuf::from("/off/vae"),
            ]
        );
    }

    #[test]
    fn only_what_comfyui_would_not_start_with_is_said_to_stop_it() {
        let claim = "ComfyUI would not start with it either";
        for (yaml, names) in [
            ("", "the file holds null"),
            ("- a\n", "the file holds a list"),
            ("a:\n  base_path: 5\n  vae: x\n", "entry `a`: base_path is the number 5"),
            ("a:\n  base_path: on\n  vae: x\n", "base_path is the boolean True"),
            ("a:\n  vae: x\n  checkpoints:\n", "entry `a`: checkpoints is null"),
            ("a: some/path\n", "entry `a` is the string \"some/path\""),
            ("a:\n  vae: x\n---\nb:\n", "expected a single document"),
        ] {
            let (_d, _, got) = folders(yaml);
            let e = got.unwrap_err();
            assert!(
                e.contains("extra_model_paths.yaml") && e.contains(names) && e.contains(claim),
                "{yaml:?}: {e}"
            );
        }
        let (_d, _, got) = folders("a:\n  base_path: !!binary L3Nydg==\n  vae: x\n");
        let e = got.unwrap_err();
        assert!(
            e.contains("does not read") && e.contains("--weights FILE") && !e.contains(claim),
            "{e}"
        );
        // What ComfyUI goes past: an empty list, null and empty entries, an entry's `base_path` alone.
        let (_d, _, got) = folders("[]");
        assert_eq!(got.unwrap().len(), 1);
        let (_d, _, got) = folders("a:\nb: ''\nc: {}\nd:\n  base_path: 5x\n");
        assert_eq!(got.unwrap().len(), 1);
    }
}
