//! Reading packed rows: a packed row at a row's root stands for the entries an unpacked
//! INSERT writes, and the scans hand the reader those entries instead of the packed value.
//!
//! A packed row at `DocKey @T w` reads as the liveness column `sys(0) -> null` and one
//! entry per packed column (`col(id) -> value`, or a tombstone for NULL), all at `T w`
//! (a column repacking folded in: at its own write time), each with the row's TTL unless
//! the column carries its own. That is exactly what the
//! same INSERT writes when the table does not pack, so everything the reader knows —
//! newer column entries on top, row tombstones, TTLs, the table default TTL — applies
//! unchanged, and the two layouts must read alike (the metamorphic runs check it).
//!
//! YugabyteDB reads the same way (`DocDBTableReader`, `docdb/doc_reader.cc`: the packed
//! row is the base value of each packed column and implies the row's liveness; a column
//! entry overrides it only when strictly newer). It does not hide anything itself: the
//! collection columns an INSERT writes beside it are separate entries, and the scans treat
//! it like a TTL-only record (`Value::hides_nothing`), so the older version of the root
//! (a row tombstone) stays in effect beneath it.
//!
//! **The entity layout** (a rule of docsim's: YugabyteDB has no such layout) stores a
//! packed row as a RocksDB wide-column entity: its default column holds the row's TTL and
//! schema version (`EntityRow`), and each packed column is a column of its own, named by
//! its id, holding the column's slot as the V1 format would. The scans read the columns
//! back (`GetEntity`) and hand on the packed row they make; the GC filter is shown the
//! entity through the shim's `FilterV3` and judges it as the packed row; a repacked row
//! goes back as an entity's new columns.

use super::with_key;
use crate::canary::{Plant, Plants};
use crate::encoding::{unpack, KeyEntry, Packings, Primitive, Ttl, Value, ValueKind};
use crate::entity::Column;
use crate::error::{DecodeError, Result};
use crate::reader::DocEntry;

/// The entity layout: if `value` (encoded) is a packed row, the columns of the entity
/// that stores it ([`crate::encoding::SchemaPacking::entity_columns`]); else `None`.
pub(super) fn entity_columns(
    value: &[u8],
    packings: &Packings,
) -> std::result::Result<Option<Vec<Column>>, DecodeError> {
    if Value::is_ttl_only(value) || !Value::hides_nothing(value) {
        return Ok(None);
    }
    let Value { ttl, kind: ValueKind::PackedRow(body) } = Value::decode(value)? else {
        return Ok(None);
    };
    let (version, columns) = unpack(&body, 0, |v| packings.get(v))?;
    let packing = packings.get(version).expect("unpacked with it");
    let slots: Vec<_> = columns.into_iter().map(|(_, slot)| slot).collect();
    Ok(Some(packing.entity_columns(ttl, &slots)))
}

/// The packed row body an entity of schema `version` stores, from its columns. Planted:
/// every packed column is read from the entity's default column instead of its own.
pub(super) fn entity_body(
    version: u32,
    columns: &[Column],
    (packings, plants): (&Packings, Plants),
) -> std::result::Result<Vec<u8>, DecodeError> {
    let packing = packings.get(version).ok_or_else(|| {
        DecodeError::new("entity row", 0, format!("no packing for schema version {version}"))
    })?;
    let default_as_every_column: Vec<Column>;
    let columns = if plants.contains(Plant::EntityColumnAsDefault) {
        let default = columns.iter().find(|(n, _)| n.is_empty()).map(|(_, v)| v.clone());
        let ids = packing.column_ids().iter();
        let default = default.unwrap_or_default();
        default_as_every_column =
            ids.map(|id| (id.to_be_bytes().to_vec(), default.clone())).collect();
        &default_as_every_column
    } else {
        columns
    };
    let slots = packing.slots_of_entity(columns)?;
    let slots: Vec<_> = slots.into_iter().map(|(_, slot)| slot).collect();
    Ok(packing.body_of_slots(&slots))
}

/// Push `entry`, or the entries it stands for if it is a packed row at a document root;
/// `key` is its stored key, for errors. Returns whether it was a packed row (the caller
/// must then put the document's entries back in key order).
pub(super) fn push_entry(
    entry: DocEntry,
    (packings, plants): (&Packings, Plants),
    key: &[u8],
    out: &mut Vec<DocEntry>,
) -> Result<bool> {
    let ValueKind::PackedRow(body) = &entry.value.kind else {
        out.push(entry);
        return Ok(false);
    };
    if entry.table_key || !entry.subkeys.is_empty() {
        let error = crate::error::DecodeError::new("packed row", 0, "not at a row's root");
        return Err(with_key(key, error));
    }
    crate::probe::hit("read.packed_row");
    let row_ttl = entry.value.ttl;
    let wrong_schema = plants.contains(Plant::PackedRowWrongSchema);
    let packing_of = |v| if wrong_schema { packings.newest() } else { packings.get(v) };
    let (_, columns) = unpack(body, 0, packing_of).map_err(|e| with_key(key, e))?;
    let at = |subkey: Primitive, value: Value, doc_ht| DocEntry {
        table_key: false,
        subkeys: vec![KeyEntry::asc(subkey)],
        doc_ht,
        value,
    };
    let liveness = Value { ttl: row_ttl, kind: ValueKind::Primitive(Primitive::Null) };
    out.push(at(Primitive::SystemColumnId(0), liveness, entry.doc_ht));
    for (id, slot) in columns {
        let value = match slot.value {
            None => Value::tombstone(),
            Some(Value { ttl: Ttl::Inherit, kind }) => Value { ttl: row_ttl, kind },
            Some(own) => own,
        };
        let doc_ht = slot.written.unwrap_or(entry.doc_ht);
        out.push(at(Primitive::ColumnId(id as i32), value, doc_ht));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use crate::encoding::{DocKey, DocPath, KeyEntry, Packings, Primitive, SchemaPacking};
    use crate::encoding::{Value, ValueKind};
    use crate::gc::CompactionKind;
    use crate::hybrid_time::HybridTime;
    use crate::write_batch::DocWriteBatch;

    /// A packed row naming a schema version the table never had cannot be repacked: the
    /// full compaction keeps it as it is and fails with a corruption error naming it.
    #[test]
    fn a_packed_row_that_does_not_decode_fails_the_compaction() {
        let dir = std::env::temp_dir().join(format!("docsim-packed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut db = crate::db::DocDb::open(&dir).expect("open");
        let mut packings = Packings::default();
        packings.insert(SchemaPacking::new(0, vec![10]).expect("one column"));
        db.set_packings(packings, false);
        let unknown = SchemaPacking::new(7, vec![10]).expect("one column");
        let body = unknown.body(&[Some(Value::new(ValueKind::Primitive(Primitive::Int32(1))))]);
        let row = DocKey::new(vec![], vec![KeyEntry::asc(Primitive::Int32(1))]);
        let mut batch = DocWriteBatch::new();
        batch.push(&DocPath::new(row, vec![]), &Value::new(ValueKind::PackedRow(body)));
        db.write(&batch, HybridTime::from_micros(1000), None).expect("write");
        let cutoff = HybridTime::from_micros(2000);
        let err = db.compact(cutoff, CompactionKind::Full, None, None).expect_err("undecodable");
        let text = err.to_string();
        assert!(text.contains("no packing for schema version 7"), "{text}");
        assert_eq!(db.dump().expect("dump").len(), 1, "the row is kept");
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
