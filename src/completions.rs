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

/// Print the completion script of `command` for the asked shell.
pub fn command(args: CompletionsArgs, mut command: clap::Command) -> anyhow::Result<i32> {
    let name = command.get_name().to_string();
    // Rendered into memory first: clap_complete panics when its writer fails.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, name, &mut script);
    crate::out!("{}", String::from_utf8_lossy(&script));
    Ok(0)
}
