//! `docsim bench engine`: CQL row writes and reads through the engine versus raw RocksDB
//! doing the same work (the same key/value pairs, one write batch per row; a prefix scan of
//! the row's document key per read), in the same process, on the same machine.
//!
//! Benchmarks, and the time breakdown of simulated runs, measure wall-clock time: the one
//! place docsim reads a real clock (never to steer anything).

use docsim_engine::cql::{insert_row, read_row, CqlTable};
use docsim_engine::{DocHybridTime, HybridTime, Primitive, SubDocKey, Tablet, Ttl};
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
    /// Engine: CQL row writes per second.
    pub engine_writes_per_s: f64,
    /// Raw RocksDB: the same key/value pairs written per second (rows).
    pub raw_writes_per_s: f64,
    /// Engine: row reads per second.
    pub engine_reads_per_s: f64,
    /// Raw RocksDB: prefix scans of the same rows per second.
    pub raw_reads_per_s: f64,
}

impl EngineBench {
    /// Engine write throughput over raw.
    pub fn write_ratio(&self) -> f64 {
        self.engine_writes_per_s / self.raw_writes_per_s
    }

    /// Engine read throughput over raw.
    pub fn read_ratio(&self) -> f64 {
        self.engine_reads_per_s / self.raw_reads_per_s
    }
}

const SCHEMA: &str = "CREATE TABLE bench (user_id text, msg_id int, body text, views bigint, \
                      score double, seen boolean, PRIMARY KEY ((user_id), msg_id))";

fn row(i: usize) -> Vec<(&'static str, Primitive)> {
    vec![
        ("user_id", Primitive::String(format!("user{}", i % 1000))),
        ("msg_id", Primitive::Int32((i / 1000) as i32)),
        ("body", Primitive::String(format!("message body number {i}"))),
        ("views", Primitive::Int64(i as i64 * 7)),
        ("score", Primitive::Double(i as f64 / 3.0)),
        ("seen", Primitive::Bool(i.is_multiple_of(2))),
    ]
}

/// The exact key/value bytes the engine stores for `entries` written at `ht`.
fn raw_pairs(entries: &docsim_engine::DocWriteBatch, ht: HybridTime) -> Vec<(Vec<u8>, Vec<u8>)> {
    entries
        .iter()
        .enumerate()
        .map(|(w, (key, value))| {
            let mut key = key.to_vec();
            key.push(b'#');
            let dht = DocHybridTime::new(ht, w as u32);
            let suffix = SubDocKey::new(Default::default(), dht).encode();
            key.extend_from_slice(&suffix[1..]); // skip the empty doc key's `!`
            (key, value.to_vec())
        })
        .collect()
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Run the benchmark with `rows` rows, keeping both databases under `dir`.
pub fn bench_engine(rows: usize, dir: &Path) -> Result<EngineBench, String> {
    let table = CqlTable::parse(SCHEMA).map_err(err)?;
    let mut tablet = Tablet::open(&dir.join("engine")).map_err(err)?;
    let ht = |i: usize| HybridTime::from_micros(1_000_000 + i as u64);

    // Both sides start from data in memory: typed row values for the engine, and for raw
    // RocksDB exactly the bytes the engine writes, encoded up front.
    let values: Vec<_> = (0..rows).map(row).collect();
    let mut raw_rows = Vec::with_capacity(rows);
    for (i, row) in values.iter().enumerate() {
        let entries = insert_row(&table, row, Ttl::Inherit).map_err(err)?;
        raw_rows.push(raw_pairs(&entries, ht(i)));
    }

    // Engine and raw alternate in chunks, so drift in machine speed hits both alike.
    let raw = raw_db(&dir.join("raw"))?;
    let mut write_opts = rocksdb::WriteOptions::default();
    write_opts.disable_wal(true);
    let (mut engine_write_s, mut raw_write_s) = (0.0, 0.0);
    for chunk in (0..rows).collect::<Vec<_>>().chunks(CHUNK_ROWS) {
        let watch = Stopwatch::start();
        for &i in chunk {
            let entries = insert_row(&table, &values[i], Ttl::Inherit).map_err(err)?;
            tablet.write(&entries, ht(i)).map_err(err)?;
        }
        engine_write_s += watch.seconds();
        let watch = Stopwatch::start();
        for &i in chunk {
            let mut batch = rocksdb::WriteBatch::default();
            for (k, v) in &raw_rows[i] {
                batch.put(k, v);
            }
            raw.write_opt(batch, &write_opts).map_err(err)?;
        }
        raw_write_s += watch.seconds();
    }

    tablet.flush().map_err(err)?;
    raw.flush().map_err(err)?;

    let read_ht = HybridTime::from_micros(u64::MAX >> 13);
    let (mut engine_read_s, mut raw_read_s) = (0.0, 0.0);
    let (mut found, mut scanned) = (0, 0);
    for chunk in (0..rows).collect::<Vec<_>>().chunks(CHUNK_ROWS) {
        let watch = Stopwatch::start();
        for &i in chunk {
            let key = [values[i][0].1.clone(), values[i][1].1.clone()];
            found += usize::from(read_row(&table, &tablet, &key, read_ht).map_err(err)?.is_some());
        }
        engine_read_s += watch.seconds();
        let watch = Stopwatch::start();
        for &i in chunk {
            scanned += usize::from(raw_scan(&raw, &raw_rows[i][0].0) == raw_rows[i].len());
        }
        raw_read_s += watch.seconds();
    }
    assert_eq!(found, rows, "every row written is read back");
    assert_eq!(scanned, rows, "raw scans find every row");

    let per_s = |s: f64| rows as f64 / s;
    Ok(EngineBench {
        rows,
        engine_writes_per_s: per_s(engine_write_s),
        raw_writes_per_s: per_s(raw_write_s),
        engine_reads_per_s: per_s(engine_read_s),
        raw_reads_per_s: per_s(raw_read_s),
    })
}

/// Rows per alternation between the engine and raw RocksDB.
const CHUNK_ROWS: usize = 2_000;

/// Prefix-scan the document of `first_key`, copying out every key and value.
fn raw_scan(raw: &rocksdb::DB, first_key: &[u8]) -> usize {
    let doc_len = docsim_engine::encoding::doc_key_len(first_key).expect("doc key");
    let prefix = &first_key[..doc_len];
    let mut it = raw.raw_iterator();
    it.seek(prefix);
    let mut row_kvs = Vec::new();
    while let (Some(k), Some(v)) = (it.key(), it.value()) {
        if !k.starts_with(prefix) {
            break;
        }
        row_kvs.push((k.to_vec(), v.to_vec()));
        it.next();
    }
    row_kvs.len()
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
/// restart that replays them all; `rounds` times, each on a fresh tablet.
pub fn bench_restart(entries: usize, rounds: usize, dir: &Path) -> Result<RestartBench, String> {
    use docsim_engine::disk::{FaultConfig, SimDisk, Tear};
    use docsim_engine::script::Runner;
    let ht = |i: usize| HybridTime::from_micros(1_000_000 + i as u64);
    let table = CqlTable::parse(SCHEMA).map_err(err)?;
    let (mut restart_ms, mut raw_ms) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let env = rocksdb::Env::mem_env().map_err(err)?;
        let disk = SimDisk::new(round as u64, FaultConfig::default());
        let mut runner =
            Runner::with_disk(&dir.join(format!("restart-{round}")), Some(env), disk, 1 << 20);
        let mut out = String::new();
        let create = docsim_engine::script::Command::Table(SCHEMA.into());
        runner.execute(&create, &mut out).map_err(err)?;
        let mut raw_batches = Vec::with_capacity(entries);
        for i in 0..entries {
            let row = row(i);
            let names: Vec<&str> = row.iter().map(|(n, _)| *n).collect();
            let values: Vec<String> = row.iter().map(|(_, v)| cql_literal(v)).collect();
            let statement =
                format!("INSERT INTO bench ({}) VALUES ({})", names.join(", "), values.join(", "));
            runner.cql_run(ht(i), &statement).map_err(err)?;
            let entries = insert_row(&table, &row, Ttl::Inherit).map_err(err)?;
            raw_batches.push(raw_pairs(&entries, ht(i)));
        }
        runner.crash(Tear::None);
        let watch = Stopwatch::start();
        let reports = runner.restart().map_err(err)?;
        restart_ms.push(watch.seconds() * 1000.0);
        let replayed: usize = reports.iter().map(|(_, r)| r.replayed).sum();
        if replayed != entries {
            return Err(format!("replayed {replayed} entries, expected {entries}"));
        }
        let raw = raw_db(&dir.join(format!("raw-{round}")))?;
        let mut write_opts = rocksdb::WriteOptions::default();
        write_opts.disable_wal(true);
        let watch = Stopwatch::start();
        for pairs in &raw_batches {
            let mut batch = rocksdb::WriteBatch::default();
            pairs.iter().for_each(|(k, v)| batch.put(k, v));
            raw.write_opt(batch, &write_opts).map_err(err)?;
        }
        raw_ms.push(watch.seconds() * 1000.0);
    }
    restart_ms.sort_by(f64::total_cmp);
    raw_ms.sort_by(f64::total_cmp);
    Ok(RestartBench { entries, restart_ms, raw_ms })
}

fn cql_literal(value: &Primitive) -> String {
    match value {
        Primitive::String(s) => format!("'{s}'"),
        Primitive::Int32(v) => v.to_string(),
        Primitive::Int64(v) => v.to_string(),
        Primitive::Double(v) => format!("{v:?}"),
        Primitive::Bool(v) => v.to_string(),
        other => other.to_string(),
    }
}
