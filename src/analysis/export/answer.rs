//! The answer block (the report's `summary`, computed by `crate::analysis::answer`): under the
//! terminal table ([`text`]) and after the Markdown table ([`markdown`]). Per workload and
//! engine: its sentence, then how to apply the fastest case (`export`/`unset` lines, the
//! ComfyUI node and switch, the PyTorch knobs) when there is something to apply.
//!
//! Must not: compute anything; it renders what the summary holds.
use std::fmt::Write;

use crate::report::{Answer, Apply, Summary};

/// What "stays right" and the ratio mean (the block's title after "What to set: ").
fn criteria(s: &Summary) -> String {
    format!(
        "the fastest ok case with PSNR >= {} dB against its fp32 untiled reference, within the memory budgets; speed-up = median time of the default / of that case, {:.0}% bootstrap interval",
        s.min_psnr_db,
        s.confidence * 100.0
    )
}

/// `wan2.1, 5 frames at 64x64, encode+decode, engine candle`.
fn workload(a: &Answer) -> String {
    let passes = match a.passes.as_str() {
        "both" => "encode+decode",
        p => p,
    };
    format!(
        "{}, {} frames at {}x{}, {passes}, engine {}",
        a.model, a.frames, a.width_px, a.height_px, a.engine
    )
}

/// The lines that apply a case: `export`, `unset`, then each step.
pub fn apply_lines(apply: &Apply) -> Vec<String> {
    let mut out: Vec<String> = apply
        .env_set
        .iter()
        .map(|(k, v)| format!("export {k}={}", crate::util::format::shell_word(v)))
        .collect();
    out.extend(apply.env_unset.iter().map(|k| format!("unset {k}")));
    out.extend(apply.steps.iter().cloned());
    out
}

/// The block for the terminal.
pub fn text(s: &Summary) -> String {
    let mut o = format!("\nWhat to set: {}:\n", criteria(s));
    for a in &s.answers {
        let _ = writeln!(o, "* {}:", workload(a));
        let _ = writeln!(o, "  {}", a.sentence);
        if let Some(apply) = &a.apply {
            let _ = writeln!(o, "  apply (measured on {}):", apply.engine);
            for line in apply_lines(apply) {
                let _ = writeln!(o, "    {line}");
            }
        }
    }
    o
}

/// The block in Markdown: a section with one item per workload and engine.
pub fn markdown(s: &Summary) -> String {
    let mut o = format!("\n## What to set\n\nPer workload and engine, {}.\n\n", criteria(s));
    for a in &s.answers {
        let _ = writeln!(o, "- **{}** (`{}`): {}", workload(a), a.verdict.name(), a.sentence);
        if let Some(apply) = &a.apply {
            let _ = writeln!(o, "\n  Apply (measured on {}):\n\n  ```sh", apply.engine);
            for line in apply_lines(apply) {
                let line = if line.starts_with("export ") || line.starts_with("unset ") {
                    line
                } else {
                    format!("# {line}")
                };
                let _ = writeln!(o, "  {line}");
            }
            o.push_str("  ```\n");
        }
    }
    o
}
