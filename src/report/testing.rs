//! Builders of report records for unit tests: a case of given settings and outcome, and a
//! report around cases, every other field empty. One place, so that a field added to
//! `CaseRecord` or `Report` is added once for every test that builds one.
use super::{CaseRecord, CaseStatus, ModelInfo, Outcome, Report, SCHEMA_VERSION};
use crate::report::settings::CaseSettings;

/// The case of `settings` (its id from them, the frames the model uses of its frames)
/// with `outcome`.
pub fn case(settings: CaseSettings, outcome: Outcome) -> CaseRecord {
    CaseRecord {
        id: settings.id(),
        added_as_reference: false,
        added_as_control: false,
        frames_used: crate::model::frames_used(settings.frames).ok(),
        settings,
        outcome,
        quality: None,
        profile: None,
        system: None,
        run: None,
        budgets: Vec::new(),
    }
}

/// An `ok` outcome with no environment and no pass timed yet.
pub fn ok() -> Outcome {
    Outcome::new(CaseStatus::Ok, None, Default::default())
}

/// A report of `model` around `cases`, no system, tool or run recorded.
pub fn report(model: ModelInfo, cases: Vec<CaseRecord>) -> Report {
    Report {
        schema_version: SCHEMA_VERSION,
        tool: Default::default(),
        created_at: String::new(),
        system: Default::default(),
        model,
        run: Default::default(),
        cases,
        engines: Default::default(),
        summary: None,
    }
}
