//! The engines: one description per engine ([`EngineSpec`], listed in [`ENGINES`]) that the
//! rest of the code queries instead of naming engines: how its worker starts, which knobs
//! and axis values it supports, how its context is recorded in the report, and which engine
//! its outputs are cross-checked against. Also owns what every worker shares: the parent <->
//! worker wire format ([`protocol`], `docs/worker-protocol.md`), the input clip ([`clip`])
//! and the files the parent writes once for every engine ([`shared_files`]); and the two
//! workers: this binary's ([`candle`]) and the shipped Python worker ([`python`]); which
//! case of a workload is the default ([`defaults`]), and which environment variables can act
//! on an engine's case ([`env_reach`]).
//!
//! Adding an engine is one entry in [`ENGINES`] (and its name in `values::Engine`); a
//! Python engine also adds its `.py` module(s) to `python/`, listed in its entry with the
//! one the worker imports to make it (`docs/architecture.md` has the recipe).
//!
//! Must not: schedule or spawn cases (that is `bench`) or write the report.
use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::machine::system::GpuVendors;
use crate::report::settings::{CaseSettings, Knobs};
use crate::report::values::Engine;
use crate::util::error::UserError;

pub mod candle;
pub mod clip;
pub mod comfyui_nodes;
pub mod defaults;
pub mod env_reach;
pub mod preparer;
pub mod protocol;
pub mod python;
pub mod shared_files;

/// Everything the rest of the program knows about one engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineSpec {
    /// The engine (its `name()` is the flag, TOML, JSON and case-id spelling).
    pub engine: Engine,
    /// How its worker process starts.
    pub worker: WorkerKind,
    /// Whether the PyTorch knobs (`cudnn`, `cudnn_benchmark`, `miopen_db`) act in it; they
    /// act on a GPU (`cuda:N`) only, and are `n/a` (not multiplied into cases) elsewhere.
    pub knobs: bool,
    /// Whether it runs chunks other than 1 (latent frames per decoder call); a case with
    /// another chunk is `unsupported` without starting a worker.
    pub any_chunk: bool,
    /// The `--torch-precision` modes it understands, its default first; the run-wide mode
    /// reaches its workers only when listed here (empty: the flag does not apply).
    pub precision_modes: &'static [&'static str],
    /// Device kinds it runs on (`cpu`, `cuda`, `metal`); a case on another is
    /// `unsupported` without starting a worker.
    pub devices: &'static [&'static str],
    /// The keys of `engines.<name>` in the report: the context its worker reports (the
    /// result's `python` object) with its first case; empty: it reports none.
    pub context: &'static [&'static str],
    /// Whether it runs precision `auto` (no switch: its own code picks the dtype); other
    /// engines' `auto` cases are `unsupported` without a worker.
    pub own_dtype: bool,
    /// The engine whose decoded video its reference cases are compared with
    /// (`quality.cross_engine`) when that engine ran the same settings.
    pub cross_check: Option<Engine>,
    /// A folder of the user's own install that it runs (given by a flag of its own).
    pub folder: Option<EngineFolder>,
    /// How the answer of a run (`answer::apply`) tells the user to apply a winning case of
    /// this engine outside the tool.
    pub apply: ApplyAs,
    /// Whether it may encode the latents that decode-only cases share (an untimed fp32 encode
    /// per frames and size): [`preparer::latent_preparer`] picks this binary's worker where the
    /// build has the run's device, else the first such engine of the run that runs there.
    pub prepares_latents: bool,
    /// Whether its worker may call hipBLASLt: PyTorch's GEMMs on a ROCm build, on an AMD GPU
    /// (`cuda:N` there). Only then does a case record the GEMMs hipBLASLt logged
    /// (`run::gemm_log`); this tool's own code (candle) never calls it, nor does anything on
    /// the CPU.
    pub calls_hipblaslt: bool,
    /// What it is, in a few words, for `--help` lists of the engines ([`engines_help`]).
    pub about: &'static str,
}

/// How a winning case of an engine is applied outside this tool (the steps of the answer's
/// `apply`, `docs/answer.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyAs {
    /// This tool's `run` flags that reproduce the case (the engine is this tool's own code).
    ToolFlags,
    /// PyTorch code: the dtype (cast or autocast), the tiling rule, chunking and the
    /// `torch.backends.cudnn` knobs.
    PyTorch,
    /// As [`ApplyAs::PyTorch`], with diffusers' own tiling call (`vae.enable_tiling(...)`).
    Diffusers,
    /// ComfyUI: its VAE node and the node's parameters, and the launch switch of the
    /// precision (`--bf16-vae`, ...; none for `auto`).
    ComfyuiNodes,
}

/// How an engine's worker process starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerKind {
    /// This binary's hidden `worker` command ([`candle`]): it builds synthetic weights and
    /// the input clip itself.
    ThisBinary,
    /// The shipped Python worker ([`python`]) under the run's interpreter, which imports
    /// the engine's own `modules` (shipped beside the common files). It reads weights and
    /// clips from files only ([`shared_files`]). `module` (one of `modules`, without `.py`)
    /// is the one the worker imports to make the engine: it reaches the worker as the spec's
    /// `python_module` (validate mode: `--module`), and the module provides the factory and
    /// its precision rule (`docs/worker-protocol.md`, section 9).
    Python {
        module: &'static str,
        modules: &'static [python::PyFile],
    },
}

/// A folder the user gives for an engine that runs code of their own install, with the flag
/// `--<flag> DIR` of `run` and `validate`; it reaches the worker as the spec's `engine_dir`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineFolder {
    /// The flag's name without dashes (`comfyui` for `--comfyui DIR`).
    pub flag: &'static str,
    /// What the folder holds, for `--help` and errors (e.g. `a ComfyUI checkout`).
    pub holds: &'static str,
}

/// The context keys the Python worker reports for a PyTorch engine.
const TORCH_CONTEXT: &[&str] = &[
    "python",
    "python_executable",
    "torch",
    "hip",
    "cuda",
    "cudnn_version",
    "diffusers",
    "threads",
    "device_name",
    "gcn_arch_name",
    "compute_capability",
    "nvidia_driver",
    "total_memory_bytes",
];

/// Every engine, in the order tables list them.
pub const ENGINES: &[EngineSpec] = &[
    EngineSpec {
        engine: Engine::Candle,
        worker: WorkerKind::ThisBinary,
        knobs: false,
        any_chunk: true,
        precision_modes: &[],
        devices: &["cpu", "cuda", "metal"],
        context: &[],
        own_dtype: false,
        cross_check: None,
        folder: None,
        apply: ApplyAs::ToolFlags,
        // Needs no interpreter: the first choice wherever this build has the device.
        prepares_latents: true,
        calls_hipblaslt: false,
        about: "this tool's Rust port",
    },
    EngineSpec {
        engine: Engine::Torch,
        worker: WorkerKind::Python {
            module: "wan_torch",
            modules: &[
                python::PyFile::new("wan_torch.py", include_str!("python/wan_torch.py")),
                python::PyFile::new("wan_blocks.py", include_str!("python/wan_blocks.py")),
                python::PyFile::new("wan21_torch.py", include_str!("python/wan21_torch.py")),
                python::PyFile::new("wan22_torch.py", include_str!("python/wan22_torch.py")),
            ],
        },
        knobs: true,
        any_chunk: true,
        precision_modes: &["autocast", "cast"],
        devices: &["cpu", "cuda"],
        context: TORCH_CONTEXT,
        own_dtype: false,
        cross_check: Some(Engine::Candle),
        folder: None,
        apply: ApplyAs::PyTorch,
        prepares_latents: true,
        calls_hipblaslt: true,
        about: "PyTorch ports of the official Wan code",
    },
    EngineSpec {
        engine: Engine::Diffusers,
        worker: WorkerKind::Python {
            module: "diffusers_engine",
            modules: &[python::PyFile::new(
                "diffusers_engine.py",
                include_str!("python/diffusers_engine.py"),
            )],
        },
        knobs: true,
        // AutoencoderKLWan always decodes one latent frame per call.
        any_chunk: false,
        precision_modes: &["cast", "autocast"],
        devices: &["cpu", "cuda"],
        context: TORCH_CONTEXT,
        own_dtype: false,
        cross_check: Some(Engine::Candle),
        folder: None,
        apply: ApplyAs::Diffusers,
        prepares_latents: true,
        calls_hipblaslt: true,
        about: "diffusers' AutoencoderKLWan",
    },
    EngineSpec {
        engine: Engine::Comfyui,
        worker: WorkerKind::Python {
            module: "comfyui_engine",
            modules: &[python::PyFile::new(
                "comfyui_engine.py",
                include_str!("python/comfyui_engine.py"),
            )],
        },
        knobs: true,
        // ComfyUI's Wan VAE decodes one latent frame per call.
        any_chunk: false,
        precision_modes: &[],
        devices: &["cpu", "cuda"],
        context: COMFYUI_CONTEXT,
        own_dtype: true,
        cross_check: Some(Engine::Candle),
        folder: Some(EngineFolder {
            flag: "comfyui",
            holds: "a ComfyUI folder (checkout or install)",
        }),
        apply: ApplyAs::ComfyuiNodes,
        prepares_latents: true,
        calls_hipblaslt: true,
        about: "the user's ComfyUI",
    },
];

/// The context keys of the comfyui engine: PyTorch's, plus the ComfyUI it ran.
const COMFYUI_CONTEXT: &[&str] = &[
    "python",
    "python_executable",
    "torch",
    "hip",
    "cuda",
    "cudnn_version",
    "diffusers",
    "threads",
    "device_name",
    "gcn_arch_name",
    "compute_capability",
    "nvidia_driver",
    "total_memory_bytes",
    "comfyui_version",
    "comfyui_commit",
    "comfyui_dir",
];

/// The description of `engine`.
pub fn spec(engine: Engine) -> &'static EngineSpec {
    ENGINES
        .iter()
        .find(|s| s.engine == engine)
        .expect("every values::Engine has an entry in ENGINES (checked by a test)")
}

/// The engines for a `--help` text: `candle (this tool's Rust port), torch (...), ...,
/// comfyui (the user's ComfyUI, with --comfyui DIR)`, from [`ENGINES`].
pub fn engines_help() -> String {
    ENGINES
        .iter()
        .map(|s| match s.folder {
            Some(f) => format!("{} ({}, with --{} DIR)", s.name(), s.about, f.flag),
            None => format!("{} ({})", s.name(), s.about),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The names of the engines that `keep` selects, `a, b and c` (for help texts).
pub fn engine_names(keep: impl Fn(&EngineSpec) -> bool) -> String {
    let names: Vec<&str> = ENGINES.iter().filter(|s| keep(s)).map(|s| s.name()).collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// Each engine's default `--torch-precision` mode, `autocast for torch, cast for diffusers`
/// (the engines with modes, [`EngineSpec::precision_modes`]).
pub fn precision_mode_defaults() -> String {
    ENGINES
        .iter()
        .filter_map(|s| s.precision_modes.first().map(|m| format!("{m} for {}", s.name())))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether the PyTorch knobs act for `engine` on `device` (see [`EngineSpec::knobs`]).
pub fn knobs_apply(engine: Engine, device: &str) -> bool {
    spec(engine).knobs_act_on(device)
}

/// The device kind of a device string: `cuda` for `cuda:1`.
pub(crate) fn device_kind(device: &str) -> String {
    let d = device.trim().to_ascii_lowercase();
    d.split(':').next().unwrap_or_default().to_string()
}

impl EngineSpec {
    /// The engine's name (`candle`, `torch`, ...).
    pub fn name(&self) -> &'static str {
        self.engine.name()
    }

    /// Whether its worker is the Python worker (the run then needs an interpreter and the
    /// shared files).
    pub fn runs_python(&self) -> bool {
        matches!(self.worker, WorkerKind::Python { .. })
    }

    /// The module of the Python worker that makes this engine (`None`: not a Python engine).
    pub fn python_module(&self) -> Option<&'static str> {
        match self.worker {
            WorkerKind::Python { module, .. } => Some(module),
            WorkerKind::ThisBinary => None,
        }
    }

    /// Whether the PyTorch knobs act in this engine on `device`.
    pub fn knobs_act_on(&self, device: &str) -> bool {
        self.knobs && device_kind(device) == "cuda"
    }

    /// `settings` as this engine runs them on `device`: the same case with this engine,
    /// and the knobs `n/a` where they do not act (so they are neither multiplied into cases
    /// nor part of the id).
    pub fn run_as(&self, settings: &CaseSettings, device: &str) -> CaseSettings {
        self.run_as_with(settings, device, crate::machine::system::gpu_vendors())
    }

    /// [`EngineSpec::run_as`] on a machine whose GPUs are `vendors`': TF32 is NVIDIA's (`n/a`
    /// where the GPUs are AMD's only), MIOpen's database AMD's (`n/a` where they are NVIDIA's
    /// only: torch's ids there carried `-miopen_user` for a knob that does nothing).
    pub fn run_as_with(&self, settings: &CaseSettings, device: &str, vendors: GpuVendors) -> CaseSettings {
        use crate::report::values::{MiopenDb, Switch};
        let tf32 = match vendors {
            GpuVendors::AmdOnly => Switch::NotApplicable,
            _ => settings.knobs.tf32,
        };
        let miopen_db = match vendors {
            GpuVendors::NvidiaOnly => MiopenDb::NotApplicable,
            _ => settings.knobs.miopen_db,
        };
        let mut knobs = Knobs::default();
        if self.knobs_act_on(device) {
            knobs = Knobs {
                tf32,
                miopen_db,
                ..settings.knobs
            };
        } else if self.engine.tf32_alone() && device_kind(device) == "cuda" {
            knobs.tf32 = tf32; // candle's acts alone
        }
        CaseSettings {
            engine: self.engine,
            knobs,
            ..settings.clone()
        }
    }

    /// Why this engine cannot run a case of `chunk` and `precision` on `device` (the case is then
    /// `unsupported` without starting a worker); `None` when it can.
    pub fn unsupported(&self, chunk: usize, device: &str, precision: crate::model::Precision) -> Option<String> {
        if precision == crate::model::Precision::Auto && !self.own_dtype {
            return Some(format!(
                "precision auto is not supported by the {} engine: it has no dtype choice of its own \
                 (auto is the comfyui engine's; use fp32, bf16 or fp16)",
                self.name()
            ));
        }
        let kind = device_kind(device);
        if !self.devices.contains(&kind.as_str()) {
            return Some(format!(
                "device {device} is not supported by the {} engine (it runs on {})",
                self.name(),
                self.devices.join(", ")
            ));
        }
        if chunk != 1 && !self.any_chunk {
            return Some(format!(
                "chunk {chunk} is not supported by the {} engine: it decodes one latent frame per call \
                 (4 frames per encoder call after the first), i.e. chunk 1",
                self.name()
            ));
        }
        None
    }

    /// [`Self::unsupported`], and what this machine cannot run for any engine: a `cuda:N`
    /// on a machine that shows no GPU ([`crate::machine::device::no_gpu_for`]), except under
    /// `--fault-hooks`, whose fake workers need none. The run's cases take it, `unsupported`
    /// without a worker.
    pub fn unsupported_here(
        &self,
        chunk: usize,
        device: &str,
        precision: crate::model::Precision,
        fault_hooks: bool,
    ) -> Option<String> {
        self.unsupported(chunk, device, precision).or_else(|| {
            (!fault_hooks)
                .then(|| crate::machine::device::no_gpu_for(device))
                .flatten()
        })
    }

    /// Whether the `--torch-precision` mode `name` is one of this engine's (it then reaches
    /// its workers; otherwise they use their default).
    pub fn has_precision_mode(&self, name: &str) -> bool {
        self.precision_modes.contains(&name)
    }
}

/// The engine folders given on the command line (`--<flag> DIR` for each engine with an
/// [`EngineFolder`]); the flags are made from [`ENGINES`], so an engine that needs a folder
/// brings its flag with its entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineDirs(pub BTreeMap<Engine, PathBuf>);

impl EngineDirs {
    /// The folder given for `engine`, if any.
    pub fn get(&self, engine: Engine) -> Option<&PathBuf> {
        self.0.get(&engine)
    }

    /// Every (engine, folder) given.
    pub fn iter(&self) -> impl Iterator<Item = (Engine, &PathBuf)> {
        self.0.iter().map(|(e, d)| (*e, d))
    }

    /// These folders, and `other`'s for the engines these lack: `flags.or(&file).or(&env)`
    /// gives a flag precedence over the matrix file, and the file over the environment.
    pub fn or(mut self, other: &EngineDirs) -> EngineDirs {
        for (engine, dir) in &other.0 {
            self.0.entry(*engine).or_insert_with(|| dir.clone());
        }
        self
    }

    /// The folders named by the environment (`WAN_VAE_BENCH_COMFYUI`, see
    /// [`folder_env_var`]); an empty value names none.
    pub fn from_env() -> EngineDirs {
        EngineDirs(
            ENGINES
                .iter()
                .filter_map(|s| {
                    let f = s.folder?;
                    let dir = std::env::var_os(folder_env_var(&f)).filter(|v| !v.is_empty())?;
                    Some((s.engine, PathBuf::from(dir)))
                })
                .collect(),
        )
    }

    /// The Python interpreter of the first folder (of `engines`) that holds a venv
    /// (`venv/bin/python`, `.venv/bin/python`; `Scripts/python.exe` on Windows): the Python
    /// engines use it when neither `--python` nor `[model] python` is given.
    pub fn venv_python(&self, engines: impl IntoIterator<Item = Engine>) -> Option<PathBuf> {
        engines.into_iter().filter_map(|e| self.get(e)).find_map(|dir| {
            ["venv", ".venv"].iter().find_map(|v| {
                [dir.join(v).join("bin/python"), dir.join(v).join("Scripts/python.exe")]
                    .into_iter()
                    .find(|p| p.is_file())
            })
        })
    }

    /// Every engine of `engines` that needs a folder has one, and it is a folder: checked
    /// before anything runs, naming the flag.
    pub fn check(&self, engines: impl IntoIterator<Item = Engine>) -> Result<(), UserError> {
        check_dirs(ENGINES, &self.0, engines)
    }
}

fn check_dirs(
    table: &[EngineSpec],
    dirs: &BTreeMap<Engine, PathBuf>,
    engines: impl IntoIterator<Item = Engine>,
) -> Result<(), UserError> {
    for e in engines {
        let Some(folder) = table.iter().find(|s| s.engine == e).and_then(|s| s.folder) else {
            continue;
        };
        let flag = format!("--{}", folder.flag);
        match dirs.get(&e) {
            None => {
                return Err(UserError::Other(format!(
                    "engine {e} needs {}: give {flag} DIR, `{} = \"DIR\"` in a matrix file's [model], or {}",
                    folder.holds,
                    folder.flag,
                    folder_env_var(&folder)
                )))
            }
            Some(dir) if !dir.is_dir() => {
                // Say what is wrong with it when the system can (a link loop, no permission).
                let found = match std::fs::metadata(dir) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => format!(" ({e})"),
                    _ => String::new(),
                };
                return Err(UserError::invalid(
                    flag,
                    dir.display().to_string(),
                    format!("an existing folder: {}{found}", folder.holds),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// One `--<flag> DIR` argument per engine of `table` with a folder.
fn folder_args(cmd: clap::Command, table: &'static [EngineSpec]) -> clap::Command {
    table
        .iter()
        .filter_map(|s| s.folder.map(|f| (s, f)))
        .fold(cmd, |cmd, (s, f)| {
            cmd.arg(
                clap::Arg::new(f.flag)
                    .long(f.flag)
                    .value_name("DIR")
                    .value_parser(clap::value_parser!(PathBuf))
                    .help(format!("{} for the {} engine", f.holds, s.name())),
            )
        })
}

/// The environment variable naming an engine folder when its flag is absent:
/// `WAN_VAE_BENCH_<FLAG>` (`WAN_VAE_BENCH_COMFYUI`).
pub fn folder_env_var(folder: &EngineFolder) -> String {
    format!("WAN_VAE_BENCH_{}", folder.flag.to_ascii_uppercase().replace('-', "_"))
}

/// The folders given by flag (the environment variables are [`EngineDirs::from_env`]'s).
fn dirs_from(table: &[EngineSpec], m: &clap::ArgMatches) -> BTreeMap<Engine, PathBuf> {
    table
        .iter()
        .filter_map(|s| {
            let f = s.folder?;
            Some((s.engine, m.get_one::<PathBuf>(f.flag).cloned()?))
        })
        .collect()
}

/// The engine whose folder a matrix file's `[model] KEY` names (`comfyui`), if any: the
/// keys are the folder flags of [`ENGINES`].
pub fn folder_engine(key: &str) -> Option<Engine> {
    ENGINES
        .iter()
        .find(|s| s.folder.is_some_and(|f| f.flag == key))
        .map(|s| s.engine)
}

/// The matrix-file keys that name an engine folder (`comfyui`), for messages.
pub fn folder_keys() -> Vec<&'static str> {
    ENGINES.iter().filter_map(|s| s.folder.map(|f| f.flag)).collect()
}

impl clap::FromArgMatches for EngineDirs {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Ok(EngineDirs(dirs_from(ENGINES, m)))
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.extend(dirs_from(ENGINES, m));
        Ok(())
    }
}

impl clap::Args for EngineDirs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        folder_args(cmd, ENGINES)
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        folder_args(cmd, ENGINES)
    }
}

#[cfg(test)]
mod tests;
