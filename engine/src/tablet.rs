//! A tablet: one DocDB instance and the metadata its data needs (`tablet/schema.rs`), as
//! each replica of the tablet holds them — the state machine Raft replicates. It does
//! three things, none of which touches Raft or the log:
//!
//! - **Evaluate** a request at a hybrid time into what the leader proposes
//!   ([`Tablet::evaluate`]): a write batch (document writes, a CQL INSERT/UPDATE/DELETE,
//!   a Redis command that changes something) or a metadata change (`ALTER TABLE`,
//!   `default_ttl`), and the reply the client gets. The payload carries the leader's
//!   encoded batch, so every replica stores the same entries in the table's layout (as
//!   YugabyteDB's Raft entries carry the leader's `KeyValueWriteBatchPB`).
//! - **Apply** a committed entry ([`Tablet::apply`]): the same bytes live or in
//!   bootstrap's replay, so a replay is bit-identical to the first apply.
//! - **Read** ([`Tablet::read`]): a document, a SELECT, a Redis read, at a read time.
//!
//! **List indexes.** A CQL list element is keyed by an index from a per-tablet counter
//! that only grows (YugabyteDB's `ListExtendOrder` indexes come from the tablet's
//! monotonic counter for the same reason): the first index a statement at `ht` may use is
//! past every index this tablet has handed out or applied, and at least `ht`'s microsecond
//! × 1000. Every replica tracks the counter as it applies entries, and it is stored with
//! the data that used it (`\x01list_next`, in the same RocksDB batch), so a new leader or
//! a restarted replica continues past every index its log and files hold.

mod payload;
mod request;
mod schema;

pub use payload::Payload;
pub use request::{Reply, Request};
pub use schema::{valid_snapshot_id, MetaChange, RestoreOp, RestoreTarget, Schema, SnapshotOp};

use crate::canary::{Plant, Plants};
use crate::cql::CqlType;
use crate::cql::Statement;
use crate::db::{DocDb, Frontier, RawEntry, RestoreSpec, Rocks, SnapshotInfo, StorageConfig};
use crate::doc_write::{build_entries, Scanned};
use crate::document::Document;
use crate::encoding::{doc_key_len, DocPath, KeyEntry, Primitive};
use crate::error::{Error, Result};
use crate::gc::CompactionKind;
use crate::hybrid_time::HybridTime;
use crate::ids::{OpId, Part};
use crate::write_batch::DocWriteBatch;
use std::path::Path;

/// Metadata key of the tablet's schema (`tablet/schema.rs`), as of the flushed frontier.
const SCHEMA_KEY: &[u8] = b"\x01schema";
/// Metadata key of the time since which every replica keeps the tablet's history
/// (8 bytes, big-endian raw hybrid time; empty or absent: no snapshot asks for it). See
/// [`Tablet::kept_since`].
const KEPT_SINCE_KEY: &[u8] = b"\x01kept_since";
/// Metadata key of the next list index (8 bytes, big-endian), written with the data that
/// used the indexes below it.
const LIST_NEXT_KEY: &[u8] = b"\x01list_next";

/// What a leader's evaluation of a write gives: the payload to propose (none when the
/// request changes nothing) and the client's reply.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluated {
    pub payload: Option<Payload>,
    pub reply: Reply,
}

/// What applying one entry did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The hybrid time of a write or metadata change (none for empty and configuration
    /// entries).
    pub ht: Option<HybridTime>,
    /// Whether the entry carried writes (what a restart's `replayed` counts).
    pub writes: bool,
    /// The snapshot the entry took.
    pub snapshot: Option<SnapshotTaken>,
    /// The restore the entry made: its own op id and time, now the flushed frontier.
    pub restored: Option<(OpId, HybridTime)>,
}

/// A snapshot an entry took: its id, and the frontier the flush before its checkpoint
/// made durable (`None`: the memtables held no entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapshotTaken {
    pub id: String,
    pub flushed: Option<(OpId, HybridTime)>,
}

/// One tablet replica's state machine.
pub struct Tablet {
    db: DocDb,
    schema: Schema,
    /// The first list index not yet handed out or applied.
    list_next: i64,
    /// The part of its table's hash space this tablet owns (the document tablet: all).
    part: Part,
    /// The time since which history is kept for restores ([`Tablet::kept_since`]), and
    /// the snapshots its entries took and did not delete.
    kept: Kept,
}

/// The history kept for restores: since when, and for which snapshots. The snapshots are
/// the ones the log's entries took and did not delete, recorded with the frontier, not
/// the snapshot directories on disk: a deletion applied before a power cut removed its
/// directory for good, while its entry is applied again (docsim's rule; seed 104395,
/// three replicas: replaying an older deletion found no directory left and dropped the
/// term the model still held).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Kept {
    since: Option<HybridTime>,
    snapshots: std::collections::BTreeSet<String>,
}

impl Tablet {
    /// Open (or create) the tablet's RocksDB in `dir` of `env` (an in-memory environment,
    /// or the real file system when `None`). Its metadata is what RocksDB stored with the
    /// flushed frontier, or `initial` (the schema the tablet was created with) when no
    /// change was ever flushed.
    pub fn open(
        dir: &Path,
        rocks: &Rocks,
        plants: Plants,
        storage: StorageConfig,
        initial: Schema,
    ) -> Result<Tablet> {
        // rust-rocksdb makes the directory on the real file system whatever the medium
        // (`DB::open`); made here first, a failure names it plainly.
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Io(format!("cannot create {}: {e}", dir.display())))?;
        let db = DocDb::open_in(dir, rocks, plants, storage)?;
        Tablet::over(db, initial)
    }

    /// The tablet a snapshot's checkpoint in `dir` holds, to read only (its schema as the
    /// snapshot has it).
    pub fn open_snapshot(
        dir: &Path,
        rocks: &Rocks,
        plants: Plants,
        storage: StorageConfig,
        initial: Schema,
    ) -> Result<Tablet> {
        Tablet::over(DocDb::open_read_only(dir, rocks, plants, storage)?, initial)
    }

    fn over(db: DocDb, initial: Schema) -> Result<Tablet> {
        let schema = stored_schema(&db, initial)?;
        let list_next = match db.metadata(LIST_NEXT_KEY)? {
            None => 0,
            Some(bytes) => i64::from_be_bytes(
                bytes.try_into().map_err(|_| stored(LIST_NEXT_KEY, "not 8 bytes".into()))?,
            ),
        };
        let kept = decode_kept(db.metadata(KEPT_SINCE_KEY)?)?;
        let mut tablet = Tablet { db, schema, list_next, part: Part::WHOLE, kept };
        tablet.attach_schema();
        Ok(tablet)
    }

    /// This tablet as the owner of `part` of its table's hash space (the master's
    /// partition of it, fixed at creation like its schema).
    pub fn owning(self, part: Part) -> Tablet {
        Tablet { part, ..self }
    }

    /// A statement of one partition must be of this tablet's: YugabyteDB's tablet refused
    /// a row outside its partition (`Tablet::CheckRowInTablet`, src/yb/tablet/tablet.cc,
    /// "Row not in tablet partition"); docsim refuses reads and writes alike.
    fn check_partition(&self, table: &crate::cql::CqlTable, statement: &Statement) -> Result<()> {
        if self.part == Part::WHOLE {
            return Ok(()); // every hash is this tablet's
        }
        let Some(hash) = crate::cql::partition_hash(table, statement) else { return Ok(()) };
        let range = self.part.hash_range();
        match range.contains(&hash) {
            true => Ok(()),
            false => Err(Error::InvalidRequest(format!(
                "row not in tablet partition: hash {hash:#06x} is outside {:#06x}..={:#06x}",
                range.start(),
                range.end()
            ))),
        }
    }

    /// Give the storage what reading the table's rows needs: the packings of its packed
    /// rows (only a table that packs has any) and whether they are entities.
    fn attach_schema(&mut self) {
        let (packings, entity_rows) = layout_of(&self.schema);
        self.db.set_packings(packings, entity_rows);
    }

    /// The metadata.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The storage (for the replica's own metadata: configuration, snapshots).
    pub(crate) fn db(&self) -> &DocDb {
        &self.db
    }

    pub(crate) fn db_mut(&mut self) -> &mut DocDb {
        &mut self.db
    }

    /// The flushed frontier read when the tablet opened.
    pub fn opened_frontier(&self) -> Frontier {
        self.db.opened_frontier()
    }

    /// The leader's evaluation of the write `request` at `ht` (see the module's essay).
    pub fn evaluate(&mut self, request: &Request, ht: HybridTime) -> Result<Evaluated> {
        let written = |batch: DocWriteBatch, reply| {
            let payload = (!batch.is_empty()).then_some(Payload::Write { ht, batch });
            Ok(Evaluated { payload, reply })
        };
        match request {
            Request::Write { writes, markers } => {
                self.expect_docs("a document write")?;
                let scanned = &mut Scanned::default();
                let entries = build_entries(&self.db, writes, ht, *markers, scanned)?;
                written(entries.iter().collect(), Reply::Written)
            }
            Request::Cql(crate::cql::Statement::Alter { change, .. }) => {
                let change = MetaChange::Alter(change.clone());
                self.meta(change, ht)
            }
            Request::DefaultTtl(ttl_ms) => self.meta(MetaChange::DefaultTtl(*ttl_ms), ht),
            Request::Snapshot(op) => {
                if let SnapshotOp::Create(id) = op {
                    self.planted_snapshot_now(id, ht)?;
                }
                self.meta(MetaChange::Snapshot(op.clone()), ht)
            }
            Request::Restore(target) => {
                let restore = self.restore_source(target, ht);
                if restore.is_err() {
                    crate::probe::hit("restore.refused");
                }
                self.meta(MetaChange::Restore(restore?), ht)
            }
            Request::Cql(statement) => {
                let table = self.table(statement.table())?;
                self.check_partition(table, statement)?;
                let floor = self.list_floor(ht);
                let (entries, list_next) = crate::cql::write_entries(table, floor, statement)?;
                self.list_next = self.list_next.max(list_next);
                written(entries.iter().collect(), Reply::Written)
            }
            Request::Redis(command) => {
                self.expect_docs("a Redis command")?;
                let ttl = self.schema.default_ttl_ms();
                let (entries, reply) = crate::redis::execute(&self.db, ttl, ht, command)?;
                written(entries.iter().collect(), Reply::Redis(reply))
            }
            Request::Get { .. } | Request::Page(..) => unreachable!("a read is no write"),
        }
    }

    /// A metadata change, checked against the metadata it will apply to.
    fn meta(&self, change: MetaChange, ht: HybridTime) -> Result<Evaluated> {
        self.schema.check(&change)?;
        Ok(Evaluated { payload: Some(Payload::Meta { ht, change }), reply: Reply::Written })
    }

    /// The plant `snapshot-at-different-op-ids`: the leader takes its snapshot as the
    /// request comes, at what it applied so far (its record names no entry), and keeps
    /// it when the entry applies.
    fn planted_snapshot_now(&self, id: &str, ht: HybridTime) -> Result<()> {
        match self.db.plants().contains(Plant::SnapshotAtDifferentOpIds) {
            true => self.db.create_snapshot(id, OpId::default(), ht, self.kept.since).map(drop),
            false => Ok(()),
        }
    }

    /// The first list index a statement at `ht` may use (module essay).
    fn list_floor(&self, ht: HybridTime) -> i64 {
        // A physical time has 52 bits (`HybridTime::PHYSICAL_MAX_US`): ×1000 fits an i64.
        let physical_us = i64::try_from(ht.physical_us()).expect("52 bits fit an i64");
        (physical_us * 1000).max(self.list_next)
    }

    fn expect_docs(&self, what: &str) -> Result<()> {
        match self.schema.cql() {
            None => Ok(()),
            Some(t) => Err(Error::InvalidRequest(format!("{what} on table {}'s tablet", t.name))),
        }
    }

    /// The CQL table `name`, if this tablet is its.
    fn table(&self, name: &str) -> Result<&crate::cql::CqlTable> {
        match self.schema.cql() {
            Some(t) if t.name == name => Ok(t),
            _ => Err(Error::NoSuchTable(name.to_owned())),
        }
    }

    /// Apply the committed entry `op_id` carrying `payload`.
    pub fn apply(&mut self, op_id: OpId, payload: &Payload) -> Result<Applied> {
        match payload {
            Payload::Write { ht, batch } => {
                let list_next = self.list_next_of(batch);
                let meta = list_next.map(|next| next.to_be_bytes());
                let meta: Vec<(&[u8], &[u8])> =
                    meta.iter().map(|bytes| (LIST_NEXT_KEY, &bytes[..])).collect();
                self.db.write(batch, *ht, Some(op_id), &meta)?;
                Ok(Applied { ht: Some(*ht), writes: true, snapshot: None, restored: None })
            }
            Payload::Meta { ht, change: MetaChange::Snapshot(snapshot) } => {
                let taken = self.apply_snapshot(snapshot, op_id, *ht)?;
                let kept = encode_kept(&self.kept);
                self.db.write_metadata(&[(KEPT_SINCE_KEY, &kept)], op_id, *ht)?;
                Ok(Applied { ht: Some(*ht), writes: false, snapshot: taken, restored: None })
            }
            Payload::Meta { ht, change: MetaChange::Restore(restore) } => {
                self.apply_restore(restore, op_id, *ht)?;
                Ok(Applied {
                    ht: Some(*ht),
                    writes: false,
                    snapshot: None,
                    restored: Some((op_id, *ht)),
                })
            }
            Payload::Meta { ht, change } => {
                self.schema.apply(change, *ht).map_err(|e| {
                    Error::Storage(format!("log entry {op_id}: metadata change refused: {e}"))
                })?;
                self.attach_schema();
                let encoded = self.schema.encode();
                self.db.write_metadata(&[(SCHEMA_KEY, &encoded)], op_id, *ht)?;
                Ok(Applied { ht: Some(*ht), writes: false, snapshot: None, restored: None })
            }
            Payload::Conf(_) | Payload::Empty => {
                Ok(Applied { ht: None, writes: false, snapshot: None, restored: None })
            }
        }
    }

    /// A snapshot entry: the snapshot taken (history kept since its time from now on) or
    /// deleted (history no longer kept once the tablet has no snapshot left).
    fn apply_snapshot(
        &mut self,
        op: &SnapshotOp,
        op_id: OpId,
        ht: HybridTime,
    ) -> Result<Option<SnapshotTaken>> {
        let planted = self.db.plants().contains(Plant::SnapshotAtDifferentOpIds);
        match op {
            SnapshotOp::Create(id) if planted && self.db.snapshot_dir(id).is_some() => {
                Ok(Some(SnapshotTaken { id: id.clone(), flushed: None }))
            }
            SnapshotOp::Create(id) => {
                let flushed = self.db.create_snapshot(id, op_id, ht, self.kept.since)?;
                self.kept.since = Some(self.kept.since.map_or(ht, |at| at.max(ht)));
                self.kept.snapshots.insert(id.clone());
                Ok(Some(SnapshotTaken { id: id.clone(), flushed }))
            }
            SnapshotOp::Delete(id) => {
                self.db.delete_snapshot(id)?;
                self.kept.snapshots.remove(id);
                if self.kept.snapshots.is_empty() {
                    self.kept.since = None;
                }
                Ok(None)
            }
        }
    }

    /// A restore entry (`db/restore.rs`): the schema as of the time restored to, the data
    /// from the snapshot's checkpoint or the live data, the history kept since the
    /// restore's own time (its history cutoff).
    fn apply_restore(&mut self, restore: &RestoreOp, op_id: OpId, ht: HybridTime) -> Result<()> {
        let refused = |e: Error| Error::Storage(format!("log entry {op_id}: restore refused: {e}"));
        crate::probe::hit(match (&restore.from, restore.imported) {
            (Some(_), true) => "restore.from_backup",
            (Some(_), false) => "restore.from_snapshot",
            (None, _) => "restore.from_live_data",
        });
        let checkpoint = match &restore.from {
            Some(id) => Some(self.db.snapshot_dir(id).ok_or_else(|| {
                refused(Error::InvalidRequest(format!("this replica holds no snapshot {id}")))
            })?),
            None => None,
        };
        // Changed in memory only once the restored instance stands.
        let (mut schema, mut list_next) = (self.schema.clone(), self.list_next);
        if let (true, Some(dir)) = (restore.imported, &checkpoint) {
            (schema, list_next) = self.imported_metadata(dir, restore.to).map_err(refused)?;
        }
        schema.apply(&MetaChange::Restore(restore.clone()), ht).map_err(refused)?;
        let kept = Kept { since: self.kept.since.map(|at| at.max(ht)), ..self.kept.clone() };
        let meta = metadata_pairs(&schema, list_next, &kept);
        let (to, checkpoint) = (restore.to, checkpoint.as_deref());
        self.db.restore(&RestoreSpec { checkpoint, to, op_id, ht, meta })?;
        (self.schema, self.list_next, self.kept) = (schema, list_next, kept);
        self.attach_schema();
        Ok(())
    }

    /// The schema and list counter an imported backup's checkpoint in `dir` holds, under
    /// this tablet's table name; refused unless it is the table this tablet was created
    /// as (an import creates the table from the backup's schema).
    fn imported_metadata(&self, dir: &Path, restore_to: HybridTime) -> Result<(Schema, i64)> {
        let copy = Tablet::over(self.db.open_checkpoint(dir)?, self.schema.as_created())?;
        let name = self.schema.cql().map(|t| t.name.clone()).unwrap_or_default();
        let schema = copy.schema.renamed(&name);
        if schema.as_created() != self.schema.as_created() {
            let why = format!("the backup's table is not table {name} as created");
            return Err(Error::InvalidRequest(why));
        }
        let (frontier, to) = (copy.db.opened_frontier().ht, restore_to);
        if frontier > to {
            let why = format!("its data reaches {frontier}, after the time it restores to ({to})");
            return Err(Error::InvalidRequest(why));
        }
        // The list counter only grows (list indexes are never reused).
        Ok((schema, copy.list_next.max(self.list_next)))
    }

    /// This tablet's snapshots as a Raft snapshot carries them, each checkpoint read under
    /// its own schema.
    pub(crate) fn export_checkpoints(&self) -> Result<Vec<crate::db::CheckpointCopy>> {
        self.db.export_checkpoints(|checkpoint| {
            let schema = stored_schema(checkpoint, self.schema.as_created())?;
            let (packings, entity_rows) = layout_of(&schema);
            checkpoint.set_packings(packings, entity_rows);
            Ok(())
        })
    }

    /// The source a restore to `target` takes, decided by the leader at `ht`: a snapshot
    /// to its own time; a time at or after [`Tablet::kept_since`], the live data; an
    /// earlier one, the first snapshot after it whose history reached back to it.
    fn restore_source(&self, target: &RestoreTarget, ht: HybridTime) -> Result<RestoreOp> {
        self.schema.check(&MetaChange::Restore(RestoreOp {
            from: None,
            to: ht,
            imported: false,
        }))?;
        let snapshots = self.db.snapshots()?;
        let to = match target {
            RestoreTarget::Snapshot(id) => {
                let Some(snapshot) = snapshots.iter().find(|s| &s.id == id) else {
                    return Err(Error::InvalidRequest(format!("restore: no snapshot {id}")));
                };
                return Ok(RestoreOp { from: Some(id.clone()), to: snapshot.ht, imported: false });
            }
            RestoreTarget::Imported(id) => {
                let Some(snapshot) = snapshots.iter().find(|s| &s.id == id) else {
                    return Err(Error::InvalidRequest(format!("import: no snapshot {id}")));
                };
                if snapshot.ht >= ht {
                    let why = format!("import of {id}: its time {} is not before now", snapshot.ht);
                    return Err(Error::InvalidRequest(why));
                }
                return Ok(RestoreOp { from: Some(id.clone()), to: snapshot.ht, imported: true });
            }
            RestoreTarget::Time(to) if *to >= ht => {
                return Err(Error::InvalidRequest(format!(
                    "restore to {to}: not before now ({ht})"
                )))
            }
            RestoreTarget::Time(to) => *to,
        };
        if self.kept.since.is_some_and(|since| since <= to) {
            return Ok(RestoreOp { from: None, to, imported: false });
        }
        let reaches = |s: &&SnapshotInfo| s.ht >= to && s.kept.is_some_and(|since| since <= to);
        match snapshots.iter().filter(reaches).min_by_key(|s| s.ht) {
            Some(snapshot) => {
                Ok(RestoreOp { from: Some(snapshot.id.clone()), to, imported: false })
            }
            None => Err(Error::InvalidRequest(format!(
                "restore to {to}: no snapshot keeps the history back to it (history is kept {})",
                self.kept.since.map_or("for no snapshot".into(), |at| format!("since {at}")),
            ))),
        }
    }

    /// The time since which every replica keeps this tablet's history, so that a restore
    /// to any time after it finds it (absent while the tablet has no snapshot). A
    /// snapshot moves it to its own time, a restore to the restore's. It is the retention
    /// term of YugabyteDB's snapshot schedules
    /// (`MasterSnapshotCoordinator::AllowedHistoryCutoffProvider`: the last snapshot of
    /// each schedule); docsim's rule is that every snapshot is a schedule's, and the term
    /// travels with the entry, so every replica holds the same one.
    pub fn kept_since(&self) -> Option<HybridTime> {
        self.kept.since
    }

    /// The next list index after the indexes `batch` uses, if it uses any past the
    /// tablet's counter (which moves there).
    fn list_next_of(&mut self, batch: &DocWriteBatch) -> Option<i64> {
        let table = self.schema.cql()?;
        let lists: Vec<i32> = table
            .columns
            .iter()
            .filter_map(|c| match (&c.ty, c.kind) {
                (CqlType::List(_), crate::cql::ColumnKind::Regular(id)) => Some(id),
                _ => None,
            })
            .collect();
        if lists.is_empty() {
            return None;
        }
        let used = batch.iter().filter_map(|(key, _)| list_index_in(key, &lists)).max()?;
        let next = used.saturating_add(1);
        (next > self.list_next).then(|| {
            self.list_next = next;
            next
        })
    }

    /// The read `request` at `read_ht`.
    pub fn read(&self, request: &Request, read_ht: HybridTime) -> Result<Reply> {
        match request {
            Request::Get { path } => self.get(path, read_ht).map(Reply::Document),
            Request::Cql(statement) => {
                let table = self.table(statement.table())?;
                self.check_partition(table, statement)?;
                crate::cql::read_select(table, &self.db, read_ht, statement).map(Reply::Rows)
            }
            Request::Page(statement, paging) => {
                let table = self.table(statement.table())?;
                self.check_partition(table, statement)?;
                let page = crate::cql::read_page(table, &self.db, read_ht, statement, paging)?;
                Ok(Reply::Page { rows: page.0, last: page.1 })
            }
            Request::Redis(command) => {
                self.expect_docs("a Redis command")?;
                let ttl = self.schema.default_ttl_ms();
                let (entries, reply) = crate::redis::execute(&self.db, ttl, read_ht, command)?;
                assert!(entries.is_empty(), "a Redis read writes nothing: {command}");
                Ok(Reply::Redis(reply))
            }
            other => unreachable!("not a read: {other:?}"),
        }
    }

    /// The subdocument at `path`. In a table's tablet a row is the document
    /// `doc(<hash key>; <clustering key>)`; a dropped column's values stay stored until
    /// repacking or GC removes them, and the row's document does not show them, nor is a
    /// row of nothing else there (a rule of docsim's: no column has them).
    fn get(&self, path: &DocPath, read_ht: HybridTime) -> Result<Option<Document>> {
        let ttl = self.schema.default_ttl_ms();
        let Some(table) = self.schema.cql() else { return self.db.get(path, read_ht, ttl) };
        let current = |key: &KeyEntry| match key.value {
            Primitive::ColumnId(id) => table.column_name(id).is_some(),
            _ => true,
        };
        if path.subkeys.first().is_some_and(|key| !current(key)) {
            self.db.check_read_time(read_ht)?;
            return Ok(None);
        }
        // Only a row's own keys are column ids: below a column, the filter keeps all.
        Ok(match self.db.get(path, read_ht, ttl)? {
            Some(Document::Object(map)) if path.subkeys.is_empty() => {
                // Nothing current left: no row (dropped columns do not make one exist,
                // however far compaction has removed them).
                let row: std::collections::BTreeMap<_, _> =
                    map.into_iter().filter(|(k, _)| current(k)).collect();
                (!row.is_empty()).then_some(Document::Object(row))
            }
            other => other,
        })
    }

    /// What the memtables hold since the last flush.
    pub fn memstore(&self) -> crate::db::Memstore {
        self.db.memstore()
    }

    /// Flush memtables (the flushed frontier moves to the last entry applied).
    pub fn flush(&self) -> Result<()> {
        self.db.flush()
    }

    /// Flush, then compact every SST file (`files`: `None`) or a run of them by age (a
    /// minor compaction), with history cutoff `cutoff_ht`.
    pub fn compact(
        &mut self,
        cutoff_ht: HybridTime,
        kind: CompactionKind,
        files: Option<std::ops::RangeInclusive<usize>>,
    ) -> Result<()> {
        let ttl = self.schema.default_ttl_ms();
        self.db.compact(cutoff_ht, kind, (ttl, self.schema.gc()), files)
    }

    /// The live SST files, oldest first.
    pub fn files(&self) -> Vec<crate::sst_files::SstFile> {
        self.db.files()
    }

    /// What the tablet's reads skipped and read since it opened.
    pub fn read_stats(&self) -> crate::db::ReadStats {
        self.db.read_stats()
    }

    /// Every stored entry with its raw key and value bytes.
    pub fn dump(&self) -> Result<Vec<RawEntry>> {
        self.db.dump()
    }

    /// The highest history cutoff so far.
    pub fn history_cutoff(&self) -> HybridTime {
        self.db.history_cutoff()
    }

    /// The metadata a snapshot of this tablet carries beside its documents.
    pub(crate) fn snapshot_metadata(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        metadata_pairs(&self.schema, self.list_next, &self.kept)
    }

    /// After a snapshot was installed: the metadata it carried is the tablet's.
    pub(crate) fn reload_metadata(&mut self) -> Result<()> {
        if let Some(bytes) = self.db.metadata(SCHEMA_KEY)? {
            self.schema = Schema::decode(&bytes).map_err(|why| stored(SCHEMA_KEY, why))?;
        }
        if let Some(bytes) = self.db.metadata(LIST_NEXT_KEY)? {
            let bytes = bytes.try_into().map_err(|_| stored(LIST_NEXT_KEY, "not 8 bytes".into()));
            self.list_next = i64::from_be_bytes(bytes?);
        }
        self.kept = decode_kept(self.db.metadata(KEPT_SINCE_KEY)?)?;
        self.attach_schema();
        Ok(())
    }
}

/// The index of a list element's key (`doc.col(<list column>).<index>`), if `key` is one.
fn list_index_in(key: &[u8], lists: &[i32]) -> Option<i64> {
    let mut at = doc_key_len(key)?;
    let (column, next) = KeyEntry::decode(key, at).ok()?;
    at = next;
    match column.value {
        Primitive::ColumnId(id) if lists.contains(&id) => {}
        _ => return None,
    }
    match KeyEntry::decode(key, at).ok()?.0.value {
        Primitive::Int64(index) => Some(index),
        _ => None,
    }
}

/// A stored metadata value that does not decode: the data needs repair.
/// The schema `db` stored with its flushed frontier, or `initial` when no change was ever
/// flushed there.
fn stored_schema(db: &DocDb, initial: Schema) -> Result<Schema> {
    match db.metadata(SCHEMA_KEY)? {
        None => Ok(initial),
        Some(bytes) => Schema::decode(&bytes).map_err(|why| stored(SCHEMA_KEY, why)),
    }
}

/// The tablet's metadata keys and values: its schema, list-index counter, history kept.
fn metadata_pairs(schema: &Schema, list_next: i64, kept: &Kept) -> Vec<(Vec<u8>, Vec<u8>)> {
    vec![
        (SCHEMA_KEY.to_vec(), schema.encode()),
        (LIST_NEXT_KEY.to_vec(), list_next.to_be_bytes().to_vec()),
        (KEPT_SINCE_KEY.to_vec(), encode_kept(kept)),
    ]
}

/// The packings of a schema's packed rows, and whether they are entities.
fn layout_of(schema: &Schema) -> (crate::encoding::Packings, bool) {
    match schema.cql() {
        Some(t) if t.packed_rows => (t.packings().clone(), t.entity_rows),
        Some(t) => (Default::default(), t.entity_rows),
        None => (Default::default(), false),
    }
}

/// The history kept as stored: nothing (none), or its raw hybrid time and then the
/// snapshots' ids, each after a `\n`.
fn encode_kept(kept: &Kept) -> Vec<u8> {
    let Some(since) = kept.since else { return Vec::new() };
    let mut bytes = since.raw().to_be_bytes().to_vec();
    for id in &kept.snapshots {
        bytes.push(b'\n');
        bytes.extend_from_slice(id.as_bytes());
    }
    bytes
}

fn decode_kept(bytes: Option<Vec<u8>>) -> Result<Kept> {
    let bytes = bytes.unwrap_or_default();
    if bytes.is_empty() {
        return Ok(Kept::default());
    }
    let bad = |why: &str| stored(KEPT_SINCE_KEY, why.into());
    let (raw, ids) = bytes.split_at_checked(8).ok_or_else(|| bad("shorter than 8 bytes"))?;
    let since = HybridTime::from_raw(u64::from_be_bytes(raw.try_into().expect("8 bytes")));
    let ids = std::str::from_utf8(ids).map_err(|_| bad("snapshot ids not UTF-8"))?;
    let mut snapshots = std::collections::BTreeSet::new();
    for id in ids.split('\n').skip(1) {
        if !valid_snapshot_id(id) {
            return Err(bad(&format!("`{id}` is no snapshot id")));
        }
        snapshots.insert(id.to_owned());
    }
    match snapshots.is_empty() {
        true => Err(bad("a time kept for no snapshot")),
        false => Ok(Kept { since: Some(since), snapshots }),
    }
}

fn stored(key: &[u8], why: String) -> Error {
    let error = crate::decode_error::DecodeError::new("tablet metadata", 0, why);
    Error::Corruption { error, key: Some(crate::encoding::hex(key)) }
}

#[cfg(test)]
mod tests;
