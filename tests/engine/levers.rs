//! The levers of issue 40 (`layout`, `conv3d`): exact in fp32 against the golden fixtures in
//! every Python engine that takes them (both models, tiled and untiled; ComfyUI, which cannot
//! build the fixtures' widths, against its own default case), read back from the worker into
//! the report, not planned for candle with a note, and the Python worker's imports acyclic
//! (issue 39).
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::need;
use crate::util::cli::*;
use wan_vae_bench::report::CaseStatus;

/// `validate` with the levers: exit 0 and the levers read back as asked.
fn validate(py: &Path, engine: &str, model: &str, tile: Option<&str>, layout: &str, conv3d: &str) {
    let mut cmd = bench();
    cmd.args([
        "validate", "--json", "--engine", engine, "--layout", layout, "--conv3d", conv3d,
    ])
    .arg("--python")
    .arg(py)
    .arg("--weights")
    .arg(fixture(&format!("{model}_tiny.weights.safetensors")))
    .arg("--cases")
    .arg(fixture(&format!("{model}_tiny.cases.safetensors")));
    if let Some(t) = tile {
        cmd.args(["--tile", t]);
    }
    let out = cmd.output().unwrap();
    let what = format!(
        "{engine} {model} {tile:?} {layout} {conv3d}: {}{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(out.status.code(), Some(0), "{what}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect(&what);
    assert_eq!(v["pass"], true, "{what}");
    assert_eq!(v["tile"].is_null(), tile.is_none(), "{what}");
    // What the causal convolutions saw, read back inside the worker.
    assert_eq!(v["knobs"]["layout"], layout, "{what}");
    assert_eq!(v["knobs"]["conv3d"], conv3d, "{what}");
}

#[test]
fn levers_pass_validate_in_fp32_in_torch_and_diffusers_both_models_tiled_and_untiled() {
    let py = need!(python());
    // Each lever alone and both together; each engine, model and tiling at least once (the
    // lever code is shared by the engines: `wan_levers.py`).
    validate(&py, "torch", "wan21", None, "channels_last_3d", "native");
    validate(&py, "torch", "wan22", Some("32:16"), "ncdhw", "split");
    validate(&py, "diffusers", "wan21", Some("16:8"), "channels_last_3d", "split");
    validate(&py, "diffusers", "wan22", None, "channels_last_3d", "split");
}

#[test]
fn candle_refuses_the_levers_in_validate() {
    let out = bench()
        .args(["validate", "--conv3d", "split", "--weights", "synthetic", "--cases"])
        .arg(fixture("wan21_tiny.cases.safetensors"))
        .output()
        .unwrap();
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("--conv3d") && e.contains("split") && e.contains("candle"),
        "{e}"
    );
}

#[test]
fn lever_cases_of_candle_are_not_planned_and_the_run_says_so_once() {
    let dir = scratch();
    let out = bench()
        .args([
            "run",
            "--list",
            "--engine",
            "candle,torch",
            "--precision",
            "fp32",
            "--control",
            "off",
        ])
        .args(["--layout", "ncdhw,cl3d"])
        .args(["--conv3d", "native,split", "--frames", "1", "--size", "16x16"])
        .output()
        .unwrap();
    let (o, e) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{o}{e}");
    assert_eq!(e.matches("not planned").count(), 1, "{e}");
    assert!(
        e.contains("--layout channels_last_3d for candle") && e.contains("--conv3d split for candle"),
        "{e}"
    );
    // candle: its default only; torch: all four, each id naming its levers.
    assert!(o.contains("5 case(s)"), "{o}");
    for id in [
        "torch-fp32-chunk1-untiled-1x16x16-baseline-cl3d-split",
        "fp32-chunk1-untiled-1x16x16-baseline ",
    ] {
        assert!(o.contains(id), "{id}: {o}");
    }
    assert!(!o.contains("\nfp32-chunk1-untiled-1x16x16-baseline-cl3d"), "{o}");
    // The size limit counts the same cases before building them.
    let out = bench()
        .args([
            "run",
            "--list",
            "--max-cases",
            "4",
            "--engine",
            "candle,torch",
            "--precision",
            "fp32",
            "--layout",
            "ncdhw,cl3d",
        ])
        .args(["--conv3d", "native,split", "--output"])
        .arg(dir.path().join("r.json"))
        .output()
        .unwrap();
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("the matrix has 5 cases"), "{e}");
}

#[test]
fn a_matrix_that_plans_no_case_is_refused_and_the_report_left_alone() {
    // Issue 48: candle with only a lever value it does not take planned nothing, exited 0
    // and replaced the existing report with an empty one.
    let dir = scratch();
    let report = write(dir.path(), "r.json", "{\"mine\": true}");
    let out = bench()
        .args([
            "run",
            "--engine",
            "candle",
            "--layout",
            "channels_last_3d",
            "--frames",
            "1",
            "--size",
            "16x16",
        ])
        .arg("--output")
        .arg(&report)
        .output()
        .unwrap();
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("nothing to run") && e.contains("--layout channels_last_3d for candle"),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&report).unwrap(), "{\"mine\": true}");
    assert!(!dir.path().join("r.json.lock").exists());
}

#[test]
fn a_case_of_each_lever_reaches_the_report_with_its_values_read_back() {
    let py = need!(python());
    let dir = scratch();
    let weights = fixture("wan21_tiny.weights.safetensors");
    let (out, path) = run(
        dir.path(),
        &[
            "--engine",
            "torch",
            "--control",
            "off",
            "--python",
            py.to_str().unwrap(),
            "--weights",
            weights.to_str().unwrap(),
            "--layout",
            "channels_last_3d",
            "--conv3d",
            "native,split",
            "--precision",
            "fp32",
            "--frames",
            "5",
            "--size",
            "16x16",
            "--warmup",
            "0",
            "--runs",
            "1",
        ],
    );
    assert!(path.is_file(), "{}", stderr(&out));
    let r = load(&path);
    let reference = "torch-fp32-chunk1-untiled-5x16x16-baseline";
    let ids: BTreeSet<&str> = r.cases.iter().map(|c| c.id.as_str()).collect();
    let want = [
        reference,
        "torch-fp32-chunk1-untiled-5x16x16-baseline-cl3d",
        "torch-fp32-chunk1-untiled-5x16x16-baseline-cl3d-split",
    ];
    assert_eq!(ids, want.into(), "the default case is added as the levers' reference");
    for c in &r.cases {
        assert_eq!(c.outcome.status, CaseStatus::Ok, "{}: {:?}", c.id, c.outcome.error);
        let seen = c.outcome.knobs_in_force.as_ref().expect("knobs_in_force");
        assert_eq!(seen["layout"], c.settings.layout.name(), "{}", c.id);
        assert_eq!(seen["conv3d"], c.settings.conv3d.name(), "{}", c.id);
        if c.id != reference {
            let q = c.quality.as_ref().expect("quality");
            assert_eq!(q.reference_id, reference);
            let d = q.decoded.as_ref().expect("decoded error");
            assert!(d.max_abs <= 1e-4, "{}: the same arithmetic: {d:?}", c.id);
        }
    }
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let split = json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == want[2])
        .unwrap();
    assert_eq!(
        (split["layout"].as_str(), split["conv3d"].as_str()),
        (Some("channels_last_3d"), Some("split"))
    );
}

#[test]
fn comfyui_takes_both_levers_exactly_against_its_default_case() {
    let py = need!(python());
    let dir = scratch();
    let folder = need!(comfyui(dir.path()));
    let (out, path) = run(
        dir.path(),
        &[
            "--engine",
            "comfyui",
            "--control",
            "off",
            "--comfyui",
            folder.to_str().unwrap(),
            "--python",
            py.to_str().unwrap(),
            "--layout",
            "channels_last_3d",
            "--conv3d",
            "split",
            "--precision",
            "fp32",
            "--tile",
            "none,64:32",
            "--frames",
            "1",
            "--size",
            "96x64",
            "--warmup",
            "0",
            "--runs",
            "1",
            "--timeout",
            "300",
        ],
    );
    assert!(path.is_file(), "{}", stderr(&out));
    let r = load(&path);
    let reference = "comfyui-fp32-chunk1-untiled-1x96x64-baseline";
    assert_eq!(
        r.cases.len(),
        3,
        "{:?}",
        r.cases.iter().map(|c| &c.id).collect::<Vec<_>>()
    );
    for c in &r.cases {
        assert_eq!(c.outcome.status, CaseStatus::Ok, "{}: {:?}", c.id, c.outcome.error);
        let seen = c.outcome.knobs_in_force.as_ref().expect("knobs_in_force");
        assert_eq!(
            (seen["layout"].as_str(), seen["conv3d"].as_str()),
            (c.settings.layout.name(), c.settings.conv3d.name()),
            "{}",
            c.id
        );
    }
    let untiled = r
        .cases
        .iter()
        .find(|c| c.id == format!("{reference}-cl3d-split"))
        .unwrap();
    let d = untiled.quality.as_ref().unwrap().decoded.as_ref().unwrap();
    assert!(d.max_abs <= 1e-4, "ComfyUI's model, the same arithmetic: {d:?}");
}

/// `import X` / `from X import` of the worker's own modules, lazy ones included.
fn imports(text: &str, ours: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines().map(str::trim_start) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let names: Vec<&str> = match words.as_slice() {
            ["import", rest @ ..] => rest.iter().map(|w| w.trim_end_matches(',')).collect(),
            ["from", m, "import", ..] => vec![*m],
            _ => continue,
        };
        out.extend(names.into_iter().filter(|n| ours.contains(*n)).map(String::from));
    }
    out
}

#[test]
fn the_python_workers_imports_point_one_way() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine/python");
    let mut texts = BTreeMap::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "py") {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            texts.insert(name, std::fs::read_to_string(&p).unwrap());
        }
    }
    let ours: BTreeSet<String> = texts.keys().cloned().collect();
    let graph: BTreeMap<String, BTreeSet<String>> = texts.iter().map(|(n, t)| (n.clone(), imports(t, &ours))).collect();
    assert!(graph["wan_torch"].contains("wan21_torch") && graph["wan21_torch"].contains("wan_blocks"));
    // Depth-first search for a cycle, naming it.
    fn visit<'a>(
        n: &'a str,
        g: &'a BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        if let Some(i) = path.iter().position(|p| *p == n) {
            panic!("import cycle: {} -> {n}", path[i..].join(" -> "));
        }
        if !done.insert(n) {
            return;
        }
        path.push(n);
        for m in g.get(n).into_iter().flatten() {
            visit(m, g, path, done);
        }
        path.pop();
    }
    let mut done = BTreeSet::new();
    for n in graph.keys() {
        visit(n, &graph, &mut Vec::new(), &mut done);
    }
}
