//! `scripts/gpu-lent.sh`, the one call on a lent GPU, on a machine without one: it refuses
//! within seconds a CUDA binary that cannot start (naming the library) or that is not the
//! cuDNN build of the tree being measured; its plan puts what a short call needs first,
//! torch's true-fp32 reference first in every step, within a budget that leaves a warm
//! retry; its snapshots survive files being written and leave no temporary file; and the
//! whole script, run end to end with the CPU build and no GPU, finishes, says there is no
//! GPU and claims no figure. Needs bash, python3, tar, flock and a C compiler (cc).
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::util::cli::{entries, scratch, stderr, stdout, write, BIN};

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts").join(name)
}

/// `gpu-lent.sh args` with `env`, its work folder in `dir`; output and wall time.
fn lent(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (Output, Duration) {
    let mut cmd = Command::new("bash");
    cmd.arg(script("gpu-lent.sh"))
        .args(args)
        .env("GPU_LENT_WORK", dir.join("work"))
        .env_remove("GPU_LENT_STEPS")
        .env_remove("GPU_LENT_FAKE_DEVICE")
        .env_remove("GPU_LENT_SMOKE")
        .env_remove("GPU_LENT_GATE")
        .env_remove("WAN_VAE_BENCH_FAULT");
    if let Ok(py) = crate::util::cli::python() {
        cmd.env("WAN_VAE_BENCH_PYTHON", py);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let t = Instant::now();
    let out = cmd.output().expect("run bash");
    (out, t.elapsed())
}

/// `file` compressed as the bundle carries it (xz, read back with python3's lzma).
fn xz(file: &Path, to: &Path) {
    let ok = Command::new("python3")
        .args([
            "-c",
            "import lzma, shutil, sys; shutil.copyfileobj(open(sys.argv[1], 'rb'), lzma.open(sys.argv[2], 'wb', preset=0))",
        ])
        .arg(file)
        .arg(to)
        .status()
        .unwrap();
    assert!(ok.success());
}

/// The names `tar tzf` lists in `tarball`.
fn listed(tarball: &Path) -> String {
    let out = Command::new("tar").arg("tzf").arg(tarball).output().unwrap();
    assert!(out.status.success(), "{}: {}", tarball.display(), stderr(&out));
    stdout(&out)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// DEST holds the two files a call brings back and nothing half-written.
fn only_whole_files(dest: &Path) {
    assert_eq!(
        entries(dest),
        ["gpu-lent.tar.gz", "session.txt"],
        "no temporary file left"
    );
}

#[test]
fn a_cuda_binary_that_cannot_start_is_refused_within_seconds_naming_the_library() {
    let dir = scratch();
    let d = dir.path();
    // A real ELF that needs a library the loader will not find (as a stale build or a
    // machine without cuDNN would).
    write(d, "lib.c", "int wvb_fake_cudnn(void) { return 9; }\n");
    write(
        d,
        "main.c",
        "int wvb_fake_cudnn(void);\nint main(void) { return wvb_fake_cudnn() - 9; }\n",
    );
    let cc = |args: &[&str]| {
        let out = Command::new("cc")
            .current_dir(d)
            .args(args)
            .output()
            .expect("a C compiler (cc)");
        assert!(out.status.success(), "cc {args:?}: {}", stderr(&out));
    };
    cc(&[
        "-shared",
        "-fPIC",
        "-Wl,-soname,libwvbfake_cudnn.so.9",
        "-o",
        "libwvbfake_cudnn.so.9",
        "lib.c",
    ]);
    cc(&["-o", "wan-vae-bench-cuda", "main.c", "-L.", "-l:libwvbfake_cudnn.so.9"]);
    std::fs::remove_file(d.join("libwvbfake_cudnn.so.9")).unwrap();
    let bundle = d.join("bundle");
    std::fs::create_dir(&bundle).unwrap();
    xz(&d.join("wan-vae-bench-cuda"), &bundle.join("wan-vae-bench-cuda.xz"));
    let dest = d.join("out");
    let (out, took) = lent(
        d,
        &[dest.to_str().unwrap(), "480"],
        &[("GPU_LENT_BUNDLE", bundle.to_str().unwrap())],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(2), "refused\n{text}\n{}", stderr(&out));
    assert!(
        took < Duration::from_secs(30),
        "refused within seconds, not {took:?}\n{text}"
    );
    assert!(
        text.contains("REFUSED: the binary cannot start: libwvbfake_cudnn.so.9 not found"),
        "names the library\n{text}"
    );
    assert!(!text.contains("step validate"), "nothing ran\n{text}");
    assert!(!text.contains("wan-vae-bench.gz"), "no CPU build in its place\n{text}");
    only_whole_files(&dest);
    let files = listed(&dest.join("gpu-lent.tar.gz"));
    for f in ["work/refused.txt", "work/setup.txt", "work/session.txt"] {
        assert!(files.contains(f), "{f} in the tarball: {files}");
    }
    assert!(read(&dest.join("session.txt")).contains("libwvbfake_cudnn.so.9"));
}

#[test]
fn a_binary_without_cudnn_or_of_another_commit_or_tree_is_refused() {
    let dir = scratch();
    let d = dir.path();
    let bundle = d.join("bundle");
    std::fs::create_dir(&bundle).unwrap();
    // The CPU build in the CUDA binary's place, with a manifest of other sources.
    xz(Path::new(BIN), &bundle.join("wan-vae-bench-cuda.xz"));
    write(
        &bundle,
        "manifest.json",
        r#"{"commit": "0000000000000000000000000000000000000000", "uncommitted_source_changes": true,
            "source_fingerprint": "not-this-tree"}"#,
    );
    let dest = d.join("out");
    let want = "1111111111111111111111111111111111111111";
    let (out, took) = lent(
        d,
        &[dest.to_str().unwrap(), "480", want],
        &[("GPU_LENT_BUNDLE", bundle.to_str().unwrap())],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(2), "refused\n{text}\n{}", stderr(&out));
    assert!(
        took < Duration::from_secs(60),
        "refused within seconds, not {took:?}\n{text}"
    );
    for why in [
        "REFUSED: the binary has no cuDNN: `system --json` lists features none",
        &format!(", not {want}, the commit being measured"),
        "REFUSED: the manifest's commit 0000000000000000000000000000000000000000 is not the binary's",
        "REFUSED: the binary was built from 0000000000000000000000000000000000000000 with uncommitted source changes",
        "REFUSED: the binary was built from other sources than this tree's",
        "REFUSED: NO GPU",
    ] {
        assert!(text.contains(why), "{why}\n{text}");
    }
    assert!(!text.contains("step "), "nothing ran\n{text}");
    only_whole_files(&dest);
}

/// `gpu-lent.sh --plan`: the budget line's numbers, and per step its need, cap, runs and the
/// ids of the cases its `run` plans, in order.
struct Plan {
    deadline: u64,
    timeout: u64,
    budget: u64,
    start: u64,
    retry: u64,
    setup: u64,
    steps: Vec<(String, u64, u64, String, Vec<String>)>,
}

fn plan() -> Plan {
    let dir = scratch();
    let (out, _) = lent(dir.path(), &["--plan"], &[("WAN_VAE_BENCH", BIN)]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    let num = |line: &str, after: &str| -> u64 {
        let rest = &line[line.find(after).unwrap_or_else(|| panic!("{after} in {line}")) + after.len()..];
        rest.split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let first = text.lines().next().unwrap();
    let mut p = Plan {
        deadline: num(first, "deadline "),
        timeout: num(first, "call timeout_s "),
        budget: num(first, "device budget "),
        start: num(first, "start "),
        retry: num(first, "warm retry "),
        setup: num(text.lines().nth(1).unwrap(), "setup "),
        steps: Vec::new(),
    };
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("step ") {
            let name = rest.split_whitespace().next().unwrap().to_string();
            let runs = rest.split_once(" runs ").unwrap().1.to_string();
            p.steps
                .push((name, num(l, " need "), num(l, " cap "), runs, Vec::new()));
        } else if l.starts_with("    ") {
            let id = l.split_whitespace().next().unwrap_or("");
            if id.ends_with("x480-baseline-tf32_off") || id.contains("-chunk") {
                p.steps.last_mut().unwrap().4.push(id.to_string());
            }
        }
    }
    p
}

#[test]
fn the_plan_puts_what_a_short_call_needs_first_and_leaves_a_warm_retry() {
    let p = plan();
    let names: Vec<&str> = p.steps.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "validate",
            "wan21",
            "conv-bench",
            "profile",
            "wan22-decode",
            "decode-81"
        ],
        "validate, Wan 2.1 21x832x480, conv-bench, profile, then the two largest"
    );
    let step = |n: &str| p.steps.iter().find(|s| s.0 == n).unwrap();
    // Fewer timed runs on the two largest.
    assert_eq!(step("wan21").3, "--warmup 1 --runs 3");
    for n in ["wan22-decode", "decode-81"] {
        assert_eq!(step(n).3, "--warmup 1 --runs 2", "{n}");
    }
    // What a short call must bring back fits the deadline with every cap spent in full.
    let must: u64 = names[..4].iter().map(|n| step(n).2).sum();
    assert!(
        p.setup + must <= p.deadline,
        "setup {} + caps {must} > deadline {}",
        p.setup,
        p.deadline
    );
    // And at least one of the large steps can start after them.
    assert!(p.deadline - p.setup - must >= step("wan22-decode").1);
    // Each step's need is at most its cap.
    assert!(p.steps.iter().all(|s| s.1 <= s.2), "{:?}", p.steps);
    // The device minutes: a fresh start, this call, then a warm retry of at least 3 minutes,
    // within the 15 minutes a session has; the call's timeout leaves the last snapshot and
    // the transfers time after the deadline.
    assert_eq!(p.budget, 900);
    assert_eq!(p.start + p.timeout + p.retry, p.budget);
    assert!(p.retry >= 180, "a warm retry of {} s", p.retry);
    assert!(p.timeout >= p.deadline + 30 && p.timeout <= 600);
    // torch's true-fp32 reference first in every timed step, and no TF32 case at all.
    for n in ["wan21", "profile", "wan22-decode", "decode-81"] {
        let ids = &step(n).4;
        assert!(ids.len() >= 4, "{n}: torch and candle, fp32 and bf16: {ids:?}");
        assert!(
            ids[0].starts_with("torch-fp32-") && ids[0].ends_with("-tf32_off"),
            "{n}: first {ids:?}"
        );
        assert!(ids.iter().any(|i| !i.starts_with("torch-")), "{n}: candle too: {ids:?}");
        for i in ids.iter().filter(|i| i.starts_with("torch-fp32")) {
            assert!(i.ends_with("-tf32_off"), "{n}: a TF32 case {i}");
        }
    }
}

/// `bash -c 'source gpu-lent-pack.sh; CODE'` with `args` as $1...
fn pack_shell(code: &str, args: &[&Path]) -> Output {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(". '{}'; {code}", script("gpu-lent-pack.sh").display()))
        .arg("pack")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{code}: {}", stderr(&out));
    out
}

#[test]
fn a_snapshot_taken_while_files_are_written_is_kept_whole() {
    let dir = scratch();
    let (dest, work) = (dir.path().join("dest"), dir.path().join("wvb-lent"));
    std::fs::create_dir_all(&dest).unwrap();
    std::fs::create_dir_all(work.join("wan21")).unwrap();
    let log = work.join("session.txt");
    write(&work, "session.txt", "started\n");
    // A report being written all the while: GNU tar says "file changed as we read it" and
    // exits 1, which used to skip the snapshot.
    let out = pack_shell(
        r#"f=$2/wan21/wan21.log
        ( while :; do for j in $(seq 128); do head -c 65536 /dev/zero >> "$f"; done; : > "$f"; done ) & w=$!
        for i in $(seq 12); do
            echo $i > "$2/round"
            lent_pack "$1" "$2" "$3"
            tar xzOf "$1/gpu-lent.tar.gz" wvb-lent/round
        done
        kill $w; wait $w 2>/dev/null; true"#,
        &[&dest, &work, &log],
    );
    let rounds: Vec<String> = stdout(&out).lines().map(String::from).collect();
    let want: Vec<String> = (1..=12).map(|i| i.to_string()).collect();
    assert_eq!(rounds, want, "every snapshot replaced the last one");
    assert!(!read(&log).contains("FAILED"), "{}", read(&log));
    let files = listed(&dest.join("gpu-lent.tar.gz"));
    assert!(files.contains("wvb-lent/wan21/wan21.log"), "{files}");
    only_whole_files(&dest);
}

#[test]
fn a_failed_snapshot_is_said_and_the_last_whole_one_stays() {
    let dir = scratch();
    let (dest, work) = (dir.path().join("dest"), dir.path().join("wvb-lent"));
    std::fs::create_dir_all(&work).unwrap();
    let log = write(&work, "session.txt", "started\n");
    // Where the snapshot should go, a folder: it cannot be replaced.
    std::fs::create_dir_all(dest.join("gpu-lent.tar.gz")).unwrap();
    pack_shell(r#"lent_pack "$1" "$2" "$3""#, &[&dest, &work, &log]);
    let said = read(&log);
    assert!(
        said.contains("] FAILED: ") && said.contains("the previous snapshot stays"),
        "{said}"
    );
    assert!(dest.join("gpu-lent.tar.gz").is_dir());
    assert_eq!(
        entries(&dest),
        ["gpu-lent.tar.gz", "session.txt"],
        "no temporary file left"
    );
}

#[test]
fn the_packer_stopped_mid_snapshot_finishes_it_and_leaves_no_temporary_file() {
    let dir = scratch();
    let (dest, work) = (dir.path().join("dest"), dir.path().join("wvb-lent"));
    std::fs::create_dir_all(&dest).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let log = write(&work, "session.txt", "started\n");
    // Enough to pack that a stop lands inside a snapshot more often than not.
    let out = Command::new("head")
        .args(["-c", "20000000", "/dev/urandom"])
        .output()
        .unwrap();
    std::fs::write(work.join("big.bin"), out.stdout).unwrap();
    for delay in ["0.05", "0.3", "0.7"] {
        pack_shell(
            &format!(
                r#"lent_packer "$1" "$2" "$3" 0.01 & p=$!
                sleep {delay}; kill -TERM $p; wait $p
                lent_sweep "$1""#
            ),
            &[&dest, &work, &log],
        );
        only_whole_files(&dest);
    }
    assert!(listed(&dest.join("gpu-lent.tar.gz")).contains("wvb-lent/big.bin"));
    assert!(!read(&log).contains("FAILED"), "{}", read(&log));
}

#[test]
fn the_whole_call_without_a_gpu_finishes_says_so_and_claims_no_figure() {
    let dir = scratch();
    let dest = dir.path().join("out");
    let (out, took) = lent(
        dir.path(),
        &[dest.to_str().unwrap(), "400"],
        &[("GPU_LENT_FAKE_DEVICE", "1"), ("WAN_VAE_BENCH", BIN)],
    );
    let text = stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "finished, not passed\n{text}\n{}",
        stderr(&out)
    );
    for said in [
        "a rehearsal without a GPU (GPU_LENT_FAKE_DEVICE=1): nothing below is a measurement",
        "a real call would refuse: NO GPU",
        "a real call would refuse: the binary has no cuDNN",
        "step validate (cap",
        "SKIP step wan21: validate did not pass on the device (0 of 4 candle checks PASS",
        "step conv-bench (cap",
        "SKIP step profile: validate did not pass",
        "SKIP step wan22-decode: validate did not pass",
        "SKIP step decode-81: validate did not pass",
        "NO GPU on this machine: 0 case(s) measured on the GPU; no figure here is a measurement",
    ] {
        assert!(text.contains(said), "{said}\n{text}");
    }
    assert!(took < Duration::from_secs(300), "{took:?}");
    only_whole_files(&dest);
    let files = listed(&dest.join("gpu-lent.tar.gz"));
    for f in [
        "work/validate/checks.txt",
        "work/conv-bench/checks.txt",
        "work/setup.txt",
        "work/session.txt",
    ] {
        assert!(files.contains(f), "{f}: {files}");
    }
    // What the steps said: the validate lines UNSUPPORTED with the reason, conv-bench a FAIL
    // with candle's own error; no PASS of anything timed.
    let work = dir.path().join("work");
    let validate = read(&work.join("validate/checks.txt"));
    assert_eq!(
        validate.matches("UNSUPPORTED validate candle-").count(),
        4,
        "{validate}"
    );
    let conv = read(&work.join("conv-bench/checks.txt"));
    assert!(
        conv.contains("FAIL        conv-bench fp32: `conv-bench` failed: error:"),
        "{conv}"
    );
    assert!(
        !text.lines().any(|l| l.starts_with("PASS") && l.contains(" run ")),
        "{text}"
    );

    // The same with the gate open: every step runs its `run`s, and each case says why it
    // could not run; still no figure.
    let dest = dir.path().join("out2");
    let (out, _) = lent(
        dir.path(),
        &[dest.to_str().unwrap(), "400"],
        &[
            ("GPU_LENT_FAKE_DEVICE", "1"),
            ("WAN_VAE_BENCH", BIN),
            ("GPU_LENT_GATE", "0"),
        ],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}\n{}", stderr(&out));
    for step in [
        "validate",
        "wan21",
        "conv-bench",
        "profile",
        "wan22-decode",
        "decode-81",
    ] {
        assert!(text.contains(&format!("step {step} (cap")), "{step}\n{text}");
        assert!(text.contains(&format!("step {step}: exit ")), "{step} finished\n{text}");
    }
    assert!(
        text.contains("NO GPU on this machine: 0 case(s) measured on the GPU; no figure here is a measurement"),
        "{text}"
    );
    only_whole_files(&dest);
    let files = listed(&dest.join("gpu-lent.tar.gz"));
    for step in ["wan21", "profile", "wan22-decode", "decode-81"] {
        let checks = read(&work.join(format!("{step}/checks.txt")));
        assert!(!checks.lines().any(|l| l.starts_with("PASS")), "{step}: {checks}");
        assert!(!checks.is_empty(), "{step}: a verdict per case");
        assert!(files.contains(&format!("work/{step}/checks.txt")), "{step}: {files}");
    }
}

/// `scripts/build-cuda.sh ARGS --dry-run` from `cwd`: its stderr (the folders it would use).
fn build_cuda_dry(cwd: &Path, args: &[&str]) -> (Output, String) {
    let out = Command::new("bash")
        .arg(script("build-cuda.sh"))
        .args(args)
        .arg("--dry-run")
        .current_dir(cwd)
        .env_remove("GPU_BUNDLE_MAX_BYTES")
        .output()
        .unwrap();
    let text = stderr(&out);
    (out, text)
}

#[test]
fn build_cuda_takes_its_folders_from_arguments_or_inside_the_clone() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = scratch();
    let (out, text) = build_cuda_dry(dir.path(), &[]);
    assert!(out.status.success(), "{text}");
    let r = root.display().to_string();
    for said in [
        format!("toolchain {r}/target/cuda-toolchain"),
        format!("link folder {r}/target/cuda/cuda-link/lib; target {r}/target/cuda"),
        format!("bundle {r}/.gpu"),
    ] {
        assert!(text.contains(&said), "{said}\n{text}");
    }
    // Every folder it names lies in this clone, wherever the clone is
    // (CI clones under a folder of its own that may hold `/work/` too).
    assert!(
        !text.replace(&r, "<clone>").contains("/work/"),
        "no fixed folder of one machine\n{text}"
    );
    assert!(!text.contains("/tmp/cuda13"), "{text}");
    // Given folders, relative ones taken from where it is run.
    let site = dir.path().join("env/lib/python3.12/site-packages/nvidia");
    std::fs::create_dir_all(&site).unwrap();
    let (out, text) = build_cuda_dry(
        dir.path(),
        &[
            "--toolchain",
            "tc",
            "--target-dir",
            "/elsewhere/t",
            "--libs-from",
            "env",
            "--features",
            "cuda",
        ],
    );
    assert!(out.status.success(), "{text}");
    let d = dir.path().display().to_string();
    for said in [
        format!("toolchain {d}/tc ("),
        format!("libraries from {}", site.display()),
        "link folder /elsewhere/t/cuda-link/lib; target /elsewhere/t; features cuda".to_string(),
    ] {
        assert!(text.contains(&said), "{said}\n{text}");
    }
    // Not downloaded when taken from the environment.
    assert!(!text.contains("nvidia-cudnn-cu13"), "{text}");
    let (out, text) = build_cuda_dry(dir.path(), &["--libs-from", "no-such-env"]);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("--libs-from") && text.contains("no-such-env"), "{text}");
}

#[test]
fn the_bundle_and_the_tree_fit_one_call_well_under_its_limit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (out, text) = build_cuda_dry(root, &[]);
    assert!(out.status.success(), "{text}");
    let max: u64 = text
        .split("(at most ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the bundle's limit\n{text}"));
    // What travels besides .gpu/: the tracked files and the untracked ones git does not ignore.
    let ls = Command::new("git")
        .args(["ls-files", "-z", "--cached", "--others", "--exclude-standard"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(ls.status.success(), "{}", stderr(&ls));
    let tree: u64 = ls
        .stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .filter_map(|p| std::fs::metadata(root.join(String::from_utf8_lossy(p).as_ref())).ok())
        .map(|m| m.len())
        .sum();
    const MIB: u64 = 1 << 20;
    // The limit of one call is 64 MiB; "well under": 8 MiB to spare.
    assert!(
        tree + max <= 56 * MIB,
        "tree {:.1} MiB + bundle limit {:.1} MiB over 56 MiB",
        tree as f64 / MIB as f64,
        max as f64 / MIB as f64
    );
    // A bundle built here keeps to its limit.
    if let Ok(rd) = std::fs::read_dir(root.join(".gpu")) {
        let have: u64 = rd.filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum();
        assert!(have <= max, ".gpu holds {have} bytes, over {max}");
    }
}
