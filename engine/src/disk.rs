//! A simulated disk for a node's files (the Raft logs, and RocksDB's files through
//! `simfs.rs`), deterministic and seeded.
//!
//! The model is the one a careful storage engineer assumes of a real disk with a volatile
//! write cache:
//!
//! - An append lands in the cache: readers see it at once, but it is **volatile** until
//!   `sync` of that file. A new file's name, and a removal, are volatile until `sync_dir`
//!   of its directory.
//! - A **crash** drops everything volatile: unsynced appends vanish, files created since
//!   the last directory sync vanish, files removed since then come back (with their synced
//!   contents). The last unsynced write of a file may instead be **torn** at sector
//!   granularity: a prefix of whole 512-byte sectors of it reached the platter (or all of
//!   it did, unsynced).
//! - Optional **bit flips** in durable data at crash time, and injected **I/O errors** on
//!   append and sync, and a **capacity** (disk full). Every injected fault is written to the
//!   [`Fault`] ledger, so a checker can tell injected corruption from a bug.
//!
//! Decisions come from one `ChaCha8` stream seeded by the owner, so a seed replays exactly.
//! The handle is cheap to clone; clones share one disk (as the tablets of a node share one
//! drive).

use crate::error::{Error, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

/// Tearing granularity.
pub const SECTOR_BYTES: usize = 512;

/// Fault rates of a disk. Percentages and per-mille values are chances per event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FaultConfig {
    /// At a crash, the chance (in %) that a file's unsynced tail keeps a torn prefix.
    pub torn_write_percent: u32,
    /// At a crash, the chance (in %) that one bit of durable data flips.
    pub bit_flip_percent: u32,
    /// Per append, the chance (in ‰) of an I/O error.
    pub write_error_per_mille: u32,
    /// Per sync, the chance (in ‰) of an I/O error.
    pub sync_error_per_mille: u32,
    /// Bytes the disk holds; `None` is unlimited.
    pub capacity_bytes: Option<u64>,
}

/// An injected fault, as the ledger records it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Fault {
    /// A crash kept `kept_bytes` of `unsynced_bytes` unsynced bytes at the end of `file`
    /// (all of them when the tear fell past the tail's last sector boundary).
    Torn { file: String, kept_bytes: usize, unsynced_bytes: usize },
    /// A crash flipped bit `bit` of byte `offset` of `file` (durable data).
    BitFlip { file: String, offset: usize, bit: u8 },
    /// An append to `file` failed.
    WriteError { file: String },
    /// A sync of `file` failed; its unsynced data stays volatile.
    SyncError { file: String },
    /// An append to `file` did not fit.
    DiskFull { file: String },
    /// Every file directly in `dir` (`files` of them) was lost for good.
    Lost { dir: String, files: usize },
}

impl Fault {
    /// The file the fault hit (the directory, for lost files).
    pub fn file(&self) -> &str {
        match self {
            Fault::Torn { file, .. }
            | Fault::BitFlip { file, .. }
            | Fault::WriteError { file }
            | Fault::SyncError { file }
            | Fault::DiskFull { file } => file,
            Fault::Lost { dir, .. } => dir,
        }
    }

    /// The kind name with what the file is: `write-error` (a log file), `write-error.sst`,
    /// `write-error.manifest`, `torn-write.rocksdb` (another of RocksDB's files).
    pub fn kind_by_file(&self) -> String {
        let file = self.file().rsplit('/').next().unwrap_or_default();
        let suffix = match file {
            _ if matches!(self, Fault::Lost { .. }) => "",
            f if f.ends_with(".sst") => ".sst",
            f if f.starts_with("MANIFEST-") => ".manifest",
            f if is_rocksdb_file(f) => ".rocksdb",
            _ => "",
        };
        format!("{}{suffix}", self.kind())
    }

    /// The short kind name reports group faults by.
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Torn { .. } => "torn-write",
            Fault::BitFlip { .. } => "bit-flip",
            Fault::WriteError { .. } => "write-error",
            Fault::SyncError { .. } => "sync-error",
            Fault::DiskFull { .. } => "disk-full",
            Fault::Lost { .. } => "lost-files",
        }
    }
}

/// How a crash treats unsynced data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tear {
    /// Decide by the configured chance.
    Random,
    /// Keep no unsynced byte.
    None,
    /// Keep the unsynced tail up to its `k`-th sector boundary (0: the first past the
    /// synced length); when the tail has no `k`-th boundary inside it, keep all of it (the
    /// write reached the platter whole, though never synced). docscript `crash torn` is
    /// `Sector(0)`, `crash torn=k` is `Sector(k)`.
    Sector(u32),
}

/// Which disk operation an armed I/O error fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum IoTarget {
    /// The next append to a file of the engine's own (a Raft log segment or sync mark:
    /// not one of RocksDB's, [`is_rocksdb_file`]).
    NextAppend,
    /// The next sync of a Raft log file.
    NextSync,
    /// The next append to one of RocksDB's SST files.
    NextSstWrite,
    /// The next sync of one of RocksDB's SST files.
    NextSstSync,
    /// The next append to one of RocksDB's MANIFEST files.
    NextManifestWrite,
}

impl IoTarget {
    pub const ALL: [IoTarget; 5] = [
        IoTarget::NextAppend,
        IoTarget::NextSync,
        IoTarget::NextSstWrite,
        IoTarget::NextSstSync,
        IoTarget::NextManifestWrite,
    ];

    /// The docscript name (`fault io-error <name>`).
    pub fn name(self) -> &'static str {
        match self {
            IoTarget::NextAppend => "next-append",
            IoTarget::NextSync => "next-sync",
            IoTarget::NextSstWrite => "next-sst-write",
            IoTarget::NextSstSync => "next-sst-sync",
            IoTarget::NextManifestWrite => "next-manifest-write",
        }
    }

    /// Whether this armed error fails an operation `op` (an append or a sync target) on
    /// file `name`.
    fn matches(self, op: IoTarget, name: &str) -> bool {
        let file = name.rsplit('/').next().unwrap_or(name);
        match self {
            IoTarget::NextAppend | IoTarget::NextSync => self == op && !is_rocksdb_file(file),
            IoTarget::NextSstWrite => op == IoTarget::NextAppend && file.ends_with(".sst"),
            IoTarget::NextSstSync => op == IoTarget::NextSync && file.ends_with(".sst"),
            IoTarget::NextManifestWrite => {
                op == IoTarget::NextAppend && file.starts_with("MANIFEST-")
            }
        }
    }
}

/// A mutating operation on the disk, as the journal of an armed cut records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum OpKind {
    Create,
    Append,
    Sync,
    SyncDir,
    Remove,
    Rename,
    Link,
    Truncate,
    MakeDir,
}

impl OpKind {
    /// The name traces and reproducers use.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Create => "create",
            OpKind::Append => "append",
            OpKind::Sync => "sync",
            OpKind::SyncDir => "sync-dir",
            OpKind::Remove => "remove",
            OpKind::Rename => "rename",
            OpKind::Link => "link",
            OpKind::Truncate => "truncate",
            OpKind::MakeDir => "make-dir",
        }
    }
}

/// One operation a journal holds: its kind, the file (for a rename or a link, the new
/// name) and the file's length before and after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskOp {
    pub kind: OpKind,
    pub file: String,
    pub len_before: usize,
    pub len_after: usize,
}

/// A power cut armed to fall after a number of mutating operations
/// ([`SimDisk::arm_cut`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ArmedCut {
    after_ops: u32,
    seen_ops: u32,
}

#[derive(Clone, Debug, Default)]
struct File {
    data: Vec<u8>,
    /// `data[..synced_len]` survives a crash.
    synced_len: usize,
}

struct DiskState {
    files: BTreeMap<String, File>,
    /// Names whose directory entry is durable.
    durable_names: BTreeSet<String>,
    /// Removed files whose removal is not durable yet (they come back at a crash).
    removed: BTreeMap<String, File>,
    rng: ChaCha8Rng,
    config: FaultConfig,
    ledger: Vec<Fault>,
    /// An armed, one-shot I/O error (see [`SimDisk::arm_io_error`]).
    armed: Option<IoTarget>,
    /// Directories made explicitly (a directory also exists while a name lies in it).
    /// Durable once made: a rule of docsim's own (its owners make them at creation and
    /// never depend on one vanishing).
    dirs: BTreeSet<String>,
    /// A power cut armed for the k-th operation ([`SimDisk::arm_cut`]).
    cut: Option<ArmedCut>,
    /// The operations since [`SimDisk::begin_journal`], while it is on.
    journal: Option<Vec<DiskOp>>,
    /// The cut fell: every operation fails until the crash.
    power_off: bool,
}

/// A shared handle on one simulated disk.
#[derive(Clone)]
pub struct SimDisk(Arc<Mutex<DiskState>>);

impl SimDisk {
    /// An empty disk whose fault decisions come from `seed`.
    pub fn new(seed: u64, config: FaultConfig) -> SimDisk {
        SimDisk(Arc::new(Mutex::new(DiskState {
            files: BTreeMap::new(),
            durable_names: BTreeSet::new(),
            removed: BTreeMap::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            config,
            ledger: Vec::new(),
            armed: None,
            dirs: BTreeSet::new(),
            cut: None,
            journal: None,
            power_off: false,
        })))
    }

    fn state(&self) -> MutexGuard<'_, DiskState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Create an empty file (volatile until [`SimDisk::sync_dir`] of its directory).
    pub fn create(&self, name: &str) -> Result<()> {
        let mut s = self.state();
        let before = s.powered(OpKind::Create, name)?;
        if s.files.contains_key(name) {
            return Err(Error::Io(format!("cannot create {name}: it exists")));
        }
        s.files.insert(name.to_owned(), File::default());
        s.done(OpKind::Create, name, before);
        Ok(())
    }

    /// Create `name` empty, or empty it if it exists (durably at once, as
    /// [`SimDisk::truncate`]): a file opened for writing from its start.
    pub fn create_or_empty(&self, name: &str) -> Result<()> {
        let mut s = self.state();
        let before = s.powered(OpKind::Create, name)?;
        let file = s.files.entry(name.to_owned()).or_default();
        (file.data, file.synced_len) = (Vec::new(), 0);
        s.done(OpKind::Create, name, before);
        Ok(())
    }

    /// Append `bytes` to `name` (volatile until [`SimDisk::sync`]).
    pub fn append(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let mut s = self.state();
        let before = s.powered(OpKind::Append, name)?;
        if !s.files.contains_key(name) {
            return Err(Error::Io(format!("cannot append to {name}: no such file")));
        }
        let chance = s.config.write_error_per_mille;
        if s.io_error(IoTarget::NextAppend, name, chance) {
            s.ledger.push(Fault::WriteError { file: name.to_owned() });
            return Err(Error::Io(format!("I/O error writing {name} (injected)")));
        }
        if let Some(capacity) = s.config.capacity_bytes {
            if s.used_bytes() + bytes.len() as u64 > capacity {
                s.ledger.push(Fault::DiskFull { file: name.to_owned() });
                let (file, bytes) = (name.to_owned(), bytes.len());
                return Err(Error::DiskFull { file, bytes, capacity });
            }
        }
        s.files.get_mut(name).expect("checked above").data.extend_from_slice(bytes);
        s.done(OpKind::Append, name, before);
        Ok(())
    }

    /// Make `name`'s contents durable.
    pub fn sync(&self, name: &str) -> Result<()> {
        let mut s = self.state();
        let before = s.powered(OpKind::Sync, name)?;
        let chance = s.config.sync_error_per_mille;
        if s.io_error(IoTarget::NextSync, name, chance) {
            s.ledger.push(Fault::SyncError { file: name.to_owned() });
            return Err(Error::Io(format!("I/O error syncing {name} (injected)")));
        }
        let file = s.files.get_mut(name);
        let file = file.ok_or_else(|| Error::Io(format!("cannot sync {name}: no such file")))?;
        file.synced_len = file.data.len();
        s.done(OpKind::Sync, name, before);
        Ok(())
    }

    /// Make every creation and removal so far in directory `dir` durable (its own entries:
    /// `dir/name`, not those of a directory inside it; `""` is the top directory), as a
    /// directory's fsync does. Other directories' entries stay as they were: each owner
    /// syncs its own.
    pub fn sync_dir(&self, dir: &str) -> Result<()> {
        let mut s = self.state();
        let before = s.powered(OpKind::SyncDir, dir)?;
        let in_dir = |name: &str| parent(name) == dir;
        let present: Vec<String> = s.files.keys().filter(|n| in_dir(n)).cloned().collect();
        s.durable_names.retain(|name| !in_dir(name));
        s.durable_names.extend(present);
        s.removed.retain(|name, _| !in_dir(name));
        s.done(OpKind::SyncDir, dir, before);
        Ok(())
    }

    /// Remove `name` (the removal is volatile until [`SimDisk::sync_dir`] of its directory).
    pub fn remove(&self, name: &str) -> Result<()> {
        let mut s = self.state();
        let before = s.powered(OpKind::Remove, name)?;
        let file = s.files.remove(name);
        let file = file.ok_or_else(|| Error::Io(format!("cannot remove {name}: no such file")))?;
        s.unlinked(name, file);
        s.done(OpKind::Remove, name, before);
        Ok(())
    }

    /// Rename `from` to `to`, replacing `to` if it exists. Both names change volatilely
    /// until their directories are synced: a crash before that brings back `to`'s old
    /// file (if its name was durable) and `from` (if its name was). A directory `from`
    /// moves with everything in it, durably at once: a rule of docsim's own, as for making
    /// a directory, and a simplification (POSIX wants the parent synced; RocksDB's
    /// checkpoint syncs only the checkpoint directory itself, so a snapshot that must
    /// survive a power cut syncs the parent as YugabyteDB's does, issue 43).
    pub fn rename(&self, from: &str, to: &str) -> Result<()> {
        let mut s = self.state();
        let before = s.powered(OpKind::Rename, to)?;
        if !s.files.contains_key(from) && !s.children(from).is_empty() || s.dirs.contains(from) {
            s.rename_dir(from, to)?;
            s.done(OpKind::Rename, to, before);
            return Ok(());
        }
        let file = s.files.remove(from);
        let file = file.ok_or_else(|| Error::Io(format!("cannot rename {from}: no such file")))?;
        s.unlinked(from, file.clone());
        if let Some(old) = s.files.remove(to) {
            s.unlinked(to, old);
        }
        s.files.insert(to.to_owned(), file);
        s.done(OpKind::Rename, to, before);
        Ok(())
    }

    /// A second name `to` for `from`'s contents (volatile until `to`'s directory is
    /// synced). The new name holds a copy: docsim links only files that are never written
    /// again (RocksDB's SST files), so a copy and a shared inode read alike (a rule of
    /// docsim's own).
    pub fn link(&self, from: &str, to: &str) -> Result<()> {
        let mut s = self.state();
        let before = s.powered(OpKind::Link, to)?;
        if s.files.contains_key(to) {
            return Err(Error::Io(format!("cannot link {to}: it exists")));
        }
        let file = s.files.get(from).cloned();
        let file = file.ok_or_else(|| Error::Io(format!("cannot link {from}: no such file")))?;
        s.files.insert(to.to_owned(), file);
        s.done(OpKind::Link, to, before);
        Ok(())
    }

    /// Make directory `name` (durable at once, see `DiskState::dirs`).
    pub fn make_dir(&self, name: &str) -> Result<()> {
        let mut s = self.state();
        let before = s.powered(OpKind::MakeDir, name)?;
        s.dirs.insert(name.to_owned());
        s.done(OpKind::MakeDir, name, before);
        Ok(())
    }

    /// Remove the empty directory `name` (durably at once, as making one is).
    pub fn remove_dir(&self, name: &str) -> Result<()> {
        let mut s = self.state();
        let before = s.powered(OpKind::Remove, name)?;
        if !s.children(name).is_empty() {
            return Err(Error::Io(format!("cannot remove directory {name}: not empty")));
        }
        s.dirs.remove(name);
        s.done(OpKind::Remove, name, before);
        Ok(())
    }

    /// What `name` is: a file, a directory (made, or holding a name), or nothing.
    pub fn kind(&self, name: &str) -> Entry {
        let s = self.state();
        if s.files.contains_key(name) {
            Entry::File
        } else if name.is_empty() || s.dirs.contains(name) || !s.children(name).is_empty() {
            Entry::Dir
        } else {
            Entry::Nothing
        }
    }

    /// The names directly in directory `dir` (files and directories), in order.
    pub fn children(&self, dir: &str) -> Vec<String> {
        self.state().children(dir).into_iter().collect()
    }

    /// Cut `name` to `len` bytes, durably at once (the synced length shrinks with it).
    pub fn truncate(&self, name: &str, len: usize) -> Result<()> {
        let mut s = self.state();
        let before = s.powered(OpKind::Truncate, name)?;
        let file = s.files.get_mut(name);
        let file =
            file.ok_or_else(|| Error::Io(format!("cannot truncate {name}: no such file")))?;
        file.data.truncate(len);
        file.synced_len = file.synced_len.min(len);
        s.done(OpKind::Truncate, name, before);
        Ok(())
    }

    /// Copy bytes of `name` from `offset` into `buf` (volatile data included); how many
    /// (fewer than `buf` holds only at the file's end).
    pub fn read_at(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let s = self.state();
        if s.power_off {
            return Err(Error::Io(format!("cannot read {name}: the power is off")));
        }
        let file = s.files.get(name);
        let file = file.ok_or_else(|| Error::Io(format!("cannot read {name}: no such file")))?;
        let from = (offset as usize).min(file.data.len());
        let n = buf.len().min(file.data.len() - from);
        buf[..n].copy_from_slice(&file.data[from..from + n]);
        Ok(n)
    }

    /// The length of `name` (volatile data included; `None`: no such file).
    pub fn len(&self, name: &str) -> Option<usize> {
        self.state().files.get(name).map(|f| f.data.len())
    }

    /// Cut the power right after the `after_ops`-th mutating operation from now (a
    /// create, append, sync, directory sync, removal, rename, link, truncation or new
    /// directory, of any file): that operation completes, and every operation after it
    /// fails as on a machine without power, until [`SimDisk::crash`].
    pub fn arm_cut(&self, after_ops: u32) {
        self.state().cut = Some(ArmedCut { after_ops, seen_ops: 0 });
    }

    /// Disarm the armed cut (if it has not fallen, it never will).
    pub fn disarm_cut(&self) {
        self.state().cut = None;
    }

    /// Journal every mutating operation from now until [`SimDisk::end_journal`].
    pub fn begin_journal(&self) {
        self.state().journal = Some(Vec::new());
    }

    /// The operations since [`SimDisk::begin_journal`]; journaling stops.
    pub fn end_journal(&self) -> Vec<DiskOp> {
        self.state().journal.take().unwrap_or_default()
    }

    /// Whether an armed cut fell (the power is off until the crash).
    pub fn cut_fired(&self) -> bool {
        self.state().power_off
    }

    /// The current contents of `name` (volatile data included, as a reader sees it).
    pub fn read(&self, name: &str) -> Result<Vec<u8>> {
        let s = self.state();
        let file = s.files.get(name);
        Ok(file.ok_or_else(|| Error::Io(format!("cannot read {name}: no such file")))?.data.clone())
    }

    /// The names starting with `prefix`, in order.
    pub fn list(&self, prefix: &str) -> Vec<String> {
        let s = self.state();
        s.files.keys().filter(|name| name.starts_with(prefix)).cloned().collect()
    }

    /// Power loss: drop everything volatile (see the module essay).
    pub fn crash(&self, tear: Tear) {
        let mut s = self.state();
        s.power_off = false;
        let removed = std::mem::take(&mut s.removed);
        s.files.extend(removed);
        let durable = s.durable_names.clone();
        s.files.retain(|name, _| durable.contains(name));
        let names: Vec<String> = s.files.keys().cloned().collect();
        for name in &names {
            s.crash_file(name, tear);
        }
        let chance = s.config.bit_flip_percent;
        if chance > 0 && s.rng.random_range(0..100) < chance {
            s.flip_one_bit(&names);
        }
    }

    /// Bytes the files hold now (volatile data included), as a full disk counts them.
    pub fn used_bytes(&self) -> u64 {
        self.state().used_bytes()
    }

    /// Every fault injected so far, in order.
    pub fn ledger(&self) -> Vec<Fault> {
        self.state().ledger.clone()
    }

    /// The faults injected since the ledger held `from` of them.
    pub fn ledger_since(&self, from: usize) -> Vec<Fault> {
        let s = self.state();
        s.ledger.get(from..).unwrap_or_default().to_vec()
    }

    /// How many faults were injected so far (the ledger's length).
    pub fn ledger_len(&self) -> usize {
        self.state().ledger.len()
    }

    /// Change the fault rates (e.g. none while a checker reads back).
    pub fn set_faults(&self, config: FaultConfig) {
        self.state().config = config;
    }

    /// Arm an I/O error for the next append or the next sync (one shot; docscript
    /// `fault io-error next-append|next-sync`).
    pub fn arm_io_error(&self, target: IoTarget) {
        self.state().armed = Some(target);
    }

    /// Leave `free_bytes` of space: the capacity becomes what the files hold now plus
    /// that (docscript `fault disk-full <bytes>`). `None` lifts the limit.
    pub fn set_free_bytes(&self, free_bytes: Option<u64>) {
        let mut s = self.state();
        s.config.capacity_bytes = free_bytes.map(|free| s.used_bytes() + free);
    }

    /// Disarm an armed I/O error and lift the capacity (docscript `fault clear`).
    pub fn clear_faults(&self) {
        let mut s = self.state();
        s.armed = None;
        s.config.capacity_bytes = None;
    }

    /// Flip bit `bit` of byte `offset` of `name`, which must lie in its synced data (data
    /// rotting on the platter; docscript `fault flip <file> <offset> bit=<b>`).
    pub fn flip(&self, name: &str, offset: usize, bit: u8) -> Result<()> {
        let mut s = self.state();
        let file = s.files.get_mut(name);
        let file = file.ok_or_else(|| Error::Io(format!("cannot flip {name}: no such file")))?;
        if offset >= file.synced_len || bit > 7 {
            let synced = file.synced_len;
            let why = format!("byte {offset} bit {bit} is not synced data ({synced} bytes are)");
            return Err(Error::Io(format!("cannot flip {name}: {why}")));
        }
        file.data[offset] ^= 1 << bit;
        s.ledger.push(Fault::BitFlip { file: name.to_owned(), offset, bit });
        Ok(())
    }

    /// The disk name `name` stands for: `<dir>/sst:<i>` is the `i`-th SST file in `dir`
    /// (from 0, oldest first: RocksDB numbers its files in order), so a trace names an
    /// SST file without the number RocksDB chose; any other name is itself. `None`: no
    /// such SST file.
    pub fn resolve(&self, name: &str) -> Option<String> {
        let Some((dir, index)) = name.rsplit_once("/sst:") else {
            return Some(name.to_owned());
        };
        let index: usize = index.parse().ok()?;
        let ssts = self.children(dir).into_iter().filter(|f| f.ends_with(".sst"));
        ssts.into_iter().nth(index).map(|file| format!("{dir}/{file}"))
    }

    /// Lose every file directly in directory `dir` for good (not those in a directory
    /// inside it): a data volume lost or reformatted (docscript `fault lose-rocksdb`).
    pub fn lose_files(&self, dir: &str) -> Result<()> {
        let mut s = self.state();
        let lost: Vec<String> = s.files.keys().filter(|n| parent(n) == dir).cloned().collect();
        if lost.is_empty() {
            return Err(Error::Io(format!("cannot lose the files of {dir}: it holds none")));
        }
        for name in &lost {
            s.files.remove(name);
            s.removed.remove(name);
            s.durable_names.remove(name);
        }
        s.ledger.push(Fault::Lost { dir: dir.to_owned(), files: lost.len() });
        Ok(())
    }

    /// Whether a crash now would keep `name` as it is: its bytes synced and its name
    /// durable.
    pub fn durable(&self, name: &str) -> bool {
        let s = self.state();
        let synced = s.files.get(name).is_some_and(|f| f.synced_len == f.data.len());
        synced && s.durable_names.contains(name)
    }

    /// How many bytes of `name` are durable (`None`: no such file).
    pub fn synced_len(&self, name: &str) -> Option<usize> {
        self.state().files.get(name).map(|f| f.synced_len)
    }
}

/// Whether `file` (a name without its directory) is one RocksDB names: an SST file, a
/// MANIFEST, `CURRENT`, an OPTIONS file, `IDENTITY`, `LOCK`, a temporary `.dbtmp` file or
/// a RocksDB WAL (`.log`, which docsim never writes).
pub fn is_rocksdb_file(file: &str) -> bool {
    let suffixes = [".sst", ".dbtmp", ".log"];
    let prefixes = ["MANIFEST-", "OPTIONS-"];
    let names = ["CURRENT", "IDENTITY", "LOCK", "LOG"];
    suffixes.iter().any(|s| file.ends_with(s))
        || prefixes.iter().any(|p| file.starts_with(p))
        || names.contains(&file)
}

/// The directory `name` lies in (`""`: the top one).
fn parent(name: &str) -> &str {
    name.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// What a name on the disk is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    Nothing,
    File,
    Dir,
}

impl DiskState {
    /// An operation of `kind` on `name` may run: the power is on. The length of `name`
    /// before it, for the journal (0 when nothing is journaled, or no such file).
    fn powered(&self, kind: OpKind, name: &str) -> Result<usize> {
        if self.power_off {
            return Err(Error::Io(format!("cannot {} {name}: the power is off", kind.name())));
        }
        let journaled = self.journal.is_some();
        Ok(self.files.get(name).filter(|_| journaled).map_or(0, |f| f.data.len()))
    }

    /// An operation of `kind` on `name` completed: the journal records it, and an armed
    /// cut falls if it was the one.
    fn done(&mut self, kind: OpKind, name: &str, len_before: usize) {
        if let Some(journal) = self.journal.as_mut() {
            let len_after = self.files.get(name).map_or(0, |f| f.data.len());
            journal.push(DiskOp { kind, file: name.to_owned(), len_before, len_after });
        }
        let Some(cut) = self.cut.as_mut() else { return };
        cut.seen_ops += 1;
        if cut.seen_ops == cut.after_ops {
            self.cut = None;
            self.power_off = true;
        }
    }

    /// `name` no longer names `file`: if its name was durable, a crash brings it back
    /// (the first such file: what the platter holds).
    fn unlinked(&mut self, name: &str, file: File) {
        if self.durable_names.contains(name) && !self.removed.contains_key(name) {
            self.removed.insert(name.to_owned(), file);
        }
    }

    /// Move directory `from` and everything in it to `to` (which must not exist), names
    /// keeping whether they are durable.
    fn rename_dir(&mut self, from: &str, to: &str) -> Result<()> {
        let exists = self.files.contains_key(to) || self.dirs.contains(to);
        if exists || !self.children(to).is_empty() {
            return Err(Error::Io(format!("cannot rename {from} to {to}: it exists")));
        }
        let moved = |name: &str| {
            let rest = name.strip_prefix(from).filter(|r| r.is_empty() || r.starts_with('/'));
            rest.map(|rest| format!("{to}{rest}"))
        };
        let rename_keys = |names: Vec<String>| -> Vec<(String, String)> {
            names.into_iter().filter_map(|n| moved(&n).map(|m| (n, m))).collect()
        };
        for (old, new) in rename_keys(self.files.keys().cloned().collect()) {
            let file = self.files.remove(&old).expect("listed");
            self.files.insert(new.clone(), file);
            if self.durable_names.remove(&old) {
                self.durable_names.insert(new);
            }
        }
        for (old, new) in rename_keys(self.dirs.iter().cloned().collect()) {
            self.dirs.remove(&old);
            self.dirs.insert(new);
        }
        for (old, new) in rename_keys(self.removed.keys().cloned().collect()) {
            let file = self.removed.remove(&old).expect("listed");
            if self.durable_names.remove(&old) {
                self.durable_names.insert(new.clone());
            }
            self.removed.insert(new, file);
        }
        Ok(())
    }

    /// The names directly in directory `dir`.
    fn children(&self, dir: &str) -> BTreeSet<String> {
        let names = self.files.keys().chain(self.dirs.iter());
        let below = names.filter_map(|name| match dir {
            "" => Some(name.as_str()),
            _ => name.strip_prefix(dir).and_then(|rest| rest.strip_prefix('/')),
        });
        below.map(|rest| rest.split('/').next().unwrap_or(rest).to_owned()).collect()
    }

    /// Whether this `target` operation on `name` fails: an armed error for it fires
    /// (once), else the random chance (in ‰) decides.
    fn io_error(&mut self, target: IoTarget, name: &str, chance_per_mille: u32) -> bool {
        let armed = self.armed.filter(|armed| armed.matches(target, name));
        if armed.is_some() {
            self.armed = None;
            return true;
        }
        chance_per_mille > 0 && self.rng.random_range(0..1000) < chance_per_mille
    }

    fn used_bytes(&self) -> u64 {
        self.files.values().map(|f| f.data.len() as u64).sum()
    }

    fn crash_file(&mut self, name: &str, tear: Tear) {
        let chance = self.config.torn_write_percent;
        let file = self.files.get(name).expect("listed");
        let (synced, len) = (file.synced_len, file.data.len());
        // Sector boundaries strictly inside the unsynced tail.
        let first = synced / SECTOR_BYTES + 1;
        let last = len.saturating_sub(1) / SECTOR_BYTES;
        // (Zero when nothing is unsynced: `first` is then past `last`.)
        let boundaries = if first <= last { last - first + 1 } else { 0 };
        // The bytes kept: a prefix of whole sectors, or (a tear past the last boundary)
        // the whole unsynced write, which reached the platter though never synced.
        let kept = match tear {
            _ if len == synced => None,
            Tear::None => None,
            Tear::Sector(k) if (k as usize) < boundaries => {
                Some((first + k as usize) * SECTOR_BYTES)
            }
            Tear::Sector(_) => Some(len),
            // A tear keeps the prefix up to one of the boundaries, or (one choice more)
            // the whole write.
            Tear::Random => (chance > 0 && self.rng.random_range(0..100) < chance).then(|| {
                let k = self.rng.random_range(0..=boundaries);
                if k < boundaries {
                    (first + k) * SECTOR_BYTES
                } else {
                    len
                }
            }),
        };
        let kept_len = kept.unwrap_or(synced);
        if kept.is_some() {
            let (kept_bytes, unsynced_bytes) = (kept_len - synced, len - synced);
            self.ledger.push(Fault::Torn { file: name.to_owned(), kept_bytes, unsynced_bytes });
        }
        let file = self.files.get_mut(name).expect("listed");
        file.data.truncate(kept_len);
        file.synced_len = kept_len;
    }

    fn flip_one_bit(&mut self, names: &[String]) {
        let sizes: Vec<(String, usize)> =
            names.iter().map(|n| (n.clone(), self.files[n].data.len())).collect();
        let total: usize = sizes.iter().map(|(_, len)| len).sum();
        if total == 0 {
            return;
        }
        let mut at = self.rng.random_range(0..total);
        let bit = self.rng.random_range(0..8u8);
        for (name, len) in sizes {
            if at < len {
                self.files.get_mut(&name).expect("listed").data[at] ^= 1 << bit;
                self.ledger.push(Fault::BitFlip { file: name, offset: at, bit });
                return;
            }
            at -= len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk() -> SimDisk {
        SimDisk::new(7, FaultConfig::default())
    }

    #[test]
    fn unsynced_appends_and_undurable_names_vanish_at_a_crash() {
        let d = disk();
        d.create("a").unwrap();
        d.append("a", b"hello").unwrap();
        d.sync("a").unwrap();
        d.crash(Tear::None);
        assert!(d.list("").is_empty(), "a file whose name was never dir-synced is gone");
        d.create("a").unwrap();
        d.sync_dir("").unwrap();
        d.append("a", b"synced").unwrap();
        d.sync("a").unwrap();
        d.append("a", b"volatile").unwrap();
        assert_eq!(d.read("a").unwrap(), b"syncedvolatile");
        d.crash(Tear::None);
        assert_eq!(d.read("a").unwrap(), b"synced");
    }

    #[test]
    fn a_removal_is_undone_by_a_crash_before_the_directory_sync() {
        let d = disk();
        d.create("seg").unwrap();
        d.append("seg", b"x").unwrap();
        d.sync("seg").unwrap();
        d.sync_dir("").unwrap();
        d.remove("seg").unwrap();
        d.crash(Tear::None);
        assert_eq!(d.read("seg").unwrap(), b"x");
        d.remove("seg").unwrap();
        d.sync_dir("").unwrap();
        d.crash(Tear::None);
        assert!(d.list("").is_empty());
    }

    /// A directory's sync makes its own entries durable, no other directory's: not a
    /// sibling's, not one inside it.
    #[test]
    fn a_directory_sync_makes_only_its_own_entries_durable() {
        let d = disk();
        for name in ["x/a", "x/b", "y/a", "x/y/a", "xx/a"] {
            d.create(name).unwrap();
        }
        d.sync_dir("x").unwrap();
        d.crash(Tear::None);
        assert_eq!(d.list(""), ["x/a", "x/b"]);
        d.remove("x/a").unwrap();
        d.create("y/a").unwrap();
        d.sync_dir("y").unwrap();
        d.crash(Tear::None);
        assert_eq!(d.list(""), ["x/a", "x/b", "y/a"], "x's removal was not synced");
        d.remove("x/a").unwrap();
        d.sync_dir("x").unwrap();
        d.crash(Tear::None);
        assert_eq!(d.list(""), ["x/b", "y/a"]);
    }

    /// A file renamed over a durable one is volatile until its directory is synced: a
    /// crash before brings the old file back; a link is a copy under a second name; a
    /// directory moves whole, durably at once.
    #[test]
    fn renames_links_and_directories() {
        let d = disk();
        for (name, bytes) in [("db/CURRENT", b"old"), ("db/CURRENT.tmp", b"new")] {
            d.create(name).unwrap();
            d.append(name, bytes).unwrap();
            d.sync(name).unwrap();
        }
        d.sync_dir("db").unwrap();
        d.rename("db/CURRENT.tmp", "db/CURRENT").unwrap();
        assert_eq!(d.read("db/CURRENT").unwrap(), b"new");
        d.crash(Tear::None);
        assert_eq!(d.read("db/CURRENT").unwrap(), b"old", "the rename was not durable");
        assert_eq!(d.list("db/"), ["db/CURRENT", "db/CURRENT.tmp"]);
        d.rename("db/CURRENT.tmp", "db/CURRENT").unwrap();
        d.sync_dir("db").unwrap();
        d.crash(Tear::None);
        assert_eq!((d.read("db/CURRENT").unwrap(), d.list("db/").len()), (b"new".to_vec(), 1));
        d.make_dir("tmp").unwrap();
        d.link("db/CURRENT", "tmp/CURRENT").unwrap();
        d.sync_dir("tmp").unwrap();
        d.rename("tmp", "snap").unwrap();
        assert_eq!(d.kind("tmp"), Entry::Nothing);
        d.crash(Tear::None);
        assert_eq!(d.read("snap/CURRENT").unwrap(), b"new");
        assert_eq!(d.children(""), ["db", "snap"]);
        assert!(d.rename("db", "snap").is_err(), "onto a directory that exists");
    }

    /// A bit flip lands only in synced data, on a real bit: anything else is refused with
    /// the file, byte and bit named, and changes nothing; a flip that lands is in the ledger.
    #[test]
    fn a_flip_lands_only_on_a_bit_of_synced_data() {
        let d = disk();
        d.create("f").unwrap();
        d.append("f", &[0; 4]).unwrap();
        d.sync("f").unwrap();
        d.append("f", &[0; 4]).unwrap();
        let refused = |offset, bit| d.flip("f", offset, bit).expect_err("refused").to_string();
        let not_synced = "cannot flip f: byte 4 bit 0 is not synced data (4 bytes are)";
        assert_eq!(refused(4, 0), not_synced);
        let no_bit = "cannot flip f: byte 3 bit 8 is not synced data (4 bytes are)";
        assert_eq!(refused(3, 8), no_bit);
        assert_eq!(d.read("f").unwrap(), [0; 8], "nothing changed");
        assert!(d.ledger().is_empty());
        d.flip("f", 3, 7).unwrap();
        assert_eq!(d.read("f").unwrap(), [0, 0, 0, 0x80, 0, 0, 0, 0]);
        assert_eq!(d.ledger(), vec![Fault::BitFlip { file: "f".into(), offset: 3, bit: 7 }]);
    }

    /// File `f`, durable: 100 bytes synced, then 2,000 unsynced across sector boundaries.
    fn synced_100_then_2000_unsynced(d: &SimDisk) {
        d.create("f").unwrap();
        d.sync_dir("").unwrap();
        d.append("f", &[1; 100]).unwrap();
        d.sync("f").unwrap();
        d.append("f", &[2; 2000]).unwrap();
    }

    #[test]
    fn a_torn_write_keeps_whole_sectors_only_and_is_in_the_ledger() {
        let d = disk();
        synced_100_then_2000_unsynced(&d);
        d.crash(Tear::Sector(0));
        assert_eq!(d.read("f").unwrap().len(), SECTOR_BYTES);
        assert_eq!(
            d.ledger(),
            vec![Fault::Torn { file: "f".into(), kept_bytes: 412, unsynced_bytes: 2000 }]
        );
    }

    /// Tear k keeps the unsynced tail up to its k-th sector boundary (counted from the
    /// first past the synced length), or all of it past the last boundary.
    #[test]
    fn each_tear_keeps_up_to_its_sector_boundary_or_the_whole_write() {
        for (k, kept_len) in [(0, 512), (1, 1024), (3, 2048), (4, 2100), (9, 2100)] {
            let d = disk();
            synced_100_then_2000_unsynced(&d);
            d.crash(Tear::Sector(k));
            assert_eq!(d.read("f").unwrap().len(), kept_len, "tear {k}");
            let kept_bytes = kept_len - 100;
            let torn = Fault::Torn { file: "f".into(), kept_bytes, unsynced_bytes: 2000 };
            assert_eq!(d.ledger(), vec![torn], "tear {k}");
            // What was kept is durable now: a second crash keeps it all.
            d.crash(Tear::Sector(0));
            assert_eq!(d.read("f").unwrap().len(), kept_len, "tear {k}, crashed again");
        }
    }

    /// A chance of n per mille fails about n appends in a thousand: 20,000 appends at 1‰
    /// and at 5‰ (the disk's stream is seeded, so the counts are fixed; the bounds allow
    /// any seed's spread, not twice the rate).
    #[test]
    fn an_error_chance_per_mille_fails_that_share_of_appends() {
        for (per_mille, expected) in [(1, 20), (5, 100)] {
            let config = FaultConfig { write_error_per_mille: per_mille, ..FaultConfig::default() };
            let d = SimDisk::new(7, config);
            d.create("f").unwrap();
            let failed = (0..20_000).filter(|_| d.append("f", b"x").is_err()).count();
            let spread = expected / 2 + 3;
            assert!(failed.abs_diff(expected) <= spread, "{per_mille}‰: {failed} of 20,000");
        }
    }

    /// A tear chance of n% tears about n in a hundred crashes that cut an unsynced write:
    /// 4,000 crashes at 1% and at 10% (seeded, so the counts are fixed; the bounds allow
    /// any seed's spread, not twice the rate).
    #[test]
    fn a_tear_chance_tears_that_share_of_crashes() {
        for (percent, expected) in [(1, 40), (10, 400)] {
            let config = FaultConfig { torn_write_percent: percent, ..FaultConfig::default() };
            let d = SimDisk::new(7, config);
            synced_100_then_2000_unsynced(&d);
            for _ in 0..4000 {
                d.crash(Tear::Random);
                d.append("f", &[2; 2000]).unwrap();
            }
            let torn = d.ledger().iter().filter(|f| matches!(f, Fault::Torn { .. })).count();
            let spread = expected / 2 + 3;
            assert!(torn.abs_diff(expected) <= spread, "{percent}%: {torn} of 4,000");
        }
    }

    /// A random tear keeps a prefix of whole sectors, or the whole unsynced write: over
    /// 400 crashes that always tear, each of the tail's 4 boundaries and the whole tail
    /// come up, and nothing else does.
    #[test]
    fn a_random_tear_keeps_whole_sectors_or_the_whole_write() {
        let config = FaultConfig { torn_write_percent: 100, ..FaultConfig::default() };
        let d = SimDisk::new(7, config);
        synced_100_then_2000_unsynced(&d);
        let mut kept = BTreeMap::new();
        for _ in 0..400 {
            d.crash(Tear::Random);
            *kept.entry(d.read("f").unwrap().len()).or_insert(0) += 1;
            d.truncate("f", 100).unwrap();
            d.append("f", &[2; 2000]).unwrap();
        }
        let lens: Vec<usize> = kept.keys().copied().collect();
        assert_eq!(lens, [512, 1024, 1536, 2048, 2100], "{kept:?}");
        let torn: BTreeSet<(usize, usize)> = d
            .ledger()
            .iter()
            .filter_map(|f| match f {
                Fault::Torn { kept_bytes, unsynced_bytes, .. } => {
                    Some((*kept_bytes, *unsynced_bytes))
                }
                _ => None,
            })
            .collect();
        let each = [412, 924, 1436, 1948, 2000].map(|kept_bytes| (kept_bytes, 2000));
        assert_eq!(torn, BTreeSet::from(each), "the ledger names what each tear kept");
    }

    /// A crash tears nothing of a file whose bytes are all synced: no tear, whichever
    /// asked for, and none in the ledger.
    #[test]
    fn a_crash_tears_nothing_that_was_synced() {
        let config = FaultConfig { torn_write_percent: 100, ..FaultConfig::default() };
        let d = SimDisk::new(7, config);
        d.create("f").unwrap();
        d.sync_dir("").unwrap();
        d.append("f", &[1; 1000]).unwrap();
        d.sync("f").unwrap();
        for tear in [Tear::Sector(0), Tear::Sector(5), Tear::Random] {
            d.crash(tear);
            assert_eq!(d.read("f").unwrap(), [1; 1000], "{tear:?}");
        }
        assert_eq!(d.ledger(), []);
    }

    /// A crash with tears and flips off draws nothing from the disk's stream: the faults
    /// after it are the ones a disk that never crashed injects.
    #[test]
    fn a_crash_without_tears_or_flips_leaves_the_fault_stream_alone() {
        let errors_after = |crash: bool| {
            let d = SimDisk::new(3, FaultConfig::default());
            synced_100_then_2000_unsynced(&d);
            if crash {
                d.crash(Tear::Random);
            }
            d.set_faults(FaultConfig { write_error_per_mille: 500, ..FaultConfig::default() });
            (0..64).map(|_| d.append("f", b"x").is_err()).collect::<Vec<bool>>()
        };
        assert_eq!(errors_after(true), errors_after(false));
    }

    /// An append with write errors off draws nothing from the disk's stream: the sync
    /// errors after it are the ones a disk that never appended injects.
    #[test]
    fn an_append_with_errors_off_leaves_the_fault_stream_alone() {
        let errors_after = |appends: usize| {
            let d = SimDisk::new(3, FaultConfig::default());
            d.create("f").unwrap();
            for _ in 0..appends {
                d.append("f", b"x").unwrap();
            }
            d.set_faults(FaultConfig { sync_error_per_mille: 500, ..FaultConfig::default() });
            (0..64).map(|_| d.sync("f").is_err()).collect::<Vec<bool>>()
        };
        assert_eq!(errors_after(10), errors_after(0));
    }

    /// A flip chance of 99% flips a bit of synced data at about 99 in a hundred crashes:
    /// not at all of them (seeded, so the count is fixed).
    #[test]
    fn a_flip_chance_of_99_percent_spares_some_crashes() {
        let config = FaultConfig { bit_flip_percent: 99, ..FaultConfig::default() };
        let d = SimDisk::new(7, config);
        synced_100_then_2000_unsynced(&d);
        for _ in 0..1000 {
            d.crash(Tear::None);
        }
        let flips = d.ledger().iter().filter(|f| matches!(f, Fault::BitFlip { .. })).count();
        assert!((975..1000).contains(&flips), "{flips} flips in 1,000 crashes");
    }

    /// A crash's random flip lands anywhere in the disk's bytes: over 400 crashes with two
    /// files of 100 bytes, on both, at offsets across each.
    #[test]
    fn random_flips_land_across_every_file() {
        let config = FaultConfig { bit_flip_percent: 100, ..FaultConfig::default() };
        let d = SimDisk::new(7, config);
        for name in ["f", "g"] {
            d.create(name).unwrap();
            d.append(name, &[0; 100]).unwrap();
            d.sync(name).unwrap();
        }
        d.sync_dir("").unwrap();
        for _ in 0..400 {
            d.crash(Tear::None);
        }
        let mut offsets: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
        for fault in d.ledger() {
            let Fault::BitFlip { file, offset, .. } = fault else { panic!("{fault:?}") };
            offsets.entry(file).or_default().insert(offset);
        }
        let spread: Vec<(&str, usize)> =
            offsets.iter().map(|(file, at)| (file.as_str(), at.len())).collect();
        assert!(spread.len() == 2 && spread.iter().all(|&(_, n)| n > 50), "{spread:?}");
    }

    /// What the disk reports of itself: bytes held (volatile ones too), bytes synced per
    /// file, the ledger's length and its tail; a disk left `n` bytes free fills up at what
    /// it held plus `n`; a flipped set bit clears.
    #[test]
    fn the_disk_reports_its_bytes_and_faults() {
        let d = disk();
        synced_100_then_2000_unsynced(&d);
        d.create("g").unwrap();
        d.append("g", b"abc").unwrap();
        assert_eq!(d.used_bytes(), 2103);
        let synced = ["f", "g", "h"].map(|name| d.synced_len(name));
        assert_eq!(synced, [Some(100), Some(0), None]);
        d.set_free_bytes(Some(5));
        d.append("g", b"12345").unwrap();
        let full = Error::DiskFull { file: "g".into(), bytes: 1, capacity: 2108 };
        assert_eq!(d.append("g", b"x"), Err(full));
        d.flip("f", 0, 0).unwrap();
        assert_eq!(d.read("f").unwrap()[0], 0, "byte 0 held 1");
        assert_eq!(d.ledger_len(), 2);
        let flip = Fault::BitFlip { file: "f".into(), offset: 0, bit: 0 };
        assert_eq!(d.ledger_since(1), [flip]);
        assert_eq!(d.ledger_since(2), []);
        assert_eq!(d.ledger_since(3), [], "past the end");
    }

    #[test]
    fn injected_errors_and_a_full_disk_fail_without_changing_data() {
        let config = FaultConfig { capacity_bytes: Some(10), ..FaultConfig::default() };
        let d = SimDisk::new(1, config);
        d.create("f").unwrap();
        d.append("f", b"0123456789").unwrap();
        let err = d.append("f", b"x").unwrap_err();
        let full = Error::DiskFull { file: "f".into(), bytes: 1, capacity: 10 };
        assert_eq!(err, full);
        assert_eq!(d.read("f").unwrap(), b"0123456789");
        d.set_faults(FaultConfig { write_error_per_mille: 1000, ..FaultConfig::default() });
        let err = d.append("f", b"y").unwrap_err();
        assert_eq!(err, Error::Io("I/O error writing f (injected)".into()));
        assert_eq!(d.read("f").unwrap(), b"0123456789");
        let faults = [Fault::DiskFull { file: "f".into() }, Fault::WriteError { file: "f".into() }];
        assert_eq!(d.ledger(), faults);
    }

    #[test]
    fn the_same_seed_gives_the_same_faults() {
        let run = |seed| {
            let config =
                FaultConfig { torn_write_percent: 50, bit_flip_percent: 50, ..Default::default() };
            let d = SimDisk::new(seed, config);
            d.create("f").unwrap();
            d.sync_dir("").unwrap();
            for i in 0..20u8 {
                d.append("f", &[i; 700]).unwrap();
                if i % 3 == 0 {
                    d.sync("f").unwrap();
                }
                d.crash(Tear::Random);
            }
            (d.read("f").unwrap(), d.ledger())
        };
        let (data, ledger) = run(3);
        assert_eq!((data, ledger.clone()), run(3));
        let kinds: Vec<&str> = ledger.iter().map(Fault::kind).collect();
        assert!(
            kinds.contains(&"torn-write") && kinds.contains(&"bit-flip"),
            "faults fired: {kinds:?}"
        );
        assert_ne!(run(3).1, run(4).1, "another seed, other faults");
    }
}
