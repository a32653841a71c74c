//! The README's, docs/ci.md's and docs/rocm.md's command examples, run as a user would type them (issue 46):
//! every `wan-vae-bench` command in their code blocks (shell lines, `\` continuations, and a
//! CI job's `run:` steps) is found, its placeholders filled as a user would (a ComfyUI folder,
//! a shard number, reports of earlier runs), and run by bash in a scratch folder. A `run` gets
//! `--list` appended: it plans every case and checks every flag, file and value, and runs
//! nothing. The others run as written, on small reports this test makes. A documented example
//! that stops working fails here, naming its file and line.
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::need;
use crate::util::cli::{python, scratch, BIN};

/// One documented command: where it is written, its words, and whether its line marks it
/// as one for the GPU (`# on the GPU`).
#[derive(Debug)]
struct Example {
    at: String,
    command: String,
    gpu_marked: bool,
}

/// The commands of the fenced code blocks of `file` (relative to the repository).
fn examples(file: &str) -> Vec<Example> {
    let text = crate::util::cli::repo_text(file);
    let mut out = Vec::new();
    let mut in_block = false;
    let mut pending: Option<(usize, String, usize)> = None; // (line, text so far, indent of a `run: >`)
    for (i, raw) in text.lines().enumerate() {
        if raw.trim_start().starts_with("```") {
            in_block = !in_block;
            pending = None;
            continue;
        }
        if !in_block {
            continue;
        }
        let indent = raw.len() - raw.trim_start().len();
        let line = raw.trim();
        // A YAML folded step (`run: >`) continues on the lines indented deeper.
        if let Some((at, mut so_far, folded_at)) = pending.take() {
            if folded_at != usize::MAX && indent > folded_at && !line.is_empty() {
                so_far.push(' ');
                so_far.push_str(line);
                pending = Some((at, so_far, folded_at));
                continue;
            }
            if folded_at == usize::MAX {
                // A `\` continuation.
                so_far.push(' ');
                so_far.push_str(line.trim_end_matches('\\').trim());
                if line.ends_with('\\') {
                    pending = Some((at, so_far, usize::MAX));
                } else {
                    push(&mut out, file, at, &so_far);
                }
                continue;
            }
            push(&mut out, file, at, &so_far);
        }
        let line = line.strip_prefix("- ").unwrap_or(line);
        if line == "run: >" {
            pending = Some((i + 1, String::new(), indent));
        } else if line.ends_with('\\') {
            pending = Some((i + 1, line.trim_end_matches('\\').trim().to_string(), usize::MAX));
        } else {
            push(&mut out, file, i + 1, line);
        }
    }
    if let Some((at, so_far, _)) = pending {
        push(&mut out, file, at, &so_far);
    }
    out
}

/// The `wan-vae-bench` commands of one logical line (`a && b` gives two), without a prompt,
/// a step's `run:`, a launcher (`srun`), a trailing comment or a redirection of the output.
fn push(out: &mut Vec<Example>, file: &str, at: usize, line: &str) {
    let line = line.strip_prefix("run: ").unwrap_or(line);
    let line = line.strip_prefix("$ ").unwrap_or(line);
    let line = line.strip_prefix("srun ").unwrap_or(line);
    for part in line.split(" && ") {
        let part = part.split(" # ").next().unwrap().split(" >>").next().unwrap().trim();
        let part = part.strip_prefix("target/release/").unwrap_or(part);
        if part.starts_with("wan-vae-bench ") {
            out.push(Example {
                at: format!("{file}:{at}"),
                command: part.split_whitespace().collect::<Vec<_>>().join(" "),
                gpu_marked: line.contains("# on the GPU"),
            });
        }
    }
}

/// The documented placeholders, as a user fills them in.
fn fill(command: &str) -> String {
    command
        .replace("${{ matrix.shard }}", "1")
        .replace("\"${SLURM_ARRAY_TASK_ID}/${SLURM_ARRAY_TASK_COUNT}\"", "1/8")
        .replace("$(date -u +%Y%m%d)", "20261126")
        .replace("COMFYUI_DIR", "~/ComfyUI")
}

/// Why an example cannot run here, or `None`: each needs something only a user has.
fn needs_the_users(command: &str) -> Option<&'static str> {
    if command.contains("--input ComfyUI_00001_.latent") {
        Some("a latent ComfyUI saved, and the wan2.1-comfy weights from the Hugging Face cache")
    } else if command.contains("inspect --weights wan2.2-comfy") {
        Some("the wan2.2-comfy weights from the Hugging Face cache")
    } else {
        None
    }
}

/// Whether a `run` measures on a GPU: `--device cuda...`, or a matrix file whose `[model]`
/// device is one (and no `--device cpu` over it).
fn needs_a_gpu(command: &str) -> bool {
    if !command.starts_with("wan-vae-bench run ") {
        return false;
    }
    let words: Vec<&str> = command.split(' ').collect();
    let flag = |name: &str| words.windows(2).find(|w| w[0] == name).map(|w| w[1]);
    if let Some(device) = flag("--device") {
        return device.starts_with("cuda");
    }
    let Some(config) = flag("-c").or(flag("--config")) else {
        return false;
    };
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(config)).unwrap_or_default();
    text.lines()
        .any(|l| l.trim().starts_with("device") && l.contains("\"cuda"))
}

/// A small real report, made once: the inputs of `compare`, `merge`, `plot` and `history`.
fn make_report(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let out = Command::new(BIN)
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
            "-q",
        ])
        .arg("-o")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    path
}

#[test]
fn every_documented_command_runs_as_written() {
    // The Python engines' examples run with the user's Python that has torch: here the test
    // Python, as WAN_VAE_BENCH_PYTHON (the README says to give it).
    let py = need!(python());
    let dir = scratch();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    let bin = dir.path().join("bin");
    for d in [&home, &work, &bin] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::os::unix::fs::symlink(BIN, bin.join("wan-vae-bench")).unwrap();
    // The user's ComfyUI folder (the check `run` makes of it: its comfy/sd.py).
    std::fs::create_dir_all(home.join("ComfyUI/comfy")).unwrap();
    std::fs::write(home.join("ComfyUI/comfy/sd.py"), "").unwrap();
    // The reports of earlier runs the examples read, where they say they are.
    let report = make_report(dir.path(), "report.json");
    for place in [
        "results/baseline.json",
        "results/new.json",
        "a.json",
        "b.json",
        "part-1.json",
        "parts/part-1.json",
        "runs/r1.json",
    ] {
        let to = work.join(place);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&report, &to).unwrap();
    }
    // A console log with MIOpen and hipBLASLt lines (real ones, tests/fixtures/rocm).
    let rocm_log: String = [
        "rocm-libraries-6439-gfx1201-convfp16.log",
        "therock-1899-gfx1150-find-1-0-registered.log",
    ]
    .iter()
    .map(|f| std::fs::read_to_string(crate::util::cli::fixture(&format!("rocm/{f}"))).unwrap())
    .collect();
    std::fs::write(work.join("comfyui.log"), rocm_log).unwrap();
    std::fs::create_dir_all(home.join("bench-history")).unwrap();
    std::fs::copy(&report, home.join("bench-history/r1.json")).unwrap();
    // The repository's files the examples name (configs/, tests/fixtures/), where they are.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for linked in ["configs", "tests"] {
        if repo.join(linked).exists() {
            std::os::unix::fs::symlink(repo.join(linked), work.join(linked)).unwrap();
        }
    }

    let mut all: Vec<Example> = examples("README.md");
    all.extend(examples("docs/ci.md"));
    all.extend(examples("docs/rocm.md"));
    assert!(all.len() >= 25, "the examples were not found: {all:#?}");
    let (mut ran, mut failed, mut skipped) = (0, Vec::new(), Vec::new());
    for ex in &all {
        if let Some(why) = needs_the_users(&ex.command) {
            skipped.push(format!("{}: {} ({why})", ex.at, ex.command));
            continue;
        }
        let mut command = fill(&ex.command);
        if command.starts_with("wan-vae-bench run ") && !command.split(' ').any(|w| w == "--list") {
            command.push_str(" --list");
        }
        // The README's commands that need a GPU say so on their line (issue 67); here they
        // are planned only.
        if ex.at.starts_with("README.md") && needs_a_gpu(&command) {
            assert!(
                ex.gpu_marked,
                "{}: `{}` runs on the GPU but its line does not say `# on the GPU`",
                ex.at, ex.command
            );
        }
        let out = Command::new("bash")
            .arg("-c")
            .arg(&command)
            .current_dir(&work)
            .env("HOME", &home)
            .env(
                "PATH",
                format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()),
            )
            .env("HF_HUB_OFFLINE", "1")
            .env("WAN_VAE_BENCH_PYTHON", &py)
            .output()
            .unwrap();
        ran += 1;
        // 0, or 1 where the command's verdict is a measured outcome (a regression found).
        let measured = command.starts_with("wan-vae-bench history ") || command.starts_with("wan-vae-bench compare ");
        let code = out.status.code();
        if !(code == Some(0) || (measured && code == Some(1))) {
            failed.push(format!(
                "{}: {command}\n  exit {code:?}: {}",
                ex.at,
                String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {ran} documented commands failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
    assert!(skipped.len() <= 2, "skipped: {skipped:#?}");
}

/// Issue 67: the README's `history` reads a folder of the user's own runs, one its `run`
/// examples write to with `-o` (it read `results/`, which held the project's reports too);
/// and its GPU commands are marked as such (checked as they run, above).
#[test]
fn the_readmes_history_reads_the_users_own_runs() {
    let readme = examples("README.md");
    let written: Vec<String> = readme
        .iter()
        .filter(|e| e.command.starts_with("wan-vae-bench run "))
        .filter_map(|e| {
            let words: Vec<&str> = e.command.split(' ').collect();
            let out = words.windows(2).find(|w| w[0] == "-o" || w[0] == "--output")?[1];
            Some(out.rsplit_once('/')?.0.to_string())
        })
        .collect();
    let histories: Vec<&Example> = readme
        .iter()
        .filter(|e| e.command.starts_with("wan-vae-bench history "))
        .collect();
    assert!(!histories.is_empty());
    for h in histories {
        let folder = h.command.split(' ').nth(2).unwrap().trim_end_matches('/');
        assert!(
            written.iter().any(|w| w == folder),
            "{}: `{}` reads {folder}, where no README run writes (runs write to {written:?})",
            h.at,
            h.command
        );
    }
    assert!(readme.iter().filter(|e| e.gpu_marked).count() >= 4, "{readme:#?}");
}
