//! `run --shard K/N`: the planned cases split into N parts, of which a run measures part K.
//!
//! A pure function on the plan, applied after the quality references are added and before
//! the cases are ordered (so the shuffle seed plays no part). The unit that is never split
//! is a reference case with every case compared against it, and with its cross-engine twin
//! (the case of the same settings its engine's `cross_check` engine runs), as pytest-xdist's
//! `loadscope` keeps a scope's tests together: each part then fills in every quality and
//! cross-engine record an unsharded run would. Units are dealt out largest first (by the
//! analytic GFLOP of their cases' passes) to the part with the least work so far (longest
//! processing time first); ties go by unit name and part number, so every machine computes
//! the same parts from the same plan.
//!
//! Must not: run or order cases, or read reports (`merge` checks the parts).
use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::matrix::Case;
use super::options::BenchOptions;
use crate::model::flops::passes_gflop;
use crate::model::Config;
use crate::report::shard::ShardRecord;

pub use crate::report::values::{shard_flag as parse_flag, ShardSpec};

/// Keep only the cases of part `spec` of the plan `cases` (references included); the
/// record says which part of which plan. `None` leaves the plan whole.
pub fn apply(cases: &mut Vec<Case>, spec: Option<ShardSpec>, opts: &BenchOptions, cfg: &Config) -> Option<ShardRecord> {
    let spec = spec?;
    let planned = cases.len();
    let fingerprint = fingerprint(cases, opts);
    let part = assign(cases, spec.count, &opts.device, |c| gflop(cfg, c));
    let mut i = 0;
    cases.retain(|_| {
        i += 1;
        part[i - 1] == spec.index - 1
    });
    Some(ShardRecord {
        index: spec.index,
        count: spec.count,
        planned_cases: planned,
        shard_cases: cases.len(),
        plan_fingerprint: fingerprint,
    })
}

/// The part (0-based) of each case, in the order of `cases`.
pub fn assign(cases: &[Case], parts: usize, device: &str, cost: impl Fn(&Case) -> f64) -> Vec<usize> {
    let units = units(cases, device);
    // Unit name (its smallest id) -> (its cost, its cases).
    let mut by_unit: BTreeMap<&str, (f64, Vec<usize>)> = BTreeMap::new();
    for (i, c) in cases.iter().enumerate() {
        let e = by_unit.entry(units[i].as_str()).or_insert((0.0, Vec::new()));
        e.0 += cost(c).max(0.0);
        e.1.push(i);
    }
    let mut order: Vec<(&str, f64, Vec<usize>)> = by_unit.into_iter().map(|(k, (w, v))| (k, w, v)).collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let mut load = vec![(0.0_f64, 0_usize); parts.max(1)];
    let mut part = vec![0; cases.len()];
    for (_, w, members) in order {
        let p = (0..load.len())
            .min_by(|&x, &y| {
                load[x]
                    .0
                    .total_cmp(&load[y].0)
                    .then(load[x].1.cmp(&load[y].1))
                    .then(x.cmp(&y))
            })
            .unwrap_or(0);
        load[p].0 += w;
        load[p].1 += 1;
        for i in members {
            part[i] = p;
        }
    }
    part
}

/// Each case's unit, named by the smallest id in it: a case with its reference (when the
/// plan has it), a reference with its cross-engine twin (when the plan has it), and an A/A
/// control with its default.
fn units(cases: &[Case], device: &str) -> Vec<String> {
    let index: BTreeMap<&str, usize> = cases.iter().enumerate().map(|(i, c)| (c.id.as_str(), i)).collect();
    let mut parent: Vec<usize> = (0..cases.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let join = |parent: &mut Vec<usize>, a: usize, b: usize| {
        let (ra, rb) = (root(parent, a), root(parent, b));
        parent[ra.max(rb)] = ra.min(rb);
    };
    for (i, c) in cases.iter().enumerate() {
        // An A/A control runs in its default's part: the drift it measures is that part's.
        if let Some(default) = c.id.strip_suffix(super::control::SUFFIX).filter(|_| c.added_as_control) {
            if let Some(&d) = index.get(default) {
                join(&mut parent, i, d);
            }
        }
        let reference = c.reference_id();
        if let Some(&r) = index.get(reference.as_str()) {
            join(&mut parent, i, r);
        }
        if reference == c.id && c.settings.passes.decodes() {
            if let Some(other) = crate::engine::spec(c.settings.engine).cross_check {
                let twin = crate::engine::spec(other).run_as(&c.settings, device).id();
                if let Some(&t) = index.get(twin.as_str()) {
                    join(&mut parent, i, t);
                }
            }
        }
    }
    let mut name: BTreeMap<usize, &str> = BTreeMap::new();
    for (i, c) in cases.iter().enumerate() {
        let r = root(&mut parent, i);
        let n = name.entry(r).or_insert(c.id.as_str());
        if c.id.as_str() < *n {
            *n = c.id.as_str();
        }
    }
    (0..cases.len())
        .map(|i| name[&root(&mut parent, i)].to_string())
        .collect()
}

/// The analytic GFLOP of the passes a case times (one of each).
fn gflop(cfg: &Config, c: &Case) -> f64 {
    let s = &c.settings;
    let (e, d) = passes_gflop(cfg, s.passes.encodes(), s.passes.decodes(), s.frames, s.width, s.height);
    e + d
}

/// The plan's fingerprint: its sorted case ids, warmup and timed passes, and device.
pub fn fingerprint(cases: &[Case], opts: &BenchOptions) -> String {
    let mut ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
    ids.sort_unstable();
    let mut h = Sha256::new();
    for id in ids {
        h.update(id.as_bytes());
        h.update(b"\n");
    }
    h.update(format!("warmup={} runs={} device={}", opts.warmup, opts.runs, opts.device).as_bytes());
    h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{config, matrix};

    /// A plan: the matrix of `toml` with its references.
    fn plan(toml: &str) -> (Vec<Case>, BenchOptions) {
        let opts = config::parse(toml).unwrap();
        let mut cases = matrix::expand(&opts);
        matrix::add_references(&mut cases);
        (cases, opts)
    }

    const MATRIX: &str = "[matrix]\nprecision = [\"fp32\", \"bf16\"]\nchunk = [1, 2]\nframes = [1, 5, 9]\n\
                          size = [\"16x16\", \"32x32\"]\n";

    fn cost(c: &Case) -> f64 {
        (c.settings.frames * c.settings.width * c.settings.height) as f64
    }

    #[test]
    fn parts_are_disjoint_cover_the_plan_and_keep_each_case_with_its_reference() {
        let (cases, opts) = plan(MATRIX);
        let workloads = 6; // frames x size
        for n in [1, 2, 3, 5, workloads, workloads + 1, 50] {
            let part = assign(&cases, n, &opts.device, cost);
            assert_eq!(part.len(), cases.len());
            let mut seen = std::collections::BTreeSet::new();
            for k in 0..n {
                let mut mine = cases.clone();
                let mut it = part.iter();
                mine.retain(|_| *it.next().unwrap() == k);
                for c in &mine {
                    assert!(seen.insert(c.id.clone()), "{} in two parts (N={n})", c.id);
                    let r = c.reference_id();
                    assert!(
                        mine.iter().any(|m| m.id == r),
                        "{}'s reference {r} not in its part (N={n})",
                        c.id
                    );
                }
            }
            assert_eq!(seen.len(), cases.len(), "N={n}: the union is not the plan");
            let used: std::collections::BTreeSet<usize> = part.iter().copied().collect();
            assert_eq!(
                used.len(),
                n.min(workloads),
                "N={n}: every unit its own part when N >= units"
            );
        }
    }

    #[test]
    fn parts_do_not_depend_on_the_order_and_balance_the_cost() {
        let (cases, opts) = plan(MATRIX);
        let part = assign(&cases, 3, &opts.device, cost);
        let mut reversed = cases.clone();
        reversed.reverse();
        let by_id = |cs: &[Case], p: &[usize]| -> BTreeMap<String, usize> {
            cs.iter().map(|c| c.id.clone()).zip(p.iter().copied()).collect()
        };
        assert_eq!(
            by_id(&cases, &part),
            by_id(&reversed, &assign(&reversed, 3, &opts.device, cost))
        );
        let mut load = [0.0; 3];
        for (c, p) in cases.iter().zip(&part) {
            load[*p] += cost(c);
        }
        let (lo, hi) = (
            load.iter().cloned().fold(f64::MAX, f64::min),
            load.iter().cloned().fold(0.0, f64::max),
        );
        // Units: 9x32x32 (2 per 4 cases), ... the largest goes alone; LPT is within 4/3 of best.
        assert!(hi <= 2.0 * lo, "unbalanced: {load:?}");
    }

    #[test]
    fn a_python_reference_stays_with_its_candle_twin() {
        let (cases, opts) =
            plan("[matrix]\nengine = [\"candle\", \"torch\"]\nprecision = [\"fp32\", \"bf16\"]\nframes = [1, 5]\n");
        for n in [2, 4] {
            let part = assign(&cases, n, &opts.device, cost);
            let of = |id: &str| part[cases.iter().position(|c| c.id == id).unwrap()];
            for c in cases.iter().filter(|c| c.id.starts_with("torch-fp32")) {
                assert_eq!(of(&c.id), of(c.id.trim_start_matches("torch-")), "{}", c.id);
            }
        }
    }

    #[test]
    fn the_flag_is_k_of_n() {
        assert_eq!(parse_flag("2/4"), Ok(ShardSpec { index: 2, count: 4 }));
        for bad in ["0/4", "5/4", "1/0", "2", "a/b", "1/-2"] {
            assert!(parse_flag(bad).unwrap_err().contains("1 <= K <= N"), "{bad}");
        }
    }
}
