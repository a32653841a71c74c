//! MIOpen's log lines on a worker's stderr (`MIOPEN_ENABLE_LOGGING_CMD=1`,
//! `MIOPEN_LOG_LEVEL=5`): the solver each convolution chose, counted, and the distinct
//! `MIOpenDriver` commands that replay a convolution. Lines start with `MIOpen(HIP):` or
//! `MIOpen:`, e.g.
//!
//! ```text
//! MIOpen(HIP): Info [FillFindReturnParameters] FW Chosen Algorithm: GemmFwdRest , 4718592000, 458.512
//! MIOpen(HIP): Command [LogCmdConvolution] ./bin/MIOpenDriver conv -n 1 -c 96 --in_d 6 -H 482 -W 834 -k 96 ...
//! ```
//!
//! Linear in the log's length: commands are looked up in a hash set, and at most
//! [`MAX_COMMANDS`] distinct commands (and [`MAX_SOLVERS`] distinct solver names) are kept;
//! the rest are counted in `dropped`, recorded in the report.
//!
//! Must not: read processes; the executor feeds it lines.
use std::collections::HashSet;

use crate::report::MiopenLog;

/// Distinct `MIOpenDriver` commands kept per case.
pub const MAX_COMMANDS: usize = 1000;
/// Distinct solver names counted per case.
pub const MAX_SOLVERS: usize = 200;

/// Collects what MIOpen logged, one stderr line at a time.
#[derive(Debug, Default)]
pub struct MiopenParser {
    log: MiopenLog,
    seen: HashSet<String>,
    /// The last command logged and not yet tied to a solver line.
    last_command: Option<String>,
}

impl MiopenParser {
    /// Take one stderr line; true when it was a solver, state or command line (consumed).
    pub fn line(&mut self, line: &str) -> bool {
        let Some(rest) = strip_prefix(line) else {
            return false;
        };
        if let Some(solver) = chosen_solver(rest).or_else(|| immediate_solver(rest)) {
            count(&mut self.log.solvers, solver, &mut self.log.dropped);
            // The call's own command came just before its solver line.
            if let Some(command) = self.last_command.take() {
                let full = self.log.solver_by_command.len() >= MAX_COMMANDS;
                if let Some(m) = match self.log.solver_by_command.get_mut(&command) {
                    Some(m) => Some(m),
                    None if !full => Some(self.log.solver_by_command.entry(command).or_default()),
                    None => None,
                } {
                    *m.entry(solver.to_string()).or_default() += 1;
                }
            }
            return true;
        }
        if let Some(solver) = evaluated_solver(rest) {
            count(&mut self.log.evaluated_solvers, solver, &mut self.log.dropped);
            return true;
        }
        if let Some(mode) = after(rest, "MIOPEN_FIND_MODE = ") {
            push_new(&mut self.log.find_modes, mode);
            return true;
        }
        if let Some(version) = after(rest, "MIOpen version ") {
            push_new(&mut self.log.versions, version.trim_end_matches(','));
            // The line may say more (`ROCm MD version ..., HIP version ...`): not consumed.
            return false;
        }
        if rest.contains("[LogCmdConvolution]") {
            if let Some(at) = rest.find("MIOpenDriver") {
                // Keep the `./bin/` (or any path) in front of the driver, as logged.
                let start = rest[..at].rfind(' ').map_or(0, |s| s + 1);
                let command = rest[start..].trim();
                self.last_command = Some(command.to_string());
                if !self.seen.contains(command) {
                    if self.seen.len() < MAX_COMMANDS {
                        self.seen.insert(command.to_string());
                        self.log.driver_commands.push(command.to_string());
                    } else {
                        self.log.dropped += 1;
                    }
                }
                return true;
            }
        }
        false
    }

    /// What was seen; `None` when no solver, state or command line came.
    pub fn finish(self) -> Option<MiopenLog> {
        let l = &self.log;
        let any = !l.solvers.is_empty()
            || !l.evaluated_solvers.is_empty()
            || !l.driver_commands.is_empty()
            || !l.find_modes.is_empty()
            || !l.versions.is_empty();
        any.then_some(self.log)
    }
}

/// Count `name` in `map`, within [`MAX_SOLVERS`] distinct names (the rest in `dropped`).
fn count(map: &mut std::collections::BTreeMap<String, u64>, name: &str, dropped: &mut u64) {
    let full = map.len() >= MAX_SOLVERS;
    match map.get_mut(name) {
        Some(n) => *n += 1,
        None if !full => {
            map.insert(name.to_string(), 1);
        }
        None => *dropped += 1,
    }
}

fn push_new(list: &mut Vec<String>, value: &str) {
    if list.len() < 16 && !list.iter().any(|v| v == value) {
        list.push(value.to_string());
    }
}

/// The first word after `marker` in `rest`.
fn after<'a>(rest: &'a str, marker: &str) -> Option<&'a str> {
    let word = rest[rest.find(marker)? + marker.len()..].split_whitespace().next()?;
    (!word.is_empty()).then_some(word)
}

/// The text after MIOpen's own prefix, wherever it starts on the line: `MIOpen(HIP): `,
/// `MIOpen: ` (MIOpen 3.6), with `MIOPEN_ENABLE_LOGGING_ELAPSED_TIME`'s seconds
/// (`MIOpen(HIP)   0.001: `), behind a tool's `INFO - `, or glued after a progress bar's
/// `\r` output (`0/6 [00:00<?, ?it/s]MIOpen(HIP): Info ...`).
fn strip_prefix(line: &str) -> Option<&str> {
    let mut from = 0;
    while let Some(at) = line[from..].find("MIOpen") {
        let start = from + at;
        if let Some(rest) = after_prefix(&line[start + "MIOpen".len()..]) {
            return Some(rest);
        }
        from = start + "MIOpen".len();
    }
    None
}

/// `(BACKEND)`, then optional elapsed seconds, then `:`; the rest, trimmed at its start.
fn after_prefix(s: &str) -> Option<&str> {
    let s = match s.strip_prefix('(') {
        Some(r) => &r[r.find(')')? + 1..],
        None => s,
    };
    let t = s.trim_start();
    let t = match t.find(':') {
        // Elapsed seconds between the backend and the colon: digits and a dot only.
        Some(i) if i > 0 && t[..i].chars().all(|c| c.is_ascii_digit() || c == '.') => &t[i..],
        _ if s.starts_with(':') => s,
        _ => return None,
    };
    Some(t.strip_prefix(':')?.trim_start())
}

/// `... FW Chosen Algorithm: NAME , ...` -> NAME (also BW and WrW).
fn chosen_solver(rest: &str) -> Option<&str> {
    let after = &rest[rest.find("Chosen Algorithm:")? + "Chosen Algorithm:".len()..];
    let name = after.split(',').next()?.trim();
    (!name.is_empty()).then_some(name)
}

/// Immediate mode (what PyTorch calls unless `cudnn.benchmark` is on):
/// `Info [ConvolutionForwardImmediate] solver_id = NAME, workspace = N`, and the backward
/// and weight-gradient calls' own (`ConvolutionBackwardDataImmediate`,
/// `ConvolutionBackwardWeightsImmediate`) -> NAME. The same macro logs `solver_id = NAME`
/// when a solution is compiled (`[CompileForwardSolution]`): that is not a run, not counted.
fn immediate_solver(rest: &str) -> Option<&str> {
    let tag = &rest[rest.find('[')? + 1..];
    let func = &tag[..tag.find(']')?];
    if !(func.starts_with("Convolution") && func.ends_with("Immediate")) {
        return None;
    }
    let name = after(tag, "solver_id = ")?.trim_end_matches(',');
    (!name.is_empty()).then_some(name)
}

/// `Evaluating Solver: ALGO:NAME` (a Find's candidate) -> NAME: evaluated, not chosen.
fn evaluated_solver(rest: &str) -> Option<&str> {
    let word = after(rest, "Evaluating Solver: ")?;
    Some(word.rsplit(':').next().unwrap_or(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_prefixes_count_solvers_and_keep_distinct_commands() {
        let mut p = MiopenParser::default();
        let cmd = "./bin/MIOpenDriver conv -n 1 -c 96 --in_d 6 -H 482 -W 834 -k 96 --fil_d 3 -y 3 -x 3";
        assert!(p.line(
            "MIOpen(HIP): Info [FillFindReturnParameters] FW Chosen Algorithm: GemmFwdRest , 4718592000, 458.512"
        ));
        assert!(p.line("MIOpen: Info [FillFindReturnParameters] FW Chosen Algorithm: GemmFwdRest , 1, 2.0"));
        assert!(
            p.line("MIOpen(HIP): Info [FillFindReturnParameters] FW Chosen Algorithm: ConvDirectNaiveConvFwd , 0, 9.5")
        );
        assert!(p.line(&format!("MIOpen(HIP): Command [LogCmdConvolution] {cmd}")));
        assert!(p.line(&format!("MIOpen: Command [LogCmdConvolution] {cmd}")));
        assert!(!p.line("MIOpen(HIP): Info [GetSolutions] something else"));
        assert!(!p.line("Traceback (most recent call last):"));
        let log = p.finish().unwrap();
        assert_eq!(log.solvers["GemmFwdRest"], 2);
        assert_eq!(log.solvers["ConvDirectNaiveConvFwd"], 1);
        assert_eq!(log.driver_commands, vec![cmd.to_string()]);
        assert_eq!(MiopenParser::default().finish(), None);
    }

    #[test]
    fn distinct_commands_are_capped_and_the_rest_counted() {
        let mut p = MiopenParser::default();
        for i in 0..MAX_COMMANDS + 50 {
            assert!(p.line(&format!(
                "MIOpen(HIP): Command [LogCmdConvolution] MIOpenDriver conv -n {i}"
            )));
            // A repeat of a kept command is neither kept twice nor counted as dropped.
            assert!(p.line("MIOpen(HIP): Command [LogCmdConvolution] MIOpenDriver conv -n 0"));
        }
        let log = p.finish().unwrap();
        assert_eq!(log.driver_commands.len(), MAX_COMMANDS);
        assert_eq!(log.dropped, 50);
    }
}

/// Real MIOpen logs published by ROCm users and AMD engineers (each file names its source).
#[cfg(test)]
mod real_logs {
    use super::*;

    fn read(text: &str) -> (MiopenLog, usize) {
        let mut p = MiopenParser::default();
        let consumed = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter(|l| p.line(l))
            .count();
        (p.finish().expect("MIOpen lines"), consumed)
    }

    #[test]
    fn a_find_names_the_chosen_solver_and_a_compile_is_not_a_run() {
        let (log, _) = read(include_str!(
            "../../tests/fixtures/rocm/a1111-6510-gfx1031-find-mode.log"
        ));
        // `FW Chosen Algorithm: NAME , 0, 0.737518`: the space before the comma.
        assert_eq!(log.solvers, [("ConvBinWinogradRxSf2x3g1".to_string(), 1)].into());
        assert!(log.evaluated_solvers.is_empty());
    }

    #[test]
    fn evaluated_solvers_are_never_called_chosen() {
        let (log, consumed) = read(include_str!(
            "../../tests/fixtures/rocm/miopen-3964-gfx1151-evaluating.log"
        ));
        assert!(log.solvers.is_empty(), "{log:?}");
        assert_eq!(
            log.evaluated_solvers.keys().collect::<Vec<_>>(),
            ["ConvBinWinogradRxSf3x2", "GemmFwdRest"]
        );
        assert_eq!(consumed, 2, "the errors stay in the stderr tail");
    }

    #[test]
    fn elapsed_time_and_tool_prefixes_and_the_state_lines_are_read() {
        let (log, _) = read(include_str!("../../tests/fixtures/rocm/miopen-1297-elapsed-time.log"));
        assert_eq!(
            (log.find_modes.as_slice(), log.versions.as_slice()),
            (&["NORMAL(1)".to_string()][..], &["2.15.0.3e1d4b080".to_string()][..])
        );
        let (log, _) = read(include_str!("../../tests/fixtures/rocm/miopen-3860-gfx1150.log"));
        assert_eq!(
            (log.find_modes.as_slice(), log.versions.as_slice()),
            (&["DYNAMIC_HYBRID(5)".to_string()][..], &["3.3.0.".to_string()][..])
        );
        let text = include_str!("../../tests/fixtures/rocm/miopen-427-tuna-info-prefix.log");
        let lines: Vec<&str> = text.lines().filter(|l| l.contains("MIOpen(HIP)")).collect();
        assert!(
            lines
                .iter()
                .all(|l| strip_prefix(l).is_some_and(|r| r.starts_with("Info ["))),
            "{lines:?}"
        );
        // A bare driver command is no MIOpen log line.
        assert_eq!(strip_prefix(text.lines().nth(1).unwrap()), None);
    }

    #[test]
    fn each_command_is_tied_to_the_solver_of_its_own_call() {
        let mut p = MiopenParser::default();
        let (a, b) = (
            "MIOpenDriver conv -n 1 -c 96 -H 60 -W 104 -k 96",
            "MIOpenDriver conv -n 1 -c 384 -H 60 -W 104 -k 384",
        );
        for l in [
            format!("MIOpen(HIP): Command [LogCmdConvolution] {a}"),
            "MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = ConvBinWinogradRxSf2x3g1, workspace = 0"
                .into(),
            format!("MIOpen(HIP): Command [LogCmdConvolution] {b}"),
            "MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = GemmFwdRest, workspace = 1179648".into(),
            format!("MIOpen(HIP): Command [LogCmdConvolution] {a}"),
            "MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = ConvBinWinogradRxSf2x3g1, workspace = 0"
                .into(),
        ] {
            p.line(&l);
        }
        let log = p.finish().unwrap();
        assert_eq!(
            log.solver_by_command[a],
            [("ConvBinWinogradRxSf2x3g1".to_string(), 2)].into()
        );
        assert_eq!(log.solver_by_command[b], [("GemmFwdRest".to_string(), 1)].into());
    }

    #[test]
    fn immediate_mode_names_the_solver_it_ran() {
        // PyTorch's default (cudnn.benchmark off) calls miopenConvolution*Immediate, which log
        // through MIOPEN_LOG_I("solver_id = " << ... << ", workspace = " << ...) in MIOpen's
        // src/ocl/convolutionocl.cpp, the same macro whose `[CompileForwardSolution]
        // solver_id = NAME` lines are in the real log above; the function in the brackets is
        // the Immediate call's. Glued after a progress bar as ComfyUI's consoles show them.
        let mut p = MiopenParser::default();
        for l in [
            "MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = ConvBinWinogradRxSf2x3g1, workspace = 0",
            "  0%|          | 0/6 [00:00<?, ?it/s]MIOpen(HIP): Info [ConvolutionForwardImmediate] solver_id = GemmFwdRest, workspace = 1179648",
            "MIOpen: Info [ConvolutionBackwardDataImmediate] solver_id = ConvDirectNaiveConvBwd, workspace = 0",
            "MIOpen(HIP): Info [CompileForwardSolution] solver_id = GemmFwdRest",
        ] {
            p.line(l);
        }
        let log = p.finish().unwrap();
        assert_eq!(log.solvers["ConvBinWinogradRxSf2x3g1"], 1);
        assert_eq!(log.solvers["GemmFwdRest"], 1, "the compile line is no second run");
        assert_eq!(log.solvers["ConvDirectNaiveConvBwd"], 1);
    }
}
