//! `run --env-var NAME=V1,V2,...`: environment sweeps from the command line, as hyperfine's
//! `--parameter-list` does for commands. Each flag names one variable and its values
//! (`@unset` for "absent from the worker's environment"); several flags make their
//! product. Every combination becomes an env variant named after its values
//! (`MIOPEN_FIND_MODE=2+MIOPEN_DEBUG_CONV_DIRECT=0`), added to the `env` axis next to
//! `baseline` (the parent's environment, unchanged).
//!
//! Must not: run anything or read files; `options` merges the variants into the run.
use std::collections::{BTreeMap, BTreeSet};

/// The value that sweeps a variable's absence: the worker's environment lacks it, even
/// when the parent's shell exports it.
pub const UNSET: &str = "@unset";

/// One `--env-var` flag: a variable and the values it takes (`None`: unset).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvSweep {
    /// The variable's name.
    pub name: String,
    /// Its values, in the order given, each once; `None` is [`UNSET`].
    pub values: Vec<Option<String>>,
}

/// One combination of the sweeps: an env variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// `NAME=VALUE` per variable, joined by `+`, in flag order.
    pub name: String,
    /// Variables set for the worker.
    pub set: BTreeMap<String, String>,
    /// Variables removed from the worker's environment.
    pub unset: BTreeSet<String>,
}

/// Parse `NAME=V1,V2,...` (the value of one `--env-var`). `NAME=` alone sweeps the empty
/// string; a value may not hold a comma (write such a variant as an `[env.NAME]` table).
pub fn parse_flag(text: &str) -> Result<EnvSweep, String> {
    let Some((name, list)) = text.split_once('=') else {
        return Err(format!(
            "`{text}` has no `=`: expected NAME=VALUE1,VALUE2,... (e.g. MIOPEN_FIND_MODE=1,2,{UNSET})"
        ));
    };
    if name.is_empty() || name.contains('\0') || name.chars().any(char::is_whitespace) {
        return Err(format!(
            "variable name `{name}` in `{text}`: a name that is not empty, without spaces or NUL bytes"
        ));
    }
    let mut values = Vec::new();
    if list.contains(',') && list.split(',').any(str::is_empty) {
        return Err(format!(
            "`{text}` has an empty value (a stray comma?): list non-empty values, or write `{name}=` alone to \
             sweep the empty string"
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for v in list.split(',') {
        if v.contains('\0') {
            return Err(format!(
                "a value of {name} holds a NUL byte (the environment cannot hold it)"
            ));
        }
        let value = (v != UNSET).then(|| v.to_string());
        if !seen.insert(value.clone()) {
            return Err(format!("value `{v}` of {name} is given twice: give each value once"));
        }
        values.push(value);
    }
    Ok(EnvSweep {
        name: name.to_string(),
        values,
    })
}

/// How many variants `sweeps` make (the product of their value counts), counted before any
/// is built; `None` when the product overflows a u64.
pub fn count(sweeps: &[EnvSweep]) -> Option<u64> {
    sweeps
        .iter()
        .try_fold(1u64, |n, s| n.checked_mul(u64::try_from(s.values.len()).ok()?))
}

/// Refuse sweeps whose product exceeds `max_cases` (every variant is at least one case),
/// before anything is allocated: the error names the flags' value counts and the way out.
pub fn check_count(sweeps: &[EnvSweep], max_cases: u64) -> Result<(), String> {
    if sweeps.is_empty() {
        return Ok(());
    }
    let sizes: Vec<String> = sweeps
        .iter()
        .map(|s| format!("{} values of {}", s.values.len(), s.name))
        .collect();
    match count(sweeps) {
        Some(n) if n <= max_cases => Ok(()),
        n => Err(format!(
            "--env-var: the sweep makes {} env variants ({}), each at least one case, more than the limit of \
             {max_cases} cases; sweep fewer values, or raise the limit with --max-cases",
            n.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string()),
            sizes.join(" x ")
        )),
    }
}

/// Every combination of `sweeps` (the last flag varying fastest), as env variants. A
/// variable swept by two flags is an error naming it.
pub fn variants(sweeps: &[EnvSweep]) -> Result<Vec<Variant>, String> {
    let mut names = BTreeSet::new();
    for s in sweeps {
        if !names.insert(s.name.as_str()) {
            return Err(format!(
                "--env-var {} is given twice: list all its values in one flag (NAME=V1,V2)",
                s.name
            ));
        }
    }
    let mut out = vec![Variant {
        name: String::new(),
        set: BTreeMap::new(),
        unset: BTreeSet::new(),
    }];
    for s in sweeps {
        let mut next = Vec::with_capacity(out.len() * s.values.len());
        for v in &out {
            for value in &s.values {
                let mut w = v.clone();
                let part = format!("{}={}", s.name, value.as_deref().unwrap_or(UNSET));
                w.name = if w.name.is_empty() {
                    part
                } else {
                    format!("{}+{part}", w.name)
                };
                match value {
                    Some(x) => {
                        w.set.insert(s.name.clone(), x.clone());
                    }
                    None => {
                        w.unset.insert(s.name.clone());
                    }
                }
                next.push(w);
            }
        }
        out = next;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_and_make_their_product_named_after_the_values() {
        let a = parse_flag("MIOPEN_FIND_MODE=1,2,@unset").unwrap();
        assert_eq!(a.values, [Some("1".into()), Some("2".into()), None]);
        let b = parse_flag("NAIVE=0,1").unwrap();
        let v = variants(&[a, b]).unwrap();
        assert_eq!(v.len(), 6);
        assert_eq!(v[0].name, "MIOPEN_FIND_MODE=1+NAIVE=0");
        assert_eq!(v[5].name, "MIOPEN_FIND_MODE=@unset+NAIVE=1");
        assert!(v[5].unset.contains("MIOPEN_FIND_MODE") && v[5].set["NAIVE"] == "1");
        assert_eq!(parse_flag("E=").unwrap().values, [Some(String::new())]);
    }

    #[test]
    fn bad_flags_say_what_would_be_valid() {
        assert!(parse_flag("MIOPEN_FIND_MODE")
            .unwrap_err()
            .contains("NAME=VALUE1,VALUE2"));
        assert!(parse_flag("=1").unwrap_err().contains("not empty"));
        assert!(parse_flag("A=1,1").unwrap_err().contains("twice"));
        assert!(parse_flag("A=1,").unwrap_err().contains("stray comma"));
        assert!(parse_flag("A=,1").unwrap_err().contains("empty value"));
        // Counted before anything is built: 10^80 variants are refused at once.
        let huge: Vec<EnvSweep> = (0..80)
            .map(|i| parse_flag(&format!("V{i}=0,1,2,3,4,5,6,7,8,9")).unwrap())
            .collect();
        assert_eq!(count(&huge), None);
        let e = check_count(&huge, 10_000).unwrap_err();
        assert!(
            e.contains("more than 2^64") && e.contains("--max-cases") && e.contains("10 values of V0"),
            "{e}"
        );
        assert_eq!(count(&huge[..4]), Some(10_000));
        assert!(check_count(&huge[..4], 10_000).is_ok() && check_count(&huge[..5], 10_000).is_err());
        let twice = [parse_flag("A=1").unwrap(), parse_flag("A=2").unwrap()];
        assert!(variants(&twice).unwrap_err().contains("--env-var A is given twice"));
    }
}
