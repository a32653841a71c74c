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
//! Must not: read processes; the executor feeds it lines.
use crate::report::MiopenLog;

/// Collects what MIOpen logged, one stderr line at a time.
#[derive(Debug, Default)]
pub struct MiopenParser {
    log: MiopenLog,
}

impl MiopenParser {
    /// Take one stderr line; true when it was a solver or command line (consumed).
    pub fn line(&mut self, line: &str) -> bool {
        let Some(rest) = strip_prefix(line) else {
            return false;
        };
        if let Some(solver) = chosen_solver(rest) {
            *self.log.solvers.entry(solver.to_string()).or_insert(0) += 1;
            return true;
        }
        if rest.contains("[LogCmdConvolution]") {
            if let Some(at) = rest.find("MIOpenDriver") {
                // Keep the `./bin/` (or any path) in front of the driver, as logged.
                let start = rest[..at].rfind(' ').map_or(0, |s| s + 1);
                let command = rest[start..].trim().to_string();
                if !self.log.driver_commands.contains(&command) {
                    self.log.driver_commands.push(command);
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
}
