//! Hugging Face Hub access: settings from the environment (as the Python `huggingface_hub`
//! reads them), the on-disk cache layout (lookups with no network at all), and downloads
//! through hf-hub with a progress bar, a watchdog against hangs, and clear errors.
//!
//! Cache layout (shared with Python, ComfyUI, diffusers, `huggingface-cli`):
//! `<cache>/models--OWNER--NAME/refs/<revision>` holds a commit sha;
//! `<cache>/models--OWNER--NAME/snapshots/<sha>/<path>` is the file (usually a symlink into
//! `blobs/`); `<cache>/models--OWNER--NAME/.no_exist/<sha>/<path>` marks a file the Hub said
//! does not exist.
//!
//! Timeouts: hf-hub 0.4's blocking client has a 30 s connect timeout but no read timeout
//! and no way to configure its `ureq` agent, so a stalled server could block forever. The
//! download therefore runs on its own thread and the caller watches it: the metadata phase
//! (before the first byte of the file) must finish within `etag_timeout`, and once the body
//! is flowing no gap between bytes may exceed `download_timeout`. On expiry the caller
//! returns an error at once and abandons the thread (it dies with the process; its `.part`
//! file is resumed by the next download).
//!
//! Must not: parse weight references or presets (that is `weights::source`) nor read
//! tensors.
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use hf_hub::api::sync::{ApiBuilder, ApiError};
use hf_hub::api::Progress;
use hf_hub::{Cache, Repo, RepoType};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::HubRef;
use crate::util::error::UserError;

/// Default Hub address (`HF_ENDPOINT` overrides it).
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";
/// Default limit for the metadata phase of a download (`HF_HUB_ETAG_TIMEOUT` overrides it).
pub const DEFAULT_ETAG_TIMEOUT: Duration = Duration::from_secs(30);
/// Default longest gap between bytes of a download (`HF_HUB_DOWNLOAD_TIMEOUT` overrides it).
pub const DEFAULT_DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(60);

/// Everything resolution needs from the environment, explicit so tests need no env vars.
#[derive(Debug, Clone)]
pub struct HubSettings {
    /// Hub cache directory (`$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
    /// `~/.cache/huggingface/hub`).
    pub cache_dir: PathBuf,
    /// Access token (`$HF_TOKEN`, else the token file).
    pub token: Option<String>,
    /// Where the token came from (for messages; never the token itself).
    pub token_origin: Option<String>,
    /// `HF_HUB_OFFLINE`: never touch the network.
    pub offline: bool,
    /// Hub address (`HF_ENDPOINT`).
    pub endpoint: String,
    /// Limit on the metadata phase of a download.
    pub etag_timeout: Duration,
    /// Longest gap between bytes while downloading.
    pub download_timeout: Duration,
    /// Draw a progress bar on stderr (it is hidden anyway when stderr is not a terminal).
    pub progress: bool,
    /// Where the SHA-256 sidecar lives (`None`: no digest caching).
    pub digest_cache_dir: Option<PathBuf>,
}

impl HubSettings {
    /// Settings from the process environment.
    pub fn from_env() -> Self {
        Self::from_lookup(&|k| std::env::var(k).ok())
    }

    /// Settings from an environment lookup (tests pass a map). Reads the token file if the
    /// lookup names none in `HF_TOKEN`.
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> Self {
        let get = |k: &str| lookup(k).filter(|v| !v.trim().is_empty());
        let home = get("HOME").map(PathBuf::from).or_else(std::env::home_dir);
        let expand = |v: String| super::expand_home(&v, home.as_deref());
        let default_cache = || {
            get("XDG_CACHE_HOME")
                .map(&expand)
                .or_else(|| home.as_ref().map(|h| h.join(".cache")))
                .unwrap_or_else(|| PathBuf::from(".cache"))
        };
        let hf_home = get("HF_HOME")
            .map(&expand)
            .unwrap_or_else(|| default_cache().join("huggingface"));
        let cache_dir = get("HF_HUB_CACHE")
            .or_else(|| get("HUGGINGFACE_HUB_CACHE"))
            .map(&expand)
            .unwrap_or_else(|| hf_home.join("hub"));

        let (token, token_origin) = if let Some(t) = get("HF_TOKEN") {
            (Some(t.trim().to_string()), Some("HF_TOKEN".to_string()))
        } else if let Some(t) = get("HUGGING_FACE_HUB_TOKEN") {
            (Some(t.trim().to_string()), Some("HUGGING_FACE_HUB_TOKEN".to_string()))
        } else {
            let path = get("HF_TOKEN_PATH")
                .map(&expand)
                .unwrap_or_else(|| hf_home.join("token"));
            match std::fs::read_to_string(&path).map(|s| s.trim().to_string()) {
                Ok(t) if !t.is_empty() => (Some(t), Some(path.display().to_string())),
                _ => (None, None),
            }
        };

        let offline = get("HF_HUB_OFFLINE")
            .or_else(|| get("TRANSFORMERS_OFFLINE"))
            .is_some_and(|v| is_truthy(&v));
        let seconds = |k: &str, default: Duration| {
            get(k)
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s > 0.0)
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .unwrap_or(default)
        };
        use std::io::IsTerminal;
        HubSettings {
            cache_dir,
            token,
            token_origin,
            offline,
            endpoint: get("HF_ENDPOINT")
                .map(|e| e.trim_end_matches('/').to_string())
                .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string()),
            etag_timeout: seconds("HF_HUB_ETAG_TIMEOUT", DEFAULT_ETAG_TIMEOUT),
            download_timeout: seconds("HF_HUB_DOWNLOAD_TIMEOUT", DEFAULT_DOWNLOAD_TIMEOUT),
            progress: std::io::stderr().is_terminal(),
            digest_cache_dir: super::digest::cache_dir_from(lookup),
        }
    }

    /// Offline settings over one cache directory, no token, no progress bar, no digest cache.
    pub fn offline_cache(cache_dir: impl Into<PathBuf>) -> Self {
        HubSettings {
            cache_dir: cache_dir.into(),
            token: None,
            token_origin: None,
            offline: true,
            endpoint: DEFAULT_ENDPOINT.to_string(),
            etag_timeout: DEFAULT_ETAG_TIMEOUT,
            download_timeout: DEFAULT_DOWNLOAD_TIMEOUT,
            progress: false,
            digest_cache_dir: None,
        }
    }
}

/// Python's truthiness of an environment flag (`1`, `true`, `yes`, `on`, any case).
pub fn is_truthy(value: &str) -> bool {
    matches!(value.trim().to_ascii_uppercase().as_str(), "1" | "TRUE" | "YES" | "ON")
}

/// True for a full 40-hex git commit sha.
pub fn is_commit_sha(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// True for what a cache ref may hold: a commit sha or a plain tag name (ASCII letters,
/// digits, `.`, `_`, `-`; not starting with `.`), never a path that could leave the cache.
pub fn is_plain_revision(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && !s.starts_with('.')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

fn bad_ref_message(ref_path: &Path, content: &str) -> String {
    format!(
        "{} holds {content:?}, which is not a commit id or tag; the cache is damaged or was tampered with \
         (delete that file to download again, or pin a commit with @<sha>)",
        ref_path.display()
    )
}

/// The cache's ref of `hub`'s revision must be a plain commit id or tag when it exists:
/// an error naming the ref file otherwise (resolution stops there: no download either).
pub fn check_cached_ref(cache_dir: &Path, hub: &HubRef) -> Result<(), UserError> {
    let ref_path = repo_dir(cache_dir, &hub.repo)
        .join("refs")
        .join(hub.revision.as_deref().unwrap_or("main"));
    match std::fs::read_to_string(&ref_path) {
        Ok(c) if !c.trim().is_empty() && !is_plain_revision(c.trim()) => {
            Err(UserError::Other(bad_ref_message(&ref_path, c.trim())))
        }
        _ => Ok(()),
    }
}

/// The cache folder of a model repo: `<cache>/models--OWNER--NAME`.
pub fn repo_dir(cache_dir: &Path, repo: &str) -> PathBuf {
    cache_dir.join(format!("models--{}", repo.replace('/', "--")))
}

/// A file found in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheHit {
    /// `snapshots/<commit>/<file>` (a symlink into `blobs/` when written by a downloader).
    pub path: PathBuf,
    /// Commit sha of the snapshot.
    pub commit: String,
}

/// Look a file up in the cache, touching only the file system. `Err` says why it missed.
pub fn lookup_cache(cache_dir: &Path, hub: &HubRef) -> Result<CacheHit, String> {
    let dir = repo_dir(cache_dir, &hub.repo);
    let revision = hub.revision.as_deref().unwrap_or("main");
    if !dir.is_dir() {
        return Err("nothing cached for this repo".to_string());
    }
    let commit = if is_commit_sha(revision) && dir.join("snapshots").join(revision).is_dir() {
        revision.to_string()
    } else {
        let ref_path = dir.join("refs").join(revision);
        match std::fs::read_to_string(&ref_path) {
            Ok(c) if !c.trim().is_empty() => {
                let c = c.trim();
                if !is_plain_revision(c) {
                    return Err(bad_ref_message(&ref_path, c));
                }
                c.to_string()
            }
            _ => {
                let others = snapshots_with(&dir, &hub.file);
                let hint = if others.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; snapshots that have the file: {} (pin one with @<sha>)",
                        others.join(", ")
                    )
                };
                return Err(format!("no ref {} for revision {revision:?}{hint}", ref_path.display()));
            }
        }
    };
    let path = dir.join("snapshots").join(&commit).join(&hub.file);
    if path.is_file() {
        return Ok(CacheHit { path, commit });
    }
    if dir.join(".no_exist").join(&commit).join(&hub.file).exists() {
        return Err(format!(
            "the Hub reported that {} does not exist at commit {commit} (marker in .no_exist)",
            hub.file
        ));
    }
    if path.symlink_metadata().is_ok() {
        return Err(format!("{} is a broken link (its blob is missing)", path.display()));
    }
    Err(format!(
        "revision {revision:?} is commit {commit}, but {} is missing",
        path.display()
    ))
}

fn snapshots_with(repo_dir: &Path, file: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(repo_dir.join("snapshots")) else {
        return Vec::new();
    };
    let mut shas: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join(file).is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    shas.sort();
    shas
}

/// The first lines every hub error starts with: what was wanted and where we looked.
fn what_and_where(hub: &HubRef, settings: &HubSettings) -> String {
    format!(
        "{file} from Hugging Face repo {repo} (revision {rev})\n  cache searched: {dir}",
        file = hub.file,
        repo = hub.repo,
        rev = hub.revision.as_deref().unwrap_or("main"),
        dir = repo_dir(&settings.cache_dir, &hub.repo).display(),
    )
}

fn download_cmd(hub: &HubRef) -> String {
    let rev = hub
        .revision
        .as_ref()
        .map(|r| format!(" --revision {r}"))
        .unwrap_or_default();
    format!("huggingface-cli download {} {}{rev}", hub.repo, hub.file)
}

/// The error for a cache miss while offline.
pub fn offline_miss(hub: &HubRef, settings: &HubSettings, reason: &str) -> UserError {
    UserError::Other(format!(
        "cannot get {}\n  not in the cache ({reason}) and HF_HUB_OFFLINE is set, so nothing is downloaded\n  \
         to fix: run once with network access (HF_HUB_OFFLINE unset) to download it, or \
         `{}`, or pass a local file (--weights /path/to/{}); if the cache is elsewhere set HF_HUB_CACHE or HF_HOME",
        what_and_where(hub, settings),
        download_cmd(hub),
        file_name(&hub.file),
    ))
}

fn file_name(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}

/// Heartbeat shared by the download thread's progress and the watchdog.
#[derive(Default)]
struct Heartbeat {
    /// Set once the file body starts (hf-hub calls `Progress::init` after the metadata).
    body: AtomicBool,
    /// Milliseconds since `start` of the last sign of life.
    last_ms: AtomicU64,
}

struct WatchedProgress {
    bar: ProgressBar,
    beat: Arc<Heartbeat>,
    start: Instant,
}

impl WatchedProgress {
    fn touch(&self) {
        self.beat
            .last_ms
            .store(self.start.elapsed().as_millis() as u64, Ordering::Relaxed);
    }
}

impl Progress for WatchedProgress {
    fn init(&mut self, size: usize, filename: &str) {
        self.bar.set_length(size as u64);
        self.bar.set_position(0);
        self.bar.set_message(file_name(filename).to_string());
        self.beat.body.store(true, Ordering::Relaxed);
        self.touch();
    }
    fn update(&mut self, size: usize) {
        self.bar.inc(size as u64);
        self.touch();
    }
    fn finish(&mut self) {
        self.bar.finish();
        self.touch();
    }
}

/// Download a file into the cache (same layout as Python) and return the cache entry.
/// Call only after a cache miss; refuses when offline.
pub fn download(hub: &HubRef, settings: &HubSettings) -> anyhow::Result<CacheHit> {
    if settings.offline {
        return Err(offline_miss(hub, settings, "download refused").into());
    }
    let revision = hub.revision.clone().unwrap_or_else(|| "main".to_string());
    std::fs::create_dir_all(&settings.cache_dir).map_err(|e| {
        UserError::Other(format!(
            "cannot get {}\n  cannot create the cache directory: {e}\n  to fix: set HF_HUB_CACHE or HF_HOME to a writable place",
            what_and_where(hub, settings)
        ))
    })?;
    let api = ApiBuilder::from_cache(Cache::new(settings.cache_dir.clone()))
        .with_endpoint(settings.endpoint.clone())
        .with_token(settings.token.clone())
        .with_progress(false)
        .with_retries(0)
        .build()
        .map_err(|e| anyhow::anyhow!("cannot set up the Hugging Face client: {e}"))?;
    let repo = api.repo(Repo::with_revision(hub.repo.clone(), RepoType::Model, revision));

    let target = if settings.progress {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(0), target);
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{elapsed_precise}] [{wide_bar}] {bytes}/{total_bytes} {bytes_per_sec} ({eta})",
        )
        .expect("valid progress template")
        .progress_chars("=> "),
    );
    crate::errln!(
        "wan-vae-bench: {} not in the cache; downloading from {}/{} into {}",
        hub.file,
        settings.endpoint,
        hub.repo,
        settings.cache_dir.display()
    );
    let start = Instant::now();
    let beat = Arc::new(Heartbeat::default());
    let progress = WatchedProgress {
        bar: bar.clone(),
        beat: beat.clone(),
        start,
    };
    let (tx, rx) = mpsc::channel();
    let file = hub.file.clone();
    std::thread::Builder::new()
        .name("hf-download".into())
        .spawn(move || {
            let _ = tx.send(repo.download_with_progress(&file, progress));
        })
        .map_err(|e| anyhow::anyhow!("cannot start the download thread: {e}"))?;

    let result = loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(result) => break result,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                bar.abandon();
                return Err(UserError::Other(format!(
                    "cannot get {}\n  the download failed unexpectedly (hf-hub panicked; see above)\n  \
                     to fix: try again, or `{}`, or pass a local file",
                    what_and_where(hub, settings),
                    download_cmd(hub)
                ))
                .into());
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let now = start.elapsed();
                let stalled = if beat.body.load(Ordering::Relaxed) {
                    let last = Duration::from_millis(beat.last_ms.load(Ordering::Relaxed));
                    (now.saturating_sub(last) > settings.download_timeout).then(|| {
                        format!(
                            "no data for {:.0?} (HF_HUB_DOWNLOAD_TIMEOUT)",
                            settings.download_timeout
                        )
                    })
                } else {
                    (now > settings.etag_timeout).then(|| {
                        format!(
                            "no answer from {} within {:.0?} (HF_HUB_ETAG_TIMEOUT)",
                            settings.endpoint, settings.etag_timeout
                        )
                    })
                };
                if let Some(why) = stalled {
                    bar.abandon();
                    return Err(UserError::Other(format!(
                        "cannot get {}\n  the download timed out: {why}\n  \
                         to fix: check the network and try again (a partial download is resumed), raise the \
                         timeout with HF_HUB_ETAG_TIMEOUT / HF_HUB_DOWNLOAD_TIMEOUT (seconds), `{}`, or set \
                         HF_HUB_OFFLINE=1 and pass a local file",
                        what_and_where(hub, settings),
                        download_cmd(hub)
                    ))
                    .into());
                }
            }
        }
    };
    let path = result.map_err(|e| {
        bar.abandon();
        anyhow::Error::from(api_error(e, hub, settings))
    })?;
    bar.finish_and_clear();
    crate::errln!(
        "wan-vae-bench: downloaded {} in {:.1} s",
        path.display(),
        start.elapsed().as_secs_f64()
    );
    // hf-hub returns `snapshots/<commit>/<file>`; take the commit from there.
    let snapshots = repo_dir(&settings.cache_dir, &hub.repo).join("snapshots");
    let commit = path
        .strip_prefix(&snapshots)
        .ok()
        .and_then(|rel| rel.components().next())
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .ok_or_else(|| anyhow::anyhow!("hf-hub returned {} outside {}", path.display(), snapshots.display()))?;
    Ok(CacheHit { path, commit })
}

/// Turn an hf-hub error into a message that says what happened and what to do.
fn api_error(err: ApiError, hub: &HubRef, settings: &HubSettings) -> UserError {
    let head = what_and_where(hub, settings);
    let dl = download_cmd(hub);
    let page = format!("{}/{}", settings.endpoint, hub.repo);
    let rev = hub.revision.as_deref().unwrap_or("main");
    let token_hint = match &settings.token_origin {
        Some(origin) => {
            format!("the token from {origin} was sent; check that it is valid and has access")
        }
        None => "no token was found: set HF_TOKEN or run `huggingface-cli login`".to_string(),
    };
    let (what, fix) = match err {
        ApiError::RequestError(e) => {
            let text = e.to_string();
            match (*e).into_response() {
                Some(resp) => {
                    let status = resp.status();
                    let code = resp.header("x-error-code").unwrap_or("").to_string();
                    let server_msg = resp
                        .header("x-error-message")
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default();
                    match (status, code.as_str()) {
                        (_, "GatedRepo") => (
                            format!("the repo is gated (HTTP {status}){server_msg}"),
                            format!("accept its conditions at {page} while logged in, then {token_hint}"),
                        ),
                        (_, "RepoNotFound") | (401, _) => (
                            format!("repository not found, or private and not accessible (HTTP {status}){server_msg}"),
                            format!(
                                "check the repo name (see `inspect --list-presets`); if it is private, {token_hint}"
                            ),
                        ),
                        (_, "RevisionNotFound") => (
                            format!("revision {rev:?} not found (HTTP {status}){server_msg}"),
                            format!("use a branch, tag or commit sha that exists at {page}"),
                        ),
                        (_, "EntryNotFound") => (
                            format!("file not found in the repo at revision {rev:?} (HTTP {status}){server_msg}"),
                            format!("check the path inside the repo at {page}/tree/{rev}"),
                        ),
                        (403, _) => (
                            format!("access denied (HTTP 403){server_msg}"),
                            format!("the repo may be gated: accept its conditions at {page}; {token_hint}"),
                        ),
                        (404, _) => (
                            format!(
                                "not found (HTTP 404){server_msg}: the repo, the revision or the file does not exist"
                            ),
                            format!("check the reference against {page}"),
                        ),
                        (429, _) => (
                            format!("rate limited by the Hub (HTTP 429){server_msg}"),
                            format!("wait and try again, or set HF_TOKEN; or `{dl}`"),
                        ),
                        (s, _) if s >= 500 => (
                            format!("the Hub failed (HTTP {s}){server_msg}"),
                            format!("try again later, or `{dl}`, or pass a local file"),
                        ),
                        (s, _) => (
                            format!("unexpected HTTP {s}{server_msg}"),
                            format!("try `{dl}`, or pass a local file"),
                        ),
                    }
                }
                None => (
                    format!("network error reaching {}: {text}", settings.endpoint),
                    format!(
                        "check the network (proxy: HTTPS_PROXY), or set HF_HUB_OFFLINE=1 and use a cached or local \
                         file; elsewhere: `{dl}` and copy the cache"
                    ),
                ),
            }
        }
        ApiError::MissingHeader(h) | ApiError::InvalidHeader(h) => (
            format!(
                "unexpected answer from {}: header {h} missing or invalid",
                settings.endpoint
            ),
            "check HF_ENDPOINT points at a Hugging Face Hub (or a mirror of one)".to_string(),
        ),
        ApiError::LockAcquisition(p) => (
            format!("another process holds the download lock {}", p.display()),
            "wait for the other download to finish, then try again".to_string(),
        ),
        ApiError::IoError(e) => (
            format!("cannot write into the cache: {e}"),
            "check free space and permissions, or set HF_HUB_CACHE / HF_HOME".to_string(),
        ),
        other => (
            format!("download failed: {other}"),
            format!("try again, or `{dl}`, or pass a local file"),
        ),
    };
    UserError::Other(format!("cannot get {head}\n  {what}\n  to fix: {fix}"))
}
