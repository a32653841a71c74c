//! `run` argument and matrix-file errors exit 2 and name the culprit, before any case runs.
use crate::util::cli::*;
use wan_vae_bench::plan::axes::{CHUNK, FRAMES, SIZE, TILE};

fn fails_naming(args: &[&str], culprit: &str) {
    let dir = scratch();
    let (out, report) = run(dir.path(), args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(culprit), "{args:?}: expected {culprit:?} in {err}");
    assert!(!report.exists(), "no report for unusable input");
}

#[test]
fn bad_flags_name_the_culprit() {
    fails_naming(&["--size", "65x64"], "nearest valid: 64x64 or 72x64");
    fails_naming(&["--size", "64by64"], "64by64");
    fails_naming(&["--env", "fastfind"], "fastfind");
    fails_naming(&["--precision", "int8"], "int8");
    fails_naming(&["--tile", "100:8"], "100:8");
    fails_naming(&["--chunk", "0"], "--chunk");
    fails_naming(&["--runs", "0"], "runs");
    fails_naming(&["--order", "backwards"], "backwards");
    fails_naming(&["--cudnn", "maybe"], "--cudnn");
    fails_naming(&["--miopen-db", "shared"], "user or fresh");
    fails_naming(&["--size", "64x64,64*64"], "duplicate");
    fails_naming(&["--weights", "/no/such/file.safetensors"], "/no/such/file.safetensors");
    fails_naming(&["--config", "/no/such/matrix.toml"], "/no/such/matrix.toml");
}

#[test]
fn bad_matrix_files_name_the_culprit() {
    let dir = scratch();
    let cases = [
        ("[matrix]\nframez = [5]\n", "framez"),
        ("[model]\nweights = \"synthetic\"\ndevcie = \"cpu\"\n", "devcie"),
        ("[matrix]\nenv = [\"baseline\", \"fastfind\"]\n", "fastfind"),
        ("[matrix]\nsize = [\"832x481\"]\n", "832x481"),
        ("[matrix]\nprecision = []\n", "matrix.precision is empty"),
        ("[matrix]\nframes = 5\n", "frames"),
        ("[matrix]\ncudnn = [\"maybe\"]\n", "matrix.cudnn"),
        (
            "[[budgets.case]]\nengine = \"onnx\"\ndecode_median_s = 1\n",
            "budgets.case[0].engine",
        ),
        ("[[budgets.case]]\nengin = \"torch\"\ndecode_median_s = 1\n", "engin"),
    ];
    for (i, (text, culprit)) in cases.iter().enumerate() {
        let cfg = write(dir.path(), &format!("bad{i}.toml"), text);
        fails_naming(&["--config", cfg.to_str().unwrap()], culprit);
        fails_naming(&["--config", cfg.to_str().unwrap()], &format!("bad{i}.toml"));
    }
}

#[test]
fn shipped_configs_parse() {
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/configs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) == Some("toml") {
            wan_vae_bench::plan::config::load(&path).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
        }
    }
    let smoke = wan_vae_bench::plan::config::smoke();
    assert_eq!(smoke.case_count(), 2);
}

#[test]
fn python_flag_spellings_are_accepted() {
    use clap::Parser;
    let cli = wan_vae_bench::cli::Cli::try_parse_from([
        "wan-vae-bench",
        "run",
        "--frames",
        "9",
        "--size",
        "128*96",
        "--tile_px",
        "64",
        "--warmup",
        "2",
        "--chunk",
        "1,2,4",
        "--precision",
        "fp32,bf16",
    ])
    .unwrap();
    let wan_vae_bench::cli::Command::Run(args) = cli.command else {
        panic!("not run")
    };
    let o = wan_vae_bench::cli::run::options_from_args(&args).unwrap();
    assert_eq!(o.axes.get(&FRAMES), ["9"]);
    assert_eq!(o.axes.get(&SIZE), ["128x96"]);
    assert_eq!(o.axes.get(&TILE), ["64:16"]);
    assert_eq!(o.axes.written_in(&TILE), "--tile-px");
    assert_eq!(o.warmup, 2);
    assert_eq!(o.axes.get(&CHUNK), ["1", "2", "4"]);
    assert_eq!(o.case_count(), 6);
}

#[test]
fn tile_none_and_tile_px_zero_mean_untiled() {
    use clap::Parser;
    for flags in [["--tile", "none,64:16"], ["--tile_px", "0,64"]] {
        let cli = wan_vae_bench::cli::Cli::try_parse_from(["wan-vae-bench", "run", flags[0], flags[1]]).unwrap();
        let wan_vae_bench::cli::Command::Run(args) = cli.command else {
            panic!("not run")
        };
        let o = wan_vae_bench::cli::run::options_from_args(&args).unwrap();
        let tiles: Vec<_> = o.axes.each(&TILE).map(|s| s.tiling).collect();
        assert_eq!(tiles.len(), 2, "{flags:?}");
        assert_eq!(tiles[0], None, "{flags:?}");
        assert_eq!(tiles[1].map(|t| (t.tile_px, t.overlap_px)), Some((64, 16)), "{flags:?}");
    }
}
