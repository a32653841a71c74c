//! `logs`' text: what was read, MIOpen's state line (and a missing system database), the
//! conclusions, the problems table (count, direction, 2D/3D, dtype, shape, solver and
//! family; a `uniq -c` file's table says why its solver column is empty), the commands that
//! could not be read, MIOpen's errors, the kernels, the GEMMs by count with their measured
//! figures, and what was not kept, by reason. Everything a log wrote is shown with its control
//! characters escaped ([`crate::util::format::printable`]): a stranger's log cannot drive the
//! terminal.
//!
//! Must not: read logs or write files.
use std::fmt::Write;

use super::logs_json::LogsJson;
use crate::util::format::printable;

/// The whole text `logs` prints.
pub fn text(j: &LogsJson) -> String {
    let mut out = String::new();
    let read: Vec<String> = j
        .files
        .iter()
        .map(|f| {
            let mut t = format!(
                "{}: {} {}, {} of them ROCm's",
                printable(&f.path),
                f.lines,
                plural(f.lines, "line", "lines"),
                f.rocm_lines
            );
            if f.diff_removed_lines > 0 {
                let _ = write!(t, "; {} a pasted diff removed (`-`), not read", f.diff_removed_lines);
            }
            if f.rejoined_lines > 0 {
                let _ = write!(
                    t,
                    "; {} rejoined to the command a narrow terminal cut {} from",
                    f.rejoined_lines,
                    plural(f.rejoined_lines, "it", "them")
                );
            }
            t
        })
        .collect();
    let _ = writeln!(out, "read {}", read.join("; "));
    let m = &j.miopen;
    let said_nothing = m.versions.is_empty()
        && m.find_modes.is_empty()
        && m.cold_db_evidence.is_empty()
        && m.problems.is_empty()
        && m.solvers.is_empty()
        && m.evaluated_solvers.is_empty()
        && m.kernels.is_empty()
        && m.errors.is_empty()
        && m.system_db_missing.is_empty();
    if said_nothing {
        let _ = writeln!(out, "MIOpen: no line logged");
    } else {
        let version = match m.versions.as_slice() {
            [] => "version not logged".to_string(),
            v => format!("version {}", printable(&v.join(", "))),
        };
        let mode = match m.find_modes.as_slice() {
            [] => "find mode not logged".to_string(),
            v => format!("find mode {}", printable(&v.join(", "))),
        };
        let db = match m.cold_db_evidence.first() {
            Some(line) => format!("its find or performance database was cold ({})", printable(line)),
            None => "no sign of a cold find or performance database".to_string(),
        };
        let _ = writeln!(out, "MIOpen: {version}; {mode}; {db}");
        if let Some(line) = m.system_db_missing.first() {
            let _ = writeln!(
                out,
                "MIOpen's system database is missing or unreadable ({}): the kernels it would hold are compiled \
                 when first used, so first runs are slow; install MIOpen's kernel package for this GPU, or give a \
                 warmed-up run",
                printable(line)
            );
        }
    }
    for c in &j.conclusions {
        let _ = writeln!(out, "conclusion: {}", printable(c));
    }
    if !m.problems.is_empty() {
        let lines = total(m.problems.iter().map(|p| p.count));
        let _ = writeln!(
            out,
            "\nconvolution problems: {} distinct, {} command lines{}",
            m.problems.len(),
            lines,
            if m.counted_lines > 0 {
                " (a `sort | uniq -c` file: sorting took each solver line away from its command, so the solver \
                 column says `not tied` and the solvers are counted in total below)"
            } else {
                ""
            }
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
    if m.counted_lines > 0 && m.problems.is_empty() {
        let _ = writeln!(
            out,
            "\n{} lines carried a `uniq -c` count: a sorted log no longer has each solver line after its \
             command, so solvers are counted in total, not tied to problems",
            m.counted_lines
        );
    }
    if !m.errors.is_empty() {
        let _ = writeln!(out, "\nMIOpen's errors (the source file each named left out):");
        for e in &m.errors {
            let _ = writeln!(out, "  {:>7} {}", e.count, printable(&e.error));
        }
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
    dropped(&mut out, "MIOpen", &m.dropped_reasons);
    dropped(&mut out, "GEMMs", &j.hipblaslt.dropped_reasons);
    out
}

/// What a reader did not keep: one line per reason, with the first record dropped for it.
fn dropped(out: &mut String, what: &str, reasons: &[crate::rocm::dropped::DroppedReason]) {
    for r in reasons {
        let _ = write!(out, "\n{what}: {} {}", r.count, r.reason.text());
        if let Some(example) = &r.example {
            let _ = write!(out, "; the first: {}", printable(example));
        }
        let _ = writeln!(out);
    }
}

/// `one` for 1, else `many`.
fn plural(n: u64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
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
