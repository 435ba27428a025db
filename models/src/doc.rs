//! The document model: paths, versions, reads at a time, writes with markers.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A raw hybrid time: `physical_us << 12 | logical`.
pub type Time = u64;

/// Microseconds as a [`Time`] delta.
fn micros(us: u64) -> Time {
    us.saturating_mul(1 << 12)
}

/// A primitive value. The order is arbitrary but total (maps need one); documents are
/// compared as maps, never by the engine's byte order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Scalar {
    Null,
    Bool(bool),
    Int32(i32),
    Int64(i64),
    /// The bit pattern (NaN canonical).
    Double(u64),
    Str(String),
    Timestamp(i64),
    Column(i32),
    SystemColumn(i32),
}

/// A subkey or key component: a scalar and whether it sorts descending.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Key {
    pub scalar: Scalar,
    pub desc: bool,
}

impl Key {
    /// An ascending key.
    pub fn of(scalar: Scalar) -> Key {
        Key { scalar, desc: false }
    }
}

/// A document's identity.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DocId {
    pub colocation: Option<u32>,
    pub hashed: Vec<Key>,
    pub range: Vec<Key>,
}

impl DocId {
    /// A colocated table's own key (`doc(coloc=N | ;)`).
    pub fn is_table(&self) -> bool {
        self.colocation.is_some() && self.hashed.is_empty() && self.range.is_empty()
    }

    fn table(&self) -> Option<DocId> {
        let id = self.colocation?;
        (!self.is_table()).then(|| DocId { colocation: Some(id), hashed: vec![], range: vec![] })
    }
}

/// What a version stores.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Entry {
    Marker,
    Tombstone,
    Value(Scalar),
}

/// A version's TTL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Ttl {
    Inherit,
    Never,
    Ms(u64),
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Version {
    time: Time,
    write_id: u32,
    entry: Entry,
    ttl: Ttl,
}

/// A document or subdocument as read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Doc {
    Leaf(Scalar),
    Object(#[serde(with = "key_map")] BTreeMap<Key, Doc>),
}

/// A write at one path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Write {
    /// A value, or an object literal: a marker then its entries (overwrite).
    Set(Doc),
    /// An object literal's entries without a marker at the path (merge).
    Extend(#[serde(with = "key_map")] BTreeMap<Key, Doc>),
    /// A marker.
    Obj,
    /// A tombstone.
    Del,
}

/// Serde for maps keyed by [`Key`]: a list of `(key, value)` pairs, since formats such as
/// JSON take only strings as map keys.
mod key_map {
    use super::Key;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<V: Serialize, S: Serializer>(
        map: &BTreeMap<Key, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(map)
    }

    pub fn deserialize<'de, V: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<Key, V>, D::Error> {
        Ok(Vec::<(Key, V)>::deserialize(d)?.into_iter().collect())
    }
}

/// Init-marker mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Markers {
    Optional,
    Required,
}

/// Why the model refuses an operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelError {
    /// A read below the highest history cutoff.
    SnapshotTooOld,
    /// A required-marker write under a path that holds a primitive.
    NotAnObject,
    /// Redis: the key holds another type.
    WrongType,
    /// A statement the schema refuses (an `ALTER TABLE` adding a column that exists, or
    /// dropping one that does not).
    InvalidRequest,
}

/// One path of a document: every version ever written at it, sorted by (time, write id),
/// and the paths one subkey longer. A document is the tree of its paths.
#[derive(Clone, Debug, Default)]
struct Node {
    versions: Vec<Version>,
    children: BTreeMap<Key, Node>,
}

impl Node {
    /// The newest version a read at `at` finds: the newest at or before `at`, unless a
    /// restore at or before `at` hid it ([`Model::restore`]); then the newest a read at
    /// the time restored to found.
    fn newest(&self, at: Time, restores: &[Restore]) -> Option<&Version> {
        let v = self.versions[..self.versions.partition_point(|v| v.time <= at)].last();
        match restores.iter().rev().find(|r| r.at <= at) {
            Some(r) if v.is_none_or(|v| v.time <= r.at) => self.newest(r.to, restores),
            _ => v,
        }
    }

    /// The newest tombstone a read at `at` finds.
    fn newest_tombstone(&self, at: Time, restores: &[Restore]) -> Option<&Version> {
        let upto = &self.versions[..self.versions.partition_point(|v| v.time <= at)];
        let found = |v: &&Version| v.entry == Entry::Tombstone && present(v.time, at, restores);
        upto.iter().rev().find(found)
    }
}

/// A restore: from its entry's time `at` on, the tablet holds what it held at `to`
/// (reads at or after `at` find no version written in (`to`, `at`]), and what is written
/// after `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Restore {
    at: Time,
    to: Time,
}

/// Whether a version written at `written` is there for a read at `at`: written at or
/// before `at`, and not hidden by a restore at or before `at` — a restore to `to` keeps
/// what a read at `to` found there.
fn present(written: Time, at: Time, restores: &[Restore]) -> bool {
    match restores.iter().rev().find(|r| r.at <= at) {
        Some(r) if written <= r.at => present(written, r.to, restores),
        _ => written <= at,
    }
}

/// The newest versions at a read time of a path's ancestors, top down.
type Chain<'a> = Vec<Option<&'a Version>>;

/// The reference model of one tablet.
#[derive(Clone, Debug, Default)]
pub struct Model {
    docs: BTreeMap<DocId, Node>,
    table_ttl_ms: Option<u64>,
    cutoff: Time,
    /// Batches stored so far (a caller asking whether an operation changed anything).
    batches: u64,
    /// The restores so far, in order of their times.
    restores: Vec<Restore>,
}

impl Model {
    /// An empty model.
    pub fn new() -> Model {
        Model::default()
    }

    /// Set the table default TTL.
    pub fn set_table_ttl_ms(&mut self, ttl_ms: Option<u64>) {
        self.table_ttl_ms = ttl_ms;
    }

    /// The table default TTL.
    pub fn table_ttl_ms(&self) -> Option<u64> {
        self.table_ttl_ms
    }

    /// A compaction with history cutoff `cutoff` happened: no read at or above it changes;
    /// reads below the highest cutoff so far are refused.
    pub fn compacted(&mut self, cutoff: Time) {
        self.cutoff = self.cutoff.max(cutoff);
    }

    /// A restore at `at` to the earlier time `to` (YugabyteDB's restore of a snapshot, or
    /// to a point in time): reads at or after `at` find what a read at `to` found, and
    /// what is written after `at`; reads before `at` are unchanged. A restore stores
    /// nothing, so [`Model::batches`] does not count it.
    pub fn restore(&mut self, at: Time, to: Time) {
        assert!(to < at, "a restore goes back in time");
        assert!(self.restores.last().is_none_or(|r| r.at < at), "restores come in order");
        self.restores.push(Restore { at, to });
    }

    /// The time of the last restore, if any (a later one must come after it).
    pub fn last_restore(&self) -> Option<Time> {
        self.restores.last().map(|r| r.at)
    }

    /// How many non-empty batches were stored so far: an operation stored nothing iff
    /// this is the same after it.
    pub fn batches(&self) -> u64 {
        self.batches
    }

    /// The highest history cutoff so far.
    pub fn cutoff(&self) -> Time {
        self.cutoff
    }

    /// Store one batch of entries at `time`; entry `i` has write id `i`. A version with the
    /// same time and write id as a stored one replaces it (it is the same stored key).
    pub fn write_entries(&mut self, time: Time, entries: Vec<(DocId, Vec<Key>, Entry, Ttl)>) {
        self.batches += u64::from(!entries.is_empty());
        for (write_id, (doc, path, entry, ttl)) in entries.into_iter().enumerate() {
            let write_id = write_id as u32;
            let node = self.node_mut(&doc, &path);
            insert_version(&mut node.versions, Version { time, write_id, entry, ttl });
        }
    }

    /// Read the subdocument at `path` of `doc` as of `at`.
    pub fn read(&self, doc: &DocId, path: &[Key], at: Time) -> Result<Option<Doc>, ModelError> {
        if at < self.cutoff {
            return Err(ModelError::SnapshotTooOld);
        }
        Ok(self.read_unchecked(doc, path, at))
    }

    fn read_unchecked(&self, doc: &DocId, path: &[Key], at: Time) -> Option<Doc> {
        let (mut chain, node) = self.ancestors(doc, path, at)?;
        self.build(node, &mut chain, at)
    }

    /// The newest versions at `at` of the strict ancestors of `path` — the colocated table
    /// key first, then the document root downwards — and the node at `path`.
    fn ancestors(&self, doc: &DocId, path: &[Key], at: Time) -> Option<(Chain<'_>, &Node)> {
        let mut chain: Chain<'_> = Vec::with_capacity(path.len() + 8);
        if let Some(table) = doc.table() {
            // Only a tombstone at the table key hides the table's documents; any other
            // entry there is just an entry (see the crate essay).
            let root = self.docs.get(&table);
            chain.push(root.and_then(|root| root.newest_tombstone(at, &self.restores)));
        }
        let mut node = self.docs.get(doc)?;
        for key in path {
            chain.push(node.newest(at, &self.restores));
            node = node.children.get(key)?;
        }
        Some((chain, node))
    }

    /// The document at `node` (below `chain`): an object if anything beneath is visible,
    /// else its own visible entry.
    fn build<'a>(&'a self, node: &'a Node, chain: &mut Chain<'a>, at: Time) -> Option<Doc> {
        let own = node.newest(at, &self.restores);
        chain.push(own);
        let map: BTreeMap<Key, Doc> = node
            .children
            .iter()
            .filter_map(|(key, child)| Some((key.clone(), self.build(child, chain, at)?)))
            .collect();
        chain.pop();
        if !map.is_empty() {
            return Some(Doc::Object(map));
        }
        self.own_doc(chain, own, at)
    }

    /// What `own` alone reads as at `at` below `ancestors`: `{}` for a marker, a leaf for
    /// a value, nothing if it is missing or not visible.
    fn own_doc(
        &self,
        ancestors: &[Option<&Version>],
        own: Option<&Version>,
        at: Time,
    ) -> Option<Doc> {
        match self.visible(ancestors, own?, at)? {
            Entry::Marker => Some(Doc::Object(BTreeMap::new())),
            Entry::Value(s) => Some(Doc::Leaf(s.clone())),
            Entry::Tombstone => unreachable!("tombstones are never visible"),
        }
    }

    /// The entry of `own` if visible at `at` below `ancestors` (the newest versions of the
    /// path's ancestors, top down), by the definition in the crate essay.
    fn visible<'a>(
        &self,
        ancestors: &[Option<&Version>],
        own: &'a Version,
        at: Time,
    ) -> Option<&'a Entry> {
        // Walk the ancestors top down: those whose version is newer than every version
        // above them are in effect; collect their explicit TTLs.
        let mut newest: Option<(Time, u32)> = None;
        let mut explicit: Vec<(Time, Ttl)> = Vec::new();
        for v in ancestors.iter().flatten() {
            if newest.is_none_or(|n| (v.time, v.write_id) > n) {
                newest = Some((v.time, v.write_id));
                if v.ttl != Ttl::Inherit {
                    explicit.push((v.time, v.ttl));
                }
            }
        }
        if newest.is_some_and(|n| (own.time, own.write_id) <= n) {
            return None; // an ancestor's version is as new or newer: it hides this one
        }
        // Its own TTL, else the nearest ancestor's that had not run out when it was
        // written (the crate essay: docsim's rule).
        let alive_then = |e: &&(Time, Ttl)| last_alive(**e).is_none_or(|last| own.time <= last);
        let in_effect = match own.ttl {
            Ttl::Inherit => explicit.iter().rev().find(alive_then).copied(),
            ttl => Some((own.time, ttl)),
        };
        let last_visible = match in_effect {
            Some(e) => last_alive(e),
            None => self.table_ttl_ms.map(|ms| own.time.saturating_add(micros(ms * 1000))),
        };
        if last_visible.is_some_and(|last| at > last) || own.entry == Entry::Tombstone {
            return None;
        }
        Some(&own.entry)
    }

    fn node_mut(&mut self, doc: &DocId, path: &[Key]) -> &mut Node {
        let root = self.docs.entry(doc.clone()).or_default();
        path.iter().fold(root, |node, key| node.children.entry(key.clone()).or_default())
    }

    /// Apply one write batch of document writes at `time`. The batch's entries are
    /// planned against the documents as they were before it, then stored together; a
    /// refused write stores nothing.
    pub fn write_batch(
        &mut self,
        time: Time,
        markers: Markers,
        writes: &[(DocId, Vec<Key>, Write, Ttl)],
    ) -> Result<(), ModelError> {
        let mut batch = Batch { model: self, time, seen: BTreeMap::new(), entries: Vec::new() };
        for (doc, path, write, ttl) in writes {
            for (p, entry) in write_entries_of(path, write) {
                let entry_ttl = if entry == Entry::Tombstone { Ttl::Inherit } else { *ttl };
                match markers {
                    Markers::Optional => batch.entries.push((doc.clone(), p, entry, entry_ttl)),
                    Markers::Required => batch.place(doc, p, entry, entry_ttl)?,
                }
            }
        }
        let entries = batch.entries;
        self.write_entries(time, entries);
        Ok(())
    }

    /// Every document whose id matches `pred`, in id order (for CQL hash-key scans).
    pub fn docs_where(&self, pred: impl Fn(&DocId) -> bool) -> Vec<DocId> {
        self.docs.keys().filter(|d| pred(d)).cloned().collect()
    }
}

/// Insert keeping versions sorted by (time, write id); the same (time, write id) is the
/// same stored key, so the new version replaces the old one.
fn insert_version(versions: &mut Vec<Version>, v: Version) -> Option<Version> {
    let at = versions.partition_point(|x| (x.time, x.write_id) < (v.time, v.write_id));
    match versions.get(at) {
        Some(x) if (x.time, x.write_id) == (v.time, v.write_id) => {
            Some(std::mem::replace(&mut versions[at], v))
        }
        _ => {
            versions.insert(at, v);
            None
        }
    }
}

/// The last time an explicit TTL keeps its entry visible (`None`: forever).
fn last_alive((base, ttl): (Time, Ttl)) -> Option<Time> {
    match ttl {
        Ttl::Ms(ms) => Some(base.saturating_add(micros(ms.saturating_mul(1000)))),
        Ttl::Never | Ttl::Inherit => None,
    }
}

/// The entries one write stands for, before any required markers.
fn write_entries_of(path: &[Key], write: &Write) -> Vec<(Vec<Key>, Entry)> {
    let mut entries = Vec::new();
    match write {
        Write::Set(Doc::Leaf(s)) => entries.push((path.to_vec(), Entry::Value(s.clone()))),
        Write::Set(Doc::Object(map)) => {
            entries.push((path.to_vec(), Entry::Marker));
            flatten(path, map, &mut entries);
        }
        Write::Extend(map) => flatten(path, map, &mut entries),
        Write::Obj => entries.push((path.to_vec(), Entry::Marker)),
        Write::Del => entries.push((path.to_vec(), Entry::Tombstone)),
    }
    entries
}

/// One batch being planned: the documents as they were before it, what its seeks saw
/// and what it wrote so far (by document and path), and its entries in write-id order.
struct Batch<'a> {
    model: &'a Model,
    time: Time,
    seen: BTreeMap<(DocId, Vec<Key>), Seen>,
    entries: Vec<(DocId, Vec<Key>, Entry, Ttl)>,
}

/// What a required-marker write sees at a path: the first entry at or below it.
#[derive(Clone, Debug)]
struct Seen {
    /// The entry is at the path itself.
    exact: bool,
    /// When it was written.
    when: When,
    /// The entry (an expired one seen as a tombstone).
    entry: Entry,
}

/// A version written before the batch, or by the batch (newer than any before it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum When {
    Before(Time, u32),
    ThisBatch(u32),
}

impl Batch<'_> {
    /// Place one entry of a required-marker write (the crate essay's rule): walk the
    /// levels from the document down; under a missing level write markers down to the
    /// entry; a delete stops, writing nothing, at the first missing level, its own path
    /// included.
    fn place(
        &mut self,
        doc: &DocId,
        path: Vec<Key>,
        entry: Entry,
        ttl: Ttl,
    ) -> Result<(), ModelError> {
        let deleting = entry == Entry::Tombstone;
        let mut seen = None;
        if !path.is_empty() || deleting {
            seen = self.seek(doc, &[], None);
        }
        for level in 0..=path.len() {
            let exists = seen.as_ref().is_some_and(|s: &Seen| s.entry != Entry::Tombstone);
            if deleting && !exists {
                return Ok(());
            }
            if level == path.len() {
                break;
            }
            if !exists {
                self.push(doc, path[..level].to_vec(), Entry::Marker, Ttl::Inherit);
                continue;
            }
            let parent = seen.take().expect("exists");
            if matches!(parent.entry, Entry::Value(_)) {
                return Err(ModelError::NotAnObject);
            }
            if level + 1 < path.len() || deleting {
                seen = self.seek(doc, &path[..=level], Some(&parent));
            } else {
                seen = Some(parent); // a set's own path is not looked at
            }
        }
        self.push(doc, path, entry, ttl);
        Ok(())
    }

    fn push(&mut self, doc: &DocId, path: Vec<Key>, entry: Entry, ttl: Ttl) {
        let when = When::ThisBatch(self.entries.len() as u32);
        let seen = Seen { exact: true, when, entry: entry.clone() };
        self.seen.insert((doc.clone(), path.clone()), seen);
        self.entries.push((doc.clone(), path, entry, ttl));
    }

    /// What the batch sees at `path` below `parent` (what it saw one level up): what it
    /// saw or wrote there before, else the first path at or below `path`, in DocDB's key
    /// order, with a version at or before the batch's time, and that path's newest such
    /// version. It counts as a tombstone when its own TTL has run out, or when `parent`
    /// is at its own path and newer or as new (that is not remembered): a reader shows a
    /// child only when it is strictly newer than its parent. (The tie is docsim's rule:
    /// YugabyteDB's write batch counts only a strictly newer parent.)
    fn seek(&mut self, doc: &DocId, path: &[Key], parent: Option<&Seen>) -> Option<Seen> {
        let id = (doc.clone(), path.to_vec());
        let overwritten = |seen: &Seen| parent.is_some_and(|p| p.exact && p.when >= seen.when);
        if let Some(seen) = self.seen.get(&id) {
            let mut seen = seen.clone();
            if overwritten(&seen) {
                seen.entry = Entry::Tombstone; // written here before the parent's marker
            }
            return Some(seen);
        }
        let node = path.iter().try_fold(self.model.docs.get(doc)?, |n, k| n.children.get(k))?;
        let (exact, v) = first_version(node, (self.time, &self.model.restores), true)?;
        let mut seen =
            Seen { exact, when: When::Before(v.time, v.write_id), entry: v.entry.clone() };
        let expired = last_alive((v.time, v.ttl)).is_some_and(|last| self.time > last);
        if expired {
            seen.entry = Entry::Tombstone;
        } else if overwritten(&seen) {
            seen.entry = Entry::Tombstone;
            return Some(seen);
        }
        self.seen.insert(id, seen.clone());
        Some(seen)
    }
}

/// The first path at or below `node` (itself first, then its children in DocDB's key
/// order) with a version at or before `at`, and that version; `exact` says whether it
/// is `node`'s own.
fn first_version<'a>(
    node: &'a Node,
    (at, restores): (Time, &[Restore]),
    exact: bool,
) -> Option<(bool, &'a Version)> {
    if let Some(v) = node.newest(at, restores) {
        return Some((exact, v));
    }
    let mut children: Vec<(&Key, &Node)> = node.children.iter().collect();
    children.sort_by(|a, b| docdb_key_cmp(a.0, b.0));
    children.into_iter().find_map(|(_, child)| first_version(child, (at, restores), false))
}

/// DocDB's order of two subkeys: by the type byte DocDB writes before a subkey
/// (`KeyEntryType`, `src/yb/dockv/value_type.h`), then by value — numbers numerically,
/// strings bytewise, false before true — reversed for descending subkeys. Public so the
/// simulator can hold it against the engine's encoded order (never used to build it).
pub fn docdb_key_cmp(a: &Key, b: &Key) -> std::cmp::Ordering {
    let by_value = || {
        let ord = match (&a.scalar, &b.scalar) {
            (Scalar::Double(x), Scalar::Double(y)) => {
                f64::from_bits(*x).total_cmp(&f64::from_bits(*y))
            }
            (x, y) => x.cmp(y), // same variant: the derived order is the numeric one
        };
        if a.desc {
            ord.reverse()
        } else {
            ord
        }
    };
    type_byte(a).cmp(&type_byte(b)).then_with(by_value)
}

/// The type byte DocDB writes before a subkey (`value_type.h`). Descending column ids
/// (`P`, `Q`) are docsim's own: YugabyteDB has none.
fn type_byte(k: &Key) -> u8 {
    match (&k.scalar, k.desc) {
        (Scalar::Null, false) => b'$',
        (Scalar::Null, true) => b'|',
        (Scalar::Bool(false), false) => b'F',
        (Scalar::Bool(true), false) => b'T',
        (Scalar::Bool(true), true) => b'h',
        (Scalar::Bool(false), true) => b'i',
        (Scalar::Int32(_), false) => b'H',
        (Scalar::Int32(_), true) => b'e',
        (Scalar::Int64(_), false) => b'I',
        (Scalar::Int64(_), true) => b'b',
        (Scalar::Double(_), false) => b'D',
        (Scalar::Double(_), true) => b'L',
        (Scalar::Str(_), false) => b'S',
        (Scalar::Str(_), true) => b'a',
        (Scalar::Timestamp(_), false) => b's',
        (Scalar::Timestamp(_), true) => b'c',
        (Scalar::Column(_), false) => b'K',
        (Scalar::Column(_), true) => b'P',
        (Scalar::SystemColumn(_), false) => b'J',
        (Scalar::SystemColumn(_), true) => b'Q',
    }
}

/// Entries of an object literal below `path`, depth first in key order.
fn flatten(path: &[Key], map: &BTreeMap<Key, Doc>, out: &mut Vec<(Vec<Key>, Entry)>) {
    for (key, doc) in map {
        let mut child = path.to_vec();
        child.push(key.clone());
        match doc {
            Doc::Leaf(s) => out.push((child, Entry::Value(s.clone()))),
            Doc::Object(inner) => {
                out.push((child.clone(), Entry::Marker));
                flatten(&child, inner, out);
            }
        }
    }
}

#[cfg(test)]
#[path = "doc_tests.rs"]
mod tests;
