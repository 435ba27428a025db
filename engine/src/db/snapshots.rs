//! Snapshots of one tablet replica's RocksDB: checkpoints kept beside it, as YugabyteDB's
//! `TabletSnapshots` keeps them (`tablet/tablet_snapshots.cc`).
//!
//! A snapshot is taken by a Raft entry (`MetaChange::Snapshot`), so every replica takes
//! it at one op id, in `Create`'s order: flush (the engine's own flush, which writes the
//! frontier: RocksDB's checkpoint is then asked not to flush again,
//! `create_checkpoint_with_log_size(.., u64::MAX)`), a checkpoint into `<id>.tmp` in the
//! tablet's snapshots directory `<rocksdb dir>.snapshots`, the snapshot's own record
//! (`SNAPSHOT`: its op id and hybrid time) synced into it, the rename to `<id>`, and a
//! sync of the snapshots directory. A leftover `<id>.tmp` is removed when the tablet
//! opens (`CleanupSnapshotDir`); a snapshot exists exactly when its `<id>` does. An entry
//! replayed after a power cut removes a snapshot of its name and takes it again
//! (YugabyteDB's `Create` does the same): the data it sees is the same.
//!
//! The checkpoint holds the data of every entry before the snapshot's (its frontier says
//! which), read at the snapshot's hybrid time: the snapshot's state.

use super::DocDb;
use crate::canary::Plant;
use crate::error::{Error, Result};
use crate::hybrid_time::HybridTime;
use crate::ids::OpId;
use std::path::{Path, PathBuf};

/// The record a snapshot keeps of itself, in its directory.
pub(super) const SNAPSHOT_FILE: &str = "SNAPSHOT";
const TMP: &str = ".tmp";

/// A snapshot on a replica's storage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotInfo {
    pub id: String,
    /// The entry that took it.
    pub op_id: OpId,
    /// Its hybrid time: reads of it at this time read the snapshot's state.
    pub ht: HybridTime,
    /// The time since which the tablet kept its history when it was taken
    /// (`Tablet::kept_since`): the checkpoint holds the history from there on, so a restore
    /// to a time between it and the snapshot's may start from it.
    pub kept: Option<HybridTime>,
}

/// A snapshot as a Raft snapshot carries it to a replica that lacks it (YugabyteDB's
/// remote bootstrap copies a tablet's snapshot directories with its data): its record,
/// the frontier its checkpoint holds, its documents and its metadata keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointCopy {
    pub info: SnapshotInfo,
    pub frontier: (OpId, HybridTime),
    pub export: super::Export,
    pub metadata: Vec<(Vec<u8>, Vec<u8>)>,
}

/// Where the snapshots a Raft snapshot of entry `op_id` carries are staged.
fn installing_dir(rocksdb_dir: &Path, op_id: OpId) -> PathBuf {
    PathBuf::from(format!("{}.install-{op_id}", snapshots_dir(rocksdb_dir).display()))
}

/// The directory of a tablet's snapshots (YugabyteDB's `SnapshotsDirName`).
pub fn snapshots_dir(rocksdb_dir: &Path) -> PathBuf {
    let mut name = rocksdb_dir.as_os_str().to_owned();
    name.push(".snapshots");
    PathBuf::from(name)
}

impl DocDb {
    /// Take snapshot `id` as the entry `op_id` at `ht` (see the module's essay): the
    /// frontier its flush made durable, if the memtables held an entry.
    pub fn create_snapshot(
        &self,
        id: &str,
        op_id: OpId,
        ht: HybridTime,
        kept: Option<HybridTime>,
    ) -> Result<Option<(OpId, HybridTime)>> {
        let dirs = self.dirs()?;
        let top = snapshots_dir(&self.dir);
        let (done, tmp) = (top.join(id), top.join(format!("{id}{TMP}")));
        dirs.make_dir(&top)?;
        dirs.remove_all(&done)?;
        dirs.remove_all(&tmp)?;
        dirs.sync_dir(&top)?;
        let mut flushed = None;
        if !self.plants.contains(Plant::CheckpointWithoutFlush) {
            flushed = super::lock(&self.unflushed).pending();
            self.flush()?;
        }
        let checkpoint = rocksdb::checkpoint::Checkpoint::new(self.db())?;
        checkpoint.create_checkpoint_with_log_size(&tmp, u64::MAX)?;
        dirs.write_synced(&tmp.join(SNAPSHOT_FILE), record(op_id, ht, kept).as_bytes())?;
        dirs.sync_dir(&tmp)?;
        dirs.rename(&tmp, &done)?;
        dirs.sync_dir(&top)?;
        Ok(flushed)
    }

    /// Delete snapshot `id` (nothing when there is none).
    pub fn delete_snapshot(&self, id: &str) -> Result<()> {
        let dirs = self.dirs()?;
        let top = snapshots_dir(&self.dir);
        // Renamed first: a power cut in the middle leaves a leftover, never half a
        // snapshot under its name.
        let (done, tmp) = (top.join(id), top.join(format!("{id}{TMP}")));
        if dirs.exists(&done) {
            dirs.remove_all(&tmp)?;
            dirs.rename(&done, &tmp)?;
            dirs.remove_all(&tmp)?;
            dirs.sync_dir(&top)?;
        }
        Ok(())
    }

    /// Snapshot `id`'s checkpoint files, each name with its bytes read through the
    /// medium (a backup's export), its own record left out: the backup carries that.
    pub fn snapshot_files(&self, id: &str) -> Result<Vec<(String, Vec<u8>)>> {
        let dirs = self.dirs()?;
        let Some(dir) = self.snapshot_dir(id) else {
            return Err(Error::InvalidRequest(format!("no snapshot {id} here")));
        };
        let mut files = Vec::new();
        for name in dirs.children(&dir).into_iter().filter(|n| n != SNAPSHOT_FILE) {
            let bytes = dirs.read(&dir.join(&name))?;
            files.push((name, bytes));
        }
        Ok(files)
    }

    /// Make `files` (a backup's checkpoint) snapshot `info.id` of this replica, as
    /// [`DocDb::create_snapshot`] makes one: into `<id>.tmp`, the record synced, the
    /// rename, a sync of the snapshots directory. A snapshot of that name is replaced.
    pub fn place_snapshot(&self, info: &SnapshotInfo, files: &[(String, Vec<u8>)]) -> Result<()> {
        let plain = |(name, _): &(String, Vec<u8>)| crate::backup::valid_rocksdb_name(name);
        if !crate::backup::valid_name(&info.id) || !files.iter().all(plain) {
            let why = format!("snapshot {}: a name that is no plain file name", info.id);
            return Err(Error::InvalidRequest(why));
        }
        let dirs = self.dirs()?;
        let top = snapshots_dir(&self.dir);
        let (done, tmp) = (top.join(&info.id), top.join(format!("{}{TMP}", info.id)));
        dirs.make_dir(&top)?;
        dirs.remove_all(&tmp)?;
        dirs.make_dir(&tmp)?;
        for (name, bytes) in files {
            dirs.write_synced(&tmp.join(name), bytes)?;
        }
        let SnapshotInfo { op_id, ht, kept, .. } = info;
        dirs.write_synced(&tmp.join(SNAPSHOT_FILE), record(*op_id, *ht, *kept).as_bytes())?;
        dirs.sync_dir(&tmp)?;
        dirs.remove_all(&done)?;
        dirs.rename(&tmp, &done)?;
        dirs.sync_dir(&top)
    }

    /// The snapshots this replica holds, by id.
    pub fn snapshots(&self) -> Result<Vec<SnapshotInfo>> {
        let Ok(dirs) = self.dirs() else { return Ok(Vec::new()) };
        let top = snapshots_dir(&self.dir);
        let mut out = Vec::new();
        for name in dirs.children(&top).into_iter().filter(|n| !n.ends_with(TMP)) {
            let file = top.join(&name).join(SNAPSHOT_FILE);
            let bytes = dirs.read(&file)?;
            let record = parse_record(&bytes).ok_or_else(|| {
                Error::FileCorruption(format!("{}: not a snapshot record", file.display()))
            })?;
            let (op_id, ht, kept) = record;
            out.push(SnapshotInfo { id: name, op_id, ht, kept });
        }
        Ok(out)
    }

    /// Every snapshot this replica holds, as a Raft snapshot carries it: each checkpoint
    /// opened, then made ready to read by `prepare` (its rows' layout).
    pub fn export_checkpoints(
        &self,
        prepare: impl Fn(&mut DocDb) -> Result<()>,
    ) -> Result<Vec<CheckpointCopy>> {
        let mut out = Vec::new();
        for info in self.snapshots()? {
            let dir = snapshots_dir(&self.dir).join(&info.id);
            let mut checkpoint = self.open_checkpoint(&dir)?;
            prepare(&mut checkpoint)?;
            let frontier = checkpoint.opened_frontier();
            let (export, metadata) = (checkpoint.export()?, checkpoint.metadata_pairs()?);
            out.push(CheckpointCopy {
                info,
                frontier: (frontier.op_id, frontier.ht),
                export,
                metadata,
            });
        }
        Ok(out)
    }

    /// Stage the snapshots a Raft snapshot of entry `op_id` carries, whole, beside this
    /// replica's own (`<snapshots dir>.install-<op>`): they replace them only once the
    /// Raft snapshot's data is durable ([`DocDb::finish_checkpoint_install`]), so a power
    /// cut in between leaves the replica's data and snapshots of one time.
    pub fn install_checkpoints(&self, copies: &[CheckpointCopy], op_id: OpId) -> Result<()> {
        let dirs = match self.dirs() {
            Err(_) if copies.is_empty() => return Ok(()), // a medium without snapshots
            dirs => dirs?,
        };
        let staged = installing_dir(&self.dir, op_id);
        let tmp = PathBuf::from(format!("{}{TMP}", staged.display()));
        dirs.remove_all(&tmp)?;
        dirs.remove_all(&staged)?;
        dirs.make_dir(&tmp)?;
        for copy in copies {
            let dir = tmp.join(&copy.info.id);
            let mut db = DocDb::open_mode(&dir, &self.rocks, self.settings(), false)?;
            let (frontier, ht) = copy.frontier;
            db.install(&copy.export, frontier, ht, &copy.metadata)?;
            drop(db);
            let SnapshotInfo { op_id, ht, kept, .. } = &copy.info;
            dirs.write_synced(&dir.join(SNAPSHOT_FILE), record(*op_id, *ht, *kept).as_bytes())?;
            dirs.sync_dir(&dir)?;
        }
        dirs.sync_dir(&tmp)?;
        dirs.rename(&tmp, &staged)?;
        dirs.sync_dir(self.dir.parent().unwrap_or(Path::new("")))
    }

    /// After a Raft snapshot's data is durable, or at open: staged snapshots of the entry
    /// this instance installed last replace the replica's own; any other staging goes.
    pub fn finish_checkpoint_install(&self) -> Result<()> {
        let Ok(dirs) = self.dirs() else { return Ok(()) };
        let parent = self.dir.parent().unwrap_or(Path::new("")).to_owned();
        let top = snapshots_dir(&self.dir);
        let old = PathBuf::from(format!("{}.old", top.display()));
        let installed = self.installed_snapshot()?.map(|op| installing_dir(&self.dir, op));
        let staged = installed.filter(|staged| dirs.exists(staged));
        if let Some(staged) = &staged {
            dirs.remove_all(&old)?;
            if dirs.exists(&top) {
                dirs.rename(&top, &old)?;
            }
            dirs.rename(staged, &top)?;
        }
        // What is left is stale: another entry's staging, or one a power cut stopped.
        let top_name = top.file_name().map(|n| n.to_string_lossy().into_owned());
        let stale_prefix = format!("{}.install-", top_name.unwrap_or_default());
        let stale: Vec<String> = dirs.children(&parent);
        let stale: Vec<&String> = stale.iter().filter(|n| n.starts_with(&stale_prefix)).collect();
        if staged.is_some() || !stale.is_empty() || dirs.exists(&old) {
            for name in stale {
                dirs.remove_all(&parent.join(name))?;
            }
            dirs.remove_all(&old)?;
            dirs.sync_dir(&parent)?;
        }
        Ok(())
    }

    /// The directory of snapshot `id`, if this replica holds it.
    pub fn snapshot_dir(&self, id: &str) -> Option<PathBuf> {
        let dir = snapshots_dir(&self.dir).join(id);
        self.dirs().ok().filter(|d| d.exists(&dir.join(SNAPSHOT_FILE))).map(|_| dir)
    }

    /// Remove the leftovers of snapshots a power cut interrupted (at open).
    pub(super) fn remove_snapshot_leftovers(&self) -> Result<()> {
        let Ok(dirs) = self.dirs() else { return Ok(()) };
        let top = snapshots_dir(&self.dir);
        let leftovers: Vec<String> =
            dirs.children(&top).into_iter().filter(|n| n.ends_with(TMP)).collect();
        for name in &leftovers {
            dirs.remove_all(&top.join(name))?;
        }
        if !leftovers.is_empty() {
            dirs.sync_dir(&top)?;
        }
        Ok(())
    }

    /// Directory operations on the medium RocksDB's files are on.
    pub(super) fn dirs(&self) -> Result<Dirs> {
        Dirs::of(&self.rocks).ok_or_else(|| {
            Error::InvalidRequest(
                "snapshots need RocksDB's files on the simulated disk or real files".into(),
            )
        })
    }
}

/// A snapshot's record: `op=<term.index> ht=<raw>[ kept=<raw>]`.
fn record(op_id: OpId, ht: HybridTime, kept: Option<HybridTime>) -> String {
    let kept = kept.map(|at| format!(" kept={}", at.raw())).unwrap_or_default();
    format!("op={op_id} ht={}{kept}\n", ht.raw())
}

fn parse_record(bytes: &[u8]) -> Option<(OpId, HybridTime, Option<HybridTime>)> {
    let text = std::str::from_utf8(bytes).ok()?.trim_end();
    let (op, rest) = text.strip_prefix("op=")?.split_once(" ht=")?;
    let (ht, kept) = match rest.split_once(" kept=") {
        Some((ht, kept)) => (ht, Some(HybridTime::from_raw(kept.parse().ok()?))),
        None => (rest, None),
    };
    let (term, index) = op.split_once('.')?;
    let op_id = OpId::new(term.parse().ok()?, index.parse().ok()?);
    Some((op_id, HybridTime::from_raw(ht.parse().ok()?), kept))
}

/// Directory operations beside RocksDB's files: on the node's simulated disk (names
/// relative to its root), or the real file system.
pub(crate) enum Dirs {
    Sim(crate::disk::SimDisk, String),
    Real,
}

impl Dirs {
    /// Directory operations on `rocks`'s medium (none in RocksDB's memory environment).
    pub fn of(rocks: &crate::Rocks) -> Option<Dirs> {
        use super::options::RocksMedium;
        match &rocks.medium {
            RocksMedium::SimDisk(env) => Some(Dirs::Sim(env.disk().clone(), env.root().to_owned())),
            RocksMedium::Memory(_) => None,
            RocksMedium::Files => Some(Dirs::Real),
        }
    }

    fn name(&self, path: &Path) -> String {
        match self {
            Dirs::Sim(_, root) => {
                let path = path.display().to_string();
                if root.strip_suffix('/') == Some(path.as_str()) {
                    return String::new(); // the node's directory itself
                }
                path.strip_prefix(root.as_str()).unwrap_or(&path).to_owned()
            }
            Dirs::Real => path.display().to_string(),
        }
    }

    pub fn exists(&self, path: &Path) -> bool {
        match self {
            Dirs::Sim(disk, _) => disk.kind(&self.name(path)) != crate::disk::Entry::Nothing,
            Dirs::Real => path.exists(),
        }
    }

    /// Whether `path` is a directory.
    pub fn is_dir(&self, path: &Path) -> bool {
        match self {
            Dirs::Sim(disk, _) => disk.kind(&self.name(path)) == crate::disk::Entry::Dir,
            Dirs::Real => path.is_dir(),
        }
    }

    pub fn make_dir(&self, path: &Path) -> Result<()> {
        match self {
            Dirs::Sim(disk, _) => disk.make_dir(&self.name(path)),
            Dirs::Real => std::fs::create_dir_all(path).map_err(|e| io(path, e)),
        }
    }

    /// The names directly in `dir` (none if it does not exist).
    pub fn children(&self, dir: &Path) -> Vec<String> {
        match self {
            Dirs::Sim(disk, _) => disk.children(&self.name(dir)),
            Dirs::Real => {
                let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
                let names = entries.filter_map(|e| e.ok()?.file_name().into_string().ok());
                let mut names: Vec<String> = names.collect();
                names.sort();
                names
            }
        }
    }

    pub fn read(&self, path: &Path) -> Result<Vec<u8>> {
        match self {
            Dirs::Sim(disk, _) => disk.read(&self.name(path)),
            Dirs::Real => std::fs::read(path).map_err(|e| io(path, e)),
        }
    }

    /// Write a new file and sync it (its directory is the caller's to sync).
    pub fn write_synced(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        match self {
            Dirs::Sim(disk, _) => {
                let name = self.name(path);
                disk.create_or_empty(&name)?;
                disk.append(&name, bytes)?;
                disk.sync(&name)
            }
            Dirs::Real => std::fs::write(path, bytes).map_err(|e| io(path, e)),
        }
    }

    /// Hard-link `from` as `to` (the simulated disk copies: `SimDisk::link`).
    pub fn link(&self, from: &Path, to: &Path) -> Result<()> {
        match self {
            Dirs::Sim(disk, _) => numbers_out(disk.link(&self.name(from), &self.name(to))),
            Dirs::Real => std::fs::hard_link(from, to).map_err(|e| io(to, e)),
        }
    }

    pub fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        match self {
            Dirs::Sim(disk, _) => numbers_out(disk.rename(&self.name(from), &self.name(to))),
            Dirs::Real => std::fs::rename(from, to).map_err(|e| io(from, e)),
        }
    }

    pub fn sync_dir(&self, dir: &Path) -> Result<()> {
        match self {
            Dirs::Sim(disk, _) => disk.sync_dir(&self.name(dir)),
            Dirs::Real => Ok(()), // the real file system's durability is not simulated
        }
    }

    /// Remove `path` and everything below it (nothing if it does not exist).
    pub fn remove_all(&self, path: &Path) -> Result<()> {
        match self {
            Dirs::Sim(disk, _) => {
                let name = self.name(path);
                let files = disk.list(&format!("{name}/"));
                let mut parents = std::collections::BTreeSet::new();
                for file in &files {
                    numbers_out(disk.remove(file))?;
                    // Its directory and every one between it and `name`.
                    let mut dir = file.as_str();
                    while let Some((up, _)) = dir.rsplit_once('/') {
                        parents.insert(up.to_owned());
                        if up.len() <= name.len() {
                            break;
                        }
                        dir = up;
                    }
                }
                // The removals durable before the directories go (which is durable at
                // once): a power cut never brings back files of a removed directory.
                for dir in parents.iter().rev() {
                    disk.sync_dir(dir)?;
                }
                // Then the directories below it, deepest first (a path sorts before the
                // paths it is a prefix of).
                let below = format!("{name}/");
                for dir in parents.iter().rev().filter(|d| d.starts_with(&below)) {
                    if disk.kind(dir) == crate::disk::Entry::Dir {
                        disk.remove_dir(dir)?;
                    }
                }
                match disk.kind(&name) {
                    crate::disk::Entry::File => disk.remove(&name),
                    crate::disk::Entry::Dir => disk.remove_dir(&name),
                    crate::disk::Entry::Nothing => Ok(()),
                }
            }
            Dirs::Real if path.is_dir() => std::fs::remove_dir_all(path).map_err(|e| io(path, e)),
            Dirs::Real if path.exists() => std::fs::remove_file(path).map_err(|e| io(path, e)),
            Dirs::Real => Ok(()),
        }
    }
}

/// A disk error without RocksDB's file numbers in the names it gives (checkpoints hold
/// RocksDB's files: `crate::error::without_file_numbers`).
fn numbers_out<T>(result: Result<T>) -> Result<T> {
    result.map_err(|e| match e {
        Error::Io(message) => Error::Io(crate::error::without_file_numbers(&message)),
        other => other,
    })
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::Io(format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canary::Plants;
    use crate::disk::{FaultConfig, SimDisk, Tear};
    use crate::{Rocks, StorageConfig};

    /// A snapshot survives a power cut whole; a leftover `.tmp` (a snapshot the power cut
    /// short) is gone when the tablet opens again; a deleted one stays deleted.
    #[test]
    fn snapshots_are_whole_or_absent_across_power_cuts() {
        let root = crate::tests::scratch_dir("snapshots");
        let disk = SimDisk::new(3, FaultConfig::default());
        let rocks = Rocks::on_sim_disk(disk.clone(), &root, Plants::NONE, 1 << 20);
        let open = || DocDb::open_in(&root.join("db"), &rocks, Plants::NONE, Default::default());
        let db = open().expect("open");
        let (op, ht) = (OpId::new(1, 5), HybridTime::from_micros(1000));
        db.write_metadata(&[], OpId::new(1, 4), ht).expect("a frontier");
        assert_eq!(db.create_snapshot("a", op, ht, None).expect("a"), Some((OpId::new(1, 4), ht)));
        db.create_snapshot("b", OpId::new(1, 6), ht, None).expect("b");
        db.delete_snapshot("b").expect("delete b");
        disk.create("db.snapshots/c.tmp/000009.sst").expect("a leftover");
        disk.sync_dir("db.snapshots/c.tmp").expect("durable");
        drop(db);
        disk.crash(Tear::None);
        let db = open().expect("reopen");
        let ids: Vec<String> = db.snapshots().expect("list").into_iter().map(|s| s.id).collect();
        assert_eq!(ids, ["a"]);
        assert_eq!(db.snapshots().expect("list")[0].op_id, op);
        assert!(disk.list("db.snapshots/c.tmp").is_empty(), "{:?}", disk.list("db.snapshots"));
        let storage = StorageConfig::default();
        let dir = db.snapshot_dir("a").expect("a's directory");
        let snapshot = DocDb::open_read_only(&dir, &rocks, Plants::NONE, storage).expect("open a");
        assert_eq!(snapshot.opened_frontier().op_id, OpId::new(1, 4));
    }

    /// A directory of directories goes whole (a staged set of snapshots is one).
    #[test]
    fn remove_all_takes_nested_directories() {
        let disk = SimDisk::new(1, FaultConfig::default());
        let dirs = Dirs::Sim(disk.clone(), "/r/".into());
        for dir in ["top", "top/a", "top/a/b", "other"] {
            disk.make_dir(dir).expect("made");
        }
        for name in ["top/a/b/f", "top/a/g", "top/c", "other/h"] {
            disk.create(name).expect("created");
        }
        dirs.remove_all(Path::new("/r/top")).expect("removed");
        assert_eq!(disk.list(""), ["other/h"]);
        assert_eq!(disk.kind("top"), crate::disk::Entry::Nothing);
    }

    #[test]
    fn a_snapshot_record_reads_back_and_names_its_entry() {
        let text = format!("op=2.17 ht={}\n", HybridTime::new(1000, 3).raw());
        let want = (OpId::new(2, 17), HybridTime::new(1000, 3), None);
        assert_eq!(parse_record(text.as_bytes()), Some(want));
        let kept = format!("op=2.17 ht=5 kept={}\n", HybridTime::new(4, 0).raw());
        let want = (OpId::new(2, 17), HybridTime::from_raw(5), Some(HybridTime::new(4, 0)));
        assert_eq!(parse_record(kept.as_bytes()), Some(want));
        assert_eq!(parse_record(b"op=2.17 ht=5 kept=x"), None);
        assert_eq!(parse_record(b"op=2 ht=5"), None);
        assert_eq!(parse_record(b"garbage"), None);
    }
}
