//! Issue 17, items 6 and 18: what is not a regular file (`/dev/zero`, `/dev/urandom`) is
//! refused at once, not read until memory is gone; a report or a FIFO is read with a bound;
//! a JSON file that is not a report says what it is.
use std::path::Path;
use std::time::Duration;

use crate::util::cli::scratch;
use crate::util::files::{run_bounded, Bounded};
use crate::util::reports::{bench, case, report, save, steady};

/// Old code read `/dev/zero` for many seconds before it ran out of (bounded) memory.
const LIMIT: Duration = Duration::from_secs(60);

fn assert_refused(out: &Bounded, args: &[&str], device: &str) {
    assert_eq!(
        out.code,
        Some(2),
        "{args:?} (after {:?}): {}{}",
        out.elapsed,
        out.stderr,
        out.stdout
    );
    assert!(
        out.stderr.contains(device),
        "{args:?}: the error must name {device}: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains("not a regular file"),
        "{args:?}: the error must say what is wrong: {}",
        out.stderr
    );
}

#[test]
fn devices_are_refused_by_every_command_that_reads_a_file() {
    let dir = scratch();
    let good = save(
        dir.path(),
        "good.json",
        &report("h", vec![case("a", &steady(1.0), &steady(1.0))]),
    );
    let good = good.to_str().unwrap();
    let svg = dir.path().join("x.svg");
    let merged = dir.path().join("m.json");
    // Its own report path: another test's run may hold the default one's lock.
    let own = dir.path().join("run.json");
    let runs: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "run",
                "-o",
                own.to_str().unwrap(),
                "--weights",
                "synthetic",
                "--passes",
                "decode",
                "--input",
                "/dev/zero",
                "--list",
            ],
            "/dev/zero",
        ),
        (
            vec!["validate", "--weights", "synthetic", "--cases", "/dev/zero"],
            "/dev/zero",
        ),
        (vec!["compare", "/dev/zero", good], "/dev/zero"),
        (vec!["compare", good, "/dev/urandom"], "/dev/urandom"),
        (vec!["plot", "/dev/zero", "-o", svg.to_str().unwrap()], "/dev/zero"),
        (
            vec!["merge", good, "/dev/urandom", "-o", merged.to_str().unwrap()],
            "/dev/urandom",
        ),
    ];
    for (args, device) in runs {
        let out = run_bounded(&args, LIMIT);
        assert_refused(&out, &args, device);
    }
    assert!(!svg.exists() && !merged.exists());
}

#[test]
fn a_report_over_the_size_limit_is_refused_before_reading() {
    let dir = scratch();
    let good = save(
        dir.path(),
        "good.json",
        &report("h", vec![case("a", &steady(1.0), &steady(1.0))]),
    );
    // Sparse: 300 MiB that take no disk space.
    let big = dir.path().join("big.json");
    std::fs::File::create(&big).unwrap().set_len(300 << 20).unwrap();
    let args = [good.to_str().unwrap(), big.to_str().unwrap()];
    let out = run_bounded(&["compare", args[0], args[1]], LIMIT);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("big.json"), "{}", out.stderr);
    assert!(
        out.stderr.contains("300 MiB") && out.stderr.contains("256 MiB"),
        "the error must give the size and the limit: {}",
        out.stderr
    );
}

/// Open `fifo` for reading and close it again, so that a writer still waiting for a reader
/// (the binary failed before opening it) gets one and then EPIPE, and the test never hangs.
fn release(fifo: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(fifo);
}

/// A FIFO: `compare <(cat report.json) ...` keeps working; an endless one stops at the bound.
#[test]
fn fifos_are_read_with_a_bound() {
    let dir = scratch();
    let good = save(
        dir.path(),
        "good.json",
        &report("h", vec![case("a", &steady(1.0), &steady(1.0))]),
    );
    let fifo = dir.path().join("fifo.json");
    let make = |p: &Path| {
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    };
    make(&fifo);
    let text = std::fs::read(&good).unwrap();
    let (f, t) = (fifo.clone(), text.clone());
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = std::fs::OpenOptions::new().write(true).open(&f).unwrap().write_all(&t);
    });
    let out = run_bounded(&["compare", good.to_str().unwrap(), fifo.to_str().unwrap()], LIMIT);
    release(&fifo);
    writer.join().unwrap();
    assert_eq!(
        out.code,
        Some(0),
        "a FIFO holding a report must still work: {}",
        out.stderr
    );

    let endless = dir.path().join("endless.json");
    make(&endless);
    let e = endless.clone();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().write(true).open(&e).unwrap();
        let block = vec![b' '; 1 << 20];
        // Stops when the reader has had enough and closes its end (EPIPE).
        while f.write_all(&block).is_ok() {}
    });
    let out = run_bounded(&["compare", good.to_str().unwrap(), endless.to_str().unwrap()], LIMIT);
    release(&endless);
    writer.join().unwrap();
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("endless.json") && out.stderr.contains("256 MiB"),
        "{}",
        out.stderr
    );
}

#[test]
fn json_that_is_not_a_report_says_what_it_is() {
    let dir = scratch();
    let good = save(
        dir.path(),
        "good.json",
        &report("h", vec![case("a", &steady(1.0), &steady(1.0))]),
    );
    for (name, text, found) in [
        ("array.json", "[{\"schema_version\": 3}]", "found an array"),
        ("number.json", "42", "found a number"),
        ("text.json", "\"report\"", "found a string"),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        let out = bench(&["compare".as_ref(), good.as_os_str(), p.as_os_str()]);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(out.stderr.contains(name), "{}", out.stderr);
        assert!(
            out.stderr.contains("expected a wan-vae-bench report") && out.stderr.contains(found),
            "{name}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("invalid type"), "{}", out.stderr);
    }
}

/// Issue 30 item 6: a FIFO given as a tensor file (`run --input`, `validate --cases`) stops at
/// half the memory the process may still use (here its 4 GiB address space), with exit 2, not
/// when an allocation fails.
#[test]
fn an_endless_fifo_as_a_tensor_file_stops_at_half_the_memory_headroom() {
    let dir = scratch();
    let own = dir.path().join("run.json");
    for (i, flag) in ["--input", "--cases"].into_iter().enumerate() {
        let fifo = dir.path().join(format!("endless{i}.safetensors"));
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let f = fifo.clone();
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().write(true).open(&f).unwrap();
            let block = vec![0u8; 1 << 20];
            while f.write_all(&block).is_ok() {}
        });
        let path = fifo.to_str().unwrap();
        let args: Vec<&str> = if flag == "--input" {
            vec![
                "run",
                "-o",
                own.to_str().unwrap(),
                "--weights",
                "synthetic",
                "--passes",
                "decode",
                "--input",
                path,
                "--list",
            ]
        } else {
            vec!["validate", "--weights", "synthetic", "--cases", path]
        };
        let out = run_bounded(&args, LIMIT);
        release(&fifo);
        writer.join().unwrap();
        assert_eq!(out.code, Some(2), "{flag}: {}", out.stderr);
        assert!(
            out.stderr.contains(path) && out.stderr.contains("half of the") && out.stderr.contains("ulimit -v"),
            "{flag}: the error must name the FIFO and the bound: {}",
            out.stderr
        );
    }
}
