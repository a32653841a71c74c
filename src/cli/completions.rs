//! `wan-vae-bench completions SHELL`: the shell completion script (clap_complete) for
//! bash, zsh or fish (also elvish and PowerShell), printed on stdout. For bash:
//! `wan-vae-bench completions bash > ~/.local/share/bash-completion/completions/wan-vae-bench`.
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
    let mut command = visible(&command);
    let name = command.get_name().to_string();
    // Rendered into memory first: clap_complete panics when its writer fails.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, name, &mut script);
    crate::out!("{}", String::from_utf8_lossy(&script));
    Ok(0)
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
