//! Which file a path names however it is reached (a link, another spelling): its device and
//! inode. Below [`super::files`] and [`super::lock`], which both ask it.
//!
//! Must not: open or write anything; metadata in, an identity out.

/// What makes a file the same file however it is reached (a link, another spelling): its
/// device and inode; `None` where the platform has none. The one such identity the crate
/// uses (outputs and inputs in [`super::files`], `logs`' inputs, `history`'s reports, hipBLASLt's log).
#[cfg(unix)]
pub fn identity(m: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((m.dev(), m.ino()))
}

#[cfg(not(unix))]
pub fn identity(_: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}
