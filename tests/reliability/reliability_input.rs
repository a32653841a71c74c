//! Issue 10, "panics and wrong exit codes" and "small but visible": non-ASCII text, huge
//! timeouts, bad weights, matrix size and `--list`, NUL bytes in env variants, a damaged
//! Hub cache ref, and the table and report details.
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::cli::fixture;
use crate::util::cli::{bench, run, scratch, stderr, stdout, write};
use crate::util::reports::{case, report, steady};

const TINY: &[&str] = &[
    "--frames",
    "1",
    "--size",
    "8x8",
    "--runs",
    "1",
    "--warmup",
    "0",
    "--precision",
    "fp32",
];

/// Wait for `child` at most `limit`; kill it when it is still running (old code would run
/// a huge matrix for hours).
fn finish(mut child: Child, limit: Duration) -> (Option<i32>, String) {
    let t = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            return (out.status.code(), stderr(&out));
        }
        if t.elapsed() > limit {
            crate::util::procs::kill_tree(child.id() as i32);
            let out = child.wait_with_output().unwrap();
            return (None, format!("still running after {limit:?}: {}", stderr(&out)));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn non_ascii_text_never_panics() {
    let out = bench()
        .args(["inspect", "--weights", "модель.safetensors"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("модель.safetensors"), "{}", stderr(&out));
    // A report's sha256 is text from a file: compare and merge must not slice it by byte.
    let dir = scratch();
    let mut a = serde_json::to_value(report("h", vec![case("x", &steady(1.0), &steady(1.0))])).unwrap();
    let mut b = a.clone();
    a["model"]["sha256"] = "ééééééééééééééé".into();
    b["model"]["sha256"] = "ôôôôôôôôôôôôôôô".into();
    let (pa, pb) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let pm = dir.path().join("merged.json");
    std::fs::write(&pa, a.to_string()).unwrap();
    std::fs::write(&pb, b.to_string()).unwrap();
    for args in [
        vec!["compare", pa.to_str().unwrap(), pb.to_str().unwrap()],
        vec![
            "merge",
            pa.to_str().unwrap(),
            pb.to_str().unwrap(),
            "-o",
            pm.to_str().unwrap(),
        ],
    ] {
        let out = bench().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    }
}

#[test]
fn huge_timeouts_exit_2_with_the_range() {
    let dir = scratch();
    let (out, _) = run(dir.path(), &[TINY, &["--timeout", "1e19"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("at most 31536000"), "{}", stderr(&out));
    let config = write(dir.path(), "t.toml", "[run]\ntimeout_s = 1e30\n");
    let (out, _) = run(dir.path(), &[TINY, &["--config", config.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("at most 31536000"), "{}", stderr(&out));
}

#[test]
fn bad_weights_exit_2_once_before_any_case() {
    use candle_core::Device;
    let dir = scratch();
    let mut tensors = candle_core::safetensors::load(fixture("wan21_tiny.weights.safetensors"), &Device::Cpu).unwrap();
    tensors.remove("conv1.bias");
    let bad = dir.path().join("bad.safetensors");
    candle_core::safetensors::save(&tensors, &bad).unwrap();
    let (out, _) = run(dir.path(), &[TINY, &["--weights", bad.to_str().unwrap()]].concat());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("missing key conv1.bias") && err.contains("bad.safetensors"),
        "{err}"
    );
    // A truncated file: the header promises more bytes than there are.
    let good = std::fs::read(fixture("wan21_tiny.weights.safetensors")).unwrap();
    let cut = dir.path().join("cut.safetensors");
    std::fs::write(&cut, &good[..good.len() - 100]).unwrap();
    let (out, _) = run(dir.path(), &[TINY, &["--weights", cut.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("cut.safetensors"), "{}", stderr(&out));
}

/// 25 frames x 20 sizes x 3 precisions x 10 chunks = 15000 cases.
fn huge_matrix() -> Vec<String> {
    let frames: Vec<String> = (1..=25).map(|f| f.to_string()).collect();
    let sizes: Vec<String> = (1..=20).map(|k| format!("{}x8", 8 * k)).collect();
    let chunks: Vec<String> = (1..=10).map(|c| c.to_string()).collect();
    [
        "--frames",
        &frames.join(","),
        "--size",
        &sizes.join(","),
        "--precision",
        "fp32,bf16,fp16",
        "--chunk",
        &chunks.join(","),
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn huge_matrices_are_refused_and_list_shows_the_plan() {
    let dir = scratch();
    let child = bench()
        .args(["run", "--fault-hooks"])
        .args(huge_matrix())
        .args(["--quiet", "-o", dir.path().join("r.json").to_str().unwrap()])
        .env("WAN_VAE_BENCH_FAULT", "fail")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (code, err) = finish(child, Duration::from_secs(20));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("15000 cases") && err.contains("--max-cases"), "{err}");
    assert!(!dir.path().join("r.json").exists(), "a report was started");

    let out = bench()
        .arg("run")
        .args(huge_matrix())
        .args(["--list", "--max-cases", "15000", "--control", "off"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("fp16-chunk10-untiled-25x160x8-baseline"),
        "{}",
        &text[..500]
    );
    assert!(
        text.contains("15000 case(s)") && text.contains("GFLOP"),
        "{}",
        text.lines().last().unwrap()
    );

    let out = bench().args(["run", "--list"]).args(TINY).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("fp32-chunk1-untiled-1x8x8-baseline"));
}

#[test]
fn nul_bytes_in_env_variants_exit_2_naming_variant_and_variable() {
    let dir = scratch();
    let config = write(
        dir.path(),
        "nul.toml",
        "[matrix]\nenv = [\"bad\"]\n[env.bad]\nMY_VAR = \"a\\u0000b\"\n",
    );
    let (out, _) = run(dir.path(), &[TINY, &["--config", config.to_str().unwrap()]].concat());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("MY_VAR") && err.contains("\"bad\"") && err.contains("NUL"),
        "{err}"
    );
}

#[test]
fn a_cache_ref_pointing_outside_the_cache_is_an_error_naming_the_file() {
    let dir = scratch();
    let cache = dir.path().join("hub");
    let repo = cache.join("models--o--r");
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::create_dir_all(repo.join("snapshots")).unwrap();
    std::fs::write(repo.join("refs/main"), "../../outside").unwrap();
    // What the ref would reach: <cache>/outside/w.safetensors.
    std::fs::create_dir_all(cache.join("outside")).unwrap();
    std::fs::copy(
        fixture("wan21_tiny.weights.safetensors"),
        cache.join("outside/w.safetensors"),
    )
    .unwrap();
    let out = bench()
        .args(["inspect", "--weights", "hf://o/r/w.safetensors"])
        .env("HF_HUB_CACHE", &cache)
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("refs/main") && err.contains("not a commit id or tag"),
        "{err}"
    );
}

#[test]
fn one_run_prints_no_spread_and_sub_second_timeouts_say_so() {
    let dir = scratch();
    let (out, _) = run(dir.path(), TINY);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(!table.contains("± 0.0 ms"), "{table}");
    let config = write(
        dir.path(),
        "hang.toml",
        "[run]\nwarmup = 0\nruns = 1\ntimeout_s = 0.5\n[matrix]\nframes = [1]\nsize = [\"8x8\"]\nenv = [\"h\"]\n\
         [env.h]\nWAN_VAE_BENCH_FAULT = \"hang\"\n",
    );
    let (out, report) = run(dir.path(), &["--fault-hooks", "--config", config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = crate::util::cli::load(&report);
    let e = r.cases[0].outcome.error.as_deref().unwrap();
    assert!(e.starts_with("timed out after 500.0 ms"), "{e}");
}

#[test]
fn tile_flags_are_named_as_given() {
    let dir = scratch();
    let (out, _) = run(dir.path(), &[TINY, &["--tile_px", "16", "--overlap_px", "16"]].concat());
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // The seed script's spelling is a hidden alias; the error uses the documented one.
    assert!(err.contains("--tile-px 16 --overlap-px 16"), "{err}");
}

/// Display width of text made of ASCII and CJK (width 2) characters only.
fn width(s: &str) -> usize {
    s.chars().map(|c| if (c as u32) >= 0x1100 { 2 } else { 1 }).sum()
}

#[test]
fn the_table_aligns_wide_env_names_and_compares_rows_of_one_size() {
    let mut small = case("fp32-chunk1-untiled-5x32x32-環境", &[0.25], &[0.5]);
    small.settings.width = 32;
    small.settings.height = 32;
    let big = case("fp32-chunk1-untiled-5x64x64-baseline", &[1.0], &[2.0]);
    let r = report("h", vec![small, big]);
    let dir = scratch();
    let path = dir.path().join("r.json");
    std::fs::write(&path, serde_json::to_string(&r).unwrap()).unwrap();
    // The text table is printed by run; render it through the library's exporter.
    use wan_vae_bench::analysis::export::{Exporter, TextTable};
    let table = TextTable.render(&r).unwrap();
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("fp32")).collect();
    assert_eq!(rows.len(), 2, "{table}");
    let status_at: Vec<usize> = rows.iter().map(|l| width(&l[..l.find("  ok").unwrap()])).collect();
    assert_eq!(status_at[0], status_at[1], "misaligned:\n{table}");
    // The 64x64 case is the fastest of its size: 1.00x, not 4.00x against the 32x32 one.
    assert!(rows[1].contains("1.00x") && !rows[1].contains("4.00x"), "{table}");
}

#[test]
fn merge_keeps_each_inputs_run_settings() {
    let dir = scratch();
    let mut a = report("host-a", vec![case("x", &steady(1.0), &steady(1.0))]);
    a.run.runs = 5;
    let mut b = report("host-b", vec![case("y", &steady(1.0), &steady(1.0))]);
    b.run.runs = 9;
    let (pa, pb) = (dir.path().join("a.json"), dir.path().join("b.json"));
    std::fs::write(&pa, serde_json::to_string(&a).unwrap()).unwrap();
    std::fs::write(&pb, serde_json::to_string(&b).unwrap()).unwrap();
    let merged = dir.path().join("m.json");
    let out = bench()
        .args([
            "merge",
            pa.to_str().unwrap(),
            pb.to_str().unwrap(),
            "-o",
            merged.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    assert_eq!(v["cases"][0]["run"]["runs"], 5, "{}", v["cases"][0]);
    assert_eq!(v["cases"][1]["run"]["runs"], 9, "{}", v["cases"][1]);
    assert!(!dir.path().join("m.json.lock").exists());
}

/// Issue 30 item 5: two different cases may not share an id (an env variant named like
/// another's id with a suffix): refused before anything runs, naming both variants.
#[test]
fn env_variants_whose_ids_collide_are_refused() {
    let dir = crate::util::cli::scratch();
    let cfg = crate::util::cli::write(
        dir.path(),
        "m.toml",
        "[matrix]\nenv = [\"x\", \"x-decode\"]\npasses = [\"both\", \"decode\"]\n[env.x]\nA = \"1\"\n[env.x-decode]\nA = \"2\"\n",
    );
    for extra in [&["--list"][..], &[]] {
        let out = crate::util::cli::bench()
            .args(["run", "--config", cfg.to_str().unwrap(), "-o"])
            .arg(dir.path().join("r.json"))
            .args(extra)
            .output()
            .unwrap();
        let err = crate::util::cli::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("fp32-chunk1-untiled-5x64x64-x-decode") && err.contains("rename the env variant `x-decode`"),
            "{err}"
        );
        assert!(!dir.path().join("r.json").exists());
    }
}

/// Issue 30 item 18: pass counts, the timeout and `--env-var` lists are bounded and exact.
#[test]
fn absurd_counts_timeouts_and_stray_commas_are_refused() {
    for (args, needle) in [
        (vec!["--runs", "18446744073709551615"], "--runs"),
        (vec!["--warmup", "10000000"], "warmup"),
        (vec!["--timeout", "1e-300"], "timeout"),
        (vec!["--env-var", "A=1,"], "stray comma"),
    ] {
        let out = crate::util::cli::bench()
            .args(["run", "--list"])
            .args(&args)
            .output()
            .unwrap();
        let err = crate::util::cli::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
