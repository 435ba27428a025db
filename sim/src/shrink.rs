//! Shrinking: `docsim shrink reports/runs/<seed>/` runs the failed seed again, then
//! reduces its steps to a minimal list that still fails with the same fingerprint (the
//! same kind of check failing): delta debugging over steps (ddmin), then each run of
//! `wait` steps folded into one, then each client op simplified with the workload's own
//! simpler variants (`docsim_workloads::simpler`: fewer batch items and object entries,
//! no TTLs, shorter paths, simpler values, fewer CQL columns). Every candidate is a whole
//! run of the seed's setup (its network, its nodes) through the same executor and checks,
//! for every replica count. The result is written as `shrunk.ds`: a docscript that fails
//! under `docsim script` alone.

use crate::failure::FailureKind;
use crate::run::{run_steps, Failure, RunConfig, Step};
use docsim_engine::script::Command;
use docsim_workloads::Op;

/// The result of shrinking.
pub struct Shrunk {
    /// Steps before and after.
    pub before: usize,
    pub after: usize,
    /// The failure of the minimal step list.
    pub failure: Failure,
    /// Runs spent.
    pub runs: usize,
}

/// At most this many runs (a few minutes): then the shortest failing list so far.
const MAX_RUNS: usize = 3_000;

/// Shrink `steps` of a run of `config`, which fail with `kind`. With a planted bug in a
/// group of one whose steps pass without it, a candidate must also pass without the bug:
/// a shorter list that fails the same check for another reason (a fault left armed at a
/// restart, say) reproduces nothing of the bug. (A replicated run without its bug is
/// another run: not asked.) Runs without the bug count against the budget.
pub fn shrink(steps: Vec<Step>, kind: FailureKind, config: &RunConfig) -> Option<Shrunk> {
    let clean = RunConfig { plant: None, ..config.clone() };
    let check_clean = config.plant.is_some()
        && config.replicas == 1
        && run_steps(&clean, Some(steps.clone())).failure.is_none();
    let mut runs = usize::from(check_clean);
    let mut fails = |candidate: &[Step]| -> Option<Failure> {
        if runs >= MAX_RUNS {
            return None; // out of budget: the shortest failing list so far stands
        }
        runs += 1;
        let outcome = run_steps(config, Some(candidate.to_vec()));
        let failure = outcome.failure.filter(|f| f.kind == kind)?;
        if check_clean {
            runs += 1;
            if run_steps(&clean, Some(candidate.to_vec())).failure.is_some() {
                return None; // fails without the bug too
            }
        }
        Some(failure)
    };
    let before = steps.len();
    let mut failure = fails(&steps)?;
    let mut current = failure.steps.clone();
    ddmin(&mut current, &mut failure, &mut fails);
    drop_one_by_one(&mut current, &mut failure, &mut fails, is_schema_change);
    fold_waits(&mut current, &mut failure, &mut fails);
    simplify(&mut current, &mut failure, &mut fails);
    Some(Shrunk { before, after: current.len(), failure, runs })
}

/// Whether a step must stay for the others to mean anything: a table's creation.
fn is_fixed(step: &Step) -> bool {
    matches!(step, Step::Client { op: Op::Table(_), .. })
}

/// Whether a step is an `ALTER TABLE` (the steps after it name its columns).
fn is_schema_change(step: &Step) -> bool {
    matches!(step, Step::Client { op: Op::Cql { op: docsim_models::cql::CqlOp::Alter(_), .. }, .. })
}

/// Delta debugging: remove chunks (never a fixed step, and schema changes stay where they
/// are) while the failure keeps its fingerprint; only what the failure needed counts.
fn ddmin(
    current: &mut Vec<Step>,
    failure: &mut Failure,
    fails: &mut dyn FnMut(&[Step]) -> Option<Failure>,
) {
    let mut chunks = 2;
    while current.len() >= 2 {
        let size = current.len().div_ceil(chunks);
        let mut reduced = false;
        for start in (0..current.len()).step_by(size) {
            let end = (start + size).min(current.len());
            let kept = current[start..end].iter().filter(|s| is_fixed(s) || is_schema_change(s));
            let candidate: Vec<Step> =
                current[..start].iter().chain(kept).chain(&current[end..]).cloned().collect();
            if candidate.len() == current.len() {
                continue;
            }
            if let Some(f) = fails(&candidate) {
                (*current, *failure) = (f.steps.clone(), f);
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
}

/// Then each step `which` picks alone, newest first.
fn drop_one_by_one(
    current: &mut Vec<Step>,
    failure: &mut Failure,
    fails: &mut dyn FnMut(&[Step]) -> Option<Failure>,
    which: fn(&Step) -> bool,
) {
    let mut i = current.len();
    while i > 0 {
        i -= 1;
        if !which(&current[i]) {
            continue;
        }
        let candidate: Vec<Step> = current[..i].iter().chain(&current[i + 1..]).cloned().collect();
        if let Some(f) = fails(&candidate) {
            (*current, *failure) = (f.steps.clone(), f);
            i = i.min(current.len());
        }
    }
}

/// Each run of consecutive `wait` steps becomes one wait, where the failure survives it.
fn fold_waits(
    current: &mut Vec<Step>,
    failure: &mut Failure,
    fails: &mut dyn FnMut(&[Step]) -> Option<Failure>,
) {
    let wait = |s: &Step| match s {
        Step::Command(Command::Wait(us)) => Some(*us),
        _ => None,
    };
    let mut i = 0;
    while i + 1 < current.len() {
        if let (Some(a), Some(b)) = (wait(&current[i]), wait(&current[i + 1])) {
            let mut candidate = current.clone();
            candidate[i] = Step::Command(Command::Wait(a + b));
            candidate.remove(i + 1);
            if let Some(f) = fails(&candidate) {
                (*current, *failure) = (f.steps.clone(), f);
                continue;
            }
        }
        i += 1;
    }
}

/// Replace client ops by simpler variants while the failure keeps its fingerprint.
fn simplify(
    current: &mut [Step],
    failure: &mut Failure,
    fails: &mut dyn FnMut(&[Step]) -> Option<Failure>,
) {
    let mut i = 0;
    while i < current.len() {
        let mut improved = false;
        let Step::Client { op, route, at } = current[i].clone() else {
            i += 1;
            continue;
        };
        for variant in docsim_workloads::simpler(&op) {
            let mut candidate = current.to_vec();
            candidate[i] = Step::Client { op: variant, route, at };
            if let Some(f) = fails(&candidate) {
                if f.steps.len() == candidate.len() {
                    current.clone_from_slice(&candidate);
                    *failure = f;
                    improved = true;
                    break;
                }
            }
        }
        if !improved {
            i += 1;
        }
    }
}
