//! One replica of a replicated document tablet: a Raft group of 1, 3 or 5 peers.
//!
//! A [`Peer`] owns what one YB-TServer holds for its replica of the tablet: a RocksDB
//! instance, a Raft log on its own simulated disk, raft-rs's `RawNode`, and a hybrid
//! clock over the physical time the caller passes in (the simulator's skewed clock: the
//! engine never reads time itself). The caller moves [`Envelope`]s between peers (over
//! madsim's network in the simulator, over a queue in tests) and calls [`Peer::tick`]
//! every tick. Each `Ready` is handled in the order raft-rs requires: messages a leader
//! may send at once, a snapshot installed, committed entries applied, new entries and
//! hard state appended and synced, then the messages that needed them persisted.
//! (docsim's simplification: all of one call's messages are returned together, after its
//! syncs, so a leader's appends never leave before its own sync, and a power cut during
//! the call loses them all. A majority holding an entry its crashed leader lost, which a
//! leader writing its log in parallel with sending allows, is never produced.)
//!
//! **Hybrid time across peers.** Every envelope carries the sender's hybrid time and the
//! receiver's clock moves past it (YB's `propagated_hybrid_time`, handled by
//! `HybridClock::Update`); a follower's clock also moves past every entry it appends. The
//! leader gives each write a hybrid time from its clock, so times increase along the log.
//!
//! **Which reads are safe** (docsim's rule, after YB's hybrid-time leader lease,
//! `ReplicaState::MajorityReplicatedHtLeaseExpiration`, and `MvccManager::SafeTime`):
//! - A leader asks for a *hybrid-time lease* in every message it sends (its physical time
//!   plus `lease_us`, YB's `FLAGS_ht_lease_duration_ms`); a follower echoes the newest one
//!   it received from its leader, and the leader grants itself one at every moment. The
//!   lease a majority holds bounds the leader's reads: above it, `lease_expired`. Below it, a
//!   read must also be below the first entry not applied yet, and the leader must have
//!   applied its own term's first entry: otherwise `safe_time_behind`.
//! - Every peer remembers the highest lease it has seen and sends it with everything; a
//!   peer that wins an election moves its clock past the highest its voters sent, so a
//!   new leader never writes at or below a time an old leader may have served a read at.
//!   A restarted peer forgot what it had seen: it neither votes nor campaigns for
//!   `quiet_us` after it starts (unless its disk shows it never ran): long enough for
//!   any lease it echoed to be passed by every clock.
//! - A follower serves reads at or below its *safe time*: the time of the last entry it
//!   applied, or the leader's safe time propagated with the leader's applied index (at or
//!   below its commit index) once it has applied that far. Above: `safe_time_behind`.
//!   Each read moves the clock past its time, so a leader never writes below a read it
//!   served.
//!
//! **Bootstrap with peers** ([`Peer::open`]): entries up to the persisted commit index (or
//! the flushed frontier, if higher) are committed and re-applied above the frontier as
//! for one voter; the entries above it are YB's *orphaned replicates*: handed to Raft
//! unapplied, for the next leader to commit or overwrite (log matching).
//!
//! **Log GC and snapshots.** A flush makes everything applied durable in RocksDB; the
//! log's whole segments below the flushed frontier then go (YB's `TabletPeer::RunLogGC`
//! up to `GetEarliestNeededLogIndex`, which follows the flushed op id; docsim keeps no
//! retention for lagging peers — YB keeps `log_min_seconds_to_retain`). A peer that
//! needs a collected entry gets a snapshot instead: the leader's documents at its applied
//! entry (`peer/snapshot.rs`, docsim's rule; YB evicts such a follower and re-replicates
//! the tablet, whose new copy starts with a remote bootstrap of files). The receiver
//! installs it in RocksDB durably, then restarts its log after it ([`Log::reset`]); a
//! crash between the two is finished at the next open, which finds a flushed frontier
//! the log does not hold ([`crate::replay::must_finish_install`]). The configuration is kept
//! in RocksDB beside the frontier, since the entries that made it may be collected.
//!
//! **Membership** ([`Peer::propose_membership`]): raft-rs's `ConfChangeV2` — add a
//! learner, make a replica a voter, remove one; several changes at once go through joint
//! consensus, which raft-rs leaves on its own (`auto_leave`). A change takes effect when
//! it applies, and the configuration it made is written to RocksDB with the frontier;
//! bootstrap starts from the configuration stored there (or the initial voters,
//! `PeerOptions::voters`, when no change was ever flushed) and re-applies the committed
//! changes above the frontier. A
//! leader's lease counts only the voters of the active configuration (both halves of a
//! joint one), as raft-rs counts votes and acknowledgements.

use crate::canary::{Plant, Plants};
use crate::crash::{CrashPoint, PeerCrash};
use crate::db::{DocDb, Frontier, RawEntry};
use crate::disk::SimDisk;
use crate::doc_write::{build_entries, DocWrite, MarkerMode, Scanned};
use crate::document::Document;
use crate::encoding::DocPath;
use crate::error::{Error, Result};
use crate::hybrid_time::{HybridClock, HybridTime, PhysicalClock};
use crate::ids::OpId;
use crate::log::{HardState, Log, LogEntry, Recovery};
use crate::replay::{must_finish_install, plan_replay};
use crate::replica::{conf_change_of, raft_error, to_log_entry, to_raft_entry};
use crate::tablet::{apply_entry, encode_payload};
use crate::write_batch::DocWriteBatch;
use protobuf::Message as _;
use raft::eraftpb::{
    ConfChangeSingle, ConfChangeType, ConfChangeV2, ConfState, Entry, Message, MessageType,
    Snapshot,
};
use raft::storage::MemStorage;
use raft::{Config, ProgressState, RawNode, SnapshotStatus, StateRole};
use snapshot::SnapshotData;
use std::collections::BTreeMap;
use std::path::Path;
use storage::PeerStorage;

mod snapshot;
mod storage;
#[cfg(test)]
mod tests;

/// Ticks a leader waits for a peer to confirm a snapshot before sending it again (the
/// message may have been lost; raft-rs waits for word either way).
const SNAPSHOT_TIMEOUT_TICKS: u32 = 30;

/// How one peer is configured. Times are in microseconds of the caller's physical clock.
#[derive(Clone, Debug)]
pub struct PeerOptions {
    /// This peer's Raft id (1-based).
    pub id: u64,
    /// The group's initial voters (a replica added later starts from them too, and
    /// learns the changes from the leader's log or a snapshot).
    pub voters: Vec<u64>,
    /// Ticks without a leader before this peer campaigns. raft-rs draws its randomized
    /// timeout from `rand::thread_rng()`; the range given to raft-rs here is one tick wide,
    /// so the caller adds the jitter to this value, from its own seeded stream.
    pub election_tick: usize,
    /// Ticks between a leader's heartbeats.
    pub heartbeat_tick: usize,
    /// How far ahead of its clock a leader asks for a hybrid-time lease.
    pub lease_us: u64,
    /// How long a restarted peer neither votes nor campaigns: at least `lease_us` plus
    /// every clock's possible lead and skew changes, so that any lease it echoed before the
    /// crash is in the past on every clock when it next helps elect a leader.
    pub quiet_us: u64,
    /// Raft log segment size in bytes.
    pub segment_bytes: usize,
    /// Planted bugs (testing the tester).
    pub plants: Plants,
}

/// One change of the group's membership.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Membership {
    /// Add a replica that receives the log but does not vote.
    AddLearner(u64),
    /// Add a voter, or make a learner one.
    AddVoter(u64),
    Remove(u64),
}

/// The active configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Members {
    pub voters: Vec<u64>,
    /// The old voters while a joint configuration is in force (empty otherwise).
    pub outgoing: Vec<u64>,
    pub learners: Vec<u64>,
}

/// One Raft message between peers, with what docsim's rules carry beside it.
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

/// What [`Peer::open`] found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootReport {
    pub frontier: Frontier,
    /// Committed entries above the frontier re-applied.
    pub replayed: usize,
    pub first: Option<OpId>,
    pub last: Option<OpId>,
    /// Entries above the commit index handed to Raft unapplied (orphaned replicates).
    pub uncommitted: usize,
    /// The log was restarted after a snapshot whose install a crash had cut short.
    pub finished_install: bool,
}

impl std::fmt::Display for BootReport {
    /// The replicated docscript `restart node=<i>:` line's fields.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "flushed={} replayed={}", self.frontier.op_id, self.replayed)?;
        if let (Some(first), Some(last)) = (self.first, self.last) {
            write!(f, " from={first} to={last}")?;
        }
        write!(f, " uncommitted={}", self.uncommitted)
    }
}

/// One entry a peer applied (live or in bootstrap), for the checker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    pub op_id: OpId,
    /// The write's hybrid time; `None` for a leader's empty entry.
    pub ht: Option<HybridTime>,
}

/// A peer's role and progress, for the simulator's reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerStatus {
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

/// One replica.
pub struct Peer {
    options: PeerOptions,
    db: DocDb,
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
    /// The highest lease seen in any envelope.
    max_lease_seen: HybridTime,
    /// As leader: the lease each peer echoed this term (this peer: the last it asked).
    lease_acks: BTreeMap<u64, HybridTime>,
    /// The term this peer last became leader in, and its first entry's index then.
    led: Option<(u64, u64)>,
    /// As follower: (term, leader, newest lease received from it).
    echo: Option<(u64, u64, HybridTime)>,
    /// As follower: the leader's newest (applied index, safe time).
    propagated: Option<(u64, HybridTime)>,
    /// No votes before this physical time.
    quiet_until_us: u64,
    /// Entries applied since the last [`Peer::take_applied`].
    applied_log: Vec<Applied>,
    /// Why the peer stopped (a failed disk write): it refuses everything until reopened.
    down: Option<Error>,
    /// This replica applied its own removal: inert from then on (YB tombstones such a
    /// tablet peer; a TiKV peer destroys itself), and raft-rs must not step it again
    /// (a leader outside its own configuration panics in raft-rs 0.7's `maybe_commit`).
    removed: bool,
    /// A power cut armed for a moment of its work.
    crash_at: Option<PeerCrash>,
    /// The last entry written to RocksDB: the flushed frontier once flushed.
    written: OpId,
    /// Snapshots installed since the last [`Peer::take_installed`].
    installed: Vec<OpId>,
    /// Log syncs since the peer opened.
    syncs: u64,
    /// As leader: ticks each peer has waited for a snapshot sent to it.
    snapshot_ticks: BTreeMap<u64, u32>,
}

impl Peer {
    /// Open (or create) the peer: RocksDB in `dir` of `env`, the log in `log_dir` on
    /// `disk`; bootstrap as the module says. `now_us` is the physical time now.
    pub fn open(
        dir: &Path,
        env: Option<&rocksdb::Env>,
        disk: &SimDisk,
        log_dir: &str,
        options: PeerOptions,
        now_us: u64,
    ) -> Result<(Peer, BootReport)> {
        let db = DocDb::open_in(dir, env, options.plants, Default::default())?;
        let frontier = db.opened_frontier();
        let (mut log, mut recovery) =
            Log::open(disk, log_dir, options.segment_bytes, 0, options.plants)?;
        let held: Vec<OpId> = recovery.entries.iter().map(|e| e.op_id).collect();
        let installed = db.installed_snapshot()?;
        let finish_install = must_finish_install(recovery.prev, &held, frontier.op_id, installed);
        if finish_install {
            // A snapshot's documents are durable, the log's restart after it is not.
            let hard_state = HardState { commit: frontier.op_id.index, ..recovery.hard_state };
            log.reset(frontier.op_id, hard_state)?;
            recovery = Recovery { prev: frontier.op_id, hard_state, ..Recovery::default() };
        }
        let (conf, removed) = durable_conf(&db, &options)?;
        let last = recovery.entries.last().map_or(recovery.prev, |e| e.op_id);
        let mut commit = recovery.hard_state.commit.max(frontier.op_id.index).min(last.index);
        if options.plants.contains(Plant::OrphansCommitted) {
            commit = last.index; // takes every entry it holds for committed
        }
        let ops: Vec<OpId> = recovery.entries.iter().map(|e| e.op_id).collect();
        let plan =
            plan_replay(recovery.prev, &ops, frontier.op_id, commit).map_err(Error::ReplayGap)?;
        let mut report = BootReport {
            frontier,
            replayed: 0,
            first: None,
            last: None,
            uncommitted: ops.iter().filter(|op| op.index > commit).count(),
            finished_install: finish_install,
        };
        let raw = raft_node(&options, &recovery, commit, last, conf)?;
        // A peer that never ran (nothing on its disk) never echoed a lease: no quiet.
        let ran = recovery.hard_state.term > 0 || last.index > 0;
        let mut peer = Peer {
            quiet_until_us: if ran { now_us.saturating_add(options.quiet_us) } else { 0 },
            options,
            db,
            log,
            raw,
            clock: HybridClock::new(Given(now_us)),
            now_us,
            applied: commit,
            applied_ht: frontier.ht,
            unapplied: BTreeMap::new(),
            max_lease_seen: HybridTime::MIN,
            lease_acks: BTreeMap::new(),
            led: None,
            echo: None,
            propagated: None,
            applied_log: Vec::new(),
            down: None,
            removed,
            crash_at: None,
            written: frontier.op_id,
            installed: Vec::new(),
            syncs: 0,
            snapshot_ticks: BTreeMap::new(),
        };
        peer.replay(&recovery.entries, plan, commit, &mut report)?;
        Ok((peer, report))
    }

    /// Bootstrap's pass over the log: the clock moves past every entry, the planned
    /// committed entries are re-applied, and those above `commit` are pending.
    fn replay(
        &mut self,
        entries: &[LogEntry],
        plan: std::ops::Range<usize>,
        commit: u64,
        report: &mut BootReport,
    ) -> Result<()> {
        let frontier = self.written.index; // the configuration as of it is RocksDB's
        for (i, entry) in entries.iter().enumerate() {
            let index = entry.op_id.index;
            let made_conf = conf_change_of(entry).filter(|_| index > frontier && index <= commit);
            if let Some(encoded) = made_conf {
                self.apply_conf_change(encoded, entry.op_id)?; // the configuration it made
            }
            let ht = entry_ht(entry)?;
            if let Some(ht) = ht {
                self.clock.update(ht);
                if entry.op_id.index <= commit {
                    self.applied_ht = self.applied_ht.max(ht);
                } else {
                    self.unapplied.insert(entry.op_id.index, ht);
                }
            }
            if plan.contains(&i) {
                if apply_entry(&self.db, entry)? {
                    self.written = entry.op_id;
                    report.replayed += 1;
                    report.first.get_or_insert(entry.op_id);
                    report.last = Some(entry.op_id);
                }
                self.applied_log.push(Applied { op_id: entry.op_id, ht });
            }
        }
        Ok(())
    }

    /// This peer's id.
    pub fn id(&self) -> u64 {
        self.options.id
    }

    fn check_up(&self) -> Result<()> {
        self.check_powered()?;
        match self.removed {
            true => Err(Error::Removed { id: self.options.id }),
            false => Ok(()),
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

    /// One tick of Raft's logical clock; returns the envelopes to send.
    pub fn tick(&mut self, now_us: u64) -> Result<Vec<Envelope>> {
        if self.removed {
            return Ok(vec![]);
        }
        self.check_up()?;
        self.set_now(now_us);
        if now_us >= self.quiet_until_us {
            self.raw.tick(); // a restarted peer neither votes nor campaigns while quiet
        }
        self.retry_lost_snapshots();
        self.process()
    }

    /// Take one envelope from a peer; returns the envelopes to send.
    pub fn receive(&mut self, envelope: Envelope, now_us: u64) -> Result<Vec<Envelope>> {
        if self.removed {
            return Ok(vec![]); // dropped, as by a replica that no longer exists
        }
        self.check_up()?;
        self.set_now(now_us);
        let Envelope { from, ht, ht_lease, echo, safe, msg, .. } = envelope;
        self.see(ht);
        self.max_lease_seen = self.max_lease_seen.max(ht_lease);
        let vote = msg.get_msg_type() == MessageType::MsgRequestVote;
        if vote && now_us < self.quiet_until_us {
            return self.process(); // a restarted peer does not vote yet
        }
        let term = msg.term;
        let raft = &self.raw.raft;
        if raft.state == StateRole::Leader && term == raft.term {
            if let Some(echo) = echo {
                let acked = self.lease_acks.entry(from).or_insert(HybridTime::MIN);
                *acked = (*acked).max(echo);
            }
        }
        match self.raw.step(msg) {
            // A response from a replica outside the configuration (removed, or not added
            // yet as far as this replica knows): raft-rs refuses it; it is dropped.
            Err(raft::Error::StepPeerNotFound) => return self.process(),
            result => result.map_err(raft_error)?,
        }
        let raft = &self.raw.raft;
        if raft.state != StateRole::Leader && raft.leader_id == from && term == raft.term {
            // One leader's leases in one term only grow. A new term, or a second leader in
            // this one (Raft elects at most one; the plant `vote-not-synced` makes two, and
            // the checker, not this code, must catch what follows), starts over.
            let newest = match self.echo {
                Some((t, l, lease)) if t == term && l == from => lease.max(ht_lease),
                _ => ht_lease,
            };
            self.echo = Some((term, from, newest));
            if let Some(safe) = safe {
                self.propagated = Some(safe);
            }
        }
        self.process()
    }

    /// Propose `writes` as one entry at a time from this leader's clock. Returns the
    /// entry's op id and time; the write is done once [`Peer::is_applied`] says so.
    pub fn propose(&mut self, writes: &[DocWrite], now_us: u64) -> Result<(OpId, HybridTime)> {
        self.check_up()?;
        self.set_now(now_us);
        self.note_leadership();
        if self.raw.raft.state != StateRole::Leader {
            let leader = Some(self.raw.raft.leader_id).filter(|&id| id != raft::INVALID_ID);
            return Err(Error::NotLeader { leader });
        }
        let ht = self.clock.now();
        let scanned = &mut Scanned::default();
        let entries = build_entries(&self.db, writes, ht, MarkerMode::Optional, scanned)?;
        let batch: DocWriteBatch = entries.iter().collect();
        match self.raw.propose(vec![], encode_payload(ht, &batch)) {
            // raft-rs drops proposals while its leadership is being handed over.
            Err(raft::Error::ProposalDropped) => return Err(Error::NotLeader { leader: None }),
            result => result.map_err(raft_error)?,
        }
        let op_id = OpId::new(self.raw.raft.term, self.raw.raft.raft_log.last_index());
        // Pending from now on: the messages that carry it also carry the leader's safe
        // time, which must stay below it.
        self.unapplied.insert(op_id.index, ht);
        Ok((op_id, ht))
    }

    /// Propose one membership change (one `ConfChangeV2`; several changes at once go
    /// through joint consensus). raft-rs keeps one change pending at a time: a change
    /// proposed while another is unapplied is dropped (an empty entry takes its place).
    pub fn propose_membership(&mut self, changes: &[Membership], now_us: u64) -> Result<()> {
        self.check_up()?;
        self.set_now(now_us);
        if self.raw.raft.state != StateRole::Leader {
            let leader = Some(self.raw.raft.leader_id).filter(|&id| id != raft::INVALID_ID);
            return Err(Error::NotLeader { leader });
        }
        self.check_membership(changes)?;
        let mut cc = ConfChangeV2::default();
        for change in changes {
            let (change_type, node_id) = match *change {
                Membership::AddLearner(id) => (ConfChangeType::AddLearnerNode, id),
                Membership::AddVoter(id) => (ConfChangeType::AddNode, id),
                Membership::Remove(id) => (ConfChangeType::RemoveNode, id),
            };
            let mut single = ConfChangeSingle::default();
            single.set_change_type(change_type);
            single.node_id = node_id;
            cc.mut_changes().push(single);
        }
        self.raw.propose_conf_change(vec![], cc).map_err(raft_error)
    }

    /// docsim's own rule: a leader does not remove itself (raft-rs 0.7 leaves a leader
    /// outside its configuration untested, and one that applied its own removal goes
    /// inert before its followers may learn the commit — in a group of two, for good: the
    /// other voter never gets the vote it needs); move leadership first. A change that
    /// leaves no voter, or names one replica twice, is refused as well.
    fn check_membership(&self, changes: &[Membership]) -> Result<()> {
        let id_of = |c: &Membership| match *c {
            Membership::AddLearner(id) | Membership::AddVoter(id) | Membership::Remove(id) => id,
        };
        let mut ids: Vec<u64> = changes.iter().map(id_of).collect();
        ids.sort_unstable();
        let invalid = |why: String| Err(Error::InvalidRequest(why));
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return invalid("a membership change names one replica twice".into());
        }
        let me = self.options.id;
        if changes.contains(&Membership::Remove(me))
            || changes.contains(&Membership::AddLearner(me))
        {
            return invalid(format!("leader {me} does not remove itself from the voters"));
        }
        let mut voters = self.members().voters;
        for change in changes {
            match *change {
                Membership::AddVoter(id) => voters.push(id),
                Membership::Remove(id) | Membership::AddLearner(id) => voters.retain(|&v| v != id),
            }
        }
        if voters.is_empty() {
            return invalid("a membership change would leave no voter".into());
        }
        Ok(())
    }

    /// The active configuration.
    pub fn members(&self) -> Members {
        let cs = self.raw.raft.prs().conf().to_conf_state();
        let sorted = |ids: &[u64]| {
            let mut ids = ids.to_vec();
            ids.sort_unstable();
            ids
        };
        let learners = [cs.learners.as_slice(), cs.learners_next.as_slice()].concat();
        Members {
            voters: sorted(&cs.voters),
            outgoing: sorted(&cs.voters_outgoing),
            learners: sorted(&learners),
        }
    }

    fn is_member(&self) -> bool {
        let members = self.members();
        let id = self.options.id;
        [members.voters, members.outgoing, members.learners].iter().any(|ids| ids.contains(&id))
    }

    /// Apply a committed configuration change (its encoded `ConfChangeV2`).
    fn apply_conf_change(&mut self, encoded: &[u8], op_id: OpId) -> Result<()> {
        let cc = ConfChangeV2::parse_from_bytes(encoded)
            .map_err(|e| Error::Storage(format!("log entry {op_id}: configuration change: {e}")))?;
        let was_member = self.is_member();
        let conf_state = self.raw.apply_conf_change(&cc).map_err(raft_error)?;
        // Removed on leaving the group: a replica added later also applies the changes
        // made before it joined, which do not name it.
        self.removed = self.removed || (was_member && !self.is_member());
        let encoded = encode_conf(self.removed, &conf_state);
        self.raw.store().wl().set_conf_state(conf_state);
        self.db.write_conf(&encoded, op_id, self.applied_ht)?;
        self.written = op_id;
        Ok(())
    }

    /// Handle every `Ready`; returns the envelopes to send. Call after each proposal.
    pub fn process(&mut self) -> Result<Vec<Envelope>> {
        let result = self.handle_ready().and_then(|out| {
            self.build_wanted_snapshot()?;
            Ok(out)
        });
        if let Err(e) = &result {
            self.down = Some(e.clone());
        }
        self.note_leadership();
        result
    }

    fn handle_ready(&mut self) -> Result<Vec<Envelope>> {
        let mut out = Vec::new();
        let mut rounds = 0;
        while self.raw.has_ready() {
            // A few rounds settle any input; raft-rs readying forever is a livelock (e.g.
            // committed entries its storage never hands over), and a bug.
            rounds += 1;
            assert!(rounds <= 1_000, "replica {}: raft-rs's Ready never settles", self.options.id);
            self.note_leadership();
            let mut ready = self.raw.ready();
            let now = ready.take_messages();
            self.wrap(now, &mut out);
            if !ready.snapshot().is_empty() {
                self.install(ready.snapshot().clone())?;
            }
            self.apply_all(ready.take_committed_entries())?;
            let entries: Vec<LogEntry> = ready.entries().iter().map(to_log_entry).collect();
            self.appended(&entries)?;
            if self.plant(Plant::ApplyBeforeCommit) {
                self.planted_apply_uncommitted(&entries)?;
            }
            let hs =
                ready.hs().map(|hs| HardState { term: hs.term, vote: hs.vote, commit: hs.commit });
            if !entries.is_empty() || hs.is_some() {
                self.log.append(&entries, hs)?;
            }
            if !entries.is_empty() {
                self.maybe_crash(PeerCrash::AfterAppend)?;
            }
            // Term and vote must be durable before a vote leaves (the planted bug syncs
            // only when entries came, so a lone new vote may die with the power).
            let vote_only = entries.is_empty();
            if ready.must_sync() && !(vote_only && self.plant(Plant::VoteNotSynced)) {
                self.log.sync()?;
                self.syncs += 1;
                self.maybe_crash(PeerCrash::AfterSync)?;
            }
            let store = self.raw.store().clone();
            store.wl().append(ready.entries()).map_err(raft_error)?;
            if let Some(hs) = ready.hs() {
                store.wl().set_hardstate(hs.clone());
            }
            let persisted = ready.take_persisted_messages();
            self.wrap(persisted, &mut out);
            let mut light = self.raw.advance(ready);
            if let Some(commit) = light.commit_index() {
                store.wl().mut_hard_state().commit = commit;
                let hs = store.rl().hard_state().clone();
                let hs = HardState { term: hs.term, vote: hs.vote, commit };
                self.log.append(&[], Some(hs))?; // not synced: bootstrap may see less
            }
            let later = light.take_messages();
            self.wrap(later, &mut out);
            self.apply_all(light.take_committed_entries())?;
            self.raw.advance_apply();
        }
        Ok(out)
    }

    /// New entries reached this peer's log: a tail they replace is gone, and the clock
    /// moves past their times.
    fn appended(&mut self, entries: &[LogEntry]) -> Result<()> {
        let Some(first) = entries.first() else { return Ok(()) };
        self.unapplied.split_off(&first.op_id.index);
        for entry in entries {
            if let Some(ht) = entry_ht(entry)? {
                self.see(ht);
                self.unapplied.insert(entry.op_id.index, ht);
            }
        }
        Ok(())
    }

    fn plant(&self, bug: Plant) -> bool {
        self.options.plants.contains(bug)
    }

    /// The planted bug: a follower applies entries as they arrive, before they commit.
    fn planted_apply_uncommitted(&mut self, entries: &[LogEntry]) -> Result<()> {
        if self.raw.raft.state == StateRole::Leader {
            return Ok(());
        }
        let next: Vec<Entry> =
            entries.iter().filter(|e| e.op_id.index > self.applied).map(to_raft_entry).collect();
        let contiguous = next.first().is_some_and(|e| e.index == self.applied + 1);
        if contiguous {
            self.apply_all(next)
        } else {
            Ok(())
        }
    }

    /// Arm a power cut at `at` (the caller cuts the power when the peer reports it: an
    /// error of kind `crashed`, or [`Peer::crash_after_send`]).
    pub fn arm_crash(&mut self, at: Option<PeerCrash>) {
        self.crash_at = at;
    }

    /// The peer's power is cut if it was armed here.
    fn maybe_crash(&mut self, at: PeerCrash) -> Result<()> {
        if self.crash_at != Some(at) {
            return Ok(());
        }
        self.crash_at = None;
        Err(Error::Crashed(CrashPoint::Peer(at)))
    }

    /// Whether an armed power cut fired: the peer refuses everything, and its caller
    /// is to cut the power for real.
    pub fn powered_off(&self) -> bool {
        matches!(self.down, Some(Error::Crashed(_)) | Some(Error::Down { cause: None }))
    }

    /// Whether the power goes once `sent` has left (armed after a send, or after a vote
    /// when `sent` grants one); the peer then refuses everything.
    pub fn crash_after_send(&mut self, sent: &[Envelope]) -> bool {
        let vote = sent
            .iter()
            .any(|e| e.msg.get_msg_type() == MessageType::MsgRequestVoteResponse && !e.msg.reject);
        let fires = match self.crash_at {
            Some(PeerCrash::AfterSend) => !sent.is_empty(),
            Some(PeerCrash::AfterVote) => vote,
            _ => false,
        };
        if fires {
            self.crash_at = None;
            self.down = Some(Error::Down { cause: None });
        }
        fires
    }

    fn apply_all(&mut self, committed: Vec<Entry>) -> Result<()> {
        let applied_any = !committed.is_empty();
        if applied_any {
            self.maybe_crash(PeerCrash::AfterCommit)?;
        }
        for entry in committed.iter().map(to_log_entry) {
            if self.planted_applied_early(&entry) {
                continue;
            }
            assert_eq!(entry.op_id.index, self.applied + 1, "entries apply in order");
            if let Some(encoded) = conf_change_of(&entry) {
                self.apply_conf_change(encoded, entry.op_id)?;
            }
            if apply_entry(&self.db, &entry)? {
                self.written = entry.op_id;
            }
            let ht = entry_ht(&entry)?;
            if let Some(ht) = ht {
                self.applied_ht = self.applied_ht.max(ht);
            }
            self.applied = entry.op_id.index;
            self.unapplied.remove(&entry.op_id.index);
            self.applied_log.push(Applied { op_id: entry.op_id, ht });
        }
        if applied_any {
            self.maybe_crash(PeerCrash::AfterApply)?;
        }
        Ok(())
    }

    /// The plant `apply-before-commit`: whether `entry` was applied as it arrived.
    fn planted_applied_early(&self, entry: &LogEntry) -> bool {
        self.plant(Plant::ApplyBeforeCommit) && entry.op_id.index <= self.applied
    }

    /// Install a snapshot from the leader: its documents durably in RocksDB, then the log
    /// restarted after it, then raft-rs's storage.
    fn install(&mut self, snap: Snapshot) -> Result<()> {
        let meta = snap.get_metadata();
        let op_id = OpId::new(meta.term, meta.index);
        let data = SnapshotData::decode(&snap.data)
            .map_err(|why| Error::Storage(format!("snapshot {op_id} from the leader: {why}")))?;
        let conf = encode_conf(false, meta.get_conf_state());
        self.db.install(&data.export, op_id, data.applied_ht, &conf)?;
        self.written = op_id;
        self.maybe_crash(PeerCrash::AfterSnapshot)?;
        let hs = self.raw.raft.hard_state();
        self.log.reset(op_id, HardState { term: hs.term, vote: hs.vote, commit: op_id.index })?;
        self.syncs += 1;
        self.raw.store().wl().apply_snapshot(snap).map_err(raft_error)?;
        self.applied = op_id.index;
        self.applied_ht = data.applied_ht;
        self.see(data.applied_ht);
        self.unapplied.clear();
        self.removed = false;
        self.installed.push(op_id);
        Ok(())
    }

    /// Build the snapshot raft-rs asked for (see `peer/storage.rs`): this replica's
    /// documents at its applied entry.
    fn build_wanted_snapshot(&mut self) -> Result<()> {
        let store = self.raw.store().clone();
        if !std::mem::take(&mut store.cache().wanted) {
            return Ok(());
        }
        let data = SnapshotData { applied_ht: self.applied_ht, export: self.db.export()? };
        let mut snap = Snapshot { data: data.encode().into(), ..Default::default() };
        let meta = snap.mut_metadata();
        meta.index = self.applied;
        meta.term = self.raw.raft.raft_log.term(self.applied).map_err(raft_error)?;
        meta.set_conf_state(self.raw.raft.prs().conf().to_conf_state());
        store.cache().ready = Some(snap);
        Ok(())
    }

    /// As leader: a snapshot a peer has not confirmed within [`SNAPSHOT_TIMEOUT_TICKS`]
    /// is reported lost, so raft-rs sends one again.
    fn retry_lost_snapshots(&mut self) {
        if self.raw.raft.state != StateRole::Leader {
            self.snapshot_ticks.clear();
            return;
        }
        let waiting: Vec<u64> = self
            .raw
            .raft
            .prs()
            .iter()
            .filter(|(_, pr)| pr.state == ProgressState::Snapshot)
            .map(|(&id, _)| id)
            .collect();
        self.snapshot_ticks.retain(|id, _| waiting.contains(id));
        for id in waiting {
            let ticks = self.snapshot_ticks.entry(id).or_insert(0);
            *ticks += 1;
            if *ticks > SNAPSHOT_TIMEOUT_TICKS {
                self.snapshot_ticks.remove(&id);
                self.raw.report_snapshot(id, SnapshotStatus::Failure);
            }
        }
    }

    /// How many times the log was synced since the peer opened (a slow disk's caller
    /// holds back what follows each).
    pub fn syncs(&self) -> u64 {
        self.syncs
    }

    /// Snapshots installed since the last call (their op ids).
    pub fn take_installed(&mut self) -> Vec<OpId> {
        std::mem::take(&mut self.installed)
    }

    /// Wrap raft-rs's messages in envelopes.
    fn wrap(&mut self, messages: Vec<Message>, out: &mut Vec<Envelope>) {
        let leader = self.raw.raft.state == StateRole::Leader;
        for msg in messages {
            let ht = self.clock.now();
            let (ht_lease, safe) = if leader {
                let lease = self.own_lease();
                self.max_lease_seen = self.max_lease_seen.max(lease);
                let safe = self.leader_bound().ok().map(|bound| (self.applied, bound.min(ht)));
                (lease, safe)
            } else {
                (self.max_lease_seen, None)
            };
            let echo = match self.echo {
                Some((term, l, lease)) if l == msg.to && term == self.raw.raft.term => Some(lease),
                _ => None,
            };
            out.push(Envelope { from: self.options.id, to: msg.to, ht, ht_lease, echo, safe, msg });
        }
    }

    /// On becoming leader: move the clock past every lease the voters reported, and
    /// remember where this term's entries start.
    fn note_leadership(&mut self) {
        let raft = &self.raw.raft;
        let term = raft.term;
        if raft.state != StateRole::Leader {
            return;
        }
        if self.led.is_none_or(|(t, _)| t != term) {
            let first = raft.raft_log.last_index();
            self.led = Some((term, first));
            self.lease_acks.clear();
            self.see(self.max_lease_seen);
        }
    }

    /// Move the clock past a time seen on another peer (the planted bug forgets it).
    fn see(&mut self, ht: HybridTime) {
        if !self.options.plants.contains(Plant::HtNotPropagated) {
            self.clock.update(ht);
        }
    }

    /// The highest time this peer may serve a read at, or why it may serve none.
    fn leader_bound(&self) -> Result<HybridTime> {
        let no_safe = |safe_ht| Error::SafeTimeBehind { read_ht: None, safe_ht };
        let Some((term, first)) = self.led else { return Err(no_safe(None)) };
        if term != self.raw.raft.term || self.applied < first {
            return Err(no_safe(None)); // its own term's first entry is not applied yet
        }
        let lease = self.majority_lease();
        let pending = self.unapplied.values().next().map(|ht| HybridTime::from_raw(ht.raw() - 1));
        Ok(pending.map_or(lease, |p| p.min(lease)))
    }

    /// The subdocument at `path` as of `read_ht`, if this peer can serve that time.
    pub fn read(
        &mut self,
        path: &DocPath,
        read_ht: HybridTime,
        now_us: u64,
    ) -> Result<Option<Document>> {
        self.check_up()?;
        self.set_now(now_us);
        self.note_leadership();
        self.check_servable(read_ht)?;
        self.clock.update(read_ht);
        self.db.get(path, read_ht, None)
    }

    fn check_servable(&self, read_ht: HybridTime) -> Result<()> {
        if self.raw.raft.state == StateRole::Leader {
            let bound = self.leader_bound().map_err(|e| with_read_ht(e, read_ht))?;
            if read_ht <= bound {
                return Ok(());
            }
            let lease = self.majority_lease();
            if read_ht > lease {
                return Err(Error::LeaseExpired { read_ht, lease_ht: lease });
            }
            return Err(Error::SafeTimeBehind { read_ht: Some(read_ht), safe_ht: Some(bound) });
        }
        let safe = self.safe_time();
        if read_ht <= safe {
            return Ok(());
        }
        Err(Error::SafeTimeBehind { read_ht: Some(read_ht), safe_ht: Some(safe) })
    }

    /// The lease a majority of the active voters holds (of both halves of a joint
    /// configuration, the lower).
    fn majority_lease(&self) -> HybridTime {
        if self.options.plants.contains(Plant::ReadsPastLease) {
            return HybridTime::MAX;
        }
        let own = self.own_lease();
        let lease_of = |v: u64| match v == self.options.id {
            true => own,
            false => self.lease_acks.get(&v).copied().unwrap_or(HybridTime::MIN),
        };
        let members = self.members();
        if self.options.plants.contains(Plant::NonVoterCounted) {
            return self.planted_lease_of_every_echo(&members, lease_of);
        }
        let majority = |voters: &[u64]| {
            let mut leases: Vec<HybridTime> = voters.iter().map(|&v| lease_of(v)).collect();
            leases.sort_unstable_by(|a, b| b.cmp(a));
            leases.get(voters.len() / 2).copied().unwrap_or(HybridTime::MAX)
        };
        majority(&members.voters).min(majority(&members.outgoing))
    }

    /// The plant `non-voter-counted`: every replica that echoed counts toward the voters'
    /// majority. (Code only a plant runs is named `planted_`: the mutation measures leave
    /// it out, `.cargo/mutants.toml`.)
    fn planted_lease_of_every_echo(
        &self,
        members: &Members,
        lease_of: impl Fn(u64) -> HybridTime,
    ) -> HybridTime {
        let mut counted: Vec<u64> = members.voters.clone();
        counted.extend(members.learners.iter().chain(self.lease_acks.keys()));
        counted.sort_unstable();
        counted.dedup();
        let mut leases: Vec<HybridTime> = counted.into_iter().map(lease_of).collect();
        leases.sort_unstable_by(|a, b| b.cmp(a));
        leases[members.voters.len() / 2]
    }

    /// The lease a leader asks for now (and grants itself): physical time + `lease_us`.
    /// From physical time, never from the hybrid clock: reads up to the lease move the
    /// clock there, and a lease from the clock would ratchet ahead of every physical
    /// clock, past what a restarted peer's quiet period covers.
    fn own_lease(&self) -> HybridTime {
        HybridTime::from_micros(self.now_us.saturating_add(self.options.lease_us))
    }

    /// A follower's safe time: its last applied write's, or the leader's propagated one
    /// once applied up to the leader's applied index then.
    pub fn safe_time(&self) -> HybridTime {
        match self.propagated {
            Some((index, safe)) if self.applied >= index => safe.max(self.applied_ht),
            _ => self.applied_ht,
        }
    }

    /// This peer's hybrid time now (a client reading "now" here).
    pub fn now_ht(&mut self, now_us: u64) -> HybridTime {
        self.set_now(now_us);
        self.clock.now()
    }

    /// Whether the entry `op_id` is applied here (the same entry: same term at its index).
    pub fn is_applied(&self, op_id: OpId) -> bool {
        let done = if self.options.plants.contains(Plant::AckBeforeQuorum) {
            self.raw.raft.raft_log.persisted // durable here, whatever the others hold
        } else {
            self.applied
        };
        op_id.index <= done
            && self.raw.raft.raft_log.term(op_id.index).is_ok_and(|t| t == op_id.term)
    }

    /// Entries applied since the last call (bootstrap's re-applied ones first).
    pub fn take_applied(&mut self) -> Vec<Applied> {
        std::mem::take(&mut self.applied_log)
    }

    /// The op id of the last entry in this peer's log (committed or not).
    pub fn last_op_id(&self) -> OpId {
        let log = &self.raw.raft.raft_log;
        OpId::new(log.last_term(), log.last_index())
    }

    /// The leader's view of each peer's replication (for diagnostics).
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
    pub fn status(&self) -> PeerStatus {
        let raft = &self.raw.raft;
        PeerStatus {
            leader: raft.state == StateRole::Leader && !self.removed,
            term: raft.term,
            leader_id: raft.leader_id,
            commit: raft.raft_log.committed,
            applied: self.applied,
            last_index: raft.raft_log.last_index(),
        }
    }

    /// Flush memtables (the flushed frontier moves to the last entry written), then
    /// remove the log's whole segments below it. Returns how many segments went.
    pub fn flush(&mut self) -> Result<usize> {
        self.check_powered()?;
        self.db.flush()?;
        let removed = self.log.gc(self.written.index)?;
        // raft-rs's copy of the log starts where the disk's does now.
        let start = (self.log.segments()[0].prev.index + 1).min(self.written.index);
        self.raw.store().compact(start).map_err(raft_error)?;
        Ok(removed)
    }

    /// Every stored entry, for comparing replicas.
    pub fn dump(&self) -> Result<Vec<RawEntry>> {
        self.check_powered()?;
        self.db.dump()
    }
}

fn with_read_ht(e: Error, read_ht: HybridTime) -> Error {
    match e {
        Error::SafeTimeBehind { safe_ht, .. } => {
            Error::SafeTimeBehind { read_ht: Some(read_ht), safe_ht }
        }
        other => other,
    }
}

/// docsim's encoding of a replica's configuration in RocksDB: whether it was removed,
/// then raft-rs's `ConfState`.
fn encode_conf(removed: bool, conf: &ConfState) -> Vec<u8> {
    let mut out = vec![u8::from(removed)];
    out.extend(conf.write_to_bytes().expect("a ConfState encodes"));
    out
}

/// The configuration as of the flushed frontier and whether this replica was removed;
/// the initial voters when no change was ever applied.
fn durable_conf(db: &DocDb, options: &PeerOptions) -> Result<(ConfState, bool)> {
    let Some(bytes) = db.durable_conf()? else {
        return Ok((ConfState::from((options.voters.clone(), vec![])), false));
    };
    let bad = |why: String| Error::Storage(format!("the stored configuration: {why}"));
    let (&removed, conf) = bytes.split_first().ok_or_else(|| bad("empty".into()))?;
    let conf = ConfState::parse_from_bytes(conf).map_err(|e| bad(e.to_string()))?;
    Ok((conf, removed == 1))
}

fn raft_node(
    options: &PeerOptions,
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
        // A peer cut off campaigns without raising its term, so it does not depose a
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

/// The hybrid time an entry's payload starts with (`None`: a leader's empty entry).
fn entry_ht(entry: &LogEntry) -> Result<Option<HybridTime>> {
    if entry.data.is_empty() || conf_change_of(entry).is_some() {
        return Ok(None);
    }
    let raw = entry
        .data
        .get(..8)
        .ok_or_else(|| Error::Storage(format!("log entry {}: no hybrid time", entry.op_id)))?;
    Ok(Some(HybridTime::from_raw(u64::from_be_bytes(raw.try_into().expect("8 bytes")))))
}
