//! `docsim bench snapshot`: the time a table's snapshot takes (the engine's flush, the
//! checkpoint beside the tablet, its record, the rename and directory syncs) as the table
//! grows, against raw RocksDB doing the same work on the same medium (a flush of the same
//! key/value pairs, then a checkpoint into a new directory).

use super::{cql_at, err, insert, pairs_by_write, table_node, Stopwatch, SCHEMA};
use docsim_engine::{HybridTime, SnapshotOp, StorageConfig};
use std::path::Path;

/// One table size's times, in milliseconds.
pub struct SnapshotRun {
    pub rows: usize,
    /// The engine's snapshot of the table with its last writes unflushed.
    pub engine_ms: f64,
    /// Raw RocksDB's flush and checkpoint of the same pairs.
    pub raw_ms: f64,
}

/// Time a snapshot of a table of each of `sizes` rows, the median of `rounds` each.
pub fn bench_snapshot(
    sizes: &[usize],
    rounds: usize,
    dir: &Path,
) -> Result<Vec<SnapshotRun>, String> {
    let mut out = Vec::new();
    for &rows in sizes {
        let (mut engine, mut raw) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            let here = dir.join(format!("{rows}-{round}"));
            let (e, r) = one(rows, &here)?;
            engine.push(e);
            raw.push(r);
        }
        out.push(SnapshotRun {
            rows,
            engine_ms: super::median_of(engine) * 1e3,
            raw_ms: super::median_of(raw) * 1e3,
        });
    }
    Ok(out)
}

/// One table of `rows` rows: the engine's snapshot time and raw RocksDB's, in seconds.
fn one(rows: usize, dir: &Path) -> Result<(f64, f64), String> {
    let mut node = table_node(&dir.join("engine"), (StorageConfig::default(), false), SCHEMA)?;
    for i in 0..rows {
        cql_at(&mut node, 1_000_000 + i as u64, &insert(i).to_string())?;
    }
    let at = HybridTime::from_micros(1_000_000 + rows as u64 + 1);
    let watch = Stopwatch::start();
    node.snapshot("bench", SnapshotOp::Create("s1".into()), at).map_err(err)?;
    let engine = watch.seconds();
    let pairs = pairs_by_write(&node)?;
    let raw_path = dir.join("raw");
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    opts.set_disable_auto_compactions(true);
    let raw_db = rocksdb::DB::open(&opts, &raw_path).map_err(err)?;
    let mut wo = rocksdb::WriteOptions::default();
    wo.disable_wal(true);
    for row in pairs.values() {
        let mut batch = rocksdb::WriteBatch::default();
        row.iter().for_each(|(k, v)| batch.put(k, v));
        raw_db.write_opt(batch, &wo).map_err(err)?;
    }
    let watch = Stopwatch::start();
    raw_db.flush().map_err(err)?;
    let checkpoint = rocksdb::checkpoint::Checkpoint::new(&raw_db).map_err(err)?;
    checkpoint
        .create_checkpoint_with_log_size(dir.join("raw-checkpoint"), u64::MAX)
        .map_err(err)?;
    Ok((engine, watch.seconds()))
}

/// The report lines.
pub fn format_report(runs: &[SnapshotRun]) -> Vec<String> {
    let mut lines =
        vec![format!("{:>8} {:>12} {:>12} {:>8}", "rows", "engine ms", "raw ms", "ratio")];
    for r in runs {
        lines.push(format!(
            "{:>8} {:>12.2} {:>12.2} {:>7.2}x",
            r.rows,
            r.engine_ms,
            r.raw_ms,
            r.engine_ms / r.raw_ms.max(1e-9)
        ));
    }
    lines
}
