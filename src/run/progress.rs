//! Progress display (indicatif): cases done/total with ETA, the current case and its phase.
//! Silent when stderr is not a terminal or with `--quiet`; per-case lines then go to stderr
//! as plain text unless `--quiet`.
//!
//! Must not: decide anything about cases; it only displays what the scheduler tells it.
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The run's progress display.
pub struct Progress {
    bar: ProgressBar,
    visible: bool,
    quiet: bool,
    case: String,
}

impl Progress {
    /// A bar over `total` cases.
    pub fn new(total: usize, quiet: bool) -> Progress {
        let visible = !quiet && std::io::stderr().is_terminal();
        let bar = ProgressBar::with_draw_target(
            Some(total as u64),
            if visible {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:24} {pos}/{len} cases, ETA {eta} | {msg}")
                .expect("valid template"),
        );
        if visible {
            bar.enable_steady_tick(Duration::from_millis(200));
        }
        Progress {
            bar,
            visible,
            quiet,
            case: String::new(),
        }
    }

    /// A case starts.
    pub fn start_case(&mut self, id: &str) {
        self.case = id.to_string();
        self.bar.set_message(format!("{id}: starting"));
    }

    /// The current case reports a phase (`load`, `encode run 2/3`, ...).
    pub fn phase(&self, phase: &str) {
        self.bar.set_message(format!("{}: {phase}", self.case));
    }

    /// The current case is done; `line` summarizes it.
    pub fn finish_case(&self, line: &str) {
        self.println(line);
        self.bar.inc(1);
    }

    /// A message above the bar (or on stderr when the bar is hidden), unless quiet.
    pub fn println(&self, line: &str) {
        if self.visible {
            self.bar.println(line);
        } else if !self.quiet {
            crate::errln!("{line}");
        }
    }

    /// A worker's stderr line (`--show-output`): above the bar, or on stderr, even when quiet
    /// (the user asked for it).
    pub fn output(&self, line: &str) {
        if self.visible {
            self.bar.println(line);
        } else {
            crate::errln!("{line}");
        }
    }

    /// Remove the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
