//! Commands a narrow terminal wrapped: a `hipblaslt-bench`, `rocblas-bench` or `MIOpenDriver`
//! command copied from a terminal (or a viewer) that cut it into physical lines of one width,
//! mid-token (`... --stride_` + `d 0 --alpha 1 ...`), joined back into the one line it was
//! before any reader sees it ([`Rejoin`]), and counted, so that `logs` can say so.
//!
//! A line is joined to the one before it only when all of these hold:
//! - the line before names a command (a tool's name, or a path cut before it:
//!   `.../build/r` + `elease/clients/hipblaslt-bench ...`), is at least [`MIN_WIDTH`]
//!   characters wide, does not end with a shell's `\` (that continuation is the readers'),
//!   and, after the first cut, is exactly as wide as the first line: every cut at one width;
//! - the line starts in the first column (or, at a cut among spaces, with a flag after
//!   them; after one space, as after a cut between words), with no prompt (`$`, `#`, `>`), no log prefix (`MIOpen(HIP):`, `[timestamp]`),
//!   no markup (a backtick, `*`, a quote), no tab, and no new command anywhere in it (a
//!   `uniq -c` count or a `cat -n` number before a command is no continuation);
//! - what it continues is a cut flag, number, value or path (`--stride_` + `d`, `409` + `6`,
//!   `./clients/st` + `aging/...`), or, at a cut between words, its first word is a flag or
//!   a number, or flags follow it;
//! - and it goes on as arguments do: a flag among its other words, or no other word.
//!
//! A complete command followed by its output (`Query device success ...`, `PRNG seed: ...`,
//! `  Winner:`, a result row `N,N,0,1,...`, a `-----` rule, the driver's echo) is never
//! joined: no line of the real logs in `tests/fixtures/rocm*` is.
//!
//! Linear: each line is looked at a bounded number of times; a joined command is at most
//! [`MAX_JOINED_BYTES`] (a longer run is let go as it stands).
//!
//! Must not: read the commands (that is [`super::bench_line`] and [`super::driver`]).

/// The narrowest terminal whose cuts are rejoined: a shorter line is taken as it is.
pub const MIN_WIDTH: usize = 40;

/// The longest command rejoined.
pub const MAX_JOINED_BYTES: usize = 64 * 1024;

/// The commands whose cut lines are rejoined.
const COMMANDS: [&str; 3] = ["hipblaslt-bench", "rocblas-bench", "MIOpenDriver"];

/// Lines in, whole lines out: a line that may have been cut is held until the next one says
/// whether it goes on.
#[derive(Debug, Default)]
pub struct Rejoin {
    held: Option<Held>,
    rejoined: u64,
}

/// A command being put back together.
#[derive(Debug)]
struct Held {
    text: String,
    /// Characters of its first physical line: the terminal's width.
    width: usize,
    /// Characters of the last physical line joined (the run goes on only while it is full).
    last: usize,
    /// Physical lines joined to the first.
    joined: u64,
}

impl Rejoin {
    /// Take the next physical line; `emit` gets each whole line, in order.
    pub fn push(&mut self, line: &str, emit: &mut impl FnMut(&str)) {
        if let Some(mut held) = self.held.take() {
            if held.last == held.width
                && held.text.len() + line.len() <= MAX_JOINED_BYTES
                && continues(&held.text, line)
            {
                held.text.push_str(line);
                held.last = line.chars().count();
                held.joined += 1;
                self.held = Some(held);
                return;
            }
            self.release(held, emit);
        }
        let width = line.chars().count();
        if width >= MIN_WIDTH && may_be_cut(line) {
            self.held = Some(Held {
                text: line.to_string(),
                width,
                last: width,
                joined: 0,
            });
        } else {
            emit(line);
        }
    }

    /// The input ended: the line held, if any.
    pub fn finish(&mut self, emit: &mut impl FnMut(&str)) {
        if let Some(held) = self.held.take() {
            self.release(held, emit);
        }
    }

    fn release(&mut self, held: Held, emit: &mut impl FnMut(&str)) {
        self.rejoined += held.joined;
        emit(&held.text);
    }

    /// How many physical lines so far were joined to the line before them.
    pub fn rejoined(&self) -> u64 {
        self.rejoined
    }
}

/// Whether `text` names one of [`COMMANDS`].
fn names_command(text: &str) -> bool {
    COMMANDS.iter().any(|c| text.contains(c))
}

/// A line that may be a command's first part: it names one, or ends inside a path or a
/// tool's name (a cut before the name ends: `.../build/r`, `./clients/staging/hipblaslt-benc`);
/// never one a shell continues with `\`.
fn may_be_cut(line: &str) -> bool {
    if line.ends_with('\\') {
        return false;
    }
    if names_command(line) {
        return true;
    }
    if line.ends_with(char::is_whitespace) {
        return false;
    }
    let word = last_word(line);
    let name = word.rsplit('/').next().unwrap_or("");
    word.contains('/') || (name.len() >= 2 && COMMANDS.iter().any(|c| c.starts_with(name)))
}

fn last_word(text: &str) -> &str {
    text.rsplit(char::is_whitespace).next().unwrap_or("")
}

/// A character of a flag, number, value or path.
fn arg_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ':' | '=')
}

fn number(word: &str) -> bool {
    let w = word.strip_prefix('-').unwrap_or(word);
    !w.is_empty() && w.chars().all(|c| c.is_ascii_digit() || c == '.') && w.starts_with(|c: char| c.is_ascii_digit())
}

/// A flag: a dash and a letter or a second dash (`-m`, `--transA`), not a rule (`-----`).
fn flag(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next() == Some('-') && chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '-') && !rule(word)
}

/// A line of dashes or equal signs (a table's rule).
fn rule(word: &str) -> bool {
    word.len() >= 3 && word.chars().all(|c| c == '-' || c == '=')
}

/// Whether `next` continues the command `prev` was cut from (see the module's rules).
fn continues(prev: &str, next: &str) -> bool {
    // A cut among spaces (hipBLASLt writes `--ldd 16  --stride_a 0`) leaves them at the
    // start of the next line.
    let body = next.trim_start_matches(' ');
    let mid_token = !prev.ends_with(char::is_whitespace) && body.len() == next.len();
    let mut words = body.split_whitespace();
    let Some(head) = words.next() else {
        return false;
    };
    // After spaces a flag, or after one space (a cut just before it) what may follow a cut
    // between words: `cat -n`'s and `uniq -c`'s numbers stand after more, or before a tab.
    let spaces = next.len() - body.len();
    let one_space = spaces == 1 && !prev.ends_with(char::is_whitespace);
    if rule(head)
        || (spaces > 0 && !flag(head) && !one_space)
        || next.contains('\t')
        || body.starts_with(['$', '#', '>', '%', '[', '(', '`', '*', '"', '\'', '<', '|'])
        || body.starts_with("MIOpen")
    {
        return false;
    }
    let tail = last_word(prev);
    let joint = if mid_token {
        format!("{tail}{head}")
    } else {
        head.to_string()
    };
    // A new command (its name anywhere on the line: `uniq -c`'s count, `cat -n`'s number or a
    // prompt may stand before it), unless the cut fell inside the path before its name
    // (`.../build/r` + `elease/clients/hipblaslt-bench`, `./clients/staging/` + `hipblaslt-bench`).
    if names_command(body) {
        if !names_command(head) {
            return false;
        }
        // A path of its own (`./bin/MIOpenDriver`, `/opt/rocm/bin/...`) starts a new one.
        let inside = |c: &&str| head.find(*c).is_some_and(|i| head[..i].contains('/'));
        let cut_path = mid_token
            && tail.contains('/')
            && !head.starts_with(['.', '/', '~'])
            && (tail.ends_with('/') || COMMANDS.iter().any(inside));
        if !cut_path {
            return false;
        }
    }
    let rest: Vec<&str> = words.take(3).collect();
    let flags_follow = rest.iter().any(|w| flag(w));
    if mid_token {
        if tail.is_empty() || !tail.chars().chain(head.chars()).all(arg_char) {
            return false;
        }
    } else if !(flag(head) || number(head) || flags_follow) {
        return false;
    }
    // It goes on as arguments: a flag among the next words, a flag's value alone, or nothing.
    let as_arguments = rest.is_empty() || flags_follow || (rest.len() == 1 && flag(&joint));
    as_arguments && (names_command(prev) || names_command(&joint))
}
