//! `validate`: run golden cases and report errors against expected tensors.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {}
pub fn command(_args: ValidateArgs) -> anyhow::Result<i32> {
    anyhow::bail!("validate: not implemented yet")
}
