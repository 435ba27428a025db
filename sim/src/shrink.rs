//! Shrinking: `docsim shrink reports/runs/<seed>/` reduces a failing op log to a minimal
//! one that still fails with the same fingerprint (same kind of check failing): delta
//! debugging over operations (ddmin), then simplifying what remains with the workload's
//! own simpler variants of each op (`docsim_workloads::simpler`: fewer batch items and
//! object-literal entries, no TTLs, shorter paths, simpler values; for CQL fewer columns
//! and assignments, shorter collections, no range condition). It writes `shrunk.ds`: a
//! docscript that fails under `docsim script` alone.

use crate::simulate::{replay_ops, Failure, FailureKind};
use docsim_engine::canary::Plant;
use docsim_engine::StorageConfig;
use docsim_workloads::Op;

/// The result of shrinking.
pub struct Shrunk {
    /// Ops before.
    pub before: usize,
    /// Ops after.
    pub after: usize,
    /// The failure of the minimal op list.
    pub failure: Failure,
    /// Oracle runs spent.
    pub runs: usize,
}

/// Shrink `ops` of the run of `seed`, which fail with `kind` (with `plant` switched on).
pub fn shrink(
    ops: Vec<Op>,
    kind: FailureKind,
    plant: Option<Plant>,
    seed: u64,
    storage: StorageConfig,
) -> Option<Shrunk> {
    let mut runs = 0;
    let mut fails = |candidate: &[Op]| {
        runs += 1;
        replay_ops(candidate, plant, seed, storage).filter(|f| f.kind == kind)
    };
    let before = ops.len();
    let mut failure = fails(&ops)?;
    // Table declarations stay (the CQL ops need them); the rest is shrunk. Only what the
    // failure needed counts: the failing op ends the list.
    let tables: Vec<Op> = ops.iter().filter(|op| matches!(op, Op::Table(_))).cloned().collect();
    let with_tables = |rest: &[Op]| tables.iter().chain(rest).cloned().collect::<Vec<Op>>();
    let body = |ops: &[Op]| {
        ops.iter().filter(|op| !matches!(op, Op::Table(_))).cloned().collect::<Vec<Op>>()
    };
    let mut current: Vec<Op> = body(&failure.ops);
    let mut chunks = 2;
    while current.len() >= 2 {
        let size = current.len().div_ceil(chunks);
        let mut reduced = false;
        for start in (0..current.len()).step_by(size) {
            let end = (start + size).min(current.len());
            // Schema changes stay where they are: the ops after them name their columns.
            let kept = current[start..end].iter().filter(|op| is_schema_change(op));
            let candidate: Vec<Op> =
                current[..start].iter().chain(kept).chain(&current[end..]).cloned().collect();
            if candidate.len() == current.len() {
                continue;
            }
            if let Some(f) = fails(&with_tables(&candidate)) {
                current = body(&f.ops);
                failure = f;
                chunks = (chunks - 1).max(2);
                reduced = true;
                break;
            }
        }
        if !reduced {
            if size == 1 {
                break;
            }
            chunks = (chunks * 2).min(current.len());
        }
    }
    // Then each schema change alone, newest first: without it, ops naming its column are
    // refused alike by engine and model, so the failure may well stay.
    let mut i = current.len();
    while i > 0 {
        i -= 1;
        if !is_schema_change(&current[i]) {
            continue;
        }
        let candidate: Vec<Op> = current[..i].iter().chain(&current[i + 1..]).cloned().collect();
        if let Some(f) = fails(&with_tables(&candidate)) {
            current = body(&f.ops);
            failure = f;
            i = i.min(current.len());
        }
    }
    let (current, failure) = simplify(&tables, current, failure, &mut fails);
    Some(Shrunk { before, after: tables.len() + current.len(), failure, runs })
}

/// Whether `op` is an `ALTER TABLE`.
fn is_schema_change(op: &Op) -> bool {
    matches!(op, Op::Cql { op: docsim_models::cql::CqlOp::Alter(_), .. })
}

/// Replace ops by simpler variants while the failure keeps its fingerprint.
fn simplify(
    tables: &[Op],
    mut current: Vec<Op>,
    mut failure: Failure,
    fails: &mut dyn FnMut(&[Op]) -> Option<Failure>,
) -> (Vec<Op>, Failure) {
    let mut i = 0;
    while i < current.len() {
        let mut improved = false;
        for variant in docsim_workloads::simpler(&current[i]) {
            let mut candidate = current.clone();
            candidate[i] = variant;
            let with_tables: Vec<Op> = tables.iter().chain(&candidate).cloned().collect();
            if let Some(f) = fails(&with_tables) {
                if f.ops.len() == with_tables.len() {
                    current = candidate;
                    failure = f;
                    improved = true;
                    break;
                }
            }
        }
        if !improved {
            i += 1;
        }
    }
    (current, failure)
}
