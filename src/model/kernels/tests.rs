//! The AVX-512 kernels against a direct f64 convolution, on shapes that hit every edge:
//! partial register tiles, several `K` blocks, strides, padding, dead time taps.
//! Skipped (with a note on stderr) where the CPU lacks the instructions.
//!
//! Must not: be built outside `cargo test` (declared `#[cfg(test)]` in `super`).
use super::*;

/// Direct convolution in f64: `[m, to, ho, wo]`.
fn reference(x: &[f32], w: &[f32], bias: &[f32], m: usize, g: &ConvShape) -> Vec<f64> {
    let [kt, kh, kw] = g.kernel;
    let [st, sh, sw] = g.stride;
    let mut out = vec![0f64; m * g.pixels()];
    for o in 0..m {
        for ot in 0..g.to {
            for oh in 0..g.ho {
                for ow in 0..g.wo {
                    let mut s = bias[o] as f64;
                    for ci in 0..g.c {
                        for dt in 0..kt {
                            for dh in 0..kh {
                                for dw in 0..kw {
                                    let it = (ot * st + dt) as isize - g.front as isize;
                                    let ih = (oh * sh + dh) as isize - g.top as isize;
                                    let iw = (ow * sw + dw) as isize - g.left as isize;
                                    if it < 0
                                        || ih < 0
                                        || iw < 0
                                        || it >= g.t as isize
                                        || ih >= g.h as isize
                                        || iw >= g.w as isize
                                    {
                                        continue;
                                    }
                                    let xv = x[((ci * g.t + it as usize) * g.h + ih as usize) * g.w + iw as usize];
                                    let wv = w[(((o * g.c + ci) * kt + dt) * kh + dh) * kw + dw];
                                    s += xv as f64 * wv as f64;
                                }
                            }
                        }
                    }
                    out[((o * g.to + ot) * g.ho + oh) * g.wo + ow] = s;
                }
            }
        }
    }
    out
}

fn values(n: usize, seed: usize, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|i| ((((i * 7919 + seed * 104_729) % 2003) as f32) / 1001.5 - 1.0) * scale)
        .collect()
}

fn bf16_round(v: &[f32]) -> Vec<f32> {
    v.iter().map(|&x| half::bf16::from_f32(x).to_f32()).collect()
}

/// Shape with output size derived from input, kernel, stride and symmetric spatial padding.
#[allow(clippy::too_many_arguments)]
fn shape(
    c: usize,
    t: usize,
    h: usize,
    w: usize,
    kernel: [usize; 3],
    stride: [usize; 3],
    front: usize,
    p: usize,
) -> ConvShape {
    let out = |n: usize, pad: usize, k: usize, s: usize| (n + pad - k) / s + 1;
    ConvShape {
        c,
        t,
        h,
        w,
        to: out(t, front, kernel[0], stride[0]),
        ho: out(h, 2 * p, kernel[1], stride[1]),
        wo: out(w, 2 * p, kernel[2], stride[2]),
        kernel,
        stride,
        front,
        top: p,
        left: p,
    }
}

/// (out channels, shape) cases covering the edges.
fn cases() -> Vec<(usize, ConvShape)> {
    vec![
        // 3x3x3 causal, cached: all taps live; m and pixels not multiples of the tile.
        (13, shape(5, 3, 7, 9, [3, 3, 3], [1, 1, 1], 2, 1)),
        // First call of a causal conv: one frame, two dead taps; odd input channels (kg pad).
        (24, shape(3, 1, 10, 11, [3, 3, 3], [1, 1, 1], 2, 1)),
        // Many channels: several K blocks in both f32 (256) and bf16 (512) blocking.
        (12, shape(70, 2, 6, 5, [3, 3, 3], [1, 1, 1], 2, 1)),
        // Pointwise (shortcut / conv1 / conv2).
        (7, shape(33, 2, 5, 40, [1, 1, 1], [1, 1, 1], 0, 0)),
        // Spatial downsample: stride 2, padding only after (emulated by top = left = 0).
        (16, shape(8, 2, 9, 9, [1, 3, 3], [1, 2, 2], 0, 0)),
        // Time downsample: kernel 3x1x1, stride 2 in time.
        (12, shape(6, 5, 4, 4, [3, 1, 1], [2, 1, 1], 0, 0)),
        // Wide rows: runs split across strips and several tasks.
        (5, shape(4, 1, 3, 300, [1, 3, 3], [1, 1, 1], 0, 1)),
        // Many channels and frames at a latent-like size: several channel-group blocks.
        (30, shape(40, 4, 6, 6, [3, 3, 3], [1, 1, 1], 0, 1)),
        // Second call of a causal conv with one cached frame: one zero frame, one dead tap.
        (12, shape(9, 2, 5, 7, [3, 3, 3], [1, 1, 1], 1, 1)),
    ]
}

fn check(operands: Operands) {
    let need = match operands {
        Operands::F32 => Isa::Avx512,
        Operands::Bf16 => Isa::Avx512Bf16,
    };
    if Isa::hardware() < need {
        eprintln!("skipped: this CPU lacks the {} kernels", need.name());
        return;
    }
    for (ci, (m, g)) in cases().into_iter().enumerate() {
        let [kt, kh, kw] = g.kernel;
        let mut x = values(g.c * g.t * g.h * g.w, ci, 1.0);
        let mut w = values(m * g.c * kt * kh * kw, ci + 100, 0.3);
        let bias = values(m, ci + 200, 0.5);
        if operands == Operands::Bf16 {
            x = bf16_round(&x);
            w = bf16_round(&w);
        }
        let want = reference(&x, &w, &bias, m, &g);
        let pw = PackedWeights::new(&w, &bias, m, g.c, g.kernel, operands);
        let k = (g.c * kt * kh * kw) as f32;
        // Each shape through `conv` (direct where it applies), and through the packing path.
        for packing in [false, true] {
            let got = run_conv(&pw, &g, &x, operands, packing);
            compare(
                &got,
                &want,
                operands,
                k,
                &format!("case {ci} ({operands:?}, packing {packing}, {g:?})"),
            );
        }
    }
}

/// The conv of `x`, through `conv` or forced through the packing path.
fn run_conv(pw: &PackedWeights, g: &ConvShape, x: &[f32], operands: Operands, packing: bool) -> Vec<f32> {
    let n = pw.m * g.pixels();
    let xb: Vec<u16> = x.iter().map(|&v| half::bf16::from_f32(v).to_bits()).collect();
    let src = match operands {
        Operands::F32 => Src::F32(x),
        Operands::Bf16 => Src::Bf16(&xb),
    };
    let mut out_f = vec![f32::NAN; n];
    let mut out_b = vec![0xFFFFu16; n];
    let bf16 = operands == Operands::Bf16;
    if packing {
        let out = if bf16 {
            SharedOut(out_b.as_mut_ptr() as *mut u8)
        } else {
            SharedOut(out_f.as_mut_ptr() as *mut u8)
        };
        run(pw, &pack::Packing::new(g, src), g.pixels(), out, bf16);
    } else if bf16 {
        conv(pw, g, src, Dst::Bf16(&mut out_b));
    } else {
        conv(pw, g, src, Dst::F32(&mut out_f));
    }
    if bf16 {
        out_b.iter().map(|&b| half::bf16::from_bits(b).to_f32()).collect()
    } else {
        out_f
    }
}

/// f32: accumulation-order error only; bf16: the output's rounding to bf16 dominates.
fn compare(got: &[f32], want: &[f64], operands: Operands, k: f32, what: &str) {
    assert_eq!(got.len(), want.len());
    for (i, (&g_, &w_)) in got.iter().zip(want).enumerate() {
        let tol = match operands {
            Operands::F32 => 1e-6 * k * (1.0 + w_.abs() as f32),
            Operands::Bf16 => 1e-5 * k + 2f32.powi(-8) * w_.abs() as f32,
        };
        assert!(
            (g_ as f64 - w_).abs() <= tol as f64,
            "{what} out {i}: got {g_}, want {w_}"
        );
    }
}

#[test]
fn f32_kernels_match_a_direct_convolution() {
    check(Operands::F32);
}

#[test]
fn bf16_kernels_match_a_direct_convolution() {
    check(Operands::Bf16);
}

#[test]
fn isa_names_round_trip() {
    for isa in [Isa::Portable, Isa::Avx512, Isa::Avx512Bf16] {
        assert_eq!(Isa::parse(isa.name()), Some(isa));
    }
    assert_eq!(Isa::parse("sse9"), None);
    assert!(Isa::detect() <= Isa::hardware());
}
