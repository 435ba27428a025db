//! `docsim bench bloom`: how many SST files a point read looks into. One node writes
//! `rows` single-row partitions in 16 flushes (16 SST files, each row in one of them),
//! then reads every row by its key through the node (a CQL SELECT: a seek in prefix mode
//! on the row's partition, `db/kept_iter.rs`). RocksDB's perf context, reset around each
//! read, counts the files whose bloom filter let the read in (`bloom_sst_hit_count`),
//! those it kept out (`bloom_sst_miss_count`) and the blocks read (a 64 KiB cache). With
//! filters keyed by partition (`encoding::bloom_prefix_len`) a read should enter about
//! the one file holding its row; the same node without bloom filters enters them all.

use super::{cql_at, err, table_node};
use docsim_engine::{Layout, StorageConfig};
use rocksdb::perf::{set_perf_stats, PerfContext, PerfMetric, PerfStatsLevel};
use std::path::Path;

/// SST files the rows are written into.
pub const FILES: usize = 16;

/// Per read, on average: files the bloom filters let in and kept out, and blocks read.
#[derive(Debug, Clone, Copy)]
pub struct BloomBench {
    pub reads: usize,
    pub files_entered: f64,
    pub files_skipped: f64,
    pub blocks_read: f64,
}

/// Write `rows` rows into 16 files, then read each once; `bloom`: with bloom filters.
pub fn bench_bloom(rows: usize, bloom: bool, dir: &Path) -> Result<BloomBench, String> {
    let storage = StorageConfig {
        bloom_filter: bloom,
        layout: Layout::Unpacked,
        block_cache_kib: 64,
        ..StorageConfig::default()
    };
    let mut node =
        table_node(dir, (storage, false), "CREATE TABLE p (k int, v text, PRIMARY KEY ((k)))")?;
    let mut ht = 1_000_000;
    for file in 0..FILES {
        for k in (file..rows).step_by(FILES) {
            ht += 1;
            cql_at(&mut node, ht, &format!("INSERT INTO p (k, v) VALUES ({k}, 'value {k}')"))?;
        }
        node.flush().map_err(err)?;
    }
    set_perf_stats(PerfStatsLevel::EnableCount);
    let mut perf = PerfContext::default();
    let (mut entered, mut skipped, mut blocks) = (0, 0, 0);
    ht += 1_000;
    for k in 0..rows {
        perf.reset();
        cql_at(&mut node, ht, &format!("SELECT v FROM p WHERE k = {k}"))?;
        entered += perf.metric(PerfMetric::BloomSstHitCount);
        skipped += perf.metric(PerfMetric::BloomSstMissCount);
        blocks += perf.metric(PerfMetric::BlockReadCount);
    }
    set_perf_stats(PerfStatsLevel::Disable);
    let per_read = |n: u64| n as f64 / rows.max(1) as f64;
    Ok(BloomBench {
        reads: rows,
        files_entered: per_read(entered),
        files_skipped: per_read(skipped),
        blocks_read: per_read(blocks),
    })
}
