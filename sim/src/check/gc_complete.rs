//! What a full compaction must have removed: the simulator's own statement of GC's
//! completeness, apart from the engine's GC (`engine/src/gc.rs`). Reads alone cannot tell
//! a compaction that keeps too much — a kept tombstone or shadowed version reads the same —
//! so after every full compaction with cutoff H the simulator dumps each tablet and checks
//! that nothing at or below H is left that no read at R >= H can need:
//!
//! - of a path's versions at or below H, only the newest (the one reads at H see);
//! - no tombstone at or below H (everything it hid went with it);
//! - no version at or below H that a remaining version of a strict ancestor path, also at
//!   or below H, is as new as or newer than (it was overwritten).
//!
//! A Redis EXPIRE record (a TTL-only record, `TTL {}` or `TTL ""` in dumps) overwrites
//! nothing, and the version beneath it stays even if a tombstone: the record stands on it.
//! A packed row (`packed(schema=..)`) overwrites nothing either, and the newer tombstones
//! of its row stay while it does (one may hide a value inside it: `gc.rs`,
//! `decide_packed_row`).
//!
//! Expired entries: one expired at H — through a TTL of its own, the TTL it inherits, or
//! the table's — must be gone, unless a TTL-only record stands on its path or an
//! ancestor's (its TTL may be the one in effect, which GC does not judge), it is a
//! packable column over an older packed row (it hides the row's value), or an expired
//! entry a kept one beneath still needs (`outlived`). A packed row expired whole must be
//! gone too (`packed_expired_whole`). The TTL it inherits is the model's rule, stated here
//! on its own: the nearest explicit TTL among
//! the ancestor versions in effect for it (at each ancestor path the newest version older
//! than it, counted only if newer than those counted above) that had not run out when it
//! was written, from that version's write time; with none, the table's, from its own
//! write time.
//!
//! Dropped columns: every entry of a column dropped at or before H must be gone, whatever
//! its time (no read can show it).

use docsim_engine::cql::CqlTable;
use docsim_engine::encoding::{unpack, Slot};
use docsim_engine::script::format_entry;
use docsim_engine::{
    DocHybridTime, DocPath, HybridTime, Primitive, SubDocKey, Ttl, Value, ValueKind,
};

/// What the check knows of a tablet besides its dump.
#[derive(Clone, Copy, Debug, Default)]
pub struct TabletRules<'a> {
    /// The tablet's default TTL.
    pub table_ttl_ms: Option<u64>,
    /// The tablet's CQL table (`None`: the document tablet): its packings read its packed
    /// rows, and leftovers print as its `dump` prints them.
    pub table: Option<&'a CqlTable>,
    /// Every write to the tablet is blind (a CQL table): no write seeks what is stored.
    pub blind_writes: bool,
    /// The columns dropped from it, with when.
    pub dropped: &'a [(i32, HybridTime)],
}

/// The entries of one tablet's dump (key order) that a full compaction with cutoff
/// `cutoff_ht` should have removed, as dump lines.
pub fn leftovers(
    entries: &[(SubDocKey, Value)],
    cutoff_ht: HybridTime,
    tablet: &TabletRules,
) -> Vec<String> {
    // An entry that should be gone keeps no expired ancestor (`outlived`); judging again
    // with those entries left out can only find more, so this ends.
    let mut gone = vec![false; entries.len()];
    loop {
        let outlived = outlived(entries, cutoff_ht, tablet.blind_writes, &gone);
        let now = judge(entries, cutoff_ht, tablet, &outlived);
        if now == gone {
            break;
        }
        gone = now;
    }
    let lines = entries.iter().zip(gone).filter(|(_, gone)| *gone);
    lines.map(|((key, value), _)| format_entry(key, value, tablet.table, false)).collect()
}

/// Which of `entries` should be gone, given the expired entries `outlived` keeps.
fn judge(
    entries: &[(SubDocKey, Value)],
    cutoff_ht: HybridTime,
    tablet: &TabletRules,
    outlived: &[(&DocPath, DocHybridTime)],
) -> Vec<bool> {
    let mut out = vec![false; entries.len()];
    // Every version seen of each path on the current entry's chain, its own included.
    let mut lineage: Vec<(&DocPath, Vec<&(SubDocKey, Value)>)> = Vec::new();
    // The packed rows of the current document, with their versions.
    let mut packed_rows = Vec::new();
    // Records that hide nothing: TTL-only records and packed rows (GC keeps them until a
    // newer version of their path hides them, `gc.rs`).
    let is_record =
        |value: &Value| matches!(value.kind, ValueKind::TtlOnly { .. } | ValueKind::PackedRow(_));
    // Of a path's versions (newest first), the newest at or below the cutoff that hides
    // what is older (TTL-only records overwrite nothing).
    let newest_at_cutoff = |versions: &[&(SubDocKey, Value)]| {
        let hiding = versions.iter().find(|(k, v)| k.doc_ht.ht <= cutoff_ht && !is_record(v));
        hiding.map(|(k, _)| k.doc_ht)
    };
    let mut table_tombstone = TableTombstone::default();
    for (i, entry @ (key, value)) in entries.iter().enumerate() {
        let hidden_by_table = table_tombstone.hides(key, value, cutoff_ht);
        if of_dropped_column(key, cutoff_ht, tablet.dropped) || hidden_by_table {
            out[i] = true;
            continue;
        }
        lineage.retain(|(path, _)| path.is_prefix_of(&key.path));
        match lineage.last_mut() {
            Some((path, versions)) if *path == &key.path => versions.push(entry),
            _ => lineage.push((&key.path, vec![entry])),
        }
        let ((_, own), ancestors) = lineage.split_last().expect("the entry's own path");
        let newer = &own[..own.len() - 1]; // the path's versions newer than this one
        let beneath_record = newer.last().is_some_and(|(_, v)| is_record(v));
        if key.doc_ht.ht > cutoff_ht {
            continue;
        }
        let older_version = newest_at_cutoff(newer).is_some();
        let overwritten = ancestors.iter().any(|(_, versions)| {
            newest_at_cutoff(versions).is_some_and(|newest| key.doc_ht <= newest)
        });
        if matches!(value.kind, ValueKind::PackedRow(_)) {
            packed_rows.push((&key.path.doc_key, key.doc_ht));
        }
        packed_rows.retain(|(doc, _)| *doc == &key.path.doc_key);
        let over_packed_row =
            packable(key, tablet.table) && packed_rows.iter().any(|(_, at)| *at < key.doc_ht);
        // A tombstone a TTL-only record stands on stays, as do a packed row's; a record is
        // no tombstone.
        let tombstone = value.kind == ValueKind::Tombstone && !beneath_record && !over_packed_row;
        let expired = !older_version
            && !overwritten
            && !tombstone
            && !over_packed_row
            && !outlived.contains(&(&key.path, key.doc_ht))
            && match &value.kind {
                ValueKind::PackedRow(body) => {
                    !beneath_record && packed_expired_whole(entries, i, body, cutoff_ht, tablet)
                }
                _ => expired_at_cutoff(&lineage, cutoff_ht, tablet.table_ttl_ms),
            };
        out[i] = older_version || overwritten || tombstone || expired;
    }
    out
}

/// A colocated table's newest tombstone at or below the cutoff at its own key: every
/// older version of the table's documents is hidden by it (the reader's rule, `gc.rs`
/// `hand_table_key_to_documents`). The table key sorts before the table's documents.
#[derive(Default)]
struct TableTombstone(Option<(Option<u32>, DocHybridTime)>);

impl TableTombstone {
    /// See the entry at `key`: whether it is a document version the tombstone hides.
    fn hides(&mut self, key: &SubDocKey, value: &Value, cutoff_ht: HybridTime) -> bool {
        let doc = &key.path.doc_key;
        let of_table = |(c, _): &(Option<u32>, DocHybridTime)| *c == doc.colocation_id;
        if !doc.is_table_key() {
            return self.0.filter(of_table).is_some_and(|(_, at)| key.doc_ht <= at);
        }
        let tombstone = key.path.subkeys.is_empty() && value.kind == ValueKind::Tombstone;
        if tombstone && key.doc_ht.ht <= cutoff_ht && self.0.filter(of_table).is_none() {
            self.0 = Some((doc.colocation_id, key.doc_ht));
        }
        false
    }
}

/// Whether `key` is of a column dropped at or before `cutoff_ht`.
fn of_dropped_column(
    key: &SubDocKey,
    cutoff_ht: HybridTime,
    dropped: &[(i32, HybridTime)],
) -> bool {
    match key.path.subkeys.first().map(|k| &k.value) {
        Some(Primitive::ColumnId(id)) => dropped.iter().any(|(c, at)| c == id && *at <= cutoff_ht),
        _ => false,
    }
}

/// Whether `key` is of a column a packed row can hold: the liveness column, or a scalar
/// column of `table` (a collection's and jsonb's entries never are).
fn packable(key: &SubDocKey, table: Option<&CqlTable>) -> bool {
    let scalar = |id: i32| {
        let of = |c: &&docsim_engine::cql::Column| {
            c.kind == docsim_engine::cql::ColumnKind::Regular(id) && !c.ty.is_nested()
        };
        table.is_some_and(|t| t.columns.iter().any(|c| of(&c)))
    };
    match key.path.subkeys.as_slice() {
        [only] => match only.value {
            Primitive::SystemColumnId(0) => true,
            Primitive::ColumnId(id) => scalar(id),
            _ => false,
        },
        _ => false,
    }
}

/// Whether the newest entry of `lineage` (its own path's last version) is no tombstone, no
/// record stands on its path or an ancestor's (or is it), and it is expired at
/// `cutoff_ht` through its own TTL, the TTL it inherits or the table's.
fn expired_at_cutoff(
    lineage: &[(&DocPath, Vec<&(SubDocKey, Value)>)],
    cutoff_ht: HybridTime,
    table_ttl_ms: Option<u64>,
) -> bool {
    let Some(((own_key, own), ancestors)) =
        lineage.split_last().and_then(|(own, up)| Some((*own.1.last()?, up)))
    else {
        return false;
    };
    // A TTL-only record: GC does not judge the TTLs in effect beneath it. (A packed row
    // passes no TTL down: its columns are its own.)
    let is_record = |v: &Value| matches!(v.kind, ValueKind::TtlOnly { .. });
    let any_record = lineage.iter().flat_map(|(_, versions)| versions).any(|(_, v)| is_record(v));
    if own.kind == ValueKind::Tombstone || any_record {
        return false;
    }
    let written = own_key.doc_ht.ht;
    let last_visible = |(base, ttl): (HybridTime, Ttl)| match ttl {
        Ttl::Ms(ms) => Some(base.add_micros(ms.saturating_mul(1000))),
        _ => None, // never expires
    };
    let in_effect = match own.ttl {
        Ttl::Inherit => inherited(ancestors, own_key.doc_ht),
        ttl => Some((written, ttl)),
    };
    let last = match in_effect {
        Some(e) => last_visible(e),
        None => table_ttl_ms.filter(|ms| *ms > 0).map(|ms| written.add_micros(ms * 1000)),
    };
    last.is_some_and(|last| cutoff_ht > last)
}

/// Whether the packed row `entries[at]` (its `body`) reads as nothing at `cutoff_ht` and
/// after: the row's TTL (else the table's, from the row's time) ran out, and so did each
/// column — NULL; its own TTL (else the row's) from its own write time; or hidden by a
/// version of its column stored beside the row, newer than the column's time and at or
/// below the cutoff (one repacking could not fold in). The reader expands a packed row
/// into a liveness column and its columns so (`db/packed.rs`); nothing beneath inherits
/// the row's TTL. What does not decode is the reads' to find, not this check's.
fn packed_expired_whole(
    entries: &[(SubDocKey, Value)],
    at: usize,
    body: &[u8],
    cutoff_ht: HybridTime,
    tablet: &TabletRules,
) -> bool {
    let (row_key, row) = &entries[at];
    let packings = tablet.table.map(CqlTable::packings);
    let Ok((_, columns)) = unpack(body, 0, |v| packings.and_then(|p| p.get(v))) else {
        return false;
    };
    let ran_out = |ttl: Ttl, written: HybridTime| {
        let last = match ttl {
            Ttl::Never => None,
            Ttl::Ms(ms) => Some(written.add_micros(ms.saturating_mul(1000))),
            Ttl::Inherit => {
                tablet.table_ttl_ms.filter(|ms| *ms > 0).map(|ms| written.add_micros(ms * 1000))
            }
        };
        last.is_some_and(|last| cutoff_ht > last)
    };
    let row_ht = row_key.doc_ht.ht;
    let hidden = |id: u32, since: DocHybridTime| {
        let column = Primitive::ColumnId(id as i32);
        entries[at + 1..].iter().take_while(|(k, _)| k.path.doc_key == row_key.path.doc_key).any(
            |(k, _)| {
                let of_column = k.path.subkeys.len() == 1 && k.path.subkeys[0].value == column;
                of_column && k.doc_ht > since && k.doc_ht.ht <= cutoff_ht
            },
        )
    };
    let column_ran_out = |(id, slot): &(u32, Slot)| {
        let written = slot.written.unwrap_or(row_key.doc_ht);
        hidden(*id, written)
            || match &slot.value {
                None => true,
                Some(v) if v.ttl == Ttl::Inherit => ran_out(row.ttl, written.ht),
                Some(v) => ran_out(v.ttl, written.ht),
            }
    };
    ran_out(row.ttl, row_ht) && columns.iter().all(column_ran_out)
}

/// The entries at or below `cutoff_ht` expired through a TTL of their own that may stay:
/// beneath them, the compaction kept a newer entry, no tombstone, that inherits their TTL
/// (written while it ran, without one of its own: without them it would read back) or,
/// unless every write is blind, any (a required-marker write would find it where it found
/// the expired entry). A rule of docsim's own (`gc.rs`, `ExpiredKeeps`); judged on the
/// dump after the compaction, without the entries that should be `gone`.
fn outlived<'e>(
    entries: &'e [(SubDocKey, Value)],
    cutoff_ht: HybridTime,
    blind_writes: bool,
    gone: &[bool],
) -> Vec<(&'e DocPath, DocHybridTime)> {
    let mut kept = Vec::new();
    for (i, (key, value)) in entries.iter().enumerate() {
        let Ttl::Ms(ms) = value.ttl else { continue };
        let last = key.doc_ht.ht.add_micros(ms.saturating_mul(1000));
        if key.doc_ht.ht > cutoff_ht || last >= cutoff_ht {
            continue;
        }
        let below = |(k, _): &&(SubDocKey, Value)| {
            k.path.subkeys.len() > key.path.subkeys.len() && key.path.is_prefix_of(&k.path)
        };
        let keeps_it = |(k, v): &&(SubDocKey, Value)| {
            let inherits = v.ttl == Ttl::Inherit && k.doc_ht.ht <= last;
            let newer = k.doc_ht > key.doc_ht && v.kind != ValueKind::Tombstone;
            newer && (inherits || !blind_writes)
        };
        if entries[i + 1..]
            .iter()
            .zip(&gone[i + 1..])
            .take_while(|(e, _)| below(e) || e.0.path == key.path)
            .any(|(e, gone)| !gone && below(&e) && keeps_it(&e))
        {
            kept.push((&key.path, key.doc_ht));
        }
    }
    kept
}

/// The explicit TTL an entry written at `own` inherits from `ancestors` (top down): the
/// nearest in effect that had not run out when it was written.
fn inherited(
    ancestors: &[(&DocPath, Vec<&(SubDocKey, Value)>)],
    own: DocHybridTime,
) -> Option<(HybridTime, Ttl)> {
    // The ancestor versions in effect, top down, with their explicit TTLs.
    let mut newest_counted: Option<DocHybridTime> = None;
    let mut explicit = Vec::new();
    let packed = |v: &Value| matches!(v.kind, ValueKind::PackedRow(_));
    for (_, versions) in ancestors {
        let older = versions.iter().find(|(k, v)| k.doc_ht < own && !packed(v));
        let Some((k, v)) = older else { continue };
        if newest_counted.is_none_or(|n| k.doc_ht > n) {
            newest_counted = Some(k.doc_ht);
            if v.ttl != Ttl::Inherit {
                explicit.push((k.doc_ht.ht, v.ttl));
            }
        }
    }
    let alive_then = |(base, ttl): &&(HybridTime, Ttl)| match ttl {
        Ttl::Ms(ms) => own.ht <= base.add_micros(ms.saturating_mul(1000)),
        _ => true,
    };
    explicit.iter().rev().find(alive_then).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use docsim_engine::{DocKey, KeyEntry};

    fn key(subkeys: &[&str], us: u64) -> SubDocKey {
        let doc = DocKey::new(vec![], vec![KeyEntry::asc(Primitive::String("d".into()))]);
        let subkeys = subkeys.iter().map(|s| KeyEntry::asc(Primitive::String((*s).into())));
        let at = DocHybridTime::new(HybridTime::from_micros(us), 0);
        SubDocKey::new(DocPath::new(doc, subkeys.collect()), at)
    }

    fn value(kind: ValueKind) -> Value {
        Value { ttl: Ttl::Inherit, kind }
    }

    #[test]
    fn what_a_full_compaction_must_have_removed() {
        let leaf = || value(ValueKind::Primitive(Primitive::Int64(1)));
        let record = Value { ttl: Ttl::Ms(5), kind: ValueKind::TtlOnly { object: true } };
        let entries = [
            (key(&[], 25), value(ValueKind::Object)), // the root's version at H
            (key(&["a"], 30), leaf()),                // above H
            (key(&["a"], 28), leaf()),                // above H
            (key(&["b"], 26), leaf()),                // above H: hides nothing at H
            (key(&["b"], 24), leaf()),                // overwritten by the root at 25
            (key(&["c"], 27), leaf()),                // above H
            (key(&["c", "x"], 26), leaf()),           // above H
            (key(&["e"], 29), value(ValueKind::Tombstone)), // above H: may stay
        ];
        let cutoff = HybridTime::from_micros(25);
        assert_eq!(
            leftovers(&entries, cutoff, &TabletRules::default()),
            [r#"doc(; "d")."b" @T24 -> 1"#]
        );
        // A child at the same DocHybridTime as its parent's version is hidden by it (the
        // reader's rule: a child must be strictly newer).
        let tie = [(key(&[], 20), value(ValueKind::Object)), (key(&["a"], 20), leaf())];
        assert_eq!(
            leftovers(&tie, cutoff, &TabletRules::default()),
            [r#"doc(; "d")."a" @T20 -> 1"#]
        );
        // A record overwritten at or below H goes; it hides no older child itself.
        let records = [
            (key(&[], 22), value(ValueKind::Object)),
            (key(&[], 21), record.clone()),
            (key(&["a"], 21), leaf()),
        ];
        assert_eq!(
            leftovers(&records, cutoff, &TabletRules::default()).len(),
            2,
            "{:?}",
            leftovers(&records, cutoff, &TabletRules::default())
        );
        // A second version at or below H, a tombstone at or below H, but not the version
        // beneath a TTL-only record.
        let entries = [
            (key(&["a"], 20), leaf()),
            (key(&["a"], 10), leaf()),
            (key(&["b"], 10), value(ValueKind::Tombstone)),
            (key(&["c"], 20), record),
            (key(&["c"], 10), value(ValueKind::Tombstone)),
        ];
        let left = leftovers(&entries, cutoff, &TabletRules::default());
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(left[0].contains("\"a\" @T10 ") && left[1].contains("\"b\" @T10 "), "{left:?}");
    }

    /// Every entry of a column dropped at or before the cutoff must be gone, above it too;
    /// a column dropped after it keeps its entries.
    #[test]
    fn a_dropped_columns_entries_must_be_gone() {
        let col = |id: i32, us: u64| {
            let doc = DocKey::new(vec![], vec![KeyEntry::asc(Primitive::String("r".into()))]);
            let path = DocPath::new(doc, vec![KeyEntry::asc(Primitive::ColumnId(id))]);
            let dht = DocHybridTime::new(HybridTime::from_micros(us), 0);
            (SubDocKey { path, doc_ht: dht }, value(ValueKind::Primitive(Primitive::Int64(1))))
        };
        let entries = [col(10, 30), col(10, 5), col(11, 5), col(12, 5)];
        let dropped = [(10, HybridTime::from_micros(20)), (12, HybridTime::from_micros(40))];
        let left = leftovers(
            &entries,
            HybridTime::from_micros(25),
            &TabletRules { dropped: &dropped, ..Default::default() },
        );
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(left.iter().all(|l| l.contains("col(10)")), "{left:?}");
    }

    /// A colocated table's tombstone at its own key hides every older version of the
    /// table's documents: at or below the cutoff they must be gone with it; a document
    /// written after it, or one of another table, stays.
    #[test]
    fn a_table_tombstone_takes_the_tables_older_documents() {
        let colocated = |id: u32, range: &[&str], us: u64| {
            let range = range.iter().map(|s| KeyEntry::asc(Primitive::String((*s).into())));
            let doc = DocKey { colocation_id: Some(id), ..DocKey::new(vec![], range.collect()) };
            let at = DocHybridTime::new(HybridTime::from_micros(us), 0);
            SubDocKey::new(DocPath::new(doc, vec![]), at)
        };
        let leaf = || value(ValueKind::Primitive(Primitive::Int64(1)));
        let entries = [
            (colocated(4, &[], 20), value(ValueKind::Tombstone)), // the table's tombstone
            (colocated(4, &["a"], 30), leaf()),                   // written after it
            (colocated(4, &["b"], 10), leaf()),                   // hidden by it
            (colocated(5, &["c"], 10), leaf()),                   // another table
        ];
        let left = leftovers(&entries, HybridTime::from_micros(25), &TabletRules::default());
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(left[0].contains("-> DEL") && left[1].contains(r#""b""#), "{left:?}");
    }

    #[test]
    fn an_entry_expired_must_be_gone() {
        let leaf = |ttl| Value { ttl, kind: ValueKind::Primitive(Primitive::Int64(1)) };
        let object = |ttl| Value { ttl, kind: ValueKind::Object };
        let cutoff = HybridTime::from_micros(10_000);
        let entries = [
            (key(&[], 1_000), object(Ttl::Ms(2))), // its own TTL: gone at 3,000
            (key(&["a"], 2_000), leaf(Ttl::Inherit)), // the root's TTL: gone at 3,000
            (key(&["b"], 4_000), leaf(Ttl::Never)), // never expires
            (key(&["c"], 1_500), object(Ttl::Never)),
            (key(&["c", "x"], 5_000), leaf(Ttl::Inherit)), // inherits "c"'s never
            (key(&["e"], 2_500), object(Ttl::Ms(20))),     // alive until 22,500
            (key(&["e", "y"], 3_000), leaf(Ttl::Inherit)),
            (key(&["g"], 9_000), leaf(Ttl::Inherit)), // after the root ran out: lives
        ];
        // The root stays: "a", "b", "c", "e" and "g" are kept beneath it (`outlived`).
        let left = leftovers(&entries, cutoff, &TabletRules::default());
        assert_eq!(left, [r#"doc(; "d")."a" @T2000 -> 1"#]);
        // With nothing beneath that outlives it, it must be gone with what inherits its TTL.
        let left = leftovers(&entries[..2], cutoff, &TabletRules::default());
        assert_eq!(left, [r#"doc(; "d") @T1000 -> {} ttl=2ms"#, r#"doc(; "d")."a" @T2000 -> 1"#]);
        // A tombstone beneath outlives nothing.
        let gone = [entries[0].clone(), (key(&["t"], 5_000), leaf(Ttl::Inherit))];
        let tombstone = [entries[0].clone(), (key(&["t"], 5_000), value(ValueKind::Tombstone))];
        assert!(leftovers(&gone, cutoff, &TabletRules::default()).is_empty());
        let left = leftovers(&tombstone, cutoff, &TabletRules::default());
        assert_eq!(left.len(), 2, "{left:?}");
        // Where every write is blind (a CQL table), only an entry that inherits the TTL
        // keeps it: not one written after it ran out.
        let blind = TabletRules { blind_writes: true, ..TabletRules::default() };
        assert_eq!(leftovers(&gone, cutoff, &blind), [r#"doc(; "d") @T1000 -> {} ttl=2ms"#]);
        // The table's TTL counts from the entry's own write time; an explicit TTL on an
        // ancestor overrides it.
        let entries = [
            (key(&["a"], 2_000), leaf(Ttl::Inherit)), // gone at 5,000
            (key(&["b"], 8_000), leaf(Ttl::Inherit)), // alive until 11,000
            (key(&["c"], 1_000), object(Ttl::Never)),
            (key(&["c", "x"], 2_000), leaf(Ttl::Inherit)),
        ];
        let left = leftovers(
            &entries,
            cutoff,
            &TabletRules { table_ttl_ms: Some(3), ..Default::default() },
        );
        assert_eq!(left, [r#"doc(; "d")."a" @T2000 -> 1"#]);
        assert!(leftovers(&entries, cutoff, &TabletRules::default()).is_empty());
        // Above the cutoff, or under a TTL-only record (whose TTL GC does not judge),
        // nothing is judged.
        let record = Value { ttl: Ttl::Ms(1), kind: ValueKind::TtlOnly { object: true } };
        let entries = [
            (key(&[], 1_000), record),
            (key(&[], 900), object(Ttl::Ms(1))),
            (key(&["a"], 2_000), leaf(Ttl::Inherit)),
            (key(&["b"], 20_000), leaf(Ttl::Inherit)),
        ];
        assert!(leftovers(
            &entries,
            cutoff,
            &TabletRules { table_ttl_ms: Some(1), ..Default::default() }
        )
        .is_empty());
    }
}
