//! Which physical GPU a case's worker calls `cuda:N` (issue 37): its environment (the run's,
//! plus the case's env variant: [`WorkerEnv`]) may hide or reorder the GPUs with
//! `CUDA_VISIBLE_DEVICES` and `CUDA_DEVICE_ORDER` (NVIDIA; CUDA's default order,
//! `FASTEST_FIRST`, is nvidia-smi's PCI bus order only when every GPU is the same model), or
//! `ROCR_VISIBLE_DEVICES` then `HIP_VISIBLE_DEVICES` (or `CUDA_VISIBLE_DEVICES`, which HIP
//! honours too) on AMD, whose GPUs are numbered as the KFD topology lists them (each tied to
//! its DRM card by `drm_render_minor`). [`resolve`] gives the GPU to read, or why it cannot
//! be told: then telemetry and `--wait-temp` read nothing rather than another GPU.
//!
//! Must not: read the device's state (`sources` does), or guess a mapping.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The environment a case's worker gets: the run's, with the env variant's variables set
/// and its removed ones gone.
#[derive(Debug, Clone, Default)]
pub struct WorkerEnv {
    vars: BTreeMap<String, String>,
    unset: Vec<String>,
}

impl WorkerEnv {
    /// The run's environment with `vars` set and `unset` removed (a case's `env_vars` and
    /// `env_unset`).
    pub fn of(vars: &BTreeMap<String, String>, unset: &[String]) -> WorkerEnv {
        WorkerEnv {
            vars: vars.clone(),
            unset: unset.to_vec(),
        }
    }

    /// A variable as the worker sees it.
    fn get(&self, name: &str) -> Option<String> {
        if self.unset.iter().any(|u| u == name) {
            return None;
        }
        self.vars.get(name).cloned().or_else(|| std::env::var(name).ok())
    }

    /// `NAME=value` of the variables that decide the mapping and are set, for messages.
    fn shown(&self, names: &[&str]) -> String {
        let set: Vec<String> = names
            .iter()
            .filter_map(|n| self.get(n).map(|v| format!("{n}={v}")))
            .collect();
        if set.is_empty() {
            "no visible-devices variable".to_string()
        } else {
            set.join(", ")
        }
    }
}

/// The device to read for a worker's device.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    Cpu,
    /// An AMD GPU: its DRM device folder.
    Amd(PathBuf),
    /// An NVIDIA GPU: its `nvidia-smi` index.
    Nvidia(usize),
}

/// One NVIDIA GPU as `nvidia-smi --query-gpu=index,uuid,name` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct NvidiaGpu {
    pub index: usize,
    pub uuid: String,
    pub name: String,
}

/// The NVIDIA GPUs, in nvidia-smi's order (PCI bus order), listed once per process.
fn nvidia_gpus() -> Result<Vec<NvidiaGpu>, String> {
    static LIST: std::sync::OnceLock<Result<Vec<NvidiaGpu>, String>> = std::sync::OnceLock::new();
    LIST.get_or_init(|| {
        let text =
            crate::machine::system::nvidia_smi_bounded(&["--query-gpu=index,uuid,name", "--format=csv,noheader"])
                .map_err(|e| format!("nvidia-smi cannot list the GPUs: {e}"))?;
        let gpus = parse_nvidia_gpus(&text);
        if gpus.is_empty() {
            return Err("nvidia-smi lists no GPU".to_string());
        }
        Ok(gpus)
    })
    .clone()
}

fn parse_nvidia_gpus(text: &str) -> Vec<NvidiaGpu> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.splitn(3, ',').map(str::trim).collect();
            Some(NvidiaGpu {
                index: f.first()?.parse().ok()?,
                uuid: f.get(1)?.to_string(),
                name: f.get(2)?.to_string(),
            })
        })
        .collect()
}

/// The GPU the worker calls `device` (`cpu`, `cuda:N`), or why it cannot be told.
pub fn resolve(device: &str, env: &WorkerEnv) -> Result<Target, String> {
    if device == "cpu" {
        return Ok(Target::Cpu);
    }
    let Some(n) = device.strip_prefix("cuda:").and_then(|n| n.parse::<usize>().ok()) else {
        return Err(format!(
            "no telemetry for device {device}: only cpu and cuda:N are sampled"
        ));
    };
    let root = crate::machine::sysfs::sysfs_root();
    // With NVIDIA's driver loaded, cuda:N is an NVIDIA GPU (an AMD iGPU beside it is not one
    // of torch's devices); else an AMD GPU when there is one; else nvidia-smi is asked.
    let nvidia_driver = root.join("proc/driver/nvidia/version").exists();
    let amd = amd_gpus(&root);
    if !nvidia_driver && !amd.is_empty() {
        return resolve_amd(n, &amd, env)
            .map(Target::Amd)
            .map_err(|why| format!("no GPU telemetry for {device}: {why}"));
    }
    resolve_nvidia(n, env, nvidia_gpus).map(Target::Nvidia).map_err(|why| {
        format!(
            "no GPU telemetry for {device}: {} amdgpu card(s) with pp_dpm_sclk under {}, and {why}",
            crate::machine::sysfs::drm_cards_with(&root, "pp_dpm_sclk").len(),
            root.join("sys/class/drm").display()
        )
    })
}

/// One entry of a visible-devices list: an index into the devices the runtime orders, or a
/// device named exactly (a UUID).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Entry {
    Index(usize),
    Exact(usize),
}

/// The entries of a visible-devices list, each mapped or why not (`uuids` maps a `GPU-...`).
fn entries(list: &str, uuids: &dyn Fn(&str) -> Result<usize, String>) -> Vec<Result<Entry, String>> {
    list.split(',')
        .map(str::trim)
        .map(|e| {
            if let Ok(i) = e.parse::<usize>() {
                Ok(Entry::Index(i))
            } else if e.starts_with("MIG-") {
                Err(format!(
                    "{e} is a MIG instance: nvidia-smi reads the whole GPU, not the instance"
                ))
            } else if e.starts_with("GPU-") {
                uuids(e).map(Entry::Exact)
            } else {
                Err(format!("entry '{e}' is not a device index or UUID"))
            }
        })
        .collect()
}

/// Entry `n` of `list`, or why not: an entry that cannot be mapped at or before `n` makes
/// `n` unknown (the runtime may stop at it, as CUDA does).
fn pick(list: &[Result<Entry, String>], n: usize, name: &str) -> Result<Entry, String> {
    if let Some(Err(why)) = list.iter().take(n + 1).find(|e| e.is_err()) {
        return Err(format!("{name}: {why}"));
    }
    match list.get(n) {
        Some(Ok(e)) => Ok(*e),
        _ => Err(format!("{name} lists {} device(s): there is no device {n}", list.len())),
    }
}

/// The nvidia-smi index of the worker's `cuda:n`.
fn resolve_nvidia(n: usize, env: &WorkerEnv, list: fn() -> Result<Vec<NvidiaGpu>, String>) -> Result<usize, String> {
    let shown = env.shown(&["CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"]);
    let by_bus = match env.get("CUDA_DEVICE_ORDER").as_deref().map(str::trim) {
        Some("PCI_BUS_ID") => true,
        None | Some("FASTEST_FIRST") | Some("") => false,
        Some(other) => return Err(format!("CUDA_DEVICE_ORDER={other} is not an order CUDA knows")),
    };
    // Even without either variable, the list tells whether CUDA's order is nvidia-smi's.
    let gpus = list()?;
    let uuid = |e: &str| -> Result<usize, String> {
        let found: Vec<&NvidiaGpu> = gpus.iter().filter(|g| g.uuid.starts_with(e)).collect();
        match found.as_slice() {
            [g] => Ok(g.index),
            [] => Err(format!("no GPU has UUID {e}")),
            _ => Err(format!("{e} names {} GPUs", found.len())),
        }
    };
    let entry = match env.get("CUDA_VISIBLE_DEVICES") {
        None if n < gpus.len() => Entry::Index(n),
        None => return Err(format!("nvidia-smi lists {} GPU(s): there is no cuda:{n}", gpus.len())),
        Some(v) => pick(&entries(&v, &uuid), n, &shown)?,
    };
    let physical = match entry {
        Entry::Exact(i) => i,
        // CUDA's default order puts the fastest GPU first; nvidia-smi's is the PCI bus order;
        // they agree when every GPU is the same model (ties go by bus id).
        Entry::Index(_) if !by_bus && gpus.iter().any(|g| g.name != gpus[0].name) => {
            let names: Vec<&str> = gpus.iter().map(|g| g.name.as_str()).collect();
            return Err(format!(
                "{shown}: CUDA orders these GPUs fastest first ({}), not as nvidia-smi does (PCI bus \
                 order); set CUDA_DEVICE_ORDER=PCI_BUS_ID to have them sampled",
                names.join(", ")
            ));
        }
        Entry::Index(i) => i,
    };
    gpus.iter()
        .find(|g| g.index == physical)
        .map(|g| g.index)
        .ok_or_else(|| format!("{shown}: nvidia-smi lists {} GPU(s), not GPU {physical}", gpus.len()))
}

/// The AMD GPUs in the order ROCm numbers them: the KFD topology's GPU nodes, each tied to
/// its DRM device folder by `drm_render_minor` (`None` when it has none, or no
/// `pp_dpm_sclk`); without a KFD topology, the amdgpu cards in card-number order.
fn amd_gpus(root: &Path) -> Vec<Option<PathBuf>> {
    let nodes = crate::machine::sysfs::kfd_gpu_nodes(root);
    if nodes.is_empty() {
        return crate::machine::sysfs::drm_cards_with(root, "pp_dpm_sclk")
            .into_iter()
            .map(Some)
            .collect();
    }
    nodes
        .into_iter()
        .map(|props| {
            let minor = props.get("drm_render_minor")?;
            let dir = root.join(format!("sys/class/drm/renderD{minor}/device"));
            dir.join("pp_dpm_sclk").exists().then_some(dir)
        })
        .collect()
}

/// The DRM device folder of the worker's `cuda:n` on AMD.
fn resolve_amd(n: usize, gpus: &[Option<PathBuf>], env: &WorkerEnv) -> Result<PathBuf, String> {
    let shown = env.shown(&["ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"]);
    let no_uuid = |e: &str| Err(format!("{e}: UUIDs are not mapped to DRM cards here"));
    let index = |e: Entry| match e {
        Entry::Index(i) | Entry::Exact(i) => i,
    };
    // ROCr picks among all GPUs (every entry must be known: one it drops shifts the rest),
    // then HIP among those.
    let rocr: Vec<usize> = match env.get("ROCR_VISIBLE_DEVICES") {
        None => (0..gpus.len()).collect(),
        Some(v) => {
            let list = entries(&v, &no_uuid);
            let mut known = Vec::new();
            for i in 0..list.len() {
                let g = index(pick(&list, i, &shown)?);
                if g >= gpus.len() {
                    return Err(format!("{shown}: there is no AMD GPU {g} ({} found)", gpus.len()));
                }
                known.push(g);
            }
            known
        }
    };
    let hip = match (env.get("HIP_VISIBLE_DEVICES"), env.get("CUDA_VISIBLE_DEVICES")) {
        (Some(h), Some(c)) if h.trim() != c.trim() => {
            return Err(format!(
                "{shown}: both HIP_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES are set and differ"
            ))
        }
        (Some(v), _) | (None, Some(v)) => Some(v),
        (None, None) => None,
    };
    let i = match hip {
        None => n,
        Some(v) => index(pick(&entries(&v, &no_uuid), n, &shown)?),
    };
    let Some(&g) = rocr.get(i) else {
        return Err(format!(
            "{} AMD GPU(s) visible ({shown}): there is no cuda:{n}",
            rocr.len()
        ));
    };
    gpus[g]
        .clone()
        .ok_or_else(|| format!("{shown}: AMD GPU {g} has no DRM card with pp_dpm_sclk"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> WorkerEnv {
        let names = [
            "CUDA_VISIBLE_DEVICES",
            "CUDA_DEVICE_ORDER",
            "HIP_VISIBLE_DEVICES",
            "ROCR_VISIBLE_DEVICES",
        ];
        WorkerEnv {
            vars: vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            // The test process's own values never count.
            unset: names
                .iter()
                .filter(|n| !vars.iter().any(|(k, _)| k == *n))
                .map(|n| n.to_string())
                .collect(),
        }
    }

    fn gpu(index: usize, name: &str) -> NvidiaGpu {
        NvidiaGpu {
            index,
            uuid: format!("GPU-{index}{index}aa-bb"),
            name: name.to_string(),
        }
    }

    fn same() -> Result<Vec<NvidiaGpu>, String> {
        Ok(vec![gpu(0, "H100"), gpu(1, "H100"), gpu(2, "H100")])
    }

    fn mixed() -> Result<Vec<NvidiaGpu>, String> {
        Ok(vec![gpu(0, "A100"), gpu(1, "H100")])
    }

    #[test]
    fn cuda_visible_devices_and_the_order_map_the_workers_gpu() {
        assert_eq!(resolve_nvidia(0, &env(&[]), same), Ok(0));
        assert_eq!(resolve_nvidia(2, &env(&[]), same), Ok(2));
        assert_eq!(resolve_nvidia(0, &env(&[("CUDA_VISIBLE_DEVICES", "1")]), same), Ok(1));
        assert_eq!(resolve_nvidia(1, &env(&[("CUDA_VISIBLE_DEVICES", "2,0")]), same), Ok(0));
        assert_eq!(
            resolve_nvidia(0, &env(&[("CUDA_VISIBLE_DEVICES", "GPU-11aa")]), mixed),
            Ok(1)
        );
        // Fastest first, CUDA's default, is not nvidia-smi's order when the GPUs differ.
        let e = resolve_nvidia(0, &env(&[("CUDA_VISIBLE_DEVICES", "1")]), mixed).unwrap_err();
        assert!(
            e.contains("fastest first") && e.contains("CUDA_VISIBLE_DEVICES=1"),
            "{e}"
        );
        let ff = env(&[("CUDA_DEVICE_ORDER", "FASTEST_FIRST")]);
        assert!(resolve_nvidia(0, &ff, mixed).is_err());
        let bus = env(&[("CUDA_DEVICE_ORDER", "PCI_BUS_ID"), ("CUDA_VISIBLE_DEVICES", "1")]);
        assert_eq!(resolve_nvidia(0, &bus, mixed), Ok(1));
        // A UUID is exact in any order.
        assert_eq!(
            resolve_nvidia(0, &env(&[("CUDA_VISIBLE_DEVICES", "GPU-00")]), mixed),
            Ok(0)
        );
        for (list, n, says) in [
            ("MIG-abc", 0, "MIG instance"),
            ("1,x", 1, "not a device index"),
            ("x,1", 1, "not a device index"),
            ("1", 1, "lists 1 device(s)"),
            ("7", 0, "not GPU 7"),
            ("GPU-99", 0, "no GPU has UUID"),
            ("", 0, "not a device index"),
        ] {
            let e = resolve_nvidia(n, &env(&[("CUDA_VISIBLE_DEVICES", list)]), same).unwrap_err();
            assert!(e.contains(says), "{list} {n}: {e}");
        }
        // An entry past the one asked for does not matter.
        assert_eq!(
            resolve_nvidia(0, &env(&[("CUDA_VISIBLE_DEVICES", "2,MIG-x")]), same),
            Ok(2)
        );
        assert!(resolve_nvidia(3, &env(&[]), same).unwrap_err().contains("no cuda:3"));
    }

    #[test]
    fn rocr_then_hip_visible_devices_map_the_workers_amd_gpu() {
        let gpus: Vec<Option<PathBuf>> = vec![Some("c0".into()), Some("c1".into()), None, Some("c3".into())];
        let at = |n, vars: &[(&str, &str)]| resolve_amd(n, &gpus, &env(vars));
        assert_eq!(at(1, &[]), Ok(PathBuf::from("c1")));
        assert_eq!(at(0, &[("HIP_VISIBLE_DEVICES", "3")]), Ok(PathBuf::from("c3")));
        assert_eq!(at(0, &[("CUDA_VISIBLE_DEVICES", "1")]), Ok(PathBuf::from("c1")));
        assert_eq!(at(0, &[("ROCR_VISIBLE_DEVICES", "3,1")]), Ok(PathBuf::from("c3")));
        let both = [("ROCR_VISIBLE_DEVICES", "3,1"), ("HIP_VISIBLE_DEVICES", "1")];
        assert_eq!(at(0, &both), Ok(PathBuf::from("c1")));
        assert!(at(0, &[("HIP_VISIBLE_DEVICES", "2")])
            .unwrap_err()
            .contains("no DRM card"));
        assert!(at(0, &[("HIP_VISIBLE_DEVICES", "1"), ("CUDA_VISIBLE_DEVICES", "0")])
            .unwrap_err()
            .contains("differ"));
        assert!(at(0, &[("ROCR_VISIBLE_DEVICES", "GPU-1234")])
            .unwrap_err()
            .contains("UUIDs"));
        assert!(at(1, &[("HIP_VISIBLE_DEVICES", "0")])
            .unwrap_err()
            .contains("no device 1"));
        assert!(at(0, &[("ROCR_VISIBLE_DEVICES", "5")])
            .unwrap_err()
            .contains("no AMD GPU 5"));
        assert!(at(4, &[]).unwrap_err().contains("no cuda:4"));
    }
}
