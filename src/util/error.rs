//! Errors a user must fix (thiserror), and the exit-code convention.
//!
//! Commands return `anyhow::Result<i32>`: `Ok(0)` all good, `Ok(1)` a measured failure
//! (a case failed, a tolerance was exceeded, a regression was found). Any `Err` means the
//! input was unusable and exits with [`EXIT_UNUSABLE`] after printing the error chain.
//!
//! Must not: print anything (`cli` prints the error chain).
use std::path::PathBuf;

/// Exit code for unusable input (bad arguments, unreadable files, bad config).
pub const EXIT_UNUSABLE: i32 = 2;

/// Problems with user-supplied input that the user must fix.
#[derive(Debug, thiserror::Error)]
pub enum UserError {
    #[error("{path}: {message}")]
    File { path: PathBuf, message: String },
    #[error("invalid value {value:?} for {what}: {expected}")]
    InvalidValue {
        what: String,
        value: String,
        expected: String,
    },
    /// A setting this build or device cannot run (reported as `unsupported`, not `failed`).
    #[error("unsupported: {0}")]
    Unsupported(String),
    #[error("{0}")]
    Other(String),
}

impl UserError {
    pub fn invalid(what: impl Into<String>, value: impl Into<String>, expected: impl Into<String>) -> Self {
        UserError::InvalidValue {
            what: what.into(),
            value: value.into(),
            expected: expected.into(),
        }
    }
    pub fn file(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        UserError::File {
            path: path.into(),
            message: message.into(),
        }
    }
}
