//! The engine table's own tests: one entry per engine, what each supports, the knobs
//! each runs with on each machine, engine folders.
use super::*;

#[test]
fn every_engine_has_exactly_one_entry() {
    for e in Engine::ALL {
        assert_eq!(ENGINES.iter().filter(|s| s.engine == e).count(), 1, "{e}");
        assert_eq!(spec(e).name(), e.name());
    }
    assert_eq!(ENGINES.len(), Engine::ALL.len());
    for s in ENGINES {
        if let Some(x) = s.cross_check {
            assert_ne!(x, s.engine, "{} is cross-checked against itself", s.name());
        }
        assert!(!s.devices.is_empty(), "{}", s.name());
        if let WorkerKind::Python { module, modules } = s.worker {
            let file = format!("{module}.py");
            assert!(
                modules.iter().any(|m| m.name == file),
                "{}: its module {file} is one of its own files",
                s.name()
            );
        }
    }
}

#[test]
fn help_lists_every_engine() {
    let h = engines_help();
    for e in Engine::ALL {
        assert!(h.contains(&format!("{e} (")), "{h}");
    }
    assert!(h.contains("comfyui (the user's ComfyUI, with --comfyui DIR)"), "{h}");
    assert_eq!(engine_names(|s| s.runs_python()), "torch, diffusers and comfyui");
    assert_eq!(engine_names(|s| !s.runs_python()), "candle");
    assert_eq!(precision_mode_defaults(), "autocast for torch, cast for diffusers");
}

fn settings(engine: Engine, chunk: usize) -> CaseSettings {
    let mut s: CaseSettings = serde_json::from_value(serde_json::json!({"precision": "fp32", "chunk": chunk,
        "tile_px": null, "overlap_px": null, "frames": 5, "width": 16, "height": 8}))
    .unwrap();
    s.engine = engine;
    s
}

#[test]
fn support_comes_from_the_entry() {
    let (candle, torch, diffusers) = (spec(Engine::Candle), spec(Engine::Torch), spec(Engine::Diffusers));
    assert!(!candle.runs_python() && torch.runs_python() && diffusers.runs_python());
    assert!(torch.knobs_act_on("cuda:0") && torch.knobs_act_on("CUDA"));
    assert!(!torch.knobs_act_on("cpu") && !candle.knobs_act_on("cuda:0"));
    assert!(knobs_apply(Engine::Diffusers, "cuda:1"));
    assert_eq!(diffusers.unsupported(1, "cpu", crate::model::Precision::Fp32), None);
    let m = diffusers.unsupported(2, "cpu", crate::model::Precision::Fp32).unwrap();
    assert!(m.contains("chunk 2") && m.contains("diffusers"), "{m}");
    assert_eq!(torch.unsupported(2, "cuda:0", crate::model::Precision::Fp32), None);
    let m = torch.unsupported(1, "metal", crate::model::Precision::Fp32).unwrap();
    assert!(m.contains("metal") && m.contains("cpu, cuda"), "{m}");
    assert_eq!(candle.unsupported(3, "metal:0", crate::model::Precision::Fp32), None);
    assert!(torch.has_precision_mode("cast") && diffusers.has_precision_mode("autocast"));
    assert!(!candle.has_precision_mode("cast") && !torch.has_precision_mode("auto"));
    use crate::model::Precision::Auto;
    let m = torch.unsupported(1, "cpu", Auto).unwrap();
    assert!(m.contains("auto") && m.contains("torch"), "{m}");
    assert!(candle.unsupported(1, "cpu", Auto).is_some());
    let comfy = spec(Engine::Comfyui);
    assert_eq!(comfy.unsupported(1, "cpu", Auto), None);
    assert!(comfy.unsupported(2, "cpu", Auto).unwrap().contains("chunk 2"));
}

#[test]
fn run_as_drops_knobs_where_they_do_not_act() {
    use crate::report::values::{MiopenDb, Switch};
    let mut s = settings(Engine::Torch, 1);
    s.knobs = Knobs {
        cudnn: Switch::Off,
        cudnn_benchmark: Switch::On,
        miopen_db: MiopenDb::Fresh,
        tf32: Switch::Off,
    };
    assert_eq!(spec(Engine::Torch).run_as_with(&s, "cuda:0", GpuVendors::Other), s);
    let amd = spec(Engine::Torch).run_as_with(&s, "cuda:0", GpuVendors::AmdOnly);
    assert_eq!(amd.knobs.tf32, Switch::NotApplicable, "no TF32 on an AMD-only machine");
    assert_eq!(amd.knobs.miopen_db, MiopenDb::Fresh);
    let nvidia = spec(Engine::Torch).run_as_with(&s, "cuda:0", GpuVendors::NvidiaOnly);
    assert_eq!(
        nvidia.knobs.miopen_db,
        MiopenDb::NotApplicable,
        "no MIOpen on an NVIDIA-only machine"
    );
    assert_eq!(nvidia.knobs.tf32, Switch::Off);
    s.knobs.miopen_db = MiopenDb::User;
    let id = spec(Engine::Torch)
        .run_as_with(&s, "cuda:0", GpuVendors::NvidiaOnly)
        .id();
    assert_eq!(
        id,
        "torch-fp32-chunk1-untiled-5x16x8-baseline-cudnn_off-bench_on-tf32_off"
    );
    let on_cpu = spec(Engine::Torch).run_as(&s, "cpu");
    assert_eq!(on_cpu.knobs, Knobs::default());
    // candle: TF32 alone acts, on an NVIDIA GPU; its `auto` keeps its old id (history's
    // series go on); `auto` and `off` are true fp32, `on`'s reference is `auto`; n/a on
    // the CPU and AMD.
    let candle = |tf32, device, vendors| {
        let mut t = s.clone();
        t.knobs.tf32 = tf32;
        spec(Engine::Candle).run_as_with(&t, device, vendors)
    };
    let off = candle(Switch::Off, "cuda:0", GpuVendors::NvidiaOnly);
    let auto = candle(Switch::Auto, "cuda:0", GpuVendors::NvidiaOnly);
    assert_eq!((off.knobs.tf32, off.knobs.cudnn), (Switch::Off, Switch::NotApplicable));
    assert_eq!(off.id(), "fp32-chunk1-untiled-5x16x8-baseline-tf32_off");
    assert_eq!(auto.id(), "fp32-chunk1-untiled-5x16x8-baseline");
    assert_eq!((off.reference(), auto.reference()), (off.clone(), auto.clone()));
    assert_eq!(candle(Switch::On, "cuda:0", GpuVendors::NvidiaOnly).reference(), auto);
    assert_eq!(
        candle(Switch::Auto, "cpu", GpuVendors::NvidiaOnly).knobs,
        Knobs::default()
    );
    assert_eq!(
        candle(Switch::On, "cuda:0", GpuVendors::AmdOnly).knobs,
        Knobs::default()
    );
}

const WITH_FOLDER: &[EngineSpec] = &[EngineSpec {
    engine: Engine::Torch,
    worker: WorkerKind::ThisBinary,
    knobs: false,
    any_chunk: true,
    precision_modes: &[],
    devices: &["cpu"],
    context: &[],
    own_dtype: false,
    cross_check: None,
    folder: Some(EngineFolder {
        flag: "torch-home",
        holds: "a folder of torch code",
    }),
    apply: ApplyAs::PyTorch,
    prepares_latents: true,
    calls_hipblaslt: false,
    about: "a test",
}];

#[test]
fn an_engine_folder_brings_its_flag_and_is_checked() {
    let cmd = folder_args(clap::Command::new("t"), WITH_FOLDER);
    let dir = tempfile::tempdir().unwrap();
    let m = cmd
        .clone()
        .try_get_matches_from(["t", "--torch-home", dir.path().to_str().unwrap()])
        .unwrap();
    let dirs = dirs_from(WITH_FOLDER, &m);
    assert_eq!(dirs.get(&Engine::Torch), Some(&dir.path().to_path_buf()));
    check_dirs(WITH_FOLDER, &dirs, [Engine::Torch, Engine::Candle]).unwrap();
    let e = check_dirs(WITH_FOLDER, &BTreeMap::new(), [Engine::Torch])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--torch-home DIR") && e.contains("a folder of torch code"),
        "{e}"
    );
    let missing = BTreeMap::from([(Engine::Torch, dir.path().join("nope"))]);
    let e = check_dirs(WITH_FOLDER, &missing, [Engine::Torch])
        .unwrap_err()
        .to_string();
    assert!(e.contains("--torch-home") && e.contains("nope"), "{e}");
    // The real table: one flag, the comfyui engine's.
    let plain = folder_args(clap::Command::new("t"), ENGINES);
    let names: Vec<_> = plain.get_arguments().map(|a| a.get_id().to_string()).collect();
    assert_eq!(names, ["comfyui"]);
}
