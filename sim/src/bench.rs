//! `docsim bench engine`: CQL row writes and reads through the engine's production path
//! (a typed INSERT or SELECT run by the node: Raft log, apply, read) versus raw RocksDB
//! doing the same storage work, in the same process, in real files, on the same machine.
//! Raw RocksDB writes the exact key/value pairs the engine stores, one write batch per
//! row, with its WAL off and on, and prefix-scans each row's document key per read — in
//! two forms: the row as one key/value pair per column (what the engine stores without
//! packing) and as one value per row (a packed row). The engine runs with its rows
//! packed or not (`--packed`), or as RocksDB entities (`--entity`).
//!
//! Benchmarks, and the time breakdown of simulated runs, measure wall-clock time: the one
//! place docsim reads a real clock (never to steer anything).

pub mod bloom;
pub mod cache;
pub mod memstore;
pub mod prune;
mod raw;
pub mod restore;
pub mod snapshot;

use docsim_engine::canary::Plants;
use docsim_engine::cql::{CmpOp, Condition, CqlTable, Literal, Outcome as CqlOutcome, Statement};
use docsim_engine::disk::{FaultConfig, SimDisk, Tear};
use docsim_engine::{HybridTime, Layout, Node, NodeOptions, Rocks, StorageConfig};
use rocksdb::perf::{set_perf_stats, PerfContext, PerfMetric, PerfStatsLevel};
use std::collections::BTreeMap;
use std::path::Path;

/// Wall-clock stopwatch for benchmarks and reports. It works inside a simulation too:
/// madsim answers `clock_gettime` (and so `std::time::Instant`) with simulated time there,
/// so the stopwatch asks the kernel directly.
pub struct Stopwatch {
    start_ns: u64,
}

impl Stopwatch {
    /// Start timing.
    pub fn start() -> Stopwatch {
        Stopwatch { start_ns: real_monotonic_ns() }
    }

    /// Seconds since start.
    pub fn seconds(&self) -> f64 {
        real_monotonic_ns().saturating_sub(self.start_ns) as f64 * 1e-9
    }
}

/// The real monotonic clock in nanoseconds, by a raw system call that madsim's
/// `clock_gettime` interposition cannot answer with simulated time.
fn real_monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: CLOCK_MONOTONIC is a valid clock id and `ts` outlives the call.
    let rc =
        unsafe { libc::syscall(libc::SYS_clock_gettime, libc::CLOCK_MONOTONIC, &mut ts as *mut _) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Results of one engine benchmark run.
#[derive(Debug, Clone, Copy)]
pub struct EngineBench {
    /// Rows written and read.
    pub rows: usize,
    /// How the engine stored its rows.
    pub layout: Layout,
    /// Engine: CQL row writes per second (INSERT through the node: Raft log and apply).
    pub engine_writes_per_s: f64,
    /// Engine: row reads per second (SELECT by primary key through the node).
    pub engine_reads_per_s: f64,
    /// Raw RocksDB with one key/value pair per column.
    pub raw_columns: RawBench,
    /// Raw RocksDB with one value per row.
    pub raw_rows: RawBench,
}

/// Raw RocksDB doing one form of the same rows' storage work, rows per second.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawBench {
    /// Writes, WAL off.
    pub writes_per_s: f64,
    /// Writes, WAL on (not synced).
    pub wal_writes_per_s: f64,
    /// Prefix scans of each row's document, a new iterator each.
    pub reads_per_s: f64,
    /// The same scans through one iterator kept for all of them, as the engine keeps its
    /// scan iterator between reads while nothing is written (`engine/src/db/kept_iter.rs`).
    pub kept_reads_per_s: f64,
}

const SCHEMA: &str = "CREATE TABLE bench (user_id text, msg_id int, body text, views bigint, \
                      score double, seen boolean, PRIMARY KEY ((user_id), msg_id))";

/// Row `i` as the typed INSERT a client sends (a prepared statement with bound values).
fn insert(i: usize) -> Statement {
    let columns = ["user_id", "msg_id", "body", "views", "score", "seen"];
    let values = vec![
        Literal::Str(format!("user{}", i % 1000)),
        Literal::Num((i / 1000).to_string()),
        Literal::Str(format!("message body number {i}")),
        Literal::Num((i as i64 * 7).to_string()),
        Literal::Num(format!("{:?}", i as f64 / 3.0)),
        Literal::Bool(i.is_multiple_of(2)),
    ];
    let columns = columns.iter().map(|c| c.to_string()).collect();
    Statement::Insert { table: "bench".into(), columns, values, ttl_s: None }
}

/// Row `i` read back by its primary key.
fn select(i: usize) -> Statement {
    let key = |column: &str, value| Condition { column: column.into(), op: CmpOp::Eq, value };
    let conditions = vec![
        key("user_id", Literal::Str(format!("user{}", i % 1000))),
        key("msg_id", Literal::Num((i / 1000).to_string())),
    ];
    Statement::Select { columns: None, table: "bench".into(), conditions }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn ht(i: usize) -> HybridTime {
    HybridTime::from_micros(1_000_000 + i as u64)
}

/// A node with the bench table, in real files under `dir` (as raw RocksDB is), its rows
/// stored as `layout` says.
fn bench_node(dir: &Path, in_memory: bool, layout: Layout) -> Result<Node, String> {
    let storage = StorageConfig { layout, ..StorageConfig::default() };
    table_node(dir, (storage, in_memory), SCHEMA)
}

/// A node alone under `dir` with `storage` (in memory if asked), hosting the CQL table
/// `schema` creates: what every benchmark drives.
pub(crate) fn table_node(
    dir: &Path,
    (storage, in_memory): (StorageConfig, bool),
    schema: &str,
) -> Result<Node, String> {
    let rocks = Rocks::new(in_memory, storage.block_cache_kib << 10).map_err(err)?;
    table_node_with(dir, (storage, in_memory), rocks, schema)
}

/// [`table_node`] whose tablets share `rocks` (its environment, in memory if asked, and
/// its block cache) rather than those `storage` makes.
pub(crate) fn table_node_with(
    dir: &Path,
    (storage, in_memory): (StorageConfig, bool),
    rocks: Rocks,
    schema: &str,
) -> Result<Node, String> {
    let disk = SimDisk::new(0, FaultConfig::default());
    let options = NodeOptions {
        storage,
        ..NodeOptions::alone(disk, 8 << 20, Plants::NONE, medium(in_memory))
    };
    let mut node = Node::with_rocks(dir, options, rocks).map_err(err)?;
    node.create_table(CqlTable::parse(schema).map_err(err)?).map_err(err)?;
    Ok(node)
}

/// RocksDB in memory or in real files.
fn medium(in_memory: bool) -> docsim_engine::Medium {
    match in_memory {
        true => docsim_engine::Medium::Memory,
        false => docsim_engine::Medium::Files,
    }
}

/// Run the CQL statement `text` on `node` at `ht_us` microseconds.
pub(crate) fn cql_at(node: &mut Node, ht_us: u64, text: &str) -> Result<(), String> {
    let statement = docsim_engine::cql::parse_statement(text).map_err(err)?;
    node.cql(HybridTime::from_micros(ht_us), &statement).map(|_| ()).map_err(err)
}

/// One row's stored key/value pairs.
type RowPairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Every key/value pair `node` stores, grouped by the write that stored it (its hybrid
/// time in microseconds): what raw RocksDB writes to do the same storage work.
pub(crate) fn pairs_by_write(node: &Node) -> Result<BTreeMap<u64, RowPairs>, String> {
    let mut by_write: BTreeMap<u64, RowPairs> = BTreeMap::new();
    for dump in node.dump().map_err(err)? {
        for ((key, _), raw_key, raw_value) in dump.entries {
            let write = by_write.entry(key.doc_ht.ht.physical_us()).or_default();
            write.push((raw_key, raw_value));
        }
    }
    Ok(by_write)
}

/// What a run of reads counted: the reads, those that found what they looked for, the
/// sum of each perf-context counter asked for (reset around every read) and the wall
/// time of the whole run (the counting included, the same for every reader).
#[derive(Debug, Clone, Default)]
pub struct Counted {
    pub reads: usize,
    pub found: usize,
    pub sums: Vec<u64>,
    pub seconds: f64,
}

impl Counted {
    /// Counter `i` per read.
    pub fn per_read(&self, i: usize) -> f64 {
        self.sums[i] as f64 / self.reads.max(1) as f64
    }

    /// Wall time per read, microseconds.
    pub fn us_per_read(&self) -> f64 {
        self.seconds * 1e6 / self.reads.max(1) as f64
    }
}

/// Run `read(0)` .. `read(n - 1)` (each says whether it found what it looked for),
/// counting `metrics` with RocksDB's perf context around each read, and timing them all.
pub(crate) fn counted_reads(
    n: usize,
    metrics: &[PerfMetric],
    mut read: impl FnMut(usize) -> Result<bool, String>,
) -> Result<Counted, String> {
    set_perf_stats(PerfStatsLevel::EnableCount);
    let mut perf = PerfContext::default();
    let mut out = Counted { reads: n, sums: vec![0; metrics.len()], ..Counted::default() };
    let watch = Stopwatch::start();
    for i in 0..n {
        perf.reset();
        let found = read(i);
        out.sums.iter_mut().zip(metrics).for_each(|(sum, m)| *sum += perf.metric(*m));
        out.found += usize::from(found?);
    }
    out.seconds = watch.seconds();
    set_perf_stats(PerfStatsLevel::Disable);
    Ok(out)
}

/// The median of unsorted samples.
pub fn median_of(samples: impl IntoIterator<Item = f64>) -> f64 {
    let mut sorted: Vec<f64> = samples.into_iter().collect();
    sorted.sort_by(f64::total_cmp);
    median(&sorted)
}

/// The exact key/value pairs the engine stores for each row: written once through a
/// preparation node (not timed) and read back from its RocksDB, grouped by row.
fn stored_rows(rows: usize, dir: &Path, layout: Layout) -> Result<Vec<RowPairs>, String> {
    let mut node = bench_node(dir, true, layout)?;
    for i in 0..rows {
        node.cql(ht(i), &insert(i)).map_err(err)?;
    }
    let mut by_row: std::collections::BTreeMap<usize, RowPairs> = Default::default();
    for tablet in node.dump().map_err(err)? {
        for ((key, _), raw_key, raw_value) in tablet.entries {
            let i = (key.doc_ht.ht.physical_us() - 1_000_000) as usize;
            by_row.entry(i).or_default().push((raw_key, raw_value));
        }
    }
    if by_row.len() != rows {
        return Err(format!("the engine stored {} rows, not {rows}", by_row.len()));
    }
    Ok(by_row.into_values().collect())
}

/// Raw RocksDB writing `pairs` as one batch per row; seconds spent.
fn raw_write(raw: &rocksdb::DB, rows: &[RowPairs], wal: bool) -> Result<f64, String> {
    let mut opts = rocksdb::WriteOptions::default();
    opts.disable_wal(!wal);
    let watch = Stopwatch::start();
    for pairs in rows {
        let mut batch = rocksdb::WriteBatch::default();
        pairs.iter().for_each(|(k, v)| batch.put(k, v));
        raw.write_opt(batch, &opts).map_err(err)?;
    }
    Ok(watch.seconds())
}

/// A node with the bench table whose Raft log and RocksDB files live on a simulated disk
/// of its own (under `dir`'s name), its rows stored as `layout` says.
fn bench_node_on_disk(dir: &Path, layout: Layout) -> Result<Node, String> {
    let storage = StorageConfig { layout, ..StorageConfig::default() };
    let disk = SimDisk::new(0, FaultConfig::default());
    let alone = NodeOptions::alone(disk, 8 << 20, Plants::NONE, docsim_engine::Medium::SimDisk);
    let mut node = Node::new(dir, NodeOptions { storage, ..alone }).map_err(err)?;
    node.create_table(CqlTable::parse(SCHEMA).map_err(err)?).map_err(err)?;
    Ok(node)
}

/// Raw RocksDB whose files (its WAL too) live on a simulated disk of its own, as the
/// engine's do: the same medium. `db` closes before the disk's Env.
struct RawOnDisk {
    db: rocksdb::DB,
    _env: docsim_engine::RawEnv,
}

fn raw_db_on_disk(path: &Path) -> Result<RawOnDisk, String> {
    let root = path.parent().ok_or("a raw database needs a parent directory")?;
    let disk = SimDisk::new(0, FaultConfig::default());
    let rocks = Rocks::on_sim_disk(disk, root, Plants::NONE, 8 << 20);
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    opts.set_disable_auto_compactions(true);
    let env = rocks.install_raw(&mut opts);
    let db = rocksdb::DB::open(&opts, path).map_err(err)?;
    Ok(RawOnDisk { db, _env: env })
}

/// Run the benchmark with `rows` rows. The engine and raw RocksDB each keep every file
/// (the engine's Raft log and RocksDB's, raw RocksDB's SST files and WAL) on a simulated
/// disk: like with like. The engine stores its rows as `layout` says.
pub fn bench_engine(rows: usize, dir: &Path, layout: Layout) -> Result<EngineBench, String> {
    let forms = [
        stored_rows(rows, &dir.join("prep-c"), Layout::Declared)?,
        stored_rows(rows, &dir.join("prep-r"), Layout::Packed)?,
    ];
    if forms[1].iter().any(|pairs| pairs.len() != 1) {
        return Err("a packed row is one key/value pair".into());
    }
    let mut node = bench_node_on_disk(&dir.join("engine"), layout)?;
    let raws = [raw_db_on_disk(&dir.join("raw-c"))?, raw_db_on_disk(&dir.join("raw-r"))?];
    let raw_wals =
        [raw_db_on_disk(&dir.join("raw-c-wal"))?, raw_db_on_disk(&dir.join("raw-r-wal"))?];
    // Engine and raw alternate in chunks, so drift in machine speed hits both alike.
    let (mut engine_s, mut raw_s, mut raw_wal_s) = (0.0, [0.0; 2], [0.0; 2]);
    for chunk in (0..rows).collect::<Vec<_>>().chunks(CHUNK_ROWS) {
        let statements: Vec<Statement> = chunk.iter().map(|&i| insert(i)).collect();
        let watch = Stopwatch::start();
        for (&i, statement) in chunk.iter().zip(&statements) {
            node.cql(ht(i), statement).map_err(err)?;
        }
        engine_s += watch.seconds();
        for f in 0..2 {
            let rows = &forms[f][chunk[0]..=chunk[chunk.len() - 1]];
            raw_s[f] += raw_write(&raws[f].db, rows, false)?;
            raw_wal_s[f] += raw_write(&raw_wals[f].db, rows, true)?;
        }
    }
    node.flush().map_err(err)?;
    raws.iter().try_for_each(|raw| raw.db.flush().map_err(err))?;
    let raw_dbs = [&raws[0].db, &raws[1].db];
    let (engine_read_s, raw_read_s, raw_kept_s) = time_reads(&mut node, raw_dbs, &forms)?;
    let per_s = |s: f64| rows as f64 / s;
    let raw = |f: usize| RawBench {
        writes_per_s: per_s(raw_s[f]),
        wal_writes_per_s: per_s(raw_wal_s[f]),
        reads_per_s: per_s(raw_read_s[f]),
        kept_reads_per_s: per_s(raw_kept_s[f]),
    };
    Ok(EngineBench {
        rows,
        layout,
        engine_writes_per_s: per_s(engine_s),
        engine_reads_per_s: per_s(engine_read_s),
        raw_columns: raw(0),
        raw_rows: raw(1),
    })
}

/// Seconds the engine's SELECTs and each raw form's scans of every row take (a new
/// iterator per scan, and one iterator kept for all), alternating in chunks; every row
/// must be found.
fn time_reads(
    node: &mut Node,
    raws: [&rocksdb::DB; 2],
    forms: &[Vec<RowPairs>; 2],
) -> Result<(f64, [f64; 2], [f64; 2]), String> {
    let rows = forms[0].len();
    let read_ht = HybridTime::from_micros(u64::MAX >> 13);
    let (mut engine_s, mut raw_s, mut kept_s) = (0.0, [0.0; 2], [0.0; 2]);
    let (mut found, mut scanned) = (0, [0; 4]);
    let mut kept = [raws[0].raw_iterator(), raws[1].raw_iterator()];
    for chunk in (0..rows).collect::<Vec<_>>().chunks(CHUNK_ROWS) {
        let statements: Vec<Statement> = chunk.iter().map(|&i| select(i)).collect();
        let watch = Stopwatch::start();
        for statement in &statements {
            if let CqlOutcome::Rows(rows) = node.cql(read_ht, statement).map_err(err)? {
                found += rows.len();
            }
        }
        engine_s += watch.seconds();
        // Each pass warms the block cache for the next: who goes first alternates.
        let first_kept = (chunk[0] / CHUNK_ROWS) % 2 == 1;
        for f in 0..2 {
            for kept_pass in [first_kept, !first_kept] {
                let watch = Stopwatch::start();
                for &i in chunk {
                    let pairs = &forms[f][i];
                    let found = if kept_pass {
                        raw_scan(&mut kept[f], &pairs[0].0)
                    } else {
                        raw_scan(&mut raws[f].raw_iterator(), &pairs[0].0)
                    };
                    scanned[2 * usize::from(kept_pass) + f] += usize::from(found == pairs.len());
                }
                let seconds = if kept_pass { &mut kept_s[f] } else { &mut raw_s[f] };
                *seconds += watch.seconds();
            }
        }
    }
    assert_eq!(found, rows, "every row written is read back");
    assert_eq!(scanned, [rows; 4], "raw scans find every row");
    Ok((engine_s, raw_s, kept_s))
}

/// Rows per alternation between the engine and raw RocksDB.
const CHUNK_ROWS: usize = 2_000;

/// Prefix-scan the document of `first_key` with `it`, copying out every key and value.
fn raw_scan(it: &mut rocksdb::DBRawIterator<'_>, first_key: &[u8]) -> usize {
    let doc_len = docsim_engine::encoding::doc_key_len(first_key).expect("doc key");
    let prefix = &first_key[..doc_len];
    raw::scan(it, prefix, prefix)
}

fn raw_db(path: &Path) -> Result<rocksdb::DB, String> {
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    opts.set_disable_auto_compactions(true);
    rocksdb::DB::open(&opts, path).map_err(err)
}

/// Results of the restart benchmark.
#[derive(Debug, Clone)]
pub struct RestartBench {
    /// Log entries each restart replays.
    pub entries: usize,
    /// Milliseconds of each crash + restart (bootstrap: open RocksDB, read the log, replay,
    /// elect), sorted.
    pub restart_ms: Vec<f64>,
    /// Milliseconds for raw RocksDB to write the same batches (what replay re-applies),
    /// sorted.
    pub raw_ms: Vec<f64>,
}

/// The median of sorted samples.
pub fn median(sorted: &[f64]) -> f64 {
    sorted[sorted.len() / 2]
}

/// Write `entries` CQL rows (one Raft entry each) without flushing, crash, and time the
/// restart that replays them all; `rounds` times, each on a fresh node in memory.
pub fn bench_restart(entries: usize, rounds: usize, dir: &Path) -> Result<RestartBench, String> {
    let raw_batches = stored_rows(entries, &dir.join("prepare"), Layout::Declared)?;
    let (mut restart_ms, mut raw_ms) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let mut node = bench_node(&dir.join(format!("restart-{round}")), true, Layout::Declared)?;
        for i in 0..entries {
            node.cql(ht(i), &insert(i)).map_err(err)?;
        }
        node.crash(Tear::None);
        let watch = Stopwatch::start();
        let reports = node.restart().map_err(err)?;
        restart_ms.push(watch.seconds() * 1000.0);
        let replayed: usize = reports.iter().map(|(_, r)| r.replayed).sum();
        if replayed != entries {
            return Err(format!("replayed {replayed} entries, expected {entries}"));
        }
        let raw = raw_db(&dir.join(format!("raw-{round}")))?;
        raw_ms.push(raw_write(&raw, &raw_batches, false)? * 1000.0);
    }
    restart_ms.sort_by(f64::total_cmp);
    raw_ms.sort_by(f64::total_cmp);
    Ok(RestartBench { entries, restart_ms, raw_ms })
}
