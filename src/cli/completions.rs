//! `wan-vae-bench completions SHELL`: the shell completion script (clap_complete) for
//! bash, zsh or fish (also elvish and PowerShell), printed on stdout. For bash:
//! `wan-vae-bench completions bash > ~/.local/share/bash-completion/completions/wan-vae-bench`.
//! bash's script works around clap_complete's bug with hyphenated binary names ([`script`]).
//!
//! Must not: know the commands; it renders the clap command `cli` hands it.
use clap_complete::Shell;

/// Arguments of `wan-vae-bench completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for: bash, zsh, fish (also elvish, powershell).
    pub shell: Shell,
}

/// Print the completion script of `command` for the asked shell, without what `--help`
/// hides (the internal `worker` command, `--fault-hooks`): clap_complete offers hidden
/// subcommands and flags as it finds them.
pub fn command(args: CompletionsArgs, command: clap::Command) -> anyhow::Result<i32> {
    crate::out!("{}", script(args.shell, &command)?);
    Ok(0)
}

/// The completion script of `command` for `shell`.
///
/// bash: clap_complete (4.6.11, the newest release) spells a hyphenated binary name one way
/// in the loop that follows the subcommands (`wan__vae__bench__subcmd__run`) and another in
/// the arms that complete them (`wan__subcmd__vae__subcmd__bench__subcmd__run`), so no
/// subcommand's flag ever completes (clap-rs/clap#6421, fixed by neither release nor merge).
/// The script is rendered for the name without its hyphens, which both spell alike, and
/// bound to the real name (the `complete` lines' last word); the test drives bash through it
/// (`run --`, `history --`, a flag's values), so a clap_complete that changes its output
/// fails there, not at a user's prompt.
pub fn script(shell: Shell, command: &clap::Command) -> anyhow::Result<String> {
    let mut command = visible(command);
    let name = command.get_name().to_string();
    let rendered_as = match shell {
        Shell::Bash => name.replace('-', ""),
        _ => name.clone(),
    };
    // Rendered into memory first: clap_complete panics when its writer fails.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, rendered_as.clone(), &mut script);
    let script = String::from_utf8_lossy(&script).into_owned();
    if rendered_as == name {
        return Ok(script);
    }
    let mut bound = 0;
    let lines: Vec<String> = script
        .lines()
        .map(|line| {
            let is_complete = line.trim_start().starts_with("complete -F ");
            match line.strip_suffix(&format!(" {rendered_as}")) {
                Some(head) if is_complete => {
                    bound += 1;
                    format!("{head} {name}")
                }
                _ => line.to_string(),
            }
        })
        .collect();
    anyhow::ensure!(
        bound > 0,
        "clap_complete's bash script has no `complete -F ... {rendered_as}` line to bind to {name}: its output \
         changed; see src/cli/completions.rs"
    );
    Ok(lines.join("\n") + "\n")
}

/// `c` with its hidden subcommands and arguments left out, recursively: what completion
/// needs (names, flags, values, help texts) and nothing else.
pub(crate) fn visible(c: &clap::Command) -> clap::Command {
    // clap adds --help and --version to the new command itself.
    let own = |a: &&clap::Arg| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version");
    // clap takes `&'static str` names: these live as long as the one completion command does.
    let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
    let mut out = clap::Command::new(leak(c.get_name()))
        .args(c.get_arguments().filter(own).cloned())
        .subcommands(c.get_subcommands().filter(|s| !s.is_hide_set()).map(visible));
    if let Some(about) = c.get_about() {
        out = out.about(about.clone());
    }
    if let Some(version) = c.get_version() {
        out = out.version(leak(version));
    }
    out
}
