//! `docsim bench cache`: does a large scan wipe out a node's hot set? One node with its own
//! block cache of 1 MiB (4 KiB blocks) holds a hot set of single-row partitions (about a
//! quarter of the cache in data blocks, read twice to warm) and one partition ten times
//! the cache. Then, `rounds` times: the whole big partition is read (a CQL SELECT of the
//! partition, through the node), and every hot row is read by its key. For the hot reads
//! RocksDB's perf context counts block-cache hits and block reads (reset around them):
//! the hot set's own hit rate while scans stream through the cache. RocksDB's LRU inserts
//! new blocks at low priority and moves a block hit again to the high-priority pool
//! (midpoint insertion), so the hot set, hit twice, should survive the scans. (Whole-tablet
//! walks — dumps, compaction planning — do not fill the cache at all: `Iter::walk`.)

use super::{cql_at, err, table_node, Stopwatch};
use docsim_engine::{Layout, Node, StorageConfig};
use rocksdb::perf::{set_perf_stats, PerfContext, PerfMetric, PerfStatsLevel};
use std::path::Path;

/// The node's block cache, in KiB.
const CACHE_KIB: usize = 1024;
/// Single-row hot partitions: ~120 bytes each, about a quarter of the cache.
const HOT_ROWS: usize = 2_000;
/// Rows of the big partition: ten times the cache.
const SCAN_ROWS: usize = 90_000;
const BIG: usize = 1_000_000_000;

/// What the hot reads saw.
#[derive(Debug, Clone, Copy)]
pub struct CacheBench {
    /// Block-cache hits and block reads (misses) of the hot reads, over all rounds.
    pub hot_hits: u64,
    pub hot_misses: u64,
    /// Blocks the scans read (misses) over all rounds.
    pub scan_misses: u64,
    /// Seconds of the measured phase.
    pub seconds: f64,
}

impl CacheBench {
    /// The hot set's block-cache hit rate.
    pub fn hit_rate(&self) -> f64 {
        self.hot_hits as f64 / (self.hot_hits + self.hot_misses).max(1) as f64
    }
}

/// Block-cache hits and misses of `f`, from the perf context.
fn counted(f: impl FnOnce() -> Result<(), String>) -> Result<(u64, u64), String> {
    let mut perf = PerfContext::default();
    perf.reset();
    f()?;
    let hits = perf.metric(PerfMetric::BlockCacheHitCount);
    Ok((hits, perf.metric(PerfMetric::BlockReadCount)))
}

/// Run the benchmark: `rounds` scans of the big partition, each followed by the hot
/// reads; the node's files under `dir`.
pub fn bench_cache(rounds: usize, dir: &Path) -> Result<CacheBench, String> {
    set_perf_stats(PerfStatsLevel::EnableCount);
    let storage = StorageConfig {
        block_bytes: 4 << 10,
        block_cache_kib: CACHE_KIB,
        layout: Layout::Unpacked,
        ..StorageConfig::default()
    };
    let mut node = table_node(
        dir,
        (storage, false),
        "CREATE TABLE c (k int, t int, v text, PRIMARY KEY ((k), t))",
    )?;
    let body = "x".repeat(90);
    let mut ht = 1_000_000;
    for k in 0..HOT_ROWS {
        ht += 1;
        cql_at(&mut node, ht, &format!("INSERT INTO c (k, t, v) VALUES ({k}, 0, '{body}')"))?;
    }
    for t in 0..SCAN_ROWS {
        ht += 1;
        cql_at(&mut node, ht, &format!("INSERT INTO c (k, t, v) VALUES ({BIG}, {t}, '{body}')"))?;
    }
    node.flush().map_err(err)?;
    let read_hot = |node: &mut Node, ht: u64| -> Result<(), String> {
        (0..HOT_ROWS)
            .try_for_each(|k| cql_at(node, ht, &format!("SELECT v FROM c WHERE k = {k} AND t = 0")))
    };
    ht += 1_000;
    read_hot(&mut node, ht)?;
    read_hot(&mut node, ht)?; // warm: each hot block hit once
    let mut out = CacheBench { hot_hits: 0, hot_misses: 0, scan_misses: 0, seconds: 0.0 };
    let watch = Stopwatch::start();
    for _ in 0..rounds {
        let (_, misses) =
            counted(|| cql_at(&mut node, ht, &format!("SELECT t FROM c WHERE k = {BIG}")))?;
        out.scan_misses += misses;
        let (hits, misses) = counted(|| read_hot(&mut node, ht))?;
        out.hot_hits += hits;
        out.hot_misses += misses;
    }
    out.seconds = watch.seconds();
    set_perf_stats(PerfStatsLevel::Disable);
    Ok(out)
}
