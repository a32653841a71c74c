//! `logs`' text: MIOpen's state line, the problems table (count, direction, 2D/3D, dtype,
//! shape, solver and family), the commands that could not be read, the kernels, and the GEMMs
//! by count with their measured figures. Everything a log wrote is shown with its control
//! characters escaped ([`crate::util::format::printable`]): a stranger's log cannot drive the
//! terminal.
//!
//! Must not: read logs or write files.
use std::fmt::Write;

use super::summary::LogsJson;
use crate::util::format::printable;

/// The whole text `logs` prints.
pub fn text(j: &LogsJson) -> String {
    let mut out = String::new();
    let read: Vec<String> = j
        .files
        .iter()
        .map(|f| format!("{} ({} of {} lines)", printable(&f.path), f.rocm_lines, f.lines))
        .collect();
    let _ = writeln!(out, "read: {}", read.join(", "));
    let m = &j.miopen;
    let list = |v: &[String]| {
        if v.is_empty() {
            "not logged".to_string()
        } else {
            printable(&v.join(", "))
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
                Some(line) => format!("cold ({})", printable(line)),
                None => "no sign of a cold database".to_string(),
            }
        );
    }
    if !m.problems.is_empty() {
        let lines = total(m.problems.iter().map(|p| p.count));
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
        problems.sort_by(|a, b| crate::rocm::miopen::problem_order(a, b));
        let unsolved = if m.counted_lines > 0 { "not tied" } else { "not logged" };
        for p in problems {
            let dims = |v: [u64; 3]| v.map(|x| x.to_string()).join("x");
            rows.push(vec![
                p.count.to_string(),
                p.direction.clone(),
                format!("{}D", p.spatial_dims),
                printable(&p.dtype),
                p.n.to_string(),
                format!("{}->{}", p.c, p.k),
                dims(p.input),
                dims(p.filter),
                dims(p.pad),
                dims(p.stride),
                p.groups.to_string(),
                p.solver.as_deref().map_or_else(|| unsolved.into(), printable),
                p.solver_family.clone().unwrap_or_else(|| "-".into()),
            ]);
        }
        table(&mut out, &rows);
    }
    if m.counted_lines > 0 {
        let _ = writeln!(
            out,
            "\n{} lines carried a `uniq -c` count: a sorted log no longer has each solver line after its \
             command, so solvers are counted in total, not tied to problems",
            m.counted_lines
        );
    }
    if !m.unread_commands.is_empty() {
        let lines = total(m.unread_commands.iter().map(|u| u.count));
        let _ = writeln!(
            out,
            "\n{} driver commands ({lines} lines) could not be read, kept as logged:",
            m.unread_commands.len()
        );
        // As the bundle writes them: the most logged first, ties by text.
        let mut unread: Vec<_> = m.unread_commands.iter().collect();
        unread.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.command.cmp(&b.command)));
        for u in unread {
            let _ = writeln!(
                out,
                "  {:>7} {}  ({})",
                u.count,
                printable(&u.command),
                printable(&u.reason)
            );
        }
    }
    if !m.solvers.is_empty() || !m.evaluated_solvers.is_empty() {
        let counted = |map: &std::collections::BTreeMap<String, u64>| {
            let mut v: Vec<_> = map.iter().collect();
            v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            v.iter()
                .map(|(n, c)| format!("{} x{c}", printable(n)))
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
            rows.push(vec![k.count.to_string(), k.family.clone(), printable(&k.name)]);
        }
        table(&mut out, &rows);
    }
    let g = &j.hipblaslt.gemms;
    if !g.is_empty() {
        let lines = total(g.iter().map(|g| g.count));
        let _ = writeln!(
            out,
            "\nGEMMs (hipBLASLt/rocBLAS bench, trace and result lines): {} distinct, {lines} lines, most frequent first",
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
            "us",
            "GFLOP/s",
            "from",
        ]
        .map(String::from)
        .to_vec()];
        for g in g {
            let t = |v: &Option<String>| v.as_deref().map_or_else(|| "?".into(), printable);
            let last = g.results.last();
            let figure = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v}"));
            let from = match (g.form.as_str(), g.incomplete) {
                ("bench", false) => printable(&g.tool),
                ("bench", true) => format!("{} (cut: incomplete)", printable(&g.tool)),
                (form, _) => format!("{} {}", printable(&g.tool), printable(form)),
            };
            rows.push(vec![
                g.count.to_string(),
                g.m.to_string(),
                g.n.to_string(),
                g.k.to_string(),
                g.batch.map_or_else(|| "?".into(), |b| b.to_string()),
                format!("{}{}", t(&g.trans_a), t(&g.trans_b)),
                format!(
                    "{}/{}/{}/{} -> {}",
                    t(&g.a_type),
                    t(&g.b_type),
                    t(&g.c_type),
                    t(&g.d_type),
                    t(&g.compute_type)
                ),
                g.solution_index.map_or("-".into(), |s| s.to_string()),
                figure(last.map(|r| r.time_us)),
                figure(last.and_then(|r| r.gflops)),
                from,
            ]);
        }
        table(&mut out, &rows);
        if g.iter().any(|g| g.results.len() > 1) {
            let _ = writeln!(
                out,
                "  (us and GFLOP/s: the last of a GEMM's result rows; all are in --json)"
            );
        }
    }
    let dropped = total([m.dropped, j.hipblaslt.dropped]);
    if dropped > 0 {
        let _ = writeln!(
            out,
            "\n{dropped} names or commands past the caps were counted, not kept"
        );
    }
    out
}

/// The sum of `counts`, exact: a hostile file's `uniq -c` counts may pass 64 bits in total
/// (at most 2^64 of them fit in 128 bits, far more than the caps keep).
fn total(counts: impl IntoIterator<Item = u64>) -> u128 {
    counts.into_iter().map(u128::from).sum()
}

/// Left-aligned columns, two spaces apart, the first row a header ([`crate::util::format::columns`]).
fn table(out: &mut String, rows: &[Vec<String>]) {
    for line in crate::util::format::columns(rows) {
        let _ = writeln!(out, "  {line}");
    }
}
