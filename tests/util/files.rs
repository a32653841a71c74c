//! Helpers of the tests on untrusted files (issue 17): run the binary under a time and
//! memory bound (its process tree killed past the time), write `.npy` files by hand, rewrite a `.pth` checkpoint's pickle.
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Largest address space a bounded run may use: old code read `/dev/zero` until memory was
/// gone; under this bound it aborts instead of taking the machine with it.
const ADDRESS_SPACE_BYTES: u64 = 4 << 30;

/// What a bounded run ended with.
pub struct Bounded {
    /// Exit code; `None` when killed (timeout or a signal such as an abort).
    pub code: Option<i32>,
    /// The signal that ended it (6 for an abort), if one did.
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// Run the binary with `args` (stdin closed), killed after `limit`, its address space
/// bounded (so that an unbounded read fails fast instead of eating the machine's memory).
pub fn run_bounded<S: AsRef<std::ffi::OsStr>>(args: &[S], limit: Duration) -> Bounded {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wan-vae-bench"));
    cmd.args(args).env_remove("WAN_VAE_BENCH_FAULT");
    run_limited(cmd, limit, ADDRESS_SPACE_BYTES)
}

/// Run `cmd` (stdin closed) with its address space bounded to `address_space` bytes
/// (`RLIMIT_AS`: an allocation past it fails whatever the machine's overcommit settings);
/// past `limit` its whole process tree is killed.
pub fn run_limited(mut cmd: Command, limit: Duration, address_space: u64) -> Bounded {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: only setrlimit (async-signal-safe) runs between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: address_space as libc::rlim_t,
                    rlim_max: address_space as libc::rlim_t,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let start = Instant::now();
    let mut child = super::procs::spawn_group(&mut cmd);
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stdout.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > limit {
            super::procs::kill_tree(child.id() as i32);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = start.elapsed();
    let text = |v: Vec<u8>| String::from_utf8_lossy(&v).into_owned();
    Bounded {
        code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s)),
        stdout: text(out_reader.join().unwrap()),
        stderr: text(err_reader.join().unwrap()),
        elapsed,
    }
}

/// Write a little-endian f32 `.npy` file (format 1.0) of `shape` holding `values` (which
/// need not match the shape: a lying header is what some tests want).
pub fn write_npy(path: &Path, shape: &[u64], values: &[f32]) {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape_text}, }}");
    // magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for v in values {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

/// Pickle opcodes that add `key: os.system("echo pwned")` to a dict being built (inside
/// its SETITEMS mark): a callable, the kind of object `torch.load(weights_only=True)`
/// refuses. Nothing here is ever run: it is only bytes in a file.
pub fn pickled_call(key: &str) -> Vec<u8> {
    let mut p = Vec::new();
    let unicode = |p: &mut Vec<u8>, s: &str| {
        p.push(b'X');
        p.extend_from_slice(&(s.len() as u32).to_le_bytes());
        p.extend_from_slice(s.as_bytes());
    };
    unicode(&mut p, key);
    p.extend_from_slice(b"cos\nsystem\n");
    unicode(&mut p, "echo pwned");
    p.push(0x85); // TUPLE1
    p.push(b'R'); // REDUCE
    p
}

/// Copy the `.pth` checkpoint `from` to `to` (stored zip entries, as `torch.save` writes
/// them), inserting `extra` pickle opcodes into its state dict: just before the final
/// `SETITEMS` `STOP` of `data.pkl`. With `extra` empty the copy loads like the original.
pub fn pth_with_extra_items(from: &Path, to: &Path, extra: &[u8]) {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(from).unwrap()).unwrap();
    let mut out = zip::ZipWriter::new(std::fs::File::create(to).unwrap());
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).unwrap();
        let name = entry.name().unwrap().to_string();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        if name.ends_with("data.pkl") {
            assert!(data.ends_with(b"u."), "{name}: expected a dict ending in SETITEMS STOP");
            let tail = data.split_off(data.len() - 2);
            data.extend_from_slice(extra);
            data.extend_from_slice(&tail);
        }
        out.start_file(name, options).unwrap();
        out.write_all(&data).unwrap();
    }
    out.finish().unwrap();
}
