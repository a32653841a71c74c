//! `wan-vae-bench system`: print the system context a report would record
//! ([`crate::machine::system`]), as text or JSON.
use crate::machine::system::{collect, render_text};

/// Arguments of `wan-vae-bench system`.
#[derive(Debug, clap::Args)]
pub struct SystemArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `wan-vae-bench system [--json]`.
pub fn command(args: SystemArgs) -> anyhow::Result<i32> {
    let info = collect();
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&info)?);
    } else {
        crate::out!("{}", render_text(&info));
    }
    Ok(0)
}
