//! Turning document writes into the entries of one write batch.
//!
//! With optional markers (CQL-like) writes are blind: no reads. With required markers
//! (Redis-like) each entry is placed as YugabyteDB's `DocWriteBatch` places it
//! (`DoSetPrimitive`, `SetPrimitiveInternal`, `SeekToKeyPrefix` in
//! `src/yb/docdb/doc_write_batch.cc`): a level of the path exists when the *first* entry
//! at or below it — by key order, its newest version as of the batch — is neither a
//! tombstone nor expired by its own TTL, and its parent level, found at its own path, is
//! not newer. That is not a read of the subdocument: inherited TTLs, table tombstones and
//! any other entry below the level play no part, so a level whose first entry is a deleted
//! child counts as missing even if a later child is alive (and gets a `{}` marker that
//! hides it), and a level whose first entry is a primitive child refuses writes below it.
//! Missing levels get `{}` markers at lower write ids; a `del` writes its tombstone only if
//! every level down to its path exists. Entries earlier in the batch count first (the
//! batch's cache).

use crate::db::DocDb;
use crate::document::Document;
use crate::encoding::{DocKey, DocPath, KeyEntry, Ttl, Value, ValueKind};
use crate::error::{errinput, Error, Result, TypeConflict};
use crate::hybrid_time::{DocHybridTime, HybridTime};
use crate::reader::{read_subdocument, DocEntry};
use std::collections::btree_map::{BTreeMap, Entry};

/// Init-marker behaviour of document writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MarkerMode {
    /// Blind writes, no markers, no reads (CQL-like).
    #[default]
    Optional,
    /// Markers for missing ancestors; deleting a missing path writes nothing (Redis-like).
    Required,
}

/// What one document write does at its path.
#[derive(Clone, Debug, PartialEq)]
pub enum WriteKind {
    /// A primitive, or an object literal (which overwrites: a marker first).
    Set(Document),
    /// An object literal's entries without a marker at the path itself (merge). A
    /// primitive is an invalid request.
    Extend(Document),
    /// An init marker.
    Obj,
    /// A tombstone.
    Del,
    /// A TTL-only record (Redis EXPIRE) for a key holding an object (`object`) or a
    /// string; `ttl_us` must be set. Reads give the version beneath it this TTL.
    TtlOnly { object: bool },
}

/// One document write (a command of its own, or one item of a batch).
#[derive(Clone, Debug, PartialEq)]
pub struct DocWrite {
    /// Where.
    pub path: DocPath,
    /// What.
    pub kind: WriteKind,
    /// The TTL in microseconds (a whole number of milliseconds; 0 = never expires);
    /// `None` inherits.
    pub ttl_us: Option<u64>,
}

/// Documents as stored, scanned at one hybrid time, by encoded document key: a command
/// that reads a key and then writes it at the same hybrid time (Redis) scans it once, and
/// the batch builder's required-marker seeks reuse the scan. The scan keeps every path's
/// newest version, also one an ancestor overwrote (the seeks need those; reads skip them).
#[derive(Default)]
pub struct Scanned {
    ht: Option<HybridTime>,
    docs: BTreeMap<Vec<u8>, Vec<DocEntry>>,
}

impl Scanned {
    /// Every path's newest stored version at or before `ht` of `doc_key`'s document, and
    /// the version beneath each TTL-only record, in key order (scanned once).
    fn newest_entries(
        &mut self,
        db: &DocDb,
        doc_key: &DocKey,
        ht: HybridTime,
    ) -> Result<&[DocEntry]> {
        assert!(self.ht.is_none_or(|at| at == ht), "one Scanned serves one hybrid time");
        self.ht = Some(ht);
        Ok(match self.docs.entry(doc_key.encode()) {
            Entry::Occupied(scanned) => scanned.into_mut(),
            Entry::Vacant(slot) => slot.insert(db.scan_document_newest_at(doc_key, ht)?),
        })
    }

    /// The subdocument at `path` as of `ht`, like [`DocDb::get`], keeping the scan.
    pub fn get(
        &mut self,
        db: &DocDb,
        path: &DocPath,
        ht: HybridTime,
        table_ttl_ms: Option<u64>,
    ) -> Result<Option<Document>> {
        db.check_read_time(ht)?;
        let entries = self.newest_entries(db, &path.doc_key, ht)?;
        Ok(read_subdocument(entries, path, db.read_config(ht, table_ttl_ms)))
    }
}

/// Build the entries of one batch at `ht`, in write-id order. `scanned` holds documents
/// already read at `ht` (or nothing); the required-marker seeks add to it.
pub fn build_entries(
    db: &DocDb,
    writes: &[DocWrite],
    ht: HybridTime,
    mode: MarkerMode,
    scanned: &mut Scanned,
) -> Result<Vec<(DocPath, Value)>> {
    let mut batch =
        Pending { db, ht, entries: Vec::new(), stored: scanned, cache: BTreeMap::new() };
    for write in writes {
        if let WriteKind::Extend(Document::Primitive(p)) = &write.kind {
            return errinput!("extend {} needs an object literal, not {p}", write.path);
        }
        if let WriteKind::TtlOnly { .. } = write.kind {
            check_ttl_only(write, mode)?;
        }
        let ttl = write.ttl_us.map_or(Ttl::Inherit, |us| Ttl::from_ms(us / 1000));
        for (path, value) in expand(write, ttl) {
            match mode {
                MarkerMode::Optional => batch.entries.push((path, value)),
                MarkerMode::Required => batch.place(&path, value)?,
            }
        }
    }
    Ok(batch.entries)
}

/// The entries one write stands for, before any required markers.
pub fn expand(write: &DocWrite, ttl: Ttl) -> Vec<(DocPath, Value)> {
    let value = |kind| Value { ttl, kind };
    let mut out = Vec::new();
    match &write.kind {
        WriteKind::Set(Document::Primitive(p)) => {
            out.push((write.path.clone(), value(ValueKind::Primitive(p.clone()))))
        }
        WriteKind::Set(Document::Object(map)) => {
            out.push((write.path.clone(), value(ValueKind::Object)));
            expand_children(&write.path, map, ttl, &mut out);
        }
        WriteKind::Extend(Document::Object(map)) => {
            expand_children(&write.path, map, ttl, &mut out)
        }
        WriteKind::Extend(Document::Primitive(_)) => {} // refused by `build_entries`
        WriteKind::Obj => out.push((write.path.clone(), value(ValueKind::Object))),
        WriteKind::Del => out.push((write.path.clone(), Value::tombstone())),
        WriteKind::TtlOnly { object } => {
            out.push((write.path.clone(), value(ValueKind::TtlOnly { object: *object })))
        }
    }
    out
}

fn expand_children(
    path: &DocPath,
    map: &BTreeMap<crate::encoding::KeyEntry, Document>,
    ttl: Ttl,
    out: &mut Vec<(DocPath, Value)>,
) {
    for (key, doc) in map {
        let child = path.child(key.clone());
        match doc {
            Document::Primitive(p) => {
                out.push((child, Value { ttl, kind: ValueKind::Primitive(p.clone()) }))
            }
            Document::Object(inner) => {
                out.push((child.clone(), Value { ttl, kind: ValueKind::Object }));
                expand_children(&child, inner, ttl, out);
            }
        }
    }
}

struct Pending<'a> {
    db: &'a DocDb,
    ht: HybridTime,
    entries: Vec<(DocPath, Value)>,
    /// Stored entries per document, scanned once per batch (or before it, at `ht`).
    stored: &'a mut Scanned,
    /// What earlier seeks of this batch found and what the batch wrote, by encoded path:
    /// YugabyteDB's `DocWriteBatchCache`, consulted before any stored entry.
    cache: BTreeMap<Vec<u8>, Found>,
}

/// What a prefix seek finds: the first entry at or below a path (`DocWriteBatch::
/// SeekToKeyPrefix`, `src/yb/docdb/doc_write_batch.cc`).
#[derive(Clone, Debug)]
struct Found {
    /// The entry is at the path itself, not at a descendant.
    exact: bool,
    /// When it was written.
    written: Written,
    /// What it is; an entry whose own TTL ran out counts as a tombstone.
    kind: ValueKind,
    /// Where it is stored (the path itself when `exact`).
    at: DocPath,
}

/// A stored version, or one written earlier in this batch (newer than anything stored:
/// YugabyteDB gives batch entries `HybridTime::kMax` until the batch commits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Written {
    Stored(DocHybridTime),
    InBatch(u32),
}

impl Found {
    fn exists(&self) -> bool {
        self.kind != ValueKind::Tombstone
    }

    /// Whether this level, found at its own path, overwrote `below`, what a seek one
    /// level down found: it is newer or as new (see [`Pending::seek`] for the tie).
    fn overwrote(&self, below: &Found) -> bool {
        self.exact && self.written >= below.written
    }
}

impl Pending<'_> {
    /// Place one entry of a required-marker write the way YugabyteDB's
    /// `DocWriteBatch::DoSetPrimitive` and `SetPrimitiveInternal` do: seek the document,
    /// then each ancestor level (`seek`); below a level that does not exist, write `{}`
    /// markers down to the entry, with no more seeks; refuse to go below a level whose
    /// entry is not an object. A set reads no further than its parent, and a set of a
    /// whole document reads nothing (`num_subkeys > 0 || is_deletion`); a delete also
    /// seeks the path itself and writes nothing unless every level exists.
    fn place(&mut self, path: &DocPath, value: Value) -> Result<()> {
        let deletion = value.kind == ValueKind::Tombstone;
        let depth = path.subkeys.len();
        let mut found: Option<Found> = None;
        if depth > 0 || deletion {
            found = self.seek(&path.doc_key, &[], None)?;
        }
        let mut exists = found.as_ref().is_some_and(Found::exists);
        if deletion && !exists {
            crate::probe::hit("write.del_missing_skipped");
            return Ok(());
        }
        for level in 0..depth {
            if !exists {
                let marker = DocPath::new(path.doc_key.clone(), path.subkeys[..level].to_vec());
                crate::probe::hit("write.required_marker");
                if !self.db.plants().contains(crate::canary::Plant::MissingInitMarker) {
                    self.push(marker, Value::new(ValueKind::Object));
                }
                continue;
            }
            let parent = found.take().expect("an existing level was found");
            if let ValueKind::Primitive(primitive) = &parent.kind {
                let ancestor = DocPath::new(path.doc_key.clone(), path.subkeys[..level].to_vec());
                let conflict = TypeConflict {
                    path: path.clone(),
                    ancestor,
                    found: primitive.clone(),
                    found_at: parent.at.clone(),
                };
                return Err(Error::TypeConflict(Box::new(conflict)));
            }
            if level + 1 == depth && !deletion {
                break; // an upsert overwrites its own path unread
            }
            found = self.seek(&path.doc_key, &path.subkeys[..=level], Some(&parent))?;
            exists = found.as_ref().is_some_and(Found::exists);
            if deletion && !exists {
                crate::probe::hit("write.del_missing_skipped");
                return Ok(());
            }
        }
        self.push(path.clone(), value);
        Ok(())
    }

    /// Add an entry to the batch and to the cache.
    fn push(&mut self, path: DocPath, value: Value) {
        let written = Written::InBatch(self.entries.len() as u32);
        let found = Found { exact: true, written, kind: as_seen(&value.kind), at: path.clone() };
        self.cache.insert(path.encode(), found);
        self.entries.push((path, value));
    }

    /// `SeekToKeyPrefix` at the path `doc_key`/`subkeys`, below `parent` (what the seek one
    /// level up found): the cache, else the first stored entry at or below the path as of
    /// the batch — its newest version at or before `ht` — checked against its *own* TTL
    /// only. A level counts as missing when nothing is there, when that entry is a
    /// tombstone or expired, or when `parent` was found at its own path and is newer or as
    /// new (it overwrote the level). The tie is ours: YugabyteDB's `SeekToKeyPrefix`
    /// (docdb/doc_write_batch.cc) counts the level overwritten only when the parent is
    /// strictly newer, while its reader hides a child as old as its parent; docsim's writes
    /// follow the reader (a tie takes two batches at one hybrid time, which only a script
    /// writes). Results are cached (an expired entry as a tombstone), except
    /// when nothing is found or the parent overwrote the level.
    fn seek(
        &mut self,
        doc_key: &DocKey,
        subkeys: &[KeyEntry],
        parent: Option<&Found>,
    ) -> Result<Option<Found>> {
        let path = DocPath::new(doc_key.clone(), subkeys.to_vec());
        let encoded = path.encode();
        let plants = self.db.plants();
        if let Some(cached) = self.cached(&encoded, parent) {
            return Ok(Some(cached));
        }
        // YugabyteDB counts these too (`DocWriteBatch::num_rocksdb_seeks_`).
        crate::probe::hit("write.marker_seek");
        let stored = self.stored.newest_entries(self.db, doc_key, self.ht)?;
        // A document's scan starts with its table's tombstone, which no seek sees (a table
        // key's own entries are all marked as the table key's).
        let own = |e: &&DocEntry| e.table_key == doc_key.is_table_key();
        let mut at_prefix =
            stored.iter().filter(own).skip_while(|e| !e.subkeys.starts_with(subkeys));
        let Some(entry) = at_prefix.next() else { return Ok(None) };
        let mut found = Found {
            exact: entry.subkeys.len() == subkeys.len(),
            written: Written::Stored(entry.doc_ht),
            kind: as_seen(&entry.value.kind),
            at: DocPath::new(doc_key.clone(), entry.subkeys.clone()),
        };
        if let ValueKind::TtlOnly { .. } = entry.value.kind {
            if !plants.contains(crate::canary::Plant::YbSeekStopsAtExpire) {
                // A rule of docsim's own: a TTL-only record overwrites nothing, so the
                // level is the version beneath it (its kind and time; the record's TTL),
                // as YugabyteDB's Redis reader takes it (`NextFullValue`); with none, the
                // record is a tombstone at its own time. YugabyteDB's seek takes the
                // record's own time and type (`docs/findings.md`).
                crate::probe::hit("write.marker_seek_through_ttl_only");
                let beneath = at_prefix
                    .take_while(|e| e.subkeys == entry.subkeys)
                    .find(|e| !matches!(e.value.kind, ValueKind::TtlOnly { .. }));
                match beneath {
                    Some(version) => {
                        found.written = Written::Stored(version.doc_ht);
                        found.kind = version.value.kind.clone();
                    }
                    None => found.kind = ValueKind::Tombstone,
                }
            }
        }
        let own_ttl = match entry.value.ttl {
            Ttl::Inherit => None,
            explicit => Some((entry.doc_ht.ht, explicit)),
        };
        if !found.exact {
            crate::probe::hit("write.marker_seek_descendant");
        }
        if crate::expiry::is_expired(own_ttl, entry.doc_ht.ht, None, self.ht) {
            crate::probe::hit("write.marker_seek_expired");
            found.kind = ValueKind::Tombstone;
        } else if let Some(parent) = parent {
            if parent.overwrote(&found) {
                crate::probe::hit("write.marker_seek_overwritten");
                found.kind = ValueKind::Tombstone;
                return Ok(Some(found));
            }
        }
        self.cache.insert(encoded, found.clone());
        Ok(Some(found))
    }
}

impl Pending<'_> {
    /// What the batch's cache holds at `encoded`, judged against `parent` as a stored entry
    /// is (a rule of docsim's own): a level this batch wrote before its parent's newer
    /// marker is missing. YugabyteDB's cache branch of `SeekToKeyPrefix` returns the entry
    /// as it is (`docs/findings.md`; `--plant yb-batch-cache-keeps-overwritten`).
    fn cached(&self, encoded: &[u8], parent: Option<&Found>) -> Option<Found> {
        let mut found = self.cache.get(encoded)?.clone();
        let overwritten = parent.is_some_and(|p| p.overwrote(&found));
        let plant = crate::canary::Plant::YbBatchCacheKeepsOverwritten;
        if overwritten && !self.db.plants().contains(plant) {
            crate::probe::hit("write.marker_seek_overwritten");
            found.kind = ValueKind::Tombstone;
        }
        Some(found)
    }
}

/// A TTL-only record goes where Redis EXPIRE puts it, and nowhere else: at the root of a
/// document outside any colocated table (no ancestor can shadow what it covers: `gc.rs`),
/// with required markers, and with a TTL of at least a millisecond (the stored unit).
fn check_ttl_only(write: &DocWrite, mode: MarkerMode) -> Result<()> {
    let path = &write.path;
    if !path.subkeys.is_empty() || path.doc_key.colocation_id.is_some() {
        return errinput!("a TTL-only record goes at a document root outside tables, not {path}");
    }
    if mode != MarkerMode::Required {
        return errinput!("a TTL-only record at {path} needs required markers (Redis)");
    }
    match write.ttl_us {
        Some(us) if us >= 1000 => Ok(()),
        _ => errinput!("a TTL-only record at {path} needs a TTL of at least 1ms"),
    }
}

/// What a seek takes an entry for: a TTL-only record for the type it holds, the key's
/// (YugabyteDB writes that type as the record's value: `ApplySetTtl`).
fn as_seen(kind: &ValueKind) -> ValueKind {
    match kind {
        ValueKind::TtlOnly { object: true } => ValueKind::Object,
        ValueKind::TtlOnly { object: false } => {
            ValueKind::Primitive(crate::encoding::Primitive::String(String::new()))
        }
        other => other.clone(),
    }
}
