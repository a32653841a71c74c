//! A case's recorded `env` as the user's stack: what its worker saw, without the tool's own
//! scratch paths ([`user_env`]: reports written before `run` left them out recorded
//! `HIPBLASLT_LOG_FILE` in the run's scratch folder for a variant that logs hipBLASLt, and a
//! `miopen_db = fresh` case's folder in `MIOPEN_USER_DB_PATH` and `MIOPEN_CUSTOM_CACHE_DIR`,
//! a new random folder every run); and the variables the `ok` cases of one engine ran with
//! that no env variant of their run set and that differ between them ([`differences`]: the
//! shells of merged parts, e.g. `RAYON_NUM_THREADS` 1 and 2), which `merge` refuses and the
//! answer does not compare across.
//!
//! Must not: read or write files; `history`, `merge` and `answer` call it on loaded reports.
use std::collections::BTreeMap;
use std::path::{Component, Path};

use super::{CaseRecord, CaseStatus, RunSettings};
use crate::report::values::MiopenDb;

/// Name prefix of the run's scratch folder in the temp folder (`tempfile` adds 6 random
/// letters and digits).
pub const SCRATCH_PREFIX: &str = "wan-vae-bench-";

/// The variables a `miopen_db = fresh` case points at its empty folder in the scratch.
pub const FRESH_DB_VARS: [&str; 2] = ["MIOPEN_USER_DB_PATH", "MIOPEN_CUSTOM_CACHE_DIR"];

/// Prefixes of the variables a worker reports besides those its variant set (and
/// `WAN_VAE_BENCH_RECORD_ENV` names): every worker records each set variable they cover, so
/// such a name's absence from a case's `env` means unset (`src/engine/python/wan_worker.py`
/// holds a copy).
pub const REPORTED_ENV_PREFIXES: &[&str] = &[
    "MIOPEN_",
    "HSA_",
    "HIP_",
    "ROCM_",
    "ROCBLAS_",
    "HIPBLASLT_",
    "PYTORCH_",
    "TORCH_",
    "CUDA_",
    "CUBLAS_",
    "CUDNN_",
    "RAYON_",
    "OMP_",
    "CANDLE_",
    "COMFYUI_",
];

/// The variable a variant that logs hipBLASLt gets pointed into the scratch.
pub const HIPBLASLT_FILE_VAR: &str = "HIPBLASLT_LOG_FILE";

/// Whether `name=value` is one of the tool's own scratch paths: a hipBLASLt log file
/// (`.../wan-vae-bench-XXXXXX/hipblaslt-...`) or a fresh MIOpen database folder
/// (`.../wan-vae-bench-XXXXXX/miopen-...`), never a path the user chose.
pub fn is_own_path(name: &str, value: &str) -> bool {
    let inside = match name {
        HIPBLASLT_FILE_VAR => "hipblaslt-",
        n if FRESH_DB_VARS.contains(&n) => "miopen-",
        _ => return false,
    };
    let parts: Vec<&str> = Path::new(value)
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect();
    parts.len() >= 2 && {
        let (folder, entry) = (parts[parts.len() - 2], parts[parts.len() - 1]);
        let random = folder.strip_prefix(SCRATCH_PREFIX).unwrap_or_default();
        random.len() == 6 && random.chars().all(|c| c.is_ascii_alphanumeric()) && entry.starts_with(inside)
    }
}

/// `env` without the tool's own scratch paths ([`is_own_path`]).
pub fn user_env(env: &BTreeMap<String, String>) -> impl Iterator<Item = (&String, &String)> {
    env.iter().filter(|(k, v)| !is_own_path(k, v))
}

/// Whether every worker records `name` (set or not): it has a reported prefix.
pub fn is_reported(name: &str) -> bool {
    REPORTED_ENV_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// One variable whose value differs between the cases given to [`differences`].
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    pub name: String,
    /// Each value (`None`: unset) with the positions of the cases that had it.
    pub values: Vec<(Option<String>, Vec<usize>)>,
}

impl Difference {
    /// `RAYON_NUM_THREADS (1; 2)`: the values as [`shown`].
    pub fn text(&self) -> String {
        let values: Vec<String> = self.values.iter().map(|(v, _)| shown(v.as_deref())).collect();
        format!(
            "{} ({})",
            crate::util::format::printable(&self.name),
            crate::util::format::bounded(&values, "; ", 4)
        )
    }
}

/// A recorded value for a message: `unset` for none, control characters escaped, at most 80
/// characters (then `...`).
pub fn shown(value: Option<&str>) -> String {
    let Some(v) = value else {
        return "unset".to_string();
    };
    let mut text = crate::util::format::printable(&v.chars().take(80).collect::<String>());
    if v.chars().count() > 80 {
        text.push_str("...");
    }
    text
}

/// The variables the `ok` cases among `cases` (each with the run record it came from) ran
/// with that their env variant did not set (its run's `env_variants`), that are not the
/// tool's own (`WAN_VAE_BENCH_*`, its scratch paths, a fresh case's MIOpen folders) and whose
/// value differs between cases of one engine: what the shell `run` ran in set differently.
/// A run without `env_variants` (older reports) tells not which variables its variants set:
/// its cases are then compared with the cases of their own variant only.
/// A name no reported prefix covers ([`is_reported`]) is compared only between the cases that
/// recorded it: one run without it in `WAN_VAE_BENCH_RECORD_ENV` did not record it, and its
/// absence there is no "unset".
pub fn differences<'a>(cases: impl IntoIterator<Item = (&'a CaseRecord, &'a RunSettings)>) -> Vec<Difference> {
    // (name, engine, variant when its variables are not known) -> value -> case positions.
    type Key<'a> = (&'a str, &'a str, Option<&'a str>);
    let ok: Vec<(usize, &CaseRecord, &RunSettings)> = cases
        .into_iter()
        .enumerate()
        .filter(|(_, (c, _))| c.outcome.status == CaseStatus::Ok)
        .map(|(i, (c, r))| (i, c, r))
        .collect();
    let mut names: Vec<&str> = ok
        .iter()
        .flat_map(|(_, c, _)| user_env(&c.outcome.env).map(|(k, _)| k.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut seen: BTreeMap<Key, BTreeMap<Option<&str>, Vec<usize>>> = BTreeMap::new();
    for &(i, c, run) in &ok {
        let variant = c.settings.env_variant.as_str();
        let sets = (!run.env_variants.is_empty()).then(|| run.env_variants.get(variant));
        let fresh = c.settings.knobs.miopen_db == MiopenDb::Fresh;
        let env: BTreeMap<&str, &str> = user_env(&c.outcome.env)
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        for &name in &names {
            let value = env.get(name).copied();
            // A name no reported prefix covers was recorded only by the parts asked to
            // (`WAN_VAE_BENCH_RECORD_ENV`, a variant's names): absent, it was not recorded,
            // which says nothing of its value.
            if value.is_none() && !is_reported(name) {
                continue;
            }
            let own = name.starts_with("WAN_VAE_BENCH_") || (fresh && FRESH_DB_VARS.contains(&name));
            let variant_sets = match sets {
                Some(set) => set.is_some_and(|s| s.iter().any(|n| n == name)),
                None => false,
            };
            if own || variant_sets {
                continue;
            }
            let key = (name, c.settings.engine.name(), sets.is_none().then_some(variant));
            seen.entry(key).or_default().entry(value).or_default().push(i);
        }
    }
    let mut out: Vec<Difference> = Vec::new();
    for ((name, _, _), values) in seen.into_iter().filter(|(_, v)| v.len() > 1) {
        let values: Vec<(Option<String>, Vec<usize>)> =
            values.into_iter().map(|(v, at)| (v.map(String::from), at)).collect();
        // One entry per variable: the values of every engine and variant that differ.
        match out.iter_mut().find(|d| d.name == name) {
            Some(d) => {
                for (v, at) in values {
                    match d.values.iter_mut().find(|(x, _)| *x == v) {
                        Some((_, all)) => all.extend(at),
                        None => d.values.push((v, at)),
                    }
                }
            }
            None => out.push(Difference {
                name: name.to_string(),
                values,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_scratch_paths_are_told_from_the_users() {
        assert!(is_own_path(
            "HIPBLASLT_LOG_FILE",
            "/tmp/wan-vae-bench-Ab3dE9/hipblaslt-0a1b2c3d4e5f-%i.log"
        ));
        assert!(is_own_path(
            "MIOPEN_USER_DB_PATH",
            "/var/tmp/x/wan-vae-bench-zzzzzz/miopen-fp32-chunk1-0123456789abcdef"
        ));
        // The user's own paths, and other variables, stay.
        for (k, v) in [
            ("HIPBLASLT_LOG_FILE", "/home/me/hipblaslt-%i.log"),
            ("HIPBLASLT_LOG_FILE", "/tmp/wan-vae-bench-results/hipblaslt-1.log"),
            ("HIPBLASLT_LOG_FILE", "/tmp/wan-vae-bench-Ab3dE9/mine.log"),
            ("MIOPEN_USER_DB_PATH", "/tmp/wan-vae-bench-Ab3dE9/hipblaslt-x"),
            ("RAYON_NUM_THREADS", "/tmp/wan-vae-bench-Ab3dE9/miopen-x"),
        ] {
            assert!(!is_own_path(k, v), "{k}={v}");
        }
    }

    fn case(variant: &str, engine: crate::report::values::Engine, env: &[(&str, &str)]) -> CaseRecord {
        let settings = crate::report::settings::CaseSettings {
            engine,
            precision: crate::model::Precision::Fp32,
            chunk: 1,
            tiling: None,
            frames: 5,
            width: 64,
            height: 64,
            env_variant: variant.into(),
            knobs: Default::default(),
            passes: Default::default(),
            temporal_tile: None,
            layout: Default::default(),
            conv3d: Default::default(),
        };
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        super::super::testing::case(settings, super::super::Outcome::new(CaseStatus::Ok, None, env))
    }

    #[test]
    fn differences_are_the_shells_not_the_variants_nor_the_tools() {
        use crate::report::values::Engine::{Candle, Torch};
        let run = RunSettings {
            env_variants: [
                ("baseline".to_string(), vec![]),
                ("fast".to_string(), vec!["MIOPEN_FIND_MODE".into()]),
            ]
            .into(),
            ..Default::default()
        };
        let scratch = |i: usize| format!("/tmp/wan-vae-bench-abcde{i}/hipblaslt-0a1b2c-%i.log");
        let (s1, s2) = (scratch(1), scratch(2));
        let cases = [
            case(
                "baseline",
                Candle,
                &[("RAYON_NUM_THREADS", "1"), ("HIPBLASLT_LOG_FILE", &s1)],
            ),
            case("fast", Candle, &[("RAYON_NUM_THREADS", "2"), ("MIOPEN_FIND_MODE", "2")]),
            case(
                "baseline",
                Candle,
                &[("RAYON_NUM_THREADS", "1"), ("HIPBLASLT_LOG_FILE", &s2)],
            ),
            // Another engine's worker sets its own (torch sets CUDA_MODULE_LOADING).
            case(
                "baseline",
                Torch,
                &[("RAYON_NUM_THREADS", "1"), ("CUDA_MODULE_LOADING", "LAZY")],
            ),
        ];
        let d = differences(cases.iter().map(|c| (c, &run)));
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].name, "RAYON_NUM_THREADS");
        assert_eq!(d[0].text(), "RAYON_NUM_THREADS (1; 2)");
        assert_eq!(
            d[0].values,
            // The torch case agrees with itself: only candle's differ.
            vec![(Some("1".into()), vec![0, 2]), (Some("2".into()), vec![1])]
        );
        // Alike but for the variant's own variable and the tool's paths: none.
        let alike = [&cases[0], &cases[2]].map(|c| {
            let mut c = c.clone();
            c.outcome.env.insert("RAYON_NUM_THREADS".into(), "1".into());
            c
        });
        assert!(differences(alike.iter().map(|c| (c, &run))).is_empty());
        let mut fast = cases[1].clone();
        fast.outcome.env.insert("RAYON_NUM_THREADS".into(), "1".into());
        assert!(differences([(&cases[0], &run), (&fast, &run)]).is_empty());
        // A run that did not record its variants: compared within each variant only; and a
        // case that is not `ok` is not compared.
        let old = RunSettings::default();
        assert!(differences([(&cases[0], &old), (&cases[1], &old)]).is_empty());
        assert_eq!(differences([(&cases[0], &old), (&fast, &old)]).len(), 0);
        let mut other = cases[0].clone();
        other.outcome.env.insert("RAYON_NUM_THREADS".into(), "4".into());
        assert_eq!(differences([(&cases[0], &old), (&other, &old)]).len(), 1);
        other.outcome.status = CaseStatus::Failed;
        assert!(differences([(&cases[0], &old), (&other, &old)]).is_empty());
        // Unset is a value.
        let mut unset = cases[0].clone();
        unset.outcome.env.remove("RAYON_NUM_THREADS");
        assert_eq!(
            differences([(&cases[0], &run), (&unset, &run)])[0].text(),
            "RAYON_NUM_THREADS (unset; 1)"
        );
    }

    #[test]
    fn a_variable_one_part_did_not_record_is_not_called_unset_there() {
        // Second reading of issues 58/55, 1.5: a part run with WAN_VAE_BENCH_RECORD_ENV=MY_VAR
        // recorded MY_VAR, one run without did not: "unset" there was invented, and merge
        // refused.
        use crate::report::values::Engine::Candle;
        let run = RunSettings {
            env_variants: [("baseline".to_string(), vec![])].into(),
            ..Default::default()
        };
        let with = case("baseline", Candle, &[("MY_VAR", "1"), ("RAYON_NUM_THREADS", "2")]);
        let without = case("baseline", Candle, &[("RAYON_NUM_THREADS", "2")]);
        assert!(differences([(&with, &run), (&without, &run)]).is_empty());
        // A reported prefix's variable is recorded by every part: unset is a value there.
        let unset = case("baseline", Candle, &[("MY_VAR", "1")]);
        assert_eq!(
            differences([(&with, &run), (&unset, &run)])[0].text(),
            "RAYON_NUM_THREADS (unset; 2)"
        );
    }
}
