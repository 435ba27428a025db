//! A tablet: one DocDB instance, its Raft replica, and its table properties (the default
//! TTL). Every write is one Raft entry carrying one batch at one hybrid time: appended to
//! the log, synced, committed, applied to RocksDB (the entry's op id becomes the frontier,
//! which the next flush makes durable with the data), then acknowledged. Write times are
//! not required to increase: docscript lets tests write at any hybrid time to build exact
//! file layouts.
//!
//! **Bootstrap** ([`Tablet::open_with_log`]): open RocksDB and read the flushed frontier
//! F stored with the data; open the log from the segment holding F+1; re-apply exactly
//! the committed entries above F ([`crate::replay::plan_replay`]); then start Raft. After
//! a flush, and after a write that leaves the log more than two segments, log segments
//! wholly below min(F, last committed) + 1 are deleted.

use crate::canary::{Plant, Plants};
use crate::crash::CrashStage;
use crate::db::{DocDb, Frontier, RawEntry};
use crate::document::Document;
use crate::encoding::DocPath;
use crate::error::{Error, Result};
use crate::gc::CompactionKind;
use crate::hybrid_time::HybridTime;
use crate::ids::OpId;
use crate::log::{LogEntry, Truncation};
use crate::replay::{log_gc_bound, plan_replay};
use crate::replica::{LogConfig, Replica};
use crate::write_batch::DocWriteBatch;
use std::fmt;
use std::path::Path;

/// One tablet.
pub struct Tablet {
    db: DocDb,
    table_ttl_ms: Option<u64>,
    replica: Replica,
    /// The last applied entry that carried writes.
    applied: OpId,
    /// The flushed frontier as far as this process knows (data durable up to here).
    flushed: OpId,
    /// Why the tablet stopped (an injected crash, an I/O error): it refuses everything
    /// until it is reopened, so nothing is acknowledged on top of a failed write.
    down: Option<Error>,
    /// Op ids of acknowledged writes not yet taken by [`Tablet::take_acks`].
    acks: Vec<OpId>,
    /// The entry of a write that failed after it was proposed: it may or may not survive.
    in_doubt: Option<OpId>,
    /// The planted bugs, given at open.
    plants: Plants,
    /// The next CQL list index this tablet may hand out (in memory: see
    /// [`Tablet::list_index_floor`]).
    next_list_index: i64,
}

/// What bootstrap found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestartReport {
    /// The flushed frontier bootstrap went by.
    pub frontier: Frontier,
    /// Entries carrying writes that were re-applied.
    pub replayed: usize,
    /// The first and last of them.
    pub first: Option<OpId>,
    pub last: Option<OpId>,
    /// The torn tail bootstrap cut off the newest segment, if any.
    pub truncated: Option<Truncation>,
    /// Whole segments not re-read because all their entries are at or below the frontier.
    pub segments_skipped: usize,
}

impl RestartReport {
    /// Every field, as docscript's `expect restart` extension states it: the contract's
    /// line without its colon, then `truncated=<segment>@<offset>+<bytes>` (or `none`),
    /// `skipped=<segments>`, and the frontier's other two fields: `flushed_ht=<T>` (the
    /// hybrid time of the flushed entry) and `cutoff=<T>` (the history cutoff).
    pub fn full(&self) -> String {
        let line = self.to_string().replacen("restart:", "restart", 1);
        let truncated = match &self.truncated {
            Some(t) => format!("{}@{}+{}", t.segment, t.offset, t.dropped_bytes),
            None => "none".to_owned(),
        };
        let Frontier { ht, history_cutoff, .. } = self.frontier;
        format!(
            "{line} truncated={truncated} skipped={} flushed_ht={ht} cutoff={history_cutoff}",
            self.segments_skipped
        )
    }
}

impl fmt::Display for RestartReport {
    /// The docscript `restart` line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "restart: flushed={} replayed={}", self.frontier.op_id, self.replayed)?;
        if let (Some(first), Some(last)) = (self.first, self.last) {
            write!(f, " from={first} to={last}")?;
        }
        Ok(())
    }
}

impl Tablet {
    /// Open (or create) the tablet in `dir` of an in-memory RocksDB environment (or of the
    /// real file system when `env` is `None`), with its log as `log` says and the bugs in
    /// `plants` planted ([`Plants::NONE`]: none), and bootstrap. `rows`: the packings of
    /// a table's packed rows and whether they are stored as entities, set before the log
    /// is replayed, so replayed rows are stored as the layout says.
    pub fn open_with_log(
        dir: &Path,
        env: Option<&rocksdb::Env>,
        log: &LogConfig,
        plants: Plants,
        (storage, rows): (crate::db::StorageConfig, (crate::encoding::Packings, bool)),
    ) -> Result<(Tablet, RestartReport)> {
        if env.is_none() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::Io(format!("cannot create {}: {e}", dir.display())))?;
        }
        let mut db = DocDb::open_in(dir, env, plants, storage)?;
        db.set_packings(rows.0, rows.1);
        let mut frontier = db.opened_frontier();
        let (replica, recovery) =
            Replica::open(log, frontier.op_id.index, plants).inspect_err(|e| {
                if matches!(e, Error::LogCorruption { .. }) {
                    crate::probe::hit("log.corruption_refused");
                }
            })?;
        let recovered_last = replica.log().last_op_id();
        if plants.contains(Plant::FrontierBeforeDurable) {
            frontier.op_id = recovered_last; // believes every applied entry was flushed
        }
        let ops: Vec<OpId> = recovery.entries.iter().map(|e| e.op_id).collect();
        let commit = replica.committed().index;
        let plan = replay_plan(recovery.prev, &ops, frontier.op_id, commit, plants)?;
        let mut report = RestartReport {
            frontier,
            replayed: 0,
            first: None,
            last: None,
            truncated: recovery.truncated.clone(),
            segments_skipped: recovery.segments_skipped,
        };
        for entry in &recovery.entries[plan] {
            if apply_entry(&db, entry)? {
                report.replayed += 1;
                report.first.get_or_insert(entry.op_id);
                report.last = Some(entry.op_id);
            }
        }
        count_restart_probes(&report);
        let applied = report.last.unwrap_or(frontier.op_id);
        let mut tablet = Tablet {
            db,
            table_ttl_ms: None,
            replica,
            applied,
            flushed: frontier.op_id,
            down: None,
            acks: Vec::new(),
            in_doubt: None,
            plants,
            next_list_index: 0,
        };
        tablet.replica.start()?;
        Ok((tablet, report))
    }

    /// The storage, for building write batches that need reads.
    pub fn db(&self) -> &DocDb {
        &self.db
    }

    fn check_up(&self) -> Result<()> {
        match &self.down {
            None => Ok(()),
            Some(why) => Err(Error::Down { cause: Some(Box::new(why.clone())) }),
        }
    }

    /// Replicate and apply one write batch at `ht` (write ids in order); returns once the
    /// entry is durable, committed and applied. An empty batch writes nothing.
    pub fn write(&mut self, entries: &DocWriteBatch, ht: HybridTime) -> Result<()> {
        self.check_up()?;
        if entries.is_empty() {
            return Ok(());
        }
        let (db, applied) = (&self.db, &mut self.applied);
        let result = self.replica.replicate(encode_payload(ht, entries), &mut |entry| {
            if apply_entry(db, entry)? {
                *applied = entry.op_id;
            }
            Ok(())
        });
        match result {
            Ok(op_id) => {
                self.acks.push(op_id);
                // Log GC runs as the log grows too (as a background task would), not only
                // after flushes: it must hold back whatever is not flushed yet.
                if self.replica.log().segments().len() > 2 {
                    self.gc_log()?;
                }
                Ok(())
            }
            Err(e) => {
                if matches!(e, Error::Io(_) | Error::DiskFull { .. }) {
                    crate::probe::hit("disk.write_failed_tablet_down");
                }
                self.in_doubt = self.replica.last_proposed();
                self.down = Some(e.clone());
                Err(e)
            }
        }
    }

    /// The subdocument at `path` as of `read_ht`.
    pub fn get(&self, path: &DocPath, read_ht: HybridTime) -> Result<Option<Document>> {
        self.check_up()?;
        self.db.get(path, read_ht, self.table_ttl_ms)
    }

    /// [`Tablet::get`], keeping the document's scan in `scanned` for a batch built at the
    /// same hybrid time.
    pub(crate) fn get_scanned(
        &self,
        path: &DocPath,
        read_ht: HybridTime,
        scanned: &mut crate::doc_write::Scanned,
    ) -> Result<Option<Document>> {
        self.check_up()?;
        scanned.get(&self.db, path, read_ht, self.table_ttl_ms)
    }

    /// The first CQL list index a statement at `ht` may use: past every index this tablet
    /// handed out since it opened, and at least `ht`'s microsecond × 1000 (so indexes also
    /// grow with time across restarts, whose replay re-applies the logged indexes). Two
    /// statements in one microsecond thus never collide; YugabyteDB's `ExtendList` takes
    /// list indexes from the tablet's monotonic counter for the same reason.
    pub(crate) fn list_index_floor(&self, ht: HybridTime) -> i64 {
        // A physical time has 52 bits (`HybridTime::PHYSICAL_MAX_US`): ×1000 fits an i64.
        let physical_us = i64::try_from(ht.physical_us()).expect("52 bits fit an i64");
        let by_time = physical_us * 1000;
        by_time.max(self.next_list_index)
    }

    /// A statement used the list indexes below `next`.
    pub(crate) fn used_list_indexes(&mut self, next: i64) {
        self.next_list_index = self.next_list_index.max(next);
    }

    /// The table default TTL in milliseconds.
    pub fn table_ttl_ms(&self) -> Option<u64> {
        self.table_ttl_ms
    }

    /// Set the table default TTL (table metadata: kept by the owner across restarts).
    pub fn set_table_ttl_ms(&mut self, ttl_ms: Option<u64>) {
        self.table_ttl_ms = ttl_ms;
    }

    /// Set the schema packings its packed rows are read with (a CQL table's), and whether
    /// they are stored as RocksDB entities.
    pub fn set_packings(&mut self, packings: crate::encoding::Packings, entity_rows: bool) {
        self.db.set_packings(packings, entity_rows);
    }

    /// Flush memtables; the flushed frontier advances to the last applied entry.
    pub fn flush_data(&mut self) -> Result<()> {
        self.check_up()?;
        self.db.flush()?;
        self.flushed = self.applied;
        Ok(())
    }

    /// Flush and compact everything with history cutoff `cutoff_ht` (no log GC).
    pub fn compact_data(&mut self, cutoff_ht: HybridTime, kind: CompactionKind) -> Result<()> {
        self.compact_some(cutoff_ht, kind, None)
    }

    /// Flush and compact the run `files` of SST files by age (a minor compaction), or all
    /// of them (`None`), with history cutoff `cutoff_ht` (no log GC).
    pub fn compact_some(
        &mut self,
        cutoff_ht: HybridTime,
        kind: CompactionKind,
        files: Option<std::ops::RangeInclusive<usize>>,
    ) -> Result<()> {
        self.check_up()?;
        self.db.compact(cutoff_ht, kind, self.table_ttl_ms, files)?;
        self.flushed = self.applied;
        Ok(())
    }

    /// The live SST files, oldest first.
    pub fn files(&self) -> Result<Vec<crate::sst_files::SstFile>> {
        self.check_up()?;
        Ok(self.db.files())
    }

    /// Delete the log segments wholly below min(flushed frontier, last committed) + 1.
    pub fn gc_log(&mut self) -> Result<()> {
        self.check_up()?;
        let committed = self.replica.committed();
        let bound = if self.plants.contains(Plant::LogGcPastFrontier) {
            committed.index // by the last committed op alone, past the flushed frontier
        } else {
            log_gc_bound(self.flushed, committed)
        };
        let removed = self.replica.gc_log(bound).inspect_err(|e| self.down = Some(e.clone()))?;
        crate::probe::add("log.gc_removed_segment", removed as u64);
        Ok(())
    }

    /// Arm a crash at `stage` of the next write.
    pub fn arm_crash(&mut self, stage: CrashStage) {
        self.replica.arm_crash(stage);
    }

    /// The op ids of the writes acknowledged since the last call.
    pub fn take_acks(&mut self) -> Vec<OpId> {
        std::mem::take(&mut self.acks)
    }

    /// The entry of the last failed write, which a crash may or may not have kept.
    pub fn take_in_doubt(&mut self) -> Option<OpId> {
        self.in_doubt.take()
    }

    /// The log's segments (first op, last op, bytes), oldest first.
    pub fn log_segments(&self) -> &[crate::log::SegmentInfo] {
        self.replica.log().segments()
    }

    /// Every stored entry with its raw key and value bytes.
    pub fn dump(&self) -> Result<Vec<RawEntry>> {
        self.check_up()?;
        self.db.dump()
    }

    /// The highest history cutoff so far.
    pub fn history_cutoff(&self) -> HybridTime {
        self.db.history_cutoff()
    }
}

/// Which recovered entries bootstrap re-applies ([`plan_replay`]). The planted replay bugs
/// live here, around the pure plan: starting one entry early or late is planning with the
/// frontier one lower or one higher (a frontier the log does not reach stays as it is, so
/// that the plan refuses it as it would unplanted, and it is never raised past the log).
fn replay_plan(
    prev: OpId,
    ops: &[OpId],
    frontier: OpId,
    commit_index: u64,
    plants: Plants,
) -> Result<std::ops::Range<usize>> {
    let last_index = ops.last().map_or(prev.index, |op| op.index);
    let mut planned = frontier;
    if plants.contains(Plant::ReplayOneEarly) {
        planned = planted_one_early(planned, last_index);
    }
    if plants.contains(Plant::ReplayOneLate) {
        planned = planted_one_late(planned, last_index);
    }
    plan_replay(prev, ops, planned, commit_index).map_err(Error::ReplayGap)
}

/// The plant `replay-one-early`: the frontier one lower, if the log reaches it.
fn planted_one_early(mut frontier: OpId, last_index: u64) -> OpId {
    if frontier.index <= last_index {
        frontier.index = frontier.index.saturating_sub(1);
    }
    frontier
}

/// The plant `replay-one-late`: the frontier one higher, never past the log's end.
fn planted_one_late(mut frontier: OpId, last_index: u64) -> OpId {
    if frontier.index < last_index {
        frontier.index += 1;
    }
    frontier
}

/// A Raft entry's payload: the hybrid time (8 bytes, big-endian) and the encoded batch.
pub(crate) fn encode_payload(ht: HybridTime, entries: &DocWriteBatch) -> Vec<u8> {
    let mut data = Vec::with_capacity(8 + entries.encoded_len());
    data.extend_from_slice(&ht.raw().to_be_bytes());
    entries.write_to(&mut data);
    data
}

/// Apply one committed entry to RocksDB (live or in replay: the same bytes either way);
/// returns whether it carried writes. Write ids follow batch positions, so a replay is
/// bit-identical to the first apply.
pub(crate) fn apply_entry(db: &DocDb, entry: &LogEntry) -> Result<bool> {
    if entry.data.is_empty() || crate::replica::conf_change_of(entry).is_some() {
        return Ok(false); // a new leader's empty entry, or a configuration change
    }
    let bad = |why: String| Error::Storage(format!("log entry {}: {why}", entry.op_id));
    let (ht, batch) = entry.data.split_at_checked(8).ok_or_else(|| bad("no hybrid time".into()))?;
    let ht = HybridTime::from_raw(u64::from_be_bytes(ht.try_into().expect("8 bytes")));
    let batch = DocWriteBatch::from_bytes(batch).map_err(|e| bad(e.to_string()))?;
    db.write(&batch, ht, Some(entry.op_id))?;
    Ok(true)
}

fn count_restart_probes(report: &RestartReport) {
    crate::probe::add("raft.entry_replayed", report.replayed as u64);
    if report.replayed == 0 {
        crate::probe::hit("raft.restart_nothing_to_replay");
    }
    crate::probe::add("log.segment_skipped", report.segments_skipped as u64);
    if report.truncated.is_some() {
        crate::probe::hit("log.torn_tail_truncated");
    }
}
