//! Tests of weight references and Hugging Face Hub resolution through the library API.
//! No test touches the network: caches are built in temp dirs, and the download tests talk
//! to a fake Hub on 127.0.0.1 run by the test itself. Settings are passed explicitly, so no
//! test changes process environment variables.
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::util::cli::fixture;
use sha2::{Digest, Sha256};
use wan_vae_bench::weights::source::{self, HubSettings, ResolvedWeights};
use wan_vae_bench::weights::WeightsSource;

const REPO: &str = "Wan-AI/Wan2.1-T2V-1.3B";
const REPO_DIR: &str = "models--Wan-AI--Wan2.1-T2V-1.3B";
const FILE: &str = "Wan2.1_VAE.pth";
const SHA_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const SHA_B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A Hub cache with the tiny `.pth` as snapshot `SHA_A` (refs/main) and the tiny
/// `.safetensors` bytes under the same name as snapshot `SHA_B` (refs/v2).
fn fake_cache() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join(REPO_DIR);
    for (sha, src) in [
        (SHA_A, "wan21_tiny.weights.pth"),
        (SHA_B, "wan21_tiny.weights.safetensors"),
    ] {
        let snap = repo.join("snapshots").join(sha);
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::copy(fixture(src), snap.join(FILE)).unwrap();
    }
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), SHA_A).unwrap();
    std::fs::write(repo.join("refs/v2"), format!("{SHA_B}\n")).unwrap();
    dir
}

fn settings(cache: &Path, digest: &Path) -> HubSettings {
    HubSettings {
        digest_cache_dir: Some(digest.to_path_buf()),
        ..HubSettings::offline_cache(cache)
    }
}

fn snapshot(cache: &Path, sha: &str) -> PathBuf {
    cache.join(REPO_DIR).join("snapshots").join(sha).join(FILE)
}

#[test]
fn preset_and_hf_form_resolve_from_cache_offline() {
    let cache = fake_cache();
    let digest = tempfile::tempdir().unwrap();
    let s = settings(cache.path(), digest.path());
    let want_sha = sha256_hex(&std::fs::read(fixture("wan21_tiny.weights.pth")).unwrap());
    for reference in [
        "wan2.1",
        "hf://Wan-AI/Wan2.1-T2V-1.3B/Wan2.1_VAE.pth",
        "hf://Wan-AI/Wan2.1-T2V-1.3B/Wan2.1_VAE.pth@main",
    ] {
        let r = source::resolve_with(reference, &s).unwrap();
        let path = snapshot(cache.path(), SHA_A);
        assert_eq!(r.source, WeightsSource::File(path.clone()), "{reference}");
        let m = &r.info;
        assert_eq!(m.source, reference);
        assert_eq!(m.repo.as_deref(), Some(REPO));
        assert_eq!(m.file.as_deref(), Some(FILE));
        assert_eq!(m.revision.as_deref(), Some(SHA_A));
        assert_eq!(m.local_path.as_deref(), Some(path.to_str().unwrap()));
        assert_eq!(m.file_size_bytes, Some(std::fs::metadata(&path).unwrap().len()));
        assert_eq!(m.sha256.as_deref(), Some(want_sha.as_str()));
        // Left for the loader.
        assert_eq!((m.on_disk_dtype.as_str(), m.params, m.dim, m.z_dim), ("", 0, 0, 0));
    }
    assert!(digest.path().join("sha256.json").is_file(), "digest cached");
}

#[cfg(unix)]
#[test]
fn symlinked_blob_layout_resolves() {
    // What huggingface_hub and hf-hub write: snapshots/<sha>/<file> -> ../../blobs/<sha256>.
    let cache = tempfile::tempdir().unwrap();
    let digest = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture("wan21_tiny.weights.pth")).unwrap();
    let sha = sha256_hex(&bytes);
    let repo = cache.path().join(REPO_DIR);
    std::fs::create_dir_all(repo.join("blobs")).unwrap();
    std::fs::write(repo.join("blobs").join(&sha), &bytes).unwrap();
    std::fs::create_dir_all(repo.join("snapshots").join(SHA_A)).unwrap();
    std::os::unix::fs::symlink(format!("../../blobs/{sha}"), snapshot(cache.path(), SHA_A)).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), SHA_A).unwrap();
    let r = source::resolve_with("wan2.1", &settings(cache.path(), digest.path())).unwrap();
    assert_eq!(r.source, WeightsSource::File(snapshot(cache.path(), SHA_A)));
    assert_eq!(r.info.sha256.as_deref(), Some(sha.as_str()));
    assert_eq!(r.info.file_size_bytes, Some(bytes.len() as u64));
}

#[test]
fn pinned_revision_picks_that_snapshot() {
    let cache = fake_cache();
    let digest = tempfile::tempdir().unwrap();
    let s = settings(cache.path(), digest.path());
    let st_sha = sha256_hex(&std::fs::read(fixture("wan21_tiny.weights.safetensors")).unwrap());
    // By commit sha (no ref needed) and by branch/tag name via refs/<name>.
    for rev in [SHA_B, "v2"] {
        let r = source::resolve_with(&format!("hf://{REPO}/{FILE}@{rev}"), &s).unwrap();
        assert_eq!(r.source, WeightsSource::File(snapshot(cache.path(), SHA_B)));
        assert_eq!(r.info.revision.as_deref(), Some(SHA_B));
        assert_eq!(r.info.sha256.as_deref(), Some(st_sha.as_str()));
    }
    let r = source::resolve_with(&format!("hf://{REPO}/{FILE}@{SHA_A}"), &s).unwrap();
    assert_eq!(r.info.revision.as_deref(), Some(SHA_A));
}

#[test]
fn offline_miss_fails_fast_with_a_clear_message() {
    let cache = fake_cache();
    let digest = tempfile::tempdir().unwrap();
    let s = settings(cache.path(), digest.path());
    let cases = [
        (
            "wan2.1-comfy",
            "Comfy-Org/Wan_2.1_ComfyUI_repackaged",
            "split_files/vae/wan_2.1_vae.safetensors",
        ),
        ("hf://Wan-AI/Wan2.1-T2V-1.3B/other.pth", REPO, "other.pth"),
        ("hf://Wan-AI/Wan2.1-T2V-1.3B/Wan2.1_VAE.pth@nope", REPO, FILE),
        (
            "hf://Wan-AI/Wan2.1-T2V-1.3B/Wan2.1_VAE.pth@cccccccccccccccccccccccccccccccccccccccc",
            REPO,
            FILE,
        ),
    ];
    for (reference, repo, file) in cases {
        let t = Instant::now();
        let err = source::resolve_with(reference, &s).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(2));
        assert!(err.downcast_ref::<wan_vae_bench::util::error::UserError>().is_some());
        let msg = format!("{err:#}");
        for needle in [
            repo,
            file,
            cache.path().to_str().unwrap(),
            "HF_HUB_OFFLINE",
            "huggingface-cli download",
            "local file",
        ] {
            assert!(msg.contains(needle), "{reference}: {needle:?} missing from:\n{msg}");
        }
    }
    // A missing ref lists the snapshots that do have the file.
    let msg = format!(
        "{:#}",
        source::resolve_with(&format!("hf://{REPO}/{FILE}@nope"), &s).unwrap_err()
    );
    assert!(msg.contains(SHA_A) && msg.contains(SHA_B), "{msg}");
}

#[test]
fn no_exist_marker_and_broken_link_are_explained() {
    let cache = fake_cache();
    let digest = tempfile::tempdir().unwrap();
    let s = settings(cache.path(), digest.path());
    let marker = cache
        .path()
        .join(REPO_DIR)
        .join(".no_exist")
        .join(SHA_A)
        .join("gone.pth");
    std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
    std::fs::write(&marker, "").unwrap();
    let msg = format!(
        "{:#}",
        source::resolve_with(&format!("hf://{REPO}/gone.pth"), &s).unwrap_err()
    );
    assert!(msg.contains("does not exist"), "{msg}");

    #[cfg(unix)]
    {
        let link = cache
            .path()
            .join(REPO_DIR)
            .join("snapshots")
            .join(SHA_A)
            .join("broken.pth");
        std::os::unix::fs::symlink("../../blobs/missing", &link).unwrap();
        let msg = format!(
            "{:#}",
            source::resolve_with(&format!("hf://{REPO}/broken.pth"), &s).unwrap_err()
        );
        assert!(msg.contains("broken link"), "{msg}");
    }
}

#[test]
fn synthetic_and_local_paths() {
    let digest = tempfile::tempdir().unwrap();
    let s = settings(Path::new("/nonexistent-cache"), digest.path());
    let r = source::resolve_with("synthetic", &s).unwrap();
    assert_eq!(r.source, WeightsSource::Synthetic { seed: 0 });
    assert_eq!(r.info.source, "synthetic");
    assert!(r.info.sha256.is_none() && r.info.local_path.is_none() && r.info.repo.is_none());

    let path = fixture("wan21_tiny.weights.safetensors");
    let r = source::resolve_with(path.to_str().unwrap(), &s).unwrap();
    assert_eq!(r.source, WeightsSource::File(path.clone()));
    assert_eq!(r.info.file_size_bytes, Some(std::fs::metadata(&path).unwrap().len()));
    assert_eq!(r.info.sha256.as_deref().map(str::len), Some(64));
    assert!(r.info.repo.is_none() && r.info.revision.is_none());

    // A relative path comes back absolute (workers may run elsewhere); tests run in the
    // package root.
    let r = source::resolve_with("Cargo.toml", &s).unwrap();
    let abs = std::path::absolute("Cargo.toml").unwrap();
    assert_eq!(r.source, WeightsSource::File(abs.clone()));
    assert_eq!(r.info.source, "Cargo.toml");
    assert_eq!(r.info.local_path.as_deref(), abs.to_str());

    let err = format!("{:#}", source::resolve_with("no/such/file.pth", &s).unwrap_err());
    assert!(
        err.contains("no/such/file.pth") && err.contains("synthetic") && err.contains("hf://"),
        "{err}"
    );
    let err = format!(
        "{:#}",
        source::resolve_with(env!("CARGO_MANIFEST_DIR"), &s).unwrap_err()
    );
    assert!(err.contains("not a file"), "{err}");
}

#[test]
fn sha256_cached_matches_and_is_reused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("w.pth");
    std::fs::copy(fixture("wan21_tiny.weights.pth"), &file).unwrap();
    let want = sha256_hex(&std::fs::read(&file).unwrap());
    let cache = dir.path().join("c");
    assert_eq!(source::sha256_cached_in(&file, Some(&cache)).unwrap(), want);
    let text = std::fs::read_to_string(cache.join("sha256.json")).unwrap();
    assert!(text.contains(&want));
    assert_eq!(source::sha256_cached_in(&file, Some(&cache)).unwrap(), want);
    // Rewriting the file (new size) forces a re-hash.
    std::fs::write(&file, b"abc").unwrap();
    assert_eq!(
        source::sha256_cached_in(&file, Some(&cache)).unwrap(),
        sha256_hex(b"abc")
    );
}

#[test]
fn settings_follow_python_environment_rules() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_str().unwrap().to_string();
    let env =
        |pairs: Vec<(&'static str, String)>| move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());

    let s = HubSettings::from_lookup(&env(vec![("HOME", h.clone())]));
    assert_eq!(s.cache_dir, home.path().join(".cache/huggingface/hub"));
    assert!(!s.offline && s.token.is_none());
    assert_eq!(s.endpoint, "https://huggingface.co");
    assert_eq!(s.digest_cache_dir, Some(home.path().join(".cache/wan-vae-bench")));

    let s = HubSettings::from_lookup(&env(vec![("HOME", h.clone()), ("HF_HOME", format!("{h}/hf"))]));
    assert_eq!(s.cache_dir, home.path().join("hf/hub"));
    let s = HubSettings::from_lookup(&env(vec![
        ("HOME", h.clone()),
        ("HF_HOME", format!("{h}/hf")),
        ("HF_HUB_CACHE", "~/hubcache".into()),
    ]));
    assert_eq!(s.cache_dir, home.path().join("hubcache"));
    let s = HubSettings::from_lookup(&env(vec![("HOME", h.clone()), ("XDG_CACHE_HOME", format!("{h}/xdg"))]));
    assert_eq!(s.cache_dir, home.path().join("xdg/huggingface/hub"));

    for (v, want) in [
        ("1", true),
        ("true", true),
        ("YES", true),
        ("on", true),
        ("0", false),
        ("false", false),
        ("", false),
    ] {
        let s = HubSettings::from_lookup(&env(vec![("HOME", h.clone()), ("HF_HUB_OFFLINE", v.into())]));
        assert_eq!(s.offline, want, "HF_HUB_OFFLINE={v:?}");
    }

    // Token: HF_TOKEN first, else the token file under HF_HOME, else HF_TOKEN_PATH.
    std::fs::create_dir_all(home.path().join("hf")).unwrap();
    std::fs::write(home.path().join("hf/token"), "hf_file\n").unwrap();
    std::fs::write(home.path().join("other_token"), "hf_other\n").unwrap();
    let s = HubSettings::from_lookup(&env(vec![("HOME", h.clone()), ("HF_HOME", format!("{h}/hf"))]));
    assert_eq!(s.token.as_deref(), Some("hf_file"));
    let s = HubSettings::from_lookup(&env(vec![
        ("HOME", h.clone()),
        ("HF_HOME", format!("{h}/hf")),
        ("HF_TOKEN", "hf_env".into()),
    ]));
    assert_eq!(
        (s.token.as_deref(), s.token_origin.as_deref()),
        (Some("hf_env"), Some("HF_TOKEN"))
    );
    let s = HubSettings::from_lookup(&env(vec![
        ("HOME", h.clone()),
        ("HF_HOME", format!("{h}/hf")),
        ("HF_TOKEN_PATH", format!("{h}/other_token")),
    ]));
    assert_eq!(s.token.as_deref(), Some("hf_other"));

    let s = HubSettings::from_lookup(&env(vec![
        ("HOME", h.clone()),
        ("HF_ENDPOINT", "http://mirror.example/".into()),
        ("HF_HUB_ETAG_TIMEOUT", "2.5".into()),
        ("HF_HUB_DOWNLOAD_TIMEOUT", "7".into()),
        ("WAN_VAE_BENCH_CACHE_DIR", format!("{h}/digests")),
    ]));
    assert_eq!(s.endpoint, "http://mirror.example");
    assert_eq!(s.etag_timeout, Duration::from_millis(2500));
    assert_eq!(s.download_timeout, Duration::from_secs(7));
    assert_eq!(s.digest_cache_dir, Some(home.path().join("digests")));
}

#[test]
fn from_env_reads_the_process_environment() {
    // Only reads; never sets variables (tests run in parallel threads).
    let s = HubSettings::from_env();
    if let Ok(dir) = std::env::var("HF_HUB_CACHE") {
        if !dir.is_empty() && !dir.starts_with('~') {
            assert_eq!(s.cache_dir, PathBuf::from(dir));
        }
    }
    assert!(s.cache_dir.ends_with("hub") || std::env::var_os("HF_HUB_CACHE").is_some());
}

// ---------------------------------------------------------------------------------------
// A fake Hub on 127.0.0.1 for the download paths.

#[derive(Clone, Copy)]
enum Behaviour {
    /// Serve `CONTENT` like the Hub (metadata with Range 0-0, then the body).
    Serve,
    /// Answer every request with this status and X-Error-Code.
    Fail(u16, &'static str),
    /// Accept the connection and never answer.
    Silent,
    /// Answer the metadata, then send half the body and stall.
    StallBody,
}

struct FakeHub {
    endpoint: String,
    connections: Arc<AtomicUsize>,
}

const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

fn fake_hub(behaviour: Behaviour, content: Vec<u8>) -> FakeHub {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let count = connections.clone();
    let content = Arc::new(content);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            count.fetch_add(1, Ordering::SeqCst);
            let content = content.clone();
            std::thread::spawn(move || serve(stream, behaviour, &content));
        }
    });
    FakeHub { endpoint, connections }
}

fn serve(mut stream: TcpStream, behaviour: Behaviour, content: &[u8]) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    let _ = reader.read_line(&mut request_line);
    let mut range = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("range") {
                range = Some(v.trim().to_string());
            }
        }
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("").to_string();
    let etag = sha256_hex(content);
    let size = content.len();
    let head = |status: &str, extra: &str, len: usize| {
        format!(
            "HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: {len}\r\nx-repo-commit: {COMMIT}\r\n\
             x-linked-etag: \"{etag}\"\r\netag: \"weak\"\r\n{extra}\r\n"
        )
    };
    match behaviour {
        Behaviour::Silent => {
            std::thread::sleep(Duration::from_secs(30));
        }
        Behaviour::Fail(status, code) => {
            let _ = stream.write_all(
                format!(
                    "HTTP/1.1 {status} Nope\r\nconnection: close\r\ncontent-length: 0\r\nx-error-code: {code}\r\n\
                     x-error-message: fake hub says no\r\n\r\n"
                )
                .as_bytes(),
            );
        }
        Behaviour::Serve | Behaviour::StallBody => {
            assert!(path.ends_with(&format!("/resolve/main/{FILE}")), "{path}");
            if range.as_deref() == Some("bytes=0-0") {
                let h = head(
                    "206 Partial Content",
                    &format!("content-range: bytes 0-0/{size}\r\n"),
                    1,
                );
                let _ = stream.write_all(h.as_bytes());
                let _ = stream.write_all(&content[..1]);
            } else {
                let start: usize = range
                    .as_deref()
                    .and_then(|r| r.strip_prefix("bytes="))
                    .and_then(|r| r.trim_end_matches('-').parse().ok())
                    .unwrap_or(0);
                let body = &content[start..];
                let h = head(
                    "206 Partial Content",
                    &format!("content-range: bytes {start}-{}/{size}\r\n", size - 1),
                    body.len(),
                );
                let _ = stream.write_all(h.as_bytes());
                if matches!(behaviour, Behaviour::StallBody) {
                    let _ = stream.write_all(&body[..body.len() / 2]);
                    let _ = stream.flush();
                    std::thread::sleep(Duration::from_secs(30));
                } else {
                    let _ = stream.write_all(body);
                }
            }
        }
    }
    let _ = stream.flush();
    let mut sink = Vec::new();
    let _ = stream.read_to_end(&mut sink);
}

fn online(cache: &Path, digest: &Path, hub: &FakeHub) -> HubSettings {
    HubSettings {
        offline: false,
        endpoint: hub.endpoint.clone(),
        etag_timeout: Duration::from_secs(2),
        download_timeout: Duration::from_secs(2),
        ..settings(cache, digest)
    }
}

#[test]
fn cache_hit_makes_no_request_even_online() {
    let cache = fake_cache();
    let digest = tempfile::tempdir().unwrap();
    let hub = fake_hub(Behaviour::Fail(500, "x"), Vec::new());
    let r = source::resolve_with("wan2.1", &online(cache.path(), digest.path(), &hub)).unwrap();
    assert_eq!(r.info.revision.as_deref(), Some(SHA_A));
    assert_eq!(hub.connections.load(Ordering::SeqCst), 0);
}

#[test]
fn miss_downloads_into_the_python_cache_layout() {
    let cache = tempfile::tempdir().unwrap();
    let digest = tempfile::tempdir().unwrap();
    let content = std::fs::read(fixture("wan21_tiny.weights.pth")).unwrap();
    let sha = sha256_hex(&content);
    let hub = fake_hub(Behaviour::Serve, content.clone());
    let r: ResolvedWeights = source::resolve_with("wan2.1", &online(cache.path(), digest.path(), &hub)).unwrap();
    let path = snapshot(cache.path(), COMMIT);
    assert_eq!(r.source, WeightsSource::File(path.clone()));
    assert_eq!(std::fs::read(&path).unwrap(), content);
    assert_eq!(r.info.revision.as_deref(), Some(COMMIT));
    assert_eq!(r.info.sha256.as_deref(), Some(sha.as_str()));
    let repo = cache.path().join(REPO_DIR);
    assert_eq!(std::fs::read_to_string(repo.join("refs/main")).unwrap().trim(), COMMIT);
    assert!(repo.join("blobs").join(&sha).is_file(), "blob named by its sha256");
    assert!(hub.connections.load(Ordering::SeqCst) >= 2);

    // Next time it is a cache hit, offline.
    let r2 = source::resolve_with("wan2.1", &settings(cache.path(), digest.path())).unwrap();
    assert_eq!(r2, r);
}

#[test]
fn hub_errors_are_explained() {
    let cases: [(u16, &str, &[&str]); 5] = [
        (404, "RepoNotFound", &["repository not found", "HF_TOKEN"]),
        (401, "", &["repository not found", "HF_TOKEN"]),
        (403, "GatedRepo", &["gated", "accept its conditions", "HF_TOKEN"]),
        (404, "EntryNotFound", &["file not found"]),
        (404, "RevisionNotFound", &["revision"]),
    ];
    for (status, code, needles) in cases {
        let cache = tempfile::tempdir().unwrap();
        let digest = tempfile::tempdir().unwrap();
        let hub = fake_hub(Behaviour::Fail(status, code), Vec::new());
        let t = Instant::now();
        let err = source::resolve_with("wan2.1", &online(cache.path(), digest.path(), &hub)).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(5));
        let msg = format!("{err:#}");
        for needle in needles
            .iter()
            .chain(&[REPO, FILE, cache.path().to_str().unwrap(), "fake hub says no"])
        {
            assert!(msg.contains(needle), "{status} {code}: {needle:?} missing from:\n{msg}");
        }
    }
}

#[test]
fn unreachable_hub_is_a_network_error() {
    // Bind then drop a listener: nothing listens on that port any more.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let cache = tempfile::tempdir().unwrap();
    let digest = tempfile::tempdir().unwrap();
    let s = HubSettings {
        endpoint: format!("http://127.0.0.1:{port}"),
        offline: false,
        ..settings(cache.path(), digest.path())
    };
    let msg = format!("{:#}", source::resolve_with("wan2.1", &s).unwrap_err());
    assert!(
        msg.contains("network error") && msg.contains("HF_HUB_OFFLINE") && msg.contains(REPO),
        "{msg}"
    );
}

#[test]
fn silent_hub_times_out_instead_of_hanging() {
    for behaviour in [Behaviour::Silent, Behaviour::StallBody] {
        let cache = tempfile::tempdir().unwrap();
        let digest = tempfile::tempdir().unwrap();
        let content = std::fs::read(fixture("wan21_tiny.weights.pth")).unwrap();
        let hub = fake_hub(behaviour, content);
        let s = HubSettings {
            etag_timeout: Duration::from_secs(1),
            download_timeout: Duration::from_secs(1),
            ..online(cache.path(), digest.path(), &hub)
        };
        let t = Instant::now();
        let msg = format!("{:#}", source::resolve_with("wan2.1", &s).unwrap_err());
        assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
        assert!(
            msg.contains("timed out") && msg.contains(REPO) && msg.contains(FILE),
            "{msg}"
        );
        let want = if matches!(behaviour, Behaviour::Silent) {
            "HF_HUB_ETAG_TIMEOUT"
        } else {
            "HF_HUB_DOWNLOAD_TIMEOUT"
        };
        assert!(msg.contains(want), "{msg}");
    }
}
