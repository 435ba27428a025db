//! raft-rs's view of a replica's log: its in-memory `MemStorage` (the entries on the
//! log's disk, as raft-rs reads them), plus the snapshot the replica last built.
//!
//! raft-rs asks for a snapshot when a peer needs entries this log no longer holds (log GC
//! removed them). Building one reads the whole RocksDB instance, which raft-rs cannot
//! reach from here; so a request the cached snapshot cannot serve answers
//! `SnapshotTemporarilyUnavailable` and marks the snapshot wanted; the replica builds it
//! after handling its `Ready`, and raft-rs sends it on its next try (the peer's next
//! heartbeat response).

use raft::eraftpb::{Entry, Snapshot};
use raft::storage::{MemStorage, MemStorageCore};
use raft::{GetEntriesContext, RaftState, Storage, StorageError};
use std::sync::{Arc, Mutex, RwLockReadGuard, RwLockWriteGuard};

/// The snapshot a replica built, and whether raft-rs wants a newer one.
#[derive(Default)]
pub(super) struct SnapshotCache {
    pub ready: Option<Snapshot>,
    pub wanted: bool,
}

#[derive(Clone)]
pub(super) struct PeerStorage {
    mem: MemStorage,
    cache: Arc<Mutex<SnapshotCache>>,
    /// The op id just before the first entry held (after log GC): raft-rs matches logs
    /// against it, and `MemStorage` forgets it when compacting.
    compacted: Arc<Mutex<(u64, u64)>>,
}

impl PeerStorage {
    pub fn new(mem: MemStorage) -> PeerStorage {
        let compacted = Arc::default();
        PeerStorage { mem, cache: Arc::default(), compacted }
    }

    pub fn wl(&self) -> RwLockWriteGuard<'_, MemStorageCore> {
        self.mem.wl()
    }

    pub fn rl(&self) -> RwLockReadGuard<'_, MemStorageCore> {
        self.mem.rl()
    }

    pub fn cache(&self) -> std::sync::MutexGuard<'_, SnapshotCache> {
        self.cache.lock().expect("snapshot cache")
    }

    /// Drop the entries before `index`, remembering the term before it; keeps at least
    /// the last entry (`MemStorage` cannot tell its start from an empty log).
    pub fn compact(&self, index: u64) -> raft::Result<()> {
        let index = index.min(self.mem.last_index()?);
        if index <= self.mem.first_index()? {
            return Ok(());
        }
        let term_before = self.term(index - 1)?;
        self.mem.wl().compact(index)?;
        *self.compacted.lock().expect("compacted") = (index - 1, term_before);
        Ok(())
    }
}

impl Storage for PeerStorage {
    fn initial_state(&self) -> raft::Result<RaftState> {
        self.mem.initial_state()
    }

    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        self.mem.entries(low, high, max_size, context)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        let (index, term) = *self.compacted.lock().expect("compacted");
        if idx == index && index > 0 && self.mem.first_index()? == index + 1 {
            return Ok(term);
        }
        self.mem.term(idx)
    }

    fn first_index(&self) -> raft::Result<u64> {
        self.mem.first_index()
    }

    fn last_index(&self) -> raft::Result<u64> {
        self.mem.last_index()
    }

    fn snapshot(&self, request_index: u64, to: u64) -> raft::Result<Snapshot> {
        let first_index = self.mem.first_index()?;
        let mut cache = self.cache();
        let usable = |snap: &Snapshot| {
            let meta = snap.get_metadata();
            let cs = meta.get_conf_state();
            // At or after what was asked, no older than the log's start (the peer goes on
            // from the entry after it), and naming the peer (raft-rs refuses one that
            // does not: a replica added after it was built).
            meta.index >= request_index
                && meta.index + 1 >= first_index
                && [cs.get_voters(), cs.get_learners(), cs.get_voters_outgoing()]
                    .iter()
                    .any(|ids| ids.contains(&to))
        };
        match &cache.ready {
            Some(snap) if usable(snap) => Ok(snap.clone()),
            _ => {
                cache.wanted = true;
                Err(raft::Error::Store(StorageError::SnapshotTemporarilyUnavailable))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use raft::eraftpb::ConfState;

    fn entry(index: u64, term: u64) -> Entry {
        Entry { index, term, ..Default::default() }
    }

    #[test]
    fn the_term_before_the_first_entry_held_survives_compaction() {
        let mem = MemStorage::new_with_conf_state(ConfState::from((vec![1], vec![])));
        mem.wl().append(&[entry(1, 1), entry(2, 1), entry(3, 1), entry(4, 2)]).unwrap();
        let storage = PeerStorage::new(mem);
        storage.compact(4).unwrap();
        assert_eq!(storage.first_index().unwrap(), 4);
        assert_eq!(storage.term(3).unwrap(), 1, "raft-rs matches logs against it");
        assert_eq!(storage.term(4).unwrap(), 2);
        assert_eq!(storage.term(2), Err(raft::Error::Store(raft::StorageError::Compacted)));
    }

    #[test]
    fn a_cached_snapshot_serves_only_peers_it_names_and_no_older_than_the_log() {
        let mem = MemStorage::new_with_conf_state(ConfState::from((vec![1, 2], vec![])));
        mem.wl().append(&[entry(1, 1), entry(2, 1), entry(3, 1)]).unwrap();
        let storage = PeerStorage::new(mem);
        let unavailable = |r: raft::Result<Snapshot>| {
            matches!(r, Err(raft::Error::Store(StorageError::SnapshotTemporarilyUnavailable)))
        };
        assert!(unavailable(storage.snapshot(0, 2)), "none built yet");
        assert!(std::mem::take(&mut storage.cache().wanted));
        let mut snap = Snapshot::default();
        snap.mut_metadata().index = 2;
        snap.mut_metadata().term = 1;
        snap.mut_metadata().set_conf_state(ConfState::from((vec![1, 2], vec![])));
        storage.cache().ready = Some(snap);
        assert_eq!(storage.snapshot(0, 2).unwrap().get_metadata().index, 2);
        assert!(unavailable(storage.snapshot(0, 3)), "a replica added after it was built");
        storage.compact(3).unwrap(); // the snapshot still reaches the log's start
        assert!(storage.snapshot(0, 2).is_ok());
        storage.mem.wl().append(&[entry(4, 1)]).unwrap();
        storage.compact(4).unwrap();
        assert!(unavailable(storage.snapshot(0, 2)), "older than the log's start");
    }
}
