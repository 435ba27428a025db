//! `docsim bench memstore`: the server-wide memstore limit (`NodeOptions::
//! memstore_limit_bytes`, `Node::limit_memstore`). One node hosts a table of 16 tablets
//! (`WITH tablets = 16`) and takes `writes` inserts of new rows with ~100-byte values,
//! skewed over the tablets: tablet j draws a share ∝ (16 − j)², so tablet 0 takes about
//! 17% of them and tablet 15 one in 1,500. The node runs with a limit of 64 KiB and log
//! segments of 16 KiB, then without the limit.
//!
//! After every write the bench takes the memory flushes it set off and each tablet's
//! retained log (`Node::retained_log_bytes`), and checks the bound issue 41 states: a
//! tablet keeps at most the bytes of its unflushed writes plus one segment. A tablet's
//! unflushed writes' bytes are what its log grew by since its last memory flush (a memory
//! flush takes everything the tablet applied, and in a group of one that is everything it
//! logged). The bench reports, per tablet, the largest retained log and the most it kept
//! beyond its unflushed writes' bytes over the run (a log GC after the memory flush leaves
//! the new segment's header; the bound allows a segment).
//!
//! Raw RocksDB does the same puts (the exact pairs the node stored, one write batch per
//! insert, WAL on and not synced) into 16 databases, one per tablet, with and without the
//! same rule by hand: after a write, while the data written since each database's last
//! flush (key and value bytes and 64 per pair: the engine's own count) passes 64 KiB in
//! all, flush the database holding the oldest write. (RocksDB's `WriteBufferManager` is
//! in the Rust crate, `Options::set_write_buffer_manager`, but it charges the memtables'
//! arena memory, allocated in blocks of up to 1 MiB, not the data written, and the
//! database that is writing flushes one of its own memtables, not the database holding
//! the oldest write: not the same rule.) Every write is timed alone, in every setup; a
//! flush the write sets off is in its time.

use super::raw::{self, RawSetup};
use super::{err, median_of, pairs_by_write, RowPairs, Stopwatch};
use docsim_engine::canary::Plants;
use docsim_engine::cql::{partition_hash, CqlTable, Literal, Statement};
use docsim_engine::disk::{FaultConfig, SimDisk};
use docsim_engine::{HybridTime, Node, NodeOptions, Part, StorageConfig, TabletId};
use std::path::Path;

/// The table's tablets.
pub const TABLETS: usize = 16;
/// The node's memstore limit.
pub const LIMIT_BYTES: usize = 64 << 10;
/// The node's log segment size.
pub const SEGMENT_BYTES: usize = 16 << 10;
const SCHEMA: &str = "CREATE TABLE m (k int, v text, PRIMARY KEY ((k))) WITH tablets = 16";

/// What one run of the node saw, per tablet where a list.
#[derive(Debug, Clone, Default)]
pub struct NodeRun {
    /// Wall seconds of the writes alone.
    pub seconds: f64,
    pub writes: Vec<usize>,
    /// Memory flushes, and those whose log roll and GC did not run.
    pub flushes: Vec<usize>,
    pub flushes_without_gc: usize,
    /// The largest retained log, in bytes, after any write.
    pub max_retained: Vec<usize>,
    /// The largest retained log − (unflushed writes' log bytes + one segment).
    pub max_over_bound: Vec<i64>,
    /// The largest sum of the tablets' unflushed bytes (the limit's measure) after a write.
    pub max_memstore: usize,
}

/// What raw RocksDB's run saw.
#[derive(Debug, Clone, Default)]
pub struct RawRun {
    pub seconds: f64,
    /// Flushes of each database.
    pub flushes: Vec<usize>,
    pub max_unflushed: usize,
}

/// One run: the node with and without the limit, raw RocksDB with and without the rule.
#[derive(Debug, Clone)]
pub struct MemstoreRun {
    pub limited: NodeRun,
    pub unlimited: NodeRun,
    pub raw_limited: RawRun,
    pub raw_unlimited: RawRun,
}

/// The benchmark with `writes` inserts, `runs` times, everything under `dir`.
pub fn bench_memstore(writes: usize, runs: usize, dir: &Path) -> Result<Vec<MemstoreRun>, String> {
    bench_with(writes, runs, (LIMIT_BYTES, SEGMENT_BYTES), dir)
}

/// [`bench_memstore`] with a memstore limit of `limit` bytes and log segments of
/// `segment` bytes.
fn bench_with(
    writes: usize,
    runs: usize,
    (limit, segment): (usize, usize),
    dir: &Path,
) -> Result<Vec<MemstoreRun>, String> {
    let workload = Workload::new(writes)?;
    (0..runs)
        .map(|run| {
            let dir = dir.join(format!("run-{run}"));
            let limited = node_run(&workload, (Some(limit), segment), &dir.join("limited"))?.1;
            let (node, unlimited) = node_run(&workload, (None, segment), &dir.join("unlimited"))?;
            let pairs: Vec<RowPairs> = pairs_by_write(&node)?.into_values().collect();
            if pairs.len() != writes {
                return Err(format!("the node stored {} writes, not {writes}", pairs.len()));
            }
            drop(node);
            let raw_limited = raw_run(&workload, &pairs, Some(limit), &dir.join("raw-limited"))?;
            let raw_unlimited = raw_run(&workload, &pairs, None, &dir.join("raw-unlimited"))?;
            Ok(MemstoreRun { limited, unlimited, raw_limited, raw_unlimited })
        })
        .collect()
}

/// The inserts, and the tablet each goes to.
struct Workload {
    inserts: Vec<Statement>,
    tablets: Vec<usize>,
}

impl Workload {
    /// `writes` inserts of new rows: write i goes to a tablet drawn by a hash of i,
    /// tablet j with weight (16 − j)², and takes that tablet's next unused key.
    fn new(writes: usize) -> Result<Workload, String> {
        let weights: Vec<u64> = (0..TABLETS as u64).map(|j| (TABLETS as u64 - j).pow(2)).collect();
        let total: u64 = weights.iter().sum();
        let draw = |i: usize| {
            let mut x = splitmix64(i as u64) % total;
            for (j, w) in weights.iter().enumerate() {
                match x.checked_sub(*w) {
                    Some(rest) => x = rest,
                    None => return j,
                }
            }
            unreachable!("x < the weights' total")
        };
        let tablets: Vec<usize> = (0..writes).map(draw).collect();
        let table = CqlTable::parse(SCHEMA).map_err(err)?;
        let mut keys: Vec<Vec<i64>> = vec![Vec::new(); TABLETS];
        let mut next = [0; TABLETS];
        let (mut k, mut inserts) = (0, Vec::with_capacity(writes));
        for &j in &tablets {
            while keys[j].len() <= next[j] {
                let hash = partition_hash(&table, &insert(k)).ok_or("an insert has a hash")?;
                keys[usize::from(Part::owning(TABLETS as u16, hash).index)].push(k);
                k += 1;
            }
            inserts.push(insert(keys[j][next[j]]));
            next[j] += 1;
        }
        Ok(Workload { inserts, tablets })
    }
}

/// The insert of row `k`: a value of about 100 bytes.
fn insert(k: i64) -> Statement {
    let values =
        vec![Literal::Num(k.to_string()), Literal::Str(format!("{k:>12} {}", "v".repeat(88)))];
    let columns = vec!["k".to_string(), "v".to_string()];
    Statement::Insert { table: "m".into(), columns, values, ttl_s: None }
}

/// SplitMix64's output for `x`: a fixed, well-spread draw.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Run the workload on a new node under `dir` with the memstore limit `limit` and log
/// segments of `segment` bytes, sampling after every write; the node afterwards, and
/// what the run saw.
fn node_run(
    w: &Workload,
    (limit, segment): (Option<usize>, usize),
    dir: &Path,
) -> Result<(Node, NodeRun), String> {
    let disk = SimDisk::new(0, FaultConfig::default());
    let alone = NodeOptions::alone(disk, segment, Plants::NONE, docsim_engine::Medium::Files);
    let options = NodeOptions { memstore_limit_bytes: limit, ..alone };
    let mut node = Node::new(dir, options).map_err(err)?;
    node.create_table(CqlTable::parse(SCHEMA).map_err(err)?).map_err(err)?;
    let mut sampler = Sampler::new(&node, segment)?;
    for (i, insert) in w.inserts.iter().enumerate() {
        let watch = Stopwatch::start();
        node.cql(HybridTime::from_micros(1_000_001 + i as u64), insert).map_err(err)?;
        sampler.run.seconds += watch.seconds();
        sampler.run.writes[w.tablets[i]] += 1;
        sampler.sample(&mut node)?;
    }
    Ok((node, sampler.run))
}

/// The bound's bookkeeping over a run.
struct Sampler {
    run: NodeRun,
    /// Each tablet's retained log at the last sample, and its unflushed writes' log bytes.
    retained: Vec<i64>,
    unflushed: Vec<i64>,
    segment_bytes: i64,
}

/// The tablet index of `id`, a tablet of the bench's table.
fn index(id: &TabletId) -> usize {
    match id {
        TabletId::Table(_, part) => usize::from(part.index),
        TabletId::Docs => unreachable!("the bench's node hosts no document tablet"),
    }
}

impl Sampler {
    fn new(node: &Node, segment_bytes: usize) -> Result<Sampler, String> {
        let mut retained = vec![0; TABLETS];
        for (id, bytes) in node.retained_log_bytes().map_err(err)? {
            retained[index(&id)] = bytes as i64;
        }
        let run = NodeRun {
            writes: vec![0; TABLETS],
            flushes: vec![0; TABLETS],
            max_retained: vec![0; TABLETS],
            max_over_bound: vec![i64::MIN; TABLETS],
            ..NodeRun::default()
        };
        Ok(Sampler {
            run,
            retained,
            unflushed: vec![0; TABLETS],
            segment_bytes: segment_bytes as i64,
        })
    }

    /// After a write: the memory flushes it set off, each tablet's retained log against
    /// its bound, and the unflushed bytes of all.
    fn sample(&mut self, node: &mut Node) -> Result<(), String> {
        let flushed: Vec<usize> = node
            .take_memory_flushes()
            .iter()
            .map(|f| {
                self.run.flushes_without_gc += usize::from(!f.log_gc);
                index(&f.tablet)
            })
            .collect();
        for &j in &flushed {
            self.run.flushes[j] += 1;
            self.unflushed[j] = 0;
        }
        for (id, bytes) in node.retained_log_bytes().map_err(err)? {
            let (j, bytes) = (index(&id), bytes as i64);
            if !flushed.contains(&j) {
                self.unflushed[j] += bytes - self.retained[j];
            }
            self.retained[j] = bytes;
            let over = bytes - (self.unflushed[j] + self.segment_bytes);
            self.run.max_over_bound[j] = self.run.max_over_bound[j].max(over);
            self.run.max_retained[j] = self.run.max_retained[j].max(bytes as usize);
        }
        let memstore = node.replicas().map(|(_, r)| r.memstore().bytes).sum::<usize>();
        self.run.max_memstore = self.run.max_memstore.max(memstore);
        Ok(())
    }
}

/// Raw RocksDB writing `pairs` (write i's, into database `w.tablets[i]`) under `dir`,
/// flushing by the limit's rule when `limit` is set.
fn raw_run(
    w: &Workload,
    pairs: &[RowPairs],
    limit: Option<usize>,
    dir: &Path,
) -> Result<RawRun, String> {
    let keys = pairs.iter().flat_map(|p| p.iter().map(|(k, _)| k.as_slice()));
    let setup = RawSetup {
        block_bytes: StorageConfig::default().block_bytes,
        cache_bytes: 8 << 20,
        midpoint_insertion: true,
        bloom: true,
        prefix_len: Some(raw::common_prefix_len(keys)?),
        write_buffer_bytes: StorageConfig::default().memtable_mib << 20,
    };
    let dbs: Vec<rocksdb::DB> = (0..TABLETS)
        .map(|j| raw::open(&dir.join(format!("tablet-{j}")), setup))
        .collect::<Result<_, _>>()?;
    let mut run = RawRun { flushes: vec![0; TABLETS], ..RawRun::default() };
    // Per database: bytes written since its last flush, and its oldest such write.
    let (mut bytes, mut oldest) = (vec![0usize; TABLETS], vec![None; TABLETS]);
    for (i, write) in pairs.iter().enumerate() {
        let j = w.tablets[i];
        let watch = Stopwatch::start();
        let mut batch = rocksdb::WriteBatch::default();
        write.iter().for_each(|(k, v)| batch.put(k, v));
        dbs[j].write(batch).map_err(err)?;
        bytes[j] += write.iter().map(|(k, v)| k.len() + v.len() + 64).sum::<usize>();
        oldest[j] = oldest[j].or(Some(i));
        while limit.is_some_and(|limit| bytes.iter().sum::<usize>() > limit) {
            let Some(f) = (0..TABLETS).filter(|&f| oldest[f].is_some()).min_by_key(|&f| oldest[f])
            else {
                break;
            };
            dbs[f].flush().map_err(err)?;
            (bytes[f], oldest[f], run.flushes[f]) = (0, None, run.flushes[f] + 1);
        }
        run.seconds += watch.seconds();
        run.max_unflushed = run.max_unflushed.max(bytes.iter().sum());
    }
    Ok(run)
}

/// One setup's write seconds in a run.
type Pick = fn(&MemstoreRun) -> f64;

/// The report of `docsim bench memstore`: time per write of each setup (medians over
/// the runs, and each run's), then per tablet the last run's writes, flushes, largest
/// retained log with and without the limit, and the bound.
pub fn format_report(writes: usize, runs: &[MemstoreRun]) -> String {
    let mut out = format!(
        "{TABLETS} tablets, {writes} inserts of ~100-byte values, tablet j drawn ∝ (16 − j)²; \
         memstore limit {} KiB, log segments {} KiB; {} runs\n",
        LIMIT_BYTES >> 10,
        SEGMENT_BYTES >> 10,
        runs.len()
    );
    let us = |s: f64| s * 1e6 / writes.max(1) as f64;
    let setups: [(&str, Pick); 4] = [
        ("docsim, limit", |r| r.limited.seconds),
        ("docsim, no limit", |r| r.unlimited.seconds),
        ("raw, the rule by hand", |r| r.raw_limited.seconds),
        ("raw, no rule", |r| r.raw_unlimited.seconds),
    ];
    let medians: Vec<f64> =
        setups.iter().map(|(_, f)| median_of(runs.iter().map(|r| us(f(r))))).collect();
    out += "time per write       median µs  vs raw (same rule)  µs by run\n";
    for (i, (name, f)) in setups.iter().enumerate() {
        let by_run: Vec<String> = runs.iter().map(|r| format!("{:.2}", us(f(r)))).collect();
        let ratio = medians[i] / medians[2 + i % 2];
        out += &format!("{name:<21} {:>9.2} {ratio:>18.2}x  {}\n", medians[i], by_run.join(" "));
    }
    let Some(last) = runs.last() else { return out };
    let (l, u) = (&last.limited, &last.unlimited);
    let sum = |v: &[usize]| v.iter().sum::<usize>();
    out += &format!(
        "memory flushes: {} with the limit ({} without log GC), {} without; raw RocksDB \
         flushes {} by the rule, {} without\n",
        sum(&l.flushes),
        l.flushes_without_gc,
        sum(&u.flushes),
        sum(&last.raw_limited.flushes),
        sum(&last.raw_unlimited.flushes)
    );
    out += &format!(
        "largest unflushed total after a write (engine's count): {} B with the limit, {} B \
         without; raw by the same count: {} B\n",
        l.max_memstore, u.max_memstore, last.raw_limited.max_unflushed
    );
    out + &tablet_table(last)
}

/// The per-tablet lines of the report, of run `r`.
fn tablet_table(r: &MemstoreRun) -> String {
    let (l, u) = (&r.limited, &r.unlimited);
    let mut out = "per tablet, last run: the largest retained log, and the largest retained log \
                   beyond the unflushed writes' log bytes, in bytes, with the limit and without\n"
        .to_string();
    out += &format!(
        "{:>6} {:>7} {:>8} {:>12} {:>15} {:>15} {:>13} {:>13}\n",
        "tablet",
        "writes",
        "flushes",
        "raw flushes",
        "retained limit",
        "retained none",
        "beyond limit",
        "beyond none"
    );
    for j in 0..TABLETS {
        out += &format!(
            "{j:>6} {:>7} {:>8} {:>12} {:>15} {:>15} {:>13} {:>13}\n",
            l.writes[j],
            l.flushes[j],
            r.raw_limited.flushes[j],
            l.max_retained[j],
            u.max_retained[j],
            l.max_over_bound[j] + SEGMENT_BYTES as i64,
            u.max_over_bound[j] + SEGMENT_BYTES as i64
        );
    }
    let within = |n: &NodeRun| n.max_over_bound.iter().all(|&over| over <= 0);
    out += &format!(
        "bound (retained ≤ unflushed writes' log bytes + one segment of {SEGMENT_BYTES} B, \
         after every write): {} with the limit, {} without\n",
        if within(l) { "held" } else { "BROKEN" },
        if within(u) { "held" } else { "BROKEN" }
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 400 writes (about 150 KB of unflushed data by the engine's count) and log segments
    /// of 1 KiB (a busy tablet's log spans many): the limit flushes, and holds the
    /// unflushed bytes and every tablet's log to their bounds; without it nothing is
    /// flushed; raw RocksDB flushes by the same rule.
    #[test]
    fn bench_memstore_small_run_flushes_by_the_limit_and_keeps_the_bound() {
        let scratch = crate::ScratchDir::new().expect("scratch dir");
        let run = &bench_with(400, 1, (LIMIT_BYTES, 1 << 10), scratch.path()).expect("bench")[0];
        let (limited, unlimited) = (&run.limited, &run.unlimited);
        assert_eq!(limited.writes.iter().sum::<usize>(), 400);
        assert_eq!(limited.writes, unlimited.writes);
        assert!(limited.writes[0] > 10 * limited.writes[15].max(1), "skewed: {limited:?}");
        assert!(limited.flushes.iter().sum::<usize>() > 0, "{limited:?}");
        assert_eq!(limited.flushes_without_gc, 0);
        assert!(limited.max_memstore <= LIMIT_BYTES, "{limited:?}");
        assert!(limited.max_over_bound.iter().all(|&over| over <= 0), "{limited:?}");
        assert_eq!(unlimited.flushes.iter().sum::<usize>(), 0, "{unlimited:?}");
        assert!(unlimited.max_memstore > LIMIT_BYTES, "{unlimited:?}");
        let retained = |r: &NodeRun| r.max_retained.iter().max().copied().unwrap_or(0);
        assert!(retained(unlimited) > retained(limited), "{unlimited:?}");
        assert!(run.raw_limited.flushes.iter().sum::<usize>() > 0, "{:?}", run.raw_limited);
        assert!(run.raw_limited.max_unflushed <= LIMIT_BYTES, "{:?}", run.raw_limited);
        assert_eq!(run.raw_unlimited.flushes.iter().sum::<usize>(), 0);
        assert!(run.raw_limited.seconds > 0.0 && limited.seconds > 0.0);
    }
}
