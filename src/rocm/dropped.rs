//! What the readers did not keep, and why: every record, name or count a reader could not
//! keep is counted under its reason ([`Why`]), with the first one as an example, so `logs`
//! says what was dropped and why instead of calling everything "past the caps".
//!
//! Must not: read lines (the readers call [`Dropped::add`]).
use std::collections::BTreeMap;

use serde::Serialize;

/// Why something was not kept. The order is the order `logs` lists them in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// A `uniq -c` count that is no count (`0`, or past 64 bits): the record was not read.
    UnreadableCount,
    /// A bench line cut inside its shape (`-k 409` ending a cut line): the value is unknown.
    CutValue,
    /// A bench line with a shape value that is not a whole number of 64 bits.
    BadValue,
    /// Past the caps: 1000 distinct commands, problems or GEMMs, 200 solver or kernel names.
    Capped,
    /// A command longer than 4096 bytes, or a name longer than 256.
    TooLong,
    /// A count that would pass 64 bits when added (the total keeps what it had).
    CountOverflow,
    /// A result row past the 64 kept per GEMM.
    ResultRows,
    /// Dropped while a case of `run` was read (its record keeps only the number).
    CaseRecords,
}

impl Why {
    /// The reason in words, as `logs` prints it.
    pub fn text(self) -> &'static str {
        match self {
            Why::UnreadableCount => "lines not read: their `uniq -c` count is no count (0, or past 64 bits)",
            Why::CutValue => {
                "bench lines not read: cut inside their shape (a cut line's last value is unknown, never a shorter number)"
            }
            Why::BadValue => "bench lines not read: a shape value that is not a whole number of 64 bits",
            Why::Capped => {
                "names or commands past the caps (1000 distinct commands, problems or GEMMs; 200 solver or kernel \
                 names) were counted, not kept"
            }
            Why::TooLong => "commands over 4096 bytes or names over 256 bytes were counted, not kept",
            Why::CountOverflow => "counts not added: the sum would pass 64 bits (each total keeps what it had)",
            Why::ResultRows => "result rows past the 64 kept per GEMM were counted, not kept",
            Why::CaseRecords => "records the run's cases did not keep (each case's record holds only the number)",
        }
    }
}

/// The longest example kept, in bytes.
const MAX_EXAMPLE_BYTES: usize = 300;

/// What was dropped, by reason: how many, and the first one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dropped {
    by: BTreeMap<Why, (u64, Option<String>)>,
}

/// One reason as `logs --json` writes it (`dropped_reasons[]`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DroppedReason {
    pub reason: Why,
    pub count: u64,
    /// The first record dropped for it, as logged (cut to 300 bytes); `null` when there is
    /// none to show (a count, a cap).
    pub example: Option<String>,
}

impl Dropped {
    /// Count one more for `why`, `example` the record when there is one to show.
    pub fn add(&mut self, why: Why, example: Option<&str>) {
        self.add_n(why, 1, example);
    }

    /// Count `n` more for `why`.
    pub fn add_n(&mut self, why: Why, n: u64, example: Option<&str>) {
        if n == 0 {
            return;
        }
        let entry = self.by.entry(why).or_insert((0, None));
        entry.0 = entry.0.saturating_add(n);
        if entry.1.is_none() {
            entry.1 = example.map(cut);
        }
    }

    /// Everything counted, over all reasons.
    pub fn total(&self) -> u64 {
        self.by.values().fold(0u64, |t, (n, _)| t.saturating_add(*n))
    }

    /// Add `other`'s counts to these.
    pub fn merge(&mut self, other: &Dropped) {
        for (why, (n, example)) in &other.by {
            self.add_n(*why, *n, example.as_deref());
        }
    }

    /// The reasons, in [`Why`]'s order.
    pub fn reasons(&self) -> Vec<DroppedReason> {
        self.by
            .iter()
            .map(|(why, (count, example))| DroppedReason {
                reason: *why,
                count: *count,
                example: example.clone(),
            })
            .collect()
    }
}

/// `text` trimmed and cut to [`MAX_EXAMPLE_BYTES`] at a character boundary.
fn cut(text: &str) -> String {
    let t = text.trim();
    if t.len() <= MAX_EXAMPLE_BYTES {
        return t.to_string();
    }
    let mut end = MAX_EXAMPLE_BYTES;
    while !t.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} [...]", &t[..end])
}
