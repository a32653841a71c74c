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
}

impl MiopenParser {
    /// Take one stderr line; true when it was a solver or command line (consumed).
    pub fn line(&mut self, line: &str) -> bool {
        let Some(rest) = strip_prefix(line) else {
            return false;
        };
        if let Some(solver) = chosen_solver(rest) {
            let full = self.log.solvers.len() >= MAX_SOLVERS;
            match self.log.solvers.get_mut(solver) {
                Some(n) => *n += 1,
                None if !full => {
                    self.log.solvers.insert(solver.to_string(), 1);
                }
                None => self.log.dropped += 1,
            }
            return true;
        }
        if rest.contains("[LogCmdConvolution]") {
            if let Some(at) = rest.find("MIOpenDriver") {
                // Keep the `./bin/` (or any path) in front of the driver, as logged.
                let start = rest[..at].rfind(' ').map_or(0, |s| s + 1);
                let command = rest[start..].trim();
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

    /// What was seen; `None` when no solver or command line came.
    pub fn finish(self) -> Option<MiopenLog> {
        (!self.log.solvers.is_empty() || !self.log.driver_commands.is_empty()).then_some(self.log)
    }
}

/// The text after `MIOpen(HIP):` / `MIOpen:` (any `MIOpen(...)` backend name).
fn strip_prefix(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("MIOpen")?;
    let rest = match rest.strip_prefix('(') {
        Some(r) => &r[r.find(')')? + 1..],
        None => rest,
    };
    Some(rest.strip_prefix(':')?.trim_start())
}

/// `... FW Chosen Algorithm: NAME , ...` -> NAME (also BW and WrW).
fn chosen_solver(rest: &str) -> Option<&str> {
    let after = &rest[rest.find("Chosen Algorithm:")? + "Chosen Algorithm:".len()..];
    let name = after.split(',').next()?.trim();
    (!name.is_empty()).then_some(name)
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
