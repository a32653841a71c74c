//! How numbers are shown to people, in one place: seconds (with and without a unit), PSNR
//! values (identical outputs have infinite PSNR, stored as null) and counts of things (`1
//! case`, `3 cases`), and untrusted text (case ids, env variant names) made safe for a
//! Markdown cell. Every table, export and comparison renders through these, so a change of
//! style happens once.
//!
//! Must not: decide what to show (that is the table's or exporter's job) or touch JSON.

/// Rows as left-aligned columns two spaces apart, each padded by its display width (`{:<w$}`
/// counts chars, which misaligns wide or combining characters), trailing spaces trimmed.
pub fn columns<S: AsRef<str>>(rows: &[impl AsRef<[S]>]) -> Vec<String> {
    use unicode_width::UnicodeWidthStr;
    let mut width: Vec<usize> = Vec::new();
    for r in rows {
        for (i, c) in r.as_ref().iter().enumerate() {
            match width.get_mut(i) {
                Some(w) => *w = (*w).max(c.as_ref().width()),
                None => width.push(c.as_ref().width()),
            }
        }
    }
    rows.iter()
        .map(|r| {
            let cells: Vec<String> = r
                .as_ref()
                .iter()
                .zip(&width)
                .map(|(c, w)| format!("{}{}", c.as_ref(), " ".repeat(w - c.as_ref().width())))
                .collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect()
}

/// `1 case`, `3 cases`: `n` and `noun`, plural unless `n` is 1 (nouns that take an `s`).
pub fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// `items` joined by `sep`, the first `max` of them, then `and N more`: a message stays
/// short however many things it names.
pub fn bounded<S: AsRef<str>>(items: &[S], sep: &str, max: usize) -> String {
    let shown: Vec<&str> = items.iter().take(max).map(AsRef::as_ref).collect();
    let mut text = shown.join(sep);
    if items.len() > max {
        text.push_str(&format!("{sep}and {} more", items.len() - max));
    }
    text
}

/// Seconds with a unit that keeps 3-4 significant digits: `1.234 s`, `12.3 ms`.
pub fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else {
        format!("{:.1} ms", s * 1e3)
    }
}

/// `median ± stddev` as [`seconds`]; the median alone for a single sample, whose spread
/// is unknown rather than zero.
pub fn median_spread(median_s: f64, stddev_s: f64, samples: usize) -> String {
    if samples < 2 {
        seconds(median_s)
    } else {
        format!("{} ± {}", seconds(median_s), seconds(stddev_s))
    }
}

/// Seconds as a bare number with about four significant digits (`n/a` when not finite),
/// for tables whose header carries the unit.
pub fn seconds_plain(x: f64) -> String {
    if !x.is_finite() {
        "n/a".into()
    } else if x >= 100.0 {
        format!("{x:.1}")
    } else if x >= 1.0 {
        format!("{x:.3}")
    } else {
        format!("{x:.4}")
    }
}

/// A PSNR in dB with `decimals` digits; `None` (identical outputs) renders as `infinity`
/// (`inf` in plain text, `∞` in Markdown).
pub fn psnr(db: Option<f64>, decimals: usize, infinity: &str) -> String {
    db.map_or(infinity.to_string(), |v| format!("{v:.decimals$}"))
}

/// A value as a POSIX shell word (single-quoted unless plain).
pub fn shell_word(v: &str) -> String {
    let plain = !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || "_-./:=,+@%".contains(c));
    if plain {
        v.to_string()
    } else {
        format!("'{}'", v.replace('\'', r"'\''"))
    }
}

/// `s` safe to print on a terminal: control characters (an escape sequence, a newline in
/// an env variant's name) written as Rust escapes (`\u{1b}`), the rest as is.
pub fn printable(s: &str) -> String {
    s.chars()
        .map(|c| match c.is_control() {
            true => c.escape_default().to_string(),
            false => c.to_string(),
        })
        .collect()
}

/// Escape text for a Markdown table cell.
pub fn md_cell(s: &str) -> String {
    // Untrusted text (ids carry env variant names): no table break, no line break, no end of
    // a code span (a backtick becomes U+02CB), no raw HTML, no terminal escape.
    s.chars()
        .map(|c| match c {
            '`' => "\u{2cb}".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '|' => "\\|".to_string(),
            c if c.is_control() => " ".to_string(),
            c => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(shell_word("2"), "2");
        assert_eq!(shell_word("/opt/rocm/lib"), "/opt/rocm/lib");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn control_characters_are_not_printed_raw() {
        assert_eq!(printable("x\u{1b}[31mred\nB"), "x\\u{1b}[31mred\\nB");
        assert_eq!(printable("plain-é"), "plain-é");
    }

    #[test]
    fn styles() {
        assert_eq!(seconds(1.5), "1.500 s");
        assert_eq!(seconds(0.0123), "12.3 ms");
        assert_eq!(seconds_plain(123.45), "123.5");
        assert_eq!(seconds_plain(0.5), "0.5000");
        assert_eq!(seconds_plain(f64::NAN), "n/a");
        assert_eq!(psnr(None, 1, "inf"), "inf");
        assert_eq!(psnr(Some(40.04), 1, "inf"), "40.0");
        assert_eq!(count(1, "case"), "1 case");
        assert_eq!(count(0, "case"), "0 cases");
        assert_eq!(count(3, "report"), "3 reports");
    }

    #[test]
    fn markdown_cells_cannot_break_out() {
        assert_eq!(
            md_cell("a`<img src=x>`|b\n\u{1b}"),
            "a\u{2cb}&lt;img src=x&gt;\u{2cb}\\|b  "
        );
    }
}
