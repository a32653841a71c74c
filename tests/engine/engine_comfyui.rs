//! The comfyui engine (issue 18) for real, on the CPU: ComfyUI 0.3.64 unpacked from
//! `../shared/comfyui/` into a temporary folder (GPL-3.0 test data, nothing of it is in the
//! project), synthetic weights at the real widths (ComfyUI hard-codes them) and small sizes.
//! Needs the test Python with torch and ComfyUI's VAE packages (`scripts/test.sh` installs them)
//! and the ComfyUI tarball (`util::cli::comfyui_tarball`); without them the tests skip.
//! How the folder and interpreter are found, and what is refused: `comfyui_setup`.
use std::path::Path;

use crate::need;
use crate::util::cli::*;
use wan_vae_bench::report::{CaseStatus, Report};

fn comfy_run(dir: &Path, folder: &Path, python: &Path, extra: &[&str]) -> Report {
    let mut args = vec![
        "--comfyui",
        folder.to_str().unwrap(),
        "--python",
        python.to_str().unwrap(),
        "--warmup",
        "0",
        "--runs",
        "1",
        "--timeout",
        "300",
        // ComfyUI's nodes are the subject, not the drift: no A/A control (issue 63).
        "--control",
        "off",
    ];
    args.extend_from_slice(extra);
    if !extra.contains(&"--frames") {
        args.extend_from_slice(&["--frames", "5"]);
    }
    let (out, path) = run(dir, &args);
    assert!(path.is_file(), "{}", stderr(&out));
    load(&path)
}

fn case<'a>(r: &'a Report, id: &str) -> &'a wan_vae_bench::report::CaseRecord {
    r.cases.iter().find(|c| c.id == id).unwrap_or_else(|| {
        panic!(
            "no case {id} in {:?}",
            r.cases.iter().map(|c| &c.id).collect::<Vec<_>>()
        )
    })
}

#[test]
fn comfyui_agrees_with_candle_and_records_its_own_choices() {
    let py = need!(python());
    let dir = scratch();
    let folder = need!(comfyui(dir.path()));
    let r = comfy_run(
        dir.path(),
        &folder,
        &py,
        &[
            "--engine",
            "candle,comfyui",
            "--precision",
            "fp32,auto",
            "--size",
            "64x64",
        ],
    );
    let fp32 = case(&r, "comfyui-fp32-chunk1-untiled-5x64x64-baseline");
    assert_eq!(fp32.outcome.status, CaseStatus::Ok, "{:?}", fp32.outcome.error);
    let x = fp32
        .quality
        .as_ref()
        .unwrap()
        .cross_engine
        .as_ref()
        .expect("cross_engine");
    assert_eq!(x.reference_engine, "candle");
    assert!(x.max_abs_error <= 1e-4 * x.max_abs_reference.max(1.0), "{x:?}");
    let auto = case(&r, "comfyui-auto-chunk1-untiled-5x64x64-baseline");
    assert_eq!(auto.outcome.status, CaseStatus::Ok, "{:?}", auto.outcome.error);
    let facts = auto.outcome.engine_case.as_ref().expect("engine_case");
    assert_eq!(facts["comfyui_version"], "0.3.64");
    // On the CPU ComfyUI's own pick is fp32; the dtype used is recorded next to it.
    assert_eq!(facts["vae_dtype"], facts["default_vae_dtype"]);
    assert!(facts["memory_estimate_decode_bytes"].as_u64().unwrap() > 0);
    // 0.3.64 reads no COMFYUI_ENABLE_MIOPEN (cuDNN off on AMD, no switch); it has --fast autotune.
    assert_eq!(facts["switches"]["enable_miopen_env"], false, "{facts:?}");
    assert_eq!(facts["switches"]["cudnn_off_on_amd"], true, "{facts:?}");
    assert_eq!(facts["switches"]["fast_autotune"], true, "{facts:?}");
    assert_eq!(auto.outcome.oom_tiled_retry, Some(false));
    // ComfyUI's own chunking, as it ran: 0.3.64 decodes Wan 2.1 one latent frame per call
    // (5 frames are 2 latent frames); its process_output makes a new tensor.
    assert_eq!(
        facts["decoder_call_latent_frames"],
        serde_json::json!([[1, 2]]),
        "{facts:?}"
    );
    assert_eq!(facts["process_output_in_place"], false);
    assert_eq!(facts["oom_fallback_tiles"], serde_json::json!([]));
    // Candle has no dtype choice of its own: `auto` is unsupported there, the sweep goes on.
    let candle_auto = case(&r, "auto-chunk1-untiled-5x64x64-baseline");
    assert_eq!(candle_auto.outcome.status, CaseStatus::Unsupported);
    assert_eq!(r.engines["comfyui"].text("comfyui_version"), Some("0.3.64"));
}

#[test]
fn comfyui_wan22_tiles_in_its_own_units_and_records_a_forced_oom_retry() {
    let py = need!(python());
    let dir = scratch();
    let folder = need!(comfyui(dir.path()));
    let r = comfy_run(
        dir.path(),
        &folder,
        &py,
        &[
            "--engine",
            "candle,comfyui",
            "--model",
            "wan2.2",
            "--size",
            "32x32",
            "--precision",
            "fp32",
            // 9 frames are 3 latent frames: an 8:4 temporal tile really splits them.
            "--frames",
            "9",
            "--temporal-tile",
            "none,8:4",
        ],
    );
    let base = r
        .cases
        .iter()
        .find(|c| c.settings.engine.name() == "comfyui" && c.settings.temporal_tile.is_none())
        .expect("the untiled comfyui case");
    assert_eq!(base.outcome.status, CaseStatus::Ok, "{:?}", base.outcome.error);
    let x = base
        .quality
        .as_ref()
        .unwrap()
        .cross_engine
        .as_ref()
        .expect("cross_engine");
    assert!(x.max_abs_error <= 1e-4 * x.max_abs_reference.max(1.0), "{x:?}");
    let tiled = r
        .cases
        .iter()
        .find(|c| c.settings.engine.name() == "comfyui" && c.settings.temporal_tile.is_some())
        .expect("a temporally tiled comfyui case");
    assert_eq!(tiled.outcome.status, CaseStatus::Ok, "{:?}", tiled.outcome.error);
    let q = tiled.quality.as_ref().unwrap();
    assert_eq!(q.reference_id, base.id, "tiled error is against its own untiled decode");
    let decoded = q.decoded.as_ref().expect("decoded error against the untiled decode");
    assert!(
        !decoded.identical,
        "an 8:4 temporal tile over 9 frames changes the decode"
    );

    // The testing hook: ComfyUI's first decoder call raises its OOM exception.
    let oom_dir = scratch();
    let path = oom_dir.path().join("report.json");
    let out = bench()
        .env("WAN_VAE_BENCH_FAULT", "comfyui-oom")
        .args([
            "run",
            "--fault-hooks",
            "--engine",
            "comfyui",
            "--comfyui",
            folder.to_str().unwrap(),
            "--python",
        ])
        .arg(&py)
        .args([
            "--model",
            "wan2.2",
            "--size",
            "32x32",
            "--frames",
            "5",
            "--passes",
            "decode",
            // bf16 convolutions on a CPU take minutes here; the retry is the same in fp32.
            "--precision",
            "fp32",
        ])
        .args(["--warmup", "0", "--runs", "1", "--quiet", "--output"])
        .arg(&path)
        .output()
        .unwrap();
    let r = load(&path);
    let c = &r.cases[0];
    assert_eq!(
        c.outcome.status,
        CaseStatus::Ok,
        "{:?} {}",
        c.outcome.error,
        stderr(&out)
    );
    assert_eq!(c.outcome.oom_tiled_retry, Some(true));
    // The tiles ComfyUI fell back to are recorded (0.3.64: 256 px over Wan 2.2's 16 = 16).
    let facts = c.outcome.engine_case.as_ref().expect("engine_case");
    let tiles = facts["oom_fallback_tiles"].as_array().expect("oom_fallback_tiles");
    assert_eq!(tiles.len(), 1, "{facts:?}");
    assert_eq!(
        (tiles[0]["tile_x"].as_u64(), tiles[0]["tile_y"].as_u64()),
        (Some(16), Some(16)),
        "{facts:?}"
    );
}

#[test]
fn not_a_comfyui_folder_and_a_python_without_its_packages_are_unsupported() {
    let py = need!(python());
    let dir = scratch();
    let plain = dir.path().join("not-comfy");
    std::fs::create_dir(&plain).unwrap();
    let r = comfy_run(
        dir.path(),
        &plain,
        &py,
        &["--engine", "comfyui,candle", "--size", "32x32"],
    );
    let c = r.cases.iter().find(|c| c.settings.engine.name() == "comfyui").unwrap();
    assert_eq!(c.outcome.status, CaseStatus::Unsupported);
    let e = c.outcome.error.as_deref().unwrap();
    assert!(e.contains("not-comfy") && e.contains("not a ComfyUI checkout"), "{e}");
    // The sweep goes on: candle ran.
    assert!(r
        .cases
        .iter()
        .any(|c| c.settings.engine.name() == "candle" && c.outcome.status == CaseStatus::Ok));

    // A Python that lacks torch (a wrapper that hides every installed package).
    let other = scratch();
    let folder = need!(comfyui(other.path()));
    let bare = executable(other.path(), "bare-python", "#!/bin/sh\nexec python3 -S -I \"$@\"\n");
    let r = comfy_run(
        other.path(),
        &folder,
        &bare,
        &["--engine", "comfyui", "--size", "32x32"],
    );
    let c = &r.cases[0];
    assert_eq!(c.outcome.status, CaseStatus::Unsupported);
    let e = c.outcome.error.as_deref().unwrap();
    assert!(
        e.contains("ComfyUI 0.3.64") && e.contains("torch is not installed"),
        "{e}"
    );
}

#[test]
fn comfyui_bf16_and_spatial_tiles_run_as_its_nodes_do() {
    let py = need!(python());
    let dir = scratch();
    let folder = need!(comfyui(dir.path()));
    // One frame at 96x64 keeps ComfyUI's real-width VAE quick on a CPU; a 64 px tile (the
    // nodes' smallest) cuts it in two. fp32 only: a bf16 tiled case takes minutes where torch
    // emulates bf16 (AVX2-only CPUs); bf16 runs for Wan 2.2 below.
    let r = comfy_run(
        dir.path(),
        &folder,
        &py,
        &[
            "--engine",
            "comfyui",
            "--precision",
            "fp32",
            "--tile",
            "none,64:32",
            "--size",
            "96x64",
            "--frames",
            "1",
        ],
    );
    let reference = case(&r, "comfyui-fp32-chunk1-untiled-1x96x64-baseline");
    let limits = node_limits(&folder);
    for c in &r.cases {
        assert_eq!(c.outcome.status, CaseStatus::Ok, "{}: {:?}", c.id, c.outcome.error);
        let facts = c.outcome.engine_case.as_ref().expect("engine_case");
        assert_eq!(facts["vae_dtype"], c.settings.precision.name(), "{}", c.id);
        assert_eq!(c.outcome.oom_tiled_retry, Some(false));
        advice_is_what_ran(&r, c, &limits);
        if c.id == reference.id {
            continue;
        }
        // The tiles (VAEEncodeTiled, VAEDecodeTiled) against the fp32 untiled case.
        let q = c.quality.as_ref().expect("quality");
        assert_eq!(q.reference_id, reference.id);
        for err in [q.decoded.as_ref().unwrap(), q.latent.as_ref().unwrap()] {
            assert!(!err.identical && err.max_abs > 0.0, "{}: {err:?}", c.id);
        }
    }
    assert_eq!(r.cases.len(), 2);

    // Wan 2.2 in ComfyUI's own dtype (`auto`) and bf16, next to the fp32 reference the run adds.
    let dir22 = scratch();
    let r = comfy_run(
        dir22.path(),
        &folder,
        &py,
        &[
            "--engine",
            "comfyui",
            "--model",
            "wan2.2",
            "--precision",
            "auto,bf16",
            "--size",
            "32x32",
            "--frames",
            "1",
        ],
    );
    assert_eq!(
        r.cases.len(),
        3,
        "{:?}",
        r.cases.iter().map(|c| &c.id).collect::<Vec<_>>()
    );
    for c in &r.cases {
        assert_eq!(c.outcome.status, CaseStatus::Ok, "{}: {:?}", c.id, c.outcome.error);
        let facts = c.outcome.engine_case.as_ref().expect("engine_case");
        let want = match c.settings.precision.name() {
            "auto" => facts["default_vae_dtype"].as_str().unwrap().to_string(),
            other => other.to_string(),
        };
        assert_eq!(facts["vae_dtype"], want.as_str(), "{}", c.id);
    }
}

#[test]
fn the_cases_knobs_win_over_comfyuis_start_up() {
    let dir = scratch();
    let folder = need!(comfyui(dir.path()));
    // ComfyUI turns cuDNN (MIOpen) off when it starts on an AMD GPU; this copy does it on
    // every device, and an interpreter wrapper asks for cuDNN on (on a CPU the parent sends
    // no knob, so the test sets the spec's).
    let mm = folder.join("comfy/model_management.py");
    let mut text = std::fs::read_to_string(&mm).unwrap();
    text.push_str("\ntorch.backends.cudnn.enabled = False  # the test's stand-in for the AMD start-up\n");
    std::fs::write(&mm, text).unwrap();
    let real = need!(python());
    let wrapper = executable(
        dir.path(),
        "python-cudnn-on",
        &format!(
            "#!{}\nimport json, os, subprocess, sys\nargs = sys.argv[1:]\nif \"--session\" not in args:\n    \
             os.execv({real:?}, [{real:?}] + args)\np = subprocess.Popen([{real:?}] + args, stdin=subprocess.PIPE, \
             text=True)\nfor line in sys.stdin:\n    path = line.rstrip(\"\\n\").split(\"\\t\")[0]\n    \
             spec = json.load(open(path))\n    spec[\"cudnn\"] = \"on\"\n    json.dump(spec, open(path, \"w\"))\n    \
             p.stdin.write(line)\n    p.stdin.flush()\np.stdin.close()\nsys.exit(p.wait())\n",
            real.display(),
            real = real.display().to_string()
        ),
    );
    let r = comfy_run(
        dir.path(),
        &folder,
        &wrapper,
        &["--engine", "comfyui", "--size", "32x32", "--frames", "1"],
    );
    let c = &r.cases[0];
    assert_eq!(c.outcome.status, CaseStatus::Ok, "{:?}", c.outcome.error);
    let facts = c.outcome.engine_case.as_ref().unwrap();
    assert_eq!(facts["knobs_before_startup"]["cudnn"], "on", "{facts:?}");
    assert_eq!(facts["knobs_after_startup"]["cudnn"], "off", "{facts:?}");
    assert_eq!(
        facts["knobs_after_ours"]["cudnn"], "on",
        "the case's setting is in force: {facts:?}"
    );
}

#[test]
fn validate_runs_the_users_comfyui_with_its_folder_and_auto() {
    let py = need!(python());
    let dir = scratch();
    let folder = need!(comfyui(dir.path()));
    let out = bench()
        .args([
            "validate",
            "--json",
            "--engine",
            "comfyui",
            "--precision",
            "auto",
            "--comfyui",
        ])
        .arg(&folder)
        .arg("--python")
        .arg(&py)
        .arg("--weights")
        .arg(fixture("wan21_tiny.weights.safetensors"))
        .arg("--cases")
        .arg(fixture("wan21_tiny.cases.safetensors"))
        .output()
        .unwrap();
    // The folder and `auto` reach ComfyUI's own code, which cannot build the tiny fixture's
    // widths (it hard-codes the real checkpoints'): exit 2, `unsupported`, saying so.
    let what = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{what}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect(&what);
    let e = v["error"].as_str().unwrap_or_default();
    assert_eq!(v["status"], "unsupported", "{what}");
    assert!(
        e.contains("ComfyUI 0.3.64") && e.contains("cannot build this wan2.1 checkpoint"),
        "{e}"
    );
}

/// The widget limits `(node, widget) -> (min, max)` of ComfyUI's tiled VAE nodes, read from
/// the unpacked `nodes.py`, checked against the tool's own copy
/// (`engine::comfyui_nodes`).
fn node_limits(folder: &Path) -> std::collections::BTreeMap<(String, String), (u64, u64)> {
    use wan_vae_bench::engine::comfyui_nodes as n;
    let text = std::fs::read_to_string(folder.join("nodes.py")).unwrap();
    let mut out = std::collections::BTreeMap::new();
    for node in ["VAEDecodeTiled", "VAEEncodeTiled"] {
        let body = &text[text.find(&format!("class {node}:")).expect(node)..];
        let body = &body[..body.find("RETURN_TYPES").unwrap()];
        for widget in ["tile_size", "overlap", "temporal_size", "temporal_overlap"] {
            let line = body.lines().find(|l| l.contains(&format!("\"{widget}\""))).unwrap();
            let num = |key: &str| -> u64 {
                let at = line.find(&format!("\"{key}\": ")).unwrap() + key.len() + 4;
                line[at..]
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            };
            out.insert((node.to_string(), widget.to_string()), (num("min"), num("max")));
        }
        let get = |w: &str| out[&(node.to_string(), w.to_string())];
        assert_eq!(
            get("tile_size"),
            (n::TILE_SIZE_MIN as u64, n::TILE_SIZE_MAX as u64),
            "{node}"
        );
        assert_eq!(get("temporal_size").0, n::TEMPORAL_SIZE_MIN as u64, "{node}");
        assert_eq!(get("temporal_overlap").0, n::TEMPORAL_OVERLAP_MIN as u64, "{node}");
    }
    out
}

/// The answer's ComfyUI advice for `c` is the node each timed pass ran with the widget values
/// its engine recorded, every value one the node takes, and the launch it stands for.
fn advice_is_what_ran(
    r: &Report,
    c: &wan_vae_bench::report::CaseRecord,
    limits: &std::collections::BTreeMap<(String, String), (u64, u64)>,
) {
    let a = wan_vae_bench::analysis::answer::apply::apply(r, c, None);
    let comfy = a.comfyui.as_ref().expect("comfyui advice");
    let facts = c.outcome.engine_case.as_ref().unwrap();
    let want = if c.settings.tiling.is_some() {
        ["VAEEncodeTiled", "VAEDecodeTiled"]
    } else {
        ["VAEEncode", "VAEDecode"]
    };
    let ran: Vec<&str> = comfy.nodes.iter().map(|n| n.node.as_str()).collect();
    assert_eq!(ran, want, "{}", c.id);
    for n in &comfy.nodes {
        let rec = &facts["nodes"][n.pass.as_str()];
        for (widget, value) in [
            ("tile_size", n.tile_size_px),
            ("overlap", n.overlap_px),
            ("temporal_size", n.temporal_size_frames),
            ("temporal_overlap", n.temporal_overlap_frames),
        ] {
            assert_eq!(rec[widget].as_u64(), value.map(|v| v as u64), "{} {widget}", c.id);
            if let Some(v) = value {
                let (lo, hi) = limits[&(n.node.clone(), widget.to_string())];
                assert!(
                    (lo..=hi).contains(&(v as u64)),
                    "{} {widget} {v} outside {lo}..={hi}",
                    c.id
                );
            }
        }
    }
    // One frame is one latent frame: the smallest temporal_size, one tile in time.
    for n in comfy.nodes.iter().filter(|n| n.node.ends_with("Tiled")) {
        assert_eq!(n.temporal_size_frames, Some(8), "{}", c.id);
    }
    let flags = comfy.launch_flags.join(" ");
    assert_eq!(
        flags,
        format!("--cpu --{}-vae", c.settings.precision.name()),
        "{}",
        c.id
    );
    assert!(
        a.steps
            .iter()
            .any(|s| s.starts_with(&format!("launch ComfyUI with {flags}"))),
        "{:?}",
        a.steps
    );
}
