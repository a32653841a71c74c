//! How people hand logs over, undone before any reader sees a line ([`Markup`] for the
//! markup of diffs, Markdown and HTML tables; [`records`] for the rest):
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

/// What a paste's Markdown, HTML or diff markup says about one line.
#[derive(Debug, PartialEq, Eq)]
pub enum Marked<'a> {
    /// The line to read, its markup taken off.
    Keep(std::borrow::Cow<'a, str>),
    /// A line a diff removed (`-`): not in the log any more, not read.
    Removed,
    /// Markup only (a code fence, a diff's header): nothing to read.
    Markup,
}

/// The diff a paste is in, line after line: a diff starts at a ```` ```diff ```` fence, a
/// `diff --git` line or a hunk header (`@@ -1,2 +1,3 @@`), and ends at the closing fence or
/// at a line that is no diff line (one not starting with `+`, `-`, a space or `\`).
#[derive(Debug, Default)]
pub struct Markup {
    in_diff: bool,
}

impl Markup {
    /// `line` without its markup:
    /// - in a diff, an added line's `+` and a kept line's space are taken off (the line is in
    ///   the log); a removed (`-`) line is [`Marked::Removed`];
    /// - outside one, a `+` and the spaces after it at the start (a diff pasted without its
    ///   header), as a diff's added line;
    /// - Markdown's `**bold**` markers anywhere, and the backticks of a code span at the line's
    ///   start and end (a command inside one ends at its closing backtick, see
    ///   [`super::bench_line::segments`]).
    pub fn line<'a>(&mut self, line: &'a str) -> Marked<'a> {
        let t = line.trim_start();
        // A fence: three backticks and at most a language word (```` ```diff ````); a line that
        // goes on after them is a code span of its own (```` ```rocBLAS error: ...``` ````).
        if let Some(info) = t
            .strip_prefix("```")
            .filter(|i| !i.trim().contains(char::is_whitespace))
        {
            self.in_diff = ["diff", "patch"].iter().any(|d| info.trim().starts_with(d));
            return Marked::Markup;
        }
        if t.starts_with("diff --git ") || t.starts_with("@@ -") {
            self.in_diff = true;
            return Marked::Markup;
        }
        let body = if self.in_diff {
            if line.starts_with("+++ ") || line.starts_with("--- ") || line.starts_with('\\') {
                return Marked::Markup;
            }
            match line.chars().next() {
                Some('+') | Some(' ') => &line[1..],
                Some('-') => return Marked::Removed,
                None => line,
                Some(_) => {
                    self.in_diff = false;
                    plus_stripped(line)
                }
            }
        } else {
            plus_stripped(line)
        };
        let body = body.trim_end();
        let body = body.trim_start_matches([' ', '\t']);
        let body = body.strip_prefix('`').map_or(body, |b| b.trim_start_matches('`'));
        let body = body.trim_end_matches('`');
        if body.contains("**") {
            Marked::Keep(body.replace("**", "").into())
        } else {
            Marked::Keep(body.into())
        }
    }
}

/// A line that starts with `+` and a space (an added line of a diff pasted without its
/// header) without them; any other as it is.
fn plus_stripped(line: &str) -> &str {
    match line.strip_prefix('+') {
        Some(rest) if rest.starts_with([' ', '\t']) => rest,
        _ => line,
    }
}

/// The lines an HTML table cell joins with `<br>` (`<br/>`, `<br />`, any case), each read
/// as a line of its own.
pub fn html_lines(text: &str) -> Vec<&str> {
    if !text.contains('<') {
        return vec![text];
    }
    let lower = text.to_ascii_lowercase();
    if !lower.contains("<br") {
        return vec![text];
    }
    let mut out = Vec::new();
    let mut from = 0;
    let mut search = 0;
    while let Some(at) = lower[search..].find("<br") {
        let i = search + at;
        let rest = &lower[i + 3..];
        let close = rest
            .find('>')
            .filter(|c| rest[..*c].trim().trim_end_matches('/').trim().is_empty());
        match close {
            Some(c) => {
                out.push(&text[from..i]);
                from = i + 3 + c + 1;
                search = from;
            }
            None => search = i + 3,
        }
    }
    out.push(&text[from..]);
    out
}
