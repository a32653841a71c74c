//! The candle engine's worker: this binary's hidden `worker` command (its loop, [`serve`]), which
//! measures the cases its parent sends, one after another, in its own process ([`worker`]), with its testing hook ([`fault`]) and
//! process memory ([`memory`]).
//!
//! Must not: spawn processes or write the report (the parent does both).
use std::path::Path;

use super::protocol;
use crate::util::error::UserError;

pub mod fault;
pub mod memory;
pub mod profile;
pub mod worker;

/// The worker loop of `wan-vae-bench worker --session DIR` (hidden): say it is ready, then acknowledge and run
/// each case stdin names (keeping the model from one case to the next where it may), write its result JSON
/// and say it is done. A spec that cannot be read is that case's `failed` result.
pub fn serve() -> anyhow::Result<i32> {
    memory::steady_allocator();
    crate::errln!("{}", protocol::READY_MARKER);
    let mut session = worker::Session::default();
    let mut line = String::new();
    loop {
        line.clear();
        if std::io::stdin().read_line(&mut line)? == 0 {
            return Ok(0);
        }
        let Some((spec_path, result_path)) = line.trim_end_matches('\n').split_once('\t') else {
            return Err(UserError::Other(format!("worker: expected `SPEC\\tRESULT` on stdin, got {line:?}")).into());
        };
        let spec = read_spec(Path::new(spec_path));
        let result = match &spec {
            Ok(spec) => {
                // The acknowledgement, before any work: from here on the case is ours.
                crate::errln!("{}{}", protocol::START_MARKER, spec.id);
                worker::run(spec, &mut session)
            }
            Err(why) => {
                protocol::WorkerResult::empty(crate::report::CaseStatus::Failed, Some(why.clone()), Default::default())
            }
        };
        crate::util::files::write_atomic(Path::new(result_path), serde_json::to_string_pretty(&result)?)?;
        crate::errln!("{}", protocol::DONE_MARKER);
        if let Ok(spec) = &spec {
            fault::between_cases(spec, || {
                let _ = std::io::stdin().read_line(&mut String::new());
            });
        }
    }
}

/// The spec file of one case.
fn read_spec(path: &Path) -> Result<protocol::WorkerSpec, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read the spec {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("the spec {} is not a case: {e}", path.display()))
}
