//! This crate's CUDA kernels (`kernels.cu`, PTX from build.rs, loaded once per device as a
//! candle custom module) as candle custom ops: the zero padding of a 5-D tensor
//! ([`pad5d`]), the bias added in place to a convolution's output ([`bias_add`], for
//! `cudnn.rs`), and Wan's channel norm + SiLU ([`channel_norm`]). f32 and bf16 only; the
//! ops need contiguous inputs and have no CPU implementation (the CPU has its own kernels).
//!
//! Must not: decide when they run (blocks.rs and `conv::device` do).
use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::{CudaSlice, CudaView, DeviceRepr, LaunchConfig, PushKernelArg};
use candle_core::cuda_backend::{CudaDType, CudaDevice, CudaStorage, WrapErr};
use candle_core::{CpuStorage, CustomOp1, CustomOp2, DType, Layout, Result, Shape, Tensor};

/// The PTX of kernels.cu (compute capability `CUDA_COMPUTE_CAP`, 80 by default; the driver
/// compiles it for the GPU at hand on first load).
const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/wan_kernels.ptx"));
/// The name candle keeps the loaded module under.
const MODULE: &str = "wan_vae_bench_kernels";
/// Threads per block of every kernel (each loops over its elements with a grid stride).
const THREADS: u32 = 256;
/// At most this many blocks; larger tensors loop.
const MAX_BLOCKS: u64 = 1 << 20;

/// Whether the kernels exist for `dtype`.
pub fn supports(dtype: DType) -> bool {
    matches!(dtype, DType::F32 | DType::BF16)
}

/// An element type of the kernels: its name suffix.
pub trait Elem: CudaDType + DeviceRepr {
    const SUFFIX: &'static str;
}
impl Elem for f32 {
    const SUFFIX: &'static str = "f32";
}
impl Elem for half::bf16 {
    const SUFFIX: &'static str = "bf16";
}

fn config(n: u64) -> LaunchConfig {
    let blocks = n.div_ceil(THREADS as u64).clamp(1, MAX_BLOCKS) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The kernel `wan_{name}_{suffix}` of kernels.cu, loaded once per device.
macro_rules! function {
    ($dev:expr, $name:literal, $suffix:expr) => {
        $dev.get_or_load_custom_func(&format!(concat!("wan_", $name, "_{}"), $suffix), MODULE, PTX)
    };
}

/// The contiguous data of `(s, l)` as a view of `T`.
pub fn view<'a, T: CudaDType>(s: &'a CudaStorage, l: &Layout, what: &str) -> Result<CudaView<'a, T>> {
    if !l.is_contiguous() {
        candle_core::bail!("{what}: needs a contiguous tensor, got strides {:?}", l.stride());
    }
    let start = l.start_offset();
    Ok(s.as_cuda_slice::<T>()?.slice(start..start + l.shape().elem_count()))
}

/// `kernels.cu`'s `wan::Pad5d`, field for field.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct Pad5dParams {
    n_c: u64,
    t: u64,
    h: u64,
    w: u64,
    t0: u64,
    h0: u64,
    w0: u64,
    to: u64,
    ho: u64,
    wo: u64,
}
// SAFETY: plain old data of u64 fields, laid out as the kernel's struct.
unsafe impl DeviceRepr for Pad5dParams {}

struct Pad5d {
    before: [usize; 3],
    after: [usize; 3],
}

impl Pad5d {
    fn run<T: Elem>(&self, s: &CudaStorage, l: &Layout, p: Pad5dParams) -> Result<CudaStorage> {
        let dev = s.device();
        let src = view::<T>(s, l, "wan-pad5d")?;
        let n = p.n_c * p.to * p.ho * p.wo;
        // SAFETY: every element is written by the kernel.
        let out = unsafe { dev.alloc::<T>(n as usize)? };
        let func = function!(dev, "pad5d", T::SUFFIX)?;
        let mut b = func.builder();
        b.arg(&p);
        b.arg(&src);
        b.arg(&out);
        // SAFETY: the arguments match the kernel's (Pad5d, const T*, T*); `out` holds n
        // elements, `src` the input's n_c*t*h*w.
        unsafe { b.launch(config(n)) }.w()?;
        Ok(CudaStorage::wrap_cuda_slice(out, dev.clone()))
    }
}

impl CustomOp1 for Pad5d {
    fn name(&self) -> &'static str {
        "wan-pad5d"
    }
    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout) -> Result<(CpuStorage, Shape)> {
        candle_core::bail!("wan-pad5d runs on CUDA only")
    }
    fn cuda_fwd(&self, s: &CudaStorage, l: &Layout) -> Result<(CudaStorage, Shape)> {
        let (b, c, t, h, w) = l.shape().dims5()?;
        let [t0, h0, w0] = self.before;
        let [t1, h1, w1] = self.after;
        let (to, ho, wo) = (t + t0 + t1, h + h0 + h1, w + w0 + w1);
        let u = |v: usize| v as u64;
        let p = Pad5dParams {
            n_c: u(b * c),
            t: u(t),
            h: u(h),
            w: u(w),
            t0: u(t0),
            h0: u(h0),
            w0: u(w0),
            to: u(to),
            ho: u(ho),
            wo: u(wo),
        };
        let out = match s.dtype() {
            DType::F32 => self.run::<f32>(s, l, p)?,
            DType::BF16 => self.run::<half::bf16>(s, l, p)?,
            d => candle_core::bail!("wan-pad5d: no kernel for {d:?}"),
        };
        Ok((out, Shape::from((b, c, to, ho, wo))))
    }
}

/// `x` `[B, C, T, H, W]` with `before` and `after` zeros on each side of T, H and W: one
/// kernel, one copy.
pub fn pad5d(x: &Tensor, before: [usize; 3], after: [usize; 3]) -> Result<Tensor> {
    x.contiguous()?.apply_op1_no_bwd(&Pad5d { before, after })
}

/// `y[n, o, s] += bias[o]` in place, for `y` `[N, channels, spatial]` (`total` elements).
pub fn bias_add<T: Elem>(
    dev: &CudaDevice,
    y: &mut CudaSlice<T>,
    bias: &CudaView<T>,
    channels: usize,
    spatial: usize,
) -> Result<()> {
    let total = y.len() as u64;
    let func = function!(dev, "bias_add", T::SUFFIX)?;
    let mut b = func.builder();
    let (c, s) = (channels as u64, spatial as u64);
    b.arg(&total);
    b.arg(&c);
    b.arg(&s);
    b.arg(y);
    b.arg(bias);
    // SAFETY: (u64, u64, u64, T*, const T*) as the kernel takes them; `bias` holds
    // `channels` elements and y `total` = N * channels * spatial.
    unsafe { b.launch(config(total)) }.w()?;
    Ok(())
}

struct ChannelNorm {
    silu: bool,
}

impl ChannelNorm {
    fn run<T: Elem>(&self, s: &CudaStorage, l: &Layout, gamma: CudaView<f32>) -> Result<CudaStorage> {
        let dev = s.device();
        let dims = l.shape().dims();
        let (outer, channels) = (dims[0], dims[1]);
        let inner: usize = dims[2..].iter().product();
        let x = view::<T>(s, l, "wan-channel-norm")?;
        let n = outer * channels * inner;
        // SAFETY: every element is written by the kernel.
        let out = unsafe { dev.alloc::<T>(n)? };
        let func = function!(dev, "channel_norm", T::SUFFIX)?;
        let mut b = func.builder();
        let (o, c, i, silu) = (outer as u64, channels as u64, inner as u64, self.silu as i32);
        b.arg(&o);
        b.arg(&c);
        b.arg(&i);
        b.arg(&x);
        b.arg(&out);
        b.arg(&gamma);
        b.arg(&silu);
        // SAFETY: (u64, u64, u64, const T*, T*, const float*, int) as the kernel takes them;
        // x and out hold outer*channels*inner elements, gamma `channels`.
        unsafe { b.launch(config((outer * inner) as u64)) }.w()?;
        Ok(CudaStorage::wrap_cuda_slice(out, dev.clone()))
    }
}

impl CustomOp2 for ChannelNorm {
    fn name(&self) -> &'static str {
        "wan-channel-norm"
    }
    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout, _: &CpuStorage, _: &Layout) -> Result<(CpuStorage, Shape)> {
        candle_core::bail!("wan-channel-norm runs on CUDA only")
    }
    fn cuda_fwd(&self, s: &CudaStorage, l: &Layout, g: &CudaStorage, gl: &Layout) -> Result<(CudaStorage, Shape)> {
        let dims = l.shape().dims();
        if dims.len() < 2 || gl.shape().elem_count() != dims[1] {
            candle_core::bail!(
                "wan-channel-norm: input {dims:?} and gamma {:?} differ in channels",
                gl.shape()
            );
        }
        let gamma = view::<f32>(g, gl, "wan-channel-norm gamma")?;
        let out = match s.dtype() {
            DType::F32 => self.run::<f32>(s, l, gamma)?,
            DType::BF16 => self.run::<half::bf16>(s, l, gamma)?,
            d => candle_core::bail!("wan-channel-norm: no kernel for {d:?}"),
        };
        Ok((out, l.shape().clone()))
    }
}

/// See [`super::channel_norm`]; `gamma` is f32 on `x`'s device.
pub fn channel_norm(x: &Tensor, gamma: &Tensor, silu: bool) -> Result<Tensor> {
    let gamma = gamma.to_dtype(DType::F32)?.contiguous()?;
    x.contiguous()?.apply_op2_no_bwd(&gamma, &ChannelNorm { silu })
}
