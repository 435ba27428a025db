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
//! Expired entries: one with a TTL of its own stays until overwritten (every child of its
//! path inherits that TTL: a rule of docsim's own, `gc.rs`), but one without a TTL of its
//! own, expired at H through the TTL it inherits or the table's, must be gone — unless a
//! record stands on its path or an ancestor's (a TTL-only record's TTL, or a packed row's,
//! may be the one in effect, which GC does not judge), and not in a table that may hold
//! packed rows (see [`leftovers`]). The TTL it inherits is the README glossary's rule,
//! stated here on its own and made precise as the model states it: the nearest explicit
//! TTL among the ancestor versions in effect for it (at each ancestor path the newest
//! version older than it, counted only if newer than those counted above), from that
//! version's write time; with none, the table's, from its own write time.

use docsim_engine::script::format_entry;
use docsim_engine::{DocHybridTime, DocPath, HybridTime, SubDocKey, Ttl, Value, ValueKind};

/// The entries of one tablet's dump (key order) that a full compaction with cutoff
/// `cutoff_ht` should have removed, as dump lines. `table_ttl_ms`: the tablet's default
/// TTL. `rows_stored_whole`: the tablet may hold packed rows (or entities); its expired
/// entries are not judged, since a packed row this compaction dropped leaves no trace in
/// the dump, while GC keeps the expired columns it stood under (`gc.rs`,
/// `under_ttl_only`).
pub fn leftovers(
    entries: &[(SubDocKey, Value)],
    cutoff_ht: HybridTime,
    table_ttl_ms: Option<u64>,
    rows_stored_whole: bool,
) -> Vec<String> {
    let mut out = Vec::new();
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
    for entry @ (key, value) in entries {
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
        let over_packed_row = packed_rows.iter().any(|(_, at)| *at < key.doc_ht);
        // A tombstone a TTL-only record stands on stays, as do a packed row's; a record is
        // no tombstone.
        let tombstone = value.kind == ValueKind::Tombstone && !beneath_record && !over_packed_row;
        let expired = !rows_stored_whole
            && !older_version
            && !overwritten
            && !tombstone
            && expired_through_inheritance(&lineage, cutoff_ht, table_ttl_ms);
        if older_version || overwritten || tombstone || expired {
            out.push(format_entry(key, value, None, false));
        }
    }
    out
}

/// Whether the newest entry of `lineage` (its own path's last version) has no TTL of its
/// own, is no tombstone, no record stands on its path or an ancestor's (or is it), and it
/// is expired at `cutoff_ht` through the TTL it inherits or the table's.
fn expired_through_inheritance(
    lineage: &[(&DocPath, Vec<&(SubDocKey, Value)>)],
    cutoff_ht: HybridTime,
    table_ttl_ms: Option<u64>,
) -> bool {
    let Some(((own_key, own), ancestors)) =
        lineage.split_last().and_then(|(own, up)| Some((*own.1.last()?, up)))
    else {
        return false;
    };
    // A TTL-only record, or a row stored whole (packed, or as an entity): GC does not
    // judge the TTLs in effect beneath them.
    let is_record = |v: &Value| {
        matches!(
            v.kind,
            ValueKind::TtlOnly { .. } | ValueKind::PackedRow(_) | ValueKind::EntityRow(_)
        )
    };
    let any_record = lineage.iter().flat_map(|(_, versions)| versions).any(|(_, v)| is_record(v));
    if own.ttl != Ttl::Inherit || own.kind == ValueKind::Tombstone || any_record {
        return false;
    }
    // The ancestor versions in effect, top down; the last explicit TTL among them wins.
    let mut newest_counted: Option<DocHybridTime> = None;
    let mut in_effect: Option<(HybridTime, Ttl)> = None;
    for (_, versions) in ancestors {
        let older = versions.iter().find(|(k, _)| k.doc_ht < own_key.doc_ht);
        let Some((k, v)) = older else { continue };
        if newest_counted.is_none_or(|n| k.doc_ht > n) {
            newest_counted = Some(k.doc_ht);
            if v.ttl != Ttl::Inherit {
                in_effect = Some((k.doc_ht.ht, v.ttl));
            }
        }
    }
    let last_visible = match in_effect {
        Some((base, Ttl::Ms(ms))) => base.add_micros(ms.saturating_mul(1000)),
        Some(_) => return false, // never expires (an inherited TTL is never recorded)
        None => match table_ttl_ms.filter(|ms| *ms > 0) {
            Some(ms) => own_key.doc_ht.ht.add_micros(ms.saturating_mul(1000)),
            None => return false,
        },
    };
    cutoff_ht > last_visible
}

#[cfg(test)]
mod tests {
    use super::*;
    use docsim_engine::{DocKey, KeyEntry, Primitive};

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
        assert_eq!(leftovers(&entries, cutoff, None, false), [r#"doc(; "d")."b" @T24 -> 1"#]);
        // A child at the same DocHybridTime as its parent's version is hidden by it (the
        // reader's rule: a child must be strictly newer).
        let tie = [(key(&[], 20), value(ValueKind::Object)), (key(&["a"], 20), leaf())];
        assert_eq!(leftovers(&tie, cutoff, None, false), [r#"doc(; "d")."a" @T20 -> 1"#]);
        // A record overwritten at or below H goes; it hides no older child itself.
        let records = [
            (key(&[], 22), value(ValueKind::Object)),
            (key(&[], 21), record.clone()),
            (key(&["a"], 21), leaf()),
        ];
        assert_eq!(
            leftovers(&records, cutoff, None, false).len(),
            2,
            "{:?}",
            leftovers(&records, cutoff, None, false)
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
        let left = leftovers(&entries, cutoff, None, false);
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(left[0].contains("\"a\" @T10 ") && left[1].contains("\"b\" @T10 "), "{left:?}");
    }

    #[test]
    fn an_entry_expired_through_the_ttl_it_inherits_must_be_gone() {
        let leaf = |ttl| Value { ttl, kind: ValueKind::Primitive(Primitive::Int64(1)) };
        let object = |ttl| Value { ttl, kind: ValueKind::Object };
        let cutoff = HybridTime::from_micros(10_000);
        let entries = [
            (key(&[], 1_000), object(Ttl::Ms(2))), // its own TTL: stays, expired
            (key(&["a"], 2_000), leaf(Ttl::Inherit)), // the root's TTL: gone at 3,000
            (key(&["b"], 4_000), leaf(Ttl::Never)), // never expires
            (key(&["c"], 1_500), object(Ttl::Never)),
            (key(&["c", "x"], 5_000), leaf(Ttl::Inherit)), // inherits "c"'s never
            (key(&["e"], 2_500), object(Ttl::Ms(20))),     // alive until 22,500
            (key(&["e", "y"], 3_000), leaf(Ttl::Inherit)),
            (key(&["g"], 9_000), leaf(Ttl::Inherit)), // expired from birth, as a child
        ];
        let left = leftovers(&entries, cutoff, None, false);
        assert_eq!(left, [r#"doc(; "d")."a" @T2000 -> 1"#, r#"doc(; "d")."g" @T9000 -> 1"#]);
        // The table's TTL counts from the entry's own write time; an explicit TTL on an
        // ancestor overrides it.
        let entries = [
            (key(&["a"], 2_000), leaf(Ttl::Inherit)), // gone at 5,000
            (key(&["b"], 8_000), leaf(Ttl::Inherit)), // alive until 11,000
            (key(&["c"], 1_000), object(Ttl::Never)),
            (key(&["c", "x"], 2_000), leaf(Ttl::Inherit)),
        ];
        let left = leftovers(&entries, cutoff, Some(3), false);
        assert_eq!(left, [r#"doc(; "d")."a" @T2000 -> 1"#]);
        assert!(leftovers(&entries, cutoff, None, false).is_empty());
        // A tablet that may hold packed rows: a packed row the compaction dropped may have
        // stood over the entry, which GC then keeps; expiry is not judged there.
        assert!(leftovers(&entries, cutoff, Some(3), true).is_empty());
        // Above the cutoff, or under a TTL-only record (whose TTL GC does not judge),
        // nothing is judged.
        let record = Value { ttl: Ttl::Ms(1), kind: ValueKind::TtlOnly { object: true } };
        let entries = [
            (key(&[], 1_000), record),
            (key(&[], 900), object(Ttl::Ms(1))),
            (key(&["a"], 2_000), leaf(Ttl::Inherit)),
            (key(&["b"], 20_000), leaf(Ttl::Inherit)),
        ];
        assert!(leftovers(&entries, cutoff, Some(1), false).is_empty());
    }
}
