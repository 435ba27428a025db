//! raft-rs's `Ready` loop, the one of every replica: persist, apply, send — with the
//! points where the simulator cuts the power, and Raft snapshots in and out.

use super::snapshot::SnapshotData;
use super::{raft_error, to_log_entry, to_raft_entry, AppliedEntry, Envelope, Replica};
use crate::canary::Plant;
use crate::crash::CrashPoint;
use crate::error::{Error, Result};
use crate::ids::OpId;
use crate::log::{HardState, LogEntry};
use crate::tablet::Payload;
use raft::eraftpb::{Entry, MessageType, Snapshot};
use raft::{ProgressState, SnapshotStatus, StateRole};

/// Ticks a leader waits for a replica to confirm a snapshot before sending it again (the
/// message may have been lost; raft-rs waits for word either way).
pub(super) const SNAPSHOT_TIMEOUT_TICKS: u32 = 30;

impl Replica {
    /// Handle every `Ready`; returns the envelopes to send. Call after each proposal.
    /// Once a write this replica proposed is applied, a log grown past two segments is
    /// collected as far as the frontier allows (as a background task would, not only
    /// after flushes).
    pub fn process(&mut self) -> Result<Vec<Envelope>> {
        let in_flight = self.in_flight.len();
        let result = self.handle_ready().and_then(|out| {
            self.build_wanted_snapshot()?;
            let own_applied = self.in_flight.len() < in_flight;
            if own_applied && self.log.segments().len() > 2 {
                self.gc_log()?;
            }
            Ok(out)
        });
        if let Err(e) = &result {
            if matches!(e, Error::Io(_) | Error::DiskFull { .. }) {
                crate::probe::hit("disk.write_failed_tablet_down");
            }
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
            self.persist(&entries, hs, ready.must_sync())?;
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
                // Not synced: bootstrap may see less. Not written at all with one voter,
                // whose every durable entry is committed (bootstrap knows): a write then
                // appends its entry once, and after the entry is durable the only disk
                // write left is its sync mark's, so an I/O error or a full disk always
                // cuts a write before its sync.
                if !self.alone() {
                    let hs = store.rl().hard_state().clone();
                    let hs = HardState { term: hs.term, vote: hs.vote, commit };
                    self.log.append(&[], Some(hs))?;
                }
            }
            let later = light.take_messages();
            self.wrap(later, &mut out);
            self.apply_all(light.take_committed_entries())?;
            self.raw.advance_apply();
        }
        Ok(out)
    }

    /// New entries and the hard state reach the log, and are synced when raft-rs says
    /// they must be (term and vote before a vote leaves; entries before they count as
    /// persisted). A write appends its entry once, and after the entry is durable the only
    /// disk write left is its sync mark's (a rewrite of the same size): what an I/O error
    /// or a full disk cuts is always before the sync.
    fn persist(&mut self, entries: &[LogEntry], hs: Option<HardState>, sync: bool) -> Result<()> {
        if !entries.is_empty() || hs.is_some() {
            self.log.append(entries, hs)?;
        }
        if !entries.is_empty() {
            self.maybe_crash(CrashPoint::AfterAppend)?;
        }
        // The planted bugs: a lone new vote not synced (it may die with the power); a
        // write's entries counted persisted before their sync.
        let vote_only = entries.is_empty();
        let skipped = (vote_only && self.plant(Plant::VoteNotSynced))
            || (!vote_only && self.plant(Plant::AckBeforeSync));
        if sync && !skipped {
            self.log.sync()?;
            self.syncs += 1;
            self.maybe_crash(CrashPoint::AfterSync)?;
        }
        Ok(())
    }

    /// New entries reached this replica's log: a tail they replace is gone (with the
    /// proposals it held: a proposal stays in flight only while its own entry is in the
    /// log), and the clock moves past their times.
    fn appended(&mut self, entries: &[LogEntry]) -> Result<()> {
        let Some(first) = entries.first() else { return Ok(()) };
        self.unapplied.split_off(&first.op_id.index);
        let kept = |index: u64, term: u64| {
            index < first.op_id.index
                || entries.iter().any(|e| e.op_id.index == index && e.op_id.term == term)
        };
        self.in_flight.retain(|&index, w| kept(index, w.term));
        for entry in entries {
            if let Some(ht) = super::entry_ht(entry)? {
                self.see(ht);
                self.unapplied.insert(entry.op_id.index, ht);
            }
        }
        Ok(())
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

    /// Arm a power cut at `at` (the caller cuts the power when the replica reports it: an
    /// error of kind `crashed`, or [`Replica::crash_after_send`]).
    pub fn arm_crash(&mut self, at: Option<CrashPoint>) {
        self.crash_at = at;
    }

    /// The replica's power is cut if it was armed here.
    fn maybe_crash(&mut self, at: CrashPoint) -> Result<()> {
        if self.crash_at != Some(at) {
            return Ok(());
        }
        self.crash_at = None;
        Err(Error::Crashed(at))
    }

    /// Whether an armed power cut fired: the replica refuses everything, and its caller
    /// is to cut the power for real.
    pub fn powered_off(&self) -> bool {
        matches!(self.down, Some(Error::Crashed(_)) | Some(Error::Down { cause: None }))
    }

    /// Whether the power goes once `sent` has left (armed after a send, or after a vote
    /// when `sent` grants one); the replica then refuses everything.
    pub fn crash_after_send(&mut self, sent: &[Envelope]) -> bool {
        let vote = sent
            .iter()
            .any(|e| e.msg.get_msg_type() == MessageType::MsgRequestVoteResponse && !e.msg.reject);
        let fires = match self.crash_at {
            Some(CrashPoint::AfterSend) => !sent.is_empty(),
            Some(CrashPoint::AfterVote) => vote,
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
            self.maybe_crash(CrashPoint::AfterCommit)?;
        }
        for entry in committed.iter().map(to_log_entry) {
            if self.planted_applied_early(&entry) {
                continue;
            }
            assert_eq!(entry.op_id.index, self.applied + 1, "entries apply in order");
            if let Some(encoded) = Payload::conf_change_of(&entry.data) {
                self.apply_conf_change(encoded, entry.op_id)?;
            }
            let applied = self.apply_payload(&entry)?;
            let ht = super::entry_ht(&entry)?;
            if let Some(ht) = ht {
                self.applied_ht = self.applied_ht.max(ht);
            }
            self.applied = entry.op_id.index;
            self.unapplied.remove(&entry.op_id.index);
            self.in_flight.remove(&entry.op_id.index);
            self.applied_log.push(AppliedEntry::of(entry.op_id, ht, applied));
        }
        if applied_any {
            self.maybe_crash(CrashPoint::AfterApply)?;
        }
        Ok(())
    }

    /// The plant `apply-before-commit`: whether `entry` was applied as it arrived.
    fn planted_applied_early(&self, entry: &LogEntry) -> bool {
        self.plant(Plant::ApplyBeforeCommit) && entry.op_id.index <= self.applied
    }

    /// Install a snapshot from the leader: its documents and metadata durably in RocksDB,
    /// then the log restarted after it, then raft-rs's storage.
    fn install(&mut self, snap: Snapshot) -> Result<()> {
        let meta = snap.get_metadata();
        let op_id = OpId::new(meta.term, meta.index);
        let data = SnapshotData::decode(&snap.data)
            .map_err(|why| Error::Storage(format!("snapshot {op_id} from the leader: {why}")))?;
        let conf = super::membership::encode_conf(false, meta.get_conf_state());
        let mut stored = data.metadata.clone();
        stored.push((crate::db::CONF_KEY.to_vec(), conf));
        self.tablet.db().install_checkpoints(&data.checkpoints, op_id)?;
        self.tablet.db_mut().install(&data.export, op_id, data.applied_ht, &stored)?;
        self.tablet.db().finish_checkpoint_install()?;
        self.tablet.reload_metadata()?;
        self.written = op_id;
        self.flushed = op_id;
        self.maybe_crash(CrashPoint::AfterSnapshot)?;
        let hs = self.raw.raft.hard_state();
        self.log.reset(op_id, HardState { term: hs.term, vote: hs.vote, commit: op_id.index })?;
        self.syncs += 1;
        self.raw.store().wl().apply_snapshot(snap).map_err(raft_error)?;
        self.applied = op_id.index;
        self.applied_ht = data.applied_ht;
        self.see(data.applied_ht);
        self.past_cutoff();
        self.unapplied.clear();
        self.in_flight.clear();
        self.removed = false;
        // The tablet's data is the leader's now: a long scan registered on the data it
        // replaced reads on no more (its pages fail `read_aborted`, as YugabyteDB's reads
        // fail when remote bootstrap replaces a tablet peer).
        self.readers = Default::default();
        self.installed.push(op_id);
        Ok(())
    }

    /// Build the snapshot raft-rs asked for (see `replica/storage.rs`): this replica's
    /// documents and metadata at its applied entry.
    fn build_wanted_snapshot(&mut self) -> Result<()> {
        let store = self.raw.store().clone();
        if !std::mem::take(&mut store.cache().wanted) {
            return Ok(());
        }
        let data = SnapshotData {
            applied_ht: self.applied_ht,
            export: self.tablet.db().export()?,
            metadata: self.tablet.snapshot_metadata(),
            checkpoints: self.tablet.export_checkpoints()?,
        };
        let mut snap = Snapshot { data: data.encode().into(), ..Default::default() };
        let meta = snap.mut_metadata();
        meta.index = self.applied;
        meta.term = self.raw.raft.raft_log.term(self.applied).map_err(raft_error)?;
        meta.set_conf_state(self.raw.raft.prs().conf().to_conf_state());
        store.cache().ready = Some(snap);
        Ok(())
    }

    /// As leader: a snapshot a replica has not confirmed within [`SNAPSHOT_TIMEOUT_TICKS`]
    /// is reported lost, so raft-rs sends one again.
    pub(super) fn retry_lost_snapshots(&mut self) {
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
}
