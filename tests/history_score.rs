//! `history` scored against the truth of seeded histories (issue 56; the generator and the
//! definitions are [`crate::util::histories`]'s), on the mix it was tuned on and on a
//! held-out one, and asv 0.6.6's `step_detect` scored on the same histories (with the
//! tool's weights, as `tests/history_asv.rs` runs it). `WAN_VAE_BENCH_SCORE_MISSES=1`
//! prints every miss.
use std::process::Command;

use crate::need;
use crate::util::histories::{generate, Generated, Mix, Said, Score, HELD_OUT, TUNED};
use wan_vae_bench::history::{analyse, Series};

/// Histories of each mix scored (about 250 clear steps on the tuned mix).
const COUNT: usize = 300;
const TUNED_SEED: u64 = 5656;
const HELD_OUT_SEED: u64 = 0x5eed_0f_56;

fn tool(g: &Generated) -> Series {
    let (paths, reports) = g.reports();
    let h = analyse(&paths, &reports, 0.05, 0.05);
    h.series.into_iter().find(|s| s.pass == "decode").unwrap()
}

fn said(s: &Series) -> Said {
    Said {
        steps: s.steps.iter().map(|st| st.point).collect(),
        regression: s.verdict.regression,
        fails: s.verdict.fails(),
    }
}

fn score(gens: &[Generated], who: &str, said: impl Fn(usize, &Generated) -> Said) -> Score {
    let mut score = Score::default();
    let mut misses = Vec::new();
    for (i, g) in gens.iter().enumerate() {
        score.add(g, &said(i, g), &mut misses);
    }
    if std::env::var_os("WAN_VAE_BENCH_SCORE_MISSES").is_some() {
        for m in &misses {
            eprintln!("{who}: {m}");
        }
    }
    eprintln!("{}", score.table(who));
    score
}

fn tool_score(mix: &Mix, seed: u64, who: &str) -> Score {
    let gens = generate(mix, seed, COUNT);
    score(&gens, who, |_, g| said(&tool(g)))
}

#[test]
fn tool_on_the_tuned_mix() {
    let s = tool_score(&TUNED, TUNED_SEED, "tool, tuned mix");
    assert!(s.clear >= 200, "{s:?}");
}

#[test]
fn tool_on_the_held_out_mix() {
    let s = tool_score(&HELD_OUT, HELD_OUT_SEED, "tool, held-out mix");
    assert!(s.clear >= 200, "{s:?}");
}

/// asv's steps and `detect_regressions` verdict (5%) on each `(y, w)`.
fn asv(series: &[(Vec<f64>, Vec<f64>)]) -> Result<Vec<(Vec<usize>, bool)>, crate::util::cli::Missing> {
    let py = crate::util::cli::python()?;
    let probe = Command::new(&py)
        .args(["-c", "import asv; print(asv.__version__)"])
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&probe.stdout).trim().to_string();
    if version != "0.6.6" {
        return Err(crate::util::cli::Missing(format!(
            "asv 0.6.6 is not installed in {} (found {version:?}; scripts/test.sh installs it)",
            py.display()
        )));
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("series.json");
    std::fs::write(&input, serde_json::to_string(series).unwrap()).unwrap();
    let code = r#"
import json, sys
from asv.step_detect import detect_steps, detect_regressions
out = []
for y, w in json.load(open(sys.argv[1])):
    steps = detect_steps(y, w)
    latest, best, pos = detect_regressions(steps, threshold=0.05)
    out.append([[s[0] for s in steps[1:]], pos is not None])
print(json.dumps(out))
"#;
    let out = Command::new(&py).args(["-c", code]).arg(&input).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Ok(serde_json::from_slice(&out.stdout).unwrap())
}

fn asv_score(mix: &Mix, seed: u64, who: &str) -> Result<(Score, Score), crate::util::cli::Missing> {
    let gens = generate(mix, seed, COUNT);
    let tools: Vec<Series> = gens.iter().map(tool).collect();
    let input: Vec<(Vec<f64>, Vec<f64>)> = tools
        .iter()
        .map(|s| {
            (
                s.points.iter().map(|p| p.median_s).collect(),
                s.points.iter().map(|p| p.weight).collect(),
            )
        })
        .collect();
    let asvs = asv(&input)?;
    let tool = score(&gens, &format!("tool, {who}"), |i, _| said(&tools[i]));
    let asv = score(&gens, &format!("asv 0.6.6, {who}"), |i, _| Said {
        steps: asvs[i].0.clone(),
        regression: asvs[i].1,
        fails: asvs[i].1,
    });
    Ok((tool, asv))
}

#[test]
fn asv_on_the_same_histories() {
    for (mix, seed, who) in [
        (&TUNED, TUNED_SEED, "tuned mix"),
        (&HELD_OUT, HELD_OUT_SEED, "held-out mix"),
    ] {
        let (tool, asv) = need!(asv_score(mix, seed, who));
        assert!(tool.located >= asv.located, "{tool:?}\n{asv:?}");
    }
}
