//! gemm throughput for one conv-shaped product in several memory layouts, next to a square
//! 2048 matmul in the same process.
use std::time::Instant;
/// dst[m,n] = lhs[m,k] @ rhs[k,n] with the given (cs, rs) strides.
fn run(m: usize, n: usize, k: usize, dst_t: bool, rhs_t: bool, lhs_t: bool) -> f64 {
    let a = vec![0.5f32; m * k];
    let b = vec![0.25f32; k * n];
    let mut c = vec![0f32; m * n];
    let (dcs, drs) = if dst_t { (m, 1) } else { (1, n) };
    let (bcs, brs) = if rhs_t { (k, 1) } else { (1, n) };
    let (acs, ars) = if lhs_t { (m, 1) } else { (1, k) };
    let t = Instant::now();
    let reps = 3;
    for _ in 0..reps {
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                c.as_mut_ptr(),
                dcs as isize,
                drs as isize,
                true,
                a.as_ptr(),
                acs as isize,
                ars as isize,
                b.as_ptr(),
                bcs as isize,
                brs as isize,
                1.0,
                1.0,
                false,
                false,
                false,
                gemm::Parallelism::Rayon(2),
            );
        }
    }
    2.0 * (m * n * k * reps) as f64 / t.elapsed().as_secs_f64() / 1e9
}
fn main() {
    for _ in 0..2 {
        println!("square 2048: {:.1} GFLOP/s", run(2048, 2048, 2048, false, false, false));
        for (m, n, k) in [(96, 16384, 2592), (384, 256, 10368)] {
            for dst_t in [false, true] {
                for rhs_t in [false, true] {
                    for lhs_t in [false, true] {
                        println!(
                            "m={m} n={n} k={k} dst_t={dst_t} rhs_t={rhs_t} lhs_t={lhs_t}: {:.1} GFLOP/s",
                            run(m, n, k, dst_t, rhs_t, lhs_t)
                        );
                    }
                }
            }
        }
    }
}
