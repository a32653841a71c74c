//! Records the git commit the binary is built from (as `WAN_VAE_BENCH_GIT_COMMIT`).
fn main() {
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    if let Ok(out) = std::process::Command::new("git").args(["rev-parse", "HEAD"]).output() {
        if out.status.success() {
            let sha = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !sha.is_empty() {
                println!("cargo:rustc-env=WAN_VAE_BENCH_GIT_COMMIT={sha}");
            }
        }
    }
}
