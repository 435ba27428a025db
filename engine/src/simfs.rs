//! RocksDB's files on the simulated disk.
//!
//! A node's tablets open RocksDB through an `Env` whose file system (`simfs/fs.cc`) hands
//! every operation to the node's [`SimDisk`], the disk the Raft logs live on. So an SST
//! file, a MANIFEST edit or a `CURRENT` rename is volatile until RocksDB syncs it (or its
//! directory), a power cut keeps what the disk's rules keep, and an injected fault in
//! RocksDB's files is in the same ledger, drawn from the same seed, as one in the logs.
//! RocksDB's paths are the node's directory joined with a disk name (`docs/000012.sst`);
//! nothing outside the node's directory is reachable.
//!
//! The callbacks run on RocksDB's flush and compaction threads as well as the caller's.
//! They lock the disk and nothing else: no simulator context, no clock, no randomness of
//! their own. The caller waits for every flush and compaction (and the file deletions
//! after them) to end before it goes on (`db.rs`), so the disk sees RocksDB's operations
//! in one order for one seed. RocksDB's info log is dropped (its lines carry real times).

use crate::disk::{Entry, SimDisk};
use crate::error::Error;
use rocksdb::AsRawPtr;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::Path;

/// What `fs.cc` calls (its `docsim_fs_callbacks`, field for field).
#[repr(C)]
struct Callbacks {
    ctx: *mut c_void,
    create: unsafe extern "C" fn(*mut c_void, *const c_char, *mut c_void) -> c_int,
    append:
        unsafe extern "C" fn(*mut c_void, *const c_char, *const u8, usize, *mut c_void) -> c_int,
    sync: unsafe extern "C" fn(*mut c_void, *const c_char, *mut c_void) -> c_int,
    read: unsafe extern "C" fn(
        *mut c_void,
        *const c_char,
        u64,
        *mut u8,
        usize,
        *mut usize,
        *mut c_void,
    ) -> c_int,
    size: unsafe extern "C" fn(*mut c_void, *const c_char, *mut u64, *mut c_void) -> c_int,
    remove: unsafe extern "C" fn(*mut c_void, *const c_char, *mut c_void) -> c_int,
    rename: unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char, *mut c_void) -> c_int,
    link: unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char, *mut c_void) -> c_int,
    truncate: unsafe extern "C" fn(*mut c_void, *const c_char, u64, *mut c_void) -> c_int,
    kind: unsafe extern "C" fn(*mut c_void, *const c_char) -> c_int,
    children: unsafe extern "C" fn(*mut c_void, *const c_char, *mut c_void, *mut c_void) -> c_int,
    make_dir: unsafe extern "C" fn(*mut c_void, *const c_char, *mut c_void) -> c_int,
    remove_dir: unsafe extern "C" fn(*mut c_void, *const c_char, *mut c_void) -> c_int,
    sync_dir: unsafe extern "C" fn(*mut c_void, *const c_char, *mut c_void) -> c_int,
}

unsafe extern "C" {
    fn docsim_sim_env_create(callbacks: *const Callbacks) -> *mut c_void;
    fn docsim_sim_env_destroy(env: *mut c_void);
    fn docsim_options_set_sim_env(opts: *mut c_void, env: *mut c_void);
    fn docsim_fs_message(msg: *mut c_void, text: *const c_char, len: usize);
    fn docsim_fs_push(out: *mut c_void, name: *const c_char, len: usize);
    fn docsim_compact_all(db: *mut c_void, errptr: *mut *mut c_char);
    fn docsim_wait_for_background(db: *mut c_void, errptr: *mut *mut c_char);
}

/// Compact every file of `db` into the bottommost level (an exclusive manual
/// compaction), returning RocksDB's status, which the C API drops.
pub(crate) fn compact_all(db: &rocksdb::DB) -> Result<(), Error> {
    let mut err: *mut c_char = std::ptr::null_mut();
    // SAFETY: `db` is open for the call; the shim sets `err` to a malloc'ed message.
    unsafe { docsim_compact_all(db.as_raw_ptr().cast(), &mut err) };
    take_error(err)
}

/// Wait until `db` runs and has scheduled no flush, compaction or file deletion: RocksDB
/// deletes a job's obsolete files after the call that ran the job returned. An error if
/// RocksDB holds a background error (a failed flush or compaction).
pub(crate) fn wait_for_background(db: &rocksdb::DB) -> Result<(), Error> {
    let mut err: *mut c_char = std::ptr::null_mut();
    // SAFETY: as for `compact_all`.
    unsafe { docsim_wait_for_background(db.as_raw_ptr().cast(), &mut err) };
    take_error(err)
}

/// RocksDB's status in `err` (the shim's malloc'ed message), with its kind.
fn take_error(err: *mut c_char) -> Result<(), Error> {
    crate::entity::take_error(err).map_err(Error::from_rocksdb_status)
}

/// What the file system reaches: the disk, the path it answers for, and one planted bug.
struct Ctx {
    disk: SimDisk,
    /// The node's directory, with a trailing `/`: a path is this plus a disk name.
    root: String,
    /// Planted `sst-sync-skipped`: a sync of an SST file returns without syncing.
    skip_sst_sync: bool,
}

/// An `Env` whose files live on a [`SimDisk`]. Every database opened with it must be
/// closed before it drops.
pub struct SimEnv {
    env: *mut c_void,
    ctx: *mut Ctx,
}

// SAFETY: the Env is RocksDB's (thread-safe); `Ctx` holds a `SimDisk` (a mutex) and
// immutable fields.
unsafe impl Send for SimEnv {}
unsafe impl Sync for SimEnv {}

impl SimEnv {
    /// RocksDB's files under `root` (a node's directory) on `disk`. `skip_sst_sync`:
    /// plant `sst-sync-skipped`.
    pub fn new(disk: SimDisk, root: &Path, skip_sst_sync: bool) -> SimEnv {
        let root = format!("{}/", root.display().to_string().trim_end_matches('/'));
        crate::error::register_disk_root(&root);
        let ctx = Box::into_raw(Box::new(Ctx { disk, root, skip_sst_sync }));
        let callbacks = Callbacks {
            ctx: ctx.cast(),
            create,
            append,
            sync,
            read,
            size,
            remove,
            rename,
            link,
            truncate,
            kind,
            children,
            make_dir,
            remove_dir,
            sync_dir,
        };
        // SAFETY: the shim copies the table; `ctx` lives until this value drops, after
        // the Env (which holds the only copy) is destroyed.
        let env = unsafe { docsim_sim_env_create(&callbacks) };
        SimEnv { env, ctx }
    }

    /// The disk the files live on.
    pub fn disk(&self) -> &SimDisk {
        // SAFETY: `ctx` lives as long as this value.
        unsafe { &(*self.ctx).disk }
    }

    /// The node's directory, with a trailing `/`: a path is this plus a disk name.
    pub fn root(&self) -> &str {
        // SAFETY: as above.
        unsafe { &(*self.ctx).root }
    }

    /// Open databases of `opts` through this Env, without an info log.
    pub fn install(&self, opts: &mut rocksdb::Options) {
        // SAFETY: `opts` and the Env are live; the caller keeps the Env alive (an `Arc`
        // in every database opened with it) until those databases close.
        unsafe { docsim_options_set_sim_env(opts.as_raw_ptr().cast(), self.env) }
    }
}

impl Drop for SimEnv {
    fn drop(&mut self) {
        // SAFETY: no database uses the Env any more (see `install`); the Env goes first,
        // then the context its file system pointed at.
        let ctx = unsafe {
            docsim_sim_env_destroy(self.env);
            Box::from_raw(self.ctx)
        };
        crate::error::unregister_disk_root(&ctx.root);
    }
}

/// The status codes `fs.cc` maps to RocksDB's: 0 ok, 1 not found, 2 I/O error, 3 no space.
const OK: c_int = 0;
const NOT_FOUND: c_int = 1;
const IO_ERROR: c_int = 2;
const NO_SPACE: c_int = 3;

/// Run `op` on the disk name of `path`, reporting an error through `msg`. A panic (a bug
/// in docsim) is reported as an I/O error: it must not unwind into RocksDB.
///
/// # Safety
/// `ctx` is a live `Ctx`; `path` a NUL-terminated string; `msg` a `std::string*`.
unsafe fn on_disk(
    ctx: *mut c_void,
    path: *const c_char,
    msg: *mut c_void,
    op: impl FnOnce(&Ctx, &str) -> Result<(), Error>,
) -> c_int {
    // SAFETY: as the caller promises.
    let (ctx, path) = unsafe { (&*ctx.cast::<Ctx>(), CStr::from_ptr(path)) };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let name = disk_name(ctx, path)?;
        op(ctx, &name)
    }));
    let (code, text) = match outcome {
        Ok(Ok(())) => return OK,
        Ok(Err(Error::DiskFull { file, bytes, capacity })) => {
            (NO_SPACE, format!("{file}: disk full writing {bytes} bytes ({capacity} capacity)"))
        }
        Ok(Err(e)) if e.to_string().contains("no such file") => (NOT_FOUND, e.to_string()),
        Ok(Err(e)) => (IO_ERROR, e.to_string()),
        Err(_) => (IO_ERROR, format!("docsim's file system panicked on {path:?}")),
    };
    // SAFETY: `msg` is a live `std::string*`; the shim copies the bytes.
    unsafe { docsim_fs_message(msg, text.as_ptr().cast(), text.len()) };
    code
}

/// The disk name of a path RocksDB gave (the node's directory stripped).
fn disk_name(ctx: &Ctx, path: &CStr) -> Result<String, Error> {
    let path = path.to_str().map_err(|_| Error::Io(format!("a path not in UTF-8: {path:?}")))?;
    if path == ctx.root.trim_end_matches('/') {
        return Ok(String::new());
    }
    match path.strip_prefix(&ctx.root) {
        Some(name) => Ok(name.trim_end_matches('/').to_owned()),
        None => Err(Error::Io(format!("{path} is outside the simulated disk ({})", ctx.root))),
    }
}

fn no_such(name: &str) -> Error {
    Error::Io(format!("{name}: no such file"))
}

unsafe extern "C" fn create(ctx: *mut c_void, path: *const c_char, msg: *mut c_void) -> c_int {
    // SAFETY: `fs.cc` passes its context, a path and a message string.
    unsafe { on_disk(ctx, path, msg, |c, name| c.disk.create_or_empty(name)) }
}

unsafe extern "C" fn append(
    ctx: *mut c_void,
    path: *const c_char,
    data: *const u8,
    n: usize,
    msg: *mut c_void,
) -> c_int {
    // SAFETY: `data` holds `n` bytes for the call.
    let bytes = unsafe { std::slice::from_raw_parts(data, n) };
    // SAFETY: as for `create`.
    unsafe { on_disk(ctx, path, msg, |c, name| c.disk.append(name, bytes)) }
}

unsafe extern "C" fn sync(ctx: *mut c_void, path: *const c_char, msg: *mut c_void) -> c_int {
    // SAFETY: as for `create`.
    unsafe {
        on_disk(ctx, path, msg, |c, name| match c.skip_sst_sync && name.ends_with(".sst") {
            true => Ok(()), // planted: the data stays volatile
            false => c.disk.sync(name),
        })
    }
}

unsafe extern "C" fn read(
    ctx: *mut c_void,
    path: *const c_char,
    offset: u64,
    buf: *mut u8,
    n: usize,
    got: *mut usize,
    msg: *mut c_void,
) -> c_int {
    // SAFETY: `buf` has room for `n` bytes (it may be null when `n` is 0); `got` is
    // writable.
    let got = unsafe { &mut *got };
    let buf: &mut [u8] = match n {
        0 => &mut [],
        _ => unsafe { std::slice::from_raw_parts_mut(buf, n) },
    };
    // SAFETY: as for `create`.
    unsafe {
        on_disk(ctx, path, msg, |c, name| {
            *got = c.disk.read_at(name, offset, buf)?;
            Ok(())
        })
    }
}

unsafe extern "C" fn size(
    ctx: *mut c_void,
    path: *const c_char,
    size: *mut u64,
    msg: *mut c_void,
) -> c_int {
    // SAFETY: `size` is writable.
    let size = unsafe { &mut *size };
    // SAFETY: as for `create`.
    unsafe {
        on_disk(ctx, path, msg, |c, name| {
            *size = c.disk.len(name).ok_or_else(|| no_such(name))? as u64;
            Ok(())
        })
    }
}

unsafe extern "C" fn remove(ctx: *mut c_void, path: *const c_char, msg: *mut c_void) -> c_int {
    // SAFETY: as for `create`.
    unsafe { on_disk(ctx, path, msg, |c, name| c.disk.remove(name)) }
}

unsafe extern "C" fn rename(
    ctx: *mut c_void,
    from: *const c_char,
    to: *const c_char,
    msg: *mut c_void,
) -> c_int {
    // SAFETY: as for `create`; `to` is a NUL-terminated path too.
    unsafe {
        let to = CStr::from_ptr(to);
        on_disk(ctx, from, msg, |c, from| c.disk.rename(from, &disk_name(c, to)?))
    }
}

unsafe extern "C" fn link(
    ctx: *mut c_void,
    from: *const c_char,
    to: *const c_char,
    msg: *mut c_void,
) -> c_int {
    // SAFETY: as for `rename`.
    unsafe {
        let to = CStr::from_ptr(to);
        on_disk(ctx, from, msg, |c, from| c.disk.link(from, &disk_name(c, to)?))
    }
}

unsafe extern "C" fn truncate(
    ctx: *mut c_void,
    path: *const c_char,
    len: u64,
    msg: *mut c_void,
) -> c_int {
    // SAFETY: as for `create`.
    unsafe { on_disk(ctx, path, msg, |c, name| c.disk.truncate(name, len as usize)) }
}

unsafe extern "C" fn kind(ctx: *mut c_void, path: *const c_char) -> c_int {
    // SAFETY: as for `create`.
    let (ctx, path) = unsafe { (&*ctx.cast::<Ctx>(), CStr::from_ptr(path)) };
    let kind = std::panic::catch_unwind(|| disk_name(ctx, path).map(|n| ctx.disk.kind(&n)));
    match kind {
        Ok(Ok(Entry::File)) => 1,
        Ok(Ok(Entry::Dir)) => 2,
        _ => 0, // nothing there, or a path outside the disk (or a bug: never an unwind)
    }
}

unsafe extern "C" fn children(
    ctx: *mut c_void,
    path: *const c_char,
    out: *mut c_void,
    msg: *mut c_void,
) -> c_int {
    // SAFETY: as for `create`; `out` is a `std::vector<std::string>*`.
    unsafe {
        on_disk(ctx, path, msg, |c, name| {
            for child in c.disk.children(name) {
                docsim_fs_push(out, child.as_ptr().cast(), child.len());
            }
            Ok(())
        })
    }
}

unsafe extern "C" fn make_dir(ctx: *mut c_void, path: *const c_char, msg: *mut c_void) -> c_int {
    // SAFETY: as for `create`.
    unsafe { on_disk(ctx, path, msg, |c, name| c.disk.make_dir(name)) }
}

unsafe extern "C" fn remove_dir(ctx: *mut c_void, path: *const c_char, msg: *mut c_void) -> c_int {
    // SAFETY: as for `create`.
    unsafe { on_disk(ctx, path, msg, |c, name| c.disk.remove_dir(name)) }
}

unsafe extern "C" fn sync_dir(ctx: *mut c_void, path: *const c_char, msg: *mut c_void) -> c_int {
    // SAFETY: as for `create`.
    unsafe { on_disk(ctx, path, msg, |c, name| c.disk.sync_dir(name)) }
}

#[cfg(test)]
mod tests {
    use crate::canary::Plants;
    use crate::disk::{DiskOp, FaultConfig, SimDisk};
    use crate::doc_write::{DocWrite, MarkerMode, WriteKind};
    use crate::document::Document;
    use crate::encoding::{DocPath, Primitive};
    use crate::gc::CompactionKind;
    use crate::{HybridTime, Medium, Node, NodeOptions};

    /// `kind name` of each operation, the file named without its number (`sst`,
    /// `MANIFEST`): the order, not RocksDB's file numbers.
    fn shapes(ops: &[DiskOp]) -> Vec<String> {
        let shape = |op: &DiskOp| {
            let file = op.file.rsplit('/').next().unwrap_or(&op.file);
            let file = match file {
                f if f.ends_with(".sst") => "sst",
                f if f.starts_with("MANIFEST-") => "MANIFEST",
                "docs" => "dir",
                f => f,
            };
            format!("{} {file}", op.kind.name())
        };
        ops.iter().map(shape).collect()
    }

    fn node(name: &str) -> (Node, SimDisk) {
        let disk = SimDisk::new(1, FaultConfig::default());
        let options = NodeOptions::alone(disk.clone(), 1 << 20, Plants::NONE, Medium::SimDisk);
        (Node::new(&crate::tests::scratch_dir(name), options).expect("node"), disk)
    }

    fn write(node: &mut Node, at_us: u64) {
        let path = DocPath::new(crate::tests::doc_d(), vec![]);
        let kind = WriteKind::Set(Document::Primitive(Primitive::Int64(at_us as i64)));
        let write = DocWrite { path, kind, ttl_us: None };
        let ht = HybridTime::from_micros(at_us);
        node.write(ht, &[write], MarkerMode::Optional).expect("write");
    }

    /// What a flush and a compaction make of RocksDB's files on the simulated disk, in
    /// order: the SST file is written and synced, and its directory synced, before the
    /// MANIFEST edit naming it is appended (its first record) and synced (so a power cut
    /// before the edit's sync loses the flush whole, never half); a compaction's inputs
    /// go after its edit.
    /// These are the operations `crash at in-flush op=<k>` counts.
    #[test]
    fn a_flush_syncs_its_sst_before_the_manifest_edit() {
        let (mut node, disk) = node("simfs-order");
        write(&mut node, 1000);
        node.flush().expect("flush");
        let flush = node.take_jobs();
        assert_eq!(
            shapes(&flush[0].ops),
            [
                "create sst",
                "append sst",
                "sync sst",
                "sync-dir dir",
                "append MANIFEST",
                "append MANIFEST",
                "sync MANIFEST",
            ]
        );
        write(&mut node, 2000);
        node.compact(HybridTime::from_micros(500), CompactionKind::Full).expect("compact");
        let compaction = shapes(&node.take_jobs()[0].ops);
        // Its own flush (two MANIFEST records: the edit adding the file, 106 bytes here,
        // then a short one), then the output file, the edit swapping the files, the
        // inputs' removal.
        let flush_then_compact = [
            "create sst",
            "append sst",
            "sync sst",
            "sync-dir dir",
            "append MANIFEST",
            "append MANIFEST",
            "sync MANIFEST",
            "create sst",
            "append sst",
            "sync sst",
            "sync-dir dir",
            "append MANIFEST",
            "sync MANIFEST",
            "remove sst",
            "remove sst",
        ];
        assert_eq!(compaction, flush_then_compact);
        assert!(disk.list("docs/").iter().filter(|f| f.ends_with(".sst")).count() == 1);
    }
}

#[cfg(test)]
mod checkpoint_tests {
    use crate::canary::Plants;
    use crate::disk::{FaultConfig, SimDisk, Tear};
    use crate::Rocks;

    /// RocksDB's checkpoint on the simulated disk (what snapshots will be, issue 43):
    /// hard links into a temporary directory, renamed, the directory synced. After a
    /// crash it opens with the data it held, while the source goes on.
    #[test]
    fn a_checkpoint_survives_a_crash_and_opens() {
        let root = crate::tests::scratch_dir("simfs-checkpoint");
        let disk = SimDisk::new(1, FaultConfig::default());
        let rocks = Rocks::on_sim_disk(disk.clone(), &root, Plants::NONE, 1 << 20);
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        let _env = rocks.install_raw(&mut opts);
        {
            let db = rocksdb::DB::open(&opts, root.join("db")).expect("open");
            db.put(b"k", b"v1").expect("put");
            db.flush().expect("flush");
            let checkpoint = rocksdb::checkpoint::Checkpoint::new(&db).expect("checkpoint");
            checkpoint.create_checkpoint(root.join("snap")).expect("create");
            db.put(b"k", b"v2").expect("put");
            db.flush().expect("flush");
        }
        disk.crash(Tear::None);
        assert!(disk.list("snap/").iter().any(|f| f.ends_with(".sst")), "{:?}", disk.list(""));
        let snap = rocksdb::DB::open(&opts, root.join("snap")).expect("open the checkpoint");
        assert_eq!(snap.get(b"k").expect("get"), Some(b"v1".to_vec()));
        drop(snap);
        let db = rocksdb::DB::open(&opts, root.join("db")).expect("reopen");
        assert_eq!(db.get(b"k").expect("get"), Some(b"v2".to_vec()));
    }
}
