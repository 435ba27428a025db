//! `docsim bench ttl`: space under TTL, measured over simulated hours. Each workload writes
//! one row, key or document a simulated second, everything with a TTL of 60 s, on a node of
//! its own; every 5 minutes a flush, every 15 a minor compaction of the tablet's files,
//! every hour a full compaction, each with history cutoff `now - 60 s`. Before and after
//! every compaction the tablet is dumped and two numbers are sampled: the entries stored,
//! and the entries some read at or after now can still need — the stored ones less what
//! the simulator's own statement of GC (`check/gc_complete.rs`, `leftovers`) says a full
//! compaction at `now` may remove.
//!
//! Every workload runs under three rule sets in one process: docsim's, YugabyteDB's
//! (`--plant yb-expired-parent-gc`: its read rule and its compaction, which drops every
//! expired entry with a TTL of its own) and docsim's before issue 40 (`--plant
//! gc-keeps-expired`: expired entries kept). The count is of entries, not bytes: a minor
//! compaction's tombstone for an expired value counts as one, as the value did.
//! Everything is deterministic (the same numbers on every machine).

use crate::check::gc_complete::{leftovers, TabletRules};
use docsim_engine::canary::{Plant, Plants};
use docsim_engine::cql::{parse_statement, CqlTable};
use docsim_engine::disk::{FaultConfig, SimDisk};
use docsim_engine::gc::CompactionKind;
use docsim_engine::script::{parse_line, Command};
use docsim_engine::{HybridTime, Layout, MarkerMode, Node, NodeOptions, StorageConfig, TabletId};
use std::path::Path;

/// The workloads: name, what it writes.
pub const WORKLOADS: [&str; 5] = ["cql", "cql-packed", "cql-table-ttl", "redis", "documents"];

/// The rule sets: name, the plant that states them (none: docsim's).
pub const RULES: [(&str, Option<Plant>); 3] = [
    ("docsim", None),
    ("yugabyte", Some(Plant::YbExpiredParentGc)),
    ("keep-expired", Some(Plant::GcKeepsExpired)),
];

const SECOND_US: u64 = 1_000_000;
const TTL_S: u64 = 60;
const FLUSH_EVERY_S: u64 = 300;
const MINOR_EVERY_S: u64 = 900;
const FULL_EVERY_S: u64 = 3600;

/// One sample: when (simulated seconds from the start), whether just after a compaction,
/// the entries stored, and those some read at or after then can still need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub at_s: u64,
    pub after: Option<CompactionKind>,
    pub stored: usize,
    pub needed: usize,
}

/// One workload under one rule set: its samples, in time order.
#[derive(Clone, Debug)]
pub struct SpaceRun {
    pub workload: &'static str,
    pub rules: &'static str,
    pub samples: Vec<Sample>,
}

impl SpaceRun {
    /// The most entries stored at any sample.
    pub fn peak(&self) -> usize {
        self.samples.iter().map(|s| s.stored).max().unwrap_or(0)
    }

    /// The samples just after full compactions.
    pub fn after_full(&self) -> impl Iterator<Item = &Sample> {
        self.samples.iter().filter(|s| s.after == Some(CompactionKind::Full))
    }
}

/// Run `workload` under `rules` for `hours` simulated hours, its node under `dir`.
pub fn run_space(
    workload: &'static str,
    (rules, plant): (&'static str, Option<Plant>),
    hours: u64,
    dir: &Path,
) -> Result<SpaceRun, String> {
    let err = |e: docsim_engine::Error| format!("{workload} ({rules}): {e}");
    let mut node = workload_node(workload, Plants::of(plant), dir)?;
    let mut samples = Vec::new();
    for second in 1..=hours * 3600 {
        let now = HybridTime::from_micros(second * SECOND_US);
        write_one(&mut node, workload, second, now)?;
        let cutoff = HybridTime::from_micros((second - TTL_S.min(second)) * SECOND_US);
        let kind = match second {
            s if s.is_multiple_of(FULL_EVERY_S) => Some(CompactionKind::Full),
            s if s.is_multiple_of(MINOR_EVERY_S) => Some(CompactionKind::Minor),
            s if s.is_multiple_of(FLUSH_EVERY_S) => {
                node.flush().map_err(err)?;
                None
            }
            _ => None,
        };
        if let Some(kind) = kind {
            samples.push(sample(&node, second, None)?);
            match kind {
                CompactionKind::Full => node.compact(cutoff, kind).map_err(err)?,
                CompactionKind::Minor => minor(&mut node, workload, cutoff).map_err(err)?,
            }
            samples.push(sample(&node, second, Some(kind))?);
        }
    }
    Ok(SpaceRun { workload, rules, samples })
}

/// A minor compaction of every SST file of the workload's tablet but the newest (the
/// newest is the compaction's own flush: what a size-tiered pick of older files does).
fn minor(node: &mut Node, workload: &str, cutoff: HybridTime) -> docsim_engine::Result<()> {
    node.flush()?;
    let table = table_name(workload);
    let id = table.map_or(TabletId::Docs, TabletId::table);
    let files = node.files()?.into_iter().find(|(t, _)| *t == id).map_or(0, |(_, f)| f.len());
    if files < 3 {
        return Ok(());
    }
    node.compact_files(&id, 0..=files - 2, cutoff)
}

/// The CQL table a workload writes (`None`: the document tablet).
fn table_name(workload: &str) -> Option<&'static str> {
    workload.starts_with("cql").then_some("ts")
}

/// A node for `workload`, its table created.
fn workload_node(workload: &str, plants: Plants, dir: &Path) -> Result<Node, String> {
    let layout = match workload {
        "cql-packed" => Layout::Packed,
        _ => Layout::Unpacked,
    };
    let disk = SimDisk::new(0, FaultConfig::default());
    let options = NodeOptions {
        storage: StorageConfig { layout, ..StorageConfig::default() },
        ..NodeOptions::alone(disk, 8 << 20, plants, docsim_engine::Medium::Memory)
    };
    let mut node = Node::new(dir, options).map_err(|e| e.to_string())?;
    node.set_layout(layout);
    let ttl = match workload {
        "cql-table-ttl" => format!(" WITH default_time_to_live = {TTL_S}"),
        _ => String::new(),
    };
    if table_name(workload).is_some() {
        let schema = format!("CREATE TABLE ts (k int, t int, v int, PRIMARY KEY ((k), t)){ttl}");
        let table = CqlTable::parse(&schema).map_err(|e| e.to_string())?;
        node.create_table(table).map_err(|e| e.to_string())?;
    }
    Ok(node)
}

/// The workload's write of simulated second `second`, at `now`.
fn write_one(node: &mut Node, workload: &str, second: u64, now: HybridTime) -> Result<(), String> {
    let fail = |e: String| format!("{workload} at {second} s: {e}");
    let (k, t) = (second % 10, second);
    match workload {
        "cql" | "cql-packed" => {
            let text = format!("INSERT INTO ts (k, t, v) VALUES ({k}, {t}, 1) USING TTL {TTL_S}");
            cql(node, now, &text).map_err(fail)
        }
        "cql-table-ttl" => {
            cql(node, now, &format!("INSERT INTO ts (k, t, v) VALUES ({k}, {t}, 1)")).map_err(fail)
        }
        "redis" => {
            let command = docsim_engine::redis::Command::parse(&format!(
                "SET s{} v{second} EX {TTL_S}",
                second % 500
            ))
            .map_err(|e| fail(e.to_string()))?;
            node.redis(now, &command).map(|_| ()).map_err(|e| fail(e.to_string()))
        }
        "documents" => document_write(node, second, now).map_err(fail),
        other => Err(format!("unknown workload `{other}`")),
    }
}

fn cql(node: &mut Node, now: HybridTime, text: &str) -> Result<(), String> {
    let statement = parse_statement(text).map_err(|e| e.to_string())?;
    node.cql(now, &statement).map(|_| ()).map_err(|e| e.to_string())
}

/// Sessions: every second a session document is written whole with a TTL, and every
/// third second a field is added beneath another (it inherits the session's TTL).
fn document_write(node: &mut Node, second: u64, now: HybridTime) -> Result<(), String> {
    let ttl_ms = TTL_S * 1000;
    let at = format!("@T{}", now.physical_us());
    let mut lines = vec![format!(
        r#"set doc(; "s{}") = {{"a": 1, "b": {{"c": 2}}}} {at} ttl={ttl_ms}ms"#,
        second % 300
    )];
    if second.is_multiple_of(3) {
        lines.push(format!(r#"set doc(; "s{}")."b"."d" = 3 {at}"#, (second + 7) % 300));
    }
    for line in lines {
        let Some(Command::Write { write, .. }) = parse_line(&line, 1).map_err(|e| e.to_string())?
        else {
            return Err(format!("not a document write: {line}"));
        };
        node.write(now, &[write], MarkerMode::Optional).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The node's one tablet now: entries stored, and those a read at or after `second` can
/// still need.
fn sample(node: &Node, second: u64, after: Option<CompactionKind>) -> Result<Sample, String> {
    let now = HybridTime::from_micros(second * SECOND_US);
    let (mut stored, mut unneeded) = (0, 0);
    for dump in node.dump().map_err(|e| e.to_string())? {
        let rules = TabletRules {
            table_ttl_ms: dump.table.and_then(|t| t.default_ttl_ms),
            table: dump.table,
            blind_writes: dump.table.is_some(),
            dropped: &[],
        };
        let entries: Vec<_> = dump.entries.into_iter().map(|(entry, ..)| entry).collect();
        stored += entries.len();
        unneeded += leftovers(&entries, now, &rules).len();
    }
    Ok(Sample { at_s: second, after, stored, needed: stored - unneeded })
}

/// Every workload under every rule set, for `hours` hours, under `dir`.
pub fn bench_ttl(hours: u64, dir: &Path) -> Result<Vec<SpaceRun>, String> {
    let mut runs = Vec::new();
    for workload in WORKLOADS {
        for (i, rules) in RULES.into_iter().enumerate() {
            let node_dir = dir.join(format!("{workload}-{i}"));
            runs.push(run_space(workload, rules, hours, &node_dir)?);
        }
    }
    Ok(runs)
}

/// The report: per workload, the peak and the entries stored after each full compaction
/// under each rule set, with what reads still need; then each workload's curve.
pub fn format_report(runs: &[SpaceRun], hours: u64) -> String {
    let mut out = format!(
        "docsim bench ttl: {hours} h simulated per workload, one write a second with TTL \
         {TTL_S} s; flush every {} min, minor compaction every {} min, full every {} min, \
         history cutoff now - {TTL_S} s\nentries stored (needed: what a read at or after \
         then can still need)\n\n",
        FLUSH_EVERY_S / 60,
        MINOR_EVERY_S / 60,
        FULL_EVERY_S / 60
    );
    out += &format!(
        "{:<14} {:<13} {:>7}  after each full compaction: stored (needed)\n",
        "workload", "rules", "peak"
    );
    for run in runs {
        let after: Vec<String> =
            run.after_full().map(|s| format!("{} ({})", s.stored, s.needed)).collect();
        out += &format!(
            "{:<14} {:<13} {:>7}  {}\n",
            run.workload,
            run.rules,
            run.peak(),
            after.join("  ")
        );
    }
    for workload in WORKLOADS {
        let of: Vec<&SpaceRun> = runs.iter().filter(|r| r.workload == workload).collect();
        let Some(first) = of.first() else { continue };
        out += &format!("\ncurve of {workload}: minute, when, stored by rules, needed (docsim)\n");
        out += &format!("{:>6} {:<7}", "min", "when");
        of.iter().for_each(|r| out += &format!(" {:>13}", r.rules));
        out += &format!(" {:>8}\n", "needed");
        for (i, s) in first.samples.iter().enumerate() {
            let when = match s.after {
                None => "before",
                Some(CompactionKind::Minor) => "minor",
                Some(CompactionKind::Full) => "full",
            };
            out += &format!("{:>6} {:<7}", s.at_s / 60, when);
            of.iter()
                .for_each(|r| out += &format!(" {:>13}", r.samples.get(i).map_or(0, |s| s.stored)));
            out += &format!(" {:>8}\n", s.needed);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After a full compaction docsim stores what YugabyteDB's rules store for the CQL and
    /// Redis workloads, and less than keeping expired entries; the document workload pays
    /// for the expired sessions kept above their later fields (`gc.rs`, `ExpiredKeeps`).
    #[test]
    fn docsim_reclaims_as_yugabyte_does_for_cql_and_redis() {
        let dir = crate::ScratchDir::new().expect("scratch");
        let runs = bench_ttl(1, dir.path()).expect("runs");
        let stored = |workload: &str, rules: &str| {
            let run = runs.iter().find(|r| r.workload == workload && r.rules == rules);
            let full = run.expect("ran").after_full().last().copied().expect("a full compaction");
            full.stored
        };
        for workload in ["cql", "cql-packed", "cql-table-ttl", "redis"] {
            assert_eq!(stored(workload, "docsim"), stored(workload, "yugabyte"), "{workload}");
        }
        for workload in ["cql", "cql-packed", "redis", "documents"] {
            assert!(stored(workload, "docsim") < stored(workload, "keep-expired"), "{workload}");
        }
        assert!(stored("documents", "docsim") > stored("documents", "yugabyte"));
        // Exactly: the rows and keys of the last two minutes stay (a minute above the
        // cutoff, a minute not yet expired at it), two entries per unpacked row.
        assert_eq!(stored("cql", "docsim"), 242);
        assert_eq!(stored("redis", "docsim"), 121);
    }
}
