//! Convolutions on an accelerator through its vendor's library: the one seam between the
//! conv layer ([`super::Conv3d`]) and a library ([`Backend`]; cuDNN in `--features cudnn`
//! builds, `crate::model::cuda::cudnn`; MIOpen could take the same place on ROCm).
//!
//! Owns what is the same for every library: the padding split ([`split_padding`]: the
//! library pads symmetrically, the causal front frames and the downsampling's right and
//! bottom are one explicit copy, as in torch), the order of the copies ([`copy_steps`]: the
//! causal cache's concatenation and that padding are the only ones), the math the case
//! allows ([`set_tf32`]), and the records of what ran ([`ConvLibrary`], per distinct shape a
//! [`ConvPlanRecord`]) for the case record and the profile.
//!
//! Must not: know the model's layers, or a library's API (that is the backend's).
use candle_core::{Device, Tensor};

pub use super::library::{set_tf32, tf32, Backend, ConvLibrary, ConvPlanRecord};
use super::Pad;

/// The library that convolves on `device`, if this build has one for it.
pub fn backend_for(device: &Device) -> Option<&'static dyn Backend> {
    #[cfg(feature = "cudnn")]
    if device.is_cuda() {
        return Some(&crate::model::cuda::cudnn::CUDNN);
    }
    let _ = device;
    None
}

/// Start a case on every library this build has ([`Backend::reset`]): the workspace a
/// larger earlier case grew is not this case's.
pub fn reset_backends() {
    #[cfg(feature = "cudnn")]
    crate::model::cuda::cudnn::CUDNN.reset();
}

/// A [`Pad`] split into what the library pads (the same on both sides of each dim) and
/// what is left to an explicit zero-padding copy (`before`, `after`; `[T, H, W]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaddingSplit {
    pub symmetric: [usize; 3],
    pub before: [usize; 3],
    pub after: [usize; 3],
}

impl PaddingSplit {
    /// Whether an explicit copy is needed.
    pub fn explicit(&self) -> bool {
        self.before != [0; 3] || self.after != [0; 3]
    }
}

/// Split `pad`: time is padded in front only (causal), so all of it is explicit; in space
/// the smaller side goes to the library and the rest (the downsampling's right and bottom
/// row) is explicit.
pub fn split_padding(pad: Pad) -> PaddingSplit {
    let h = pad.top.min(pad.bottom);
    let w = pad.left.min(pad.right);
    PaddingSplit {
        symmetric: [0, h, w],
        before: [pad.t_front, pad.top - h, pad.left - w],
        after: [0, pad.bottom - h, pad.right - w],
    }
}

/// The copies before the library's convolution, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopySteps {
    /// Join the parts in time, with this many zero frames in front (`None`: one part, no join).
    pub join_with_front_zeros: Option<usize>,
    /// Then zero-pad (`before`, `after`), when any is left.
    pub pad: Option<([usize; 3], [usize; 3])>,
}

/// The copies for `parts` input tensors (cached frames, then new ones) under `split`: one
/// copy in the model's cases (a join, whose zero frames are part of it, or a padding), two
/// only for several parts with a one-sided spatial pad (which the model never has).
pub fn copy_steps(parts: usize, split: &PaddingSplit) -> CopySteps {
    if parts <= 1 {
        return CopySteps {
            join_with_front_zeros: None,
            pad: split.explicit().then_some((split.before, split.after)),
        };
    }
    let [front, top, left] = split.before;
    let mut rest_before = [0, top, left];
    let spatial_left = rest_before != [0; 3] || split.after != [0; 3];
    // Front zeros join with the parts unless a spatial pad copies again anyway.
    let zeros = if spatial_left {
        rest_before[0] = front;
        0
    } else {
        front
    };
    CopySteps {
        join_with_front_zeros: Some(zeros),
        pad: (rest_before != [0; 3] || split.after != [0; 3]).then_some((rest_before, split.after)),
    }
}

/// Convolve the concatenation in time of `parts` with `weight` `[O, C, kT, kH, kW]`, `bias`,
/// `stride` and `pad` through `backend`; where the library cannot, `candle` convolves the
/// copied input with the symmetric rest of the padding.
pub fn forward(
    backend: &dyn Backend,
    parts: &[&Tensor],
    weight: &Tensor,
    bias: &Tensor,
    stride: [usize; 3],
    pad: Pad,
    candle: impl FnOnce(&Tensor, Pad) -> candle_core::Result<Tensor>,
) -> candle_core::Result<Tensor> {
    let split = split_padding(pad);
    let steps = copy_steps(parts.len(), &split);
    let mut x = match steps.join_with_front_zeros {
        None => parts[0].contiguous()?,
        Some(zeros) => {
            let (b, c, _, h, w) = parts[0].dims5()?;
            let front = (zeros > 0)
                .then(|| Tensor::zeros((b, c, zeros, h, w), parts[0].dtype(), parts[0].device()))
                .transpose()?;
            let all: Vec<&Tensor> = front.iter().chain(parts.iter().copied()).collect();
            Tensor::cat(&all, 2)?
        }
    };
    if let Some((before, after)) = steps.pad {
        x = backend.pad(&x, before, after)?;
    }
    match backend.conv(&x, weight, bias, stride, split.symmetric)? {
        Some(y) => Ok(y),
        None => {
            let [_, h, w] = split.symmetric;
            let rest = Pad {
                t_front: 0,
                top: h,
                bottom: h,
                left: w,
                right: w,
            };
            candle(&x, rest)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pad(t_front: usize, top: usize, bottom: usize, left: usize, right: usize) -> Pad {
        Pad {
            t_front,
            top,
            bottom,
            left,
            right,
        }
    }

    #[test]
    fn the_library_pads_symmetrically_and_the_one_sided_rest_is_explicit() {
        // Causal 3x3x3, no cache: two zero frames in front; space to the library.
        let s = split_padding(pad(2, 1, 1, 1, 1));
        assert_eq!((s.symmetric, s.before, s.after), ([0, 1, 1], [2, 0, 0], [0, 0, 0]));
        assert!(s.explicit());
        // Downsampling: ZeroPad2d((0, 1, 0, 1)), nothing for the library.
        let s = split_padding(pad(0, 0, 1, 0, 1));
        assert_eq!((s.symmetric, s.before, s.after), ([0, 0, 0], [0, 0, 0], [0, 1, 1]));
        // Cached frames fill the front: nothing explicit.
        let s = split_padding(pad(0, 1, 1, 1, 1));
        assert!(!s.explicit());
        // Uneven on both sides: the smaller side is symmetric, the excess explicit.
        let s = split_padding(pad(1, 3, 1, 0, 2));
        assert_eq!((s.symmetric, s.before, s.after), ([0, 1, 0], [1, 2, 0], [0, 0, 2]));
    }

    #[test]
    fn the_cache_join_and_the_padding_are_the_only_copies() {
        let one = |p: Pad| copy_steps(1, &split_padding(p));
        let two = |p: Pad| copy_steps(2, &split_padding(p));
        // One part, nothing explicit: no copy at all.
        assert_eq!(
            one(pad(0, 1, 1, 1, 1)),
            CopySteps {
                join_with_front_zeros: None,
                pad: None
            }
        );
        // One part, causal front: one padding copy.
        assert_eq!(
            one(pad(2, 1, 1, 1, 1)),
            CopySteps {
                join_with_front_zeros: None,
                pad: Some(([2, 0, 0], [0; 3]))
            }
        );
        // Downsampling: one padding copy (right and bottom).
        assert_eq!(
            one(pad(0, 0, 1, 0, 1)),
            CopySteps {
                join_with_front_zeros: None,
                pad: Some(([0; 3], [0, 1, 1]))
            }
        );
        // The cache (two frames) in front: one join, no padding.
        assert_eq!(
            two(pad(0, 1, 1, 1, 1)),
            CopySteps {
                join_with_front_zeros: Some(0),
                pad: None
            }
        );
        // One cached frame and one zero frame: the zeros are part of the join.
        assert_eq!(
            two(pad(1, 1, 1, 1, 1)),
            CopySteps {
                join_with_front_zeros: Some(1),
                pad: None
            }
        );
        // Parts with a one-sided spatial pad (not in the model): join, then pad with the front.
        assert_eq!(
            two(pad(1, 0, 1, 0, 0)),
            CopySteps {
                join_with_front_zeros: Some(0),
                pad: Some(([1, 0, 0], [0, 1, 0]))
            }
        );
    }

    #[test]
    fn no_backend_without_a_library_build_or_on_the_cpu() {
        assert!(backend_for(&Device::Cpu).is_none());
        assert!(!tf32(), "true fp32 until a case allows TF32");
    }
}
