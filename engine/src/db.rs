//! The RocksDB glue: options chosen for a DocDB, write batches without WAL, document scans,
//! flush, and compaction through the GC adapter.
//!
//! Automatic compactions are off: the caller (the simulator, a script) flushes and
//! compacts explicitly, and both run to completion before the call returns, so RocksDB's
//! background threads never race the caller. The RocksDB WAL is off (the tablet's Raft
//! log is the only log) and memtables are not flushed at close, so a crash loses them.
//!
//! Document scans reuse one RocksDB iterator until the database next changes
//! (`db/kept_iter.rs`): creating an iterator costs about as much as the seek after it.

use crate::canary::{Plant, Plants};
use crate::document::Document;
use crate::encoding::{doc_key_len, DocKey, DocPath, Packings, SubDocKey, Ttl, Value, ValueKind};
use crate::entity::{EntityDecision, Iter};
use crate::error::{Error, Result};
use crate::gc::{CompactionKind, FeedError, GcFeed, GcParams, Verdict};
use crate::hybrid_time::{DocHybridTime, HybridTime};
use crate::reader::{read_subdocument, DocEntry, ReadConfig};
use crate::shadow::Shadow;
use crate::write_batch::DocWriteBatch;
use rocksdb::compaction_filter::{CompactionFilter, Decision};
use rocksdb::{
    BlockBasedOptions, BottommostLevelCompaction, Cache, CompactOptions, DBCompactionStyle,
    FlushOptions, Options, SliceTransform, WriteBatch, WriteOptions, DB,
};
use std::ffi::CStr;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

mod frontier;
mod kept_iter;
mod packed;
pub(crate) use packed::PackedCells;
mod peer_state;
pub use peer_state::Export;
pub(crate) use peer_state::CONF_KEY;

/// First byte of the engine's own metadata keys; sorts before every document key.
const META_PREFIX: u8 = 0x01;
/// Metadata key holding the highest history cutoff so far (8 bytes, big-endian raw HT).
const HISTORY_CUTOFF_KEY: &[u8] = b"\x01history_cutoff";
/// Metadata key holding the op id (term, index) and hybrid time of the last Raft entry
/// applied (24 bytes, big-endian). It is put into the memtable just before each flush
/// (`db/frontier.rs`), so it reaches an SST file in the same flush as the data it covers:
/// RocksDB installs a flush's files atomically (MANIFEST), and without a WAL a crash
/// keeps only what was flushed. Read back at open (memtables are empty then), it is
/// therefore exactly the **flushed frontier**: the last entry whose data is durable.
const FRONTIER_KEY: &[u8] = b"\x01frontier";

/// RocksDB options and row layouts that must never change what a reader sees (the
/// metamorphic set, `docsim run --metamorphic`). Only options that change neither which
/// files a compaction sees nor when flushes happen belong here: no memtable small enough
/// to flush by itself (a larger one is in the set), no leveled compaction (GC's
/// full-compaction premise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StorageConfig {
    /// The data block size of SST files.
    pub block_bytes: usize,
    /// Bloom filters over the document-key prefix.
    pub bloom_filter: bool,
    /// Snappy compression of SST blocks (the only codec librocksdb-sys builds here).
    pub snappy: bool,
    /// How CQL rows are stored.
    pub layout: Layout,
    /// The memtable size (`write_buffer_size`), in MiB; RocksDB's default is 64.
    pub memtable_mib: usize,
}

/// How CQL rows are stored: the tables' own choice, or packed rows for every table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Each table as declared: one entry per column unless `WITH packed_rows = true`.
    Declared,
    /// Every table packs its rows (`WITH packed_rows = true` for all).
    Packed,
    /// No table packs its rows, whatever its `WITH` says (tests compare the two).
    Unpacked,
    /// Every table packs its rows, each packed row stored as a RocksDB entity with one
    /// column per CQL column (`db/packed.rs`).
    Entity,
}

impl Default for StorageConfig {
    fn default() -> StorageConfig {
        StorageConfig::SET[0]
    }
}

impl StorageConfig {
    /// The metamorphic set: the default first. RocksDB's own default compression is
    /// snappy when it is built in, as here.
    pub const SET: [StorageConfig; 7] = [
        config(32, true, true, DECL, 64),
        config(1, true, true, DECL, 64),
        config(32, false, true, DECL, 64),
        config(4, false, false, DECL, 64),
        config(32, true, true, PACKED, 64),
        config(32, true, true, ENTITY, 64),
        config(32, true, true, DECL, 256),
    ];
}

/// A configuration of the set: block size in KiB, bloom filters, snappy, the layout and
/// the memtable size in MiB.
const fn config(
    block_kib: usize,
    bloom_filter: bool,
    snappy: bool,
    layout: Layout,
    memtable_mib: usize,
) -> StorageConfig {
    StorageConfig { block_bytes: block_kib << 10, bloom_filter, snappy, layout, memtable_mib }
}

const DECL: Layout = Layout::Declared;
const PACKED: Layout = Layout::Packed;
const ENTITY: Layout = Layout::Entity;

impl std::fmt::Display for StorageConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bloom = if self.bloom_filter { "bloom" } else { "no-bloom" };
        let codec = if self.snappy { "snappy" } else { "uncompressed" };
        let layout = match self.layout {
            Layout::Declared => "",
            Layout::Packed => " packed",
            Layout::Unpacked => " unpacked",
            Layout::Entity => " entity",
        };
        write!(f, "block={}KiB {bloom} {codec}{layout}", self.block_bytes >> 10)?;
        match self.memtable_mib {
            64 => Ok(()),
            mib => write!(f, " memtable={mib}MiB"),
        }
    }
}

/// The flushed frontier as stored: the op id and hybrid time of the last entry whose data
/// is durable, and the history cutoff persisted with the data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Frontier {
    pub op_id: crate::ids::OpId,
    pub ht: HybridTime,
    pub history_cutoff: HybridTime,
}

/// The block cache shared by every engine instance in the process (as a YB-TServer shares
/// one across its tablets).
fn shared_block_cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(|| Cache::new_lru_cache(64 << 20))
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
}

/// What the caller's thread and the compaction filter (on RocksDB's threads) share. The
/// filter never panics: what goes wrong there is recorded here and reported by
/// [`DocDb::compact`] after the compaction.
#[derive(Default)]
struct GcState {
    params: Option<GcParams>,
    /// The planted bugs, for the filter (set at open).
    plants: Plants,
    /// Keys the compaction filter could not decode (kept untouched, reported here).
    corrupt: Vec<String>,
    /// Entries the GC feed refused (out of key order: kept untouched, reported here).
    failures: Vec<String>,
    /// Verdict counts of finished compaction filters: dropped, rewritten, kept above H,
    /// kept expired (a TTL of its own).
    counts: [u64; 4],
    /// The repacking plan of the running full compaction (`gc/repack.rs`).
    repack: Option<Arc<RepackPlan>>,
    /// The table's packings, to turn a repacked row into an entity's columns.
    packings: Packings,
}

/// One row's stored entries, for the repacking plan: their keys, the entries (entity rows
/// read back as packed rows), and the first error reading one back.
#[derive(Default)]
struct StoredRow {
    keys: Vec<Vec<u8>>,
    entries: Vec<DocEntry>,
    undecodable: Option<String>,
}

/// What repacking does in one compaction, by stored key: the packed rows that get a new
/// value, and the entries folded into them (dropped).
#[derive(Default)]
struct RepackPlan {
    rewrite: std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
    fold: std::collections::BTreeSet<Vec<u8>>,
}

impl DocDb {
    /// Open (or create) the instance in `dir` on the real file system.
    pub fn open(dir: &Path) -> Result<DocDb> {
        DocDb::open_in(dir, None, Plants::NONE, StorageConfig::default())
    }

    /// Open (or create) the instance in `dir` of `env` (an in-memory RocksDB environment,
    /// for fast simulation), or of the real file system when `env` is `None`, with the
    /// bugs in `plants` planted ([`Plants::NONE`]: none).
    pub fn open_in(
        dir: &Path,
        env: Option<&rocksdb::Env>,
        plants: Plants,
        storage: StorageConfig,
    ) -> Result<DocDb> {
        let gc = Arc::new(Mutex::new(GcState { plants, ..GcState::default() }));
        let mut opts = options(gc.clone(), storage)?;
        if let Some(env) = env {
            opts.set_env(env);
        }
        let db = open_with_retry(&opts, dir)?;
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
        Ok(DocDb {
            db: Some(db),
            gc,
            history_cutoff_ht,
            opened_frontier,
            plants,
            packings,
            entity_rows: false,
            unflushed: Mutex::new(frontier::Unflushed::new(storage.memtable_mib << 20)),
            scan_iter: kept_iter::KeptIter::default(),
        })
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
            batch.put(FRONTIER_KEY, &peer_state::encode_frontier(op_id, ht));
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
        let mut it = Iter::new(self.db(), None, true); // every key, whatever the prefix
        it.seek_to_first();
        while let (Some(key), Some(value)) = (it.key(), it.value()) {
            f(key, value, &it)?;
            it.next();
        }
        it.status().map_err(Error::Storage)
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

    /// The entries of `doc_key`'s document that a read at `read_ht` needs, in key order,
    /// preceded by its colocated table key's (the table tombstone is an ancestor of every
    /// document of the table).
    pub fn scan_document_at(&self, doc_key: &DocKey, read_ht: HybridTime) -> Result<Vec<DocEntry>> {
        self.scan_document(doc_key, NeededAt::new(read_ht))
    }

    /// Like [`DocDb::scan_document_at`], but every path's newest version at or before
    /// `read_ht` (and the version beneath a TTL-only record), also one an ancestor
    /// overwrote later: what a YugabyteDB write batch's prefix seeks see (`doc_write.rs`).
    /// The reader still reads these entries right.
    pub fn scan_document_newest_at(
        &self,
        doc_key: &DocKey,
        read_ht: HybridTime,
    ) -> Result<Vec<DocEntry>> {
        self.scan_document(doc_key, NeededAt { skip_overwritten: false, ..NeededAt::new(read_ht) })
    }

    fn scan_document(&self, doc_key: &DocKey, needed: NeededAt) -> Result<Vec<DocEntry>> {
        let read_ht = needed.read_ht;
        let mut entries = Vec::new();
        if let Some(id) = doc_key.colocation_id {
            if !doc_key.is_table_key() {
                let table = DocKey { colocation_id: Some(id), ..DocKey::default() };
                entries.extend(self.table_tombstone_at(&table.encode(), read_ht)?);
            }
        }
        self.scan_doc_prefix(&doc_key.encode(), doc_key.is_table_key(), needed, &mut entries)?;
        Ok(entries)
    }

    /// The newest tombstone at or before `read_ht` at the table key `table` (encoded): the
    /// only entry there that is an ancestor of the table's documents (`reader.rs`).
    fn table_tombstone_at(&self, table: &[u8], read_ht: HybridTime) -> Result<Option<DocEntry>> {
        let mut it = self.document_iterator(table);
        while let (Some(key), Some(value)) = (it.key(), it.value()) {
            if !key.starts_with(table) {
                break;
            }
            let entry = decode_doc_entry(key, table.len(), true, value)?;
            if !entry.subkeys.is_empty() {
                break; // the table key's own versions come first; the rest are below it
            }
            if entry.doc_ht.ht <= read_ht && entry.value.kind == ValueKind::Tombstone {
                return Ok(Some(entry));
            }
            it.next();
        }
        it.status().map_err(Error::Storage)?;
        Ok(None)
    }

    /// The entries `needed` keeps: versions newer than the read, older versions of a path
    /// and (usually) versions an ancestor overwrote are skipped on their raw bytes, without
    /// decoding (reads of documents with long histories stay cheap).
    fn scan_doc_prefix(
        &self,
        doc: &[u8],
        table_key: bool,
        mut needed: NeededAt,
        out: &mut Vec<DocEntry>,
    ) -> Result<()> {
        let mut it = self.document_iterator(doc);
        let (from, mut packed) = (out.len(), false);
        while let (Some(key), Some(value)) = (it.key(), it.value()) {
            if !key.starts_with(doc) {
                break; // only without an upper bound (a prefix of 0xff bytes)
            }
            if needed.needed(key, value, doc.len())? {
                let mut entry = decode_doc_entry(key, doc.len(), table_key, value)?;
                if let Some(packed) = self.entity_as_packed(key, &entry.value, &it)? {
                    entry.value = packed;
                }
                packed |= packed::push_entry(entry, (&self.packings, self.plants), key, out)?;
            }
            it.next();
        }
        it.status().map_err(Error::Storage)?;
        if packed {
            out[from..].sort_by(DocEntry::key_cmp);
        }
        Ok(())
    }

    /// An iterator over the keys of one document (or the table key) `doc`, positioned at
    /// the first. Bounded above by the key's successor, the prefix bloom filters let the
    /// seek skip files that hold none of its keys. (Through the C API, so an entity's
    /// columns can be read where the iterator is.)
    fn document_iterator(&self, doc: &[u8]) -> Iter<'_> {
        let bound = prefix_successor(doc);
        // Without a bound (a key of 0xff bytes), in total order.
        let total_order = bound.is_none();
        let mut it = Iter::new(self.db(), bound, total_order);
        it.seek(doc);
        it
    }

    /// Every document whose key starts with `prefix` (e.g. one hash key's rows), each with
    /// what a read with `read` needs of it, in key order.
    pub(crate) fn scan_documents(
        &self,
        prefix: &[u8],
        read: &ReadConfig,
    ) -> Result<Vec<(DocKey, DocRead)>> {
        // SAFETY: the database closes only in `drop`, which forgets the iterator first.
        let mut taken = unsafe { self.scan_iter.take(self.db()) };
        let docs = self.scan_with(&mut taken.iter, prefix, read)?;
        self.scan_iter.keep(taken);
        Ok(docs)
    }

    /// [`DocDb::scan_documents`] with the iterator `it`.
    fn scan_with(
        &self,
        it: &mut Iter<'_>,
        prefix: &[u8],
        read: &ReadConfig,
    ) -> Result<Vec<(DocKey, DocRead)>> {
        it.seek(prefix);
        let mut docs = Documents::default();
        let mut needed = NeededAt::new(read.read_ht);
        while let (Some(key), Some(value)) = (it.key(), it.value()) {
            if !key.starts_with(prefix) {
                break;
            }
            let doc_len = doc_key_len(key).ok_or_else(|| corrupt_key(key, "no document key"))?;
            if needed.needed(key, value, doc_len)? {
                if key[..doc_len] != docs.current[..] {
                    docs.finish(read);
                    docs.start(key, doc_len)?;
                }
                let table_key = docs.out.last().expect("started above").0.is_table_key();
                let mut entry = decode_doc_entry(key, doc_len, table_key, value)?;
                if let Some(packed) = self.entity_as_packed(key, &entry.value, it)? {
                    entry.value = packed;
                }
                docs.add(packed::scanned(entry, (&self.packings, self.plants), key)?);
            }
            it.next();
        }
        it.status().map_err(Error::Storage)?;
        docs.finish(read);
        Ok(docs.out)
    }

    /// The subdocument at `path` as of `read_ht`, with the table default TTL.
    pub fn get(
        &self,
        path: &DocPath,
        read_ht: HybridTime,
        table_ttl_ms: Option<u64>,
    ) -> Result<Option<Document>> {
        self.check_read_time(read_ht)?;
        let entries = self.scan_document_at(&path.doc_key, read_ht)?;
        Ok(read_subdocument(entries, path, self.read_config(read_ht, table_ttl_ms)))
    }

    /// What a read at `read_ht` with this table default TTL is, on this instance.
    pub(crate) fn read_config(&self, read_ht: HybridTime, table_ttl_ms: Option<u64>) -> ReadConfig {
        ReadConfig { read_ht, table_ttl_ms, plants: self.plants }
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

    /// Flush memtables to SST files and wait; the frontier goes in first.
    pub fn flush(&self) -> Result<()> {
        let pending = lock(&self.unflushed).pending();
        if let Some((op_id, ht)) = pending {
            let mut batch = WriteBatch::default();
            batch.put(FRONTIER_KEY, peer_state::encode_frontier(op_id, ht));
            self.write_unlogged(batch)?;
        }
        let mut opts = FlushOptions::default();
        opts.set_wait(true);
        let flushed = self.db().flush_opt(&opts);
        self.scan_iter.changed();
        flushed?;
        lock(&self.unflushed).flushed(pending);
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
        table_ttl_ms: Option<u64>,
        files: Option<std::ops::RangeInclusive<usize>>,
    ) -> Result<()> {
        let kind = if files.is_some() { CompactionKind::Minor } else { kind };
        // The run's files, named before the compaction's own flush adds the newest one.
        let run = files.map(|range| self.file_names(range)).transpose()?;
        // Repacking needs every file: full compactions only (a rule of docsim's). Planned
        // before anything is written (the plan reads the memtables too).
        let repack = match (&run, kind) {
            (None, CompactionKind::Full) if !self.packings.is_empty() => {
                Some(Arc::new(self.plan_repack(cutoff_ht)?))
            }
            _ => None,
        };
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
            gc.params = Some(GcParams { cutoff_ht, kind, table_ttl_ms });
            gc.repack = repack;
        }
        let compacted = match &run {
            None => {
                let mut copts = CompactOptions::default();
                copts.set_exclusive_manual_compaction(true);
                copts.set_bottommost_level_compaction(BottommostLevelCompaction::Force);
                self.db().compact_range_opt(None::<&[u8]>, None::<&[u8]>, &copts);
                Ok(())
            }
            Some(names) => crate::sst_files::compact_files(self.db(), names),
        };
        self.scan_iter.changed();
        let (corrupt, failures, counts) = {
            let mut gc = self.gc_state();
            (gc.params, gc.repack) = (None, None);
            let failures = std::mem::take(&mut gc.failures);
            (std::mem::take(&mut gc.corrupt), failures, std::mem::take(&mut gc.counts))
        };
        crate::probe::add("gc.dropped", counts[0]);
        // counts[1] (rewritten as tombstones) stays 0: only a plant rewrites entries.
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

    /// Plan the repacking of every row for a full compaction with cutoff `cutoff_ht`: each
    /// row's stored entries, decoded, through the pure [`crate::gc::plan_row`].
    fn plan_repack(&self, cutoff_ht: HybridTime) -> Result<RepackPlan> {
        let mut plan = RepackPlan::default();
        let (mut row, mut doc) = (StoredRow::default(), Vec::new());
        self.for_each_stored(|key, value, it| {
            if key.first() == Some(&META_PREFIX) {
                return Ok(());
            }
            let doc_len = doc_key_len(key).ok_or_else(|| corrupt_key(key, "no document key"))?;
            if key[..doc_len] != doc[..] {
                self.plan_stored_row(std::mem::take(&mut row), cutoff_ht, &mut plan);
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
        self.plan_stored_row(row, cutoff_ht, &mut plan);
        Ok(plan)
    }

    /// Add one row's repacking to `plan`. A row whose packed bytes do not decode is not
    /// repacked: it is recorded with the compaction's undecodable entries, which the
    /// compaction reports as its error.
    fn plan_stored_row(&self, row: StoredRow, cutoff_ht: HybridTime, plan: &mut RepackPlan) {
        let planned = match row.undecodable {
            Some(error) => Err(error),
            None => crate::gc::plan_row(&row.entries, cutoff_ht, &self.packings, self.plants)
                .map_err(|e| with_key(row.keys.first().map_or(&[], Vec::as_slice), e).to_string()),
        };
        match planned {
            Ok(Some(p)) => {
                plan.rewrite.insert(row.keys[p.packed_row].clone(), p.value);
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

/// What the compaction filters recorded (undecodable keys, entries the GC feed refused;
/// all kept unchanged), as the compaction's result.
fn filter_result(corrupt: &[String], failures: &[String]) -> Result<()> {
    if let Some(first) = corrupt.first() {
        let reason =
            format!("compaction kept {} undecodable entries; first: {first}", corrupt.len());
        let error = crate::error::DecodeError::new("compacted entry", 0, reason);
        return Err(Error::Corruption { error, key: None });
    }
    if let Some(first) = failures.first() {
        return Err(Error::CompactionFilter(format!(
            "kept {} entries it could not decide; first: {first}",
            failures.len()
        )));
    }
    Ok(())
}

/// Open RocksDB, retrying a spurious failure: RocksDB's process-wide periodic-task timer
/// refuses a registration stamped earlier than the task it is running, which happens when
/// the opening thread's clock is madsim's simulated one. Nothing is written by a failed
/// open, and the data decides nothing about when it succeeds.
fn open_with_retry(opts: &Options, dir: &Path) -> Result<DB> {
    let open = || {
        let _guard = OPEN_CLOSE.lock().unwrap_or_else(|e| e.into_inner());
        DB::open(opts, dir)
    };
    for _ in 0..100 {
        match open() {
            Err(e) if e.to_string().contains("register periodic task") => {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            other => return Ok(other?),
        }
    }
    Ok(open()?)
}

impl Drop for DocDb {
    fn drop(&mut self) {
        let _guard = OPEN_CLOSE.lock().unwrap_or_else(|e| e.into_inner());
        self.scan_iter.changed(); // its iterator first: it reads the database
        drop(self.db.take());
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

/// What a read needs of one document.
pub(crate) enum DocRead {
    /// Its entries in key order, packed rows expanded (`reader.rs` reads them).
    Entries(Vec<DocEntry>),
    /// The row a packed row read alone stands for ([`packed::PackedRead::alone`]).
    Packed(PackedCells),
}

/// The documents of a scan as it goes: the last one's key, and its packed row while it is
/// the only entry seen (it is expanded as soon as another one comes).
#[derive(Default)]
struct Documents {
    out: Vec<(DocKey, DocRead)>,
    current: Vec<u8>,
    held: Option<packed::PackedRead>,
    /// The last document's entries include an expanded packed row (they need sorting).
    packed: bool,
}

impl Documents {
    /// Start the document whose key is `key[..doc_len]`.
    fn start(&mut self, key: &[u8], doc_len: usize) -> Result<()> {
        self.current.clear();
        self.current.extend_from_slice(&key[..doc_len]);
        let (doc, _) = DocKey::decode(&self.current).map_err(|e| with_key(key, e))?;
        self.out.push((doc, DocRead::Entries(Vec::new())));
        Ok(())
    }

    fn entries(&mut self) -> &mut Vec<DocEntry> {
        match &mut self.out.last_mut().expect("a document started").1 {
            DocRead::Entries(entries) => entries,
            DocRead::Packed(_) => unreachable!("a finished document takes no entries"),
        }
    }

    /// Add a needed entry of the last document.
    fn add(&mut self, scanned: packed::Scanned) {
        if let Some(held) = self.held.take() {
            self.expand(held);
        }
        match scanned {
            packed::Scanned::Packed(row) if self.entries().is_empty() => self.held = Some(row),
            packed::Scanned::Packed(row) => self.expand(row),
            packed::Scanned::Entry(entry) => self.entries().push(entry),
        }
    }

    /// Finish the last document: a packed row alone becomes its row, or is expanded.
    fn finish(&mut self, read: &ReadConfig) {
        if let Some(held) = self.held.take() {
            match held.alone(read) {
                Ok(cells) => self.out.last_mut().expect("held in one").1 = DocRead::Packed(cells),
                Err(held) => self.expand(held),
            }
        }
        if std::mem::take(&mut self.packed) {
            self.entries().sort_by(DocEntry::key_cmp);
        }
    }

    /// Expand a packed row into the last document's entries (which then need sorting).
    fn expand(&mut self, row: packed::PackedRead) {
        row.expand(self.entries());
        self.packed = true;
    }
}

/// Which stored versions a read at `read_ht` needs, decided on raw key bytes in key order
/// (a path's versions newest first, a parent before its children), without decoding:
/// per path only the newest version at or before the read, and none that a version of an
/// ancestor overwrote at a later hybrid time. Ties at one hybrid time are left to the
/// reader, which orders them by write id. (Seeking past long runs of unneeded versions
/// was measured slower than stepping over them: a RocksDB seek costs dozens of steps.)
struct NeededAt {
    read_ht: HybridTime,
    /// Skip versions an ancestor overwrote (a read's scan); `false` keeps them.
    skip_overwritten: bool,
    /// The last version kept was a TTL-only record: the next older one of its path counts.
    beneath_ttl_only: bool,
    /// The path of the last version kept or overwritten: older versions of it are skipped.
    last_path: Vec<u8>,
    /// The levels of `last_path` (the document, each subkey), each with the newest hybrid
    /// time at or before the read along the chain.
    levels: Shadow<HybridTime, ()>,
    /// Where each level of the current key's path ends (scratch, reused across keys).
    ends: Vec<usize>,
}

impl NeededAt {
    fn new(read_ht: HybridTime) -> NeededAt {
        let (last_path, levels, ends) = (Vec::new(), Shadow::new(), Vec::new());
        NeededAt {
            read_ht,
            skip_overwritten: true,
            beneath_ttl_only: false,
            last_path,
            levels,
            ends,
        }
    }

    /// Whether the read needs the entry with this `key` and `value` (its document key ends
    /// at `doc_len`).
    fn needed(&mut self, key: &[u8], value: &[u8], doc_len: usize) -> Result<bool> {
        let end =
            level_ends(key, doc_len, &mut self.ends).ok_or_else(|| corrupt_key(key, "no '#'"))?;
        let path = &key[..end];
        let older_version = path == &self.last_path[..];
        if older_version && !self.beneath_ttl_only {
            return Ok(false); // an older version: checked first, it needs no decoding
        }
        let ht = crate::encoding::decode_doc_ht(&key[end + 1..], end + 1)
            .map_err(|e| with_key(key, e))?
            .ht;
        if ht > self.read_ht {
            return Ok(false);
        }
        // A TTL-only record or a packed row hides nothing: the version beneath it is
        // needed too, and its time does not overwrite anything.
        let ttl_only = Value::hides_nothing(value);
        if older_version {
            self.beneath_ttl_only = ttl_only;
            let shadowed = self.levels.newest().is_some_and(|ancestors_ht| ancestors_ht > ht);
            if !ttl_only && !shadowed {
                self.levels.record(ht);
            }
            return Ok(true);
        }
        self.beneath_ttl_only = false;
        // Levels of the last path that are prefixes of this one (encoded key entries are
        // self-delimiting, so a shared byte prefix ending at a level's end is that level).
        let common = path.iter().zip(&self.last_path).take_while(|(a, b)| a == b).count();
        let shared = self.ends.iter().take_while(|&&level_end| level_end <= common).count();
        let depth = self.ends.len();
        self.levels.align(shared.min(depth - 1), depth, |_| ());
        let needed = !self.skip_overwritten
            || self.levels.newest().is_none_or(|ancestors_ht| ancestors_ht <= ht);
        if needed && ttl_only {
            self.beneath_ttl_only = true;
        } else if needed {
            self.levels.record(ht);
        }
        self.last_path.clear();
        self.last_path.extend_from_slice(path);
        Ok(needed)
    }
}

/// The smallest key greater than every key starting with `prefix` (`None`: no such key).
fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut bound = prefix.to_vec();
    while let Some(last) = bound.pop() {
        if last < 0xFF {
            bound.push(last + 1);
            return Some(bound);
        }
    }
    None
}

/// Where the path of an encoded key ends (the position of its `#`), found by skipping the
/// subkeys after the document key without decoding them; `ends` gets where each level ends
/// (the document at `doc_len`, then each subkey).
fn level_ends(key: &[u8], doc_len: usize, ends: &mut Vec<usize>) -> Option<usize> {
    ends.clear();
    ends.push(doc_len);
    let hybrid_time = crate::encoding::tag::HYBRID_TIME;
    crate::encoding::skip_key_entries(key, doc_len, hybrid_time, |end| ends.push(end))
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

fn decode_frontier(raw: &[u8]) -> Result<(crate::ids::OpId, HybridTime)> {
    let v: [u64; 3] = decode_u64s(FRONTIER_KEY, raw)?;
    Ok((crate::ids::OpId::new(v[0], v[1]), HybridTime::from_raw(v[2])))
}

/// The `N` big-endian u64s a metadata value at `key` holds.
fn decode_u64s<const N: usize>(key: &[u8], raw: &[u8]) -> Result<[u64; N]> {
    if raw.len() != 8 * N {
        return Err(corrupt_record(key, format!("{} bytes, not {}", raw.len(), 8 * N)));
    }
    Ok(std::array::from_fn(|i| u64::from_be_bytes(raw[i * 8..i * 8 + 8].try_into().expect("8"))))
}

/// `values` as big-endian bytes, for a metadata value.
fn encode_u64s(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_be_bytes()).collect()
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

fn options(gc: Arc<Mutex<GcState>>, storage: StorageConfig) -> Result<Options> {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_disable_auto_compactions(true);
    // DocDB's layout: universal compaction in one level, so a manual compaction always
    // covers every file (the GC's "full compaction" premise).
    opts.set_compaction_style(DBCompactionStyle::Universal);
    opts.set_num_levels(1);
    opts.set_max_subcompactions(1);
    opts.set_max_background_jobs(2);
    // No periodic statistics: the tasks run on RocksDB's timer thread and are stamped with
    // the opening thread's clock, which in simulation is madsim's; they would fire at
    // arbitrary moments (and race DB close). The engine reports what it needs itself.
    opts.set_stats_dump_period_sec(0);
    opts.set_stats_persist_period_sec(0);
    opts.set_skip_stats_update_on_db_open(true);
    // Open table files on the opening thread: the default (16) starts and joins 15 threads
    // at every open, which was half of a restart's wall time.
    opts.set_max_file_opening_threads(1);
    opts.set_prefix_extractor(SliceTransform::create(
        "docdb_doc_key",
        doc_key_prefix,
        Some(is_doc_key),
    ));
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(shared_block_cache());
    table.set_cache_index_and_filter_blocks(true);
    // Bloom filters over the document-key prefix: reads within one document skip files.
    if storage.bloom_filter {
        table.set_bloom_filter(10.0, false);
    }
    table.set_whole_key_filtering(false);
    table.set_block_size(storage.block_bytes);
    opts.set_write_buffer_size(storage.memtable_mib << 20);
    opts.set_block_based_table_factory(&table);
    opts.set_compression_type(match storage.snappy {
        true => rocksdb::DBCompressionType::Snappy,
        false => rocksdb::DBCompressionType::None,
    });
    // Not in the Rust API: a close (and so a crash) must not persist memtables, or replay
    // after a crash would never be exercised. (This builds new options: what must outlive
    // the database, like the logger below, is set on them afterwards.)
    let mut opts = opts.get_options_from_string("avoid_flush_during_shutdown=true")?;
    // The GC filter, through the shim's `FilterV3` so it is shown entities too; set on the
    // final options, last.
    let make: crate::entity::MakeFilter =
        Box::new(move |_full, _manual| Box::new(GcEntityFilter(new_gc_filter(&gc), false)));
    crate::entity::set_filter_factory(&mut opts, make);
    // No info LOG file: every open would format hundreds of option lines into it. Header
    // lines reach the callback whatever its level, hence the filter; fatal messages still
    // reach stderr, and failures reach the caller as statuses regardless.
    opts.set_info_logger(rocksdb::InfoLogger::new_callback_logger(
        rocksdb::LogLevel::Fatal,
        |level, message| {
            if level == rocksdb::LogLevel::Fatal {
                eprintln!("rocksdb: {}", message.trim_end());
            }
        },
    ));
    Ok(opts)
}

fn doc_key_prefix(key: &[u8]) -> &[u8] {
    &key[..doc_key_len(key).unwrap_or(key.len())]
}

fn is_doc_key(key: &[u8]) -> bool {
    key.first() != Some(&META_PREFIX) && doc_key_len(key).is_some()
}

/// The path components of an encoded key, as byte slices: `[table?] [doc] [subkeys...]`
/// (a colocated table's own key is the table level only).
fn key_components(key: &[u8]) -> Option<Vec<&[u8]>> {
    let doc_end = doc_key_len(key)?;
    let mut components = Vec::with_capacity(4);
    let mut doc_start = 0;
    if key.first() == Some(&crate::encoding::tag::COLOCATION_ID) {
        components.push(key.get(..5)?);
        doc_start = 5;
    }
    let doc = key.get(doc_start..doc_end)?;
    if doc != b"!" || doc_start == 0 {
        components.push(doc);
    }
    let mut start = doc_end;
    crate::encoding::skip_key_entries(key, doc_end, crate::encoding::tag::HYBRID_TIME, |end| {
        components.push(&key[start..end]);
        start = end;
    })?;
    Some(components)
}

/// The GC filter of one compaction, from what the caller set in [`GcState`].
fn new_gc_filter(gc: &Arc<Mutex<GcState>>) -> GcFilter {
    let (params, plants, repack, packings) = {
        let state = lock(gc);
        (state.params, state.plants, state.repack.clone(), state.packings.clone())
    };
    let unbounded = planted_unbounded_feed(params, plants);
    let (feed, gc, counts) = (params.map(GcFeed::new), gc.clone(), [0; 4]);
    GcFilter { feed, unbounded, gc, counts, plants, repack, packings }
}

/// The plant `snapshot-error-mislabelled`: a read below the cutoff is refused with a
/// storage error's kind, not `snapshot_too_old`.
fn planted_mislabelled(read_ht: HybridTime, cutoff_ht: HybridTime) -> Error {
    let why =
        format!("snapshot too old: read at {read_ht} is below the history cutoff {cutoff_ht}");
    Error::Storage(why)
}

/// The plants `yb-expired-parent-gc` and `yb-minor-gc-drops-ttl`, YugabyteDB's rules:
/// an expired entry with a TTL of its own is dropped by a full compaction, rewritten as a
/// bare tombstone by a minor one. `None`: neither planted, or not such an entry.
fn planted_yb_ttl_rules(verdict: Verdict, kind: CompactionKind, plants: Plants) -> Option<Verdict> {
    if !matches!(verdict, Verdict::KeepExpired | Verdict::KeepInherited) {
        return None;
    }
    match kind {
        CompactionKind::Full if plants.contains(Plant::YbExpiredParentGc) => Some(Verdict::Drop),
        CompactionKind::Minor if plants.contains(Plant::YbMinorGcDropsTtl) => {
            Some(Verdict::Tombstone)
        }
        _ => None,
    }
}

/// With [`Plant::GcIgnoresCutoff`] planted, the filter's second feed: no history cutoff,
/// and minor, so its `Drop` says only "a newer version shadows this one".
fn planted_unbounded_feed(params: Option<GcParams>, plants: Plants) -> Option<GcFeed> {
    let mut params = params.filter(|_| plants.contains(Plant::GcIgnoresCutoff))?;
    (params.cutoff_ht, params.kind) = (HybridTime::MAX, CompactionKind::Minor);
    Some(GcFeed::new(params))
}

/// The plant `gc-keeps-tombstones`: whether this verdict drops a tombstone at or below the
/// cutoff of a full compaction (which the plant keeps).
fn planted_dropped_tombstone(
    tombstone: bool,
    verdict: Verdict,
    params: GcParams,
    dht: DocHybridTime,
) -> bool {
    let full = params.kind == CompactionKind::Full;
    tombstone && verdict == Verdict::Drop && full && dht.ht <= params.cutoff_ht
}

/// The plant `gc-ignores-cutoff`: every version a newer one shadows goes, and (full
/// compaction) every tombstone, above the history cutoff as below it; expiry still counts
/// at it. `unbounded` is the feed without a cutoff ([`planted_unbounded_feed`]).
fn planted_ignoring_cutoff(
    unbounded: &mut GcFeed,
    verdict: Verdict,
    params: GcParams,
    (components, dht, ttl, tombstone, table_doc): (&[&[u8]], DocHybridTime, Ttl, bool, bool),
) -> Result<Verdict, FeedError> {
    let shadowed =
        unbounded.decide_in(components, dht, tombstone, ttl, table_doc)? == Verdict::Drop;
    let full = params.kind == CompactionKind::Full;
    let tombstone_above = tombstone && full && dht.ht > params.cutoff_ht;
    Ok(if shadowed || tombstone_above { Verdict::Drop } else { verdict })
}

/// The GC filter as the shim's `FilterV3` filter shows it entries: plain values as they
/// are, an entity (a packed row of the entity layout) by its default column, which the
/// GC judges as the packed row; a repacked row goes back as the entity's new columns.
/// After a panic it keeps everything (its feed's state is not to be trusted), and the
/// compaction reports the panic.
struct GcEntityFilter(GcFilter, bool);

impl crate::entity::EntityFilter for GcEntityFilter {
    fn filter(
        &mut self,
        level: u32,
        key: &[u8],
        entry: crate::entity::Entry<'_>,
    ) -> EntityDecision {
        if self.1 {
            return EntityDecision::Keep;
        }
        let (value, entity) = match &entry {
            crate::entity::Entry::Value(value) => (*value, false),
            crate::entity::Entry::Entity(columns) => {
                let default = columns.iter().find(|(name, _)| name.is_empty());
                (default.map_or(&[][..], |(_, value)| *value), true)
            }
        };
        match CompactionFilter::filter(&mut self.0, level, key, value) {
            Decision::Keep => EntityDecision::Keep,
            Decision::Remove => EntityDecision::Remove,
            Decision::Change(new) if entity => {
                match packed::entity_columns(new, &self.0.packings) {
                    Ok(Some(columns)) => EntityDecision::ChangeEntity(columns),
                    Ok(None) => EntityDecision::ChangeValue(new.to_vec()), // not a packed row
                    Err(e) => {
                        let key = crate::encoding::hex(key);
                        lock(&self.0.gc).failures.push(format!("repacked entity: {e} (key {key})"));
                        EntityDecision::Keep
                    }
                }
            }
            Decision::Change(new) => EntityDecision::ChangeValue(new.to_vec()),
        }
    }

    fn panicked(&mut self, message: String) {
        self.1 = true;
        lock(&self.0.gc).failures.push(format!("the GC filter panicked: {message}"));
    }
}

/// The RocksDB compaction filter: decodes each entry and asks the pure [`GcFeed`]. It runs
/// on RocksDB's threads, behind an `extern "C"` boundary where a panic would abort the
/// process: whatever goes wrong keeps the entry and is recorded in [`GcState`].
struct GcFilter {
    feed: Option<GcFeed>,
    /// With [`Plant::GcIgnoresCutoff`] planted: a feed without a history cutoff, whose
    /// minor-compaction verdict `Drop` says "a newer version shadows this one".
    unbounded: Option<GcFeed>,
    gc: Arc<Mutex<GcState>>,
    /// Dropped, rewritten as tombstones (not counted: only a plant rewrites), kept above
    /// the cutoff, kept expired (own TTL).
    counts: [u64; 4],
    /// The planted bugs.
    plants: Plants,
    /// The running full compaction's repacking plan.
    repack: Option<Arc<RepackPlan>>,
    /// The table's packings (a repacked entity's columns).
    packings: Packings,
}

impl Drop for GcFilter {
    fn drop(&mut self) {
        let mut gc = lock(&self.gc);
        (0..4).for_each(|i| gc.counts[i] += self.counts[i]);
    }
}

/// What the repacking plan does with a key GC keeps: a folded entry goes, a repacked
/// row gets its new value.
fn plan_decision(plan: &Arc<RepackPlan>, key: &[u8]) -> Decision {
    if plan.fold.contains(key) {
        return Decision::Remove;
    }
    match plan.rewrite.get(key) {
        Some(value) => Decision::Change(outliving_the_callback(value)),
        None => Decision::Keep,
    }
}

/// `value` as the `'static` slice `Decision::Change` asks for.
fn outliving_the_callback(value: &[u8]) -> &'static [u8] {
    // SAFETY: the value is owned by the plan, which the filter holds (an `Arc`) for the
    // whole compaction, so it outlives the filter callback; RocksDB's C wrapper copies a
    // changed value before the callback returns (`rocksdb_compactionfilter_t::Filter`,
    // `db/c.cc`: `new_value->assign(c_new_value, new_value_length)`), and the crate's
    // trampoline only passes the pointer on. Nothing keeps the slice after that.
    unsafe { std::slice::from_raw_parts(value.as_ptr(), value.len()) }
}

/// The value a [`Verdict::Tombstone`] writes.
const TOMBSTONE_VALUE: &[u8] = b"X";

impl CompactionFilter for GcFilter {
    fn filter(&mut self, _level: u32, key: &[u8], value: &[u8]) -> Decision {
        if self.feed.is_none() || key.first() == Some(&META_PREFIX) {
            return Decision::Keep;
        }
        let decoded = decode_entry(key, value).and_then(|entry| {
            let components = key_components(key).ok_or_else(|| corrupt_key(key, "no path"))?;
            Ok((entry, components))
        });
        let ((k, v), components) = match decoded {
            Ok(decoded) => decoded,
            Err(e) => {
                // Never drop what we cannot read; report it after the compaction.
                lock(&self.gc).corrupt.push(e.to_string());
                return Decision::Keep;
            }
        };
        let table_doc = k.path.doc_key.is_table_key();
        let folded = self.repack.as_ref().is_some_and(|plan| plan.fold.contains(key));
        let entry = (&v.kind, table_doc, folded);
        let verdict = match self.verdict(&components, k.doc_ht, entry, v.ttl) {
            Ok(verdict) => verdict,
            Err(e) => {
                let key = crate::encoding::hex(key);
                lock(&self.gc).failures.push(format!("{e} (key {key})"));
                return Decision::Keep;
            }
        };
        let decision = self.count(verdict, k.doc_ht.ht);
        match (&decision, self.repack.as_ref()) {
            (Decision::Keep, Some(plan)) => plan_decision(plan, key),
            _ => decision,
        }
    }

    fn name(&self) -> &CStr {
        c"docdb_gc"
    }
}

impl GcFilter {
    /// The feed's verdict on one entry (only called with a feed).
    fn verdict(
        &mut self,
        components: &[&[u8]],
        dht: DocHybridTime,
        (kind, table_doc, folded): (&ValueKind, bool, bool),
        ttl: Ttl,
    ) -> Result<Verdict, FeedError> {
        let Some(feed) = self.feed.as_mut() else { return Ok(Verdict::Keep) };
        let tombstone = *kind == ValueKind::Tombstone;
        if let ValueKind::PackedRow(_) | ValueKind::EntityRow(_) = kind {
            if let Some(unbounded) = self.unbounded.as_mut() {
                unbounded.decide_packed_row(components, dht, ttl, folded)?;
            }
            return feed.decide_packed_row(components, dht, ttl, folded);
        }
        if let ValueKind::TtlOnly { .. } = kind {
            if let Some(unbounded) = self.unbounded.as_mut() {
                unbounded.decide_ttl_only(components, dht, ttl, table_doc)?;
            }
            return feed.decide_ttl_only(components, dht, ttl, table_doc);
        }
        let verdict = feed.decide_in(components, dht, tombstone, ttl, table_doc)?;
        let params = feed.params();
        // Planted: a full compaction keeps the tombstones at or below its cutoff.
        if self.plants.contains(Plant::GcKeepsTombstones)
            && planted_dropped_tombstone(tombstone, verdict, params, dht)
        {
            return Ok(Verdict::Keep);
        }
        if let Some(planted) = planted_yb_ttl_rules(verdict, params.kind, self.plants) {
            return Ok(planted);
        }
        let Some(unbounded) = self.unbounded.as_mut() else { return Ok(verdict) };
        let entry = (components, dht, ttl, tombstone, table_doc);
        planted_ignoring_cutoff(unbounded, verdict, params, entry)
    }

    /// Count the verdict and turn it into RocksDB's decision.
    fn count(&mut self, verdict: Verdict, ht: HybridTime) -> Decision {
        match verdict {
            Verdict::KeepExpired | Verdict::KeepInherited => {
                self.counts[3] += 1;
                Decision::Keep
            }
            Verdict::Keep => {
                let cutoff_ht =
                    self.feed.as_ref().map_or(HybridTime::MAX, |f| f.params().cutoff_ht);
                self.counts[2] += u64::from(ht > cutoff_ht);
                Decision::Keep
            }
            Verdict::Drop => {
                self.counts[0] += 1;
                Decision::Remove
            }
            // Only a plant rewrites an entry as a tombstone: not counted.
            Verdict::Tombstone => Decision::Change(TOMBSTONE_VALUE),
        }
    }
}

#[cfg(test)]
mod needed_at_tests {
    use super::NeededAt;
    use crate::encoding::{DocPath, KeyEntry, Primitive, SubDocKey};
    use crate::hybrid_time::{DocHybridTime, HybridTime};
    use crate::tests::doc_d as doc;

    /// The encoded key of `path` (subkey names) at `us` with write id 0.
    fn key(path: &[&str], us: u64) -> Vec<u8> {
        let subkeys = path.iter().map(|s| KeyEntry::asc(Primitive::String((*s).into()))).collect();
        let at = DocHybridTime::new(HybridTime::new(us, 0), 0);
        SubDocKey::new(DocPath::new(doc(), subkeys), at).encode()
    }

    /// Which of `keys` (given in RocksDB order) a read at `read_us` keeps.
    fn kept(keys: &[Vec<u8>], read_us: u64) -> Vec<bool> {
        let entries: Vec<(Vec<u8>, &[u8])> = keys.iter().map(|k| (k.clone(), &b"{"[..])).collect();
        kept_values(&entries, read_us)
    }

    /// Which of `entries` (keys with their values, in RocksDB order) a read keeps.
    fn kept_values(entries: &[(Vec<u8>, &[u8])], read_us: u64) -> Vec<bool> {
        let doc_len = doc().encode().len();
        let mut needed = NeededAt::new(HybridTime::new(read_us, 0));
        entries.iter().map(|(k, v)| needed.needed(k, v, doc_len).expect("well-formed")).collect()
    }

    #[test]
    fn newest_version_at_or_before_the_read_only() {
        let keys = [key(&["a"], 30), key(&["a"], 20), key(&["a"], 10)];
        assert_eq!(kept(&keys, 25), [false, true, false]);
        assert_eq!(kept(&keys, 5), [false, false, false]);
    }

    #[test]
    fn versions_an_ancestor_overwrote_later_are_skipped() {
        // Root marker at 20; a.b at 10 (overwritten), a.c at 30 (newer), `z` at 20 (the
        // same hybrid time as the root: left to the reader), z.y at 15 (overwritten).
        let keys = [
            key(&[], 20),
            key(&["a", "b"], 10),
            key(&["a", "c"], 30),
            key(&["z"], 20),
            key(&["z", "y"], 15),
        ];
        assert_eq!(kept(&keys, 40), [true, false, true, true, false]);
    }

    #[test]
    fn an_overwritten_path_does_not_hide_its_newer_children() {
        // `a` at 5 is hidden by the root at 20; `a.b` at 25 is newer than both.
        let keys = [key(&[], 20), key(&["a"], 5), key(&["a", "b"], 25), key(&["c"], 21)];
        assert_eq!(kept(&keys, 40), [true, false, true, true]);
        // Read before the root's version: nothing above `a` hides it.
        assert_eq!(kept(&keys, 10), [false, true, false, false]);
    }

    /// A version beneath a TTL-only record is needed (the record hides nothing), but if an
    /// ancestor overwrote it, it shadows nothing below it either: a child older than the
    /// ancestor stays hidden. (EXPIRE writes TTL-only records at document roots only,
    /// where nothing is above; the filter's rule holds at any level.)
    #[test]
    fn an_overwritten_version_beneath_a_ttl_only_record_hides_its_children_still() {
        let ttl_only: &[u8] = &[crate::encoding::tag::VALUE_MERGE_FLAGS];
        let entries: [(Vec<u8>, &[u8]); 4] = [
            (key(&[], 20), b"{"),
            (key(&["a"], 30), ttl_only),
            (key(&["a"], 10), b"{"), // beneath the record, overwritten by the root at 20
            (key(&["a", "b"], 15), b"{"), // overwritten by the root at 20 too
        ];
        assert_eq!(kept_values(&entries, 40), [true, true, true, false]);
    }

    /// Two TTL-only records above a version: both hide nothing, so the version beneath
    /// them is needed, and it (not either record) is what hides older children.
    #[test]
    fn a_version_beneath_two_ttl_only_records_hides_its_older_children_only() {
        let ttl_only: &[u8] = &[crate::encoding::tag::VALUE_MERGE_FLAGS];
        let entries: [(Vec<u8>, &[u8]); 6] = [
            (key(&["a"], 30), ttl_only),
            (key(&["a"], 20), ttl_only),
            (key(&["a"], 10), b"{"),
            (key(&["a", "b"], 15), b"{"), // newer than `a`'s version: kept
            (key(&["a", "c"], 5), b"{"),  // older: hidden by it
            (key(&["d"], 1), b"{"),
        ];
        assert_eq!(kept_values(&entries, 40), [true, true, true, true, false, true]);
    }

    /// The GC state of a full compaction with history cutoff 100 µs, as `DocDb::compact`
    /// sets it for the filters it makes.
    fn full_compaction_at_100us() -> std::sync::Arc<std::sync::Mutex<super::GcState>> {
        use crate::gc::{CompactionKind, GcParams};
        let params = GcParams {
            cutoff_ht: HybridTime::new(100, 0),
            kind: CompactionKind::Full,
            table_ttl_ms: None,
        };
        let state = super::GcState { params: Some(params), ..super::GcState::default() };
        std::sync::Arc::new(std::sync::Mutex::new(state))
    }

    #[test]
    fn the_filter_keeps_and_records_entries_out_of_order_instead_of_panicking() {
        use super::{filter_result, new_gc_filter};
        use crate::encoding::{Value, ValueKind};
        use rocksdb::compaction_filter::{CompactionFilter, Decision};
        let gc = full_compaction_at_100us();
        let mut filter = new_gc_filter(&gc);
        let value = Value::new(ValueKind::Object).encode();
        assert!(matches!(filter.filter(0, &key(&["a"], 10), &value), Decision::Keep));
        // A newer version of the same path after an older one: the feed refuses it.
        assert!(matches!(filter.filter(0, &key(&["a"], 20), &value), Decision::Keep));
        // In order again: hidden by the version at 10.
        assert!(matches!(filter.filter(0, &key(&["a"], 5), &value), Decision::Remove));
        drop(filter);
        let state = gc.lock().expect("not poisoned");
        assert_eq!(state.failures.len(), 1, "{:?}", state.failures);
        assert!(state.failures[0].contains("out of order"), "{}", state.failures[0]);
        let err = filter_result(&[], &state.failures).unwrap_err();
        assert!(matches!(err, crate::Error::CompactionFilter(_)));
        assert!(err.to_string().starts_with("compaction filter failed: kept 1 entries"), "{err}");
        assert_eq!(filter_result(&[], &[]), Ok(()));
    }

    /// After a panic in its `filter` the entity filter keeps every entry (even one the
    /// feed would drop: its state is not to be trusted), and the panic is the
    /// compaction's failure.
    #[test]
    fn the_entity_filter_keeps_everything_after_a_panic_and_reports_it() {
        use super::{new_gc_filter, GcEntityFilter};
        use crate::encoding::{Value, ValueKind};
        use crate::entity::{EntityDecision, EntityFilter, Entry};
        let gc = full_compaction_at_100us();
        let value = Value::new(ValueKind::Object).encode();
        let decide = |filter: &mut GcEntityFilter, ht: u64| {
            filter.filter(0, &key(&["a"], ht), Entry::Value(&value))
        };
        let mut healthy = GcEntityFilter(new_gc_filter(&gc), false);
        assert!(matches!(decide(&mut healthy, 10), EntityDecision::Keep));
        assert!(matches!(decide(&mut healthy, 5), EntityDecision::Remove), "hidden by 10");
        let mut filter = GcEntityFilter(new_gc_filter(&gc), false);
        assert!(matches!(decide(&mut filter, 10), EntityDecision::Keep));
        filter.panicked("boom".to_string());
        assert!(matches!(decide(&mut filter, 5), EntityDecision::Keep), "kept after a panic");
        let entity = Entry::Entity(vec![(&b""[..], &value[..])]);
        let kept = filter.filter(0, &key(&["a"], 4), entity);
        assert!(matches!(kept, EntityDecision::Keep), "an entity too");
        let failures = std::mem::take(&mut gc.lock().expect("not poisoned").failures);
        assert_eq!(failures, ["the GC filter panicked: boom"]);
        let failed = super::filter_result(&[], &failures).map_err(|e| e.to_string());
        let said = "compaction filter failed: kept 1 entries it could not decide; first: \
                    the GC filter panicked: boom";
        assert_eq!(failed, Err(said.to_string()));
    }

    #[test]
    fn prefix_successor_bounds_exactly_the_prefixed_keys() {
        use super::prefix_successor;
        assert_eq!(prefix_successor(b"ab!"), Some(b"ab\"".to_vec()));
        assert_eq!(prefix_successor(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff"), None);
        assert_eq!(prefix_successor(b""), None);
        let doc = doc().encode();
        let bound = prefix_successor(&doc).expect("a document key has a successor");
        let inside = key(&["z", "z"], 1);
        assert!(inside.starts_with(&doc) && inside < bound && doc < bound);
    }
}

#[cfg(test)]
mod storage_tests {
    use super::StorageConfig;

    /// The metamorphic set as reports name it: block size, bloom filters, codec, layout
    /// and a memtable other than RocksDB's default.
    #[test]
    fn the_storage_configurations_name_themselves() {
        let names = StorageConfig::SET.map(|config| config.to_string());
        let expected = [
            "block=32KiB bloom snappy",
            "block=1KiB bloom snappy",
            "block=32KiB no-bloom snappy",
            "block=4KiB no-bloom uncompressed",
            "block=32KiB bloom snappy packed",
            "block=32KiB bloom snappy entity",
            "block=32KiB bloom snappy memtable=256MiB",
        ];
        assert_eq!(names, expected);
        assert_eq!(StorageConfig::SET[1].block_bytes, 1024);
    }

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
        let frontier = super::peer_state::encode_frontier(OpId::new(1, 1), ht);
        assert_eq!(stored(&db), Some(frontier.to_vec()));
    }

    /// A full compaction counts what it did in the coverage probes: the versions a newer
    /// one at or below the cutoff overwrote dropped, the one above the cutoff kept (the one
    /// exactly at the cutoff is kept, not above it), and a value expired through a TTL of
    /// its own kept (`gc.rs`).
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
        db.compact(cutoff_ht, CompactionKind::Full, None, None).expect("compact");
        let counts = crate::probe::take();
        let count = |name: &str| counts.get(name).copied();
        let names = ["gc.dropped", "gc.kept_above_cutoff", "gc.kept_expired"];
        assert_eq!(names.map(count), [Some(2), Some(1), Some(1)], "{counts:?}");
        // Again: nothing left to drop, and a probe nothing was added to is absent.
        db.compact(cutoff_ht, CompactionKind::Full, None, None).expect("compact");
        let counts = crate::probe::take();
        let count = |name: &str| counts.get(name).copied();
        assert_eq!(names.map(count), [None, Some(1), Some(1)], "{counts:?}");
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
