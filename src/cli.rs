//! Command-line surface: the clap command enum and dispatch to each command's module.
//! Each subcommand's typed arguments live in the module that owns the command.
//!
//! Must not: hold command logic; each command lives in its own module.
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "wan-vae-bench",
    version,
    about = format!(
        "Benchmark the Wan 2.1 and 2.2 video VAEs ({} engines)",
        crate::engine::engine_names(|_| true)
    )
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a benchmark matrix (built-in smoke matrix when no config is given).
    Run(Box<crate::run::RunArgs>),
    /// Internal: run one benchmark case in this process (spawned by `run`).
    #[command(hide = true)]
    Worker(crate::engine::candle::WorkerArgs),
    /// Internal: time each distinct convolution of one decode through the device's library.
    #[command(hide = true)]
    ConvBench(crate::conv_bench::ConvBenchArgs),
    /// Check encode/decode against golden cases (exit 0 within tolerance, 1 not, 2 bad input).
    Validate(crate::validate::ValidateArgs),
    /// Show a checkpoint's format, dtypes, tensors, parameters and inferred config.
    Inspect(crate::inspect::InspectArgs),
    /// Print the system context a report would record.
    System(crate::system::SystemArgs),
    /// Read ROCm's MIOpen and hipBLASLt lines in any program's log: solvers, problems, GEMMs.
    Logs(crate::logs::LogsArgs),
    /// Compare two reports; exit 1 on a regression.
    Compare(crate::compare::CompareArgs),
    /// Merge several reports into one.
    Merge(crate::merge::MergeArgs),
    /// Many reports over time: steps per case and machine, what changed in the stack; exit 1 if slower now.
    History(crate::history::HistoryArgs),
    /// Plot a report as an SVG bar chart.
    Plot(crate::export::PlotArgs),
    /// Print the shell completion script (bash, zsh, fish) on stdout.
    Completions(crate::completions::CompletionsArgs),
}

/// The clap command, with `run`'s defaults written into its help.
pub fn command() -> clap::Command {
    crate::run::with_defaults(Cli::command())
}

/// Parse arguments, run, and return the process exit code.
pub fn main() -> i32 {
    let matches = command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Run(a) => crate::run::run_command(*a),
        Command::Worker(a) => crate::engine::candle::command(a),
        Command::ConvBench(a) => crate::conv_bench::command(a),
        Command::Validate(a) => crate::validate::command(a),
        Command::Inspect(a) => crate::inspect::command(a),
        Command::System(a) => crate::system::command(a),
        Command::Logs(a) => crate::logs::command(a),
        Command::Compare(a) => crate::compare::command(a),
        Command::Merge(a) => crate::merge::command(a),
        Command::History(a) => crate::history::command(a),
        Command::Plot(a) => crate::export::plot_command(a),
        Command::Completions(a) => crate::completions::command(a, command()),
    };
    let code = match result {
        Ok(code) => code,
        Err(err) => {
            crate::errln!("error: {err:#}");
            crate::error::EXIT_UNUSABLE
        }
    };
    if code == crate::error::EXIT_UNUSABLE {
        // Refused input leaves no empty output folder behind (issue 30, item 15).
        crate::files::remove_created_empty_folders();
    }
    code
}

#[cfg(test)]
mod tests {
    //! The completion scripts, as `completions` renders them from this command line.
    use clap_complete::Shell;

    use crate::completions::visible;

    #[test]
    fn no_shell_is_offered_what_help_hides() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let mut cmd = visible(&super::command());
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "wan-vae-bench", &mut script);
            let text = String::from_utf8(script).unwrap();
            for hidden in ["fault-hooks", "subcmd__worker", "using_subcommand worker", "'worker:"] {
                assert!(!text.contains(hidden), "{shell}: {hidden}");
            }
            for shown in ["validate", "compare", "profile", "export-trace", "help"] {
                assert!(text.contains(shown), "{shell}: {shown}");
            }
        }
    }
}
