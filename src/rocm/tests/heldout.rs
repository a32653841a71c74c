//! The held-out set (`tests/fixtures/rocm-heldout/`): real logs the reader was not written
//! against, each checked against what a careful reader wrote down by hand from the source in
//! its `.expected.json` (solvers, evaluated solvers, problems, GEMMs, and where given the
//! GEMMs' form, types and measured figures).
use std::collections::BTreeMap;

use super::read;

/// The problem fields an `.expected.json` states.
const PROBLEM_FIELDS: [&str; 13] = [
    "direction",
    "spatial_dims",
    "dtype",
    "n",
    "c",
    "k",
    "input",
    "filter",
    "groups",
    "pad",
    "stride",
    "dilation",
    "count",
];

/// The GEMM fields an `.expected.json` may state beside m, n, k and count.
const GEMM_FIELDS: [&str; 10] = [
    "batch",
    "transA",
    "transB",
    "a_type",
    "b_type",
    "compute_type",
    "form",
    "incomplete",
    "time_us",
    "gflops",
];

#[test]
fn held_out_real_logs_read_as_a_careful_reader_reads_them() {
    let dir = format!("{}/tests/fixtures/rocm-heldout", env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "log") {
            continue;
        }
        let name = path.display().to_string();
        let got = read(&std::fs::read_to_string(&path).unwrap());
        let want: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path.with_extension("expected.json")).unwrap()).unwrap();
        let m = got.miopen.clone().unwrap_or_default();
        let strings = |v: &serde_json::Value| -> Vec<String> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(m.versions, strings(&want["miopen_versions"]), "{name}");
        assert_eq!(m.find_modes, strings(&want["find_modes"]), "{name}");
        let solvers: BTreeMap<String, u64> = serde_json::from_value(want["solvers"].clone()).unwrap();
        assert_eq!(m.solvers, solvers, "{name}");
        let evaluated = strings(&want["evaluated_solvers"]);
        assert_eq!(
            m.evaluated_solvers.keys().cloned().collect::<Vec<_>>(),
            evaluated,
            "{name}"
        );
        if let Some(counts) = want.get("evaluated_solver_counts") {
            let counts: BTreeMap<String, u64> = serde_json::from_value(counts.clone()).unwrap();
            assert_eq!(m.evaluated_solvers, counts, "{name}");
        }
        assert_eq!(!m.cold_db.is_empty(), want["cold_db"].as_bool().unwrap(), "{name}");
        let problems: Vec<_> = m
            .problems
            .iter()
            .map(|p| {
                serde_json::json!({
                    "direction": p.direction, "spatial_dims": p.spatial_dims, "dtype": p.dtype,
                    "n": p.n, "c": p.c, "k": p.k, "input": p.input, "filter": p.filter,
                    "groups": p.groups, "pad": p.pad, "stride": p.stride, "dilation": p.dilation,
                    "count": p.count,
                })
            })
            .collect();
        let expected: Vec<_> = want["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let mut p = p.as_object().unwrap().clone();
                p.retain(|k, _| PROBLEM_FIELDS.contains(&k.as_str()));
                serde_json::Value::Object(p)
            })
            .collect();
        assert_eq!(problems, expected, "{name}");
        let gemms = got.hipblaslt.map(|h| h.gemms).unwrap_or_default();
        let expected = want["gemms"].as_array().unwrap();
        assert_eq!(gemms.len(), expected.len(), "{name}: {gemms:?}");
        for (g, e) in gemms.iter().zip(expected) {
            let n = |k: &str| e[k].as_u64().unwrap();
            assert_eq!((g.m, g.n, g.k, g.count), (n("m"), n("n"), n("k"), n("count")), "{name}");
            let got = serde_json::json!({
                "batch": g.batch, "transA": g.trans_a, "transB": g.trans_b, "a_type": g.a_type,
                "b_type": g.b_type, "compute_type": g.compute_type, "form": g.form, "incomplete": g.incomplete,
                "time_us": g.results.iter().map(|r| r.time_us).collect::<Vec<_>>(),
                "gflops": g.results.iter().map(|r| r.gflops).collect::<Vec<_>>(),
            });
            for field in GEMM_FIELDS.iter().filter(|f| e.get(**f).is_some()) {
                let (a, b) = (&got[field], &e[field]);
                // Numbers compare as numbers (`153728` and `153728.0`).
                let same = match (a.as_array(), b.as_array()) {
                    (Some(a), Some(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.as_f64() == y.as_f64()),
                    _ => a == b,
                };
                assert!(same, "{name}: {field} {a} != {b}");
            }
        }
        checked += 1;
    }
    assert!(checked >= 12, "{checked} held-out logs in {dir}");
}
