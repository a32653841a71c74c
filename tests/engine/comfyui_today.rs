//! Issue 29: the comfyui engine follows what current ComfyUI (0.38) does differently from
//! 0.3.64, found by feature, not by version. The newer tarball cannot be brought here, so
//! each behaviour is reproduced by patching 0.3.64's source in the test (a stand-in, said
//! per test): an in-place `process_output`; `set_cudnn_benchmark()`; the AMD cuDNN rule
//! with `COMFYUI_ENABLE_MIOPEN` (applied on every device here, since the CPU is no AMD GPU);
//! a missing `comfy_aimdo`.
use std::path::Path;

use crate::need;
use crate::util::cli::*;
use wan_vae_bench::report::{CaseStatus, Report};

/// Replace `from` by `to` in ComfyUI's `file`, failing when 0.3.64 no longer has `from`.
fn patch(folder: &Path, file: &str, from: &str, to: &str) {
    let path = folder.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{file} has no `{from}`");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

fn run_comfy(dir: &Path, folder: &Path, py: &Path, env: &[(&str, &str)], extra: &[&str]) -> Report {
    let report = dir.join("report.json");
    let mut cmd = bench();
    cmd.env_remove("COMFYUI_ENABLE_MIOPEN");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .args(["run", "--comfyui"])
        .arg(folder)
        .arg("--python")
        .arg(py)
        .args([
            "--size",
            "32x32",
            "--frames",
            "5",
            "--precision",
            "fp32",
            "--warmup",
            "0",
            "--runs",
            "1",
        ])
        .args([
            "--timeout",
            "300",
            "--quiet",
            "--order",
            "as-written",
            "--control",
            "off",
            "-o",
        ])
        .arg(&report)
        .args(extra)
        .output()
        .unwrap();
    assert!(report.is_file(), "{}", stderr(&out));
    load(&report)
}

#[test]
fn newer_comfyui_behaviours_are_followed_by_feature() {
    let py = need!(python());
    let dir = scratch();
    let folder = need!(comfyui(dir.path()));
    // 0.38's in-place process_output (PR #13028), whose result `decode` then ignores.
    patch(
        &folder,
        "comfy/sd.py",
        "self.process_output = lambda image: torch.clamp((image + 1.0) / 2.0, min=0.0, max=1.0)",
        "self.process_output = lambda image: image.add_(1.0).div_(2.0).clamp_(0.0, 1.0)",
    );
    // 0.38's rule: cuDNN (MIOpen) off unless COMFYUI_ENABLE_MIOPEN=1 (on AMD past RDNA2), and
    // main.py's set_cudnn_benchmark() (here: as with `--fast autotune`).
    let mm = folder.join("comfy/model_management.py");
    let mut text = std::fs::read_to_string(&mm).unwrap();
    text.push_str(
        "\nimport os as _os\nif _os.getenv('COMFYUI_ENABLE_MIOPEN') != '1':\n    torch.backends.cudnn.enabled = False\n\
         def set_cudnn_benchmark():\n    torch.backends.cudnn.benchmark = True\n",
    );
    std::fs::write(&mm, text).unwrap();
    let r = run_comfy(
        dir.path(),
        &folder,
        &py,
        &[],
        &[
            "--engine",
            "candle,comfyui",
            "--env-var",
            "COMFYUI_ENABLE_MIOPEN=1,@unset",
        ],
    );
    let comfy: Vec<_> = r
        .cases
        .iter()
        .filter(|c| c.settings.engine.name() == "comfyui")
        .collect();
    assert_eq!(comfy.len(), 3, "baseline and the two swept values");
    for c in &comfy {
        assert_eq!(c.outcome.status, CaseStatus::Ok, "{}: {:?}", c.id, c.outcome.error);
        let facts = c.outcome.engine_case.as_ref().unwrap();
        assert_eq!(facts["process_output_in_place"], true, "{facts:?}");
        // The decoded video is the decoder's output, not the clamped [0, 1] image.
        let x = c
            .quality
            .as_ref()
            .and_then(|q| q.cross_engine.as_ref())
            .expect("cross_engine");
        assert!(
            x.max_abs_error <= 1e-4 * x.max_abs_reference.max(1.0),
            "{}: {x:?}",
            c.id
        );
        let setup = &facts["main_py_setup"];
        assert_eq!(setup["set_cudnn_benchmark"], "called, as main.py does", "{facts:?}");
        assert_eq!(facts["knobs_after_startup"]["cudnn_benchmark"], "on", "{facts:?}");
        // The variable was set before the import, and the case records it.
        let on = c.settings.env_variant == "COMFYUI_ENABLE_MIOPEN=1";
        assert_eq!(
            c.outcome.env.get("COMFYUI_ENABLE_MIOPEN").map(String::as_str),
            on.then_some("1"),
            "{}",
            c.id
        );
        let want = if on { "on" } else { "off" };
        assert_eq!(facts["knobs_after_startup"]["cudnn"], want, "{}: {facts:?}", c.id);
        // Set (as main.py does) on ROCm only; this CPU torch leaves it alone.
        assert!(
            setup.get("TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL").is_some(),
            "{facts:?}"
        );
        assert!(setup["dynamic_vram"].as_str().is_some(), "{facts:?}");
        // What the answer's advice offers this ComfyUI's users, found by feature.
        assert_eq!(facts["switches"]["enable_miopen_env"], true, "{facts:?}");
        assert_eq!(facts["switches"]["fast_autotune"], true, "{facts:?}");
    }
    // Exported by the user (not swept), it is recorded too: COMFYUI_ is a reported prefix.
    let again = scratch();
    let r = run_comfy(
        again.path(),
        &folder,
        &py,
        &[("COMFYUI_ENABLE_MIOPEN", "1")],
        &["--engine", "comfyui"],
    );
    let c = &r.cases[0];
    assert_eq!(
        c.outcome.env.get("COMFYUI_ENABLE_MIOPEN").map(String::as_str),
        Some("1")
    );
    assert_eq!(
        c.outcome.engine_case.as_ref().unwrap()["knobs_after_startup"]["cudnn"],
        "on"
    );
}

#[test]
fn a_comfyui_without_comfy_aimdo_is_unsupported_naming_the_package() {
    let py = need!(python());
    let dir = scratch();
    let folder = need!(comfyui(dir.path()));
    // 0.38's model_management imports comfy_aimdo at its top.
    patch(
        &folder,
        "comfy/model_management.py",
        "import psutil\n",
        "import psutil\nimport comfy_aimdo.host_buffer\n",
    );
    let r = run_comfy(dir.path(), &folder, &py, &[], &["--engine", "comfyui"]);
    let c = &r.cases[0];
    assert_eq!(c.outcome.status, CaseStatus::Unsupported, "{:?}", c.outcome.error);
    let e = c.outcome.error.as_deref().unwrap();
    assert!(
        e.contains("comfy_aimdo") && e.contains("`comfy-aimdo`") && e.contains("requirements.txt"),
        "{e}"
    );
}
