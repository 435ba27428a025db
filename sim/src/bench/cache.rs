//! `docsim bench cache`: does a large scan wipe out a node's hot set? One node with its own
//! block cache of 1 MiB (4 KiB blocks) holds a hot set of single-row partitions (about a
//! quarter of the cache in data blocks, read twice to warm) and one partition ten times
//! the cache. Then, `scans` times: the whole big partition is read (a CQL SELECT of the
//! partition, through the node), and every hot row is read by its key. For the hot reads
//! RocksDB's perf context counts block-cache hits and block reads (reset around them):
//! the hot set's own hit rate while scans stream through the cache. RocksDB's LRU inserts
//! new blocks at low priority and moves a block hit again to the high-priority pool
//! (midpoint insertion), so the hot set, hit twice, should survive the scans. (Whole-tablet
//! walks — dumps, compaction planning — do not fill the cache at all: `Iter::walk`.)
//!
//! In the same run, the feature off: a second node, written the same (it must store the
//! same pairs), whose cache is an LRU without a high-priority pool
//! (`Rocks::without_midpoint_insertion`: `high_pri_pool_ratio` 0, which RocksDB's C API
//! cannot set; the engine's shim makes the cache), does the same reads. And raw RocksDB
//! (`raw.rs`: the same block size, its own LRU cache of the same size, bloom filters over
//! the partition prefix) holds the exact pairs the node stored, in one flush, and does the
//! same reads, with RocksDB's default LRU and with the shim's cache without midpoint
//! insertion: each hot row a seek to its document key in prefix mode, each scan a seek to
//! the big partition's prefix and every pair under it, through one iterator in prefix mode
//! kept for all. Each run measures the four in turn, each anew.

use super::raw::{self, RawSetup};
use super::{counted_reads, cql_at, err, median_of, pairs_by_write, table_node_with, RowPairs};
use docsim_engine::cql::{parse_statement, Outcome, Statement};
use docsim_engine::{HybridTime, Layout, Node, Rocks, StorageConfig};
use rocksdb::perf::PerfMetric;
use std::collections::BTreeMap;
use std::path::Path;

/// The sizes of the benchmark.
#[derive(Clone, Copy, Debug)]
pub struct CacheShape {
    /// The node's block cache (and raw RocksDB's), in KiB.
    pub cache_kib: usize,
    /// Single-row hot partitions.
    pub hot_rows: usize,
    /// Rows of the big partition.
    pub scan_rows: usize,
}

impl CacheShape {
    /// `docsim bench cache`: a 1 MiB cache, 2,000 hot rows of ~120 bytes (about a quarter
    /// of it), a big partition of 90,000 rows (ten times it).
    pub const BENCH: CacheShape =
        CacheShape { cache_kib: 1024, hot_rows: 2_000, scan_rows: 90_000 };
}

const BIG: usize = 1_000_000_000;
const BLOCK_BYTES: usize = 4 << 10;
const METRICS: [PerfMetric; 2] = [PerfMetric::BlockCacheHitCount, PerfMetric::BlockReadCount];

/// What one setup's reads saw in one run.
#[derive(Debug, Clone, Copy, Default)]
pub struct CacheBench {
    /// Block-cache hits and block reads (misses) of the hot reads, over all scans.
    pub hot_hits: u64,
    pub hot_misses: u64,
    /// Hot reads, and those that found their row.
    pub hot_reads: usize,
    pub hot_found: usize,
    /// Blocks the scans read (misses), the scans, and those that read the whole partition.
    pub scan_misses: u64,
    pub scans: usize,
    pub whole_scans: usize,
    /// Wall seconds of the hot reads and of the scans (after the warm-up).
    pub hot_seconds: f64,
    pub scan_seconds: f64,
}

impl CacheBench {
    /// The hot set's block-cache hit rate.
    pub fn hit_rate(&self) -> f64 {
        self.hot_hits as f64 / (self.hot_hits + self.hot_misses).max(1) as f64
    }

    /// Microseconds per hot read.
    pub fn us_per_hot_read(&self) -> f64 {
        self.hot_seconds * 1e6 / self.hot_reads.max(1) as f64
    }

    /// Milliseconds per scan.
    pub fn ms_per_scan(&self) -> f64 {
        self.scan_seconds * 1e3 / self.scans.max(1) as f64
    }
}

/// One run: the node, and raw RocksDB doing the same reads, each with midpoint insertion
/// (RocksDB's default LRU) and without.
#[derive(Debug, Clone, Copy)]
pub struct CacheRun {
    pub docsim: CacheBench,
    pub docsim_no_midpoint: CacheBench,
    pub raw: CacheBench,
    pub raw_no_midpoint: CacheBench,
}

/// A read of the benchmark: the big partition's scan, or hot row `k`.
#[derive(Clone, Copy)]
enum Read {
    Scan,
    Hot(usize),
}

/// Run the benchmark `runs` times, each on new nodes and raw databases under `dir`:
/// `scans` scans of the big partition, each followed by the hot reads.
pub fn bench_cache(
    shape: CacheShape,
    scans: usize,
    runs: usize,
    dir: &Path,
) -> Result<Vec<CacheRun>, String> {
    (0..runs).map(|run| cache_run(shape, scans, &dir.join(format!("run-{run}")))).collect()
}

/// One run: the node with midpoint insertion, the node without, then raw RocksDB with
/// and without, on the pairs the nodes stored (each node dropped after its reads).
fn cache_run(shape: CacheShape, scans: usize, dir: &Path) -> Result<CacheRun, String> {
    let mut node = written_node(shape, true, &dir.join("docsim"))?;
    let docsim = node_reads(&mut node, shape, scans)?;
    let writes = pairs_by_write(&node)?;
    drop(node);
    let mut node = written_node(shape, false, &dir.join("docsim-no-midpoint"))?;
    let docsim_no_midpoint = node_reads(&mut node, shape, scans)?;
    if pairs_by_write(&node)? != writes {
        return Err("the node without midpoint insertion stored other pairs".into());
    }
    drop(node);
    let raw = raw_reads(&writes, shape, scans, (true, &dir.join("raw")))?;
    let raw_no_midpoint = raw_reads(&writes, shape, scans, (false, &dir.join("raw-no-midpoint")))?;
    Ok(CacheRun { docsim, docsim_no_midpoint, raw, raw_no_midpoint })
}

/// The node, its cache with midpoint insertion or not, with the hot rows (written first,
/// `k` = 0, 1, ...) and the big partition, in one flush.
fn written_node(shape: CacheShape, midpoint: bool, dir: &Path) -> Result<Node, String> {
    let storage = StorageConfig {
        block_bytes: BLOCK_BYTES,
        block_cache_kib: shape.cache_kib,
        layout: Layout::Unpacked,
        ..StorageConfig::default()
    };
    let rocks = match midpoint {
        true => Rocks::new(false, shape.cache_kib << 10),
        false => Rocks::without_midpoint_insertion(false, shape.cache_kib << 10),
    };
    let mut node = table_node_with(
        dir,
        (storage, false),
        rocks.map_err(err)?,
        "CREATE TABLE c (k int, t int, v text, PRIMARY KEY ((k), t))",
    )?;
    let body = "x".repeat(90);
    let mut ht = 1_000_000;
    for k in 0..shape.hot_rows {
        ht += 1;
        cql_at(&mut node, ht, &format!("INSERT INTO c (k, t, v) VALUES ({k}, 0, '{body}')"))?;
    }
    for t in 0..shape.scan_rows {
        ht += 1;
        cql_at(&mut node, ht, &format!("INSERT INTO c (k, t, v) VALUES ({BIG}, {t}, '{body}')"))?;
    }
    node.flush().map_err(err)?;
    Ok(node)
}

/// The benchmark's reads through the node, CQL statements parsed beforehand.
fn node_reads(node: &mut Node, shape: CacheShape, scans: usize) -> Result<CacheBench, String> {
    let parse = |text: String| parse_statement(&text).map_err(err);
    let hot: Vec<Statement> = (0..shape.hot_rows)
        .map(|k| parse(format!("SELECT v FROM c WHERE k = {k} AND t = 0")))
        .collect::<Result<_, _>>()?;
    let scan = parse(format!("SELECT t FROM c WHERE k = {BIG}"))?;
    let read_ht = HybridTime::from_micros(10_000_000);
    measure(shape, scans, |read| {
        let statement = match read {
            Read::Scan => &scan,
            Read::Hot(k) => &hot[k],
        };
        match node.cql(read_ht, statement).map_err(err)? {
            Outcome::Rows(rows) => Ok(rows.len()),
            Outcome::Written => Ok(0),
        }
    })
}

/// The same reads by raw RocksDB holding the pairs the node stored (`writes`), its cache
/// with midpoint insertion or not.
fn raw_reads(
    writes: &BTreeMap<u64, RowPairs>,
    shape: CacheShape,
    scans: usize,
    (midpoint_insertion, dir): (bool, &Path),
) -> Result<CacheBench, String> {
    let keys = writes.values().flat_map(|pairs| pairs.iter().map(|(k, _)| k.as_slice()));
    let prefix_len = raw::common_prefix_len(keys)?;
    let setup = RawSetup {
        block_bytes: BLOCK_BYTES,
        cache_bytes: shape.cache_kib << 10,
        midpoint_insertion,
        bloom: true,
        prefix_len: Some(prefix_len),
        write_buffer_bytes: StorageConfig::default().memtable_mib << 20,
    };
    let db = raw::open(dir, setup)?;
    let mut batch = rocksdb::WriteBatch::default();
    writes.values().flatten().for_each(|(k, v)| batch.put(k, v));
    db.write(batch).map_err(err)?;
    db.flush().map_err(err)?;
    // The writes in order: the hot rows first, then the big partition's.
    let hot: Vec<&[u8]> =
        writes.values().take(shape.hot_rows).map(|p| raw::doc_key(&p[0].0)).collect();
    let big = writes.values().last().ok_or("nothing stored")?[0].0[..prefix_len].to_vec();
    let mut it = raw::prefix_iterator(&db);
    measure(shape, scans, |read| match read {
        // One row: liveness column and `v` (the scan reads `t`, the row's key: any pair).
        Read::Scan => Ok(raw::scan(&mut it, &big, &big) / 2),
        Read::Hot(k) => Ok(raw::scan(&mut it, hot[k], hot[k])),
    })
}

/// Warm the hot set (two reads each), then `scans` times: the scan, then every hot read,
/// each counted; `read` answers how many rows (raw: pairs) it read.
fn measure(
    shape: CacheShape,
    scans: usize,
    mut read: impl FnMut(Read) -> Result<usize, String>,
) -> Result<CacheBench, String> {
    for _ in 0..2 {
        (0..shape.hot_rows).try_for_each(|k| read(Read::Hot(k)).map(drop))?;
    }
    let mut out = CacheBench::default();
    for _ in 0..scans {
        let scanned = counted_reads(1, &METRICS, |_| Ok(read(Read::Scan)? == shape.scan_rows))?;
        out.scans += 1;
        out.whole_scans += scanned.found;
        out.scan_misses += scanned.sums[1];
        out.scan_seconds += scanned.seconds;
        let hot = counted_reads(shape.hot_rows, &METRICS, |k| Ok(read(Read::Hot(k))? > 0))?;
        out.hot_reads += hot.reads;
        out.hot_found += hot.found;
        out.hot_hits += hot.sums[0];
        out.hot_misses += hot.sums[1];
        out.hot_seconds += hot.seconds;
    }
    Ok(out)
}

/// Which setup's reads of a run.
type Pick = fn(&CacheRun) -> &CacheBench;

/// A row of the report: its name, its setup, and raw RocksDB's with the same cache.
type Setup = (&'static str, Pick, Pick);

const SETUPS: [Setup; 4] = [
    ("docsim", |r| &r.docsim, |r| &r.raw),
    ("docsim, no midpoint insertion", |r| &r.docsim_no_midpoint, |r| &r.raw_no_midpoint),
    ("raw RocksDB", |r| &r.raw, |r| &r.raw),
    ("raw, no midpoint insertion", |r| &r.raw_no_midpoint, |r| &r.raw_no_midpoint),
];

/// The report of `docsim bench cache`: per setup, the medians over the runs, then each
/// of the node and raw RocksDB with midpoint insertion off against on.
pub fn format_report(shape: CacheShape, scans: usize, runs: &[CacheRun]) -> String {
    let mut out = format!(
        "a block cache of {} KiB: a hot set of {} single-row partitions read after each of \
         {scans} scans of a {}-row partition; {} runs, medians:\n",
        shape.cache_kib,
        shape.hot_rows,
        shape.scan_rows,
        runs.len()
    );
    out += &format!(
        "{:<29} {:>9} {:>9} {:>11} {:>9} {:>11} {:>6} {:>8} {:>6}  {}\n",
        "",
        "hit rate",
        "hot hits",
        "hot misses",
        "hot found",
        "µs/hot read",
        "vs raw",
        "ms/scan",
        "vs raw",
        "scan block reads"
    );
    SETUPS.into_iter().for_each(|setup| out += &setup_line(setup, runs));
    out += &off_against_on("docsim", runs, |r| &r.docsim, |r| &r.docsim_no_midpoint);
    out += &off_against_on("raw RocksDB", runs, |r| &r.raw, |r| &r.raw_no_midpoint);
    out += "(vs raw: against raw RocksDB with the same cache. raw RocksDB: the pairs the node \
            stored, in one flush; the same block size and cache size, bloom filters over the \
            partition prefix; hot reads seek the row, scans the partition, in prefix mode \
            through one iterator kept for all. No midpoint insertion: an LRU cache with \
            high_pri_pool_ratio 0, made by the engine's shim)\n";
    out
}

/// The median over the runs of `f` of a setup's reads.
fn med(runs: &[CacheRun], of: Pick, f: impl Fn(&CacheBench) -> f64) -> f64 {
    median_of(runs.iter().map(|r| f(of(r))))
}

/// One setup's row of the report.
fn setup_line((name, of, raw): Setup, runs: &[CacheRun]) -> String {
    let (us, ms) =
        (med(runs, of, CacheBench::us_per_hot_read), med(runs, of, CacheBench::ms_per_scan));
    let raw_us = med(runs, raw, CacheBench::us_per_hot_read);
    let raw_ms = med(runs, raw, CacheBench::ms_per_scan);
    format!(
        "{name:<29} {:>8.1}% {:>9.0} {:>11.0} {:>9.0} {us:>11.2} {:>5.2}x {ms:>8.2} {:>5.2}x  \
         {:.0}\n",
        med(runs, of, CacheBench::hit_rate) * 100.0,
        med(runs, of, |b| b.hot_hits as f64),
        med(runs, of, |b| b.hot_misses as f64),
        med(runs, of, |b| b.hot_found as f64),
        us / raw_us,
        ms / raw_ms,
        med(runs, of, |b| b.scan_misses as f64),
    )
}

/// What turning midpoint insertion off changes for `name` (`on`, `off`: its setups).
fn off_against_on(name: &str, runs: &[CacheRun], on: Pick, off: Pick) -> String {
    let both = |f: fn(&CacheBench) -> f64| (med(runs, off, f), med(runs, on, f));
    let (rate_off, rate_on) = both(CacheBench::hit_rate);
    let (misses_off, misses_on) = both(|b| b.hot_misses as f64);
    let (us_off, us_on) = both(CacheBench::us_per_hot_read);
    let (ms_off, ms_on) = both(CacheBench::ms_per_scan);
    format!(
        "{name}, midpoint insertion off against on: hit rate {:.1}% against {:.1}%, hot \
         misses {misses_off:.0} against {misses_on:.0}, time per hot read {:.2}x, per scan \
         {:.2}x\n",
        rate_off * 100.0,
        rate_on * 100.0,
        us_off / us_on,
        ms_off / ms_on,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tenth of the bench, two scans: the nodes and raw RocksDB, with midpoint insertion
    /// and without, all read the whole partition and every hot row each time. With it the
    /// hot set stays in the cache; without it the scans evict the hot set's blocks, and
    /// its hit rate is clearly lower, in the node as in raw RocksDB.
    #[test]
    fn bench_cache_small_run_keeps_the_hot_set_only_with_midpoint_insertion() {
        let scratch = crate::ScratchDir::new().expect("scratch dir");
        let shape = CacheShape { cache_kib: 128, hot_rows: 200, scan_rows: 9_000 };
        let run = bench_cache(shape, 2, 1, scratch.path()).expect("bench")[0];
        for b in [run.docsim, run.docsim_no_midpoint, run.raw, run.raw_no_midpoint] {
            assert_eq!((b.scans, b.whole_scans), (2, 2), "{b:?}");
            assert_eq!((b.hot_reads, b.hot_found), (400, 400), "{b:?}");
            assert!(b.scan_misses > 0 && b.hot_seconds > 0.0, "{b:?}");
        }
        for (on, off) in [(run.docsim, run.docsim_no_midpoint), (run.raw, run.raw_no_midpoint)] {
            assert!(on.hit_rate() > 0.9, "{on:?}");
            // Each scan evicts the hot set's blocks (about ten here; the hot rows share
            // them): a point of hit rate at least, and more misses than scans.
            let fewer = on.hit_rate() - off.hit_rate();
            assert!(fewer > 0.01 && off.hot_misses > on.hot_misses + 2, "{on:?} {off:?}");
        }
        let report = format_report(shape, 2, &[run]);
        assert!(report.contains("docsim, no midpoint insertion"), "{report}");
    }
}
