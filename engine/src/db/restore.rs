//! Restoring one tablet replica's RocksDB to an earlier state: from a snapshot's
//! checkpoint, or (point-in-time restore) from its own live data, hiding every entry
//! written after the time restored to. YugabyteDB's `TabletSnapshots::RestoreCheckpoint`
//! (`tablet/tablet_snapshots.cc`) does it in place: it destroys the RocksDB directory,
//! copies the checkpoint in by hard links, sets the flushed frontier to the restore's
//! entry (`RocksDBPatcher::ModifyFlushedFrontier`) and a hybrid-time filter
//! (`SetHybridTimeFilter(restore_at)`), and reopens. Its own comment says what a power
//! cut between the destruction and the copy does: "TODO: snapshot current DB and try to
//! restore it in case of failure" — the tablet is left with no data (`docs/findings.md`).
//!
//! docsim's rule, crash-atomic at every step: the restored instance is built beside the
//! live one and swapped in by renames, and an interrupted swap is finished when the
//! tablet opens.
//!
//! 1. `<dir>.restore.tmp` gets the source: the checkpoint's files hard-linked (the
//!    simulated disk copies them), or a checkpoint of the live instance after a flush.
//! 2. Opened there, it loses every entry newer than the time restored to (deleted,
//!    where YugabyteDB filters them out at reads and compactions: the same entries
//!    are gone), and gets the tablet's metadata as of that time, the history cutoff at
//!    the restore's own time, and the restore's entry as its flushed frontier, then is
//!    flushed and closed.
//! 3. It is renamed to `<dir>.restore`: from here the restore is decided.
//! 4. The subdirectories of `<dir>` (the tablet's Raft log, which lives there beside
//!    RocksDB's files) move into `<dir>.restore`; `<dir>` is renamed to `<dir>.old`,
//!    `<dir>.restore` to `<dir>`, and `<dir>.old` is removed.
//!
//! A power cut before 3 leaves the old instance and a leftover removed at open; replay
//! applies the restore's entry again. After 3, opening finishes the swap. The flushed
//! frontier being the restore's entry, replay never applies an entry from before it on
//! top of the restored data.

use super::metadata::{
    encode_frontier, CONF_KEY, FRONTIER_KEY, HISTORY_CUTOFF_KEY, META_PREFIX, SNAPSHOT_KEY,
};
use super::snapshots::{Dirs, SNAPSHOT_FILE};
use super::DocDb;
use crate::canary::Plant;
use crate::encoding::SubDocKey;
use crate::error::Result;
use crate::hybrid_time::HybridTime;
use crate::ids::OpId;
use rocksdb::WriteBatch;
use std::path::{Path, PathBuf};

/// What a restore brings back, and the entry that does it.
pub struct RestoreSpec<'a> {
    /// The snapshot's checkpoint directory, or (`None`) the live instance.
    pub checkpoint: Option<&'a Path>,
    /// Every entry newer than this goes.
    pub to: HybridTime,
    /// The restore's entry and its hybrid time: the flushed frontier, and the history
    /// cutoff (reads below it are refused).
    pub op_id: OpId,
    pub ht: HybridTime,
    /// The tablet's metadata keys and values as restored.
    pub meta: Vec<(Vec<u8>, Vec<u8>)>,
}

/// Metadata keys and their values (none: absent).
type OwnRecords = Vec<(&'static [u8], Option<Vec<u8>>)>;

/// `<dir><suffix>`, beside `dir`.
fn beside(dir: &Path, suffix: &str) -> PathBuf {
    let mut name = dir.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn parent(dir: &Path) -> &Path {
    dir.parent().unwrap_or(Path::new(""))
}

impl DocDb {
    /// Restore this instance as `spec` says (the module's essay); it is reopened in place.
    pub fn restore(&mut self, spec: &RestoreSpec<'_>) -> Result<()> {
        let dirs = self.dirs()?;
        if let (Some(checkpoint), true) =
            (spec.checkpoint, self.plants.contains(Plant::YbRestoreDestroysFirst))
        {
            return self.restore_in_place(&dirs, checkpoint, spec);
        }
        let (tmp, staged) = (beside(&self.dir, ".restore.tmp"), beside(&self.dir, ".restore"));
        for leftover in [beside(&tmp, ".tmp"), tmp.clone(), staged.clone()] {
            dirs.remove_all(&leftover)?; // (RocksDB's checkpoint stages in `<dir>.tmp`)
        }
        match spec.checkpoint {
            Some(checkpoint) => link_files(&dirs, checkpoint, &tmp)?,
            None => {
                self.flush()?;
                let checkpoint = rocksdb::checkpoint::Checkpoint::new(self.db())?;
                checkpoint.create_checkpoint_with_log_size(&tmp, u64::MAX)?;
            }
        }
        self.build_restored(&tmp, spec, self.own_records()?)?;
        dirs.sync_dir(&tmp)?;
        dirs.rename(&tmp, &staged)?;
        dirs.sync_dir(parent(&self.dir))?;
        let (dir, rocks, settings) = (self.dir.clone(), self.rocks.clone(), self.settings());
        self.close();
        finish_restore(&dirs, &dir)?;
        *self = DocDb::open_mode(&dir, &rocks, settings, false)?;
        Ok(())
    }

    /// The plant `yb-restore-destroys-first`: YugabyteDB's order, the instance destroyed
    /// before the checkpoint is copied in and patched.
    fn restore_in_place(
        &mut self,
        dirs: &Dirs,
        checkpoint: &Path,
        spec: &RestoreSpec<'_>,
    ) -> Result<()> {
        let (dir, rocks, settings) = (self.dir.clone(), self.rocks.clone(), self.settings());
        let own = self.own_records()?;
        self.close();
        for name in dirs.children(&dir).into_iter().filter(|n| !dirs.is_dir(&dir.join(n))) {
            dirs.remove_all(&dir.join(name))?; // RocksDB's files (the log stays)
        }
        dirs.sync_dir(&dir)?;
        link_files(dirs, checkpoint, &dir)?;
        self.build_restored(&dir, spec, own)?;
        *self = DocDb::open_mode(&dir, &rocks, settings, false)?;
        Ok(())
    }

    /// The checkpoint in `dir` (a snapshot's), opened to read only.
    pub fn open_checkpoint(&self, dir: &Path) -> Result<DocDb> {
        DocDb::open_mode(dir, &self.rocks, self.settings(), true)
    }

    /// Read every entry of the checkpoint in `dir` from its files (through a block cache
    /// of its own): the first damage found, as its error.
    pub fn verify_checkpoint(&self, dir: &Path) -> Result<()> {
        let rocks = self.rocks.with_own_cache();
        DocDb::open_mode(dir, &rocks, self.settings(), true)?.read_everything()
    }

    /// Step 2: the staged copy in `tmp` made what the restore leaves.
    fn build_restored(&self, tmp: &Path, spec: &RestoreSpec<'_>, own: OwnRecords) -> Result<()> {
        let staged = DocDb::open_mode(tmp, &self.rocks, self.settings(), false)?;
        let mut batch = WriteBatch::default();
        staged.for_each_stored(|key, _, _| {
            if key.first() != Some(&META_PREFIX) && written_after(key, spec.to)? {
                batch.delete(key);
            }
            Ok(())
        })?;
        for (key, value) in own {
            match value {
                Some(value) => batch.put(key, value),
                None => batch.delete(key),
            }
        }
        batch.put(HISTORY_CUTOFF_KEY, spec.ht.raw().to_be_bytes());
        if !self.plants.contains(Plant::RestoreLeavesFrontier) {
            batch.put(FRONTIER_KEY, encode_frontier(spec.op_id, spec.ht));
        }
        for (key, value) in &spec.meta {
            assert_eq!(key.first(), Some(&META_PREFIX), "a metadata key");
            batch.put(key, value);
        }
        staged.write_unlogged(batch)?;
        staged.flush()
    }

    /// The replica's own records, which stay as the live instance has them: its Raft
    /// configuration and the last Raft snapshot it installed are not the tablet's data.
    fn own_records(&self) -> Result<OwnRecords> {
        let keys = [CONF_KEY, SNAPSHOT_KEY];
        keys.into_iter().map(|key| Ok((key, self.db().get(key)?))).collect()
    }

    /// Close RocksDB as `Drop` does (the instance is then opened again or replaced).
    fn close(&mut self) {
        let _guard = super::OPEN_CLOSE.lock().unwrap_or_else(|e| e.into_inner());
        self.scan_iter.changed();
        drop(self.db.take());
    }
}

/// Whether the document entry `key` was written after `to`.
fn written_after(key: &[u8], to: HybridTime) -> Result<bool> {
    let decoded = SubDocKey::decode(key).map_err(|e| super::with_key(key, e))?;
    Ok(decoded.doc_ht.ht > to)
}

/// Step 1 for a snapshot: every file of `checkpoint` but its record, linked into `to`.
fn link_files(dirs: &Dirs, checkpoint: &Path, to: &Path) -> Result<()> {
    dirs.make_dir(to)?;
    for name in dirs.children(checkpoint).into_iter().filter(|n| n != SNAPSHOT_FILE) {
        dirs.link(&checkpoint.join(&name), &to.join(&name))?;
    }
    dirs.sync_dir(to)
}

/// Finish or discard a restore a power cut interrupted, before `dir` opens: a complete
/// `<dir>.restore` replaces `dir`; a `<dir>.restore.tmp` and a `<dir>.old` go.
pub(super) fn finish_restore(dirs: &Dirs, dir: &Path) -> Result<()> {
    let (tmp, staged, old) =
        (beside(dir, ".restore.tmp"), beside(dir, ".restore"), beside(dir, ".old"));
    if dirs.exists(&staged) {
        // What the tablet keeps in its directory beside RocksDB's files (its Raft log)
        // moves into the restored one first.
        let beside_files = dirs.children(dir).into_iter().filter(|n| dirs.is_dir(&dir.join(n)));
        for name in beside_files.collect::<Vec<_>>() {
            dirs.rename(&dir.join(&name), &staged.join(&name))?;
            dirs.sync_dir(&staged)?;
            dirs.sync_dir(dir)?;
        }
        if dirs.exists(dir) {
            dirs.remove_all(&old)?;
            dirs.rename(dir, &old)?;
        }
        dirs.rename(&staged, dir)?;
        dirs.sync_dir(parent(dir))?;
    }
    let leftovers = [old, beside(&tmp, ".tmp"), tmp];
    if leftovers.iter().any(|d| dirs.exists(d)) {
        for leftover in &leftovers {
            dirs.remove_all(leftover)?;
        }
        dirs.sync_dir(parent(dir))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::{FaultConfig, SimDisk};

    /// Every state a power cut can leave the swap in opens as the old instance (before
    /// the staged copy is renamed `.restore`) or the restored one (after), the log
    /// beside it either way, and no leftover.
    #[test]
    fn an_interrupted_swap_is_finished_or_discarded_at_open() {
        let disk = SimDisk::new(1, FaultConfig::default());
        let dirs = Dirs::Sim(disk.clone(), "/r/".into());
        let dir = Path::new("/r/db");
        let file = |name: &str| disk.create(name).expect("created");
        let listing = |disk: &SimDisk| disk.list("");
        // Not yet decided: a leftover `.restore.tmp` goes, the old instance stays.
        ["db/OLD.sst", "db/log/wal-1", "db.restore.tmp/NEW.sst"].into_iter().for_each(file);
        finish_restore(&dirs, dir).expect("finished");
        assert_eq!(listing(&disk), ["db/OLD.sst", "db/log/wal-1"]);
        // Decided, nothing swapped yet: the log moves in, the restored copy replaces.
        file("db.restore/NEW.sst");
        finish_restore(&dirs, dir).expect("finished");
        assert_eq!(listing(&disk), ["db/NEW.sst", "db/log/wal-1"]);
        // Decided, the live instance already renamed `.old` (the log moved first).
        disk.rename("db", "db.old").expect("renamed");
        disk.rename("db.old/log", "db.restore/log").expect("renamed");
        file("db.restore/NEWER.sst");
        finish_restore(&dirs, dir).expect("finished");
        assert_eq!(listing(&disk), ["db/NEWER.sst", "db/log/wal-1"]);
    }
}
