//! `logs`' text: MIOpen's state line, the problems table (count, direction, 2D/3D, dtype,
//! shape, solver and family), the kernels, and the GEMMs by count.
//!
//! Must not: read logs or write files.
use std::fmt::Write;

use super::summary::LogsJson;

/// The whole text `logs` prints.
pub fn text(j: &LogsJson) -> String {
    let mut out = String::new();
    let read: Vec<String> = j
        .files
        .iter()
        .map(|f| format!("{} ({} of {} lines)", f.path, f.rocm_lines, f.lines))
        .collect();
    let _ = writeln!(out, "read: {}", read.join(", "));
    let m = &j.miopen;
    let list = |v: &[String]| {
        if v.is_empty() {
            "not logged".to_string()
        } else {
            v.join(", ")
        }
    };
    let said_nothing = m.versions.is_empty()
        && m.find_modes.is_empty()
        && m.cold_db_evidence.is_empty()
        && m.problems.is_empty()
        && m.solvers.is_empty()
        && m.evaluated_solvers.is_empty()
        && m.kernels.is_empty();
    if said_nothing {
        let _ = writeln!(out, "MIOpen: no line logged");
    } else {
        let _ = writeln!(
            out,
            "MIOpen: version {}; find mode {}; database {}",
            list(&m.versions),
            list(&m.find_modes),
            match m.cold_db_evidence.first() {
                Some(line) => format!("cold ({})", line),
                None => "no sign of a cold database".to_string(),
            }
        );
    }
    if !m.problems.is_empty() {
        let lines: u64 = m.problems.iter().map(|p| p.count).sum();
        let _ = writeln!(
            out,
            "\nconvolution problems: {} distinct, {} command lines",
            m.problems.len(),
            lines
        );
        let mut rows = vec![[
            "count",
            "dir",
            "dims",
            "dtype",
            "n",
            "c->k",
            "input dxhxw",
            "filter",
            "pad",
            "stride",
            "groups",
            "solver",
            "family",
        ]
        .map(String::from)
        .to_vec()];
        let mut problems: Vec<_> = m.problems.iter().collect();
        problems.sort_by_key(|x| std::cmp::Reverse(x.count));
        for p in problems {
            let dims = |v: [u64; 3]| v.map(|x| x.to_string()).join("x");
            rows.push(vec![
                p.count.to_string(),
                p.direction.clone(),
                format!("{}D", p.spatial_dims),
                p.dtype.clone(),
                p.n.to_string(),
                format!("{}->{}", p.c, p.k),
                dims(p.input),
                dims(p.filter),
                dims(p.pad),
                dims(p.stride),
                p.groups.to_string(),
                p.solver.clone().unwrap_or_else(|| "not logged".into()),
                p.solver_family.clone().unwrap_or_else(|| "-".into()),
            ]);
        }
        table(&mut out, &rows);
    }
    if !m.solvers.is_empty() || !m.evaluated_solvers.is_empty() {
        let counted = |map: &std::collections::BTreeMap<String, u64>| {
            let mut v: Vec<_> = map.iter().collect();
            v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            v.iter()
                .map(|(n, c)| format!("{n} x{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "\nsolvers run: {}",
            if m.solvers.is_empty() {
                "none logged".into()
            } else {
                counted(&m.solvers)
            }
        );
        if !m.evaluated_solvers.is_empty() {
            let _ = writeln!(out, "solvers evaluated, not chosen: {}", counted(&m.evaluated_solvers));
        }
    }
    if !m.kernels.is_empty() {
        let _ = writeln!(out, "\nkernels launched:");
        let mut rows = vec![vec!["count".to_string(), "family".into(), "kernel".into()]];
        for k in &m.kernels {
            rows.push(vec![k.count.to_string(), k.family.clone(), k.name.clone()]);
        }
        table(&mut out, &rows);
    }
    let g = &j.hipblaslt.gemms;
    if !g.is_empty() {
        let lines: u64 = g.iter().map(|g| g.count).sum();
        let _ = writeln!(
            out,
            "\nGEMMs (hipBLASLt/rocBLAS bench lines): {} distinct, {lines} lines, most frequent first",
            g.len()
        );
        let mut rows = vec![[
            "count",
            "m",
            "n",
            "k",
            "batch",
            "trans",
            "types (a/b/c/d -> compute)",
            "solution",
            "tool",
        ]
        .map(String::from)
        .to_vec()];
        for g in g {
            let t = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
            rows.push(vec![
                g.count.to_string(),
                g.m.to_string(),
                g.n.to_string(),
                g.k.to_string(),
                g.batch.to_string(),
                format!("{}{}", g.trans_a, g.trans_b),
                format!(
                    "{}/{}/{}/{} -> {}",
                    t(&g.a_type),
                    t(&g.b_type),
                    t(&g.c_type),
                    t(&g.d_type),
                    t(&g.compute_type)
                ),
                g.solution_index.map_or("-".into(), |s| s.to_string()),
                g.tool.clone(),
            ]);
        }
        table(&mut out, &rows);
    }
    if m.dropped + j.hipblaslt.dropped > 0 {
        let _ = writeln!(
            out,
            "\n{} names or commands past the caps were counted, not kept",
            m.dropped + j.hipblaslt.dropped
        );
    }
    out
}

/// Left-aligned columns, two spaces apart, the first row a header ([`crate::util::format::columns`]).
fn table(out: &mut String, rows: &[Vec<String>]) {
    for line in crate::util::format::columns(rows) {
        let _ = writeln!(out, "  {line}");
    }
}
