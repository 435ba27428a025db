//! Planted bugs, for testing the tester: each is off unless switched on at run time, and
//! the simulator must catch every one (`docsim torture --plant NAME`). A planted bug lives
//! exactly where the real mistake would: one condition at one site.

/// A plantable bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Plant {
    /// A TTL'd value stays visible one microsecond past `write + ttl` (reader).
    TtlOffByOne,
    /// Visibility compares hybrid times only, ignoring write ids (reader).
    WriteIdIgnored,
    /// A read exactly at the history cutoff is refused (the cutoff made exclusive).
    ExclusiveCutoff,
    /// A child without its own TTL does not inherit its parent's (reader).
    ParentTtlNotInherited,
    /// Required-marker writes forget the `{}` markers of missing ancestors.
    MissingInitMarker,
    /// Compaction drops overwritten versions even above the history cutoff.
    GcIgnoresCutoff,
    /// Bootstrap takes the last applied op as the flushed frontier: it believes data in
    /// the lost memtables was durable (the frontier advanced before the data was).
    FrontierBeforeDurable,
    /// Bootstrap re-applies the frontier entry itself (replay starts one entry early).
    ReplayOneEarly,
    /// Bootstrap skips the first entry above the frontier (replay starts one entry late).
    ReplayOneLate,
    /// Log GC goes by the last committed op alone, past the flushed frontier.
    LogGcPastFrontier,
    /// A write is acknowledged after the log append, before the sync.
    AckBeforeSync,
    /// A read below the history cutoff fails as a storage error instead of as
    /// `snapshot_too_old`: the message reads well, but a caller branching on the kind
    /// retries the same read instead of reading at a newer time. Only an oracle that
    /// compares error kinds catches it.
    SnapshotErrorMislabelled,
    /// Expiry compares physical microseconds only: a read at the TTL boundary's
    /// microsecond with a larger logical part still sees the value (rare: needs a read
    /// within the microsecond an entry expires).
    TtlBoundaryIgnoresLogical,
    /// A child with its own TTL expires with its parent when the parent's TTL runs out
    /// first (rare: needs a TTL'd object, a newer child with a longer TTL, and a read
    /// between the two expiries).
    OwnTtlDiesWithParent,
    /// Opening the log takes a tail cut inside a record's 9-byte header for corruption and
    /// refuses to start, though a crash tore it (rare: needs a tear whose sector boundary
    /// falls within the few header bytes of a record).
    TornHeaderIsCorruption,
    /// Bootstrap does not check the records of the segments it skips below the frontier:
    /// a flipped bit there goes unnoticed (rare: needs a crash after a flush before its log
    /// GC, and a flip landing in a skipped segment).
    SkippedSegmentsUnchecked,
    /// Log GC also removes the segment whose last entry is the first one bootstrap needs
    /// (needs a segment ending exactly one past the flushed frontier, a GC, then a crash
    /// before the next flush).
    GcTakesFirstNeededSegment,
    /// YugabyteDB's rule: a minor compaction rewrites every entry expired at its cutoff
    /// as a bare tombstone, judged by the compaction's own files: an entry with a TTL of
    /// its own loses it (a child in a file outside inherits it no more and reappears), and
    /// one expired through a TTL it inherits may in truth inherit another from an ancestor
    /// outside (`docdb_compaction_context.cc`: `CalcExpiration`, `EncodedTombstone()`).
    YbMinorGcDropsTtl,
    /// YugabyteDB's reader with the major compaction both share: a child written after its
    /// parent's TTL ran out inherits that TTL (invisible from birth: `GetNewExpiration`,
    /// `doc_reader.cc`), and a full compaction drops the expired parent even when a
    /// descendant outlives it (`docdb_compaction_context.cc`; docsim keeps it then,
    /// `gc::ExpiredKeeps`), after which the child reads back: a read above the cutoff
    /// changes.
    YbExpiredParentGc,
    /// YugabyteDB's rule: a required-marker seek takes a TTL-only record (Redis EXPIRE)
    /// at its own write time, as if it overwrote its key, so every field or member written
    /// before the EXPIRE counts as missing: HDEL and SREM of it write nothing, though the
    /// reply counts it (`DocWriteBatch::SeekToKeyPrefix`, `doc_write_batch.cc`, reads the
    /// record's write time without `NextFullValue`).
    YbSeekStopsAtExpire,
    /// A full compaction keeps an entry expired through a TTL of its own (docsim's rule
    /// before compaction reclaimed expired data): no read can tell, only the simulator's
    /// check of what a compaction must remove (`sim/src/check/gc_complete.rs`).
    GcKeepsExpired,
    /// YugabyteDB's reader of packed rows: a column folded in with a TTL of its own
    /// expires that TTL after the packed row's write time, not its own
    /// (`DoDecodePackedColumn`, `docdb/doc_reader.cc`): after a repacking compaction such
    /// a column vanishes early.
    YbPackedColumnTtlFromRow,
    /// The bloom filters' prefix runs one key component too long for hash-partitioned
    /// keys: a partition read's seek key no longer shares its rows' prefix, and files
    /// holding the partition are skipped.
    BloomPrefixOneLong,
    /// The client routes a statement of a split table by the hash of its first hash
    /// column alone: rows of a two-column hash key land in a tablet whose range does not
    /// hold their hash. Reads route alike and find them; only the model's own statement
    /// of the partitioning (`models/src/partition.rs`) sees them misplaced.
    RouteFirstHashColumn,
    /// The server-wide memstore limit flushes the tablet whose memtable holds the newest
    /// write instead of the oldest: the log of the tablet written least keeps growing.
    MemstoreFlushesNewest,
    /// RocksDB's file system returns from a sync of an SST file without making it
    /// durable (`simfs.rs`): a flush's MANIFEST edit names a file whose data a power cut
    /// then drops, and the tablet cannot open. Only RocksDB's files on the simulated disk
    /// show it.
    SstSyncSkipped,
    /// A flush puts the frontier into RocksDB's files in an SST file and a MANIFEST edit
    /// of its own, before the data's flush (`db.rs`, `ingest_apart`): a power cut
    /// between the two edits leaves a frontier ahead of its data, and bootstrap skips the
    /// lost entries. Only a cut inside a flush (`in-flush op=<k>`) shows it; counted rare
    /// because its reproducer cannot pass without it (the ingested file adds disk
    /// operations, so `op=<k>` falls elsewhere in the clean engine's flush).
    FrontierWrittenApart,
    /// Bootstrap trusts a flushed frontier of 0.0 though the log starts above entry 1:
    /// a tablet whose RocksDB files were lost opens empty and replays only the log's
    /// tail, its older data silently missing (YugabyteDB #19449).
    FrontierZeroTrusted,
    /// YugabyteDB's older range-component file filter (`QLRangeBasedFileFilter::Filter`,
    /// `docdb/doc_ql_filefilter.cc` before the fix): each bound of a scan is compared with
    /// the file's bounds under the *other* bound's inclusivity, so `c >= 20 AND c < 30`
    /// skips a file whose largest `c` is 20, and its rows vanish from the scan.
    YbPruneSwappedInclusivity,
    /// A full compaction keeps the tombstones at or below its cutoff that it should drop:
    /// no read can tell, only the simulator's check of what a compaction must remove
    /// (`sim/src/gc_complete.rs`).
    GcKeepsTombstones,
    /// YugabyteDB's rule: a required-marker seek answered from the batch's cache ignores
    /// an ancestor the batch overwrote since (`DocWriteBatch::SeekToKeyPrefix`, its cache
    /// branch): a write below a level whose marker a later parent marker hid adds no new
    /// marker, and the write's outcome then depends on compaction (rare: needs a batch
    /// writing a child marker, its parent's, then a grandchild, and a compaction).
    YbBatchCacheKeepsOverwritten,
    /// A packed row is read with the table's newest schema packing instead of the one of
    /// the schema version it names: after an `ALTER TABLE`, older rows decode wrong or not
    /// at all (`db/packed.rs`; only the packed layout shows it).
    PackedRowWrongSchema,
    /// Repacking folds a column's versions above the history cutoff too: the compaction
    /// drops them with the rest, the packed row holds the newest one, and the version a
    /// read at the cutoff saw is gone (`gc/repack.rs`).
    RepackDropsNewerUpdate,
    /// The entity layout reads every packed column from the entity's default column (what
    /// a plain `get` or iterator shows) instead of the column's own (`db/packed.rs`).
    EntityColumnAsDefault,
    // Bugs of the replicated tablet (`peer.rs`): planted in `docsim cluster` runs.
    /// Bootstrap with peers takes every entry in the log for committed: orphaned entries a
    /// new leader overwrote come back as applied data on this peer.
    OrphansCommitted,
    /// A peer's clock does not move past the hybrid times other peers gave it (in
    /// envelopes, in the entries it appends, in the leases its voters saw): a new leader
    /// with a slower clock writes below a time an old one already acknowledged or served.
    HtNotPropagated,
    /// A leader serves reads at any time, ignoring the lease a majority echoed (a stale
    /// read when a partitioned old leader still believes it leads).
    ReadsPastLease,
    /// A write is acknowledged once the leader's own log holds it durably, before a
    /// majority does: a leader change loses it.
    AckBeforeQuorum,
    /// A follower applies entries as they arrive, before they commit: a new leader's
    /// overwrite of that tail leaves the follower with data that never committed.
    ApplyBeforeCommit,
    /// Term and vote are synced only when entries come with them: a peer that votes and
    /// loses power votes again in the same term, and two leaders share it.
    VoteNotSynced,
    /// A leader's lease counts the echoes of replicas that are not voters in the active
    /// configuration (learners, removed voters) toward its voters' majority.
    NonVoterCounted,
    // Bugs of history retention (`retention.rs`) and paged reads (issue 43).
    /// A compaction's history cutoff ignores the read points registered by requests in
    /// flight: a long scan interleaved with a compaction loses versions it still reads.
    CutoffIgnoresReads,
    /// A compaction's history cutoff ignores the retention interval (`now` itself): a
    /// paged read's next page, protected by the interval alone, finds its versions gone.
    CutoffIgnoresRetention,
    /// Each page of a paged read reads at a fresh time instead of the one its paging state
    /// carries: the pages together show rows from two times.
    PageFreshReadTime,
    /// A compaction's history cutoff ignores the replica's safe time (the cutoff as
    /// `tablet_retention_policy.cc` computes it): a follower behind its leader collects a
    /// parent whose TTL a child still on its way inherits, and the child reads as alive
    /// (rare: needs a short interval, skewed clocks or a lagging follower, and such a
    /// child).
    CutoffIgnoresSafeTime,
    // Bugs of snapshots (`db/snapshots.rs`, issue 43).
    /// A snapshot's checkpoint is taken without flushing the memtables first (RocksDB's
    /// checkpoint, asked not to flush, copies the SST files alone): the writes still in
    /// memory are missing from it.
    CheckpointWithoutFlush,
    /// The leader takes its snapshot when the request comes, at whatever it has applied,
    /// instead of when the snapshot's entry applies: with writes in flight its snapshot
    /// misses some that the followers' (taken at the entry) hold.
    SnapshotAtDifferentOpIds,
    /// A restore leaves the flushed frontier its source had (the snapshot's entry, or the
    /// entry before the restore) instead of moving it to the restore's entry
    /// (`ModifyFlushedFrontier`): bootstrap after a restart replays the entries since
    /// the snapshot — writes made after it, on top of the restored data — before the
    /// restore's entry restores again.
    RestoreLeavesFrontier,
    /// YugabyteDB's restore (`RestoreCheckpoint`): the tablet's RocksDB directory is
    /// destroyed, then the checkpoint copied in and the frontier set, with no staged copy:
    /// a power cut in between leaves the tablet with no data.
    YbRestoreDestroysFirst,
    /// A compaction's cutoff ignores the history the tablet's snapshots keep
    /// (`Tablet::kept_since`): a restore to a time after the newest snapshot finds the
    /// versions of that time collected, and reads rows from later.
    CutoffIgnoresSnapshots,
}

impl Plant {
    /// Every plantable bug: one catalogue, each caught with the replica counts
    /// [`Plant::replicas`] allows.
    pub const ALL: [Plant; 50] = [
        Plant::TtlOffByOne,
        Plant::WriteIdIgnored,
        Plant::ExclusiveCutoff,
        Plant::ParentTtlNotInherited,
        Plant::MissingInitMarker,
        Plant::GcIgnoresCutoff,
        Plant::FrontierBeforeDurable,
        Plant::ReplayOneEarly,
        Plant::ReplayOneLate,
        Plant::LogGcPastFrontier,
        Plant::AckBeforeSync,
        Plant::SnapshotErrorMislabelled,
        Plant::TtlBoundaryIgnoresLogical,
        Plant::OwnTtlDiesWithParent,
        Plant::TornHeaderIsCorruption,
        Plant::SkippedSegmentsUnchecked,
        Plant::GcTakesFirstNeededSegment,
        Plant::YbMinorGcDropsTtl,
        Plant::YbExpiredParentGc,
        Plant::YbSeekStopsAtExpire,
        Plant::GcKeepsTombstones,
        Plant::GcKeepsExpired,
        Plant::YbPackedColumnTtlFromRow,
        Plant::BloomPrefixOneLong,
        Plant::RouteFirstHashColumn,
        Plant::MemstoreFlushesNewest,
        Plant::YbPruneSwappedInclusivity,
        Plant::SstSyncSkipped,
        Plant::FrontierWrittenApart,
        Plant::FrontierZeroTrusted,
        Plant::YbBatchCacheKeepsOverwritten,
        Plant::PackedRowWrongSchema,
        Plant::RepackDropsNewerUpdate,
        Plant::EntityColumnAsDefault,
        Plant::OrphansCommitted,
        Plant::HtNotPropagated,
        Plant::ReadsPastLease,
        Plant::AckBeforeQuorum,
        Plant::ApplyBeforeCommit,
        Plant::VoteNotSynced,
        Plant::NonVoterCounted,
        Plant::CutoffIgnoresReads,
        Plant::CutoffIgnoresRetention,
        Plant::PageFreshReadTime,
        Plant::CutoffIgnoresSafeTime,
        Plant::CheckpointWithoutFlush,
        Plant::SnapshotAtDifferentOpIds,
        Plant::RestoreLeavesFrontier,
        Plant::YbRestoreDestroysFirst,
        Plant::CutoffIgnoresSnapshots,
    ];

    /// The replica counts a run can catch the bug with. The bugs of Raft's replication
    /// (overwritten orphans, leases, votes, quorums, clocks passed between replicas) need
    /// peers: 3 or 5. A bit flip in a log is a group of one's fault only (a replica that
    /// refuses its corrupt log would need YugabyteDB's remote bootstrap, which docsim does
    /// not have), so the bug that misses flips in skipped segments needs one replica.
    /// Every other bug is caught with 1, 3 or 5.
    pub fn replicas(self) -> &'static [usize] {
        match self {
            Plant::OrphansCommitted
            | Plant::HtNotPropagated
            | Plant::ReadsPastLease
            | Plant::AckBeforeQuorum
            | Plant::ApplyBeforeCommit
            | Plant::VoteNotSynced
            | Plant::NonVoterCounted
            | Plant::SnapshotAtDifferentOpIds
            | Plant::CutoffIgnoresSafeTime => &[3, 5],
            Plant::SkippedSegmentsUnchecked | Plant::FrontierZeroTrusted => &[1],
            _ => &[1, 3, 5],
        }
    }

    /// Whether the bug needs a rare path: a disk fault landing just so, or (replicated)
    /// a leader cut off with its lease, clocks skewed the wrong way at a leader change, a
    /// power cut right after a vote, a read between a folded column's early and true
    /// expiry (1 seed in 50), a minor compaction between an expiry and the next full
    /// compaction (7 TTL-heavy seeds in 300), a power cut inside a restore (random runs
    /// draw none: a canary reproducer shows it). Torture catches it in hundreds of seeds,
    /// not tens,
    /// and its reproducer is longer than a dozen steps.
    pub fn rare(self) -> bool {
        matches!(
            self,
            Plant::TornHeaderIsCorruption
                | Plant::SkippedSegmentsUnchecked
                | Plant::GcTakesFirstNeededSegment
                | Plant::YbBatchCacheKeepsOverwritten
                | Plant::HtNotPropagated
                | Plant::ReadsPastLease
                | Plant::VoteNotSynced
                | Plant::NonVoterCounted
                | Plant::YbPackedColumnTtlFromRow
                | Plant::FrontierWrittenApart
                | Plant::YbMinorGcDropsTtl
                | Plant::CutoffIgnoresSafeTime
                | Plant::YbRestoreDestroysFirst
        )
    }

    /// Whether the bug lives in packed rows: only runs with every CQL table packed
    /// (`--config` of the packed layout, `layout packed` in scripts) can show it.
    pub fn needs_packed_rows(self) -> bool {
        matches!(
            self,
            Plant::PackedRowWrongSchema
                | Plant::RepackDropsNewerUpdate
                | Plant::EntityColumnAsDefault
                | Plant::YbPackedColumnTtlFromRow
        )
    }

    /// Whether the bug lives in the entity layout (`layout entity`, its `--config`).
    pub fn needs_entity_rows(self) -> bool {
        self == Plant::EntityColumnAsDefault
    }

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Plant::TtlOffByOne => "ttl-off-by-one",
            Plant::WriteIdIgnored => "write-id-ignored",
            Plant::ExclusiveCutoff => "exclusive-cutoff",
            Plant::ParentTtlNotInherited => "parent-ttl-not-inherited",
            Plant::MissingInitMarker => "missing-init-marker",
            Plant::GcIgnoresCutoff => "gc-ignores-cutoff",
            Plant::FrontierBeforeDurable => "frontier-before-durable",
            Plant::ReplayOneEarly => "replay-one-early",
            Plant::ReplayOneLate => "replay-one-late",
            Plant::LogGcPastFrontier => "log-gc-past-frontier",
            Plant::AckBeforeSync => "ack-before-sync",
            Plant::SnapshotErrorMislabelled => "snapshot-error-mislabelled",
            Plant::TtlBoundaryIgnoresLogical => "ttl-boundary-ignores-logical",
            Plant::OwnTtlDiesWithParent => "own-ttl-dies-with-parent",
            Plant::TornHeaderIsCorruption => "torn-header-is-corruption",
            Plant::SkippedSegmentsUnchecked => "skipped-segments-unchecked",
            Plant::GcTakesFirstNeededSegment => "gc-takes-first-needed-segment",
            Plant::YbMinorGcDropsTtl => "yb-minor-gc-drops-ttl",
            Plant::YbExpiredParentGc => "yb-expired-parent-gc",
            Plant::YbSeekStopsAtExpire => "yb-seek-stops-at-expire",
            Plant::GcKeepsTombstones => "gc-keeps-tombstones",
            Plant::GcKeepsExpired => "gc-keeps-expired",
            Plant::YbPackedColumnTtlFromRow => "yb-packed-column-ttl-from-row",
            Plant::BloomPrefixOneLong => "bloom-prefix-one-long",
            Plant::RouteFirstHashColumn => "route-first-hash-column",
            Plant::MemstoreFlushesNewest => "memstore-flushes-newest",
            Plant::YbPruneSwappedInclusivity => "yb-prune-swapped-inclusivity",
            Plant::SstSyncSkipped => "sst-sync-skipped",
            Plant::FrontierWrittenApart => "frontier-written-apart",
            Plant::FrontierZeroTrusted => "frontier-zero-trusted",
            Plant::YbBatchCacheKeepsOverwritten => "yb-batch-cache-keeps-overwritten",
            Plant::PackedRowWrongSchema => "packed-row-wrong-schema",
            Plant::RepackDropsNewerUpdate => "repack-drops-newer-update",
            Plant::EntityColumnAsDefault => "entity-column-as-default",
            Plant::OrphansCommitted => "orphans-committed",
            Plant::HtNotPropagated => "ht-not-propagated",
            Plant::ReadsPastLease => "reads-past-lease",
            Plant::AckBeforeQuorum => "ack-before-quorum",
            Plant::ApplyBeforeCommit => "apply-before-commit",
            Plant::VoteNotSynced => "vote-not-synced",
            Plant::NonVoterCounted => "non-voter-counted",
            Plant::CutoffIgnoresReads => "cutoff-ignores-reads",
            Plant::CutoffIgnoresRetention => "cutoff-ignores-retention",
            Plant::PageFreshReadTime => "page-fresh-read-time",
            Plant::CutoffIgnoresSafeTime => "cutoff-ignores-safe-time",
            Plant::CheckpointWithoutFlush => "checkpoint-without-flush",
            Plant::SnapshotAtDifferentOpIds => "snapshot-at-different-op-ids",
            Plant::RestoreLeavesFrontier => "restore-leaves-frontier",
            Plant::YbRestoreDestroysFirst => "yb-restore-destroys-first",
            Plant::CutoffIgnoresSnapshots => "cutoff-ignores-snapshots",
        }
    }

    /// The bug with this command-line name.
    pub fn from_name(name: &str) -> Option<Plant> {
        Plant::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// A set of planted bugs: the run-time switch, decided once by whoever opens the tablets
/// (`docsim --plant NAME`) and passed in as configuration, down to each site that holds
/// one. Checking it is a bit test on a value the site already has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Plants(u64);

impl Plants {
    /// No planted bug: the engine as it should be.
    pub const NONE: Plants = Plants(0);

    /// The set holding `bug`, or nothing.
    pub fn of(bug: Option<Plant>) -> Plants {
        Plants(bug.map_or(0, |b| 1 << b as u64))
    }

    /// Whether `bug` is planted.
    pub fn contains(self, bug: Plant) -> bool {
        self.0 & (1 << bug as u64) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_holds_exactly_its_plant() {
        assert!(Plant::ALL.iter().all(|&p| !Plants::NONE.contains(p)));
        assert_eq!(Plants::of(None), Plants::NONE);
        for bug in Plant::ALL {
            assert_eq!(Plant::from_name(bug.name()), Some(bug));
            let set = Plants::of(Some(bug));
            assert!(Plant::ALL.iter().all(|&p| set.contains(p) == (p == bug)), "{bug:?}");
        }
    }
}
