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
