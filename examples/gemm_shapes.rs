//! gemm throughput on a conv-shaped product (patches read transposed, as conv.rs does):
//! one call with gemm's own threading vs one single-threaded call per thread on half the
//! columns; a square 2048 matmul in the same process for reference.
use std::time::Instant;

/// `dst[m, n] += a[m, k] @ b[n, k]^T`, destination row-major with row stride `dst_rs`.
#[allow(clippy::too_many_arguments)]
fn gemm_call(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [f32],
    dst_rs: usize,
    a: &[f32],
    b: &[f32],
    par: gemm::Parallelism,
) {
    gemm_strided(m, n, k, dst, 1, dst_rs as isize, a, b, par);
}

/// `dst[m, n] += a[m, k] @ b[n, k]^T` with destination strides `dst_cs`, `dst_rs`.
#[allow(clippy::too_many_arguments)]
fn gemm_strided(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [f32],
    dst_cs: isize,
    dst_rs: isize,
    a: &[f32],
    b: &[f32],
    par: gemm::Parallelism,
) {
    assert!(dst.len() >= m * n && a.len() >= m * k && b.len() >= n * k);
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            dst_cs,
            dst_rs,
            true,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            k as isize,
            1,
            1.0,
            1.0,
            false,
            false,
            false,
            par,
        );
    }
}

fn dst_layout(m: usize, n: usize, k: usize, reps: usize) {
    let a = vec![0.5f32; m * k];
    let b = vec![0.25f32; k * n];
    for (name, cs, rs) in [
        ("channels-first dst", 1isize, n as isize),
        ("channels-last dst", m as isize, 1isize),
    ] {
        let mut c = vec![0f32; m * n];
        let t = Instant::now();
        for _ in 0..reps {
            gemm_strided(m, n, k, &mut c, cs, rs, &a, &b, gemm::Parallelism::Rayon(2));
        }
        println!(
            "m={m} n={n} k={k} {name}: {:.1} GFLOP/s",
            2.0 * (m * n * k * reps) as f64 / t.elapsed().as_secs_f64() / 1e9
        );
    }
}

fn main() {
    for _ in 0..2 {
        for (m, n, k) in [
            (96, 16384, 2592),
            (192, 4096, 5184),
            (384, 1024, 10368),
            (96, 65536, 2592),
        ] {
            dst_layout(m, n, k, 3);
        }
    }
    let reps = 3;
    for _ in 0..2 {
        let n = 2048;
        let a = vec![0.5f32; n * n];
        let mut c = vec![0f32; n * n];
        let t = Instant::now();
        for _ in 0..reps {
            gemm_call(n, n, n, &mut c, n, &a, &a, gemm::Parallelism::Rayon(2));
        }
        println!(
            "square 2048: {:.1} GFLOP/s",
            2.0 * (n * n * n * reps) as f64 / t.elapsed().as_secs_f64() / 1e9
        );
        for (m, n, k) in [(96, 16384, 2592), (192, 4096, 5184), (384, 1024, 10368)] {
            let a = vec![0.5f32; m * k];
            let b = vec![0.25f32; k * n];
            let mut c = vec![0f32; m * n];
            let t = Instant::now();
            for _ in 0..reps {
                gemm_call(m, n, k, &mut c, n, &a, &b, gemm::Parallelism::Rayon(2));
            }
            let one = 2.0 * (m * n * k * reps) as f64 / t.elapsed().as_secs_f64() / 1e9;
            // Two halves of the columns, each single-threaded, in parallel.
            let half = n / 2;
            let t = Instant::now();
            for _ in 0..reps {
                let (b0, b1) = b.split_at(half * k);
                let mut c0 = vec![0f32; m * half];
                let mut c1 = vec![0f32; m * half];
                rayon::join(
                    || gemm_call(m, half, k, &mut c0, half, &a, b0, gemm::Parallelism::None),
                    || gemm_call(m, half, k, &mut c1, half, &a, b1, gemm::Parallelism::None),
                );
            }
            let two = 2.0 * (m * n * k * reps) as f64 / t.elapsed().as_secs_f64() / 1e9;
            println!(
                "m={m} n={n} k={k}: one call Rayon(2) {one:.1} GFLOP/s, two single-threaded halves {two:.1} GFLOP/s"
            );
        }
    }
}
