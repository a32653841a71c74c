//! What a log shows, in one line each, beside what `logs` lists: when most convolution calls
//! ran MIOpen's naive fallback (the direct convolution MIOpen runs when no tuned solver
//! applies, the slowest it has: the 3D convolutions of the Wan VAE on Strix Halo,
//! ROCm/rocm-libraries #1329), and what the tool can try instead.
//!
//! Calls are the solver runs MIOpen logged (`Chosen Algorithm`, immediate mode's
//! `solver_id`, the execution summary); a log without them counts the kernels MIOpen said it
//! launched (`naive_conv_*` among the convolution kernels). Nothing is concluded from fewer
//! than 2 calls, or when the naive ones are half or fewer.
//!
//! Must not: read logs or print.
use super::logs_json::MiopenJson;

/// The conclusions of what MIOpen logged (none when nothing stands out).
pub fn conclusions(m: &MiopenJson) -> Vec<String> {
    naive(m).into_iter().collect()
}

/// Whether a solver or kernel is MIOpen's naive fallback.
fn is_naive(name: &str) -> bool {
    name.to_ascii_lowercase().contains("naive")
}

/// A kernel of a convolution (any family but the GEMM-free others).
fn is_conv_kernel(name: &str) -> bool {
    let family = crate::report::profile::kernels::family(name);
    name.to_ascii_lowercase().contains("conv") || family == "winograd" || family.starts_with("implicit-gemm")
}

/// "most convolution calls ran the naive fallback", with the calls and what to try.
fn naive(m: &MiopenJson) -> Option<String> {
    let sum = |it: &mut dyn Iterator<Item = u64>| it.fold(0u64, |t, n| t.saturating_add(n));
    let (naive, all, what, names) = if !m.solvers.is_empty() {
        let naive: Vec<(&String, &u64)> = m.solvers.iter().filter(|(n, _)| is_naive(n)).collect();
        (
            sum(&mut naive.iter().map(|(_, c)| **c)),
            sum(&mut m.solvers.values().copied()),
            "convolution calls MIOpen logged",
            naive.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        )
    } else {
        let conv: Vec<_> = m.kernels.iter().filter(|k| is_conv_kernel(&k.name)).collect();
        let naive: Vec<_> = conv.iter().filter(|k| is_naive(&k.name)).collect();
        (
            sum(&mut naive.iter().map(|k| k.count)),
            sum(&mut conv.iter().map(|k| k.count)),
            "convolution kernels MIOpen launched",
            naive.iter().map(|k| k.name.as_str()).collect(),
        )
    };
    if all < 2 || naive.saturating_mul(2) <= all {
        return None;
    }
    // The variable that turns each direction's naive solver off.
    let mut vars: Vec<&str> = Vec::new();
    for name in &names {
        let n = name.to_ascii_lowercase();
        let var = if n.contains("bwd") {
            "MIOPEN_DEBUG_CONV_DIRECT_NAIVE_CONV_BWD"
        } else if n.contains("wrw") {
            "MIOPEN_DEBUG_CONV_DIRECT_NAIVE_CONV_WRW"
        } else {
            "MIOPEN_DEBUG_CONV_DIRECT_NAIVE_CONV_FWD"
        };
        if !vars.contains(&var) {
            vars.push(var);
        }
    }
    let pct = naive as f64 / all as f64 * 100.0;
    Some(format!(
        "{naive} of {all} {what} ({pct:.0}%) ran MIOpen's naive fallback ({}), its slowest solver; to try: \
         `run --conv3d split` (3D convolutions as 2D ones, which MIOpen has tuned solvers for), `--env-var {}=0,@unset` \
         (the naive solver off, so MIOpen picks another; configs/gfx1151-miopen.toml), `--cudnn off` (PyTorch's own \
         convolutions, MIOpen not called)",
        crate::util::format::printable(&names.join(", ")),
        vars.join("=0,@unset --env-var "),
    ))
}
