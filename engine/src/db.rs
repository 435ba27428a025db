//! The RocksDB glue: one DocDB instance on RocksDB, its write batches without WAL, flush,
//! compaction through the GC adapter, and the history cutoff. Its jobs live in submodules:
//!
//! - `db/options.rs`: the storage configurations (the metamorphic set) and the RocksDB
//!   options built from one, and opening RocksDB.
//! - `db/scan.rs`: the document scans, which hand the reader what a read needs.
//! - `db/gc_filter.rs`: the compaction filter adapter between RocksDB and the pure GC.
//! - `db/metadata.rs`: the metadata keys beside the documents, snapshot export/install.
//! - `db/frontier.rs`: when the flushed frontier is written.
//! - `db/kept_iter.rs`: the scan iterator kept between reads.
//! - `db/packed.rs`: reading packed rows, and the entity layout's columns.
//! - `db/snapshots.rs`: table snapshots (checkpoints beside the instance).
//! - `db/restore.rs`: restoring the instance from a checkpoint or to a time.
//!
//! Automatic compactions are off: the caller (the simulator, a script) flushes and
//! compacts explicitly, and both run to completion before the call returns, so RocksDB's
//! background threads never race the caller. The RocksDB WAL is off (the tablet's Raft
//! log is the only log) and memtables are not flushed at close, so a crash loses them.
//!
//! Document scans reuse one RocksDB iterator until the database next changes
//! (`db/kept_iter.rs`): creating an iterator costs about as much as the seek after it.

use crate::canary::{Plant, Plants};
use crate::encoding::{doc_key_len, Packings, SubDocKey, Value, ValueKind};
use crate::entity::Iter;
use crate::error::{Error, Result};
use crate::gc::{CompactionKind, GcParams, Verdict};
use crate::hybrid_time::HybridTime;
use crate::reader::DocEntry;
use crate::write_batch::DocWriteBatch;
use rocksdb::{FlushOptions, WriteBatch, WriteOptions, DB};
use std::path::Path;
use std::sync::{Arc, Mutex};

mod frontier;
mod gc_filter;
mod kept_iter;
mod metadata;
mod options;
mod packed;
mod range_bounds;
mod restore;
mod scan;
mod snapshots;
pub use frontier::Memstore;
use gc_filter::{filter_result, GcState, RepackPlan};
pub use metadata::Export;
pub(crate) use metadata::CONF_KEY;
use metadata::{decode_frontier, FRONTIER_KEY, HISTORY_CUTOFF_KEY, META_PREFIX};
use options::{open_with_retry, options};
pub use options::{Layout, Medium, RawEnv, Rocks, StorageConfig};
pub(crate) use packed::PackedCells;
pub use range_bounds::{compare_components, CmpOp, RangeCondition};
pub use restore::RestoreSpec;
pub use scan::ReadStats;
pub(crate) use scan::{DocRead, Window};
pub use snapshots::{CheckpointCopy, SnapshotInfo};

/// The flushed frontier as stored: the op id and hybrid time of the last entry whose data
/// is durable, and the history cutoff persisted with the data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Frontier {
    pub op_id: crate::ids::OpId,
    pub ht: HybridTime,
    pub history_cutoff: HybridTime,
}

/// A stored entry, decoded.
pub type Entry = (SubDocKey, Value);

/// A stored entry, decoded, with its raw key and value bytes.
pub type RawEntry = (Entry, Vec<u8>, Vec<u8>);

/// Serializes opening and closing RocksDB instances process-wide: RocksDB's shared
/// periodic-task timer races when one thread closes the last instance while another opens
/// one ("Failed to register periodic task"), which torture's worker threads hit.
static OPEN_CLOSE: Mutex<()> = Mutex::new(());

/// One DocDB instance on RocksDB.
pub struct DocDb {
    /// Always `Some` until drop (which closes it under [`OPEN_CLOSE`]).
    db: Option<DB>,
    gc: Arc<Mutex<GcState>>,
    history_cutoff_ht: HybridTime,
    /// The frontier found at open: what survived the last stop or crash.
    opened_frontier: Frontier,
    /// The planted bugs of this instance (and of the tablet above it).
    plants: Plants,
    /// The schema packings of the table whose rows this instance holds, if it packs them
    /// (empty: no packed rows; a packed row found then is corruption).
    packings: Packings,
    /// Packed rows are stored as RocksDB entities (the entity layout, `db/packed.rs`).
    entity_rows: bool,
    /// The frontier until the next flush writes it (`db/frontier.rs`).
    unflushed: Mutex<frontier::Unflushed>,
    /// The scans' iterator, kept until the database changes (`db/kept_iter.rs`).
    scan_iter: kept_iter::KeptIter,
    /// Scans with conditions on range components skip SST files by their bounds
    /// (`db/range_bounds.rs`), counted here.
    pruning: bool,
    pruned: Arc<range_bounds::PruneCounts>,
    /// The options the database was opened with: their statistics, if kept, count its
    /// reads.
    opts: rocksdb::Options,
    statistics: bool,
    /// The simulated disk's Env the database was opened with, kept alive until it closes
    /// (after `db`: `Drop` closes the database first).
    _sim_env: Option<Arc<crate::simfs::SimEnv>>,
    /// The directory RocksDB's files are in.
    dir: std::path::PathBuf,
    /// What it was opened with, to open it again after a restore (`db/restore.rs`).
    rocks: Rocks,
    storage: StorageConfig,
}

/// One row's stored entries, for the repacking plan: their keys, the entries (entity rows
/// read back as packed rows), and the first error reading one back.
#[derive(Default)]
struct StoredRow {
    keys: Vec<Vec<u8>>,
    entries: Vec<DocEntry>,
    undecodable: Option<String>,
}

impl DocDb {
    /// Open (or create) the instance in `dir` on the real file system.
    pub fn open(dir: &Path) -> Result<DocDb> {
        DocDb::open_in(dir, &Rocks::on_disk(), Plants::NONE, StorageConfig::default())
    }

    /// Open (or create) the instance in `dir` of the server's `rocks` (its environment,
    /// in memory for fast simulation or the real file system, and its block cache), with
    /// the bugs in `plants` planted ([`Plants::NONE`]: none).
    pub fn open_in(
        dir: &Path,
        rocks: &Rocks,
        plants: Plants,
        storage: StorageConfig,
    ) -> Result<DocDb> {
        if let Some(dirs) = snapshots::Dirs::of(rocks) {
            restore::finish_restore(&dirs, dir)?;
        }
        let db = DocDb::open_mode(dir, rocks, (plants, storage), false)?;
        db.remove_snapshot_leftovers()?;
        db.finish_checkpoint_install()?;
        Ok(db)
    }

    /// Open the instance in `dir` (a snapshot's checkpoint) to read only: nothing in its
    /// files changes.
    pub fn open_read_only(
        dir: &Path,
        rocks: &Rocks,
        plants: Plants,
        storage: StorageConfig,
    ) -> Result<DocDb> {
        DocDb::open_mode(dir, rocks, (plants, storage), true)
    }

    fn open_mode(
        dir: &Path,
        rocks: &Rocks,
        (plants, storage): (Plants, StorageConfig),
        read_only: bool,
    ) -> Result<DocDb> {
        let gc = Arc::new(Mutex::new(GcState { plants, ..GcState::default() }));
        let mut opts = options(gc.clone(), (storage, plants), rocks)?;
        let sim_env = rocks.install(&mut opts);
        let db = match read_only {
            true => options::open_read_only(&opts, dir),
            false => open_with_retry(&opts, dir),
        };
        let db = db.map_err(|e| naming_dir(e, dir))?;
        let history_cutoff_ht = match db.get(HISTORY_CUTOFF_KEY)? {
            None => HybridTime::MIN,
            Some(raw) => HybridTime::from_raw(u64::from_be_bytes(
                raw.try_into()
                    .map_err(|_| corrupt_record(HISTORY_CUTOFF_KEY, "not 8 bytes".into()))?,
            )),
        };
        let (op_id, ht) = match db.get(FRONTIER_KEY)? {
            None => (crate::ids::OpId::default(), HybridTime::MIN),
            Some(raw) => decode_frontier(&raw)?,
        };
        let opened_frontier = Frontier { op_id, ht, history_cutoff: history_cutoff_ht };
        let packings = Packings::default();
        let db = DocDb {
            db: Some(db),
            gc,
            history_cutoff_ht,
            opened_frontier,
            plants,
            packings,
            entity_rows: false,
            unflushed: Mutex::new(frontier::Unflushed::new(storage.memtable_mib << 20)),
            scan_iter: kept_iter::KeptIter::default(),
            pruning: storage.pruning,
            pruned: Arc::default(),
            opts,
            statistics: storage.statistics,
            _sim_env: sim_env,
            dir: dir.to_owned(),
            rocks: rocks.clone(),
            storage,
        };
        Ok(db)
    }

    /// The plants and storage configuration it was opened with.
    fn settings(&self) -> (Plants, StorageConfig) {
        (self.plants, self.storage)
    }

    /// The planted bugs this instance was opened with.
    pub(crate) fn plants(&self) -> Plants {
        self.plants
    }

    /// The packings of every schema version of the table, for reading its packed rows.
    /// `entity_rows`: they are stored as RocksDB entities.
    pub fn set_packings(&mut self, packings: Packings, entity_rows: bool) {
        lock(&self.gc).packings = packings.clone();
        (self.packings, self.entity_rows) = (packings, entity_rows);
    }

    /// The flushed frontier read when this instance was opened.
    pub fn opened_frontier(&self) -> Frontier {
        self.opened_frontier
    }

    fn db(&self) -> &DB {
        self.db.as_ref().expect("open until dropped")
    }

    /// Write one batch at `ht`: entry `i` gets write id `i`. No RocksDB WAL. `op_id` is the
    /// Raft entry carrying the batch; it becomes the frontier (`db/frontier.rs`). `meta`:
    /// metadata keys (`\x01...`) written in the same RocksDB batch, durable with the data.
    pub fn write(
        &self,
        entries: &DocWriteBatch,
        ht: HybridTime,
        op_id: Option<crate::ids::OpId>,
        meta: &[(&[u8], &[u8])],
    ) -> Result<()> {
        let data_bytes = entries.byte_len();
        let inline = lock(&self.unflushed).inline(op_id, ht, entries.len(), data_bytes);
        self.write_batch(entries, ht, inline, meta)?;
        lock(&self.unflushed).applied(op_id, ht, entries.len(), data_bytes);
        Ok(())
    }

    /// [`DocDb::write`]'s one RocksDB batch, carrying `frontier` if given. In the entity
    /// layout a packed row goes in as an entity (`db/packed.rs`), in the same batch.
    fn write_batch(
        &self,
        entries: &DocWriteBatch,
        ht: HybridTime,
        frontier: Option<(crate::ids::OpId, HybridTime)>,
        meta: &[(&[u8], &[u8])],
    ) -> Result<()> {
        // RocksDB's encoding: a 12-byte header, then per entry a tag, two lengths and the
        // key (with its hybrid time, at most 18 bytes more) and value.
        let bytes = 12 + 64 + entries.byte_len() + 48 * entries.len();
        let mut batch = crate::entity::EntityBatch::with_capacity(bytes);
        if let Some((op_id, ht)) = frontier {
            batch.put(FRONTIER_KEY, &metadata::encode_frontier(op_id, ht));
        }
        for (key, value) in meta {
            assert_eq!(key.first(), Some(&META_PREFIX), "a metadata key");
            batch.put(key, value);
        }
        for_each_keyed(entries, ht, |key, value| {
            let columns = if self.entity_rows {
                packed::entity_columns(value, &self.packings).map_err(|e| with_key(key, e))?
            } else {
                None
            };
            match columns {
                Some(columns) => {
                    let columns: Vec<(&[u8], &[u8])> =
                        columns.iter().map(|(n, v)| (&n[..], &v[..])).collect();
                    batch.put_entity(self.db(), key, &columns).map_err(Error::Storage)?;
                }
                None => batch.put(key, value),
            }
            Ok(())
        })?;
        let written = batch.write(self.db(), false).map_err(Error::Storage);
        self.scan_iter.changed();
        written
    }

    /// If `value` is an entity row, the packed row it stores, read back from the columns
    /// of the entity `it` is at (whose key is `key`; `db/packed.rs`); `None` for any other
    /// value, which stands as it is.
    fn entity_as_packed(&self, key: &[u8], value: &Value, it: &Iter<'_>) -> Result<Option<Value>> {
        let ValueKind::EntityRow(version) = value.kind else { return Ok(None) };
        let columns = it.columns();
        let body = packed::entity_body(version, &columns, (&self.packings, self.plants))
            .map_err(|e| with_key(key, e))?;
        Ok(Some(Value { ttl: value.ttl, kind: ValueKind::PackedRow(body) }))
    }

    /// Write `batch` without RocksDB's WAL (the Raft log is the only log).
    fn write_unlogged(&self, batch: WriteBatch) -> Result<()> {
        let mut opts = WriteOptions::default();
        opts.disable_wal(true);
        let written = self.db().write_opt(batch, &opts);
        self.scan_iter.changed();
        Ok(written?)
    }

    /// Call `f` with every stored key and value (metadata included), in key order, and
    /// the iterator there (an entity's columns).
    fn for_each_stored(
        &self,
        mut f: impl FnMut(&[u8], &[u8], &Iter<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut it = Iter::walk(self.db()); // every key, whatever the prefix, not cached
        it.seek_to_first();
        while let (Some(key), Some(value)) = (it.key(), it.value()) {
            f(key, value, &it)?;
            it.next();
        }
        it.status().map_err(Error::storage)
    }

    /// Read every stored entry once (RocksDB checks each block's checksum as it reads):
    /// the first damage found, as its error.
    pub fn read_everything(&self) -> Result<()> {
        self.for_each_stored(|_, _, _| Ok(()))
    }

    /// Refuse reads below the history cutoff.
    pub fn check_read_time(&self, read_ht: HybridTime) -> Result<()> {
        let refused = if self.plants.contains(Plant::ExclusiveCutoff) {
            self.planted_refuses_at_the_cutoff(read_ht)
        } else {
            read_ht < self.history_cutoff_ht
        };
        if refused {
            crate::probe::hit("read.snapshot_too_old");
            let cutoff_ht = self.history_cutoff_ht;
            if self.plants.contains(Plant::SnapshotErrorMislabelled) {
                return Err(planted_mislabelled(read_ht, cutoff_ht));
            }
            return Err(Error::SnapshotTooOld { read_ht, cutoff_ht });
        }
        Ok(())
    }

    /// The plant `exclusive-cutoff`: a read exactly at the history cutoff is refused too.
    /// (Code only a plant runs is named `planted_`: the mutation measures leave it out.)
    fn planted_refuses_at_the_cutoff(&self, read_ht: HybridTime) -> bool {
        read_ht <= self.history_cutoff_ht && self.history_cutoff_ht > HybridTime::MIN
    }

    /// Every stored entry in key order (metadata excluded), decoded, with raw bytes.
    pub fn dump(&self) -> Result<Vec<RawEntry>> {
        let mut out = Vec::new();
        self.for_each_stored(|key, value, it| {
            if key.first() != Some(&META_PREFIX) {
                let (k, mut v) = decode_entry(key, value)?;
                // An entity row whose columns do not decode dumps as it is stored.
                if let Ok(Some(packed)) = self.entity_as_packed(key, &v, it) {
                    v = packed;
                }
                out.push(((k, v), key.to_vec(), value.to_vec()));
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// What the memtables hold since the last flush ([`Memstore`]).
    pub fn memstore(&self) -> Memstore {
        lock(&self.unflushed).memstore()
    }

    /// Flush memtables to SST files and wait; the frontier goes in first.
    pub fn flush(&self) -> Result<()> {
        let pending = lock(&self.unflushed).pending();
        if let Some((op_id, ht)) = pending {
            let frontier = metadata::encode_frontier(op_id, ht);
            if self.plants.contains(Plant::FrontierWrittenApart) {
                self.ingest_apart(&frontier)?;
            } else {
                let mut batch = WriteBatch::default();
                batch.put(FRONTIER_KEY, frontier);
                self.write_unlogged(batch)?;
            }
        }
        let mut opts = FlushOptions::default();
        opts.set_wait(true);
        let flushed = self.db().flush_opt(&opts);
        self.scan_iter.changed();
        // Waited for even after a failure: the failed job may still be deleting files.
        let waited = crate::simfs::wait_for_background(self.db());
        flushed?;
        waited?;
        lock(&self.unflushed).flushed(pending);
        Ok(())
    }

    /// Planted `frontier-written-apart`: the frontier reaches RocksDB's files in an SST
    /// file and a MANIFEST edit of its own (an ingested file), before the flush of the
    /// data it covers: a power cut between the two edits leaves the frontier ahead of
    /// the data. YugabyteDB's #730 and #17261 in docsim's terms (a compaction installing
    /// a frontier that is not its data's).
    fn ingest_apart(&self, frontier: &[u8]) -> Result<()> {
        let path = self.dir.join("frontier-apart.sst");
        let mut writer = rocksdb::SstFileWriter::create(&self.opts);
        writer.open(&path)?;
        writer.put(FRONTIER_KEY, frontier)?;
        writer.finish()?;
        self.db().ingest_external_file(vec![&path])?;
        self.scan_iter.changed();
        Ok(())
    }

    /// Flush, then compact every file with history cutoff `cutoff_ht` (inclusive).
    /// Afterwards reads below the highest cutoff so far are refused; the cutoff is stored
    /// in the same instance, flushed with the compaction, and survives restarts.
    /// `files`: `None` for every file; else a run of files by age, which makes the
    /// compaction minor whatever `kind` says (it is not the bottommost one).
    pub fn compact(
        &mut self,
        cutoff_ht: HybridTime,
        kind: CompactionKind,
        (table_ttl_ms, schema): (Option<u64>, crate::gc::SchemaGc),
        files: Option<std::ops::RangeInclusive<usize>>,
    ) -> Result<()> {
        let kind = if files.is_some() { CompactionKind::Minor } else { kind };
        // The run's files, named before the compaction's own flush adds the newest one.
        let run = files.map(|range| self.file_names(range)).transpose()?;
        let (params, repack) = self.plan_compaction(
            GcParams {
                schema: Arc::new(schema),
                planted_keeps_expired: self.plants.contains(Plant::GcKeepsExpired),
                ..GcParams::new(cutoff_ht, kind, table_ttl_ms)
            },
            run.is_none(),
        )?;
        let highest = self.history_cutoff_ht.max(cutoff_ht);
        let mut opts = WriteOptions::default();
        opts.disable_wal(true);
        self.db().put_opt(HISTORY_CUTOFF_KEY, highest.raw().to_be_bytes(), &opts)?;
        self.flush()?;
        if let Some(plan) = &repack {
            crate::probe::add("gc.repacked_rows", plan.rewrite.len() as u64);
            crate::probe::add("gc.folded_into_packed_rows", plan.fold.len() as u64);
        }
        {
            let mut gc = self.gc_state();
            gc.params = Some(params);
            gc.repack = repack;
        }
        let compacted = match &run {
            None => crate::simfs::compact_all(self.db()),
            Some(names) => crate::sst_files::compact_files(self.db(), names),
        };
        let compacted = compacted.and(crate::simfs::wait_for_background(self.db()));
        self.scan_iter.changed();
        let (corrupt, failures, counts) = {
            let mut gc = self.gc_state();
            (gc.params, gc.repack) = (None, None);
            let failures = std::mem::take(&mut gc.failures);
            (std::mem::take(&mut gc.corrupt), failures, std::mem::take(&mut gc.counts))
        };
        crate::probe::add("gc.dropped", counts[0]);
        crate::probe::add("gc.rewritten_as_tombstone", counts[1]);
        crate::probe::add("gc.kept_above_cutoff", counts[2]);
        crate::probe::add("gc.kept_expired", counts[3]);
        crate::probe::hit(match kind {
            CompactionKind::Full => "gc.compaction.full",
            CompactionKind::Minor => "gc.compaction.minor",
        });
        compacted?;
        self.history_cutoff_ht = highest;
        filter_result(&corrupt, &failures)
    }

    /// What a compaction with `params` plans before anything is written (the plans read
    /// the memtables too); `every_file`: it compacts every file (no run of them). A full
    /// compaction of every file plans the repacking of each row (it needs every file: a
    /// rule of docsim's) and the expired entries a newer descendant outlives
    /// (`gc::ExpiredKeeps`; YugabyteDB keeps none, `--plant yb-expired-parent-gc`).
    fn plan_compaction(
        &self,
        mut params: GcParams,
        every_file: bool,
    ) -> Result<(GcParams, Option<Arc<RepackPlan>>)> {
        if !every_file || params.kind != CompactionKind::Full {
            return Ok((params, None));
        }
        // A column dropped after the cutoff keeps its values: a repack under the newest
        // schema would lose them, and a restore to a time before the drop brings the
        // column back (docsim's rule; seed 92963). Rows expired whole still go: expired
        // at the cutoff, they are expired at every time a restore can go back to (seed
        // 95335, three replicas: the rule kept one forever).
        let dropped_after = params.schema.dropped.iter().any(|(_, ht)| *ht > params.cutoff_ht);
        let repack = match self.packings.is_empty() {
            false => {
                let cutoff = (params.cutoff_ht, params.table_ttl_ms);
                Some(Arc::new(self.plan_repack(cutoff, dropped_after)?))
            }
            true => None,
        };
        if !self.plants.contains(Plant::YbExpiredParentGc) {
            params.keep_expired = Arc::new(self.plan_expired_keeps(&params, repack.as_deref())?);
        }
        Ok((params, repack))
    }

    /// Plan the repacking of every row for a full compaction with `cutoff` (the history
    /// cutoff, the table's TTL): each row's stored entries, decoded, through the pure
    /// [`crate::gc::plan_row`]; `expired_only`: only the rows that go whole.
    fn plan_repack(
        &self,
        cutoff: (HybridTime, Option<u64>),
        expired_only: bool,
    ) -> Result<RepackPlan> {
        let mut plan = RepackPlan::default();
        let (mut row, mut doc) = (StoredRow::default(), Vec::new());
        self.for_each_stored(|key, value, it| {
            if key.first() == Some(&META_PREFIX) {
                return Ok(());
            }
            let doc_len = doc_key_len(key).ok_or_else(|| corrupt_key(key, "no document key"))?;
            if key[..doc_len] != doc[..] {
                self.plan_stored_row(std::mem::take(&mut row), cutoff, expired_only, &mut plan);
                doc = key[..doc_len].to_vec();
            }
            let mut entry = decode_doc_entry(key, doc_len, false, value)?;
            match self.entity_as_packed(key, &entry.value, it) {
                Ok(Some(packed)) => entry.value = packed,
                Ok(None) => {}
                Err(e) => row.undecodable = Some(e.to_string()),
            }
            row.keys.push(key.to_vec());
            row.entries.push(entry);
            Ok(())
        })?;
        self.plan_stored_row(row, cutoff, expired_only, &mut plan);
        Ok(plan)
    }

    /// The expired entries a full compaction with `params` keeps all the same
    /// (`gc::ExpiredKeeps`), from one pass over what is stored: each entry is fed to a GC
    /// feed of the same compaction, and only what it keeps (and `repack` does not fold)
    /// can outlive an expired ancestor.
    fn plan_expired_keeps(
        &self,
        params: &GcParams,
        repack: Option<&RepackPlan>,
    ) -> Result<crate::gc::KeptExpired> {
        let mut keeps = crate::gc::ExpiredKeeps::new(params);
        let mut feed = crate::gc::GcFeed::new(params.clone());
        self.for_each_stored(|key, value, _| {
            if key.first() == Some(&META_PREFIX) {
                return Ok(());
            }
            // What does not decode, or breaks the feed's order, is the compaction
            // filter's to report.
            let (Ok((k, v)), Some(components)) =
                (decode_entry(key, value), gc_filter::key_components(key))
            else {
                return Ok(());
            };
            let folded = repack.is_some_and(|plan| plan.fold.contains(key));
            let table_doc = k.path.doc_key.is_table_key();
            let entry = (&v.kind, table_doc, folded);
            let verdict = gc_filter::feed_verdict(&mut feed, &components, k.doc_ht, entry, v.ttl);
            let stays = verdict.is_ok_and(|v| v != Verdict::Drop) && !folded;
            let stays = stays && v.kind != ValueKind::Tombstone;
            keeps.see(&components, (k.doc_ht, v.ttl), (stays, table_doc));
            Ok(())
        })?;
        Ok(keeps.finish())
    }

    /// Add one row's repacking to `plan`. A row whose packed bytes do not decode is not
    /// repacked: it is recorded with the compaction's undecodable entries, which the
    /// compaction reports as its error.
    fn plan_stored_row(
        &self,
        row: StoredRow,
        cutoff: (HybridTime, Option<u64>),
        expired_only: bool,
        plan: &mut RepackPlan,
    ) {
        let planned = match row.undecodable {
            Some(error) => Err(error),
            None => crate::gc::plan_row(&row.entries, cutoff, &self.packings, self.plants)
                .map_err(|e| with_key(row.keys.first().map_or(&[], Vec::as_slice), e).to_string()),
        };
        match planned {
            Ok(Some(p)) if expired_only && p.value.is_some() => {} // a rewrite: not now
            Ok(Some(p)) => {
                if let Some(value) = p.value {
                    plan.rewrite.insert(row.keys[p.packed_row].clone(), value);
                }
                plan.fold.extend(p.folded.into_iter().map(|i| row.keys[i].clone()));
            }
            Ok(None) => {}
            Err(error) => self.gc_state().corrupt.push(error),
        }
    }

    /// The names of the run `range` of the SST files, oldest first (0-based).
    fn file_names(&self, range: std::ops::RangeInclusive<usize>) -> Result<Vec<String>> {
        let files = self.files();
        match files.get(range.clone()).filter(|run| !run.is_empty()) {
            Some(run) => Ok(run.iter().map(|f| f.name.clone()).collect()),
            None => {
                let (first, last, listed) = (range.start(), range.end(), files.len());
                let why = format!("files={first}..{last}: the tablet has {listed} SST files");
                Err(Error::InvalidRequest(why))
            }
        }
    }

    /// The live SST files, oldest first.
    pub fn files(&self) -> Vec<crate::sst_files::SstFile> {
        crate::sst_files::live_files(self.db())
    }

    /// The highest history cutoff so far.
    pub fn history_cutoff(&self) -> HybridTime {
        self.history_cutoff_ht
    }

    fn gc_state(&self) -> std::sync::MutexGuard<'_, GcState> {
        lock(&self.gc)
    }
}

impl Drop for DocDb {
    fn drop(&mut self) {
        let _guard = OPEN_CLOSE.lock().unwrap_or_else(|e| e.into_inner());
        self.scan_iter.changed(); // its iterator first: it reads the database
        drop(self.db.take());
    }
}

/// A failure to open RocksDB in `dir` that names no file of it (`Corruption: CURRENT file
/// corrupted`) names the tablet's directory first (`docs: ...`), as every other such
/// error names its file (`docs/MANIFEST-000005`).
fn naming_dir(e: Error, dir: &Path) -> Error {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let named = |message: String| match message.contains(&format!("{name}/")) {
        true => message,
        false => format!("{name}: {message}"),
    };
    match e {
        Error::FileCorruption(message) => Error::FileCorruption(named(message)),
        Error::Io(message) => Error::Io(named(message)),
        other => other,
    }
}

/// Call `f` with the stored key and the value of each entry of `entries`, written at
/// `ht`: entry `i` gets write id `i`.
fn for_each_keyed(
    entries: &DocWriteBatch,
    ht: HybridTime,
    mut f: impl FnMut(&[u8], &[u8]) -> Result<()>,
) -> Result<()> {
    let times = crate::encoding::BatchTimeEncoder::new(ht);
    // Keys are short: each is built on the stack (RocksDB copies it).
    let mut key = smallvec::SmallVec::<[u8; 128]>::new();
    for (write_id, (path, value)) in entries.iter().enumerate() {
        key.clear();
        key.extend_from_slice(path);
        key.push(crate::encoding::tag::HYBRID_TIME);
        let (time, len) = times.encoded(write_id as u32);
        key.extend_from_slice(&time[..len]);
        f(&key, value)?;
    }
    Ok(())
}

/// The plant `snapshot-error-mislabelled`: a read below the cutoff is refused with a
/// storage error's kind, not `snapshot_too_old`.
fn planted_mislabelled(read_ht: HybridTime, cutoff_ht: HybridTime) -> Error {
    let why =
        format!("snapshot too old: read at {read_ht} is below the history cutoff {cutoff_ht}");
    Error::Storage(why)
}

/// Shared state (the GC's, the unflushed frontier), also after a panic elsewhere poisoned
/// the lock: it is plain data, and the compaction filter must never panic on RocksDB's
/// thread.
fn lock<T>(state: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

fn with_key(key: &[u8], error: crate::error::DecodeError) -> Error {
    Error::Corruption { error, key: Some(crate::encoding::hex(key)) }
}

/// A metadata record (history cutoff, frontier) that does not decode.
fn corrupt_record(key: &[u8], reason: String) -> Error {
    with_key(key, crate::error::DecodeError::new("metadata record", 0, reason))
}

fn corrupt_key(key: &[u8], reason: &str) -> Error {
    with_key(key, crate::error::DecodeError::new("key", 0, reason))
}

fn decode_entry(key: &[u8], value: &[u8]) -> Result<Entry> {
    let k = SubDocKey::decode(key).map_err(|e| with_key(key, e))?;
    let v = Value::decode(value).map_err(|e| with_key(key, e))?;
    Ok((k, v))
}

/// Decode an entry of a document whose key is `key[..doc_len]`: only the subkeys, the
/// version and the value.
fn decode_doc_entry(key: &[u8], doc_len: usize, table_key: bool, value: &[u8]) -> Result<DocEntry> {
    let (subkeys, doc_ht) =
        crate::encoding::decode_key_suffix(key, doc_len).map_err(|e| with_key(key, e))?;
    let value = Value::decode(value).map_err(|e| with_key(key, e))?;
    Ok(DocEntry { table_key, subkeys, doc_ht, value })
}

#[cfg(test)]
mod storage_tests {
    /// A small write from the log leaves the frontier to the flush (it rides inline only
    /// once half the memtable is written: `db/frontier.rs`), and the flush stores it.
    #[test]
    fn a_small_write_leaves_the_frontier_to_the_flush() {
        use crate::{hybrid_time::HybridTime, log::OpId};
        let dir = crate::tests::scratch_dir("frontier-waits");
        let db = super::DocDb::open(&dir).expect("open");
        crate::tests::write_int(&db, 1, 1_000, Some(OpId::new(1, 1)));
        let ht = HybridTime::from_micros(1_000);
        let stored = |db: &super::DocDb| db.db().get(super::FRONTIER_KEY).expect("read");
        assert_eq!(stored(&db), None, "not before the flush");
        db.flush().expect("flush");
        let frontier = super::metadata::encode_frontier(OpId::new(1, 1), ht);
        assert_eq!(stored(&db), Some(frontier.to_vec()));
    }

    /// A full compaction counts what it did in the coverage probes: the versions a newer
    /// one at or below the cutoff overwrote dropped, and an object expired through a TTL
    /// of its own dropped too (`gc.rs`); the one above the cutoff kept (the one exactly at
    /// the cutoff is kept, not above it).
    #[test]
    fn a_compaction_counts_what_it_dropped_and_kept() {
        use crate::encoding::{DocKey, DocPath, KeyEntry, Primitive, Ttl, Value, ValueKind};
        use crate::{gc::CompactionKind, hybrid_time::HybridTime};
        let dir = crate::tests::scratch_dir("gc-counts");
        let mut db = super::DocDb::open(&dir).expect("open");
        for (n, us) in [(1, 5_000), (2, 10_000), (3, 20_000), (4, 30_000)] {
            crate::tests::write_int(&db, n, us, None);
        }
        let mut batch = crate::write_batch::DocWriteBatch::new();
        let doc = DocKey::new(vec![], vec![KeyEntry::asc(Primitive::String("e".into()))]);
        let value = Value { ttl: Ttl::from_ms(1), ..Value::new(ValueKind::Object) };
        batch.push(&DocPath::new(doc, vec![]), &value);
        db.write(&batch, HybridTime::from_micros(1_000), None, &[]).expect("write");
        crate::probe::take();
        let cutoff_ht = HybridTime::from_micros(20_000);
        db.compact(cutoff_ht, CompactionKind::Full, (None, Default::default()), None)
            .expect("compact");
        let counts = crate::probe::take();
        let count = |name: &str| counts.get(name).copied();
        let names = ["gc.dropped", "gc.kept_above_cutoff", "gc.kept_expired"];
        assert_eq!(names.map(count), [Some(3), Some(1), None], "{counts:?}");
        // Again: nothing left to drop, and a probe nothing was added to is absent.
        db.compact(cutoff_ht, CompactionKind::Full, (None, Default::default()), None)
            .expect("compact");
        let counts = crate::probe::take();
        let count = |name: &str| counts.get(name).copied();
        assert_eq!(names.map(count), [None, Some(1), None], "{counts:?}");
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A stored key whose DocHybridTime does not decode is refused by a read, the error
    /// naming the key and the offset of the time in it (just past the `#`).
    #[test]
    fn a_stored_key_with_a_bad_time_is_refused_at_its_offset() {
        let dir = crate::tests::scratch_dir("bad-time");
        let db = super::DocDb::open(&dir).expect("open");
        let doc = crate::tests::doc_d();
        let mut key = doc.encode();
        key.push(crate::encoding::tag::HYBRID_TIME);
        let time_at = key.len();
        key.extend([0; 40]); // longer than any DocHybridTime
        db.db().put(&key, [crate::encoding::tag::VALUE_TOMBSTONE]).expect("put");
        let read_ht = crate::hybrid_time::HybridTime::from_micros(5_000);
        let refused = db.scan_document_at(&doc, read_ht).expect_err("a bad time");
        let super::Error::Corruption { error, key: named } = refused else {
            panic!("not a corruption: {refused}")
        };
        assert_eq!((error.what, error.offset), ("DocHybridTime", time_at), "{error}");
        assert_eq!(named, Some(crate::encoding::hex(&key)));
    }
}
