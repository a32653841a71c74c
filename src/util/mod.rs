//! The services every stage uses, at the bottom of the house: they import no other room.
//! [`error`]: the errors a user must fix and the exit codes; [`files`]: writing outputs
//! (checked, temp file + rename, never an input); [`file_id`]: which file a path names
//! (device and inode); [`read`]: reading the user's files with a
//! bound; [`memory`]: how much memory this process may still use; [`lock`]: output locks and
//! folder ownership (kernel file locks); [`interrupt`]: SIGINT/SIGTERM as a flag; [`process`]:
//! child processes in their own group; [`shuffle`]: the seeded case order; [`out`]: stdout and
//! stderr; [`format`]: seconds, PSNR and counts as people read them; [`stats`]: summaries and
//! outliers.
//!
//! Must not: know what a run, a case or a report is.
pub mod error;
pub mod file_id;
pub mod files;
pub mod format;
pub mod interrupt;
pub mod lock;
pub mod memory;
pub mod out;
pub mod process;
pub mod read;
pub mod shuffle;
pub mod stats;
