//! Turning document writes into the entries of one write batch.
//!
//! With optional markers (CQL-like) writes are blind: no reads. With required markers
//! (Redis-like) each entry first gets `{}` markers, at lower write ids, for every strict
//! ancestor that does not exist (missing or deleted) as of the batch — counting entries
//! earlier in the same batch — and a `del` of a path that does not exist writes nothing.

use crate::db::DocDb;
use crate::document::Document;
use crate::encoding::{DocKey, DocPath, Ttl, Value, ValueKind};
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
/// the batch builder's required-marker lookups reuse the scan.
#[derive(Default)]
pub struct Scanned {
    ht: Option<HybridTime>,
    docs: BTreeMap<Vec<u8>, Vec<DocEntry>>,
}

impl Scanned {
    /// The stored entries of `doc_key`'s document a read at `ht` needs (scanned once).
    fn entries(&mut self, db: &DocDb, doc_key: &DocKey, ht: HybridTime) -> Result<&[DocEntry]> {
        assert!(self.ht.is_none_or(|at| at == ht), "one Scanned serves one hybrid time");
        self.ht = Some(ht);
        Ok(match self.docs.entry(doc_key.encode()) {
            Entry::Occupied(scanned) => scanned.into_mut(),
            Entry::Vacant(slot) => slot.insert(db.scan_document_at(doc_key, ht)?),
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
        let entries = self.entries(db, &path.doc_key, ht)?;
        Ok(read_subdocument(entries, path, db.read_config(ht, table_ttl_ms)))
    }
}

/// Build the entries of one batch at `ht`, in write-id order. `scanned` holds documents
/// already read at `ht` (or nothing); the required-marker lookups add to it.
pub fn build_entries(
    db: &DocDb,
    writes: &[DocWrite],
    ht: HybridTime,
    mode: MarkerMode,
    table_ttl_ms: Option<u64>,
    scanned: &mut Scanned,
) -> Result<Vec<(DocPath, Value)>> {
    let mut batch = Pending { db, ht, table_ttl_ms, entries: Vec::new(), stored: scanned };
    for write in writes {
        if let WriteKind::Extend(Document::Primitive(p)) = &write.kind {
            return errinput!("extend {} needs an object literal, not {p}", write.path);
        }
        let ttl = write.ttl_us.map_or(Ttl::Inherit, |us| Ttl::from_ms(us / 1000));
        let items = expand(write, ttl);
        match mode {
            MarkerMode::Optional => batch.entries.extend(items),
            MarkerMode::Required if write.kind == WriteKind::Del => {
                if batch.lookup(&write.path)?.is_some() {
                    batch.entries.extend(items);
                } else {
                    crate::probe::hit("write.del_missing_skipped");
                }
            }
            MarkerMode::Required => {
                for (path, value) in items {
                    batch.ensure_ancestors(&path)?;
                    batch.entries.push((path, value));
                }
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
    table_ttl_ms: Option<u64>,
    entries: Vec<(DocPath, Value)>,
    /// Stored entries per document, scanned once per batch (or before it, at `ht`).
    stored: &'a mut Scanned,
}

impl Pending<'_> {
    /// The subdocument at `path` as of the batch, counting entries already in it.
    fn lookup(&mut self, path: &DocPath) -> Result<Option<Document>> {
        // Entries of this batch are at `ht` and newer than anything stored at `ht`'s
        // older versions: a read-time scan at `ht` keeps all that can matter.
        let stored = self.stored.entries(self.db, &path.doc_key, self.ht)?;
        let mut pending = Vec::new();
        let key = &path.doc_key;
        for (write_id, (p, v)) in self.entries.iter().enumerate() {
            let same_doc = p.doc_key == *key;
            let table_key = p.doc_key.is_table_key()
                && p.doc_key.colocation_id.is_some()
                && p.doc_key.colocation_id == key.colocation_id;
            if same_doc || table_key {
                pending.push(DocEntry {
                    table_key: p.doc_key.is_table_key(),
                    subkeys: p.subkeys.clone(),
                    doc_ht: DocHybridTime::new(self.ht, write_id as u32),
                    value: v.clone(),
                });
            }
        }
        pending.sort_by(|a, b| a.key_cmp(b));
        let merged = merge_sorted(stored, &pending);
        Ok(read_subdocument(merged, path, self.db.read_config(self.ht, self.table_ttl_ms)))
    }

    /// Write `{}` markers for the strict ancestors of `path` that do not exist.
    fn ensure_ancestors(&mut self, path: &DocPath) -> Result<()> {
        for depth in 0..path.subkeys.len() {
            let ancestor = DocPath::new(path.doc_key.clone(), path.subkeys[..depth].to_vec());
            match self.lookup(&ancestor)? {
                Some(Document::Object(_)) => {}
                Some(Document::Primitive(found)) => {
                    let conflict = TypeConflict { path: path.clone(), ancestor, found };
                    return Err(Error::TypeConflict(Box::new(conflict)));
                }
                None if self.db.plants().contains(crate::canary::Plant::MissingInitMarker) => {}
                None => {
                    crate::probe::hit("write.required_marker");
                    self.entries.push((ancestor, Value::new(ValueKind::Object)))
                }
            }
        }
        Ok(())
    }
}

/// Merge two lists of entries, each in key order, into one in key order (by reference).
fn merge_sorted<'a>(a: &'a [DocEntry], b: &'a [DocEntry]) -> Vec<&'a DocEntry> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(a.len() + b.len());
    while i < a.len() || j < b.len() {
        let order = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) => x.key_cmp(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match order {
            std::cmp::Ordering::Less => {
                out.push(&a[i]);
                i += 1;
            }
            // The same key: the batch's entry overwrites the stored one, as in RocksDB.
            std::cmp::Ordering::Equal => {
                out.push(&b[j]);
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(&b[j]);
                j += 1;
            }
        }
    }
    out
}
