//! SHA-256 of weight files, cached in a JSON sidecar keyed by (canonical path, size, mtime)
//! so a 508 MB checkpoint is hashed once, not on every run.
//!
//! The cache lives in `$WAN_VAE_BENCH_CACHE_DIR/sha256.json`, else
//! `$XDG_CACHE_HOME/wan-vae-bench/sha256.json`, else `~/.cache/wan-vae-bench/sha256.json`.
//! It is only an optimisation: an unreadable or corrupt cache is ignored and rewritten, a
//! cache that cannot be written is skipped silently, and an entry whose size or mtime no
//! longer matches the file is recomputed.
//!
//! Owns hashing and the sidecar; must not decide where the cache lives beyond the lookup
//! order above (the caller passes the directory).
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Name of the sidecar file inside the cache directory.
pub const CACHE_FILE: &str = "sha256.json";

/// One cached digest: valid while the file keeps this size and mtime.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct Entry {
    size: u64,
    mtime_ns: u64,
    sha256: String,
}

/// The cache directory from an environment lookup (see the module docs); `None` when no
/// home directory is known.
pub fn cache_dir_from(lookup: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let nonempty = |k: &str| lookup(k).filter(|v| !v.trim().is_empty());
    if let Some(dir) = nonempty("WAN_VAE_BENCH_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(xdg) = nonempty("XDG_CACHE_HOME") {
        return Some(PathBuf::from(xdg).join("wan-vae-bench"));
    }
    let home = nonempty("HOME").map(PathBuf::from).or_else(std::env::home_dir)?;
    Some(home.join(".cache").join("wan-vae-bench"))
}

/// SHA-256 (lowercase hex) of `path`, cached in `cache_dir` (no caching when `None`).
pub fn sha256_cached_in(path: &Path, cache_dir: Option<&Path>) -> anyhow::Result<String> {
    let canonical = std::fs::canonicalize(path).with_context(|| format!("cannot open {}", path.display()))?;
    let meta = std::fs::metadata(&canonical).with_context(|| format!("cannot stat {}", path.display()))?;
    let size = meta.len();
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let key = canonical.to_string_lossy().into_owned();
    let Some(dir) = cache_dir else {
        return sha256_file(&canonical);
    };
    let cache_path = dir.join(CACHE_FILE);
    if let Some(entry) = read_cache(&cache_path).get(&key) {
        if entry.size == size && entry.mtime_ns == mtime_ns && is_hex64(&entry.sha256) {
            return Ok(entry.sha256.clone());
        }
    }
    let sha256 = sha256_file(&canonical)?;
    // Re-read just before writing so concurrent writers lose as little as possible.
    let mut cache = read_cache(&cache_path);
    cache.insert(
        key,
        Entry {
            size,
            mtime_ns,
            sha256: sha256.clone(),
        },
    );
    let _ = write_cache(dir, &cache_path, &cache);
    Ok(sha256)
}

/// SHA-256 (lowercase hex) of a file, no caching.
pub fn sha256_file(path: &Path) -> anyhow::Result<String> {
    let mut file = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(to_hex(&hasher.finalize()))
}

/// True for a 64-character hex string (what a SHA-256 looks like).
pub fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn read_cache(path: &Path) -> BTreeMap<String, Entry> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

fn write_cache(dir: &Path, path: &Path, cache: &BTreeMap<String, Entry>) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!("{CACHE_FILE}.tmp{}", std::process::id()));
    std::fs::write(&tmp, serde_json::to_string_pretty(cache)?)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digest_and_cache_hit_and_invalidation() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let file = dir.path().join("f.bin");
        std::fs::write(&file, b"abc").unwrap();
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(sha256_cached_in(&file, Some(&cache)).unwrap(), abc);
        assert!(cache.join(CACHE_FILE).exists());

        // A hit is served from the sidecar: poison the entry and see it come back.
        let key = std::fs::canonicalize(&file).unwrap().to_string_lossy().into_owned();
        let mut map = read_cache(&cache.join(CACHE_FILE));
        map.get_mut(&key).unwrap().sha256 = "0".repeat(64);
        write_cache(&cache, &cache.join(CACHE_FILE), &map).unwrap();
        assert_eq!(sha256_cached_in(&file, Some(&cache)).unwrap(), "0".repeat(64));

        // A size change invalidates it.
        std::fs::write(&file, b"abcd").unwrap();
        let abcd = "88d4266fd4e6338d13b845fcf289579d209c897823b9217da3e161936f031589";
        assert_eq!(sha256_cached_in(&file, Some(&cache)).unwrap(), abcd);
    }

    #[test]
    fn corrupt_cache_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CACHE_FILE), "not json").unwrap();
        let file = dir.path().join("f.bin");
        std::fs::write(&file, b"abc").unwrap();
        assert!(sha256_cached_in(&file, Some(dir.path()))
            .unwrap()
            .starts_with("ba7816bf"));
    }

    #[test]
    fn cache_dir_lookup_order() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        let f = env(&[
            ("WAN_VAE_BENCH_CACHE_DIR", "/a"),
            ("XDG_CACHE_HOME", "/x"),
            ("HOME", "/h"),
        ]);
        assert_eq!(cache_dir_from(&f), Some(PathBuf::from("/a")));
        let f = env(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")]);
        assert_eq!(cache_dir_from(&f), Some(PathBuf::from("/x/wan-vae-bench")));
        let f = env(&[("HOME", "/h")]);
        assert_eq!(cache_dir_from(&f), Some(PathBuf::from("/h/.cache/wan-vae-bench")));
    }
}
