//! Build-time facts for the report: the git commit (`WAN_VAE_BENCH_GIT_COMMIT`), the rustc
//! version (`WAN_VAE_BENCH_RUSTC_VERSION`) and the locked candle-core version
//! (`WAN_VAE_BENCH_CANDLE_VERSION`).
fn main() {
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    println!("cargo:rerun-if-changed=Cargo.lock");
    if let Ok(out) = std::process::Command::new("git").args(["rev-parse", "HEAD"]).output() {
        if out.status.success() {
            let sha = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !sha.is_empty() {
                println!("cargo:rustc-env=WAN_VAE_BENCH_GIT_COMMIT={sha}");
            }
        }
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    if let Ok(out) = std::process::Command::new(rustc).arg("--version").output() {
        if out.status.success() {
            let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
            println!("cargo:rustc-env=WAN_VAE_BENCH_RUSTC_VERSION={v}");
        }
    }
    if let Some(v) = locked_version("candle-core") {
        println!("cargo:rustc-env=WAN_VAE_BENCH_CANDLE_VERSION={v}");
    }
}

/// Version of `package` in Cargo.lock (first entry of that name).
fn locked_version(package: &str) -> Option<String> {
    let lock = std::fs::read_to_string("Cargo.lock").ok()?;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == format!("name = \"{package}\"") {
            let next = lines.next()?;
            return next
                .trim()
                .strip_prefix("version = \"")?
                .strip_suffix('"')
                .map(str::to_string);
        }
    }
    None
}
