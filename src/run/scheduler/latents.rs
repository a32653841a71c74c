//! The inputs of decode-only cases (part of the scheduler): a decode-only case decodes the
//! user's latent or, when there is none, the latent of an untimed true-fp32 encode of the
//! video (the user's or the built-in clip), made once per frames and size before any measured
//! case, each in a worker of its own ([`Purpose::Prepare`]), and never reported.
//!
//! Must not: time anything or record a case.
use std::collections::BTreeMap;

use super::super::executor::{Placement, Purpose, WorkerEvent};
use super::Scheduler;
use crate::engine::protocol::{InputKind, RunSpec, WorkerInput, WorkerSpec};
use crate::engine::WorkerKind;
use crate::report::settings::CaseSettings;
use crate::report::values::{MiopenDb, Passes, Switch};
use crate::report::CaseStatus;

impl Scheduler {
    /// The input of a case's worker: a decode-only case decodes the user's latent or, when
    /// there is none, the latent of an untimed fp32 encode of the video (the user's or the
    /// built-in clip), computed once per frames and size in a worker of its own and never
    /// reported; a case that encodes gets the user's video (or none: the clip).
    pub(super) fn input_for(&mut self, s: &CaseSettings) -> Result<Option<WorkerInput>, String> {
        let user = self.run_wide.input.clone();
        if s.passes.encodes() {
            return Ok(user.filter(|i| i.kind == InputKind::Video));
        }
        if let Some(i) = user.as_ref().filter(|i| i.kind == InputKind::Latent) {
            return Ok(Some(i.clone()));
        }
        let key = (s.frames, s.width, s.height);
        if let Some(p) = self.prepared.get(&key) {
            return p.clone().map(Some);
        }
        // One latent per frames x size, so every engine decodes the same bits: encoded by
        // candle where this build has the device, else by the run's engine on the device.
        let device = self.run_wide.spec.device.clone();
        let has = crate::engine::preparer::this_build_has(&device, self.run_wide.spec.fault_hooks);
        let in_run = crate::engine::preparer::engines_of(self.cases.iter().map(|c| &c.settings.engine));
        let preparer = match crate::engine::preparer::latent_preparer(&device, &in_run, has) {
            Ok(p) => p,
            Err(why) => {
                self.prepared.insert(key, Err(why.clone()));
                return Err(why);
            }
        };
        let mut prepared = self.prepare_with(preparer, s, user.clone());
        // A failed encode of this binary's worker (its device path) must not cost the other
        // engines their decode-only cases: the run's Python engine on the device tries once.
        if let (Err(first), WorkerKind::ThisBinary) = (&prepared, preparer.worker) {
            if let Ok(other) = crate::engine::preparer::latent_preparer(&device, &in_run, false) {
                let first = first.clone();
                prepared = self
                    .prepare_with(other, s, user)
                    .map_err(|second| format!("{first}; then {second}"));
                if prepared.is_ok() {
                    self.progress.println(&format!(
                        "note: {first}; the latent to decode was encoded by {} instead",
                        other.name()
                    ));
                }
            }
        }
        self.prepared.insert(key, prepared.clone());
        prepared.map(Some)
    }

    /// The untimed true-fp32 encode of `s`'s clip (or the user's video `user`) by
    /// `preparer`, in a worker of its own: the latent's file, or why there is none.
    fn prepare_with(
        &mut self,
        preparer: &'static crate::engine::EngineSpec,
        s: &CaseSettings,
        user: Option<WorkerInput>,
    ) -> Result<WorkerInput, String> {
        let device = self.run_wide.spec.device.clone();
        // True fp32 with the knobs as the engine leaves them (`n/a` where they do not act).
        let knobs = crate::report::settings::Knobs {
            cudnn: Switch::Auto,
            cudnn_benchmark: Switch::Auto,
            miopen_db: MiopenDb::User,
            tf32: Switch::Off,
        };
        let settings = preparer.run_as(
            &CaseSettings {
                passes: Passes::Encode,
                env_variant: crate::report::settings::BASELINE.to_string(),
                knobs,
                ..s.reference()
            },
            &device,
        );
        self.latents_by = Some(crate::engine::preparer::describe(preparer.engine));
        let id = format!("prepare-latent-{}x{}x{}", s.frames, s.width, s.height);
        let path = self.executor.outputs_path(&id);
        let spec = WorkerSpec {
            id,
            input_path: self.run_wide.input_path(&settings),
            settings,
            run: RunSpec {
                warmup: 0,
                runs: 1,
                torch_precision: None,
                ..self.run_wide.spec.clone()
            },
            variant_vars: Vec::new(),
            outputs: Some(path.clone()),
            input: user,
            engine_dir: self.run_wide.engine_dirs.get(preparer.engine).cloned(),
            python_module: preparer.python_module().map(String::from),
            profile: None,
        };
        let progress = &self.progress;
        // A worker of its own, ended afterwards: no measured case inherits what it did.
        let none = BTreeMap::new();
        let place = Placement {
            vars: &none,
            unset: &[],
            lane: "prepare",
            timeout: None,
        };
        let r = self.executor.run(&spec, &place, Purpose::Prepare, &mut |e| match e {
            WorkerEvent::Phase(p) => progress.note(&format!("prepare latent: {p}")),
            WorkerEvent::Output(line) => progress.output(line),
            WorkerEvent::Started(_) | WorkerEvent::Done => {}
        });
        match (r.outcome.status, r.outcome.error) {
            (CaseStatus::Ok, _) if path.is_file() => Ok(WorkerInput {
                path,
                kind: InputKind::Latent,
            }),
            (status, error) => Err(format!(
                "the untimed fp32 encode by {} that prepares the latent to decode ended {status}: {}",
                preparer.name(),
                error.or(r.outputs_error).unwrap_or_default()
            )),
        }
    }

    /// Prepare the latents of the decode-only cases before any measured case runs, each in a
    /// worker of its own ([`Purpose::Prepare`]): a preparation then never runs beside a kept
    /// worker (nor splits a group's worker in two), and no measured case inherits it.
    pub(super) fn prepare_latents(&mut self) {
        for case in self.cases.clone() {
            if crate::util::interrupt::received().is_some() {
                return;
            }
            let s = &case.settings;
            let device = &self.run_wide.spec.device;
            let engine = crate::engine::spec(s.engine);
            let hooks = self.run_wide.spec.fault_hooks;
            if !s.passes.encodes() && engine.unsupported_here(s.chunk, device, s.precision, hooks).is_none() {
                let _ = self.input_for(s);
            }
        }
    }
}
