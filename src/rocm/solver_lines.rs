//! MIOpen's lines that name a solver, each read into the name, and whether MIOpen chose or
//! ran it ([`chosen_solver`], [`immediate_solver`]) or only considered it
//! ([`evaluated_solver`]): a Find's evaluations, the immediate-mode fallback's estimates, a
//! search that failed, a solver turned down for its workspace.
//!
//! Must not: count (that is [`super::miopen`]).

/// `... FW Chosen Algorithm: NAME , ...` -> NAME (also `BW` and `BWrW`).
pub fn chosen_solver(rest: &str) -> Option<&str> {
    let after = &rest[rest.find("Chosen Algorithm:")? + "Chosen Algorithm:".len()..];
    let name = after.split(',').next()?.trim();
    (!name.is_empty()).then_some(name)
}

/// Immediate mode (what PyTorch calls unless `cudnn.benchmark` is on):
/// `Info [ConvolutionForwardImmediate] solver_id = NAME, workspace = N`, and the backward
/// and weight-gradient calls' own (`ConvolutionBackwardDataImmediate`,
/// `ConvolutionBackwardWeightsImmediate`) -> NAME. The same macro logs `solver_id = NAME`
/// when a solution is compiled (`[CompileForwardSolution]`): that is not a run, not counted.
pub fn immediate_solver(rest: &str) -> Option<&str> {
    let tag = &rest[rest.find('[')? + 1..];
    let func = &tag[..tag.find(']')?];
    if !(func.starts_with("Convolution") && func.ends_with("Immediate")) {
        return None;
    }
    let name = word_after(tag, "solver_id = ")?.trim_end_matches(',');
    (!name.is_empty()).then_some(name)
}

/// A solver MIOpen looked at without choosing it -> NAME:
/// - `Evaluating Solver: ALGO:NAME` (MIOpen 3.6);
/// - `[FindSolutionImpl] NAME (not searchable)` or `[FindSolutionImpl] NAME`;
/// - `[EvaluateInvokers] NAME: KERNEL: ms < best` and its `Selected: NAME: ...` (the best of
///   one algorithm, before the algorithms are compared);
/// - `Solver NAME registered as find 1.0 best for ALGO` (likewise, one per algorithm);
/// - `[GetSolutionsFallback] NAME Estimated WTI = 0.24` (immediate mode's fallback estimate);
/// - `[IsEnoughWorkspace] [WHERE] Solver <NAME>, workspace required: ...` (turned down);
/// - `Search Failed: KEYNAME: ...` (the key's direction letter glued to the name, as
///   rocm-libraries logs it) and `Search failed for: NAME: ...` (MIOpen's `find_solution.hpp`).
pub fn evaluated_solver(rest: &str) -> Option<&str> {
    if let Some(word) = word_after(rest, "Evaluating Solver: ") {
        return Some(word.rsplit(':').next().unwrap_or(word));
    }
    if rest.contains("registered as find 1.0 best") {
        return word_after(rest, "Solver ");
    }
    if let Some(at) = rest.find("Search failed for: ") {
        let s = &rest[at + "Search failed for: ".len()..];
        let name = s.split(':').next()?.trim();
        return is_solver_name(name).then_some(name);
    }
    if let Some(at) = rest.find("Search Failed: ") {
        return search_failed_key(&rest[at + "Search Failed: ".len()..]);
    }
    let tag = &rest[rest.find('[')? + 1..];
    let (func, body) = tag.split_once(']')?;
    let body = body.trim_start();
    match func {
        "FindSolutionImpl" if !body.contains(' ') || body.ends_with("(not searchable)") => {
            body.split_whitespace().next()
        }
        "EvaluateInvokers" if body.contains(": ") && !body.contains("Evaluating") => {
            let body = body.strip_prefix("Selected: ").unwrap_or(body);
            // `NAME: KERNEL: ms`: a space after the name's colon (an error's
            // `HOST:C:/path...: message` has none).
            let (name, rest) = body.split_once(':')?;
            (rest.starts_with(' ') && is_solver_name(name.trim())).then_some(name.trim())
        }
        "GetSolutionsFallback" if body.contains(" Estimated WTI = ") => {
            let name = body.split_whitespace().next()?;
            is_solver_name(name).then_some(name)
        }
        "IsEnoughWorkspace" => {
            let s = &body[body.find("Solver <")? + "Solver <".len()..];
            let name = &s[..s.find('>')?];
            is_solver_name(name).then_some(name)
        }
        _ => None,
    }
}

/// `2x640x48x32x1x3x3x1x1280x2x1x1x0x1x1x0x1x1x0x0x1xNCHWxFP16xFConvBinWinogradRxSf3x2: ...`:
/// the problem key's fields are joined by `x`; after the layout and the data type comes the
/// direction (`F`, `B`, `W`) and, glued to it, the solver's name (which may hold `x` too).
fn search_failed_key(s: &str) -> Option<&str> {
    let key = &s[..s.find(':')?];
    let mut at = 0;
    let mut layout_seen = false;
    let mut dtype_seen = false;
    for field in key.split('x') {
        let start = at;
        at += field.len() + 1;
        if !layout_seen {
            layout_seen = field.len() >= 4 && field.chars().all(|c| "NCDHW".contains(c));
        } else if !dtype_seen {
            dtype_seen = true;
        } else if field.chars().all(|c| c.is_ascii_digit()) {
            // `INT8x4`'s second half.
        } else {
            let name = key[start..].strip_prefix(['F', 'B', 'W'])?;
            return is_solver_name(name).then_some(name);
        }
    }
    None
}

/// A solver's name: a capital letter, then letters, digits and `_<->`
/// (`ConvWinograd3x3MultipassWrW<3-5>`); not a path or a message.
pub fn is_solver_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "_<->".contains(c))
}

/// The first word after `marker` in `rest`.
pub fn word_after<'a>(rest: &'a str, marker: &str) -> Option<&'a str> {
    let word = rest[rest.find(marker)? + marker.len()..].split_whitespace().next()?;
    (!word.is_empty()).then_some(word)
}
