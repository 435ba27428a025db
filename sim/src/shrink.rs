//! Shrinking: `docsim shrink reports/runs/<seed>/` reduces a failing op log to a minimal
//! one that still fails with the same fingerprint (same kind of check failing), by delta
//! debugging over operations (ddmin), then writes `shrunk.ds`: a docscript that fails under
//! `docsim script` alone.

use crate::simulate::{replay_ops, Failure, FailureKind};
use docsim_engine::canary::Plant;
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

/// Shrink `ops`, which fail with `kind` (with `plant` switched on).
pub fn shrink(ops: Vec<Op>, kind: FailureKind, plant: Option<Plant>) -> Option<Shrunk> {
    let mut runs = 0;
    let mut fails = |candidate: &[Op]| {
        runs += 1;
        replay_ops(candidate, plant).filter(|f| f.kind == kind)
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
            let rest = &current[(start + size).min(current.len())..];
            let candidate: Vec<Op> = current[..start].iter().chain(rest).cloned().collect();
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
    Some(Shrunk { before, after: tables.len() + current.len(), failure, runs })
}
