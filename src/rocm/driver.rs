//! One `MIOpenDriver` convolution command, read into its problem: direction, 2D or 3D,
//! data type and shape. Commands come as MIOpen logs them (`MIOPEN_ENABLE_LOGGING_CMD=1`:
//! `./bin/MIOpenDriver conv -n 1 -c 96 --in_d 6 ...`), as a user types them (`MIOpenDriver.exe
//! convbfp16 ...`, long flags such as `--in_channels 24 --fil_w 5`), as the driver echoes
//! them (`MIOpenDriver: conv ...`), and as the proposed execution summary quotes them
//! (`Problem="conv -n 100 ..."`). A flag the command leaves out takes the driver's own default
//! (`driver/conv_driver.hpp`, `ConvDriver::AddCmdLineArgs`, [`FLAGS`]). MIOpen before 2019
//! logged each command behind the API call that made it and without `-F`
//! (`miopenFindConvolutionBackwardWeightsAlgorithm: ./bin/MIOpenDriver conv -n ...`, from
//! `src/convolution_api.cpp`'s `MIOPEN_DRIVER_CMD`, 2017): the call's name gives the
//! direction ([`api_direction`]) and stays in the command's text; [`replayable`] writes a
//! command as the driver runs it (what a bundle's replay file holds).
//!
//! A value the driver cannot take (`-n -1`, `-F 9`, `--spatial_dim 7`, a number past 64 bits)
//! makes no problem: [`problem`] says which flag and value, nothing is made up.
//!
//! Must not: count or keep commands (that is [`super::miopen`]).
use crate::report::ConvProblem;

/// The driver's convolution flags this reader uses: long name, short name, default.
/// From MIOpen's `driver/conv_driver.hpp` (`AddInputFlag(long, short, default, ...)`).
pub const FLAGS: &[(&str, char, i64)] = &[
    ("spatial_dim", '_', 2),
    ("forw", 'F', 0),
    ("batchsize", 'n', 100),
    ("in_channels", 'c', 3),
    ("in_d", '!', 32),
    ("in_h", 'H', 32),
    ("in_w", 'W', 32),
    ("out_channels", 'k', 32),
    ("fil_d", '@', 3),
    ("fil_h", 'y', 3),
    ("fil_w", 'x', 3),
    ("conv_stride_d", '#', 1),
    ("conv_stride_h", 'u', 1),
    ("conv_stride_w", 'v', 1),
    ("pad_d", '$', 0),
    ("pad_h", 'p', 0),
    ("pad_w", 'q', 0),
    ("dilation_d", '^', 1),
    ("dilation_h", 'l', 1),
    ("dilation_w", 'j', 1),
    ("group_count", 'g', 1),
    ("solution", 'S', -1),
];

/// The driver's subcommands for convolutions and the data type each runs in.
const SUBCOMMANDS: &[(&str, &str)] = &[
    ("conv", "fp32"),
    ("convfp16", "fp16"),
    ("convbfp16", "bf16"),
    ("convint8", "int8"),
    ("convfp8", "fp8"),
];

/// Where a driver command starts in `line`: at the `MIOpenDriver` word (any path or `.exe`
/// with it) followed by a convolution subcommand, at `Problem="conv ...`, or at the line's
/// start when its first word is a convolution subcommand followed by a flag (`conv -n 100
/// ...`, as a bundle written before its commands were made replayable held them). Returns
/// the command's text, from the driver word (or the subcommand) to its end, quotes trimmed.
pub fn find(line: &str) -> Option<std::borrow::Cow<'_, str>> {
    if let Some(at) = line.find("Problem=\"") {
        let rest = &line[at + "Problem=\"".len()..];
        let text = &rest[..rest.find('"').unwrap_or(rest.len())];
        return subcommand(text.split_whitespace().next()?).map(|_| text.trim().into());
    }
    if bare(line) {
        return Some(line.trim().into());
    }
    let mut from = 0;
    while let Some(at) = line[from..].find("MIOpenDriver") {
        let start = from + at;
        let after = &line[start + "MIOpenDriver".len()..];
        let after = after.strip_prefix(".exe").unwrap_or(after);
        // A quoted path (`"C:\...\MIOpenDriver.exe" convbfp16 ...`).
        let after = after.strip_prefix(['"', '\'']).unwrap_or(after);
        // `MIOpenDriver: conv ...`, the echo of older drivers.
        let after = after.strip_prefix(':').unwrap_or(after);
        if after.starts_with(char::is_whitespace) && after.split_whitespace().next().and_then(subcommand).is_some() {
            // Keep a path in front of the driver, as logged (`./bin/MIOpenDriver`), from the
            // character after the space or quote before it (any width of space).
            let opener = line[..start]
                .char_indices()
                .rev()
                .find(|(_, c)| c.is_whitespace() || *c == '"' || *c == '\'');
            let mut begin = opener.map_or(0, |(i, c)| i + c.len_utf8());
            // `miopenConvolutionForward: ./bin/MIOpenDriver conv ...`: the call stays with it.
            if let Some(api) = api_before(&line[..begin]) {
                begin = api;
            }
            let quote = opener.map(|(_, c)| c).filter(|c| *c == '"' || *c == '\'');
            let word_end = start
                + "MIOpenDriver".len()
                + if line[start..].starts_with("MIOpenDriver.exe") {
                    4
                } else {
                    0
                };
            let text = match quote {
                // A quoted path: the path, then the rest of the line up to another quote.
                Some(q) if line[word_end..].starts_with(q) => {
                    let rest = &line[word_end + 1..];
                    let rest = &rest[..rest.find(q).unwrap_or(rest.len())];
                    return Some(format_command(&line[begin..word_end], rest));
                }
                // A quoted command ends at the next quote (`cmd="MIOpenDriver conv -n 1" rc=0`).
                Some(q) => &line[begin..line[word_end..].find(q).map_or(line.len(), |e| word_end + e)],
                None => &line[begin..],
            };
            return Some(text.trim_end().trim_end_matches(['"', '\'']).trim_end().into());
        }
        from = start + "MIOpenDriver".len();
    }
    None
}

/// A quoted path and the words after its closing quote, as one command.
fn format_command(path: &str, rest: &str) -> std::borrow::Cow<'static, str> {
    format!("{path} {}", rest.trim()).into()
}

/// Whether `line` is a command without the driver word: its first word a convolution
/// subcommand, its second a flag (`-n`, `--in_d`).
fn bare(line: &str) -> bool {
    let mut words = line.split_whitespace();
    words.next().and_then(subcommand).is_some() && words.next().is_some_and(is_flag)
}

/// `-n`, `--in_channels`: a dash, then a letter (not a negative number).
fn is_flag(word: &str) -> bool {
    let name = word.strip_prefix("--").or_else(|| word.strip_prefix('-'));
    name.is_some_and(|n| n.starts_with(|c: char| c.is_ascii_alphabetic() || "_!@#$^".contains(c)))
}

/// `command` (as [`find`] returns it) as the driver runs it: an old MIOpen's API call before
/// it dropped and the `-F` its name implies added at the end (`miopenConvolutionBackwardWeights:
/// ./bin/MIOpenDriver conv ...` -> `./bin/MIOpenDriver conv ... -F 4`; a `-F` the command
/// gives wins and stays as it is), and `MIOpenDriver` put before a bare subcommand (the
/// execution summary's `Problem="conv ..."`). Anything else is returned as it is; the result
/// reads back ([`problem`]) to the same problem.
pub fn replayable(command: &str) -> String {
    let text = command.trim();
    let first = text.split_whitespace().next().unwrap_or_default();
    let (api, text) = match api_direction(first) {
        Some(dir) => (Some(dir), text[first.len()..].trim_start()),
        None => (None, text),
    };
    let mut out = if bare(text) {
        format!("MIOpenDriver {text}")
    } else {
        text.to_string()
    };
    let forw_given = text.split_whitespace().any(|w| w == "-F" || w == "--forw");
    if let (Some(dir), false) = (api, forw_given) {
        let flag = match dir {
            "wrw" => 4,
            "bwd" => 2,
            _ => 1,
        };
        out.push_str(&format!(" -F {flag}"));
    }
    out
}

fn subcommand(word: &str) -> Option<&'static str> {
    SUBCOMMANDS.iter().find(|(s, _)| *s == word).map(|(_, dtype)| *dtype)
}

/// The word before a command, when it is an old MIOpen's API call (`miopenConvolutionForward:`,
/// `miopenFindConvolutionBackwardDataAlgorithm:`): where that word starts.
fn api_before(head: &str) -> Option<usize> {
    let trimmed = head.trim_end();
    let start = trimmed.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    api_direction(&trimmed[start..]).map(|_| start)
}

/// An old MIOpen's API call before its command (`miopenConvolutionBackwardWeights:`) -> the
/// direction it runs.
pub fn api_direction(word: &str) -> Option<&'static str> {
    let name = word.strip_suffix(':')?;
    if !(name.starts_with("miopen") && name.contains("Convolution")) {
        return None;
    }
    if name.contains("BackwardWeights") {
        Some("wrw")
    } else if name.contains("BackwardData") {
        Some("bwd")
    } else if name.contains("Forward") {
        Some("fwd")
    } else {
        None
    }
}

/// The problem a command (as [`find`] returns it) describes, or what in it the driver could
/// not take (`-n -1: ...`). A flag left out takes the driver's default; `Err` also for no
/// convolution command at all.
pub fn problem(command: &str) -> Result<ConvProblem, String> {
    let mut words = command.split_whitespace();
    let mut first = words.next().ok_or("an empty command")?;
    let api = api_direction(first);
    if api.is_some() {
        first = words.next().ok_or("no command after the API call")?;
    }
    if first.contains("MIOpenDriver") {
        first = words.next().ok_or("no subcommand")?;
    }
    let dtype = subcommand(first).ok_or_else(|| format!("`{first}` is no convolution subcommand"))?;
    let mut values: Vec<i64> = FLAGS.iter().map(|f| f.2).collect();
    let mut forw_given = false;
    let mut mode = "conv".to_string();
    let mut layout = None;
    let mut solution: Option<i64> = None;
    // Each known flag as the command spelled it (`-u`, `--conv_stride_h`), for messages.
    let mut spelled: Vec<(String, String)> = Vec::new();
    let words: Vec<&str> = words.collect();
    let mut i = 0;
    while i < words.len() {
        let flag = words[i];
        i += 1;
        let name = if let Some(long) = flag.strip_prefix("--") {
            long
        } else if let Some(short) = flag.strip_prefix('-').filter(|s| s.chars().count() == 1) {
            let c = short.chars().next().unwrap_or('-');
            match FLAGS.iter().find(|f| f.1 == c) {
                Some(f) => f.0,
                None if c == 'm' => "mode",
                None if c == 'I' => "in_layout",
                None => short,
            }
        } else {
            // A stray word (a value of a flag this reader does not know takes none).
            continue;
        };
        let known = FLAGS.iter().position(|f| f.0 == name);
        let Some(value) = words.get(i).copied() else {
            if known.is_some() {
                return Err(format!("`{flag}` has no value"));
            }
            break;
        };
        i += 1;
        match name {
            "mode" => mode = value.to_string(),
            // `-S` takes a solution id or a solver's name: a name asks for no id.
            "solution" => solution = value.parse().ok(),
            "in_layout" => layout = Some(value.to_string()),
            _ => {
                if let Some(k) = known {
                    values[k] = checked(name, flag, value)?;
                    forw_given |= name == "forw";
                    spelled.push((name.to_string(), flag.to_string()));
                }
            }
        }
    }
    let get = |name: &str| values[FLAGS.iter().position(|f| f.0 == name).expect("a known flag")];
    let dims = get("spatial_dim");
    // Sizes, strides, dilations and groups of 0 make no convolution (the driver's defaults
    // are never 0): a command that gives one is unread, never a problem. The depth flags
    // count in 3D only (2D commands may carry `--conv_stride_d 0`).
    for (name, _, _) in FLAGS.iter().filter(|f| POSITIVE.contains(&f.0)) {
        let depth = ["in_d", "fil_d", "conv_stride_d", "dilation_d"].contains(name);
        if get(name) == 0 && (dims == 3 || !depth) {
            let given = spelled
                .iter()
                .find(|(n, _)| n == name)
                .map_or_else(|| format!("--{name}"), |(_, f)| f.clone());
            return Err(format!("`{given} 0`: {}", zero_why(name)));
        }
    }
    // The depth flags act in 3D only (2D commands may carry `--conv_stride_d 0`).
    let d = |name: &str, two_d: i64| if dims == 3 { get(name) } else { two_d };
    // Checked above: every size is 0 or more.
    let u = |v: i64| u64::try_from(v).unwrap_or(0);
    let direction = match (forw_given, api) {
        (false, Some(api)) => api,
        _ => direction(get("forw")),
    };
    Ok(ConvProblem {
        command: command.to_string(),
        count: 0,
        direction: direction.to_string(),
        spatial_dims: if dims == 3 { 3 } else { 2 },
        dtype: dtype.to_string(),
        n: u(get("batchsize")),
        c: u(get("in_channels")),
        k: u(get("out_channels")),
        input: [u(d("in_d", 1)), u(get("in_h")), u(get("in_w"))],
        filter: [u(d("fil_d", 1)), u(get("fil_h")), u(get("fil_w"))],
        pad: [u(d("pad_d", 0)), u(get("pad_h")), u(get("pad_w"))],
        stride: [
            u(d("conv_stride_d", 1)),
            u(get("conv_stride_h")),
            u(get("conv_stride_w")),
        ],
        dilation: [u(d("dilation_d", 1)), u(get("dilation_h")), u(get("dilation_w"))],
        groups: u(get("group_count")),
        transposed: mode == "trans",
        layout,
        solution_id: solution.filter(|s| *s >= 0),
        solver: None,
        solver_family: None,
        solvers: Default::default(),
    })
}

/// A driver flag's value, when the driver can take it: `-F` 0 to 7 (its bits 1 fwd, 2 bwd,
/// 4 wrw; 0 all three), `--spatial_dim` 2 or 3, every size, pad, stride, dilation and group
/// count a whole number of 0 or more (`-S`, an id or a name, is read apart).
fn checked(name: &str, flag: &str, value: &str) -> Result<i64, String> {
    let bad = |why: &str| format!("`{flag} {value}`: {why}");
    let v: i64 = value.parse().map_err(|_| bad("not a whole number the driver takes"))?;
    match name {
        "forw" if !(0..=7).contains(&v) => Err(bad("the driver's directions are 0 to 7 (1 fwd, 2 bwd, 4 wrw, summed)")),
        "spatial_dim" if v != 2 && v != 3 => Err(bad("the driver runs 2D or 3D convolutions only")),
        "solution" => Ok(v),
        _ if v < 0 => Err(bad("not a size of 0 or more")),
        _ => Ok(v),
    }
}

/// The flags whose value must be 1 or more for a convolution to exist.
const POSITIVE: [&str; 16] = [
    "batchsize",
    "in_channels",
    "in_d",
    "in_h",
    "in_w",
    "out_channels",
    "fil_d",
    "fil_h",
    "fil_w",
    "conv_stride_d",
    "conv_stride_h",
    "conv_stride_w",
    "dilation_d",
    "dilation_h",
    "dilation_w",
    "group_count",
];

/// Why a 0 of `name` makes no convolution.
fn zero_why(name: &str) -> &'static str {
    match name {
        "batchsize" => "a batch of 0 images is no convolution",
        "in_channels" | "out_channels" => "0 channels is no convolution",
        "group_count" => "0 groups is no convolution (1 is an ordinary one)",
        n if n.starts_with("conv_stride") => "a stride of 0 never moves: no convolution the driver runs",
        n if n.starts_with("dilation") => "a dilation of 0 is no convolution (1 is none)",
        _ => "a size of 0 is no convolution",
    }
}

/// `-F` (checked: 0 to 7): 1 forward, 2 backward data, 4 weight gradient, summed; the
/// driver's default 0 runs all three, as 7 does (`conv_driver.hpp` tests each bit).
fn direction(forw: i64) -> &'static str {
    match forw {
        1 => "fwd",
        2 => "bwd",
        4 => "wrw",
        3 => "fwd+bwd",
        5 => "fwd+wrw",
        6 => "bwd+wrw",
        _ => "fwd+bwd+wrw",
    }
}

/// The problem's identity: everything but the command's spelling and the counts.
pub fn key(p: &ConvProblem) -> String {
    format!(
        "{} {} {}d n{} c{} k{} in{:?} fil{:?} pad{:?} str{:?} dil{:?} g{} t{} {:?}",
        p.direction,
        p.dtype,
        p.spatial_dims,
        p.n,
        p.c,
        p.k,
        p.input,
        p.filter,
        p.pad,
        p.stride,
        p.dilation,
        p.groups,
        p.transposed,
        p.layout
    )
}
