//! `docsim bench bloom`: how many SST files a point read looks into. One node writes
//! `rows` single-row partitions in 16 flushes (16 SST files, each row in one of them),
//! then reads every row by its key through the node (a CQL SELECT: a seek in prefix mode
//! on the row's partition, `db/kept_iter.rs`). RocksDB's perf context, reset around each
//! read, counts the files whose bloom filter let the read in (`bloom_sst_hit_count`),
//! those it kept out (`bloom_sst_miss_count`) and the blocks read (a 64 KiB cache). With
//! filters keyed by partition (`encoding::bloom_prefix_len`) a read should enter about
//! the one file holding its row; the same node without bloom filters enters them all.
//!
//! In the same run, raw RocksDB (`raw.rs`: 32 KiB blocks, its own 64 KiB cache, bloom
//! filters of 10 bits per key over a fixed prefix as long as the partition's) writes the
//! exact pairs the node stored, the same rows in the same 16 flushes, and reads each row
//! as the node does: a seek to the row's document key through one iterator in prefix mode
//! (`prefix_same_as_start`) kept for all reads, copying out its pairs. Every setup's reads
//! are timed; each run builds everything anew.

use super::raw::{self, RawSetup};
use super::{counted_reads, cql_at, err, median_of, pairs_by_write, table_node, Counted};
use docsim_engine::cql::{parse_statement, Outcome, Statement};
use docsim_engine::{HybridTime, Layout, Node, StorageConfig};
use rocksdb::perf::PerfMetric;
use std::path::Path;

/// SST files the rows are written into.
pub const FILES: usize = 16;

/// What the reads count, in this order.
const METRICS: [PerfMetric; 3] =
    [PerfMetric::BloomSstHitCount, PerfMetric::BloomSstMissCount, PerfMetric::BlockReadCount];

/// One setup's reads of one run: per read on average, files the bloom filters let in and
/// kept out, blocks read, and wall time.
#[derive(Debug, Clone)]
pub struct BloomReads(pub Counted);

impl BloomReads {
    pub fn files_entered(&self) -> f64 {
        self.0.per_read(0)
    }
    pub fn files_skipped(&self) -> f64 {
        self.0.per_read(1)
    }
    pub fn blocks_read(&self) -> f64 {
        self.0.per_read(2)
    }
}

/// One run: the node with bloom filters, the node without, raw RocksDB.
#[derive(Debug, Clone)]
pub struct BloomRun {
    pub bloom: BloomReads,
    pub no_bloom: BloomReads,
    pub raw: BloomReads,
}

/// Write `rows` rows into 16 files and read each once, with each setup, `runs` times.
pub fn bench_bloom(rows: usize, runs: usize, dir: &Path) -> Result<Vec<BloomRun>, String> {
    (0..runs)
        .map(|run| {
            let dir = dir.join(format!("run-{run}"));
            let (mut node, hts) = written_node(rows, true, &dir.join("bloom"))?;
            let bloom = node_reads(&mut node, rows)?;
            let raw = raw_reads(&node, &hts, &dir.join("raw"))?;
            drop(node);
            let no_bloom = node_reads(&mut written_node(rows, false, &dir.join("plain"))?.0, rows)?;
            Ok(BloomRun { bloom, no_bloom, raw })
        })
        .collect()
}

/// A node (with bloom filters or not) holding `rows` rows in 16 files, row k in file
/// k % 16; the hybrid time (µs) each row was written at, by k.
fn written_node(rows: usize, bloom: bool, dir: &Path) -> Result<(Node, Vec<u64>), String> {
    let storage = StorageConfig {
        bloom_filter: bloom,
        layout: Layout::Unpacked,
        block_cache_kib: 64,
        ..StorageConfig::default()
    };
    let mut node =
        table_node(dir, (storage, false), "CREATE TABLE p (k int, v text, PRIMARY KEY ((k)))")?;
    let (mut ht, mut hts) = (1_000_000, vec![0; rows]);
    for file in 0..FILES {
        for k in (file..rows).step_by(FILES) {
            ht += 1;
            cql_at(&mut node, ht, &format!("INSERT INTO p (k, v) VALUES ({k}, 'value {k}')"))?;
            hts[k] = ht;
        }
        node.flush().map_err(err)?;
    }
    Ok((node, hts))
}

/// Read every row once through `node` by its key (statements parsed beforehand).
fn node_reads(node: &mut Node, rows: usize) -> Result<BloomReads, String> {
    let statements: Vec<Statement> = (0..rows)
        .map(|k| parse_statement(&format!("SELECT v FROM p WHERE k = {k}")).map_err(err))
        .collect::<Result<_, _>>()?;
    let read_ht = HybridTime::from_micros(10_000_000);
    let counted = counted_reads(rows, &METRICS, |k| match node.cql(read_ht, &statements[k]) {
        Ok(Outcome::Rows(found)) => Ok(found.len() == 1),
        Ok(Outcome::Written) => Ok(false),
        Err(e) => Err(err(e)),
    })?;
    Ok(BloomReads(counted))
}

/// Raw RocksDB writing the pairs `node` stored, row k (written at `hts[k]`) in file
/// k % 16, then reading every row once.
fn raw_reads(node: &Node, hts: &[u64], dir: &Path) -> Result<BloomReads, String> {
    let writes = pairs_by_write(node)?;
    let pairs = |k: usize| writes.get(&hts[k]).ok_or("a row not stored");
    let keys = writes.values().flat_map(|pairs| pairs.iter().map(|(k, _)| k.as_slice()));
    let prefix_len = raw::common_prefix_len(keys)?;
    let setup = RawSetup {
        block_bytes: StorageConfig::default().block_bytes,
        cache_bytes: 64 << 10,
        midpoint_insertion: true,
        bloom: true,
        prefix_len: Some(prefix_len),
        write_buffer_bytes: StorageConfig::default().memtable_mib << 20,
    };
    let db = raw::open(dir, setup)?;
    for file in 0..FILES {
        let mut batch = rocksdb::WriteBatch::default();
        for k in (file..hts.len()).step_by(FILES) {
            pairs(k)?.iter().for_each(|(key, value)| batch.put(key, value));
        }
        db.write(batch).map_err(err)?;
        db.flush().map_err(err)?;
    }
    let seeks: Vec<Vec<u8>> = (0..hts.len())
        .map(|k| Ok(raw::doc_key(&pairs(k)?[0].0).to_vec()))
        .collect::<Result<_, String>>()?;
    let mut it = raw::prefix_iterator(&db);
    let counted =
        counted_reads(seeks.len(), &METRICS, |k| Ok(raw::scan(&mut it, &seeks[k], &seeks[k]) > 0))?;
    Ok(BloomReads(counted))
}

/// Which setup's reads of a run.
type Pick = fn(&BloomRun) -> &BloomReads;

/// The report of `docsim bench bloom`: per setup, the medians over the runs of the counts
/// per read and of the time per read, each run's time, and the ratio to raw RocksDB's.
pub fn format_report(rows: usize, runs: &[BloomRun]) -> String {
    let mut out = format!(
        "point reads of {rows} rows written once into {FILES} SST files, per read; \
         {} runs, medians:\n",
        runs.len()
    );
    out += &format!(
        "{:<14} {:>13} {:>13} {:>11} {:>8} {:>7} {:>6}  µs/read by run\n",
        "", "files entered", "files skipped", "blocks read", "found", "µs/read", "vs raw"
    );
    let setups: [(&str, Pick); 3] = [
        ("bloom filters", |r| &r.bloom),
        ("no bloom", |r| &r.no_bloom),
        ("raw RocksDB", |r| &r.raw),
    ];
    let raw_us = median_of(runs.iter().map(|r| r.raw.0.us_per_read()));
    for (name, reads) in setups {
        let med = |f: fn(&BloomReads) -> f64| median_of(runs.iter().map(|r| f(reads(r))));
        let us = med(|r| r.0.us_per_read());
        let by_run: Vec<String> =
            runs.iter().map(|r| format!("{:.2}", reads(r).0.us_per_read())).collect();
        out += &format!(
            "{name:<14} {:>13.2} {:>13.2} {:>11.2} {:>8} {us:>7.2} {:>5.2}x  {}\n",
            med(BloomReads::files_entered),
            med(BloomReads::files_skipped),
            med(BloomReads::blocks_read),
            runs.iter().map(|r| reads(r).0.found).min().unwrap_or(0),
            us / raw_us,
            by_run.join(" ")
        );
    }
    out += "(raw RocksDB: the pairs the node stored, in the same 16 flushes; 32 KiB blocks, a \
            64 KiB cache, bloom filters of 10 bits per key over the partition prefix; each \
            read a seek to the row in prefix mode through one iterator kept for all; found: \
            reads that found their row, the fewest of any run)\n";
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small run: every setup reads every row; with filters a read enters about one
    /// file (the node and raw RocksDB alike), without them none is skipped.
    #[test]
    fn bench_bloom_small_run_reads_every_row_in_each_setup() {
        let scratch = crate::ScratchDir::new().expect("scratch dir");
        let runs = bench_bloom(320, 1, scratch.path()).expect("bench");
        let run = &runs[0];
        for reads in [&run.bloom, &run.no_bloom, &run.raw] {
            assert_eq!((reads.0.reads, reads.0.found), (320, 320), "{reads:?}");
            assert!(reads.0.seconds > 0.0);
        }
        assert!(run.bloom.files_entered() <= 1.5, "{:?}", run.bloom);
        assert!(run.raw.files_entered() <= 1.5, "{:?}", run.raw);
        assert!(run.raw.files_skipped() >= FILES as f64 - 2.0, "{:?}", run.raw);
        assert_eq!(run.no_bloom.files_skipped(), 0.0, "{:?}", run.no_bloom);
    }
}
