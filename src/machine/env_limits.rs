//! Whether a worker process can be started with an env variant's variables at all. The
//! kernel refuses to start a process (E2BIG, "Argument list too long") when one environment
//! string is longer than `MAX_ARG_STRLEN` (Linux: 128 KiB, counting `NAME=value` and its
//! final NUL), or when its environment and arguments together exceed `ARG_MAX`
//! (`sysconf(_SC_ARG_MAX)`, a quarter of the stack limit on Linux). [`check_variants`] checks
//! both once, before any case, so that a variant too large is one exit 2 naming the variable
//! and the limit, not the same failure in every case of the variant.
//!
//! Must not: start processes or know the matrix: it gets the variants as name -> variables.
use std::collections::BTreeMap;

use crate::util::error::UserError;

/// Linux's `MAX_ARG_STRLEN` (32 pages of 4 KiB): the longest argument or environment
/// string, its final NUL included.
pub const MAX_ARG_STRLEN: usize = 128 * 1024;

/// Room kept for what the executor adds to every worker: its arguments (the case as JSON,
/// the result path), the padding variable (< 4 KiB) and the MIOpen database variables.
pub const RESERVED_BYTES: usize = 64 * 1024;

/// Refuse (exit 2) an env variant whose variables no process could be started with: one
/// variable longer than [`MAX_ARG_STRLEN`] (on Linux), or the whole environment a worker of
/// the variant would get (this process's, with the variant's on top) over `ARG_MAX` less
/// [`RESERVED_BYTES`].
pub fn check_variants(variants: &BTreeMap<String, BTreeMap<String, String>>) -> Result<(), UserError> {
    let parent: Vec<(String, usize)> = std::env::vars_os()
        .map(|(k, v)| (k.to_string_lossy().into_owned(), entry_bytes(k.len(), v.len())))
        .collect();
    for (name, vars) in variants {
        if cfg!(target_os = "linux") {
            if let Some((key, value)) = vars.iter().find(|(k, v)| k.len() + 1 + v.len() + 1 > MAX_ARG_STRLEN) {
                return Err(UserError::Other(format!(
                    "variable {key} of env variant {name:?} is {} bytes as {key}=VALUE, over Linux's limit of \
                     {MAX_ARG_STRLEN} bytes (128 KiB, MAX_ARG_STRLEN, counting the final NUL) for one environment \
                     string: no worker could be started with it; shorten the value (a long list can go in a file)",
                    key.len() + 1 + value.len()
                )));
            }
        }
        let Some(limit) = arg_max() else {
            continue;
        };
        let inherited: usize = parent
            .iter()
            .filter(|(k, _)| !vars.contains_key(k))
            .map(|(_, n)| n)
            .sum();
        let own: usize = vars.iter().map(|(k, v)| entry_bytes(k.len(), v.len())).sum();
        let total = inherited + own + RESERVED_BYTES;
        if total > limit {
            return Err(UserError::Other(format!(
                "env variant {name:?}: a worker's environment would take {} bytes ({inherited} from this \
                 process's environment, {own} from the variant's {} variable(s), {RESERVED_BYTES} kept for the \
                 worker's arguments), over this system's limit of {limit} bytes for a new process's arguments \
                 and environment (ARG_MAX): no worker could be started; shorten or drop variables",
                total,
                vars.len()
            )));
        }
    }
    Ok(())
}

/// What one `NAME=value` costs a new process: the string, its NUL and its pointer.
fn entry_bytes(key: usize, value: usize) -> usize {
    key + 1 + value + 1 + std::mem::size_of::<usize>()
}

/// `sysconf(_SC_ARG_MAX)`; `None` when unknown (or not unix).
fn arg_max() -> Option<usize> {
    #[cfg(unix)]
    {
        // SAFETY: sysconf has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_ARG_MAX) };
        usize::try_from(n).ok().filter(|&n| n > 0)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variant(vars: &[(&str, usize)]) -> BTreeMap<String, BTreeMap<String, String>> {
        let vars = vars.iter().map(|(k, n)| (k.to_string(), "v".repeat(*n))).collect();
        BTreeMap::from([("v".to_string(), vars)])
    }

    #[test]
    fn one_string_up_to_the_limit_passes_and_one_byte_more_does_not() {
        // `K=` (2 bytes) + value + NUL = MAX_ARG_STRLEN exactly.
        check_variants(&variant(&[("K", MAX_ARG_STRLEN - 3)])).unwrap();
        if cfg!(target_os = "linux") {
            let e = check_variants(&variant(&[("K", MAX_ARG_STRLEN - 2)]))
                .unwrap_err()
                .to_string();
            assert!(e.contains("variable K of env variant \"v\" is 131072 bytes"), "{e}");
            // The kernel agrees: the longest accepted string starts a process, one byte more does not.
            let start = |n: usize| std::process::Command::new("true").env("K", "v".repeat(n)).status();
            assert!(start(MAX_ARG_STRLEN - 3).is_ok_and(|s| s.success()));
            let e = start(MAX_ARG_STRLEN - 2).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::E2BIG), "{e}");
        }
    }

    #[test]
    fn the_whole_environment_is_bounded_too() {
        let Some(limit) = arg_max().filter(|&l| l < 1 << 26) else {
            return;
        };
        let n = limit / 100_000 + 2;
        let names: Vec<String> = (0..n).map(|i| format!("V{i}")).collect();
        let vars: Vec<(&str, usize)> = names.iter().map(|k| (k.as_str(), 100_000)).collect();
        let e = check_variants(&variant(&vars)).unwrap_err().to_string();
        assert!(
            e.contains(&format!("limit of {limit} bytes")) && e.contains("ARG_MAX"),
            "{e}"
        );
    }
}
