//! `docsim bench prune`: a time-series range query over SST files written in time order.
//! One node writes `FILES` flushes of `HOSTS` partitions (`metrics`, hash key `host`,
//! clustering column `ts`), each flush a later window of `ts`, so file i holds the
//! timestamps of window i for every host. Each query reads one host's rows in a window
//! half a file wide (`host = ? AND ts > ? AND ts < ?`). With range pruning
//! (`db/range_bounds.rs`) a query reads the one or two files whose `ts` bounds meet its
//! window; without it, all of them (every file holds every host, so the bloom filters
//! skip none). Raw RocksDB does the same reads on its own keys (host, then `ts` big-endian)
//! with an iterator from the window's first key to its end, over files flushed alike.
//!
//! Measured per query, in the same run, alternating the three, over `rounds` rounds, with
//! RocksDB's perf context reset around each query: files read (those whose bloom filter
//! let the query's seek in, `bloom_sst_hit_count`: every query seeks in prefix mode on
//! its host's partition, raw RocksDB on a 2-byte prefix extractor, so every file the
//! iterator opens is counted; a file pruning skipped is never opened), blocks read (a
//! 64 KiB block cache, so most blocks come from the files) and wall time.

use super::{cql_at, err, median, table_node, Stopwatch};
use docsim_engine::{Layout, Node, StorageConfig};
use rocksdb::perf::{set_perf_stats, PerfContext, PerfMetric, PerfStatsLevel};
use std::path::Path;

/// SST files written, in time order.
pub const FILES: usize = 16;
/// Partitions (hosts), each with rows in every file.
pub const HOSTS: usize = 8;

/// One reader's measure, per query.
#[derive(Debug, Clone)]
pub struct PruneRun {
    pub name: &'static str,
    pub rows: f64,
    pub files_read: f64,
    pub blocks_read: f64,
    pub us_per_query: f64,
}

/// The three readers' medians over `rounds` rounds of `queries` queries, with
/// `rows_per_window` rows per host per file.
pub fn bench_prune(
    rows_per_window: usize,
    (queries, rounds): (usize, usize),
    dir: &Path,
) -> Result<Vec<PruneRun>, String> {
    let mut pruning = write_node(rows_per_window, true, &dir.join("pruning"))?;
    let mut plain = write_node(rows_per_window, false, &dir.join("plain"))?;
    let raw = write_raw(rows_per_window, &dir.join("raw"))?;
    let windows = windows(rows_per_window, queries);
    let mut runs: [Vec<PruneRun>; 3] = Default::default();
    set_perf_stats(PerfStatsLevel::EnableCount);
    for _ in 0..rounds.max(1) {
        runs[0].push(query_node(&mut pruning, "docsim, pruning", &windows)?);
        runs[1].push(query_node(&mut plain, "docsim, no pruning", &windows)?);
        runs[2].push(query_raw(&raw, &windows)?);
    }
    set_perf_stats(PerfStatsLevel::Disable);
    Ok(runs.into_iter().map(median_run).collect())
}

/// Each query's host and exclusive `ts` bounds, spread over the whole time range.
fn windows(rows_per_window: usize, queries: usize) -> Vec<(usize, i64, i64)> {
    let span = (FILES * rows_per_window) as i64;
    let width = (rows_per_window / 2).max(2) as i64;
    (0..queries)
        .map(|q| {
            let lo = (q as i64 * 7919) % (span - width).max(1);
            (q % HOSTS, lo, lo + width)
        })
        .collect()
}

fn write_node(rows_per_window: usize, pruning: bool, dir: &Path) -> Result<Node, String> {
    let storage = StorageConfig {
        pruning,
        layout: Layout::Unpacked,
        block_cache_kib: 64,
        ..StorageConfig::default()
    };
    let schema = "CREATE TABLE metrics (host text, ts bigint, v text, PRIMARY KEY ((host), ts))";
    let mut node = table_node(dir, (storage, false), schema)?;
    let mut ht = 1_000_000;
    for file in 0..FILES {
        for (host, ts) in window(file, rows_per_window) {
            ht += 1;
            let text =
                format!("INSERT INTO metrics (host, ts, v) VALUES ('h{host}', {ts}, 'v{ts}')");
            cql_at(&mut node, ht, &text)?;
        }
        node.flush().map_err(err)?;
    }
    Ok(node)
}

/// File `file`'s rows: every host's timestamps of window `file`, host by host.
fn window(file: usize, rows_per_window: usize) -> impl Iterator<Item = (usize, i64)> {
    let first = file * rows_per_window;
    (0..HOSTS)
        .flat_map(move |host| (first..first + rows_per_window).map(move |ts| (host, ts as i64)))
}

fn query_node(
    node: &mut Node,
    name: &'static str,
    windows: &[(usize, i64, i64)],
) -> Result<PruneRun, String> {
    let mut perf = PerfContext::default();
    let (mut blocks, mut rows, mut files) = (0, 0, 0);
    let ht = docsim_engine::HybridTime::from_micros(900_000_000);
    let clock = Stopwatch::start();
    for (host, lo, hi) in windows {
        let text =
            format!("SELECT ts, v FROM metrics WHERE host = 'h{host}' AND ts > {lo} AND ts < {hi}");
        let statement = docsim_engine::cql::parse_statement(&text).map_err(err)?;
        perf.reset();
        if let docsim_engine::cql::Outcome::Rows(found) = node.cql(ht, &statement).map_err(err)? {
            rows += found.len();
        }
        blocks += perf.metric(PerfMetric::BlockReadCount);
        files += perf.metric(PerfMetric::BloomSstHitCount);
    }
    let seconds = clock.seconds();
    Ok(per_query(name, windows.len(), (rows, files, blocks), seconds))
}

/// Raw RocksDB's key for a host's row: `h`, the host, then `ts` big-endian.
fn raw_key(host: usize, ts: i64) -> Vec<u8> {
    let mut key = vec![b'h', host as u8];
    key.extend_from_slice(&ts.to_be_bytes());
    key
}

/// Raw RocksDB with the node's block size, bloom bits and cache size, written in the same
/// flushes.
fn write_raw(rows_per_window: usize, dir: &Path) -> Result<rocksdb::DB, String> {
    let mut table = rocksdb::BlockBasedOptions::default();
    table.set_block_cache(&rocksdb::Cache::new_lru_cache(64 << 10));
    table.set_cache_index_and_filter_blocks(true);
    table.set_bloom_filter(10.0, false);
    table.set_block_size(StorageConfig::default().block_bytes);
    let mut opts = rocksdb::Options::default();
    opts.set_prefix_extractor(rocksdb::SliceTransform::create_fixed_prefix(2)); // `h`, host
    opts.create_if_missing(true);
    opts.set_disable_auto_compactions(true);
    opts.set_block_based_table_factory(&table);
    let db = rocksdb::DB::open(&opts, dir).map_err(err)?;
    for file in 0..FILES {
        for (host, ts) in window(file, rows_per_window) {
            db.put(raw_key(host, ts), format!("v{ts}")).map_err(err)?;
        }
        db.flush().map_err(err)?;
    }
    Ok(db)
}

fn query_raw(db: &rocksdb::DB, windows: &[(usize, i64, i64)]) -> Result<PruneRun, String> {
    let mut perf = PerfContext::default();
    let (mut blocks, mut rows, mut files) = (0, 0, 0);
    let clock = Stopwatch::start();
    for (host, lo, hi) in windows {
        perf.reset();
        let mut read = rocksdb::ReadOptions::default();
        read.set_prefix_same_as_start(true);
        read.set_iterate_upper_bound(raw_key(*host, *hi));
        let mut it = db.raw_iterator_opt(read);
        it.seek(raw_key(*host, lo + 1));
        while it.valid() {
            rows += 1;
            it.next();
        }
        it.status().map_err(err)?;
        blocks += perf.metric(PerfMetric::BlockReadCount);
        files += perf.metric(PerfMetric::BloomSstHitCount);
    }
    let seconds = clock.seconds();
    Ok(per_query("raw RocksDB", windows.len(), (rows, files, blocks), seconds))
}

fn per_query(
    name: &'static str,
    queries: usize,
    (rows, files, blocks): (usize, u64, u64),
    seconds: f64,
) -> PruneRun {
    let n = queries.max(1) as f64;
    PruneRun {
        name,
        rows: rows as f64 / n,
        files_read: files as f64 / n,
        blocks_read: blocks as f64 / n,
        us_per_query: seconds * 1e6 / n,
    }
}

/// The run of median time (its counts are the same in every round).
fn median_run(mut runs: Vec<PruneRun>) -> PruneRun {
    runs.sort_by(|a, b| a.us_per_query.total_cmp(&b.us_per_query));
    let times: Vec<f64> = runs.iter().map(|r| r.us_per_query).collect();
    let mid = median(&times);
    runs.into_iter().find(|r| r.us_per_query == mid).expect("a median run")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pruning reads fewer files than the same engine without it, and both readers of the
    /// engine and raw RocksDB return the same rows.
    #[test]
    fn pruning_reads_fewer_files_for_the_same_rows() {
        let dir = std::env::temp_dir().join(format!("docsim-bench-prune-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let runs = bench_prune(20, (40, 1), &dir).expect("bench runs");
        let _ = std::fs::remove_dir_all(&dir);
        let [pruning, plain, raw] = [&runs[0], &runs[1], &runs[2]];
        assert!(pruning.rows > 0.0 && pruning.rows == plain.rows && plain.rows == raw.rows);
        assert!(pruning.files_read > 0.0 && pruning.files_read <= 2.0, "{pruning:?}");
        assert_eq!(plain.files_read, FILES as f64, "{plain:?}");
        assert_eq!(raw.files_read, FILES as f64, "{raw:?}");
    }
}
