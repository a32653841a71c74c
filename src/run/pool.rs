//! Which worker process a case runs in (issue 37): the pool hands out **leases**, each for a
//! [`Purpose`]. Only a measured lease may take a worker kept by an earlier measured case, and
//! only a measured lease that ended `ok` (in a worker still alive) passes its worker on to
//! the next measured case of the same group ([`worker_key`]). A preparation (the untimed
//! encode that makes a decode-only case's latent) always gets a worker of its own, ended
//! with its lease: no measured case inherits its imports, model, allocator or peak, and the
//! kept workers are left alone. The pool keeps up to [`Pool::capacity`] workers, one per
//! group: 1 in a run of blocks (a kept worker of another group is ended before a new one
//! starts), one per setting of a workload in a run of interleaved rounds (issue 63: they
//! stay alive side by side; the least recently used is ended past the capacity).
//!
//! Must not: start processes (the executor does, through the closure it passes), read
//! results, or decide who a worker's death is blamed on ([`super::blame`]).
use std::collections::BTreeMap;

use super::live_worker::LiveWorker;

/// What a worker is leased for (as hyperfine labels every execution by its purpose).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A case whose figures go into the report.
    Measured,
    /// Untimed work the run needs before a measured case (a decode-only case's latent).
    Prepare,
    /// The profiled pass after an `ok` measured case (`run --profile`): it takes and passes
    /// on the group's kept worker as a measured case does; its figures are not the case's.
    Profile,
}

/// A worker lent for one case.
pub struct Lease {
    pub worker: LiveWorker,
    pub purpose: Purpose,
    /// Cases the process ran before this lease (0: started for it).
    pub cases_before: usize,
    /// Set when the kept worker of this case's group was found dead and a fresh one started
    /// instead: why (the worker's failure, recorded in the case's `worker.replaced`).
    pub replaced: Option<String>,
}

impl Lease {
    /// Whether the worker was passed on from an earlier case.
    pub fn reused(&self) -> bool {
        self.cases_before > 0
    }
}

/// The run's workers: at most [`Pool::capacity`] kept between measured cases, the most
/// recently used last.
pub struct Pool {
    kept: Vec<LiveWorker>,
    /// How many workers may be kept at once (at least 1).
    pub capacity: usize,
}

impl Default for Pool {
    fn default() -> Pool {
        Pool {
            kept: Vec::new(),
            capacity: 1,
        }
    }
}

impl Pool {
    /// A worker for a case of group `key`: the kept one of that group when `purpose` is
    /// measured, `may_share` and it is alive; else one from `start` (with the pool at its
    /// capacity, the least recently used kept worker is ended first, so no more than
    /// `capacity` run at once; a preparation leaves the kept ones alone).
    pub fn lease<E>(
        &mut self,
        key: &str,
        purpose: Purpose,
        may_share: bool,
        start: impl FnOnce() -> Result<LiveWorker, E>,
    ) -> Result<Lease, E> {
        let mut replaced = None;
        if purpose != Purpose::Prepare {
            if let Some(at) = self.kept.iter().position(|w| w.key == key) {
                let mut w = self.kept.remove(at);
                if may_share && w.alive() {
                    let cases_before = w.cases_run;
                    return Ok(Lease {
                        worker: w,
                        purpose,
                        cases_before,
                        replaced: None,
                    });
                }
                if may_share {
                    replaced = Some(format!(
                        "the kept worker (pid {}) had ended between cases{}; the case ran in a fresh worker",
                        w.pid(),
                        w.exit_status().map(|s| format!(" ({s})")).unwrap_or_default()
                    ));
                }
                w.end();
            }
            while !self.kept.is_empty() && self.kept.len() >= self.capacity.max(1) {
                self.kept.remove(0).end();
            }
        }
        Ok(Lease {
            worker: start()?,
            purpose,
            cases_before: 0,
            replaced,
        })
    }

    /// A lease's end: its worker is kept for the next measured case only when the lease was
    /// measured, the run shares workers (`may_share`), the case ended `ok` and the process
    /// is alive; otherwise it is ended.
    pub fn give_back(&mut self, mut lease: Lease, may_share: bool, ok: bool) {
        if lease.purpose != Purpose::Prepare && may_share && ok && lease.worker.alive() {
            if let Some(at) = self.kept.iter().position(|w| w.key == lease.worker.key) {
                self.kept.remove(at).end();
            }
            while self.kept.len() >= self.capacity.max(1) {
                self.kept.remove(0).end();
            }
            self.kept.push(lease.worker);
        } else {
            lease.worker.end();
        }
    }

    /// End every kept worker.
    pub fn end(&mut self) {
        for w in self.kept.drain(..) {
            w.end();
        }
    }
}

/// Which cases may share a worker process: those of the same engine (and so interpreter and
/// folder: a run has one of each per engine) with the same environment (the variant's
/// variables, those it removes) on the run's one device. MIOpen, ROCm and torch read their
/// variables once per process, so an env variant never shares a process with another.
/// Precision, tiling, chunk, knobs, size, frames and passes are set per case. (A `miopen_db
/// = fresh` case never shares: the executor gives it a worker of its own.) The scheduler
/// groups its cases by the same key ([`super::rounds::order_blocks`]). `lane` sets apart what
/// else must not share ([`super::rounds::lane`]: the A/A control; in rounds, the precision).
pub fn worker_key(
    engine: crate::report::values::Engine,
    vars: &BTreeMap<String, String>,
    unset: &[String],
    lane: &str,
) -> String {
    serde_json::json!([engine.name(), vars, unset, lane]).to_string()
}
