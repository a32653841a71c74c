//! CLI-level tests of `--weights` references against a fake Hugging Face cache: the binary
//! runs with `HF_HUB_CACHE` / `HF_HUB_OFFLINE=1` set for the child process only, so nothing
//! touches the network. Ignored until `validate` / `inspect` land from main.
use crate::util::cli::fixture;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const REPO_DIR: &str = "models--Wan-AI--Wan2.1-T2V-1.3B";
const SHA: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

/// `<tmp>/hub/models--Wan-AI--Wan2.1-T2V-1.3B/snapshots/<sha>/Wan2.1_VAE.pth` + `refs/main`.
fn fake_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("hub").join(REPO_DIR);
    std::fs::create_dir_all(repo.join("snapshots").join(SHA)).unwrap();
    std::fs::copy(
        fixture("wan21_tiny.weights.pth"),
        repo.join("snapshots").join(SHA).join("Wan2.1_VAE.pth"),
    )
    .unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), SHA).unwrap();
    home
}

fn run(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wan-vae-bench"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("HF_HOME", home.join("hf-home"))
        .env("HF_HUB_CACHE", home.join("hub"))
        .env("HF_HUB_OFFLINE", "1")
        .env("WAN_VAE_BENCH_CACHE_DIR", home.join("wvb-cache"))
        .env_remove("HF_TOKEN")
        .env_remove("HUGGING_FACE_HUB_TOKEN")
        .env_remove("HF_TOKEN_PATH")
        .env_remove("HF_ENDPOINT")
        .output()
        .unwrap()
}

const CASES: &str = "tests/fixtures/wan21_tiny.cases.safetensors";

#[test]
fn validate_preset_and_hf_form_from_the_cache() {
    let home = fake_home();
    for weights in [
        "wan2.1",
        "hf://Wan-AI/Wan2.1-T2V-1.3B/Wan2.1_VAE.pth",
        &format!("hf://Wan-AI/Wan2.1-T2V-1.3B/Wan2.1_VAE.pth@{SHA}"),
    ] {
        let out = run(home.path(), &["validate", "--weights", weights, "--cases", CASES]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{weights}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn validate_cache_miss_offline_exits_2_fast() {
    let home = fake_home();
    let t = Instant::now();
    let out = run(
        home.path(),
        &["validate", "--weights", "wan2.1-comfy", "--cases", CASES],
    );
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for needle in [
        "Comfy-Org/Wan_2.1_ComfyUI_repackaged",
        "split_files/vae/wan_2.1_vae.safetensors",
        home.path().join("hub").to_str().unwrap(),
        "HF_HUB_OFFLINE",
        "huggingface-cli download",
    ] {
        assert!(err.contains(needle), "{needle:?} missing from stderr:\n{err}");
    }
}

#[test]
fn inspect_lists_presets_and_accepts_references() {
    let home = fake_home();
    let out = run(home.path(), &["inspect", "--list-presets"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("wan2.1")
            && text.contains("wan2.1-comfy")
            && text.contains("hf://Wan-AI/Wan2.1-T2V-1.3B/Wan2.1_VAE.pth")
    );

    let out = run(home.path(), &["inspect", "--weights", "wan2.1"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(
        home.path(),
        &["inspect", "--weights", "hf://Wan-AI/Wan2.1-T2V-1.3B/missing.pth"],
    );
    assert_eq!(out.status.code(), Some(2));
}
