//! One replica of a tablet: a Raft group of 1, 3 or 5 — the engine's one Raft stack. A
//! group of one is the same code with one voter: it elects itself when it opens and
//! commits each entry in the call that proposes it.
//!
//! A [`Replica`] owns what one YB-TServer holds for its replica of the tablet (YB's
//! `TabletPeer`): the [`Tablet`] (RocksDB and the table metadata), a Raft log on its node's
//! simulated disk, raft-rs's `RawNode`, and a hybrid clock over the physical time the
//! caller passes in (the engine never reads time itself). The caller moves [`Envelope`]s
//! between replicas of the same tablet (over madsim's network in the simulator, a queue in
//! tests) and ticks them. Each `Ready` is handled in the order raft-rs requires: messages
//! a leader may send at once, a snapshot installed, committed entries applied, new
//! entries and hard state appended and synced, then the messages that needed them.
//! (docsim's simplification: all of one call's messages are returned together, after its
//! syncs, so a leader's appends never leave before its own sync, and a power cut during
//! the call loses them all.)
//!
//! **Writes** ([`Replica::propose`], `replica/requests.rs`): the leader evaluates a request
//! at a hybrid time from its clock (or one a script gives) into a payload
//! ([`Tablet::evaluate`]) and proposes it; the write is done once the entry is applied
//! here ([`Replica::is_applied`]). Only a leader that holds its lease and has applied its
//! own term's first entry takes writes, and a write that reads before it writes waits
//! for the writes in flight to the documents it reads (module `requests`).
//!
//! **Hybrid time across replicas.** Every envelope carries the sender's hybrid time and
//! the receiver's clock moves past it (YB's `propagated_hybrid_time`); a follower's clock
//! also moves past every entry it appends. The leader gives each write a time from its
//! clock, so times increase along the log.
//!
//! **Which reads are safe** (docsim's rule, after YB's hybrid-time leader lease,
//! `ReplicaState::MajorityReplicatedHtLeaseExpiration`, and `MvccManager::SafeTime`;
//! `replica/lease.rs`): a leader reads below the lease a majority of its voters holds
//! (unbounded with one voter: no other replica can be elected), below its first entry not
//! applied, once it applied its own term's first entry; a follower at or below its safe
//! time. A restarted replica neither votes nor campaigns for `quiet_us`.
//!
//! **Bootstrap** ([`Replica::open`]): read the flushed frontier F stored with the data;
//! open the log from the segment holding F+1; re-apply exactly the committed entries
//! above F ([`crate::replay::plan_replay`]); the entries above the commit index are YB's
//! *orphaned replicates*, handed to Raft unapplied. With one voter every durable entry is
//! committed (a majority of one holds it). A snapshot install a crash cut short is
//! finished ([`crate::replay::must_finish_install`]).
//!
//! **Log GC** after a flush, and whenever the log holds more than two segments: the whole
//! segments below min(F, last committed) + 1 go (YB's `TabletPeer::RunLogGC`; docsim keeps
//! no retention for lagging replicas). A replica that needs a collected entry gets a
//! snapshot (`replica/snapshot.rs`, docsim's rule: YB re-replicates such a follower with a
//! remote bootstrap).
//!
//! **Membership** (`replica/membership.rs`): raft-rs's `ConfChangeV2`; the configuration
//! is stored in RocksDB with the frontier.

mod lease;
mod membership;
mod reads;
mod ready;
mod requests;
mod snapshot;
mod storage;
#[cfg(test)]
mod tests;

pub use membership::{Members, Membership};
pub use requests::Proposed;

use crate::canary::{Plant, Plants};
use crate::crash::CrashPoint;
use crate::db::{Frontier, RawEntry};
use crate::disk::SimDisk;
use crate::error::{Error, Result};
use crate::hybrid_time::{HybridClock, HybridTime, PhysicalClock};
use crate::ids::OpId;
use crate::log::{HardState, Log, LogEntry, Recovery, SegmentInfo, Truncation};
use crate::replay::{log_gc_bound, must_finish_install, plan_replay};
use crate::tablet::SnapshotOp;
use crate::tablet::{Payload, Tablet};
use raft::eraftpb::{ConfState, Entry, EntryType, Message, Snapshot};
use raft::storage::MemStorage;
use raft::{Config, RawNode, StateRole};
use std::collections::BTreeMap;
use std::fmt;
use storage::PeerStorage;

/// How one replica is configured. Times are in microseconds of the caller's physical clock.
#[derive(Clone, Debug)]
pub struct ReplicaOptions {
    /// This replica's Raft id (1-based: its node's id).
    pub id: u64,
    /// The group's initial voters (a replica added later starts from them too, and
    /// learns the changes from the leader's log or a snapshot).
    pub voters: Vec<u64>,
    /// Ticks without a leader before this replica campaigns. raft-rs draws its randomized
    /// timeout from `rand::thread_rng()`; the range given to raft-rs here is one tick
    /// wide, so the caller adds the jitter to this value, from its own seeded stream.
    pub election_tick: usize,
    /// Ticks between a leader's heartbeats.
    pub heartbeat_tick: usize,
    /// How far ahead of its clock a leader asks for a hybrid-time lease.
    pub lease_us: u64,
    /// How long a restarted replica neither votes nor campaigns: at least `lease_us` plus
    /// every clock's possible lead and skew changes.
    pub quiet_us: u64,
    /// Raft log segment size in bytes.
    pub segment_bytes: usize,
    /// Planted bugs (testing the tester).
    pub plants: Plants,
}

impl ReplicaOptions {
    /// A group of one: this replica its only voter.
    pub fn alone(segment_bytes: usize, plants: Plants) -> ReplicaOptions {
        ReplicaOptions {
            id: 1,
            voters: vec![1],
            election_tick: 10,
            heartbeat_tick: 3,
            lease_us: 100_000,
            quiet_us: 0,
            segment_bytes,
            plants,
        }
    }
}

/// One Raft message between replicas of one tablet, with what docsim's rules carry
/// beside it.
#[derive(Clone, Debug)]
pub struct Envelope {
    pub from: u64,
    pub to: u64,
    /// The sender's hybrid time when it sent.
    pub ht: HybridTime,
    /// From a leader: the lease it asks for. From others: the highest lease they saw.
    pub ht_lease: HybridTime,
    /// From a follower to its leader: the newest lease it received from it (this term).
    pub echo: Option<HybridTime>,
    /// From a leader: its applied index and its safe time then.
    pub safe: Option<(u64, HybridTime)>,
    pub msg: Message,
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
    /// Entries above the commit index handed to Raft unapplied (orphaned replicates;
    /// always 0 with one voter).
    pub uncommitted: usize,
    /// The log was restarted after a snapshot whose install a crash had cut short.
    pub finished_install: bool,
}

impl RestartReport {
    /// Every field, as docscript's `expect restart` extension states it: the `restart`
    /// line without its colon, then `truncated=<segment>@<offset>+<bytes>` (or `none`),
    /// `skipped=<segments>`, `flushed_ht=<T>` (the hybrid time of the flushed entry) and
    /// `cutoff=<T>` (the history cutoff).
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
    /// The docscript `restart` line; ` uncommitted=<n>` when bootstrap handed entries to
    /// Raft unapplied (never with one voter).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "restart: flushed={} replayed={}", self.frontier.op_id, self.replayed)?;
        if let (Some(first), Some(last)) = (self.first, self.last) {
            write!(f, " from={first} to={last}")?;
        }
        if self.uncommitted > 0 {
            write!(f, " uncommitted={}", self.uncommitted)?;
        }
        Ok(())
    }
}

/// One entry a replica applied (live or in bootstrap), for the checker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppliedEntry {
    pub op_id: OpId,
    /// The write's (or metadata change's) hybrid time; `None` for empty and
    /// configuration entries.
    pub ht: Option<HybridTime>,
    /// Whether it wrote data (a write batch, into the memtable; not a metadata change).
    pub writes: bool,
    /// A snapshot it took: its id, and the frontier its flush made durable (if the
    /// memtables held any entry).
    pub snapshot: Option<crate::tablet::SnapshotTaken>,
    /// Whether it restored the tablet (`restore`): its own op id is then the flushed
    /// frontier, and its time the history cutoff.
    pub restored: bool,
}

impl AppliedEntry {
    fn of(op_id: OpId, ht: Option<HybridTime>, applied: crate::tablet::Applied) -> AppliedEntry {
        let (writes, snapshot, restored) =
            (applied.writes, applied.snapshot, applied.restored.is_some());
        AppliedEntry { op_id, ht, writes, snapshot, restored }
    }
}

/// A replica's role and progress, for the simulator's reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaStatus {
    pub leader: bool,
    pub term: u64,
    pub leader_id: u64,
    pub commit: u64,
    pub applied: u64,
    pub last_index: u64,
}

/// The caller's physical time, set before each call.
struct Given(u64);

impl PhysicalClock for Given {
    fn now_us(&mut self) -> u64 {
        self.0
    }
}

/// A write proposed here and not applied yet: what later writes must wait for.
struct InFlight {
    /// The term it was proposed in (an entry of another term at its index replaced it).
    term: u64,
    /// The documents it writes.
    writes_to: Vec<crate::encoding::DocKey>,
    /// It changes the tablet's metadata.
    metadata: bool,
}

/// One replica.
pub struct Replica {
    options: ReplicaOptions,
    tablet: Tablet,
    log: Log,
    raw: RawNode<PeerStorage>,
    clock: HybridClock<Given>,
    /// The physical time of the current call.
    now_us: u64,
    /// The last applied index (entries with and without writes).
    applied: u64,
    /// The time of the last applied write.
    applied_ht: HybridTime,
    /// Hybrid times of appended entries not applied yet, by index.
    unapplied: BTreeMap<u64, HybridTime>,
    /// As leader: this replica's proposals not applied yet, by index.
    in_flight: BTreeMap<u64, InFlight>,
    /// The highest lease seen in any envelope.
    max_lease_seen: HybridTime,
    /// As leader: the lease each voter echoed this term.
    lease_acks: BTreeMap<u64, HybridTime>,
    /// The term this replica last became leader in, and its first entry's index then.
    led: Option<(u64, u64)>,
    /// As follower: (term, leader, newest lease received from it).
    echo: Option<(u64, u64, HybridTime)>,
    /// As follower: the leader's newest (applied index, safe time).
    propagated: Option<(u64, HybridTime)>,
    /// No votes before this physical time.
    quiet_until_us: u64,
    /// Entries applied since the last [`Replica::take_applied`].
    applied_log: Vec<AppliedEntry>,
    /// Why the replica stopped (a failed disk write, a power cut that fired): it refuses
    /// everything until reopened.
    down: Option<Error>,
    /// Why RocksDB stopped taking writes (a flush or compaction failed writing its files:
    /// RocksDB's background error): the replica refuses writes, flushes and compactions
    /// until reopened, and serves reads (its memtables are intact).
    writes_stopped: Option<Error>,
    /// This replica applied its own removal: inert from then on (YB tombstones such a
    /// tablet peer), and raft-rs must not step it again.
    removed: bool,
    /// A power cut armed for a moment of its work.
    crash_at: Option<CrashPoint>,
    /// The last entry written to RocksDB (a write, a metadata or configuration change).
    written: OpId,
    /// The flushed frontier as far as this process knows.
    flushed: OpId,
    /// Snapshots installed since the last [`Replica::take_installed`].
    installed: Vec<OpId>,
    /// Log syncs since the replica opened.
    syncs: u64,
    /// As leader: ticks each replica has waited for a snapshot sent to it.
    snapshot_ticks: BTreeMap<u64, u32>,
    /// The read points of requests in flight (long scans), in memory as YugabyteDB's
    /// (`retention.rs`): they hold the history cutoff back.
    readers: crate::retention::Readers,
}

impl Replica {
    /// Open the replica of `tablet` (opened already: its RocksDB and metadata), its log in
    /// `log_dir` on `disk`, and bootstrap as the module says. `now_us` is the physical
    /// time now. A group of one is leader when this returns.
    pub fn open(
        tablet: Tablet,
        disk: &SimDisk,
        log_dir: &str,
        options: ReplicaOptions,
        now_us: u64,
    ) -> Result<(Replica, RestartReport)> {
        let mut frontier = tablet.opened_frontier();
        let (log, recovery, finished_install) =
            open_log(&tablet, disk, log_dir, &options, frontier)?;
        let (conf, removed) = membership::durable_conf(tablet.db(), &options)?;
        let last = recovery.entries.last().map_or(recovery.prev, |e| e.op_id);
        let plants = options.plants;
        if plants.contains(Plant::FrontierBeforeDurable) {
            frontier.op_id = last; // believes every applied entry was flushed
        }
        frontier.op_id = lost_files_check(frontier.op_id, recovery.prev, log_dir, plants)?;
        let alone = conf.voters == [options.id] && conf.voters_outgoing.is_empty();
        let commit = committed_at_boot(&recovery, frontier, last, alone, plants);
        let ops: Vec<OpId> = recovery.entries.iter().map(|e| e.op_id).collect();
        let plan = replay_plan(recovery.prev, &ops, frontier.op_id, commit, plants)?;
        let mut report = RestartReport {
            frontier,
            replayed: 0,
            first: None,
            last: None,
            truncated: recovery.truncated.clone(),
            segments_skipped: recovery.segments_skipped,
            uncommitted: ops.iter().filter(|op| op.index > commit).count(),
            finished_install,
        };
        let raw = raft_node(&options, &recovery, commit, last, conf)?;
        let mut replica = Replica::new(tablet, log, raw, options, now_us, (commit, removed));
        replica.replay(&recovery.entries, plan, commit, &mut report)?;
        count_restart_probes(&report);
        if alone && !replica.removed {
            replica.raw.campaign().map_err(raft_error)?; // a majority of one: at once
            replica.process()?;
        }
        Ok((replica, report))
    }

    fn new(
        tablet: Tablet,
        log: Log,
        raw: RawNode<PeerStorage>,
        options: ReplicaOptions,
        now_us: u64,
        (commit, removed): (u64, bool),
    ) -> Replica {
        let frontier = tablet.opened_frontier();
        // A replica that never ran (nothing on its disk) never echoed a lease: no quiet.
        let ran = raw.raft.term > 0 || raw.raft.raft_log.last_index() > 0;
        let mut clock = HybridClock::new(Given(now_us));
        clock.update(tablet.history_cutoff()); // (`Replica::past_cutoff`)
        Replica {
            quiet_until_us: if ran { now_us.saturating_add(options.quiet_us) } else { 0 },
            options,
            tablet,
            log,
            raw,
            clock,
            now_us,
            readers: Default::default(),
            applied: commit,
            applied_ht: frontier.ht,
            unapplied: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            max_lease_seen: HybridTime::MIN,
            lease_acks: BTreeMap::new(),
            led: None,
            echo: None,
            propagated: None,
            applied_log: Vec::new(),
            down: None,
            writes_stopped: None,
            removed,
            crash_at: None,
            written: frontier.op_id,
            flushed: frontier.op_id,
            installed: Vec::new(),
            syncs: 0,
            snapshot_ticks: BTreeMap::new(),
        }
    }

    /// Bootstrap's pass over the log: the clock moves past every entry, the planned
    /// committed entries are re-applied, and those above `commit` are pending.
    fn replay(
        &mut self,
        entries: &[LogEntry],
        plan: std::ops::Range<usize>,
        commit: u64,
        report: &mut RestartReport,
    ) -> Result<()> {
        let frontier = self.written.index; // the configuration as of it is RocksDB's
        for (i, entry) in entries.iter().enumerate() {
            let index = entry.op_id.index;
            let made_conf = Payload::conf_change_of(&entry.data)
                .filter(|_| index > frontier && index <= commit);
            if let Some(encoded) = made_conf {
                self.apply_conf_change(encoded, entry.op_id)?; // the configuration it made
            }
            let ht = entry_ht(entry)?;
            if let Some(ht) = ht {
                self.clock.update(ht);
                if index <= commit {
                    self.applied_ht = self.applied_ht.max(ht);
                } else {
                    self.unapplied.insert(index, ht);
                }
            }
            if plan.contains(&i) {
                let applied = self.apply_payload(entry)?;
                if applied.writes {
                    report.replayed += 1;
                    report.first.get_or_insert(entry.op_id);
                    report.last = Some(entry.op_id);
                }
                self.applied_log.push(AppliedEntry::of(entry.op_id, ht, applied));
            }
        }
        Ok(())
    }

    /// Apply one committed entry's payload to the tablet (a configuration change is the
    /// caller's): whether it carried writes, and the snapshot it took.
    fn apply_payload(&mut self, entry: &LogEntry) -> Result<crate::tablet::Applied> {
        let payload = Payload::decode(&entry.data)
            .map_err(|why| Error::Storage(format!("log entry {}: {why}", entry.op_id)))?;
        let applied = self.apply_cut(entry, &payload)?;
        if matches!(payload, Payload::Write { .. } | Payload::Meta { .. }) {
            self.written = entry.op_id;
        }
        if applied.restored.is_some() {
            // The history below the restore is gone: the long scans reading it end
            // (`read_aborted`), as after a snapshot installed (docsim's rule).
            self.readers = Default::default();
        }
        let flushed = applied.snapshot.as_ref().and_then(|s| s.flushed).or(applied.restored);
        if let Some((op_id, _)) = flushed {
            self.flushed = self.flushed.max(op_id);
        }
        Ok(applied)
    }

    /// Apply `payload`; a power cut armed inside a snapshot (`in-snapshot op=<k>`) falls
    /// after the `k`-th disk operation of this one's, or after it: the replica is down.
    fn apply_cut(&mut self, entry: &LogEntry, payload: &Payload) -> Result<crate::tablet::Applied> {
        use crate::tablet::MetaChange;
        let change = match payload {
            Payload::Meta { change, .. } => Some(change),
            _ => None,
        };
        let cut = match (self.crash_at, change) {
            (
                Some(at @ CrashPoint::InSnapshot(k)),
                Some(MetaChange::Snapshot(SnapshotOp::Create(_))),
            ) => Some((at, k)),
            (Some(at @ CrashPoint::InRestore(k)), Some(MetaChange::Restore(_))) => Some((at, k)),
            _ => None,
        };
        let Some((at, k)) = cut else { return self.tablet.apply(entry.op_id, payload) };
        let disk = self.log.disk().clone();
        disk.arm_cut(k);
        let _ = self.tablet.apply(entry.op_id, payload); // what it did before the cut stays
        disk.disarm_cut();
        self.crash_at = None;
        Err(Error::Crashed(at))
    }

    /// This replica's id.
    pub fn id(&self) -> u64 {
        self.options.id
    }

    /// The tablet (its metadata, for the caller's printing).
    pub fn tablet(&self) -> &Tablet {
        &self.tablet
    }

    /// Make a backup's checkpoint `files` this replica's snapshot `info.id`
    /// (`backup import`, before the restore that takes it), and move the clock past the
    /// snapshot's time. (A rule of docsim's own: the backup's times come from another
    /// cluster's clocks, and the restore's entry must come after the time it restores to,
    /// as a message's hybrid time moves its receiver's clock.)
    pub fn place_snapshot(
        &mut self,
        info: &crate::db::SnapshotInfo,
        files: &[(String, Vec<u8>)],
    ) -> Result<()> {
        self.tablet.db().place_snapshot(info, files)?;
        self.clock.update(info.ht);
        Ok(())
    }

    fn check_up(&self) -> Result<()> {
        self.check_powered()?;
        match self.removed {
            true => Err(Error::Removed { id: self.options.id }),
            false => Ok(()),
        }
    }

    /// Whether an error stopped this replica (a failed log or RocksDB write, a power cut:
    /// it serves nothing) or its writes (a failed flush or compaction: it serves reads),
    /// until its node restarts.
    pub fn is_down(&self) -> bool {
        self.down.is_some() || self.writes_stopped.is_some()
    }

    /// Writes may go on: the replica is up and RocksDB takes writes.
    pub(super) fn check_writable(&self) -> Result<()> {
        self.check_powered()?;
        match &self.writes_stopped {
            None => Ok(()),
            Some(why) => Err(Error::Down { cause: Some(Box::new(why.clone())) }),
        }
    }

    fn check_powered(&self) -> Result<()> {
        match &self.down {
            None => Ok(()),
            Some(why) => Err(Error::Down { cause: Some(Box::new(why.clone())) }),
        }
    }

    fn set_now(&mut self, now_us: u64) {
        self.now_us = now_us;
        self.clock.physical_mut().0 = now_us;
    }

    fn plant(&self, bug: Plant) -> bool {
        self.options.plants.contains(bug)
    }

    /// One tick of Raft's logical clock; returns the envelopes to send.
    pub fn tick(&mut self, now_us: u64) -> Result<Vec<Envelope>> {
        if self.removed {
            return Ok(vec![]);
        }
        self.check_up()?;
        self.set_now(now_us);
        if now_us >= self.quiet_until_us {
            self.raw.tick(); // a restarted replica neither votes nor campaigns while quiet
        }
        self.retry_lost_snapshots();
        self.process()
    }

    /// Whether the entry `op_id` is applied here (the same entry: same term at its index).
    pub fn is_applied(&self, op_id: OpId) -> bool {
        let done = if self.plant(Plant::AckBeforeQuorum) {
            self.raw.raft.raft_log.persisted // durable here, whatever the others hold
        } else {
            self.applied
        };
        op_id.index <= done
            && self.raw.raft.raft_log.term(op_id.index).is_ok_and(|t| t == op_id.term)
    }

    /// Entries applied since the last call (bootstrap's re-applied ones first).
    pub fn take_applied(&mut self) -> Vec<AppliedEntry> {
        std::mem::take(&mut self.applied_log)
    }

    /// The op id of the last entry in this replica's log (committed or not).
    pub fn last_op_id(&self) -> OpId {
        let log = &self.raw.raft.raft_log;
        OpId::new(log.last_term(), log.last_index())
    }

    /// The op id of the last committed entry.
    pub fn committed(&self) -> OpId {
        let index = self.raw.raft.raft_log.committed;
        OpId::new(self.raw.raft.raft_log.term(index).unwrap_or(0), index)
    }

    /// The leader's view of each replica's replication (for diagnostics).
    pub fn progress(&self) -> String {
        let mut out: Vec<String> = self
            .raw
            .raft
            .prs()
            .iter()
            .map(|(id, pr)| {
                format!("{id}: {:?} matched={} next={}", pr.state, pr.matched, pr.next_idx)
            })
            .collect();
        out.sort();
        out.join(", ")
    }

    /// Role and progress.
    pub fn status(&self) -> ReplicaStatus {
        let raft = &self.raw.raft;
        ReplicaStatus {
            leader: raft.state == StateRole::Leader && !self.removed,
            term: raft.term,
            leader_id: raft.leader_id,
            commit: raft.raft_log.committed,
            applied: self.applied,
            last_index: raft.raft_log.last_index(),
        }
    }

    /// Flush memtables: the flushed frontier moves to the last entry written (no log GC:
    /// [`Replica::gc_log`]).
    pub fn flush(&mut self) -> Result<()> {
        self.check_writable()?;
        self.tablet.flush().inspect_err(|e| self.stop_writes(e))?;
        self.flushed = self.written;
        Ok(())
    }

    /// Flush and compact every SST file (`files`: `None`) or a run of them (a minor
    /// compaction), with history cutoff `cutoff_ht` (no log GC).
    pub fn compact(
        &mut self,
        cutoff_ht: HybridTime,
        kind: crate::gc::CompactionKind,
        files: Option<std::ops::RangeInclusive<usize>>,
    ) -> Result<()> {
        self.check_writable()?;
        let compacted = self.tablet.compact(cutoff_ht, kind, files);
        // A failed write of RocksDB's files stops writes, as a failed flush does; the
        // compaction filter's own refusals (entries it could not judge, kept) do not.
        let judged = |e: &Error| matches!(e, Error::CompactionFilter(_) | Error::Corruption { .. });
        compacted.inspect_err(|e| {
            if !judged(e) {
                self.stop_writes(e)
            }
        })?;
        self.flushed = self.written;
        self.past_cutoff();
        Ok(())
    }

    /// A flush or compaction failed writing RocksDB's files: writes stop (a power cut
    /// that fell inside it takes the whole replica down).
    fn stop_writes(&mut self, e: &Error) {
        crate::probe::hit("rocksdb.write_failed_tablet_down");
        match e {
            Error::Io(_) | Error::DiskFull { .. } | Error::FileCorruption(_) => {
                self.writes_stopped = Some(e.clone())
            }
            _ => self.down = Some(e.clone()),
        }
    }

    /// The clock moves past the history cutoff (at open, after a compaction or a snapshot
    /// install): every time this replica writes at or serves from then on is one it can
    /// still read at. (A rule of docsim's own: a cutoff drawn from a physical clock that
    /// a skew then moved back would otherwise lie ahead of the replica's next writes, and
    /// a write that reads first would be refused as `snapshot_too_old`: seed 100293, 3
    /// replicas. YugabyteDB's cutoff is its own hybrid clock's now less the retention,
    /// `TabletRetentionPolicy::EffectiveHistoryCutoff`, so it is never ahead of it.)
    pub(super) fn past_cutoff(&mut self) {
        self.clock.update(self.tablet.history_cutoff());
    }

    /// What the tablet's memtables hold since the last flush.
    pub fn memstore(&self) -> crate::db::Memstore {
        self.tablet.memstore()
    }

    /// Start the log's next segment (after a memory flush: `Log::roll_over`).
    pub fn roll_log(&mut self) -> Result<()> {
        self.check_powered()?;
        self.log.roll_over().inspect_err(|e| self.down = Some(e.clone()))
    }

    /// Delete the log segments wholly below min(flushed frontier, last committed) + 1;
    /// returns how many went.
    pub fn gc_log(&mut self) -> Result<usize> {
        self.check_powered()?;
        let committed = self.committed();
        let bound = if self.plant(Plant::LogGcPastFrontier) {
            committed.index // by the last committed op alone, past the flushed frontier
        } else {
            log_gc_bound(self.flushed, committed)
        };
        let removed = self.log.gc(bound).inspect_err(|e| self.down = Some(e.clone()))?;
        crate::probe::add("log.gc_removed_segment", removed as u64);
        // raft-rs's copy of the log starts where the disk's does now (never past what is
        // applied: raft-rs hands committed entries from its copy).
        let first_held = self.log.segments()[0].prev.index + 1;
        self.raw.store().compact(first_held.min(self.applied)).map_err(raft_error)?;
        Ok(removed)
    }

    /// The live SST files, oldest first.
    pub fn files(&self) -> Result<Vec<crate::sst_files::SstFile>> {
        self.check_powered()?;
        Ok(self.tablet.files())
    }

    /// What the tablet's reads skipped and read since it opened.
    pub fn read_stats(&self) -> Result<crate::db::ReadStats> {
        self.check_powered()?;
        Ok(self.tablet.read_stats())
    }

    /// Every stored entry with its raw key and value bytes.
    pub fn dump(&self) -> Result<Vec<RawEntry>> {
        self.check_powered()?;
        self.tablet.dump()
    }

    /// The log's segments (first op, last op, bytes), oldest first.
    pub fn log_segments(&self) -> &[SegmentInfo] {
        self.log.segments()
    }

    /// The highest history cutoff so far.
    pub fn history_cutoff(&self) -> HybridTime {
        self.tablet.history_cutoff()
    }

    /// How many times the log was synced since the replica opened (a slow disk's caller
    /// holds back what follows each).
    pub fn syncs(&self) -> u64 {
        self.syncs
    }

    /// Snapshots installed since the last call (their op ids).
    pub fn take_installed(&mut self) -> Vec<OpId> {
        std::mem::take(&mut self.installed)
    }
}

/// Open the log from the segment holding the entry after the frontier; if the flushed
/// state is a snapshot whose install a crash cut short, restart the log after it (and
/// say so).
fn open_log(
    tablet: &Tablet,
    disk: &SimDisk,
    log_dir: &str,
    options: &ReplicaOptions,
    frontier: Frontier,
) -> Result<(Log, Recovery, bool)> {
    let opened =
        Log::open(disk, log_dir, options.segment_bytes, frontier.op_id.index, options.plants);
    let (mut log, mut recovery) = opened.inspect_err(|e| {
        if matches!(e, Error::LogCorruption { .. }) {
            crate::probe::hit("log.corruption_refused");
        }
    })?;
    let held: Vec<OpId> = recovery.entries.iter().map(|e| e.op_id).collect();
    let installed = tablet.db().installed_snapshot()?;
    let finish = must_finish_install(recovery.prev, &held, frontier.op_id, installed);
    if finish {
        // A snapshot's documents are durable, the log's restart after it is not.
        let hard_state = HardState { commit: frontier.op_id.index, ..recovery.hard_state };
        log.reset(frontier.op_id, hard_state)?;
        recovery = Recovery { prev: frontier.op_id, hard_state, ..Recovery::default() };
    }
    Ok((log, recovery, finish))
}

/// The last committed index after a restart: every durable entry with one voter (a
/// majority of one holds it), else the persisted commit index (or the flushed frontier,
/// if higher), never past the log's end.
fn committed_at_boot(
    recovery: &Recovery,
    frontier: Frontier,
    last: OpId,
    alone: bool,
    plants: Plants,
) -> u64 {
    if alone || plants.contains(Plant::OrphansCommitted) {
        return last.index; // the plant takes every entry it holds for committed
    }
    recovery.hard_state.commit.max(frontier.op_id.index).min(last.index)
}

/// A flushed frontier of 0.0 (nothing ever flushed) with a log that starts after entry
/// `prev` > 0 (log GC ran, which only follows a flush): RocksDB's files were lost. Refused
/// (YugabyteDB #19449: bootstrap replayed the log's tail onto an empty RocksDB and served
/// it with the older data missing). With the plant `frontier-zero-trusted` the frontier
/// is taken to be where the log starts, as that bootstrap did.
fn lost_files_check(frontier: OpId, prev: OpId, log_dir: &str, plants: Plants) -> Result<OpId> {
    if frontier.index > 0 || prev.index == 0 {
        return Ok(frontier);
    }
    if plants.contains(Plant::FrontierZeroTrusted) {
        return Ok(prev);
    }
    let dir = log_dir.strip_suffix("/log").unwrap_or(log_dir).to_owned();
    crate::probe::hit("rocksdb.lost_files_refused");
    Err(Error::LostRocksDb { dir, log_start: prev.index })
}

/// Which recovered entries bootstrap re-applies ([`plan_replay`]). The planted replay
/// bugs live here, around the pure plan: starting one entry early or late is planning
/// with the frontier one lower or one higher (a frontier the log does not reach stays as
/// it is, so that the plan refuses it as it would unplanted, and it is never raised past
/// the log).
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

fn raft_node(
    options: &ReplicaOptions,
    recovery: &Recovery,
    commit: u64,
    last: OpId,
    conf: ConfState,
) -> Result<RawNode<PeerStorage>> {
    let storage = MemStorage::new_with_conf_state(conf.clone());
    {
        let mut core = storage.wl();
        if recovery.prev.index > 0 {
            // The log starts after collected entries (or a snapshot): mark where.
            let mut marker = Snapshot::default();
            marker.mut_metadata().index = recovery.prev.index;
            marker.mut_metadata().term = recovery.prev.term;
            marker.mut_metadata().set_conf_state(conf);
            core.apply_snapshot(marker).map_err(raft_error)?;
        }
        let entries: Vec<Entry> = recovery.entries.iter().map(to_raft_entry).collect();
        core.append(&entries).map_err(raft_error)?;
        let term = recovery.hard_state.term.max(last.term);
        // A vote belongs to its term: a newer term in the log starts with none.
        let vote = if term == recovery.hard_state.term { recovery.hard_state.vote } else { 0 };
        core.set_hardstate(raft::eraftpb::HardState { term, vote, commit, ..Default::default() });
    }
    let config = Config {
        id: options.id,
        election_tick: options.election_tick,
        min_election_tick: options.election_tick,
        max_election_tick: options.election_tick + 1,
        heartbeat_tick: options.heartbeat_tick,
        // A replica cut off campaigns without raising its term, so it does not depose a
        // healthy leader when it returns (YB's pre-elections, `FLAGS_use_preelection`).
        pre_vote: true,
        check_quorum: true,
        // Up to 1 MiB of entries per append (raft-rs's default, 0, sends one entry per
        // message: a replica catching up after a restart would need a round trip per entry).
        max_size_per_msg: 1 << 20,
        max_inflight_msgs: 64,
        applied: commit,
        ..Config::default()
    };
    let logger = slog::Logger::root(slog::Discard, slog::o!());
    RawNode::new(&config, PeerStorage::new(storage), &logger).map_err(raft_error)
}

/// The hybrid time an entry's payload carries (`None`: an empty or configuration entry).
fn entry_ht(entry: &LogEntry) -> Result<Option<HybridTime>> {
    Payload::ht_of(&entry.data)
        .map_err(|why| Error::Storage(format!("log entry {}: {why}", entry.op_id)))
}

pub(crate) fn to_raft_entry(entry: &LogEntry) -> Entry {
    let (data, entry_type) = match Payload::conf_change_of(&entry.data) {
        Some(cc) => (cc.to_vec(), EntryType::EntryConfChangeV2),
        None => (entry.data.clone(), EntryType::EntryNormal),
    };
    Entry {
        entry_type,
        term: entry.op_id.term,
        index: entry.op_id.index,
        data: data.into(),
        ..Default::default()
    }
}

pub(crate) fn to_log_entry(entry: &Entry) -> LogEntry {
    let data = match entry.get_entry_type() {
        EntryType::EntryConfChangeV2 => Payload::Conf(entry.data.to_vec()).encode(),
        EntryType::EntryNormal => entry.data.to_vec(),
        EntryType::EntryConfChange => unreachable!("docsim proposes only ConfChangeV2"),
    };
    LogEntry { op_id: OpId::new(entry.term, entry.index), data }
}

pub(crate) fn raft_error(e: raft::Error) -> Error {
    Error::Storage(format!("raft: {e}"))
}
