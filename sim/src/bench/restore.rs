//! `docsim bench restore`: the time a table's restore takes against the alternative a
//! user has without one, writing the same rows again through the engine, in the same run
//! on the same medium. Each table of `n` rows is snapshotted, then every row is updated
//! (the state the restore undoes); then:
//!
//! - `snapshot`: `restore <snapshot> <table>` (the checkpoint linked in beside the
//!   tablet, the newer entries gone, the swap: `engine/src/db/restore.rs`);
//! - `time`: `restore <table> to <T>` with T just before the updates (a checkpoint of the
//!   live data, every entry after T deleted, the swap);
//! - `rewrite`: the snapshot's `n` rows inserted again, one statement each, then a flush
//!   (the restore's result is durable; so is the rewrite's).

use super::{cql_at, err, insert, table_node, Stopwatch, SCHEMA};
use docsim_engine::cql::{Literal, Statement};
use docsim_engine::{HybridTime, RestoreTarget, SnapshotOp, StorageConfig};
use std::path::Path;

/// One table size's times, in milliseconds.
pub struct RestoreRun {
    pub rows: usize,
    pub snapshot_ms: f64,
    pub time_ms: f64,
    pub rewrite_ms: f64,
}

/// Time the restores of a table of each of `sizes` rows, the median of `rounds` each.
pub fn bench_restore(
    sizes: &[usize],
    rounds: usize,
    dir: &Path,
) -> Result<Vec<RestoreRun>, String> {
    let mut out = Vec::new();
    for &rows in sizes {
        let mut times: [Vec<f64>; 3] = Default::default();
        for round in 0..rounds {
            let here = dir.join(format!("{rows}-{round}"));
            let one = one(rows, &here)?;
            (0..3).for_each(|i| times[i].push(one[i]));
        }
        let [s, t, w] = times.map(|t| super::median_of(t) * 1e3);
        out.push(RestoreRun { rows, snapshot_ms: s, time_ms: t, rewrite_ms: w });
    }
    Ok(out)
}

/// One table of `rows` rows: the seconds of each restore, and of the rewrite.
fn one(rows: usize, dir: &Path) -> Result<[f64; 3], String> {
    let mut node = table_node(&dir.join("engine"), (StorageConfig::default(), false), SCHEMA)?;
    let mut now = 1_000_000u64;
    for i in 0..rows {
        now += 1;
        cql_at(&mut node, now, &insert(i).to_string())?;
    }
    now += 1;
    node.snapshot("bench", SnapshotOp::Create("s1".into()), HybridTime::from_micros(now))
        .map_err(err)?;
    let before_updates = HybridTime::from_micros(now);
    for i in 0..rows {
        now += 1;
        let mut update = insert(i);
        if let Statement::Insert { values, .. } = &mut update {
            values[2] = Literal::Str(format!("rewritten {i}"));
        }
        cql_at(&mut node, now, &update.to_string())?;
    }
    let mut timed = |target: RestoreTarget, now: &mut u64| -> Result<f64, String> {
        *now += 1;
        let watch = Stopwatch::start();
        node.restore("bench", target, HybridTime::from_micros(*now)).map_err(err)?;
        Ok(watch.seconds())
    };
    let time = timed(RestoreTarget::Time(before_updates), &mut now)?;
    let snapshot = timed(RestoreTarget::Snapshot("s1".into()), &mut now)?;
    let watch = Stopwatch::start();
    for i in 0..rows {
        now += 1;
        cql_at(&mut node, now, &insert(i).to_string())?;
    }
    node.flush().map_err(err)?;
    Ok([snapshot, time, watch.seconds()])
}

/// The report lines.
pub fn format_report(runs: &[RestoreRun]) -> Vec<String> {
    let head = ["rows", "snapshot ms", "time ms", "rewrite ms", "snap/rw", "time/rw"];
    let mut lines = vec![format!(
        "{:>8} {:>12} {:>12} {:>12} {:>8} {:>8}",
        head[0], head[1], head[2], head[3], head[4], head[5]
    )];
    for r in runs {
        let ratio = |ms: f64| ms / r.rewrite_ms.max(1e-9);
        lines.push(format!(
            "{:>8} {:>12.2} {:>12.2} {:>12.2} {:>7.2}x {:>7.2}x",
            r.rows,
            r.snapshot_ms,
            r.time_ms,
            r.rewrite_ms,
            ratio(r.snapshot_ms),
            ratio(r.time_ms)
        ));
    }
    lines
}
