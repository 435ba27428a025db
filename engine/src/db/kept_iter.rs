//! The scan iterator kept between reads (a speed rule of docsim's: YugabyteDB creates a
//! bounded RocksDB iterator per read operation, `CreateRocksDBIterator` in
//! `docdb/docdb_rocksdb_util.cc`, under its `IntentAwareIterator`).
//!
//! Creating a RocksDB iterator, and destroying it, cost about as much as the seek that
//! follows: a point read of a packed row spent a sixth of its time there. So the scans
//! (`DocDb::scan_documents`) keep their iterator for the next scan. A RocksDB iterator
//! reads the database as it was when it was created, so a kept iterator is only as good
//! as that moment: every change to the database — a write batch, a flush, a compaction
//! (whose filter drops entries a pinned iterator would still see) — forgets it, and the
//! next scan creates a fresh one. Reads between two writes therefore see exactly what a
//! fresh iterator would. A scan that failed does not hand its iterator back.
//!
//! The iterator outlives the borrow of the database it was made from (`Iter<'static>`):
//! the database is closed only in `DocDb`'s `Drop`, which forgets the iterator first (and
//! `KeptIter`'s own `Drop` asserts it did).
//!
//! Two are kept: one in total order, one in prefix mode, whose every seek consults the
//! bloom filters of its key's partition prefix (a partition read skips the SST files
//! without its partition, `encoding::bloom_prefix_len`). In prefix mode only the keys of
//! the seek key's bloom prefix come back in order, so it serves only scans whose prefix
//! holds a whole bloom prefix (`DocDb::scan_documents`).
//!
//! A kept iterator has no upper bound (RocksDB fixes an iterator's bound when it is
//! created); scans stop at the first key outside their prefix themselves. The cost: after
//! the last key of its prefix a scan steps over any RocksDB delete markers that follow (a
//! snapshot install's, a minor compaction's dropped entries) up to the next live key,
//! where a bounded iterator stopped at once. Reads stay the same.

use crate::entity::Iter;
use std::sync::Mutex;

/// The iterator a scan may take, valid for the database's current contents.
#[derive(Default)]
pub(super) struct KeptIter {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    /// How many times the database changed: an iterator taken before a change is stale.
    changes: u64,
    /// The kept iterators: in total order, and in prefix mode (`prefix_mode`).
    iters: [Option<Iter<'static>>; 2],
}

/// An iterator taken for one scan, to hand back with [`KeptIter::keep`].
pub(super) struct Taken {
    pub(super) iter: Iter<'static>,
    changes: u64,
    prefix_mode: bool,
}

impl KeptIter {
    /// The kept iterator of the mode if there is one, else a new iterator over `db`
    /// without bounds (scans check their prefix themselves): in prefix mode
    /// (`prefix_mode`: each seek consults the bloom filters of its key's prefix, and only
    /// keys of that prefix come back in order), else in total order.
    ///
    /// # Safety
    /// `db` must stay open until the iterator is dropped or forgotten by
    /// [`KeptIter::changed`] (`DocDb` closes its database only after that).
    pub(super) unsafe fn take(&self, db: &rocksdb::DB, prefix_mode: bool) -> Taken {
        let mut kept = self.lock();
        let iter = kept.iters[usize::from(prefix_mode)].take().unwrap_or_else(|| {
            let iter = Iter::new(db, None, !prefix_mode);
            // SAFETY: the caller keeps `db` open for as long as the iterator lives.
            unsafe { std::mem::transmute::<Iter<'_>, Iter<'static>>(iter) }
        });
        Taken { iter, changes: kept.changes, prefix_mode }
    }

    /// Keep `taken` for the next scan, unless the database changed since it was taken.
    pub(super) fn keep(&self, taken: Taken) {
        let mut kept = self.lock();
        if kept.changes == taken.changes {
            kept.iters[usize::from(taken.prefix_mode)] = Some(taken.iter);
        }
    }

    /// The database changed (or is about to close): forget the kept iterator.
    pub(super) fn changed(&self) {
        let mut kept = self.lock();
        kept.changes += 1;
        kept.iters = [None, None];
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for KeptIter {
    fn drop(&mut self) {
        // An iterator still kept here would be destroyed after its database closed.
        if !std::thread::panicking() {
            let none = self.lock().iters.iter().all(Option::is_none);
            assert!(none, "a kept iterator outlives its database");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::KeptIter;
    use crate::db::{DocDb, DocRead};
    use crate::encoding::{Primitive, ValueKind};
    use crate::gc::CompactionKind;
    use crate::hybrid_time::HybridTime;

    fn scratch(name: &str) -> std::path::PathBuf {
        crate::tests::scratch_dir(&format!("kept-{name}"))
    }

    /// Write the document as the number `n` at `us`.
    fn write(db: &DocDb, n: i32, us: u64) {
        crate::tests::write_int(db, n, us, None);
    }

    /// The numbers a scan of the document at `us` hands the reader.
    fn scan(db: &DocDb, us: u64) -> Vec<i32> {
        let read = db.read_config(HybridTime::from_micros(us), None);
        let whole = Default::default();
        let docs =
            db.scan_documents(&crate::tests::doc_d().encode(), &read, &[], whole).expect("scan");
        let entries = docs.into_iter().flat_map(|(_, read)| match read {
            DocRead::Entries(entries) => entries,
            DocRead::Packed(_) => unreachable!("no packed rows here"),
        });
        entries
            .map(|e| match e.value.kind {
                ValueKind::Primitive(Primitive::Int32(n)) => n,
                other => panic!("not written here: {other:?}"),
            })
            .collect()
    }

    /// Each scan keeps its iterator for the next; a write in between, and a compaction
    /// (whose filter drops what a kept iterator would still see), must each be read.
    #[test]
    fn a_scan_after_a_write_or_a_compaction_reads_the_database_as_changed() {
        let dir = scratch("changes");
        let mut db = DocDb::open(&dir).expect("open");
        write(&db, 1, 1_000);
        assert_eq!(scan(&db, 5_000), [1]);
        write(&db, 2, 2_000);
        assert_eq!(scan(&db, 5_000), [2], "the second write");
        assert_eq!(scan(&db, 1_500), [1], "the first, under the second");
        // The newest version at or below the cutoff stays; the one beneath it goes. (A
        // read below the cutoff is refused above this layer; the scan shows what is left.)
        db.compact(
            HybridTime::from_micros(3_000),
            CompactionKind::Full,
            (None, Default::default()),
            None,
        )
        .expect("compact");
        assert_eq!(scan(&db, 1_500), Vec::<i32>::new(), "the compaction dropped 1");
        assert_eq!(scan(&db, 5_000), [2]);
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A kept iterator pins the files it reads until the database changes; it is then
    /// forgotten and destroyed (here at the compaction's own flush), so the files the
    /// compaction replaced are deleted: the directory holds only the live files.
    #[test]
    fn a_compaction_leaves_no_file_pinned_by_a_kept_iterator() {
        let dir = scratch("pinned");
        let mut db = DocDb::open(&dir).expect("open");
        for (n, us) in [(1, 1_000), (2, 2_000)] {
            write(&db, n, us);
            db.flush().expect("flush");
            assert_eq!(scan(&db, 5_000), [n], "a scan keeps its iterator over the files");
        }
        db.compact(
            HybridTime::from_micros(3_000),
            CompactionKind::Full,
            (None, Default::default()),
            None,
        )
        .expect("compact");
        assert_eq!(scan(&db, 5_000), [2]);
        let sst = |entry: std::io::Result<std::fs::DirEntry>| {
            let name = entry.expect("entry").file_name().into_string().expect("UTF-8");
            name.ends_with(".sst").then_some(name)
        };
        let mut stored: Vec<String> =
            std::fs::read_dir(&dir).expect("list").filter_map(sst).collect();
        stored.sort();
        let live: Vec<String> =
            db.files().into_iter().map(|f| f.name.trim_start_matches('/').to_owned()).collect();
        assert_eq!((stored.len(), &stored), (1, &live));
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Without RocksDB's WAL (the Raft log is the only log), closing the database — as a
    /// power cut does — keeps only what was flushed: replay restores the rest.
    #[test]
    fn a_close_keeps_only_what_was_flushed() {
        let dir = scratch("close");
        let db = DocDb::open(&dir).expect("open");
        write(&db, 1, 1_000);
        db.flush().expect("flush");
        write(&db, 2, 2_000);
        drop(db);
        let db = DocDb::open(&dir).expect("reopen");
        assert_eq!(scan(&db, 5_000), [1], "the unflushed write is gone");
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A compaction's GC verdicts come back as probe counts (campaign reports show them):
    /// versions above the cutoff kept, versions beneath the newest at or below it dropped.
    #[test]
    fn a_compaction_counts_what_it_kept_above_the_cutoff_and_what_it_dropped() {
        let dir = scratch("counts");
        let mut db = DocDb::open(&dir).expect("open");
        for (n, us) in [(1, 1_000), (2, 2_500), (3, 3_000), (4, 4_000)] {
            write(&db, n, us);
        }
        let _ = crate::probe::take();
        db.compact(
            HybridTime::from_micros(2_500),
            CompactionKind::Full,
            (None, Default::default()),
            None,
        )
        .expect("compact");
        let counts = crate::probe::take();
        let count = |name: &str| counts.get(name).copied().unwrap_or(0);
        // 3 and 4 are above the cutoff, 2 the newest at or below it (exactly at), 1 beneath.
        assert_eq!((count("gc.kept_above_cutoff"), count("gc.dropped")), (2, 1), "{counts:?}");
        assert_eq!(scan(&db, 2_500), [2]);
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A snapshot install replaces everything (one batch, then a flush): the next scan
    /// reads the snapshot, not what its kept iterator saw.
    #[test]
    fn a_scan_after_a_snapshot_install_reads_the_snapshot() {
        let (dir, leader_dir) = (scratch("install"), scratch("install-leader"));
        let mut db = DocDb::open(&dir).expect("open");
        write(&db, 1, 1_000);
        assert_eq!(scan(&db, 5_000), [1]);
        let leader = DocDb::open(&leader_dir).expect("open the leader's");
        write(&leader, 7, 2_000);
        let snapshot = leader.export().expect("export");
        let (op_id, at) = (crate::ids::OpId::new(1, 5), HybridTime::from_micros(2_000));
        db.install(&snapshot, op_id, at, &[(b"\x01conf".to_vec(), b"conf".to_vec())])
            .expect("install");
        assert_eq!(scan(&db, 5_000), [7], "the snapshot's document");
        drop((db, leader));
        let _ = (std::fs::remove_dir_all(&dir), std::fs::remove_dir_all(&leader_dir));
    }

    /// A plain RocksDB in a scratch directory named `name`.
    fn raw_db(name: &str) -> (std::path::PathBuf, rocksdb::DB) {
        let dir = scratch(name);
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        let db = rocksdb::DB::open(&opts, &dir).expect("open");
        (dir, db)
    }

    /// The key at or after `k` through the iterator `kept` hands out next (then dropped).
    fn next_taken_at_k(kept: &KeptIter, db: &rocksdb::DB) -> Option<Vec<u8>> {
        // SAFETY: `db` outlives the iterator, dropped here.
        let mut taken = unsafe { kept.take(db, false) };
        taken.iter.seek(b"k");
        taken.iter.key().map(<[u8]>::to_vec)
    }

    /// A kept iterator is the one the next scan gets: it reads the database as it was
    /// (here a put without `changed`, which `DocDb` never does, shows which one it is).
    #[test]
    fn an_iterator_handed_back_is_the_next_one_taken() {
        let (dir, db) = raw_db("reuse");
        let kept = KeptIter::default();
        // SAFETY: `db` outlives every iterator taken here (dropped before it below).
        kept.keep(unsafe { kept.take(&db, false) });
        db.put(b"k", b"v").expect("put");
        assert_eq!(next_taken_at_k(&kept, &db), None, "the kept iterator predates the put");
        drop((kept, db));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An iterator taken before a change and handed back after it is not kept: the next
    /// scan gets a fresh one, which sees the change.
    #[test]
    fn an_iterator_handed_back_after_a_change_is_dropped() {
        let (dir, db) = raw_db("stale");
        let kept = KeptIter::default();
        // SAFETY: `db` outlives every iterator taken here (dropped before it below).
        let taken = unsafe { kept.take(&db, false) };
        db.put(b"k", b"v").expect("put");
        kept.changed();
        kept.keep(taken);
        let found = next_taken_at_k(&kept, &db);
        assert_eq!(found.as_deref(), Some(&b"k"[..]), "a fresh iterator sees the put");
        drop((kept, db));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Dropping a `KeptIter` that still holds an iterator is a bug (`DocDb` forgets the
    /// iterator before it closes the database): the drop says so, loudly.
    #[test]
    #[should_panic(expected = "a kept iterator outlives its database")]
    fn dropping_a_kept_iter_that_holds_an_iterator_panics() {
        let (_dir, db) = raw_db("outlives");
        let kept = KeptIter::default();
        // SAFETY: `db` outlives the iterator: `kept`, which holds it, is dropped first.
        kept.keep(unsafe { kept.take(&db, false) });
        drop(kept);
    }
}
