//! Issue 67: the Strix Halo user's path, from the README to an answer, without a trap on the
//! way: bash completion of a subcommand's flags (clap-rs/clap#6421's hyphenated-name bug
//! worked around), `--device cuda:0` on a machine without a GPU said up front and ended
//! `unsupported`, the missing-torch message naming the way to the user's Python, and the
//! `--help` texts pointing at the documented JSON.
use std::path::Path;

use crate::util::cli::{bench, repo_text, scratch, stderr, stdout};

/// What bash's completion offers for `words` (the last one being completed), through the
/// script `completions bash` prints, as bash calls it on <TAB>.
fn complete(script: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let program = format!(
        "source '{}'\n\
         f=$(complete -p wan-vae-bench | sed -E 's/.*-F ([^ ]+) .*/\\1/')\n\
         COMP_WORDS=({})\n\
         COMP_CWORD={cword}\n\
         COMP_LINE=\"${{COMP_WORDS[*]}}\"\n\
         COMP_POINT=${{#COMP_LINE}}\n\
         \"$f\" wan-vae-bench \"${{COMP_WORDS[$COMP_CWORD]}}\" \"${{COMP_WORDS[$((COMP_CWORD-1))]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script.display(),
        quoted.join(" ")
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_a_subcommands_flags_and_a_flags_values() {
    let dir = scratch();
    let out = bench().args(["completions", "bash"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let script = dir.path().join("wan-vae-bench.bash");
    std::fs::write(&script, stdout(&out)).unwrap();
    let cases: [(&[&str], &[&str]); 5] = [
        (&["wan-vae-bench", ""], &["run", "history", "logs"]),
        (
            &["wan-vae-bench", "run", "--"],
            &["--frames", "--precision", "--list", "--python"],
        ),
        (
            &["wan-vae-bench", "history", "--"],
            &["--markdown", "--threshold", "--export-svg"],
        ),
        (&["wan-vae-bench", "run", "--isolate", ""], &["worker", "case"]),
        (&["wan-vae-bench", "completions", ""], &["bash", "zsh", "fish"]),
    ];
    for (words, expected) in cases {
        let offered = complete(&script, words);
        for e in expected {
            assert!(
                offered.iter().any(|o| o == e),
                "{words:?}: {e} not offered: {offered:?}"
            );
        }
    }
    // A flag of one subcommand is not offered for another.
    let offered = complete(&script, &["wan-vae-bench", "history", "--"]);
    assert!(!offered.iter().any(|o| o == "--frames"), "{offered:?}");
}

/// A fake machine root (`WAN_VAE_BENCH_SYSFS_ROOT`): `/proc/cpuinfo` with these flags, and
/// no GPU of any kind.
fn fake_root(dir: &Path, flags: &str) -> std::path::PathBuf {
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("proc")).unwrap();
    std::fs::write(
        root.join("proc/cpuinfo"),
        format!("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: {flags}\n\n"),
    )
    .unwrap();
    root
}

const AVX2_ONLY: &str = "fpu sse4_2 avx avx2 fma f16c";
const ZEN4: &str = "fpu sse4_2 avx avx2 fma f16c avx512f avx512bw avx512vl avx512_vnni avx512_bf16";

#[test]
fn bf16_on_a_cpu_that_emulates_it_is_said_before_the_run_and_in_the_list() {
    let dir = scratch();
    let list = |flags: &str| {
        let out = bench()
            .env(
                "WAN_VAE_BENCH_SYSFS_ROOT",
                fake_root(&dir.path().join(flags.len().to_string()), flags),
            )
            .current_dir(dir.path())
            .args([
                "run",
                "--list",
                "--engine",
                "candle,torch,diffusers",
                "--precision",
                "fp32,bf16",
            ])
            .args(["--frames", "1", "--size", "16x16", "--timeout", "600"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        (stdout(&out), stderr(&out))
    };
    let (table, warned) = list(AVX2_ONLY);
    for needle in [
        "no native bf16",
        "avx512_bf16",
        "amx_bf16",
        "2 cases",
        "leave bf16 out",
        "--timeout",
        "10 min",
    ] {
        assert!(warned.contains(needle), "{needle}: {warned}");
    }
    let row = |id: &str| {
        table
            .lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("{id}: {table}"))
            .to_string()
    };
    assert!(row("torch-bf16-").contains("bf16 emulated"), "{table}");
    assert!(row("diffusers-bf16-").contains("bf16 emulated"), "{table}");
    // candle has its own bf16 kernels; fp32 is not bf16.
    assert!(!row("bf16-").contains("emulated"), "{table}");
    assert!(!row("torch-fp32-").contains("emulated"), "{table}");
    // A CPU with AVX512-BF16: nothing to say.
    let (table, warned) = list(ZEN4);
    assert!(
        !warned.contains("native bf16") && !table.contains("emulated"),
        "{warned}{table}"
    );
}

#[test]
fn a_timeout_of_emulated_bf16_says_why_it_is_likely() {
    let dir = scratch();
    let report = dir.path().join("r.json");
    let out = bench()
        .env("WAN_VAE_BENCH_SYSFS_ROOT", fake_root(dir.path(), AVX2_ONLY))
        .env("WAN_VAE_BENCH_FAULT", "hang")
        .args([
            "run",
            "--fault-hooks",
            "--engine",
            "torch",
            "--precision",
            "bf16",
            "--timeout",
            "3",
        ])
        .args([
            "--frames", "1", "--size", "16x16", "--warmup", "0", "--runs", "1", "-q", "-o",
        ])
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r = crate::util::cli::load(&report);
    let case = r
        .cases
        .iter()
        .find(|c| c.settings.precision == wan_vae_bench::model::Precision::Bf16)
        .unwrap();
    assert_eq!(case.outcome.status, wan_vae_bench::report::CaseStatus::Timeout);
    let first = case.outcome.error_line().unwrap_or_default();
    assert!(
        first.starts_with("timed out after") && first.contains("likely why: torch computes bf16 by emulation"),
        "{first}"
    );
    // The fp32 reference that timed out too has no such excuse.
    let fp32 = r
        .cases
        .iter()
        .find(|c| c.settings.precision == wan_vae_bench::model::Precision::Fp32)
        .unwrap();
    assert!(!fp32.outcome.error_line().unwrap_or_default().contains("likely why"));
}

#[test]
fn a_gpu_device_on_a_machine_without_one_is_said_up_front_and_ends_unsupported() {
    let dir = scratch();
    let root = fake_root(dir.path(), ZEN4);
    // No nvidia-smi either (a machine with a GPU may have one on PATH): an empty PATH, as no
    // worker is to start.
    let path = dir.path().join("empty-path");
    std::fs::create_dir_all(&path).unwrap();
    let list = bench()
        .env("WAN_VAE_BENCH_SYSFS_ROOT", &root)
        .env("PATH", &path)
        .args([
            "run", "--list", "--device", "cuda:0", "--engine", "torch", "--passes", "decode",
        ])
        .args(["--frames", "1,5,17", "--size", "320x320", "--precision", "fp32"])
        .output()
        .unwrap();
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    assert!(
        stderr(&list).contains("device cuda:0: this machine shows no GPU")
            && stderr(&list).contains("the 3 cases of this matrix will each end `unsupported`"),
        "{}",
        stderr(&list)
    );
    // Decode-only, as configs/strix-halo-decode.toml: the latent's preparation never starts.
    let report = dir.path().join("r.json");
    let started = std::time::Instant::now();
    let out = bench()
        .env("WAN_VAE_BENCH_SYSFS_ROOT", &root)
        .env("PATH", &path)
        .args([
            "run",
            "--device",
            "cuda:0",
            "--engine",
            "torch,candle",
            "--passes",
            "decode",
        ])
        .args(["--frames", "1", "--size", "16x16", "--warmup", "0", "--runs", "1", "-o"])
        .arg(&report)
        .output()
        .unwrap();
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{e}");
    let r = crate::util::cli::load(&report);
    assert!(!r.cases.is_empty());
    for c in &r.cases {
        assert_eq!(
            c.outcome.status,
            wan_vae_bench::report::CaseStatus::Unsupported,
            "{}: {:?}",
            c.id,
            c.outcome.error
        );
        assert!(
            c.outcome.error.as_deref().unwrap_or_default().contains("shows no GPU"),
            "{:?}",
            c.outcome.error
        );
    }
    let warned_at = e.find("this machine shows no GPU").expect("said up front");
    let first_case = e.find("unsupported ").unwrap_or(usize::MAX);
    assert!(warned_at < first_case, "{e}");
    assert!(started.elapsed().as_secs() < 60, "workers were started");
}

/// A Python without torch: the system's `python3` with its site-packages off.
fn python_without_torch(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("python-without-torch");
    std::fs::write(&p, "#!/bin/sh\nexec python3 -S \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn without_torch_the_case_says_how_to_give_the_python_that_has_it() {
    let dir = scratch();
    let py = python_without_torch(dir.path());
    for passes in ["both", "decode"] {
        let report = dir.path().join(format!("{passes}.json"));
        let out = bench()
            .env_remove("WAN_VAE_BENCH_PYTHON")
            .args(["run", "--engine", "torch", "--precision", "fp32", "--passes", passes])
            .args([
                "--frames", "1", "--size", "16x16", "--warmup", "0", "--runs", "1", "-q", "--python",
            ])
            .arg(&py)
            .arg("-o")
            .arg(&report)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        for c in &crate::util::cli::load(&report).cases {
            // Decode-only: the latent's preparing encode ended unsupported, and so does the case.
            assert_eq!(
                c.outcome.status,
                wan_vae_bench::report::CaseStatus::Unsupported,
                "{passes}: {:?}",
                c.outcome.error
            );
            let e = c.outcome.error.as_deref().unwrap_or_default();
            assert!(
                e.contains("No module named 'torch'")
                    && e.contains("--python PATH")
                    && e.contains("WAN_VAE_BENCH_PYTHON"),
                "{passes}: {e}"
            );
        }
    }
}

/// The newcomer's path in the README (issue 67, item 1): which config, engine and device,
/// how to point the tool at ComfyUI and Python, what `logs` does, what is and is not verified
/// on AMD, what the build needs, and that the default engine measures the CPU.
#[test]
fn the_readme_starts_an_amd_comfyui_user_on_the_gpu_path() {
    let readme = repo_text("README.md");
    let start = readme
        .split("## Start here")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a start-here section");
    let toml: toml::Value = toml::from_str(&repo_text("Cargo.toml")).unwrap();
    let rust = toml["package"]["rust-version"].as_str().unwrap();
    for needle in [
        "The default `run` measures the CPU",
        "configs/comfyui-amd.toml",
        "configs/gfx1151-miopen.toml",
        "--device cuda:0",
        "--comfyui ~/ComfyUI",
        "--python PATH",
        "WAN_VAE_BENCH_PYTHON",
        "wan-vae-bench logs",
        "never run the tool on an AMD GPU",
        "Not\nverified",
        &format!("Rust {rust} or newer"),
        "cargo build --release",
        "5 minutes",
        "wan-vae-bench history ~/bench-history",
    ] {
        assert!(
            start.contains(needle),
            "the start-here section lacks {needle:?}:\n{start}"
        );
    }
    // The start is before the commands a newcomer would otherwise copy first.
    assert!(readme.find("## Start here").unwrap() < readme.find("## The two commands").unwrap());
}

/// The case counts the AMD configs' headers state are what `--list` plans (gfx1151-miopen's
/// said 64 while `--list` showed 80: the references the run adds).
#[test]
fn the_amd_configs_count_their_cases_as_list_does() {
    let dir = scratch();
    let comfy = dir.path().join("ComfyUI");
    std::fs::create_dir_all(comfy.join("comfy")).unwrap();
    std::fs::write(comfy.join("comfy/sd.py"), "").unwrap();
    let number = |text: &str, before: &str| -> usize {
        let at = text.find(before).unwrap_or_else(|| panic!("{before}: {text}"));
        text[..at].split_whitespace().last().unwrap().parse().unwrap()
    };
    for config in ["configs/gfx1151-miopen.toml", "configs/comfyui-amd.toml"] {
        let text = repo_text(config);
        let header: String = text
            .lines()
            .take_while(|l| l.starts_with('#'))
            .map(|l| l.trim_start_matches('#').trim())
            .collect::<Vec<_>>()
            .join(" ");
        let cases = number(&header, "cases,");
        let refs = number(&header, "fp32 untiled references");
        let controls = number(&header, "A/A control");
        let out = bench()
            .env("HF_HUB_OFFLINE", "1")
            .env("HF_HOME", dir.path().join("hf"))
            .current_dir(dir.path())
            .args(["run", "--list", "-c"])
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(config))
            .args(if config.contains("comfyui") {
                vec!["--comfyui".into(), comfy.clone().into_os_string()]
            } else {
                vec![]
            })
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{config}: {}", stderr(&out));
        let listed = stdout(&out);
        let total: usize = number(&listed, "case(s),");
        assert_eq!(
            total,
            cases + refs + controls,
            "{config}: the header says {cases} + {refs} + {controls}:\n{listed}"
        );
        assert_eq!(listed.matches(" (added)").count(), refs, "{config}");
        assert_eq!(listed.matches(" (A/A control)").count(), controls, "{config}");
    }
}

/// docs/results.md names no folder of one machine, and each script it cites exists or is
/// cited with the commit that last had it (issue 67, item 9).
#[test]
fn the_results_page_names_no_one_machines_folders() {
    let page = repo_text("docs/results.md");
    for own in [".venv-torch", "/work/", "/tmp/"] {
        assert!(!page.contains(own), "docs/results.md names {own}");
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for line in page.lines() {
        for (at, _) in line.match_indices("scripts/") {
            let name: String = line[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "/_-.".contains(*c))
                .collect();
            let name = name.trim_end_matches('.');
            assert!(
                root.join(name).exists() || line.contains("git show"),
                "docs/results.md cites {name}, which does not exist, without the commit that had it: {line}"
            );
        }
    }
}

/// `compare --help` and `history --help` point at the documented JSON, not at Rust types;
/// every top-level field either prints is in its section of docs/report-schema.md.
#[test]
fn the_json_outputs_are_documented_where_the_help_points() {
    use crate::util::reports::{case, report, save, steady};
    for cmd in ["compare", "history"] {
        let help = stdout(&bench().args([cmd, "--help"]).output().unwrap());
        assert!(
            help.contains("docs/report-schema.md") && !help.contains("::"),
            "{cmd}: {help}"
        );
    }
    let dir = scratch();
    let a = save(
        dir.path(),
        "a.json",
        &report("h", vec![case("x", &steady(1.0), &steady(1.0))]),
    );
    let mut newer = report("h", vec![case("x", &steady(1.0), &steady(1.0))]);
    newer.created_at = "2025-01-02T00:00:00Z".into();
    let b = save(dir.path(), "b.json", &newer);
    let schema = repo_text("docs/report-schema.md");
    let section = |title: &str| -> String {
        schema
            .split(title)
            .nth(1)
            .and_then(|s| s.split("\n## ").next())
            .unwrap_or_else(|| panic!("{title}"))
            .to_string()
    };
    let compare = bench().arg("compare").arg(&a).arg(&b).arg("--json").output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&compare.stdout).unwrap();
    let doc = section("## `compare --json`");
    for key in json.as_object().unwrap().keys() {
        assert!(
            doc.contains(&format!("`{key}`")),
            "compare --json's {key} is not documented"
        );
    }
    let out = dir.path().join("h.json");
    let history = bench()
        .arg("history")
        .arg(&a)
        .arg(&b)
        .arg("--export-json")
        .arg(&out)
        .output()
        .unwrap();
    assert!(history.status.code().is_some_and(|c| c <= 1), "{}", stderr(&history));
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let doc = section("## `history --export-json`");
    for key in json.as_object().unwrap().keys() {
        assert!(
            doc.contains(&format!("`{key}`")),
            "history --export-json's {key} is not documented"
        );
    }
}

/// `--list`'s forecast (issue 4 of issue 67): "no rate measured yet" on a machine without a
/// report; after one run, each case's time from this machine's measured GFLOP/s, labelled a
/// forecast, never written into a report or an export; and the run's warning of a case
/// forecast past its timeout.
#[test]
fn list_forecasts_from_this_machines_reports_and_the_run_warns_past_the_timeout() {
    let dir = scratch();
    let list = |size: &str| {
        let out = bench()
            .current_dir(dir.path())
            .args(["run", "--list", "--frames", "1", "--size", size, "--precision", "fp32"])
            .args(["--warmup", "0", "--runs", "1"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
    };
    let before = list("16x16");
    assert!(
        before.contains("forecast: no rate measured yet for candle fp32 on cpu"),
        "{before}"
    );
    // One run, to the default folder: the rate.
    let out = bench()
        .current_dir(dir.path())
        .args([
            "run",
            "--frames",
            "1",
            "--size",
            "16x16",
            "--precision",
            "fp32",
            "--warmup",
            "0",
            "--runs",
            "1",
        ])
        .args(["-q", "--export-markdown", "t.md", "--export-csv", "t.csv"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for written in std::fs::read_dir(dir.path().join("results"))
        .unwrap()
        .chain(std::fs::read_dir(dir.path()).unwrap())
    {
        let p = written.unwrap().path();
        if p.is_file() {
            let text = std::fs::read_to_string(&p).unwrap();
            assert!(
                !text.to_lowercase().contains("forecast"),
                "{} holds a forecast",
                p.display()
            );
        }
    }
    let after = list("16x16");
    let line = after.lines().find(|l| l.starts_with("forecast: ")).unwrap();
    assert!(
        line.contains("for the passes of the 1 case")
            && line.contains("from the GFLOP/s of 1 earlier report of this machine in results")
            && line.contains("a forecast, not a measurement"),
        "{after}"
    );
    let row = after.lines().find(|l| l.starts_with("fp32-")).unwrap();
    assert!(row.trim_end().ends_with(" s"), "{row}");
    // Past the timeout: said before the first case.
    let out = bench()
        .current_dir(dir.path())
        .args([
            "run",
            "--frames",
            "5",
            "--size",
            "64x64",
            "--precision",
            "fp32",
            "--warmup",
            "0",
            "--runs",
            "1",
        ])
        .args(["--timeout", "0.5", "-o", "big.json"])
        .output()
        .unwrap();
    let e = stderr(&out);
    let warned = e
        .find("forecast past the timeout of 0.5 s")
        .unwrap_or_else(|| panic!("{e}"));
    assert!(e[warned..].contains("fp32-chunk1-untiled-5x64x64-baseline ("), "{e}");
    let first_case = e.find("timeout  ").unwrap_or(usize::MAX);
    assert!(warned < first_case, "{e}");
}

/// The project's own reports are not where the user's runs go (issue 67, item 5): no page
/// links a report at the top of `results/` (they moved to its sub-folders, which `history`
/// does not read), and git no longer lets such a report through at the top.
#[test]
fn the_projects_reports_live_apart_from_the_users_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    pages.extend(
        std::fs::read_dir(root.join("docs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "md")),
    );
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        for link in text.split("](").skip(1) {
            let target = link.split(')').next().unwrap().trim_start_matches("../");
            if let Some(rest) = target.strip_prefix("results/") {
                assert!(
                    rest.contains('/') || !rest.ends_with(".json"),
                    "{} links the report {target} at the top of results/, where the user's runs go",
                    page.display()
                );
                assert!(
                    root.join(target).exists(),
                    "{}: {target} does not exist",
                    page.display()
                );
            }
        }
    }
    let ignore = repo_text(".gitignore");
    assert!(
        ignore.contains("/results/*.json") && !ignore.contains("measured"),
        "{ignore}"
    );
    assert!(root.join("results/README.md").exists());
}
