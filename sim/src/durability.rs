//! The simulator's own account of durability, kept apart from the engine: which writes
//! each tablet acknowledged (by op id), which entry was in doubt when the power went, and
//! what the simulator flushed. From it alone, at every restart, it derives what bootstrap
//! must report — the flushed frontier, how many entries it re-applies, the first and the
//! last — and compares.
//!
//! Rules (one voter, writes acknowledged after sync, commit and apply):
//! - A flush makes every applied entry durable in RocksDB: the frontier becomes the last
//!   one applied, and nothing at or below it may be replayed.
//! - Every acknowledged entry above the frontier must be replayed, in order.
//! - A write cut by a crash is *in doubt*. Cut after its sync (or after apply) its entry
//!   is durable and committed: it must come back. Cut after the append, before the sync,
//!   it may come back only if the disk's fault ledger shows a torn write that kept it.
//!   Otherwise it must not; the model then rolls back to before the write.

use docsim_engine::disk::Fault;
use docsim_engine::script::format_restart;
use docsim_engine::{CrashPoint, CrashStage, Error, Frontier, OpId, RestartReport, TabletId};
use docsim_models::cql::Schema;
use docsim_models::Model;
use std::collections::BTreeMap;

/// The models as they were before an in-doubt write.
pub struct Snapshot {
    pub docs: Model,
    pub tables: BTreeMap<String, (Schema, Model)>,
}

#[derive(Default)]
struct TabletBook {
    /// Entries with writes above the frontier, in order.
    unflushed: Vec<OpId>,
    applied: OpId,
    flushed: OpId,
}

/// What the simulator knows about durability.
#[derive(Default)]
pub struct Book {
    tablets: BTreeMap<TabletId, TabletBook>,
    /// Where a crash is armed to cut the power.
    pub armed: Option<CrashPoint>,
    /// The stage a write was cut at, and the models before it.
    in_doubt: Option<(CrashStage, Snapshot)>,
    /// Fault-ledger length when the last crash was armed or cut the power.
    pub ledger_seen: usize,
    pub crashes: u64,
    /// Crashes by where they cut: `crash.<stage>`.
    pub crash_stages: BTreeMap<String, u64>,
    pub restarts: u64,
    /// Replayed entries reported, and entries the book expected above the frontiers.
    pub replayed: u64,
    pub expected_replayed: u64,
}

/// What a restart's check found wrong: expected and actual output lines.
pub type Mismatch = (Vec<String>, Vec<String>);

impl Book {
    /// Writes acknowledged by the engine.
    pub fn acked(&mut self, acks: Vec<(TabletId, OpId)>) {
        for (tablet, op) in acks {
            let book = self.tablets.entry(tablet).or_default();
            assert!(op > book.applied, "op ids grow: {op} after {}", book.applied);
            book.unflushed.push(op);
            book.applied = op;
        }
    }

    /// Every tablet flushed.
    pub fn flushed(&mut self) {
        for book in self.tablets.values_mut() {
            book.flushed = book.applied;
            book.unflushed.clear();
        }
    }

    /// A write was cut at `stage`; `before` holds the models before it.
    pub fn cut(&mut self, stage: CrashStage, before: Snapshot) {
        self.in_doubt = Some((stage, before));
    }

    /// The power went off at `stage` (`idle`, `after-flush` or a write stage).
    pub fn crashed(&mut self, stage: &str) {
        self.crashes += 1;
        *self.crash_stages.entry(format!("crash.{stage}")).or_default() += 1;
        self.armed = None;
    }

    /// Check a restart of the tablets `ids` (in the node's order) that gave `outcome`.
    /// `in_doubt` is the engine's in-doubt entry, `ledger` the disk's faults. Returns the
    /// models to restore when the in-doubt write is not to survive.
    pub fn restarted(
        &mut self,
        ids: &[TabletId],
        outcome: &Result<Vec<(TabletId, RestartReport)>, Error>,
        in_doubt: Vec<(TabletId, OpId)>,
        ledger: &[Fault],
    ) -> Result<Option<Snapshot>, Mismatch> {
        self.restarts += 1;
        let reports = outcome.as_deref().unwrap_or_default();
        let restore = self.settle_in_doubt(reports, in_doubt, ledger);
        let want: Vec<String> =
            ids.iter().map(|id| format_restart(id, &self.expected(id))).collect();
        let got: Vec<String> = match outcome {
            Ok(reports) => reports.iter().map(|(n, r)| format_restart(n, r)).collect(),
            Err(e) => vec![format!("error: {e}")],
        };
        for (name, report) in reports {
            self.replayed += report.replayed as u64;
            let expected = self.tablets.get(name).map_or(0, |b| b.unflushed.len());
            self.expected_replayed += expected as u64;
        }
        if want != got {
            return Err((want, got));
        }
        Ok(restore)
    }

    /// What bootstrap must report for `name`.
    fn expected(&self, id: &TabletId) -> RestartReport {
        let book = self.tablets.get(id);
        let unflushed = book.map(|b| b.unflushed.as_slice()).unwrap_or_default();
        RestartReport {
            frontier: Frontier {
                op_id: book.map_or(OpId::default(), |b| b.flushed),
                ..Default::default()
            },
            replayed: unflushed.len(),
            first: unflushed.first().copied(),
            last: unflushed.last().copied(),
            recovered_last: OpId::default(),
            truncated: None,
            segments_skipped: 0,
        }
    }

    /// Decide whether the cut write is to survive: it must if it was durable; it may if a
    /// torn write kept it. Returns the models before it when it is not to survive.
    fn settle_in_doubt(
        &mut self,
        reports: &[(TabletId, RestartReport)],
        in_doubt: Vec<(TabletId, OpId)>,
        ledger: &[Fault],
    ) -> Option<Snapshot> {
        let (stage, before) = self.in_doubt.take()?;
        let Some((tablet, op)) = in_doubt.into_iter().next() else { return Some(before) };
        let report = reports.iter().find(|(t, _)| *t == tablet).map(|(_, r)| r);
        let in_log = report.is_some_and(|r| r.recovered_last.index >= op.index);
        let torn = ledger[self.ledger_seen..].iter().any(|f| matches!(f, Fault::Torn { .. }));
        if stage != CrashStage::AfterAppend || (torn && in_log) {
            self.acked(vec![(tablet, op)]);
            return None;
        }
        Some(before)
    }
}
