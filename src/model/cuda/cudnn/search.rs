//! cuDNN's measured search (`WAN_VAE_BENCH_CUDNN_SEARCH=1`): a plan's algorithm chosen by
//! `cudnnFindConvolutionForwardAlgorithmEx` on its first call, then checked again against the
//! cap the GPU's free memory gives after the search. Part of [`super`]'s state.
//!
//! Must not: build plans or run convolutions (the parent does).
use super::*;

/// Whether plans take the measured search's algorithm (`WAN_VAE_BENCH_CUDNN_SEARCH=1`).
pub(super) fn search_enabled() -> bool {
    static SEARCH: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SEARCH.get_or_init(|| std::env::var("WAN_VAE_BENCH_CUDNN_SEARCH").is_ok_and(|v| v == "1"))
}

impl State {
    /// Choose `key`'s algorithm by cuDNN's measured search on the buffers at hand (`x`, `w`,
    /// `y`: its first call), with a temporary workspace of the plan's cap: the fastest the math
    /// allows whose workspace fits the cap the GPU's free memory gives after the search (the
    /// scratch freed); the heuristics' choice stays when the search offers none.
    pub(super) fn search(&mut self, key: &Key, dev: &CudaDevice, x: u64, w: u64, y: u64) -> Result<()> {
        let handle = self.handle(dev)?;
        let stream = dev.cuda_stream();
        let planned = self.plans.get_mut(key).expect("planned before its search");
        planned.searched = true;
        let record = planned.record;
        let Some(plan) = planned.plan.as_mut() else {
            return Ok(());
        };
        let scratch_bytes = self.records[record].workspace_cap_bytes as usize;
        // SAFETY: scratch memory cuDNN writes before it reads.
        let mut scratch = unsafe { dev.alloc::<u8>(scratch_bytes.max(1))? };
        const COUNT: usize = 8;
        // SAFETY: plain C structs; zeroes are valid (cuDNN overwrites the returned ones).
        let mut perf: [sys::cudnnConvolutionFwdAlgoPerf_t; COUNT] = unsafe { std::mem::zeroed() };
        let mut returned = 0;
        {
            let (wsp, _r) = scratch.device_ptr_mut(&stream);
            // SAFETY: live handle and descriptors describing x, w and y; the scratch holds
            // `scratch_bytes`; cuDNN writes y (the op overwrites it right after).
            unsafe {
                sys::cudnnFindConvolutionForwardAlgorithmEx(
                    handle,
                    plan.x.0,
                    x as *const c_void,
                    plan.w.0,
                    w as *const c_void,
                    plan.conv.0,
                    plan.y.0,
                    y as *mut c_void,
                    COUNT as i32,
                    &mut returned,
                    perf.as_mut_ptr(),
                    wsp as *mut c_void,
                    scratch_bytes,
                )
            }
            .result()
            .map_err(|e| err("search (cudnnFindConvolutionForwardAlgorithmEx)", e))?;
        }
        drop(scratch);
        let ranked = &perf[..(returned.max(0) as usize).min(COUNT)];
        let candidates: Vec<Candidate> = ranked.iter().map(candidate).collect();
        // Checked again: the free memory after the search, the scratch given back.
        let cap = cap_now(dev)?;
        let asked = |i: usize| -> Result<usize> {
            // SAFETY: live descriptor.
            unsafe { result::set_convolution_math_type(plan.conv.0, ranked[i].mathType) }
                .map_err(|e| err("math type", e))?;
            // SAFETY: live handle and descriptors.
            unsafe {
                result::get_convolution_forward_workspace_size(
                    handle,
                    plan.x.0,
                    plan.w.0,
                    plan.conv.0,
                    plan.y.0,
                    ranked[i].algo,
                )
            }
            .map_err(|e| err("workspace size", e))
        };
        let chosen = choice::choose_within(&candidates, key.policy, cap, asked)?;
        let r = &mut self.records[record];
        let Some((i, ws, passed)) = chosen else {
            // The heuristics' plan stays: put its math type back on the descriptor.
            let back = match r.math.as_str() {
                "FMA" => MathType::Fma,
                "TENSOR_OP" => MathType::TensorOp,
                _ => MathType::Default,
            };
            // SAFETY: live descriptor.
            unsafe { result::set_convolution_math_type(plan.conv.0, math_type(back)) }
                .map_err(|e| err("math type", e))?;
            r.passed_over = format!(
                "the search offered no algorithm the math allows within the cap of {} MiB after it; {}",
                cap >> 20,
                if r.passed_over.is_empty() {
                    "the heuristics' choice ran"
                } else {
                    r.passed_over.as_str()
                }
            );
            return Ok(());
        };
        let (algo, math) = (
            candidates[i].algo.expect("chosen: known"),
            candidates[i].math.expect("chosen: known"),
        );
        plan.algo = ranked[i].algo;
        plan.workspace = ws;
        planned.used_as = (
            format!("cuDNN {} ({} math, searched)", algo.name(), math.name()),
            algo.family(),
        );
        r.algorithm = algo.name().to_string();
        r.family = algo.family().to_string();
        r.math = math.name().to_string();
        r.workspace_bytes = ws as u64;
        r.heuristic_rank = i;
        r.chosen_by = "search".into();
        r.workspace_cap_bytes = cap as u64;
        r.passed_over = passed.map(|p| p.describe("the search")).unwrap_or_default();
        Ok(())
    }
}
