//! The tablet's Raft replica: raft-rs drives consensus, [`Log`] persists it.
//!
//! A write is proposed to raft-rs; each `Ready` is handled in the order Raft requires:
//! new entries and the hard state are appended to the log and **synced**, then handed to
//! raft-rs's in-memory storage, then committed entries are applied (by the caller's
//! `apply`). The write is acknowledged when its own entry has been applied — after it was
//! durable and committed. The group has one voter today; messages for other peers would
//! be sent where `Ready::messages` is handled, so adding peers and a simulated network
//! extends this loop instead of replacing it.
//!
//! On open, the log is read from the segment holding the entry after the flushed frontier;
//! raft-rs's storage is rebuilt from it (a snapshot marker for what was skipped or GC'd),
//! and the replica campaigns: with one voter it becomes leader at once in a new term and
//! appends an empty entry, which commits everything before it.

use crate::canary::{Plant, Plants};
use crate::crash::{CrashPoint, CrashStage};
use crate::disk::SimDisk;
use crate::error::{Error, Result};
use crate::ids::OpId;
use crate::log::{HardState, Log, LogEntry, Recovery};
use raft::eraftpb::{ConfState, Entry, EntryType, Snapshot};
use raft::storage::MemStorage;
use raft::{Config, RawNode};

/// Where a replica keeps its log.
#[derive(Clone)]
pub struct LogConfig {
    pub disk: SimDisk,
    pub dir: String,
    pub segment_bytes: usize,
}

const SELF_ID: u64 = 1;

/// One Raft peer of a tablet.
pub struct Replica {
    node: RawNode<MemStorage>,
    log: Log,
    crash_at: Option<CrashStage>,
    /// The entry of the last proposal.
    proposed: Option<OpId>,
    /// The planted bugs (of the tablet this replica serves).
    plants: Plants,
}

impl Replica {
    /// Open the log, reading from the segment that holds the entry after `frontier_index`.
    /// Returns the replica (not yet leader) and what the log held.
    pub fn open(
        config: &LogConfig,
        frontier_index: u64,
        plants: Plants,
    ) -> Result<(Replica, Recovery)> {
        let (log, recovery) =
            Log::open(&config.disk, &config.dir, config.segment_bytes, frontier_index, plants)?;
        let storage = MemStorage::new_with_conf_state(ConfState::from((vec![SELF_ID], vec![])));
        {
            let mut core = storage.wl();
            if recovery.prev.index > 0 {
                let mut snapshot = Snapshot::default();
                snapshot.mut_metadata().index = recovery.prev.index;
                snapshot.mut_metadata().term = recovery.prev.term;
                snapshot.mut_metadata().set_conf_state(ConfState::from((vec![SELF_ID], vec![])));
                core.apply_snapshot(snapshot).map_err(raft_error)?;
            }
            let entries: Vec<Entry> = recovery.entries.iter().map(to_raft_entry).collect();
            core.append(&entries).map_err(raft_error)?;
            core.set_hardstate(raft::eraftpb::HardState {
                term: recovery.hard_state.term.max(log.last_op_id().term),
                vote: recovery.hard_state.vote,
                commit: committed_index(&recovery, log.last_op_id()),
                ..Default::default()
            });
        }
        let commit = storage.wl().hard_state().commit;
        let raft_config = Config {
            id: SELF_ID,
            election_tick: 10,
            heartbeat_tick: 3,
            applied: commit,
            ..Config::default()
        };
        let logger = slog::Logger::root(slog::Discard, slog::o!());
        let node = RawNode::new(&raft_config, storage, &logger).map_err(raft_error)?;
        Ok((Replica { node, log, crash_at: None, proposed: None, plants }, recovery))
    }

    /// Become leader (one voter: at once), committing the recovered log with a new term's
    /// empty entry.
    pub fn start(&mut self) -> Result<()> {
        self.node.campaign().map_err(raft_error)?;
        self.handle_ready(None, &mut |_| Ok(()))
    }

    /// Replicate `data` as one entry; `apply` runs for every entry that commits. Returns
    /// the entry's op id once it is durable, committed and applied.
    pub fn replicate(
        &mut self,
        data: Vec<u8>,
        apply: &mut dyn FnMut(&LogEntry) -> Result<()>,
    ) -> Result<OpId> {
        self.node.propose(vec![], data).map_err(raft_error)?;
        let raft_log = &self.node.raft.raft_log;
        let op_id = OpId::new(self.node.raft.term, raft_log.last_index());
        self.proposed = Some(op_id);
        self.handle_ready(Some(op_id), apply)?;
        // One voter commits what it appends, in the same ready: an invariant, not an error.
        let applied = self.node.raft.raft_log.applied;
        assert!(applied >= op_id.index, "entry {op_id} not applied (applied {applied})");
        Ok(op_id)
    }

    /// The entry of the last proposal.
    pub fn last_proposed(&self) -> Option<OpId> {
        self.proposed
    }

    /// Arm a crash at `stage` of the next write.
    pub fn arm_crash(&mut self, stage: CrashStage) {
        self.crash_at = Some(stage);
    }

    fn handle_ready(
        &mut self,
        proposed: Option<OpId>,
        apply: &mut dyn FnMut(&LogEntry) -> Result<()>,
    ) -> Result<()> {
        while self.node.has_ready() {
            let mut ready = self.node.ready();
            // One voter: `ready.messages()` is empty; peers would be sent them here.
            self.apply_all(ready.take_committed_entries(), &[], proposed, apply)?;
            let entries: Vec<LogEntry> = ready.entries().iter().map(to_log_entry).collect();
            let hs =
                ready.hs().map(|hs| HardState { term: hs.term, vote: hs.vote, commit: hs.commit });
            // New entries, term and vote must be durable before anything acts on them. A
            // commit index alone is not written at all: one voter recovers it from the
            // entries (`committed_index`). So a write appends its entry once, and after the
            // entry is durable the only disk write left is its sync mark's (a rewrite of the
            // same size): what an I/O error or a full disk cuts is always before the sync.
            if ready.must_sync() {
                self.log.append(&entries, hs)?;
                let ours = proposed.is_some_and(|p| entries.iter().any(|e| e.op_id == p));
                if ours {
                    self.maybe_crash(CrashStage::AfterAppend)?;
                }
                if !(ours && self.plants.contains(Plant::AckBeforeSync)) {
                    self.log.sync()?;
                }
                if ours {
                    self.maybe_crash(CrashStage::AfterSync)?;
                }
            }
            let store = self.node.store().clone();
            store.wl().append(ready.entries()).map_err(raft_error)?;
            if let Some(hs) = ready.hs() {
                store.wl().set_hardstate(hs.clone());
            }
            let mut light = self.node.advance(ready);
            if let Some(commit) = light.commit_index() {
                store.wl().mut_hard_state().commit = commit;
            }
            self.apply_all(light.take_committed_entries(), &entries, proposed, apply)?;
            self.node.advance_apply();
        }
        Ok(())
    }

    /// Apply `committed` in order; an entry just `appended` (converted for the log
    /// already: the same term and index is the same entry) is not converted again.
    fn apply_all(
        &mut self,
        committed: Vec<Entry>,
        appended: &[LogEntry],
        proposed: Option<OpId>,
        apply: &mut dyn FnMut(&LogEntry) -> Result<()>,
    ) -> Result<()> {
        for entry in &committed {
            let op_id = OpId::new(entry.term, entry.index);
            let converted;
            let entry = match appended.iter().find(|e| e.op_id == op_id) {
                Some(appended) => appended,
                None => {
                    converted = to_log_entry(entry);
                    &converted
                }
            };
            apply(entry)?;
            if Some(entry.op_id) == proposed {
                self.maybe_crash(CrashStage::AfterApply)?;
            }
        }
        Ok(())
    }

    fn maybe_crash(&mut self, stage: CrashStage) -> Result<()> {
        if self.crash_at == Some(stage) {
            self.crash_at = None;
            return Err(Error::Crashed(CrashPoint::Write(stage)));
        }
        Ok(())
    }

    /// The op id of the last committed entry.
    pub fn committed(&self) -> OpId {
        let index = self.node.raft.raft_log.committed;
        let term = self.node.raft.raft_log.term(index).unwrap_or(0);
        OpId::new(term, index)
    }

    /// The log, for GC and inspection.
    pub fn log(&self) -> &Log {
        &self.log
    }

    /// Remove whole log segments below `keep_index`; returns how many went.
    pub fn gc_log(&mut self, keep_index: u64) -> Result<usize> {
        let removed = self.log.gc(keep_index)?;
        // raft-rs's in-memory copy of the log: one voter has no follower to catch up, so
        // entries below both the GC bound and the applied index can go too.
        let compact_to = keep_index.min(self.node.raft.raft_log.applied);
        let store = self.node.store().clone();
        let first_index = raft::Storage::first_index(&store).map_err(raft_error)?;
        if compact_to > first_index {
            store.wl().compact(compact_to).map_err(raft_error)?;
        }
        Ok(removed)
    }
}

/// The last committed index after a restart. With one voter an entry is committed as soon
/// as it is durable on this peer (a majority of one), so every recovered entry is; the
/// persisted commit index may lag by the last entries. With peers this would be the
/// persisted commit index and the rest would be handed to Raft as an uncommitted tail.
fn committed_index(recovery: &Recovery, last: OpId) -> u64 {
    recovery.hard_state.commit.max(last.index)
}

/// docsim's own rule: the log keeps payloads, not Raft entry types, so a configuration
/// change (raft-rs's `EntryConfChangeV2`) is stored behind this tag — 8 bytes no hybrid
/// time starts with (a data entry's payload opens with its time, big-endian).
const CONF_CHANGE_TAG: [u8; 8] = *b"\xff\xffconfv2";

/// The encoded `ConfChangeV2` of a configuration-change entry.
pub(crate) fn conf_change_of(entry: &LogEntry) -> Option<&[u8]> {
    entry.data.strip_prefix(&CONF_CHANGE_TAG)
}

pub(crate) fn to_raft_entry(entry: &LogEntry) -> Entry {
    let (data, entry_type) = match conf_change_of(entry) {
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
        EntryType::EntryConfChangeV2 => [&CONF_CHANGE_TAG[..], &entry.data].concat(),
        EntryType::EntryNormal => entry.data.to_vec(),
        EntryType::EntryConfChange => unreachable!("docsim proposes only ConfChangeV2"),
    };
    LogEntry { op_id: OpId::new(entry.term, entry.index), data }
}

pub(crate) fn raft_error(e: raft::Error) -> Error {
    Error::Storage(format!("raft: {e}"))
}

#[cfg(test)]
mod tests {
    use super::{LogConfig, Replica};
    use crate::disk::{FaultConfig, SimDisk};

    /// Log GC drops raft-rs's in-memory copy of the entries below its bound too (one
    /// voter has no follower to catch up), so that copy does not grow with every write.
    #[test]
    fn log_gc_drops_raft_rs_s_copy_of_the_entries_below_its_bound() {
        let disk = SimDisk::new(1, FaultConfig::default());
        let config = LogConfig { disk, dir: "wal".into(), segment_bytes: 256 };
        let plants = crate::canary::Plants::NONE;
        let (mut replica, _) = Replica::open(&config, 0, plants).expect("open");
        replica.start().expect("start");
        for n in 0..20 {
            replica.replicate(vec![n; 64], &mut |_| Ok(())).expect("write");
        }
        let first_index = |r: &Replica| raft::Storage::first_index(r.node.store()).expect("first");
        assert_eq!(first_index(&replica), 1);
        replica.gc_log(12).expect("gc");
        assert_eq!(first_index(&replica), 12);
        replica.gc_log(5).expect("gc below: nothing to do");
        assert_eq!(first_index(&replica), 12);
    }
}
