//! Issue 17, items 10, 11, 12 and 16: what can be known before any case runs is checked
//! once, in the parent, with exit 2 naming the file, tensor, key or variable: non-finite
//! values and overflowing shapes of `--input`, environment values too large to start a
//! process, a `.pth` holding a pickled callable; and `--tile 16` gets the overlap the help
//! promises.
use std::path::Path;

use crate::util::cli::{bench, fixture, scratch, stderr, stdout, write};
use crate::util::files::{pickled_call, pth_with_extra_items, write_npy};

/// `run --list` with `args` (synthetic Wan 2.1 weights unless `args` name others).
fn list(args: &[&str], extra: &[&Path]) -> std::process::Output {
    let mut cmd = bench();
    cmd.arg("run").args(args);
    for p in extra {
        cmd.arg(p);
    }
    cmd.arg("--list").output().unwrap()
}

fn assert_exit_2_naming(out: &std::process::Output, words: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}{}", stdout(out));
    for w in words {
        assert!(err.contains(w), "the error must name {w:?}: {err}");
    }
}

#[test]
fn non_finite_input_values_exit_2_naming_the_file_tensor_and_index() {
    let dir = scratch();
    // A latent [1,16,2,4,4] with NaN at flat index 37 = [0,1,0,1,1] and one more at 300.
    let mut latent = vec![0.5f32; 16 * 2 * 4 * 4];
    latent[37] = f32::NAN;
    latent[300] = f32::NAN;
    let lat = dir.path().join("nan-latent.npy");
    write_npy(&lat, &[1, 16, 2, 4, 4], &latent);
    let out = list(&["--weights", "synthetic", "--passes", "decode", "--input"], &[&lat]);
    assert_exit_2_naming(&out, &["nan-latent.npy", "`array`", "[0, 1, 0, 1, 1]", "2 of 512"]);

    // A video [1,3,5,16,16] in [-1, 1] with +inf at flat index 100 (not at element 0).
    let mut video = vec![-0.5f32; 3 * 5 * 16 * 16];
    video[100] = f32::INFINITY;
    let vid = dir.path().join("inf-video.npy");
    write_npy(&vid, &[1, 3, 5, 16, 16], &video);
    let out = list(&["--weights", "synthetic", "--input"], &[&vid]);
    assert_exit_2_naming(&out, &["inf-video.npy", "[0, 0, 0, 6, 4]", "1 of 3840", "inf"]);

    video[100] = f32::NAN;
    write_npy(&vid, &[1, 3, 5, 16, 16], &video);
    let out = list(&["--weights", "synthetic", "--input"], &[&vid]);
    assert_exit_2_naming(&out, &["inf-video.npy", "[0, 0, 0, 6, 4]", "NaN"]);
}

#[test]
fn an_input_shape_whose_element_count_overflows_exits_2_naming_it() {
    let dir = scratch();
    // 16 x (2^60 + 1) = 2^64 + 16: wraps to 16 in 64-bit arithmetic, and 16 values follow.
    let p = dir.path().join("overflow.npy");
    let huge = (1u64 << 60) + 1;
    write_npy(&p, &[1, 16, 1, 1, huge], &[0.5; 16]);
    let out = list(&["--weights", "synthetic", "--passes", "decode", "--input"], &[&p]);
    assert_exit_2_naming(&out, &["overflow.npy", &format!("[1, 16, 1, 1, {huge}]"), "overflows"]);
}

#[test]
fn an_env_value_too_large_for_a_process_exits_2_up_front() {
    let dir = scratch();
    let big = "x".repeat(200_000);
    let m = write(
        dir.path(),
        "m.toml",
        &format!("[matrix]\nenv = [\"big\"]\n[env.big]\nBIG_FLAG = \"{big}\"\n"),
    );
    let out = list(&["--weights", "synthetic", "--config"], &[&m]);
    assert_exit_2_naming(&out, &["BIG_FLAG", "\"big\"", "200009 bytes", "131072"]);

    // Each value under the per-string limit, but together more than this system lets a new
    // process have (ARG_MAX).
    // SAFETY: sysconf has no preconditions.
    let arg_max = unsafe { libc::sysconf(libc::_SC_ARG_MAX) };
    let n = usize::try_from(arg_max).unwrap() / 100_000 + 2;
    assert!(n < 2000, "ARG_MAX {arg_max} is too large for this test");
    let mut toml = String::from("[matrix]\nenv = [\"many\"]\n[env.many]\n");
    let value = "y".repeat(100_000);
    for i in 0..n {
        toml.push_str(&format!("V{i} = \"{value}\"\n"));
    }
    let m = write(dir.path(), "many.toml", &toml);
    let out = list(&["--weights", "synthetic", "--config"], &[&m]);
    assert_exit_2_naming(&out, &["\"many\"", "ARG_MAX", &arg_max.to_string()]);
}

#[test]
fn a_pth_with_a_pickled_callable_exits_2_naming_the_key() {
    let dir = scratch();
    let original = fixture("wan21_tiny.weights.pth");
    // The rewritten copy without extra items loads: the rewriting itself is sound.
    let plain = dir.path().join("plain.pth");
    pth_with_extra_items(&original, &plain, &[]);
    let out = list(&["--weights"], &[&plain]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let evil = dir.path().join("evil.pth");
    pth_with_extra_items(&original, &evil, &pickled_call("hook"));
    let out = list(&["--weights"], &[&evil]);
    assert_exit_2_naming(&out, &["evil.pth", "`hook`", "os.system", "not a tensor"]);
    // The same refusal from every command that reads weights.
    let out = bench()
        .args(["validate", "--weights"])
        .arg(&evil)
        .arg("--cases")
        .arg(fixture("wan21_tiny.cases.safetensors"))
        .output()
        .unwrap();
    assert_exit_2_naming(&out, &["evil.pth", "`hook`"]);
    let out = bench().args(["inspect", "--weights"]).arg(&evil).output().unwrap();
    assert_exit_2_naming(&out, &["evil.pth", "`hook`"]);
}

#[test]
fn small_tiles_get_the_overlap_the_help_promises() {
    for (flag, value, id) in [
        ("--tile_px", "16", "tile16o8"),
        ("--tile", "24", "tile24o8"),
        ("--tile", "40", "tile40o8"),
    ] {
        let out = list(&["--weights", "synthetic", flag, value], &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(stdout(&out).contains(id), "{flag} {value}: {}", stdout(&out));
    }
    let help = bench().args(["run", "--help"]).output().unwrap();
    let help = stdout(&help);
    assert!(
        help.contains("a quarter of the tile rounded down to a multiple of 8, at least 8"),
        "{help}"
    );
}

/// Issue 30 item 17: a `.pth` whose tensor entry is marked compressed (a checkpoint re-zipped
/// by another tool) is refused up front, as `inspect` refused it, not `unsupported` in every
/// case.
#[test]
fn a_pth_with_a_compressed_entry_exits_2_naming_it() {
    let dir = scratch();
    let mut bytes = std::fs::read(fixture("wan21_tiny.weights.pth")).unwrap();
    // Mark the first tensor entry as deflated (method 8) in its central directory record and
    // its local header: the up-front check reads the method, never the data.
    let u16_at = |b: &[u8], i: usize| u16::from_le_bytes([b[i], b[i + 1]]) as usize;
    let mut entry = None;
    let mut at = 0;
    while let Some(i) = bytes[at..].windows(4).position(|w| w == b"PK\x01\x02") {
        let c = at + i;
        let name_len = u16_at(&bytes, c + 28);
        let name = String::from_utf8(bytes[c + 46..c + 46 + name_len].to_vec()).unwrap();
        if name.contains("/data/") {
            let local = u32::from_le_bytes(bytes[c + 42..c + 46].try_into().unwrap()) as usize;
            assert_eq!(&bytes[local..local + 4], b"PK\x03\x04");
            bytes[c + 10] = 8;
            bytes[local + 8] = 8;
            entry = Some(name);
            break;
        }
        at = c + 4;
    }
    let entry = entry.expect("the fixture has a tensor entry");
    let packed = dir.path().join("packed.pth");
    std::fs::write(&packed, bytes).unwrap();
    let out = list(&["--weights"], &[&packed]);
    assert_exit_2_naming(&out, &["packed.pth", &entry, "compressed", "torch.save"]);
}

/// Issue 30 item 12: checking axis values for duplicates is linear. 300,000 chunk values
/// (quadratic checking took about 80 s here) are refused for the case limit at once.
#[test]
fn a_huge_axis_is_checked_in_linear_time() {
    let dir = scratch();
    let values: Vec<String> = (1..=300_000).map(|i| i.to_string()).collect();
    let m = write(
        dir.path(),
        "m.toml",
        &format!(
            "[model]\nweights = \"synthetic\"\n[matrix]\nchunk = [{}]\n",
            values.join(",")
        ),
    );
    let t = std::time::Instant::now();
    let out = list(&["-c"], &[&m]);
    assert_exit_2_naming(&out, &["300000 cases", "--max-cases"]);
    // A loose bound (the check itself takes well under a second): far below the quadratic cost.
    assert!(t.elapsed().as_secs() < 20, "took {:?}", t.elapsed());
}

/// Issue 30 item 16: each error names the file and its key, or the file and what it holds.
#[test]
fn matrix_keys_and_cases_files_are_named_in_their_errors() {
    let dir = scratch();
    let missing = dir.path().join("nowhere");
    for (name, body, words) in [
        (
            "input.toml",
            "[run]\ninput = \"\"\n",
            vec!["input.toml", "run.input", "\"\""],
        ),
        (
            "empty.toml",
            "[model]\ncomfyui = \"\"\n",
            vec!["empty.toml", "model.comfyui", "empty string"],
        ),
        (
            "gone.toml",
            &*format!("[model]\ncomfyui = {:?}\n", missing.to_str().unwrap()),
            vec!["gone.toml", "[model] comfyui", "nowhere", "not an existing folder"],
        ),
    ] {
        let m = write(
            dir.path(),
            name,
            &format!("[model]\nweights = \"synthetic\"\n{}", body.replace("[model]\n", "")),
        );
        let out = list(&["-c"], &[&m]);
        assert_exit_2_naming(&out, &words);
    }
    // A cases file of the other model: refused naming it and both models, before any case.
    let out = bench()
        .args(["validate", "--weights", "synthetic", "--model", "wan2.1", "--cases"])
        .arg(fixture("wan22_tiny.cases.safetensors"))
        .output()
        .unwrap();
    assert_exit_2_naming(
        &out,
        &["wan22_tiny.cases.safetensors", "Wan 2.2", "Wan 2.1", "48 channels"],
    );
}

/// Issue 30 item 13: a variant of 8000 short variables runs (the spec, which names them,
/// goes to the worker in a file, not as one argument over Linux's 128 KiB limit).
#[test]
fn a_variant_with_thousands_of_variables_runs() {
    let dir = scratch();
    let vars: String = (0..8000).map(|i| format!("V{i:05}_ABCDEFGH = \"1\"\n")).collect();
    let m = write(
        dir.path(),
        "m.toml",
        &format!(
            "[model]\nweights = \"synthetic\"\n[run]\nwarmup = 0\nruns = 1\n[matrix]\nframes = [1]\n\
             size = [\"8x8\"]\nprecision = [\"fp32\"]\nenv = [\"big\"]\n[env.big]\n{vars}"
        ),
    );
    let report = dir.path().join("r.json");
    let out = bench()
        .args(["run", "--quiet", "-c"])
        .arg(&m)
        .arg("-o")
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let case = &r["cases"][0];
    assert_eq!(case["status"], "ok", "{}", case["error"]);
    assert_eq!(case["env"]["V07999_ABCDEFGH"], "1");
}

#[test]
fn a_clip_no_tensor_can_hold_exits_2_for_every_engine_before_anything_runs() {
    // Issue 58, item 11: `--frames 9223372036854775807` passed the plan (`--list` printed an
    // absurd GFLOP), a worker started, the case failed and the answer said it ran.
    let dir = scratch();
    let huge = "9223372036854775807";
    let out = list(&["--weights", "synthetic", "--frames", huge, "--size", "16x16"], &[]);
    assert_exit_2_naming(&out, &[huge, "frames and size", "16x16"]);
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    // No `--list`: refused before a worker starts, for candle and for a Python engine (whose
    // interpreter, a script that leaves a mark, must never run).
    let mark = dir.path().join("started");
    let py = write(
        dir.path(),
        "py",
        &format!("#!/bin/sh\ntouch '{}'\nexit 1\n", mark.display()),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&py, std::fs::Permissions::from_mode(0o755)).unwrap();
    for engine in ["candle", "torch"] {
        let report = dir.path().join(format!("{engine}.json"));
        let out = bench()
            .args([
                "run",
                "--weights",
                "synthetic",
                "--quiet",
                "--frames",
                huge,
                "--size",
                "16x16",
            ])
            .args(["--engine", engine, "--python"])
            .arg(&py)
            .arg("-o")
            .arg(&report)
            .output()
            .unwrap();
        assert_exit_2_naming(&out, &[huge]);
        assert!(!report.exists() && !mark.exists(), "{engine}: nothing may run");
    }
    // A clip that can exist but not in this machine's memory: candle too is refused up front.
    let out = bench()
        .args([
            "run",
            "--weights",
            "synthetic",
            "--quiet",
            "--frames",
            "1000000001",
            "--size",
            "1024x1024",
        ])
        .arg("-o")
        .arg(dir.path().join("big.json"))
        .output()
        .unwrap();
    assert_exit_2_naming(
        &out,
        &["cannot allocate the input clip of 1000000001 frames at 1024x1024"],
    );
}
