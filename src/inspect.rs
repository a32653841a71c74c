//! `inspect`: a checkpoint's format, dtypes, tensors, parameters and inferred config.
#[derive(Debug, clap::Args)]
pub struct InspectArgs {}
pub fn command(_args: InspectArgs) -> anyhow::Result<i32> {
    anyhow::bail!("inspect: not implemented yet")
}
