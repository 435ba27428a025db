//! The read path: reconstruct a subdocument as of a read time from entries in key order.
//!
//! For each path only the newest version at or before the read time counts. A version is
//! visible only if its DocHybridTime (write id included) is strictly newer than the version
//! in effect at every ancestor (the colocated table, the document root, each subkey); an
//! object marker therefore overwrites a whole subtree and a tombstone deletes one. An
//! expired or deleted version still hides older versions and older descendants: it never
//! resurrects them. TTL rules live in `expiry.rs`, shared with compaction GC.

use crate::canary::{Plant, Plants};
use crate::document::Document;
use crate::encoding::{DocPath, KeyEntry, Ttl, Value, ValueKind};
use crate::expiry::{self, Expiration};
use crate::hybrid_time::{DocHybridTime, HybridTime};
use crate::shadow::Shadow;
use std::collections::BTreeMap;

/// One stored entry of a document, decoded relative to its document: whether it is the
/// colocated table's own key (an ancestor of every document of the table), its subkeys,
/// version and value. Decoding the document key once per document, not once per entry,
/// keeps reads cheap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocEntry {
    /// The entry belongs to the colocated table key, not to the document.
    pub table_key: bool,
    /// Subkeys below the table key or document root.
    pub subkeys: Vec<KeyEntry>,
    /// The version.
    pub doc_ht: DocHybridTime,
    /// The value.
    pub value: Value,
}

impl DocEntry {
    /// Key order: the table key's entries first, then paths (a parent before its
    /// children), each path's versions newest first.
    pub fn key_cmp(&self, other: &DocEntry) -> std::cmp::Ordering {
        other
            .table_key
            .cmp(&self.table_key)
            .then_with(|| self.subkeys.cmp(&other.subkeys))
            .then_with(|| other.doc_ht.cmp(&self.doc_ht))
    }

    fn same_path(&self, other: &DocEntry) -> bool {
        self.table_key == other.table_key && self.subkeys == other.subkeys
    }
}

/// Counts the levels of a path (colocated table key, document root, each subkey) in one
/// document's entries: how deep a path is, and how many leading levels two paths share.
#[derive(Clone, Copy)]
struct PathLevels {
    /// Whether the document belongs to a colocated table (its table key is a level).
    colocated: bool,
}

impl PathLevels {
    /// How many levels the path of an entry (on the table key, or `subkeys` below the
    /// document root) has.
    fn levels(self, table_key: bool, subkeys: &[KeyEntry]) -> usize {
        usize::from(self.colocated) + usize::from(!table_key) + subkeys.len()
    }

    /// How many leading levels the paths `a` and `b` (table key?, subkeys) share.
    fn shared(self, a: (bool, &[KeyEntry]), b: (bool, &[KeyEntry])) -> usize {
        let base = usize::from(self.colocated);
        let common = || a.1.iter().zip(b.1).take_while(|(x, y)| x == y).count();
        match (a.0, b.0) {
            (true, true) => base + common(),
            (false, false) => base + 1 + common(),
            _ => base,
        }
    }
}

/// What one read is: its time, the table default TTL, and the planted bugs of the reader
/// (decided once per read, not per entry).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReadConfig {
    pub read_ht: HybridTime,
    pub table_ttl_ms: Option<u64>,
    pub plants: Plants,
}

/// The reader's shadow stack: per level, the newest visible-by-time version along the
/// chain, and the level's own explicit TTL (if its version is visible by time and carries
/// one), which its descendants may inherit.
type Levels = Shadow<DocHybridTime, Expiration>;

/// Read the subdocument at `target` as `read` says. `entries` are every stored entry of
/// the target's document (and its colocated table key) in key order.
///
/// A TTL-only record (Redis EXPIRE) hides nothing: the path's next older version at or
/// before the read is its version, with the record's TTL counted from the record's write
/// time, and its children inherit that. The newest such record wins; with no version
/// beneath, the record reads as a tombstone at its own time. This is YugabyteDB's Redis
/// reader (`FindLastWriteTime`, `src/yb/docdb/doc_reader_redis.cc`: the merge record sets
/// the expiration, `NextFullValue` finds the value and its write time).
pub(crate) fn read_subdocument<E: std::borrow::Borrow<DocEntry>>(
    entries: impl IntoIterator<Item = E>,
    target: &DocPath,
    read: ReadConfig,
) -> Option<Document> {
    let levels_of = PathLevels { colocated: target.doc_key.colocation_id.is_some() };
    let target_at = (target.doc_key.is_table_key(), target.subkeys.as_slice());
    let target_levels = levels_of.levels(target_at.0, target_at.1);
    let mut walk = Walk {
        read,
        target,
        target_at,
        target_levels,
        levels_of,
        levels: Levels::new(),
        out: None,
    };
    let mut last: Option<E> = None;
    // The newest TTL-only record of the last path while no version beneath it was seen:
    // how many levels its path shares with the last version applied, and whether it is
    // inside the target.
    let mut ttl_only: Option<(DocEntry, usize, bool)> = None;
    for item in entries {
        let entry: &DocEntry = item.borrow();
        let same_path = last.as_ref().is_some_and(|l| l.borrow().same_path(entry));
        if entry.doc_ht.ht > read.read_ht || (same_path && ttl_only.is_none()) {
            continue; // too new, or an older version of a path already decided
        }
        if !same_path {
            if let Some((record, shared, inside)) = ttl_only.take() {
                walk.apply(&record.as_tombstone(), (shared, inside), None); // nothing beneath
            }
        }
        let Some(inside) = walk.relevant(entry) else { continue };
        let shared = match &ttl_only {
            Some((_, shared, _)) => *shared,
            None => last.as_ref().map_or(0, |l| walk.shared_with(l.borrow(), entry)),
        };
        if let ValueKind::TtlOnly { .. } = entry.value.kind {
            if ttl_only.is_none() {
                ttl_only = Some((entry.clone(), shared, inside));
            }
            last = Some(item);
            continue;
        }
        let merged_ttl = ttl_only.take().map(|(record, ..)| (record.doc_ht.ht, record.value.ttl));
        walk.apply(entry, (shared, inside), merged_ttl);
        last = Some(item);
    }
    if let Some((record, shared, inside)) = ttl_only {
        walk.apply(&record.as_tombstone(), (shared, inside), None);
    }
    walk.out
}

/// One read's walk over a document's entries.
struct Walk<'a> {
    read: ReadConfig,
    target: &'a DocPath,
    /// The target's path (on the table key?, subkeys) and how many levels it has.
    target_at: (bool, &'a [KeyEntry]),
    target_levels: usize,
    levels_of: PathLevels,
    /// The levels of the last applied entry's path.
    levels: Levels,
    out: Option<Document>,
}

impl Walk<'_> {
    /// Whether `entry` can matter — an ancestor of the target or inside it (on the table
    /// key, a tombstone only) — and if so, whether it is inside it.
    fn relevant(&self, entry: &DocEntry) -> Option<bool> {
        let at = (entry.table_key, entry.subkeys.as_slice());
        let depth = self.levels_of.levels(at.0, at.1);
        let with_target = self.levels_of.shared(at, self.target_at);
        let in_subtree = with_target == self.target_levels;
        if !in_subtree && with_target < depth {
            return None; // neither an ancestor of the target nor inside it
        }
        if entry.table_key && !in_subtree && !self.target.doc_key.is_table_key() {
            // Only a tombstone at the table key hides the table's documents (YugabyteDB's
            // `GetTableTombstoneTime`, doc_reader.cc); any other entry there is just an
            // entry. The newest tombstone counts, whatever is newer (docsim: models essay).
            if entry.value.kind != ValueKind::Tombstone {
                return None;
            }
            crate::probe::hit("read.table_tombstone");
        }
        Some(in_subtree)
    }

    /// How many leading levels the paths of `last` and `entry` share.
    fn shared_with(&self, last: &DocEntry, entry: &DocEntry) -> usize {
        self.levels_of.shared((last.table_key, &last.subkeys), (entry.table_key, &entry.subkeys))
    }

    /// Apply the version `entry` of its path, which shares `shared` levels with the last
    /// one applied and is inside the target or not (`in_subtree`, from [`Walk::relevant`]);
    /// `merged_ttl`: the TTL-only record above it (write time, TTL).
    fn apply(
        &mut self,
        entry: &DocEntry,
        (shared, in_subtree): (usize, bool),
        merged_ttl: Option<(HybridTime, Ttl)>,
    ) {
        let ReadConfig { read_ht, table_ttl_ms, plants } = self.read;
        let depth = self.levels_of.levels(entry.table_key, &entry.subkeys);
        // Only a path's newest version is applied: the entry is never the last one's path.
        assert!(shared < depth, "{entry:?} applied twice, or below itself");
        self.levels.align(shared, depth, |_| None);
        let ttl_from = merged_ttl.unwrap_or((entry.doc_ht.ht, entry.value.ttl));
        let exp = visible_by_time(&mut self.levels, entry.doc_ht, ttl_from, plants);
        let (true, Some(exp)) = (in_subtree, exp) else {
            return; // an ancestor only shapes visibility, through the levels
        };
        let rel = &entry.subkeys[self.target.subkeys.len()..];
        let mut expired = expiry::is_expired(exp, entry.doc_ht.ht, table_ttl_ms, read_ht);
        if plants.contains(Plant::TtlOffByOne) && expired {
            let at = planted_one_tick_early(read_ht);
            expired = expiry::is_expired(exp, entry.doc_ht.ht, table_ttl_ms, at);
        }
        if plants.contains(Plant::TtlBoundaryIgnoresLogical) && expired {
            let at = planted_without_logical(read_ht);
            expired = expiry::is_expired(exp, entry.doc_ht.ht, table_ttl_ms, at);
        }
        let out = &mut self.out;
        match &entry.value.kind {
            // Nothing is in the output at its path yet (entries come in key order, a
            // path's newest version before its descendants, and only that version counts):
            // it shapes what follows through `levels` alone.
            _ if expired => crate::probe::hit("read.expired_hides_older"),
            ValueKind::Tombstone => {}
            ValueKind::Object => put(out, rel, Document::empty_object()),
            ValueKind::Primitive(p) => put(out, rel, Document::Primitive(p.clone())),
            ValueKind::TtlOnly { .. } => unreachable!("TTL-only records are merged"),
            ValueKind::PackedRow(_) | ValueKind::EntityRow(_) => {
                unreachable!("the scans expand packed rows (db/packed.rs)")
            }
        }
    }
}

impl DocEntry {
    /// A TTL-only record with nothing beneath it, as YugabyteDB reads it: a tombstone at
    /// the record's time.
    fn as_tombstone(&self) -> DocEntry {
        DocEntry { value: Value::tombstone(), ..self.clone() }
    }
}

/// Decide the version at the top of `levels` (just aligned to its path): if it is visible
/// by time (strictly newer than every ancestor's version in effect), record it and its
/// explicit TTL (counted from `ttl_ht`: its own write time, or a TTL-only record's above
/// it) and return its expiration; `None` if an ancestor hides it.
fn visible_by_time(
    levels: &mut Levels,
    doc_ht: DocHybridTime,
    (ttl_ht, ttl): (HybridTime, Ttl),
    plants: Plants,
) -> Option<Expiration> {
    let hidden = if plants.contains(Plant::WriteIdIgnored) {
        planted_hidden_by_hybrid_time(levels, doc_ht)
    } else {
        levels.newest().is_some_and(|newest| doc_ht <= newest)
    };
    if hidden {
        return None;
    }
    let ancestors = || levels.ancestors().rev().filter_map(|explicit| *explicit);
    if ttl == Ttl::Inherit
        && ancestors()
            .next()
            .is_some_and(|nearest| expiry::is_expired(Some(nearest), doc_ht.ht, None, doc_ht.ht))
    {
        // Written after its nearest ancestor's TTL ran out: it does not inherit it.
        crate::probe::hit("read.born_after_expiry");
    }
    let exp = if plants.contains(Plant::ParentTtlNotInherited) {
        expiry::effective_expiration(ttl, ttl_ht, None)
    } else if plants.contains(Plant::YbExpiredParentGc) {
        expiry::planted_yb_expiration(ttl, ttl_ht, ancestors())
    } else {
        expiry::effective_expiration(ttl, ttl_ht, ancestors())
    };
    let exp = if plants.contains(Plant::OwnTtlDiesWithParent) {
        planted_own_ttl_dies_with_parent(exp, ttl, doc_ht, ancestors())
    } else {
        exp
    };
    let explicit = (ttl != Ttl::Inherit).then_some((ttl_ht, ttl));
    levels.record(doc_ht);
    if let Some(own) = levels.top_mut() {
        *own = explicit;
    }
    Some(exp)
}

/// The plant `write-id-ignored`: an ancestor hides a version only if it has a later hybrid
/// time, whatever the write ids (the torture-alone mutation measure leaves `planted_` code
/// out, `.ci/mutants`).
fn planted_hidden_by_hybrid_time(levels: &Levels, doc_ht: DocHybridTime) -> bool {
    levels.newest().is_some_and(|newest| doc_ht.ht < newest.ht)
}

/// The plant `ttl-off-by-one`: the read time one logical tick early.
fn planted_one_tick_early(read_ht: HybridTime) -> HybridTime {
    HybridTime::from_raw(read_ht.raw().saturating_sub(1 << 12))
}

/// The plant `ttl-boundary-ignores-logical`: the read time without its logical component.
fn planted_without_logical(read_ht: HybridTime) -> HybridTime {
    HybridTime::new(read_ht.physical_us(), 0)
}

/// The plant `own-ttl-dies-with-parent`: an entry with a TTL of its own expires when its
/// own TTL or the one it would inherit runs out, whichever is sooner.
fn planted_own_ttl_dies_with_parent(
    exp: Expiration,
    ttl: Ttl,
    doc_ht: DocHybridTime,
    ancestors: impl IntoIterator<Item = (HybridTime, Ttl)>,
) -> Expiration {
    if ttl == Ttl::Inherit {
        return exp;
    }
    let inherited = expiry::effective_expiration(Ttl::Inherit, doc_ht.ht, ancestors);
    expiry::planted_sooner(exp, inherited, doc_ht.ht)
}

/// Set `node` at `rel` below the root, creating objects on the way (a primitive on the
/// way becomes an object: its newer children are visible).
fn put(root: &mut Option<Document>, rel: &[KeyEntry], node: Document) {
    let Some((last, parents)) = rel.split_last() else {
        *root = Some(node);
        return;
    };
    let mut cur = root.get_or_insert_with(Document::empty_object);
    for key in parents {
        cur = object_mut(cur).entry(key.clone()).or_insert_with(Document::empty_object);
    }
    object_mut(cur).insert(last.clone(), node);
}

fn object_mut(doc: &mut Document) -> &mut BTreeMap<KeyEntry, Document> {
    if !matches!(doc, Document::Object(_)) {
        *doc = Document::empty_object();
    }
    match doc {
        Document::Object(map) => map,
        Document::Primitive(_) => unreachable!("just made an object"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::{DocKey, Primitive};

    /// Only a tombstone at a colocated table's own key is an ancestor of the table's
    /// documents (YugabyteDB's `GetTableTombstoneTime`, doc_reader.cc): the reader passes
    /// over any other entry there, whoever feeds it one (the database's scans feed only
    /// the tombstone).
    #[test]
    fn only_a_tombstone_at_the_table_key_hides_the_tables_documents() {
        let at = |us| DocHybridTime::new(HybridTime::from_micros(us), 0);
        let v = KeyEntry::asc(Primitive::Int64(0));
        let table_key = |kind| DocEntry {
            table_key: true,
            subkeys: vec![],
            doc_ht: at(2000),
            value: Value::new(kind),
        };
        let one = ValueKind::Primitive(Primitive::Int64(1));
        let field = DocEntry {
            table_key: false,
            subkeys: vec![v.clone()],
            doc_ht: at(1000),
            value: Value::new(one),
        };
        let doc = DocKey { colocation_id: Some(7), ..DocKey::new(vec![], vec![v.clone()]) };
        let target = DocPath::new(doc, vec![]);
        let read = ReadConfig { read_ht: at(3000).ht, table_ttl_ms: None, plants: Plants::NONE };
        let read_under = |kind| read_subdocument([table_key(kind), field.clone()], &target, read);
        let shown = Document::Object([(v, Document::Primitive(Primitive::Int64(1)))].into());
        assert_eq!(read_under(ValueKind::Object), Some(shown.clone()));
        assert_eq!(read_under(ValueKind::Primitive(Primitive::Int64(9))), Some(shown));
        assert_eq!(read_under(ValueKind::Tombstone), None);
    }
}
