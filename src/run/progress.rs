//! Progress display (indicatif): the run's timed passes done of those planned, the case and
//! pass being timed (with its round, in a run of rounds), and a **forecast** of the time
//! left: the GFLOP of the passes still to time over the rate this run has measured so far on
//! this machine (timed GFLOP per second of the run's wall time, so start-ups and warmups are
//! in it); before the first timed pass ends, "no rate measured yet". The bar advances per
//! timed pass, not per case (issue 67, item 3: indicatif's own ETA over a few long steps
//! read `0s` through the first case and then climbed to thousands of years). Silent when
//! stderr is not a terminal or with `--quiet`; per-case lines then go to stderr as plain
//! text unless `--quiet`. The forecast is never written into a report or export.
//!
//! Must not: decide anything about cases; it only displays what the scheduler tells it.
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// What the forecast knows: the timed passes planned and done, with their GFLOP.
#[derive(Debug, Clone, Default)]
pub struct Forecast {
    pub total_passes: u64,
    pub done_passes: u64,
    pub total_gflop: f64,
    pub done_gflop: f64,
}

impl Forecast {
    /// A timed pass of `gflop` ended.
    pub fn pass_done(&mut self, gflop: f64) {
        self.done_passes += 1;
        self.done_gflop += gflop;
    }

    /// `forecast 3m 20s left at 41.2 GFLOP/s measured so far`, after `elapsed` of the run;
    /// `forecast: no rate measured yet` before a pass ended.
    pub fn text(&self, elapsed: Duration) -> String {
        let secs = elapsed.as_secs_f64();
        if self.done_gflop <= 0.0 || secs <= 0.0 {
            return "forecast: no rate measured yet".to_string();
        }
        let rate = self.done_gflop / secs;
        let left = ((self.total_gflop - self.done_gflop).max(0.0) / rate).round() as u64;
        let rate = match rate {
            r if r >= 100.0 => format!("{r:.0}"),
            r if r >= 10.0 => format!("{r:.1}"),
            r => format!("{r:.2}"),
        };
        format!("forecast {} left at {rate} GFLOP/s measured so far", clock(left))
    }
}

/// `2h 05m`, `3m 20s`, `45s`.
fn clock(s: u64) -> String {
    match s {
        s if s >= 3600 => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
        s if s >= 60 => format!("{}m {:02}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}

/// Which timed pass a phase marker is (`encode run 2/3`, the Python worker's `encode 2/3`);
/// `None` for warmups, loading and the rest.
pub fn timed_pass(phase: &str) -> Option<&'static str> {
    if phase.contains("warmup") {
        return None;
    }
    ["encode", "decode"].into_iter().find(|p| phase.starts_with(p))
}

/// The run's progress display.
pub struct Progress {
    bar: ProgressBar,
    visible: bool,
    quiet: bool,
    case: String,
    /// `round 2/5` in a run of rounds, else empty.
    round: String,
    /// The GFLOP of the current case's encode and decode pass.
    gflop: (f64, f64),
    /// The timed pass under way, if any.
    timing: Option<&'static str>,
    forecast: Forecast,
    started: Instant,
}

impl Progress {
    /// A display over a run of `total_passes` timed passes of `total_gflop` in all.
    pub fn new(total_passes: u64, total_gflop: f64, quiet: bool) -> Progress {
        let visible = !quiet && std::io::stderr().is_terminal();
        let bar = ProgressBar::with_draw_target(
            Some(total_passes),
            if visible {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:20} {pos}/{len} timed passes | {msg}")
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
            round: String::new(),
            gflop: (0.0, 0.0),
            timing: None,
            forecast: Forecast {
                total_passes,
                total_gflop,
                ..Forecast::default()
            },
            started: Instant::now(),
        }
    }

    /// A visit of case `id` starts: round `round` of `rounds` (blocks: 1 of 1), its passes
    /// of `gflop` (encode, decode) each.
    pub fn start_case(&mut self, id: &str, round: usize, rounds: usize, gflop: (f64, f64)) {
        self.case = id.to_string();
        self.round = if rounds > 1 {
            format!(" round {}/{rounds}", round + 1)
        } else {
            String::new()
        };
        self.gflop = gflop;
        self.timing = None;
        self.show("starting");
    }

    /// The message for the current case at `phase`, after `elapsed` of the run.
    pub fn message(&self, phase: &str, elapsed: Duration) -> String {
        format!("{}{}: {phase} | {}", self.case, self.round, self.forecast.text(elapsed))
    }

    fn show(&self, phase: &str) {
        self.bar.set_message(self.message(phase, self.started.elapsed()));
    }

    /// The current case reports a phase (`load`, `encode run 2/3`, ...): a timed pass under
    /// way ends when the next phase begins.
    pub fn phase(&mut self, phase: &str) {
        self.end_pass();
        self.timing = timed_pass(phase);
        self.show(phase);
    }

    /// A phase of untimed work outside a case's passes (a preparation, a cool-down).
    pub fn note(&self, what: &str) {
        self.show(what);
    }

    /// The timed pass under way (if any) ended.
    fn end_pass(&mut self) {
        if let Some(p) = self.timing.take() {
            let g = if p == "encode" { self.gflop.0 } else { self.gflop.1 };
            self.forecast.pass_done(g);
            self.bar.inc(1);
        }
    }

    /// The current visit ended (`ok`: its last timed pass counts as done).
    pub fn end_visit(&mut self, ok: bool) {
        if ok {
            self.end_pass();
        }
        self.timing = None;
    }

    /// The timed passes a case will no longer run (it failed, or its engine cannot run it):
    /// `passes` of `gflop` in all leave the plan.
    pub fn drop_passes(&mut self, passes: u64, gflop: f64) {
        self.forecast.total_passes = self.forecast.total_passes.saturating_sub(passes);
        self.forecast.total_gflop = (self.forecast.total_gflop - gflop).max(0.0);
        self.bar
            .set_length(self.forecast.total_passes.max(self.forecast.done_passes));
    }

    /// The forecast as it stands (for tests and the end of a run).
    pub fn forecast(&self) -> &Forecast {
        &self.forecast
    }

    /// A case is done; `line` summarizes it.
    pub fn finish_case(&self, line: &str) {
        self.println(line);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_advances_per_timed_pass_and_forecasts_from_the_measured_rate() {
        // Two cases of 3 runs, encode 2 GFLOP and decode 4 GFLOP a pass: 12 passes, 36 GFLOP.
        let mut p = Progress::new(12, 36.0, true);
        p.start_case("a", 0, 3, (2.0, 4.0));
        assert_eq!(
            p.message("load", Duration::from_secs(5)),
            "a round 1/3: load | forecast: no rate measured yet"
        );
        for phase in [
            "load",
            "warmup encode 1/1",
            "warmup decode 1/1",
            "encode 1/1",
            "decode 1/1",
        ] {
            p.phase(phase);
        }
        // The encode ended when the decode began; the decode when the visit ended.
        assert_eq!(p.forecast().done_passes, 1);
        p.end_visit(true);
        assert_eq!((p.forecast().done_passes, p.forecast().done_gflop), (2, 6.0));
        // 6 GFLOP in 3 s (a fake clock): 2 GFLOP/s, 30 GFLOP left: 15 s.
        assert_eq!(
            p.message("decode 1/1", Duration::from_secs(3)),
            "a round 1/3: decode 1/1 | forecast 15s left at 2.00 GFLOP/s measured so far"
        );
        // A failed visit's pass under way is not done; the case's remaining passes leave the plan.
        p.start_case("b", 1, 3, (2.0, 4.0));
        p.phase("encode 1/1");
        p.end_visit(false);
        p.drop_passes(4, 12.0);
        let f = p.forecast();
        assert_eq!((f.done_passes, f.total_passes, f.total_gflop), (2, 8, 24.0));
        assert_eq!(clock(7265), "2h 01m");
        assert_eq!(clock(200), "3m 20s");
    }
}
