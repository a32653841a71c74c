//! Build-time facts for the report: the git commit (`WAN_VAE_BENCH_GIT_COMMIT`), the rustc
//! version (`WAN_VAE_BENCH_RUSTC_VERSION`) and the locked candle-core version
//! (`WAN_VAE_BENCH_CANDLE_VERSION`). With `--features cuda` (and so `cudnn`) it also
//! compiles the model's own CUDA kernels ([`cuda_kernels`]); the CPU build needs no CUDA
//! toolkit.
fn main() {
    if std::env::var_os("CARGO_FEATURE_CUDA").is_some() {
        cuda_kernels();
    }
    println!("cargo:rerun-if-changed=Cargo.lock");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git").args(args).output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !text.is_empty()).then_some(text)
    };
    // The files that move with the commit, wherever git keeps them (in a worktree `.git` is
    // a file and HEAD lives under the main checkout's `.git/worktrees/`): a path that does
    // not exist would make cargo rerun this script, and rebuild the crate, on every build.
    if let (Some(dir), Some(common)) = (
        git(&["rev-parse", "--git-dir"]),
        git(&["rev-parse", "--git-common-dir"]),
    ) {
        for p in [
            format!("{dir}/HEAD"),
            format!("{common}/refs/heads"),
            format!("{common}/packed-refs"),
        ] {
            if std::path::Path::new(&p).exists() {
                println!("cargo:rerun-if-changed={p}");
            }
        }
    }
    if let Some(sha) = git(&["rev-parse", "HEAD"]) {
        println!("cargo:rustc-env=WAN_VAE_BENCH_GIT_COMMIT={sha}");
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

/// `src/model/cuda/kernels.cu` to PTX with nvcc (`$NVCC`, else `nvcc` on `PATH`) for
/// `compute_$CUDA_COMPUTE_CAP` (default 80, as candle-kernels builds its own; the driver
/// compiles PTX for the GPU at hand, any later one included, when it loads it), into
/// `$OUT_DIR/wan_kernels.ptx` (`model::cuda::ops` embeds it).
fn cuda_kernels() {
    let src = "src/model/cuda/kernels.cu";
    println!("cargo:rerun-if-changed={src}");
    println!("cargo:rerun-if-env-changed=CUDA_COMPUTE_CAP");
    println!("cargo:rerun-if-env-changed=NVCC");
    let cap = std::env::var("CUDA_COMPUTE_CAP").unwrap_or_else(|_| "80".into());
    let cap: String = cap.chars().filter(char::is_ascii_digit).collect();
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("wan_kernels.ptx");
    let nvcc = std::env::var("NVCC").unwrap_or_else(|_| "nvcc".into());
    let status = std::process::Command::new(&nvcc)
        .args(["--ptx", "-O3", "-std=c++17"])
        .arg(format!("-arch=compute_{cap}"))
        .arg(src)
        .arg("-o")
        .arg(&out)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("`{nvcc} --ptx {src}` failed ({s}): the CUDA build needs nvcc (docs/gpu.md)"),
        Err(e) => panic!("cannot run `{nvcc}` for {src}: {e}; the CUDA build needs nvcc (docs/gpu.md)"),
    }
}
