//! How people hand logs over, undone before any reader sees a line:
//! - `grep -n` and `grep -rn` line numbers (`229:MIOpen(HIP): ...`, `run.log:229:...`) and
//!   `cat -n`'s (`     1<TAB>...`) are dropped;
//! - several such records pasted on one line, each after its own `NNN:` and ended by `;`
//!   (`124:MIOpen(HIP): Info ...;146:MIOpen(HIP): Info2 ...;`, a table cell of evidence in
//!   AETS-MAGI/ROCm-vega), are read one by one, in order;
//! - a `sort | uniq -c` count (`  42428 hipblaslt-bench ...`: spaces, the count, one space,
//!   the line as logged; what ROCm/TheRock #2591 asks for) is how many times the line was
//!   logged. A number followed by a tab is `cat -n`'s line number, not a count.
//!
//! Linear: each byte of a line is looked at a bounded number of times.
//!
//! Must not: read the records (that is the readers').

/// How many times a record was logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// No count before it: logged once.
    Once,
    /// A `uniq -c` count.
    Counted(u64),
    /// A count that cannot be one (`0`, or past 64 bits): the record is not read.
    Unreadable,
}

/// One record of a line, after the paste's prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    pub text: &'a str,
    pub count: Count,
}

/// Call `each` with every record of `part` (one `\r`-separated part of a line), in order.
pub fn records<'a>(part: &'a str, mut each: impl FnMut(Record<'a>)) {
    let bytes = part.as_bytes();
    // Where joined records start: after a `;` followed by `NNN:`.
    let mut starts = Vec::new();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b';' {
            let digits = bytes[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            if digits > 0 && bytes.get(i + 1 + digits) == Some(&b':') {
                starts.push(i + 1);
            }
        }
    }
    if starts.is_empty() {
        each(record(strip_line_number(part)));
        return;
    }
    // Joined: the first record starts at the first `NNN:` after a space (what stands before
    // it is the paste's, `- lines: `); each ends at the `;` before the next.
    let first = first_numbered(&part[..starts[0] - 1]).unwrap_or(0);
    let mut from = first;
    for &next in starts.iter().chain(std::iter::once(&(part.len() + 1))) {
        let end = (next - 1).min(part.len());
        let text = part[from..end].trim_end_matches(';');
        each(record(strip_line_number(text)));
        from = next.min(part.len());
    }
}

/// Where the first `NNN:` that starts a word is.
fn first_numbered(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let at_word = i == 0 || b[i - 1].is_ascii_whitespace();
        let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if at_word && digits > 0 && b.get(i + digits) == Some(&b':') {
            return Some(i);
        }
        i += digits.max(1);
    }
    None
}

/// A record's text after its `uniq -c` count, if any.
fn record(text: &str) -> Record<'_> {
    let t = text.trim_start_matches(' ');
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || t.as_bytes().get(digits) != Some(&b' ') {
        return Record {
            text,
            count: Count::Once,
        };
    }
    let count = match t[..digits].parse::<u64>() {
        Ok(n) if n > 0 => Count::Counted(n),
        _ => Count::Unreadable,
    };
    Record {
        text: &t[digits + 1..],
        count,
    }
}

/// `text` without a line number before it: `cat -n`'s (spaces, digits, a tab), `grep -n`'s
/// (digits and `:` at the start) or `grep -rn`'s (a file name without spaces, `:`, digits,
/// `:`, all in the first word).
pub fn strip_line_number(text: &str) -> &str {
    let b = text.as_bytes();
    let t = text.trim_start_matches(' ');
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && t.as_bytes().get(digits) == Some(&b'\t') {
        return &t[digits + 1..];
    }
    // The first word, looked at up to a bounded length (file names are short).
    let word = b.iter().take(4096).take_while(|c| !c.is_ascii_whitespace()).count();
    let mut i = 0;
    while i < word {
        let colon_before = i == 0 || b[i - 1] == b':';
        let digits = b[i..word].iter().take_while(|c| c.is_ascii_digit()).count();
        if colon_before && digits > 0 && b.get(i + digits) == Some(&b':') {
            return &text[i + digits + 1..];
        }
        i += digits.max(1);
    }
    text
}
