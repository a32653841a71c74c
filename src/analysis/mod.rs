//! What is read from a finished run's reports: [`answer`] (what to set, with bootstrap
//! intervals and how to apply it), [`export`] (Markdown, CSV, SVG, dashboards, the text
//! table), [`compare`] (two reports: Welch's test, verdicts, the layers behind a change),
//! [`merge`] (several reports or a sharded run's parts into one), [`history`] (many reports
//! over time: steps per case and machine, and what changed in the stack at each).
//!
//! Must not: run anything or start a worker; it reads reports (and the plan's and engines'
//! descriptions of what a setting means).
pub mod answer;
pub mod compare;
pub mod export;
pub mod history;
pub mod merge;
