//! The MIOpen join: each convolution layer of a profile matched to the `MIOpenDriver`
//! command MIOpen logged for its problem (`MIOPEN_ENABLE_LOGGING_CMD=1`, parsed by
//! `run::miopen` into the case's `miopen` record), by the problem's shape: batch and input
//! channels equal, and each input extent of the command the layer's input extent plus at
//! most the padding its filter needs (the causal convs pad before calling the convolution,
//! and the time dimension carries up to two cached frames). The solver is the one MIOpen
//! logged after that command (`run::miopen` ties them by order), else the log's only one.
//! The costliest convolutions get a command that reproduces them alone: the logged
//! command, else a short torch snippet with the shape, dtype and layout.
//!
//! Must not: read processes or files.
use crate::report::profile::{CaseProfile, LayerRow, SolverJoin};
use crate::report::MiopenLog;

/// A convolution problem as a `MIOpenDriver conv` command states it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DriverProblem {
    pub n: usize,
    pub c: usize,
    pub k: usize,
    /// Input extents `[d, h, w]` (`d` 1 for a 2D command).
    pub input: [usize; 3],
    /// Filter extents `[d, y, x]`.
    pub filter: [usize; 3],
}

/// Parse `... MIOpenDriver conv[fp16|bfp16] -n 1 -c 96 --in_d 6 -H 482 -W 834 -k 96
/// --fil_d 3 -y 3 -x 3 ...`; `None` when it is no convolution command.
pub fn parse_command(cmd: &str) -> Option<DriverProblem> {
    let mut words = cmd.split_whitespace().skip_while(|w| !w.ends_with("MIOpenDriver"));
    words.next()?;
    if !words.next()?.starts_with("conv") {
        return None;
    }
    let words: Vec<&str> = words.collect();
    let get = |flags: &[&str]| -> Option<usize> {
        let i = words.iter().position(|w| flags.contains(w))?;
        words.get(i + 1)?.parse().ok()
    };
    Some(DriverProblem {
        n: get(&["-n", "--batchsize"]).unwrap_or(1),
        c: get(&["-c", "--in_channels"])?,
        k: get(&["-k", "--out_channels"]).unwrap_or(0),
        input: [
            get(&["--in_d"]).unwrap_or(1),
            get(&["-H", "--in_h"])?,
            get(&["-W", "--in_w"])?,
        ],
        filter: [
            get(&["--fil_d"]).unwrap_or(1),
            get(&["-y", "--fil_h"]).unwrap_or(1),
            get(&["-x", "--fil_w"]).unwrap_or(1),
        ],
    })
}

/// Whether `p` is the problem of a layer whose input is `shape` (`[n, c, t, h, w]` or
/// `[n, c, h, w]`, before the layer's own padding).
pub fn matches(p: &DriverProblem, shape: &[usize]) -> bool {
    let (n, c, t, h, w) = match shape {
        [n, c, t, h, w] => (*n, *c, *t, *h, *w),
        [n, c, h, w] => (*n, *c, 1, *h, *w),
        _ => return false,
    };
    // The command's extent: the layer's, plus at most what its filter pads (and `extra`:
    // a downsample's one-sided zero pad, or the time dimension's cached frames).
    let within = |cmd: usize, x: usize, fil: usize, extra: usize| cmd >= x && cmd <= x + fil.saturating_sub(1) + extra;
    let spatial = within(p.input[1], h, p.filter[1], 1) && within(p.input[2], w, p.filter[2], 1);
    // A conv2d over every frame runs with the frames folded into the batch.
    let folded = p.input[0] == 1 && p.filter[0] == 1 && p.n == n * t;
    let full = p.n == n && within(p.input[0], t, p.filter[0], 2);
    p.c == c && spatial && (full || folded)
}

/// How many of the costliest convolutions of a pass get a reproducer.
pub const REPRODUCE_TOP: usize = 3;

/// Join the profile's convolution layers to `log`'s commands and solver, and give the
/// costliest convolutions of each pass their reproducer.
pub fn join(profile: &mut CaseProfile, log: &MiopenLog) {
    let problems: Vec<(DriverProblem, &String)> = log
        .driver_commands
        .iter()
        .filter_map(|c| parse_command(c).map(|p| (p, c)))
        .collect();
    let only_solver = (log.solvers.len() == 1)
        .then(|| log.solvers.keys().next().cloned())
        .flatten();
    for pass in [&mut profile.encode, &mut profile.decode].into_iter().flatten() {
        for row in pass.layers.iter_mut().filter(|r| r.op.starts_with("conv")) {
            let command = problems
                .iter()
                .find(|(p, _)| matches(p, &row.input_shape))
                .map(|(_, c)| (*c).clone());
            // The solver of this problem's own calls (the one they ran most), else the log's
            // single solver.
            let solver = command
                .as_ref()
                .and_then(|c| log.solver_by_command.get(c))
                .and_then(|m| {
                    m.iter()
                        .max_by(|x, y| x.1.cmp(y.1).then(y.0.cmp(x.0)))
                        .map(|(s, _)| s.clone())
                })
                .or_else(|| only_solver.clone());
            if command.is_some() || solver.is_some() {
                row.solver = Some(SolverJoin {
                    family: solver.as_deref().map(|s| super::kernels::family(s).to_string()),
                    solver,
                    driver_command: command,
                });
            }
        }
    }
}

/// A short torch snippet that runs one convolution like `row` alone.
pub fn torch_snippet(row: &LayerRow, device: &str) -> String {
    let dtype = match row.dtype.as_str() {
        "bf16" | "bfloat16" => "torch.bfloat16",
        "f16" | "float16" => "torch.float16",
        _ => "torch.float32",
    };
    let shape = row
        .input_shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let c = row.input_shape.get(1).copied().unwrap_or(1);
    let (conv, k) = if row.op == "conv2d" || row.input_shape.len() == 4 {
        ("conv2d", "3, 3")
    } else if row.layer.ends_with("time_conv") {
        ("conv3d", "3, 1, 1")
    } else if row.layer.ends_with("shortcut") || row.layer == "conv1" || row.layer == "conv2" {
        ("conv3d", "1, 1, 1")
    } else {
        ("conv3d", "3, 3, 3")
    };
    let device = if device.starts_with("cuda") || device.starts_with("cpu") {
        device
    } else {
        "cpu"
    };
    format!(
        "import torch; x = torch.randn({shape}, dtype={dtype}, device='{device}'); \
         w = torch.randn({c}, {c}, {k}, dtype={dtype}, device='{device}'); \
         torch.nn.functional.{conv}(x, w); torch.cuda.synchronize() if x.is_cuda else None"
    )
}

/// Give the [`REPRODUCE_TOP`] costliest convolutions of each pass their reproducer: the
/// logged `MIOpenDriver` command, else [`torch_snippet`].
pub fn reproducers(profile: &mut CaseProfile, device: &str) {
    for pass in [&mut profile.encode, &mut profile.decode].into_iter().flatten() {
        let mut convs: Vec<&mut LayerRow> = pass.layers.iter_mut().filter(|r| r.op.starts_with("conv")).collect();
        convs.sort_by(|a, b| b.ms.total_cmp(&a.ms));
        for row in convs.into_iter().take(REPRODUCE_TOP) {
            let logged = row.solver.as_ref().and_then(|s| s.driver_command.clone());
            row.reproduce = Some(logged.unwrap_or_else(|| torch_snippet(row, device)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::profile::PassProfile;

    // The formats MIOpen logs with MIOPEN_ENABLE_LOGGING_CMD=1 and MIOPEN_LOG_LEVEL=5.
    const CMD_3D: &str = "./bin/MIOpenDriver conv -n 1 -c 96 --in_d 7 -H 66 -W 66 -k 96 --fil_d 3 -y 3 -x 3 \
        --pad_d 0 -p 0 -q 0 --conv_stride_d 1 -u 1 -v 1 --dilation_d 1 -l 1 -j 1 --spatial_dim 3 -m conv -g 1 -F 1 -t 1";
    const CMD_2D: &str = "./bin/MIOpenDriver convbfp16 -n 5 -c 192 -H 64 -W 64 -k 192 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 \
        -l 1 -j 1 -m conv -g 1 -F 1 -t 1";

    fn row(layer: &str, op: &str, shape: &[usize], ms: f64) -> LayerRow {
        LayerRow {
            layer: layer.into(),
            op: op.into(),
            input_shape: shape.to_vec(),
            dtype: "f32".into(),
            calls: 1,
            ms,
            ..Default::default()
        }
    }

    #[test]
    fn driver_commands_parse_in_2d_and_3d() {
        let p = parse_command(CMD_3D).unwrap();
        assert_eq!((p.n, p.c, p.k, p.input, p.filter), (1, 96, 96, [7, 66, 66], [3, 3, 3]));
        let p = parse_command(CMD_2D).unwrap();
        assert_eq!((p.n, p.c, p.input, p.filter), (5, 192, [1, 64, 64], [1, 3, 3]));
        assert_eq!(parse_command("./bin/MIOpenDriver pool -n 1 -c 3"), None);
        assert_eq!(parse_command("./bin/MIOpenDriver conv -n 1"), None);
    }

    #[test]
    fn each_layer_gets_the_solver_of_its_own_problem() {
        // Issue 47: with several solvers in the log the join named none.
        let mut log = MiopenLog {
            driver_commands: vec![CMD_2D.to_string(), CMD_3D.to_string()],
            ..Default::default()
        };
        log.solvers.insert("ConvBinWinogradRxSf2x3g1".into(), 3);
        log.solvers.insert("GemmFwdRest".into(), 1);
        log.solver_by_command
            .insert(CMD_3D.into(), [("GemmFwdRest".to_string(), 1)].into());
        log.solver_by_command
            .insert(CMD_2D.into(), [("ConvBinWinogradRxSf2x3g1".to_string(), 3)].into());
        let mut profile = CaseProfile {
            decode: Some(PassProfile {
                layers: vec![
                    row("decoder.upsamples.0.residual.2", "conv3d", &[1, 96, 5, 64, 64], 9.0),
                    row("decoder.upsamples.3.resample.1", "conv2d", &[1, 192, 5, 64, 64], 4.0),
                ],
                ..Default::default()
            }),
            ..Default::default()
        };
        join(&mut profile, &log);
        let layers = &profile.decode.as_ref().unwrap().layers;
        assert_eq!(
            layers[0].solver.as_ref().unwrap().solver.as_deref(),
            Some("GemmFwdRest")
        );
        assert_eq!(
            layers[1].solver.as_ref().unwrap().solver.as_deref(),
            Some("ConvBinWinogradRxSf2x3g1")
        );
        assert_eq!(layers[1].solver.as_ref().unwrap().family.as_deref(), Some("winograd"));
    }

    #[test]
    fn conv_layers_join_their_logged_command_and_the_only_solver() {
        let mut log = MiopenLog {
            driver_commands: vec![CMD_2D.to_string(), CMD_3D.to_string()],
            ..Default::default()
        };
        log.solvers.insert("ConvDirectNaiveConvFwd".into(), 12);
        let mut profile = CaseProfile {
            decode: Some(PassProfile {
                layers: vec![
                    // causal conv: 2 cached frames in front, 1 pixel each side in space.
                    row("decoder.upsamples.0.residual.2", "conv3d", &[1, 96, 5, 64, 64], 9.0),
                    // a resample's conv2d over 5 frames, folded into the batch.
                    row("decoder.upsamples.3.resample.1", "conv2d", &[1, 192, 5, 64, 64], 4.0),
                    row("decoder.upsamples.0.residual.0", "norm", &[1, 96, 5, 64, 64], 1.0),
                    row("decoder.head.2", "conv3d", &[1, 48, 5, 64, 64], 2.0),
                ],
                ..Default::default()
            }),
            ..Default::default()
        };
        join(&mut profile, &log);
        reproducers(&mut profile, "cuda:0");
        let layers = &profile.decode.as_ref().unwrap().layers;
        let s = layers[0].solver.as_ref().unwrap();
        assert_eq!(s.driver_command.as_deref(), Some(CMD_3D));
        assert_eq!(s.solver.as_deref(), Some("ConvDirectNaiveConvFwd"));
        assert_eq!(s.family.as_deref(), Some("naive/direct"));
        assert_eq!(
            layers[1].solver.as_ref().unwrap().driver_command.as_deref(),
            Some(CMD_2D)
        );
        assert_eq!(layers[2].solver, None, "a norm is no convolution");
        assert_eq!(
            layers[3].solver.as_ref().unwrap().driver_command,
            None,
            "48 channels: no command"
        );
        // Reproducers: the logged command, else a torch snippet with the shape and dtype.
        assert_eq!(layers[0].reproduce.as_deref(), Some(CMD_3D));
        let snippet = layers[3].reproduce.as_deref().unwrap();
        assert!(
            snippet.contains("torch.randn(1, 48, 5, 64, 64, dtype=torch.float32, device='cuda:0')"),
            "{snippet}"
        );
        assert!(snippet.contains("conv3d"), "{snippet}");
        assert_eq!(layers[2].reproduce, None);
    }

    #[test]
    fn several_solvers_leave_the_solver_unnamed() {
        let mut log = MiopenLog {
            driver_commands: vec![CMD_3D.to_string()],
            ..Default::default()
        };
        log.solvers.insert("GemmFwdRest".into(), 3);
        log.solvers.insert("ConvBinWinogradRxSf2x3g1".into(), 3);
        let mut profile = CaseProfile {
            encode: Some(PassProfile {
                layers: vec![row("encoder.middle.0.residual.2", "conv3d", &[1, 96, 5, 64, 64], 1.0)],
                ..Default::default()
            }),
            ..Default::default()
        };
        join(&mut profile, &log);
        let s = profile.encode.unwrap().layers[0].solver.clone().unwrap();
        assert_eq!((s.solver, s.driver_command.as_deref()), (None, Some(CMD_3D)));
    }
}
