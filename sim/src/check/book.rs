//! The simulator's own account of durability, kept apart from the engine: which writes
//! each tablet acknowledged (by op id), which write was cut and how, what the simulator
//! flushed, and what the disk did (its fault ledger, and the log files' framing read as
//! an fsck would: `log_files.rs`). From these alone, at every restart, it derives every
//! field of what bootstrap must report — the flushed frontier (its op id, its write's
//! hybrid time, the history cutoff), how many entries it re-applies, the first and the
//! last, the torn tail it cuts off, the segments it skips — or the corruption it must
//! refuse to start with, and compares.
//!
//! Rules (a group of one: one voter, writes acknowledged after sync, commit and apply;
//! with more replicas the commit index and the leaders' overwrites decide what comes back,
//! and the history check at convergence judges it instead):
//! - A flush makes every applied entry durable in RocksDB: the frontier becomes the last
//!   one applied (a write or a metadata change, with its hybrid time), and nothing at or
//!   below it may be replayed. A compaction stores its cutoff before its own flush: the
//!   cutoff is durable once the compaction's flush is.
//! - Every acknowledged entry above the frontier must be replayed, in order (a metadata
//!   change too, which `replayed` does not count: it carries no writes).
//! - A write cut by a crash is *in doubt*. Cut after its sync (or later) its entry
//!   is durable: it must come back. Cut after the append, before the sync, it comes back
//!   exactly when the crash tore the log's unsynced tail (ledger: `Torn`, bytes kept) and
//!   the bytes kept hold its whole record. A write cut by an injected I/O error or a full
//!   disk never comes back: the engine appends a write's entry once, before its one sync,
//!   so the fault fell before the entry was durable, and the node then loses power.
//!   (The models never saw a write that does not come back: they are fed the entries
//!   replicas apply, `check/model.rs`.)
//! - A torn tail's bytes past its last whole record are cut off: `truncated`.
//! - Bootstrap skips the oldest segments whose successor starts at or below the frontier.
//! - A flipped bit in a log file must fail the restart with `LogCorruption` naming the
//!   file and the record that holds the byte (the sync-mark slot files: offset 0). With
//!   one replica that ends the run, as expected.

use super::log_files::{
    entry_op_id, record_holding, segment_header, segment_prev_index, whole_records,
};
use docsim_engine::disk::Fault;
use docsim_engine::script::{format_restart, format_restart_full};
use docsim_engine::Truncation;
use docsim_engine::{CrashPoint, Error, Frontier, HybridTime, OpId, RestartReport, TabletId};
use std::collections::BTreeMap;

/// How a write was cut before its acknowledgement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// A power cut at this point of the write.
    Crash(CrashPoint),
    /// An injected I/O error or a full disk failed it.
    DiskFault,
}

#[derive(Default)]
struct TabletBook {
    /// Entries with writes above the frontier, in order (what a restart replays).
    unflushed: Vec<OpId>,
    /// The last entry applied that the frontier follows (a write or a metadata change),
    /// and the last flushed.
    applied: OpId,
    flushed: OpId,
    /// The hybrid times of the entries of `applied` and `flushed`.
    applied_ht: HybridTime,
    flushed_ht: HybridTime,
    /// The highest history cutoff of the compactions of this tablet.
    cutoff: HybridTime,
    /// Every entry with writes acknowledged (what a log that starts at entry 1 replays
    /// onto an empty RocksDB).
    writes: Vec<OpId>,
}

/// What the disk held when the power came back: each tablet's log segments, by name,
/// read before bootstrap touched them.
pub type LogFiles = BTreeMap<TabletId, Vec<(String, Vec<u8>)>>;

/// What the simulator knows about durability.
#[derive(Default)]
pub struct Book {
    tablets: BTreeMap<TabletId, TabletBook>,
    /// Where a crash is armed to cut the power.
    pub armed: Option<docsim_engine::CrashPoint>,
    /// A disk fault armed for the next write (it lives for one write): the fault ledger's
    /// length when it was armed.
    pub fault_armed_at: Option<usize>,
    /// How the last write was cut, and its entry (whose proposal the checker saw).
    in_doubt: Option<(Cut, InDoubt)>,
    /// A flipped bit the next restart must refuse: the file and the offset it must name.
    corrupt: Option<(String, usize)>,
    /// Fault-ledger length when the last crash was armed or cut the power.
    pub ledger_seen: usize,
    pub crashes: u64,
    /// Crashes by where they cut: `crash.<stage>`.
    pub crash_stages: BTreeMap<String, u64>,
    pub restarts: u64,
    /// Replayed entries reported, and entries the book expected above the frontiers.
    pub replayed: u64,
    pub expected_replayed: u64,
}

/// What a restart's check found wrong: expected and actual output lines.
pub type Mismatch = (Vec<String>, Vec<String>);

/// A write whose entry may or may not have survived a cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InDoubt {
    pub tablet: TabletId,
    pub op_id: OpId,
    pub ht: HybridTime,
    /// It carries writes (a metadata change moves the frontier, and is not counted).
    pub writes: bool,
}

impl Book {
    /// An entry acknowledged by the engine: `writes` for a write, not for a metadata
    /// change (which bootstrap re-applies without counting it).
    pub fn acked(&mut self, tablet: TabletId, op: OpId, ht: HybridTime, writes: bool) {
        let book = self.tablets.entry(tablet).or_default();
        assert!(op > book.applied, "op ids grow: {op} after {}", book.applied);
        if writes && op > book.flushed {
            book.unflushed.push(op); // (a memory flush may have taken it before its ack)
        }
        if writes {
            book.writes.push(op);
        }
        book.applied = op;
        book.applied_ht = ht;
    }

    /// Every tablet flushed, or only the tablet `only`.
    pub fn flushed(&mut self, only: Option<&TabletId>) {
        let tablets = self.tablets.iter_mut().filter(|(id, _)| only.is_none_or(|o| o == *id));
        for (_, book) in tablets {
            if book.applied > book.flushed {
                book.flushed = book.applied;
                book.flushed_ht = book.applied_ht;
            }
            book.unflushed.clear();
        }
    }

    /// The memstore limit flushed `tablet` when its last entry applied was `op` at `ht`
    /// (the run's account of what was applied: an entry may be flushed before its ack).
    pub fn flushed_to(&mut self, tablet: &TabletId, op: OpId, ht: HybridTime) {
        let book = self.tablets.entry(tablet.clone()).or_default();
        if op > book.flushed {
            book.flushed = op;
            book.flushed_ht = ht;
        }
        book.unflushed.retain(|o| *o > op);
    }

    /// After log GC ran on `tablet` with the book's frontier, the segments of `files` (its
    /// log's, oldest first) that GC should have removed, as the `log` command prints them
    /// (`log: [table=<name> ]segment=N after=<op> last=<op> bytes=B`,
    /// `docs/docscript-extensions.md`): every segment but the newest whose entries all lie
    /// at or below the flushed frontier (a segment without entries: its header's `prev`).
    /// The bound is the book's: one node commits what it acknowledges, so
    /// min(flushed, committed) is the flushed frontier
    /// (`log_gc_bound`, `engine/src/replay.rs`, states the engine's). The engine's own
    /// frontier may be higher (entries it applied that no one acknowledged), never lower,
    /// so it removes at least these. One node only: with replicas a committed index below
    /// the frontier, or a leader's overwrite (`Log::gc`'s `lowest_kept`), keeps more.
    /// The lines are judged against the engine's `log`, which lists its segments as it
    /// holds them: a bug that leaves a file the engine no longer lists (or lists with
    /// other fields) fails the seed here, while its reproducer's `expect absent` passes.
    pub fn log_gc_leftovers(&self, tablet: &TabletId, files: &[(String, Vec<u8>)]) -> Vec<String> {
        let flushed = self.tablets.get(tablet).map_or(0, |book| book.flushed.index);
        let Some((_newest, older)) = files.split_last() else { return Vec::new() };
        let prefix = tablet.line_prefix();
        let mut leftovers = Vec::new();
        for (_, bytes) in older {
            let Some((seq, (prev_term, prev_index))) = segment_header(bytes) else { continue };
            let mut entries =
                whole_records(bytes).into_iter().filter_map(|(at, _)| entry_op_id(bytes, at));
            let (last_term, last_index) = entries.next_back().unwrap_or((prev_term, prev_index));
            if last_index <= flushed {
                leftovers.push(format!(
                    "log: {prefix}segment={seq} after={prev_term}.{prev_index} \
                     last={last_term}.{last_index} bytes={}",
                    bytes.len()
                ));
            }
        }
        leftovers
    }

    /// The tablets `ids` compacted with history cutoff `cutoff`: the engine stores the
    /// cutoff before the compaction's flush, so it is durable with that flush.
    pub fn compacted(&mut self, ids: &[TabletId], cutoff: HybridTime) {
        for id in ids {
            let book = self.tablets.entry(id.clone()).or_default();
            book.cutoff = book.cutoff.max(cutoff);
        }
    }

    /// The write `entry` was cut (`cut`) before its acknowledgement.
    pub fn cut(&mut self, cut: Cut, entry: InDoubt) {
        self.in_doubt = Some((cut, entry));
    }

    /// Whether the write in doubt was cut by a disk fault.
    pub fn cut_by_disk_fault(&self) -> bool {
        matches!(self.in_doubt, Some((Cut::DiskFault, ..)))
    }

    /// The power went off at `stage` (`idle`, `after-flush`, a write stage, ...).
    pub fn crashed(&mut self, stage: &str) {
        self.crashes += 1;
        *self.crash_stages.entry(format!("crash.{stage}")).or_default() += 1;
        self.armed = None;
    }

    /// Bit `bit` of byte `offset` of `file` (whose bytes are `bytes`, before the flip) is
    /// about to flip: the next restart must refuse the log there.
    pub fn flipping(&mut self, file: &str, bytes: &[u8], offset: usize) {
        let record = if file.contains("/wal-") { record_holding(bytes, offset) } else { Some(0) };
        let record = record.expect("flips land in synced data, which is whole records");
        self.corrupt = Some((file.to_owned(), record));
    }

    /// Check a restart of the tablets `ids` (in the node's order) that gave `outcome`.
    /// `ledger` is the disk's faults, `files` the log files as they were before bootstrap.
    /// `Ok(true)`: the restart refused a corrupt log, as the book predicted: the run ends.
    pub fn restarted(
        &mut self,
        ids: &[TabletId],
        outcome: &Result<Vec<(TabletId, RestartReport)>, Error>,
        ledger: &[Fault],
        files: &LogFiles,
    ) -> Result<bool, Mismatch> {
        self.restarts += 1;
        if let Some((file, offset)) = self.corrupt.take() {
            // The run ends here; the flipped bytes are no log to read the in-doubt write in.
            return refused(outcome, &file, offset).map(|()| true);
        }
        let since_crash = &ledger[self.ledger_seen.min(ledger.len())..];
        if let Some(dir) = self.lost_files(ids, since_crash, files) {
            return match outcome {
                Err(Error::LostRocksDb { dir: named, .. }) if *named == dir => Ok(true),
                Ok(reports) => Err((
                    vec!["error: lost_rocksdb".to_owned()],
                    reports.iter().map(|(id, r)| format_restart_full(id, r)).collect(),
                )),
                Err(e) => {
                    Err((vec!["error: lost_rocksdb".to_owned()], vec![format!("error: {e}")]))
                }
            };
        }
        let torn = torn_tails(since_crash, files);
        self.settle_in_doubt(&torn, files)?;
        let expected: Vec<(TabletId, RestartReport)> =
            ids.iter().map(|id| (id.clone(), self.expected(id, &torn, files))).collect();
        // Compared in full; a mismatch is stated at the contract's `restart:` line when it
        // shows there (the torn-tail details depend on what the engine synced, which a
        // planted bug changes, and a reproducer must pass without its bug), else in full.
        let lines = |format: fn(&TabletId, &RestartReport) -> String| {
            let want: Vec<String> = expected.iter().map(|(id, r)| format(id, r)).collect();
            let got: Vec<String> = match outcome {
                Ok(reports) => reports.iter().map(|(id, r)| format(id, r)).collect(),
                Err(e) => vec![format!("error: {e}")],
            };
            (want, got)
        };
        let (want, got) = match lines(format_restart) {
            (want, got) if want != got => (want, got),
            _ => lines(format_restart_full),
        };
        for (id, report) in outcome.as_deref().unwrap_or_default() {
            self.replayed += report.replayed as u64;
            let expected = self.tablets.get(id).map_or(0, |b| b.unflushed.len());
            self.expected_replayed += expected as u64;
        }
        if want != got {
            return Err((want, got));
        }
        Ok(false)
    }

    /// A tablet whose RocksDB files the ledger says were lost since the crash: if its log
    /// starts above entry 1 (log GC ran), bootstrap must refuse it: its disk directory.
    /// If the log starts at entry 1, RocksDB starts empty and every write the log holds
    /// replays: the book's frontier and cutoff go back to nothing.
    fn lost_files(
        &mut self,
        ids: &[TabletId],
        faults: &[Fault],
        files: &LogFiles,
    ) -> Option<String> {
        for fault in faults {
            let Fault::Lost { dir, .. } = fault else { continue };
            let Some(id) = ids.iter().find(|id| docsim_engine::tablet_dir(id) == *dir) else {
                continue;
            };
            let segments = files.get(id).map(Vec::as_slice).unwrap_or_default();
            let log_start = segments.first().and_then(|(_, bytes)| segment_prev_index(bytes));
            if log_start.is_some_and(|prev| prev > 0) {
                return Some(dir.clone());
            }
            let book = self.tablets.entry(id.clone()).or_default();
            book.unflushed = book.writes.clone();
            (book.flushed, book.flushed_ht, book.cutoff) = Default::default();
        }
        None
    }

    /// Every field bootstrap must report for `id`.
    fn expected(&self, id: &TabletId, torn: &[TornTail], files: &LogFiles) -> RestartReport {
        let book = self.tablets.get(id);
        let unflushed = book.map(|b| b.unflushed.as_slice()).unwrap_or_default();
        let flushed = book.map_or(OpId::default(), |b| b.flushed);
        let segments = files.get(id).map(Vec::as_slice).unwrap_or_default();
        let truncated = torn.iter().find(|t| segments.iter().any(|(name, _)| *name == t.file));
        let (flushed_ht, cutoff) =
            book.map_or((HybridTime::MIN, HybridTime::MIN), |b| (b.flushed_ht, b.cutoff));
        RestartReport {
            frontier: Frontier { op_id: flushed, ht: flushed_ht, history_cutoff: cutoff },
            replayed: unflushed.len(),
            first: unflushed.first().copied(),
            last: unflushed.last().copied(),
            truncated: truncated.and_then(TornTail::truncation),
            segments_skipped: segments_skipped(segments, flushed.index),
            uncommitted: 0, // one voter: every durable entry is committed
            finished_install: false,
        }
    }

    /// Decide whether the cut write survives (module rules); if it does, it is owed a
    /// replay like an acknowledged one. Cut after its sync, it must survive: its entry is
    /// durable. Cut after its append, it survives exactly when the write's tablet's torn
    /// tail kept its record whole first (and the entry kept must be the write's).
    fn settle_in_doubt(&mut self, torn: &[TornTail], files: &LogFiles) -> Result<(), Mismatch> {
        let Some((cut, entry)) = self.in_doubt.take() else { return Ok(()) };
        let segments = files.get(&entry.tablet).map(Vec::as_slice).unwrap_or_default();
        let survives = match cut {
            Cut::Crash(CrashPoint::AfterAppend) => {
                let ours = torn.iter().filter(|t| segments.iter().any(|(name, _)| *name == t.file));
                let kept = ours.filter_map(|t| t.kept_entry).next();
                if kept.is_some_and(|kept| kept != entry.op_id) {
                    let want =
                        format!("in doubt: {kept:?} of {:?}, kept whole by the tear", entry.tablet);
                    return Err((
                        vec![want],
                        vec![format!("in doubt: {} (proposed)", entry.op_id)],
                    ));
                }
                kept.is_some()
            }
            Cut::Crash(_) => true,
            Cut::DiskFault => false,
        };
        if survives {
            self.acked(entry.tablet, entry.op_id, entry.ht, entry.writes);
        }
        Ok(())
    }
}

/// A log file's unsynced tail, torn by a crash: what the ledger and the file say of it.
struct TornTail {
    file: String,
    /// Where the kept bytes begin (the synced length) and how many there are.
    start: usize,
    kept_bytes: usize,
    /// The bytes of the kept tail in whole records.
    whole_bytes: usize,
    /// The op id of the entry whose record the kept bytes hold whole, first in the tail.
    kept_entry: Option<OpId>,
}

impl TornTail {
    fn truncation(&self) -> Option<Truncation> {
        (self.whole_bytes < self.kept_bytes).then(|| Truncation {
            segment: self.file.clone(),
            offset: self.start + self.whole_bytes,
            dropped_bytes: self.kept_bytes - self.whole_bytes,
        })
    }
}

/// The torn tails the ledger's `Torn` faults since the last crash left in `files`.
fn torn_tails(faults: &[Fault], files: &LogFiles) -> Vec<TornTail> {
    let find = |name: &str| files.values().flatten().find(|(n, _)| n == name).map(|(_, b)| b);
    let mut tails = Vec::new();
    for fault in faults {
        let Fault::Torn { file, kept_bytes, .. } = fault else { continue };
        let Some(bytes) = find(file) else { continue }; // a sync-mark slot: none are torn
        let start = bytes.len() - kept_bytes;
        let records = whole_records(&bytes[start..]);
        let whole_bytes = records.iter().map(|(_, size)| size).sum();
        let kept_entry = records.first().and_then(|(at, _)| entry_op_id(bytes, start + at));
        let kept_entry = kept_entry.map(|(term, index)| OpId::new(term, index));
        tails.push(TornTail {
            file: file.clone(),
            start,
            kept_bytes: *kept_bytes,
            whole_bytes,
            kept_entry,
        });
    }
    tails
}

/// How many of `segments` (oldest first) bootstrap skips: all before the newest one
/// whose header's previous index is at or below the frontier's.
fn segments_skipped(segments: &[(String, Vec<u8>)], frontier_index: u64) -> usize {
    let prevs = segments.iter().map(|(_, bytes)| segment_prev_index(bytes).unwrap_or(u64::MAX));
    prevs.collect::<Vec<_>>().iter().rposition(|prev| *prev <= frontier_index).unwrap_or(0)
}

/// A restart that must refuse the log at `offset` of `file`. (A reproducer can state only
/// the kind, `expect error: log_corruption`: the message's reason is the engine's.)
fn refused(
    outcome: &Result<Vec<(TabletId, RestartReport)>, Error>,
    file: &str,
    offset: usize,
) -> Result<(), Mismatch> {
    let want = vec!["error: log_corruption".to_owned()];
    match outcome {
        Err(Error::LogCorruption { segment, offset: at, .. })
            if segment == file && *at == offset =>
        {
            Ok(())
        }
        Ok(reports) => {
            Err((want, reports.iter().map(|(id, r)| format_restart_full(id, r)).collect()))
        }
        Err(e) => {
            Err((want, vec![format!("error: {e} (the book expected {file} at byte {offset})")]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = (payload.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&[0; 4]); // the checksum: never read by the book
        out.push(kind);
        out.extend_from_slice(payload);
        out
    }

    /// Segment `seq` after op `1.prev`, holding entries `1.i` for `indexes`.
    fn segment(seq: u64, prev: u64, indexes: &[u64]) -> (String, Vec<u8>) {
        let mut header = b"docsimlg".to_vec();
        for field in [seq, 1, prev, 1, 0, 0] {
            header.extend_from_slice(&field.to_le_bytes());
        }
        let mut bytes = record(1, &header);
        for &index in indexes {
            let payload: Vec<u8> = [1u64, index].iter().flat_map(|f| f.to_le_bytes()).collect();
            bytes.extend(record(2, &payload));
        }
        (format!("log/wal-{seq:08}"), bytes)
    }

    #[test]
    fn log_gc_must_remove_every_older_segment_at_or_below_the_flushed_frontier() {
        let mut book = Book::default();
        let table = TabletId::table("t");
        for i in 1..=9 {
            book.acked(table.clone(), OpId::new(1, i), HybridTime::MIN, true);
        }
        book.flushed(None);
        let files = [
            segment(1, 0, &[1, 2, 3, 4]),    // wholly at or below 9: must be gone
            segment(2, 4, &[5, 6, 7, 8, 9]), // ends at the frontier: must be gone
            segment(3, 9, &[10, 11, 12]),    // holds entries above it: stays
            segment(4, 12, &[]),             // the newest (empty here): stays
        ];
        let left = book.log_gc_leftovers(&table, &files);
        assert_eq!(left.len(), 2, "{left:?}");
        assert_eq!(
            left[0],
            format!("log: table=t segment=1 after=1.0 last=1.4 bytes={}", files[0].1.len())
        );
        assert!(left[1].starts_with("log: table=t segment=2 after=1.4 last=1.9 "), "{left:?}");
        // An older segment without entries counts by its header's prev; the newest never.
        let files = [segment(5, 3, &[]), segment(6, 3, &[])];
        assert_eq!(book.log_gc_leftovers(&table, &files).len(), 1);
        assert!(book.log_gc_leftovers(&table, &files[1..]).is_empty());
        // A tablet never flushed: frontier 0, nothing to remove.
        assert!(book.log_gc_leftovers(&TabletId::Docs, &files).is_empty());
    }
}
