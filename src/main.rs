//! Binary entry point: parse the command line, run the command, map the outcome to an exit
//! code (0 success, 1 a measured failure such as a regression, 2 unusable input).
//!
//! Must not: hold logic; everything is in the library.
fn main() {
    std::process::exit(wan_vae_bench::cli::main());
}
