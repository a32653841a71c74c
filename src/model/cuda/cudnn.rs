//! cuDNN's N-d convolution on candle's CUDA tensors ([`CUDNN`], the
//! [`Backend`](crate::model::conv::library::Backend) of `--features cudnn` builds): the 5-D
//! `[B, C, T, H, W]` tensor goes to `cudnnConvolutionForward` as it is (no time-tap join, no
//! im2col), as a candle custom op on candle's stream.
//!
//! One plan per distinct convolution (GPU, dtype, shapes, stride, padding, math), built on
//! first use and kept for the worker's life: the descriptors, and the first algorithm of
//! cuDNN's v7 heuristics (`cudnnGetConvolutionForwardAlgorithm_v7`; torch's default is its
//! cuDNN v8 frontend's heuristics, docs/gpu.md) that the case's math allows within the
//! workspace cap ([`choice::workspace_cap`], sized from the GPU's free memory when the plan is
//! built; a first choice passed over for it is recorded), under the math type it was ranked
//! with. The state (handle, plans, workspace) is kept per GPU, not per candle device: candle
//! makes a device per case. One workspace per GPU, shared by every plan, grows to the largest
//! a plan needs and is never cleared between calls. The bias is added in place by one kernel
//! ([`ops::bias_add`]). A convolution cuDNN cannot describe (2^31 elements or more) or rank
//! takes candle's path, and its record says why.
//!
//! With `WAN_VAE_BENCH_CUDNN_SEARCH=1` in the worker's environment (an env variant of a
//! matrix) each plan's algorithm is instead the fastest of cuDNN's measured search
//! (`cudnnFindConvolutionForwardAlgorithmEx`, as torch's `cudnn.benchmark`) among those the
//! math allows, run once on the plan's first call with a temporary workspace of the cap; its
//! choice is checked again against the cap the free memory gives after the search.
//!
//! The legacy API (descriptors + `cudnnConvolutionForward`) is what cudarc wraps and what
//! cuDNN 9 still ships; the graph API would add fusions (bias, activation) that these
//! convolutions do not need.
//!
//! Must not: know the model's layers, or pad (the seam does, `conv::device`).
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::cudnn::{result, sys};
use candle_core::cuda_backend::cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use candle_core::cuda_backend::{CudaDevice, CudaStorage, WrapErr};
use candle_core::{CpuStorage, CustomOp3, DType, Layout, Result, Shape, Tensor};

use super::choice::{self, Algo, Candidate, HandleAction, MathPolicy, MathType, PlanKey};
use super::ops::{self, Elem};
use crate::model::conv::library::{self, Backend, ConvLibrary, ConvPlanRecord};

/// The cuDNN backend (its state is per thread: cuDNN handles are not thread-safe).
pub struct Cudnn;

/// The one instance, `conv::device::backend_for` hands it out for CUDA devices.
pub static CUDNN: Cudnn = Cudnn;

fn err(what: &str, e: result::CudnnError) -> candle_core::Error {
    candle_core::Error::Msg(format!("cuDNN: {what}: {e:?}"))
}

macro_rules! raw {
    ($name:ident, $t:ty, $destroy:path) => {
        struct $name($t);
        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: created by the matching create call, destroyed once here.
                let _ = unsafe { $destroy(self.0) };
            }
        }
    };
}
raw!(Handle, sys::cudnnHandle_t, result::destroy_handle);
raw!(
    TensorDesc,
    sys::cudnnTensorDescriptor_t,
    result::destroy_tensor_descriptor
);
raw!(
    FilterDesc,
    sys::cudnnFilterDescriptor_t,
    result::destroy_filter_descriptor
);
raw!(
    ConvDesc,
    sys::cudnnConvolutionDescriptor_t,
    result::destroy_convolution_descriptor
);

/// Plans are kept per GPU (its ordinal).
type Key = PlanKey<usize>;

/// The GPU of a candle device: its context's ordinal (candle's `DeviceId` is per instance).
fn gpu(dev: &CudaDevice) -> usize {
    dev.cuda_stream().context().ordinal()
}

/// The workspace cap now: from the GPU's free memory ([`choice::workspace_cap`]).
fn cap_now(dev: &CudaDevice) -> Result<usize> {
    let (free, _total) = dev.cuda_stream().context().mem_get_info().w()?;
    Ok(choice::workspace_cap(free))
}

struct Plan {
    x: TensorDesc,
    w: FilterDesc,
    y: TensorDesc,
    conv: ConvDesc,
    algo: sys::cudnnConvolutionFwdAlgo_t,
    workspace: usize,
    y_dims: [usize; 5],
}

/// A plan, or why candle's path runs instead; with its record's index.
struct Planned {
    plan: Option<Plan>,
    /// Whether the measured search has chosen its algorithm.
    searched: bool,
    record: usize,
    /// `cuDNN ALGO (MATH math)`, or the fallback's name, and its family (the profile's).
    used_as: (String, &'static str),
}

/// A GPU's handle, with the stream it runs on now: the stream keeps candle's CUDA context
/// alive until the handle is destroyed (fields drop in order).
struct DeviceHandle {
    handle: Handle,
    stream: std::sync::Arc<candle_core::cuda_backend::cudarc::driver::CudaStream>,
}

#[derive(Default)]
struct State {
    /// Per GPU ordinal.
    handles: HashMap<usize, DeviceHandle>,
    plans: HashMap<Key, Planned>,
    records: Vec<ConvPlanRecord>,
    /// Per GPU ordinal.
    workspaces: HashMap<usize, CudaSlice<u8>>,
    /// The largest workspace since the last reset, bytes.
    workspace_peak: usize,
    /// The policies of the convolutions since the last reset.
    policies: Vec<MathPolicy>,
    /// The algorithms run since the profile last asked.
    used: Vec<(String, &'static str)>,
    version: Option<usize>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

fn policy_for(dtype: DType) -> Option<MathPolicy> {
    MathPolicy::for_dtype(dtype, library::tf32())
}

fn data_type(dtype: DType) -> sys::cudnnDataType_t {
    match dtype {
        DType::BF16 => sys::cudnnDataType_t::CUDNN_DATA_BFLOAT16,
        _ => sys::cudnnDataType_t::CUDNN_DATA_FLOAT,
    }
}

fn math_type(m: MathType) -> sys::cudnnMathType_t {
    match m {
        MathType::Default => sys::cudnnMathType_t::CUDNN_DEFAULT_MATH,
        MathType::TensorOp => sys::cudnnMathType_t::CUDNN_TENSOR_OP_MATH,
        MathType::TensorOpAllowConversion => sys::cudnnMathType_t::CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION,
        MathType::Fma => sys::cudnnMathType_t::CUDNN_FMA_MATH,
    }
}

fn ints(v: &[usize]) -> Vec<i32> {
    v.iter().map(|&d| d as i32).collect()
}

fn tensor_desc(dtype: DType, dims: &[usize]) -> Result<TensorDesc> {
    let desc = TensorDesc(result::create_tensor_descriptor().map_err(|e| err("tensor descriptor", e))?);
    let (d, s) = (ints(dims), ints(&choice::packed_strides(dims)));
    // SAFETY: a live descriptor; d and s hold dims.len() ints.
    unsafe { result::set_tensornd_descriptor(desc.0, data_type(dtype), d.len() as i32, d.as_ptr(), s.as_ptr()) }
        .map_err(|e| err(&format!("tensor {dims:?}"), e))?;
    Ok(desc)
}

impl State {
    fn handle(&mut self, dev: &CudaDevice) -> Result<sys::cudnnHandle_t> {
        let stream = dev.cuda_stream();
        let here = stream.cu_stream() as usize;
        let have = self.handles.get(&gpu(dev)).map(|h| h.stream.cu_stream() as usize);
        match choice::handle_action(have.as_ref(), &here) {
            HandleAction::Reuse => return Ok(self.handles[&gpu(dev)].handle.0),
            HandleAction::SetStream => {
                let h = self.handles.get_mut(&gpu(dev)).expect("a handle for this GPU");
                // SAFETY: a live handle; the stream is kept beside it from now on.
                unsafe { result::set_stream(h.handle.0, stream.cu_stream() as *mut _) }
                    .map_err(|e| err("set the stream", e))?;
                h.stream = stream;
                return Ok(h.handle.0);
            }
            HandleAction::Create => {}
        }
        // cudnnCreate allocates on the current context: make it candle's (as cudarc does).
        stream.context().bind_to_thread().w()?;
        let h = Handle(result::create_handle().map_err(|e| err("create a handle", e))?);
        // SAFETY: a live handle; the stream outlives it (kept beside it).
        unsafe { result::set_stream(h.0, stream.cu_stream() as *mut _) }.map_err(|e| err("set the stream", e))?;
        self.version = Some(result::get_version());
        let raw = h.0;
        self.handles.insert(gpu(dev), DeviceHandle { handle: h, stream });
        Ok(raw)
    }

    /// The plan of `key`, built on first use.
    fn planned(&mut self, key: &Key, dev: &CudaDevice) -> Result<&Planned> {
        if !self.plans.contains_key(key) {
            let built = self.build(key, dev)?;
            self.plans.insert(key.clone(), built);
        }
        Ok(&self.plans[key])
    }

    fn build(&mut self, key: &Key, dev: &CudaDevice) -> Result<Planned> {
        let policy = key.policy;
        let y_dims = choice::out_dims(key.x, key.w, key.stride, key.pad).ok_or_else(|| {
            candle_core::Error::Msg(format!("cuDNN: no output for input {:?} and weight {:?}", key.x, key.w))
        })?;
        let mut record = ConvPlanRecord {
            input: key.x.to_vec(),
            weight: key.w.to_vec(),
            stride: key.stride.to_vec(),
            padding: key.pad.to_vec(),
            dtype: key.dtype.as_str().to_string(),
            ..Default::default()
        };
        let fallback = |record: ConvPlanRecord, records: &mut Vec<ConvPlanRecord>, why: String| {
            let name = format!("candle conv2d (fallback: {why})");
            let record = ConvPlanRecord {
                algorithm: name.clone(),
                family: "gemm+im2col".into(),
                ..record
            };
            records.push(record);
            Planned {
                plan: None,
                searched: false,
                record: records.len() - 1,
                used_as: (name, "gemm+im2col"),
            }
        };
        if !choice::fits_int(&key.x) || !choice::fits_int(&y_dims) {
            let why = "a tensor of 2^31 elements or more, which cuDNN's int descriptors cannot hold".to_string();
            return Ok(fallback(record, &mut self.records, why));
        }
        let handle = self.handle(dev)?;
        let x = tensor_desc(key.dtype, &key.x)?;
        let y = tensor_desc(key.dtype, &y_dims)?;
        let w = FilterDesc(result::create_filter_descriptor().map_err(|e| err("filter descriptor", e))?);
        let wd = ints(&key.w);
        // SAFETY: a live descriptor; wd holds 5 ints.
        unsafe {
            result::set_filternd_descriptor(
                w.0,
                data_type(key.dtype),
                sys::cudnnTensorFormat_t::CUDNN_TENSOR_NCHW,
                5,
                wd.as_ptr(),
            )
        }
        .map_err(|e| err(&format!("filter {:?}", key.w), e))?;
        let conv = ConvDesc(result::create_convolution_descriptor().map_err(|e| err("conv descriptor", e))?);
        let (pads, strides, dil) = (ints(&key.pad), ints(&key.stride), [1i32; 3]);
        // SAFETY: a live descriptor; three ints each. bf16 computes in float
        // (PSEUDO_BFLOAT16_CONFIG), f32 in float.
        unsafe {
            result::set_convolutionnd_descriptor(
                conv.0,
                3,
                pads.as_ptr(),
                strides.as_ptr(),
                dil.as_ptr(),
                sys::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION,
                sys::cudnnDataType_t::CUDNN_DATA_FLOAT,
            )
        }
        .map_err(|e| err("conv descriptor", e))?;
        // SAFETY: live descriptors.
        unsafe { result::set_convolution_math_type(conv.0, math_type(policy.initial())) }
            .map_err(|e| err("math type", e))?;
        // cuDNN's own output shape must be ours.
        let mut out = [0i32; 5];
        // SAFETY: live descriptors; `out` holds 5 ints.
        unsafe { sys::cudnnGetConvolutionNdForwardOutputDim(conv.0, x.0, w.0, 5, out.as_mut_ptr()) }
            .result()
            .map_err(|e| err("output dims", e))?;
        if out.iter().map(|&d| d as usize).ne(y_dims) {
            let why = format!("cuDNN's output {out:?} is not {y_dims:?}");
            return Ok(fallback(record, &mut self.records, why));
        }
        const COUNT: usize = 8;
        // SAFETY: plain C structs; zeroes are valid (cuDNN overwrites the returned ones).
        let mut perf: [sys::cudnnConvolutionFwdAlgoPerf_t; COUNT] = unsafe { std::mem::zeroed() };
        let mut returned = 0;
        // SAFETY: live handle and descriptors; perf holds COUNT entries.
        unsafe {
            result::get_convolution_forward_algorithm(
                handle,
                x.0,
                w.0,
                conv.0,
                y.0,
                COUNT as i32,
                &mut returned,
                perf.as_mut_ptr(),
            )
        }
        .map_err(|e| err("heuristics", e))?;
        let ranked = &perf[..(returned.max(0) as usize).min(COUNT)];
        let candidates: Vec<Candidate> = ranked.iter().map(candidate).collect();
        // The first allowed candidate whose workspace, asked under its own math type, fits the
        // cap the GPU's free memory gives now.
        let cap = cap_now(dev)?;
        let asked = |i: usize| -> Result<usize> {
            // SAFETY: live descriptor.
            unsafe { result::set_convolution_math_type(conv.0, ranked[i].mathType) }
                .map_err(|e| err("math type", e))?;
            // SAFETY: live handle and descriptors.
            unsafe { result::get_convolution_forward_workspace_size(handle, x.0, w.0, conv.0, y.0, ranked[i].algo) }
                .map_err(|e| err("workspace size", e))
        };
        record.workspace_cap_bytes = cap as u64;
        if let Some((i, ws, passed)) = choice::choose_within(&candidates, policy, cap, asked)? {
            // The descriptor holds the chosen one's math type: it was asked last.
            let c = &candidates[i];
            let (algo, math) = (c.algo.expect("chosen: known"), c.math.expect("chosen: known"));
            let name = format!("cuDNN {} ({} math)", algo.name(), math.name());
            self.records.push(ConvPlanRecord {
                algorithm: algo.name().to_string(),
                family: algo.family().to_string(),
                math: math.name().to_string(),
                workspace_bytes: ws as u64,
                heuristic_rank: i,
                chosen_by: "heuristics".into(),
                passed_over: passed.map(|p| p.describe("heuristics")).unwrap_or_default(),
                ..record
            });
            return Ok(Planned {
                searched: false,
                plan: Some(Plan {
                    x,
                    w,
                    y,
                    conv,
                    algo: ranked[i].algo,
                    workspace: ws,
                    y_dims,
                }),
                record: self.records.len() - 1,
                used_as: (name, algo.family()),
            });
        }
        record.math = policy.initial().name().to_string();
        let offered: Vec<String> = candidates
            .iter()
            .map(|c| {
                let a = c.algo.map_or("?", Algo::name);
                let m = c.math.map_or("?", MathType::name);
                format!("{a}/{m}/{}{}", c.memory, if c.ok { "" } else { "/failed" })
            })
            .collect();
        let why = format!(
            "cuDNN ranked no algorithm allowed under {} within {} MiB of workspace: {}",
            policy.describe(),
            cap >> 20,
            offered.join(", ")
        );
        Ok(fallback(record, &mut self.records, why))
    }
}

mod search;
use search::search_enabled;

/// A ranking entry as plain data.
fn candidate(p: &sys::cudnnConvolutionFwdAlgoPerf_t) -> Candidate {
    Candidate {
        algo: Algo::from_index(p.algo as u32),
        ok: p.status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS,
        memory: p.memory,
        math: MathType::from_index(p.mathType as u32),
    }
}

/// The convolution of one plan (looked up by its key) as a candle op on (x, weight, bias).
struct ConvOp {
    key: Key,
}

impl ConvOp {
    fn run<T: Elem>(
        &self,
        (xs, xl): (&CudaStorage, &Layout),
        (ws, wl): (&CudaStorage, &Layout),
        (bs, bl): (&CudaStorage, &Layout),
    ) -> Result<(CudaStorage, [usize; 5])> {
        let dev = xs.device();
        let x = ops::view::<T>(xs, xl, "cuDNN conv input")?;
        let w = ops::view::<T>(ws, wl, "cuDNN conv weight")?;
        let b = ops::view::<T>(bs, bl, "cuDNN conv bias")?;
        STATE.with_borrow_mut(|state| {
            let handle = state.handle(dev)?;
            let planned = state.planned(&self.key, dev)?;
            let Some(plan) = &planned.plan else {
                candle_core::bail!("cuDNN: no plan for {:?} (it takes candle's path)", self.key);
            };
            let y_dims = plan.y_dims;
            let n: usize = y_dims.iter().product();
            // SAFETY: cuDNN writes every element (beta = 0).
            let mut y = unsafe { dev.alloc::<T>(n)? };
            let stream = dev.cuda_stream();
            if search_enabled() && !planned.searched {
                let (xp, _rx) = x.device_ptr(&stream);
                let (wp, _rw) = w.device_ptr(&stream);
                let (yp, _ry) = y.device_ptr_mut(&stream);
                state.search(&self.key, dev, xp, wp, yp)?;
            }
            let planned = &state.plans[&self.key];
            let plan = planned.plan.as_ref().expect("checked above");
            let (record, used_as, need) = (planned.record, planned.used_as.clone(), plan.workspace);
            // Grow the device's one workspace when this plan needs more (never cleared).
            let have = state.workspaces.get(&gpu(dev)).map_or(0, |w| w.len());
            if let Some(size) = choice::grow_workspace(have, need) {
                // The old one goes first.
                state.workspaces.remove(&gpu(dev));
                // SAFETY: scratch memory cuDNN writes before it reads.
                let fresh = unsafe { dev.alloc::<u8>(size)? };
                state.workspaces.insert(gpu(dev), fresh);
            }
            state.workspace_peak = state.workspace_peak.max(have.max(need));
            let plan = state.plans[&self.key].plan.as_ref().expect("checked above");
            {
                let (xp, _rx) = x.device_ptr(&stream);
                let (wp, _rw) = w.device_ptr(&stream);
                let (yp, _ry) = y.device_ptr_mut(&stream);
                let workspace = state.workspaces.get_mut(&gpu(dev)).filter(|_| need > 0);
                let (wsp, _rws) = match workspace {
                    Some(ws) => {
                        let (p, r) = ws.device_ptr_mut(&stream);
                        (p as *mut c_void, Some(r))
                    }
                    None => (std::ptr::null_mut(), None),
                };
                let (alpha, beta) = (1f32, 0f32);
                // SAFETY: the descriptors describe x, w and y (packed, the key's dims, T's
                // cuDNN type); the workspace holds at least `need` bytes; all on candle's
                // stream, which the handle uses.
                unsafe {
                    result::convolution_forward(
                        handle,
                        (&alpha as *const f32).cast(),
                        plan.x.0,
                        xp as *const c_void,
                        plan.w.0,
                        wp as *const c_void,
                        plan.conv.0,
                        plan.algo,
                        wsp,
                        need,
                        (&beta as *const f32).cast(),
                        plan.y.0,
                        yp as *mut c_void,
                    )
                }
                .map_err(|e| err(&format!("convolution {:?} * {:?}", self.key.x, self.key.w), e))?;
            }
            ops::bias_add(dev, &mut y, &b, y_dims[1], y_dims[2..].iter().product())?;
            state.records[record].calls += 1;
            if !state.policies.contains(&self.key.policy) {
                state.policies.push(self.key.policy);
            }
            if !state.used.contains(&used_as) {
                state.used.push(used_as);
            }
            Ok((CudaStorage::wrap_cuda_slice(y, dev.clone()), y_dims))
        })
    }
}

impl CustomOp3 for ConvOp {
    fn name(&self) -> &'static str {
        "wan-cudnn-conv"
    }
    fn cpu_fwd(
        &self,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        candle_core::bail!("wan-cudnn-conv runs on CUDA only")
    }
    fn cuda_fwd(
        &self,
        x: &CudaStorage,
        xl: &Layout,
        w: &CudaStorage,
        wl: &Layout,
        b: &CudaStorage,
        bl: &Layout,
    ) -> Result<(CudaStorage, Shape)> {
        let (out, dims) = match x.dtype() {
            DType::F32 => self.run::<f32>((x, xl), (w, wl), (b, bl))?,
            DType::BF16 => self.run::<half::bf16>((x, xl), (w, wl), (b, bl))?,
            d => candle_core::bail!("wan-cudnn-conv: no plan for {d:?}"),
        };
        Ok((out, Shape::from(dims.to_vec())))
    }
}

impl Backend for Cudnn {
    fn supports(&self, dtype: DType) -> bool {
        policy_for(dtype).is_some() && ops::supports(dtype)
    }

    fn conv(
        &self,
        x: &Tensor,
        weight: &Tensor,
        bias: &Tensor,
        stride: [usize; 3],
        pad: [usize; 3],
    ) -> Result<Option<Tensor>> {
        let candle_core::Device::Cuda(dev) = x.device() else {
            candle_core::bail!("cuDNN convolves CUDA tensors, not {:?}", x.device());
        };
        let Some(key) = Key::new(
            gpu(dev),
            x.dtype(),
            x.dims(),
            weight.dims(),
            stride,
            pad,
            library::tf32(),
        ) else {
            return Ok(None);
        };
        let runs = STATE.with_borrow_mut(|state| -> Result<bool> {
            let planned = state.planned(&key, dev)?;
            let (record, used_as, runs) = (planned.record, planned.used_as.clone(), planned.plan.is_some());
            if !runs {
                // Counted here: candle's path runs it.
                state.records[record].calls += 1;
                if !state.used.contains(&used_as) {
                    state.used.push(used_as);
                }
            }
            Ok(runs)
        })?;
        if !runs {
            return Ok(None);
        }
        let x = x.contiguous()?;
        let weight = weight.to_dtype(x.dtype())?.contiguous()?;
        let bias = bias.to_dtype(x.dtype())?.contiguous()?;
        x.apply_op3_no_bwd(&weight, &bias, &ConvOp { key }).map(Some)
    }

    fn pad(&self, x: &Tensor, before: [usize; 3], after: [usize; 3]) -> Result<Tensor> {
        ops::pad5d(x, before, after)
    }

    fn library(&self) -> Option<ConvLibrary> {
        STATE.with_borrow(|state| {
            let plans: Vec<ConvPlanRecord> = state.records.iter().filter(|r| r.calls > 0).cloned().collect();
            if plans.is_empty() {
                return None;
            }
            let math: Vec<&str> = state.policies.iter().map(|p| p.describe()).collect();
            Some(ConvLibrary {
                library: "cuDNN".into(),
                version: state.version.map_or_else(|| "unknown".into(), choice::version_string),
                math: math.join("; "),
                workspace_cap_bytes: plans.iter().map(|p| p.workspace_cap_bytes).min().unwrap_or(0),
                workspace_bytes: state.workspace_peak as u64,
                plans,
            })
        })
    }

    fn reset(&self) {
        STATE.with_borrow_mut(|state| {
            state.workspaces.clear();
            state.workspace_peak = 0;
            state.policies.clear();
            state.used.clear();
            for r in &mut state.records {
                r.calls = 0;
            }
        });
    }

    fn take_used(&self) -> Vec<(String, &'static str)> {
        STATE.with_borrow_mut(|state| std::mem::take(&mut state.used))
    }
}
