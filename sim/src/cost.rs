//! Where a replicated run's wall-clock time goes, for the campaign summary: the replicas'
//! own work (raft-rs, the log on the simulated disk, RocksDB) in their nodes' tasks, the
//! clients' calls into replicas (propose, read), and the checker (the whole-history check,
//! the final reads and dumps). The rest is madsim's scheduler, the controller and the
//! workload. Measured with the real clock; reported, never traced, never steering.

use crate::bench::Stopwatch;
use std::cell::Cell;

/// A part of a run's work.
#[derive(Clone, Copy)]
pub enum Part {
    Replicas,
    ClientCalls,
    Check,
}

thread_local! {
    /// Seconds spent per part on this thread (a run owns its thread).
    static SPENT: Cell<[f64; 3]> = const { Cell::new([0.0; 3]) };
}

/// Run `f`, adding its wall time to `part`.
pub fn timed<T>(part: Part, f: impl FnOnce() -> T) -> T {
    let watch = Stopwatch::start();
    let out = f();
    let seconds = watch.seconds();
    SPENT.with(|spent| {
        let mut parts = spent.get();
        parts[part as usize] += seconds;
        spent.set(parts);
    });
    out
}

/// This thread's seconds per part (replicas, client calls, check) since the last call.
pub fn take() -> [f64; 3] {
    SPENT.with(|spent| spent.replace([0.0; 3]))
}
