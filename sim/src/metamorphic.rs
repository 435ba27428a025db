//! Metamorphic runs: one seed, one op stream, under every storage configuration of
//! [`StorageConfig::SET`] (block size, bloom filters, snappy, packed rows). None of them
//! may change what a reader sees, so every trace — read results, errors, restarts — must
//! be identical; the first differing step is reported when one is not.
//!
//! Packed rows make log entries smaller, so the Raft log rolls to its next segment at
//! other entries, and a disk fault placed by bytes (an I/O error or full disk at the next
//! write, a torn crash, a flipped bit) lands elsewhere: the packed layout is compared with
//! a default run where such faults are off ([`RunConfig::byte_faults`]; crashes stay,
//! untorn). Torture, which draws a configuration per seed, runs every fault in every
//! layout against the model. One thing in a trace is compared as the same anyway: the
//! name of the log segment file an error names. Split tables (every table in 4 or 16
//! tablets) change what `restart`, `files` and `log` print (they name tablets), so those
//! steps' output is not compared for them. With replicas, a layout whose logs' bytes lie
//! otherwise (packed rows, split tables) moves log GC's segment boundaries, and with them
//! whether a lagging follower catches up by log or by snapshot (split tables also elect
//! other leaders): such a run takes its own course, and must pass rather than match.

use crate::run::{run, RunConfig, RunOutcome};
use crate::streams::{stream, STREAM_STORAGE};
use docsim_engine::StorageConfig;
use rand::Rng;

/// Where a configuration's trace first differs from its baseline's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    pub config: StorageConfig,
    /// The first differing trace line (0-based).
    pub line: usize,
    pub default_line: Option<String>,
    pub this_line: Option<String>,
}

/// One run of the set: its storage configuration, whether disk faults placed by bytes
/// were on ([`RunConfig::byte_faults`]), and its outcome.
pub struct MetaRun {
    pub storage: StorageConfig,
    pub byte_faults: bool,
    pub outcome: RunOutcome,
}

/// `line` with every log segment file name (`wal-<digits>`) as `wal-*`.
pub fn neutral(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find("wal-") {
        out.push_str(&rest[..at + 4]);
        rest = &rest[at + 4..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            out.push('*');
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
}

/// The FNV-1a hash of a trace's [`neutral`] lines: equal for configurations that agree.
pub fn neutral_hash(trace: &[String]) -> u64 {
    trace
        .iter()
        .fold(crate::run::FNV_OFFSET, |h, line| crate::run::fnv(h, neutral(line).as_bytes()))
}

/// The first index where two traces differ (a missing line counts, segment file names do
/// not), if any.
pub fn first_difference(a: &[String], b: &[String]) -> Option<usize> {
    first_difference_split(a, b, false)
}

/// [`first_difference`]; with `split`, a run whose tables were split into other tablet
/// counts: what a `restart`, `files` or `log` step printed is not compared (it names
/// tablets, and a split table has a log and files per tablet), the step itself is.
fn first_difference_split(a: &[String], b: &[String], split: bool) -> Option<usize> {
    let seen = |line: &String| match split && names_tablets(line) {
        true => neutral(line.split(" => ").next().unwrap_or_default()),
        false => neutral(line),
    };
    let common = a.iter().zip(b).position(|(x, y)| seen(x) != seen(y));
    common.or((a.len() != b.len()).then_some(a.len().min(b.len())))
}

/// Whether a trace line is a step whose output names tablets: `restart`, `files`, `log`.
fn names_tablets(line: &str) -> bool {
    let command = line.split_once(' ').map_or("", |(_, rest)| rest);
    ["restart", "files", "log"]
        .iter()
        .any(|c| command == *c || command.starts_with(&format!("{c} ")))
}

/// The storage configuration torture runs `seed` under, drawn by swarm from the seed's
/// own stream: half the seeds the default, a quarter a packed layout (packed rows, or as
/// entities), the rest one of the other RocksDB option sets.
pub fn drawn(seed: u64) -> StorageConfig {
    let mut rng = stream(seed, STREAM_STORAGE);
    let set = StorageConfig::SET;
    let is_packed = |s: &StorageConfig| s.layout != docsim_engine::Layout::Declared;
    let (packed, options): (Vec<StorageConfig>, Vec<StorageConfig>) =
        set[1..].iter().partition(|s| is_packed(s));
    match rng.random_range(0..4) {
        0 | 1 => set[0],
        2 => packed[rng.random_range(0..packed.len())],
        _ => options[rng.random_range(0..options.len())],
    }
}

/// Run `config`'s seed under every configuration of the set (the default first). The
/// RocksDB option sets run with every fault; the packed layout runs, beside a second
/// default run, without the faults a log's byte layout places (packed rows change it).
pub fn run_set(config: &RunConfig) -> Vec<MetaRun> {
    let mut runs = Vec::new();
    for storage in StorageConfig::SET {
        // Packed rows and split tables lay the logs' bytes out otherwise.
        let by_bytes =
            storage.layout == docsim_engine::Layout::Declared && storage.tablets.is_none();
        let baseline_needed = !by_bytes && !runs.iter().any(|r: &MetaRun| !r.byte_faults);
        if baseline_needed {
            runs.push(meta_run(config, StorageConfig::SET[0], false));
        }
        runs.push(meta_run(config, storage, by_bytes));
    }
    runs
}

fn meta_run(config: &RunConfig, storage: StorageConfig, byte_faults: bool) -> MetaRun {
    let config =
        RunConfig { storage, byte_faults, keep_trace: true, same_options: true, ..config.clone() };
    MetaRun { storage, byte_faults, outcome: run(&config) }
}

/// Every run against its baseline, the default configuration's run with the same faults:
/// the divergences found.
pub fn divergences(runs: &[MetaRun]) -> Vec<Divergence> {
    let default = StorageConfig::SET[0];
    let baseline = |faults: bool| {
        runs.iter().find(|r| r.storage == default && r.byte_faults == faults).map(|r| &r.outcome)
    };
    // A replicated run whose logs' bytes lie otherwise (packed rows, split tables) rolls
    // its log segments at other entries, so log GC frees other segments and a lagging
    // follower may need a snapshot in one run and not the other; split tables also elect
    // other leaders. Such a run goes its own way: it must pass, not match.
    let comparable = |r: &&MetaRun| r.byte_faults || r.outcome.replicas == 1;
    runs.iter()
        .filter(|r| r.storage != default)
        .filter(comparable)
        .filter_map(|r| {
            let first = baseline(r.byte_faults)?;
            let split = r.storage.tablets.is_some();
            let line = first_difference_split(&first.trace, &r.outcome.trace, split)?;
            Some(Divergence {
                config: r.storage,
                line,
                default_line: first.trace.get(line).cloned(),
                this_line: r.outcome.trace.get(line).cloned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_first_difference_is_found_or_none() {
        let a = lines(&["a", "b", "c"]);
        assert_eq!(first_difference(&a, &a), None);
        assert_eq!(first_difference(&a, &lines(&["a", "x", "c"])), Some(1));
        assert_eq!(first_difference(&a, &lines(&["a", "b"])), Some(2), "a shorter trace");
        assert_eq!(first_difference(&lines(&[]), &lines(&["a"])), Some(0));
        let io = |n: &str| format!("error: I/O error syncing table-t/log/wal-{n} (injected)");
        let (a, b) = (lines(&[&io("00000028")]), lines(&[&io("00000029")]));
        assert_eq!(first_difference(&a, &b), None, "segment names differ by layout");
        assert_eq!(neutral("wal-12 wal- wal-x"), "wal-* wal- wal-x");
        assert_ne!(neutral_hash(&a), neutral_hash(&lines(&["error: other"])));
        assert_eq!(neutral_hash(&a), neutral_hash(&b));
    }

    #[test]
    fn a_split_run_compares_every_step_but_what_names_tablets() {
        let a = lines(&["#3 restart => restart: flushed=1.2 replayed=0 table=t", "#4 get x => 1"]);
        let b =
            lines(&["#3 restart => restart: flushed=1.3 replayed=0 table=t/0", "#4 get x => 1"]);
        assert_eq!(first_difference(&a, &b), Some(0), "unsplit: restarts compare");
        assert_eq!(first_difference_split(&a, &b, true), None);
        let c = lines(&["#3 flush => ", "#4 get x => 1"]);
        assert_eq!(first_difference_split(&a, &c, true), Some(0), "the step itself compares");
        let d = lines(&["#3 restart => restart: flushed=1.2", "#4 get x => 2"]);
        assert_eq!(first_difference_split(&a, &d, true), Some(1), "reads compare");
    }
}
