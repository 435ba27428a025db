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
//! `decide_packed_row`). Expired entries are not judged here (which TTL an entry has
//! depends on inheritance).

use docsim_engine::script::format_entry;
use docsim_engine::{DocHybridTime, DocPath, HybridTime, SubDocKey, Value, ValueKind};

/// The entries of one tablet's dump (key order) that a full compaction with cutoff
/// `cutoff_ht` should have removed, as dump lines.
pub fn leftovers(entries: &[(SubDocKey, Value)], cutoff_ht: HybridTime) -> Vec<String> {
    let mut out = Vec::new();
    // The newest remaining version at or below the cutoff of each path on the current
    // entry's chain (TTL-only records overwrite nothing and are left out).
    let mut chain: Vec<(&DocPath, DocHybridTime)> = Vec::new();
    // The packed rows of the current document, with their versions.
    let mut packed_rows = Vec::new();
    // Records that hide nothing: TTL-only records and packed rows (GC keeps them until a
    // newer version of their path hides them, `gc.rs`).
    let is_record =
        |value: &Value| matches!(value.kind, ValueKind::TtlOnly { .. } | ValueKind::PackedRow(_));
    for (i, (key, value)) in entries.iter().enumerate() {
        chain.retain(|(path, _)| path.is_prefix_of(&key.path));
        let previous = i.checked_sub(1).map(|p| &entries[p]);
        let beneath_record = previous.is_some_and(|(k, v)| k.path == key.path && is_record(v));
        if key.doc_ht.ht > cutoff_ht {
            continue;
        }
        let older_version = chain.iter().any(|(path, _)| *path == &key.path);
        let overwritten =
            chain.iter().any(|(path, newest)| *path != &key.path && key.doc_ht <= *newest);
        if matches!(value.kind, ValueKind::PackedRow(_)) {
            packed_rows.push((&key.path.doc_key, key.doc_ht));
        }
        packed_rows.retain(|(doc, _)| *doc == &key.path.doc_key);
        let over_packed_row = packed_rows.iter().any(|(_, at)| *at < key.doc_ht);
        // A tombstone a TTL-only record stands on stays, as do a packed row's; a record is
        // no tombstone.
        let tombstone = value.kind == ValueKind::Tombstone && !beneath_record && !over_packed_row;
        if older_version || overwritten || tombstone {
            out.push(format_entry(key, value, None, false));
        }
        if !older_version && !is_record(value) {
            chain.push((&key.path, key.doc_ht));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use docsim_engine::{DocKey, KeyEntry, Primitive, Ttl};

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
        assert_eq!(leftovers(&entries, cutoff), [r#"doc(; "d")."b" @T24 -> 1"#]);
        // A child at the same DocHybridTime as its parent's version is hidden by it (the
        // reader's rule: a child must be strictly newer).
        let tie = [(key(&[], 20), value(ValueKind::Object)), (key(&["a"], 20), leaf())];
        assert_eq!(leftovers(&tie, cutoff), [r#"doc(; "d")."a" @T20 -> 1"#]);
        // A record overwritten at or below H goes; it hides no older child itself.
        let records = [
            (key(&[], 22), value(ValueKind::Object)),
            (key(&[], 21), record.clone()),
            (key(&["a"], 21), leaf()),
        ];
        assert_eq!(leftovers(&records, cutoff).len(), 2, "{:?}", leftovers(&records, cutoff));
        // A second version at or below H, a tombstone at or below H, but not the version
        // beneath a TTL-only record.
        let entries = [
            (key(&["a"], 20), leaf()),
            (key(&["a"], 10), leaf()),
            (key(&["b"], 10), value(ValueKind::Tombstone)),
            (key(&["c"], 20), record),
            (key(&["c"], 10), value(ValueKind::Tombstone)),
        ];
        let left = leftovers(&entries, cutoff);
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(left[0].contains("\"a\" @T10 ") && left[1].contains("\"b\" @T10 "), "{left:?}");
    }
}
