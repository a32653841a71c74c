//! The command line: the clap command enum, and one room per subcommand holding its typed
//! arguments and its entry function (`run`, `validate`, `inspect`, `system`, `logs`,
//! `compare`, `merge`, `history`, `plot`, `completions`, and the hidden `worker` and
//! `conv-bench`). A command
//! room parses and calls the library's rooms; no command room imports another, and no
//! library room imports this one.
//!
//! Must not: hold logic that two commands share (that lives in a library room).
pub mod compare;
pub mod completions;
pub mod conv_bench;
pub mod history;
pub mod inspect;
pub mod logs;
pub mod merge;
pub mod plot;
pub mod run;
pub mod system;
pub mod validate;
pub mod worker;

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
    Run(Box<run::RunArgs>),
    /// Internal: run one benchmark case in this process (spawned by `run`).
    #[command(hide = true)]
    Worker(worker::WorkerArgs),
    /// Internal: time each distinct convolution of one decode through the device's library.
    #[command(hide = true)]
    ConvBench(conv_bench::ConvBenchArgs),
    /// Check encode/decode against golden cases (exit 0 within tolerance, 1 not, 2 bad input).
    Validate(validate::ValidateArgs),
    /// Show a checkpoint's format, dtypes, tensors, parameters and inferred config.
    Inspect(inspect::InspectArgs),
    /// Print the system context a report would record.
    System(system::SystemArgs),
    /// Read ROCm's MIOpen and hipBLASLt lines in any program's log: solvers, problems, GEMMs.
    Logs(logs::LogsArgs),
    /// Compare two reports; exit 1 on a regression.
    Compare(compare::CompareArgs),
    /// Merge several reports into one.
    Merge(merge::MergeArgs),
    /// Many reports over time: steps per case and machine, what changed in the stack; exit 1 if slower now.
    History(history::HistoryArgs),
    /// Plot a report as an SVG bar chart.
    Plot(plot::PlotArgs),
    /// Print the shell completion script (bash, zsh, fish) on stdout.
    Completions(completions::CompletionsArgs),
}

/// The clap command, with `run`'s defaults written into its help.
pub fn command() -> clap::Command {
    run::with_defaults(Cli::command())
}

/// Parse arguments, run, and return the process exit code.
pub fn main() -> i32 {
    let matches = command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Run(a) => run::command(*a),
        Command::Worker(a) => worker::command(a),
        Command::ConvBench(a) => conv_bench::command(a),
        Command::Validate(a) => validate::command(a),
        Command::Inspect(a) => inspect::command(a),
        Command::System(a) => system::command(a),
        Command::Logs(a) => logs::command(a),
        Command::Compare(a) => compare::command(a),
        Command::Merge(a) => merge::command(a),
        Command::History(a) => history::command(a),
        Command::Plot(a) => plot::command(a),
        Command::Completions(a) => completions::command(a, command()),
    };
    let code = match result {
        Ok(code) => code,
        Err(err) => {
            crate::errln!("error: {err:#}");
            crate::util::error::EXIT_UNUSABLE
        }
    };
    if code == crate::util::error::EXIT_UNUSABLE {
        // Refused input leaves no empty output folder behind (issue 30, item 15).
        crate::util::files::remove_created_empty_folders();
    }
    code
}

#[cfg(test)]
mod tests {
    //! The completion scripts, as `completions` renders them from this command line.
    use clap_complete::Shell;

    use crate::cli::completions::visible;

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
