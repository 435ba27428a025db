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
use crate::encoding::ValueKind;
use crate::encoding::{unpack, KeyEntry, PackedColumns, Packings, Primitive, Slot, Ttl, Value};
use crate::entity::Column;
use crate::error::{DecodeError, Result};
use crate::hybrid_time::{DocHybridTime, HybridTime};
use crate::reader::{DocEntry, ReadConfig};

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

/// A packed row at a document root as a scan found it, its columns decoded: what it
/// stands for is decided once the scan knows whether anything else of its document is
/// needed ([`PackedRead::alone`]) or not ([`PackedRead::expand`]).
pub(super) struct PackedRead {
    doc_ht: DocHybridTime,
    row_ttl: Ttl,
    columns: PackedColumns,
}

/// A needed entry of a document, a packed row decoded.
pub(super) enum Scanned {
    Entry(DocEntry),
    Packed(PackedRead),
}

/// Decode `entry` if it is a packed row at a document root; `key` is its stored key, for
/// errors.
pub(super) fn scanned(
    entry: DocEntry,
    (packings, plants): (&Packings, Plants),
    key: &[u8],
) -> Result<Scanned> {
    let ValueKind::PackedRow(body) = &entry.value.kind else {
        return Ok(Scanned::Entry(entry));
    };
    if entry.table_key || !entry.subkeys.is_empty() {
        let error = crate::error::DecodeError::new("packed row", 0, "not at a row's root");
        return Err(with_key(key, error));
    }
    crate::probe::hit("read.packed_row");
    let wrong_schema = plants.contains(Plant::PackedRowWrongSchema);
    let packing_of = |v| if wrong_schema { packings.newest() } else { packings.get(v) };
    let (_, mut columns) = unpack(body, 0, packing_of).map_err(|e| with_key(key, e))?;
    if plants.contains(Plant::YbPackedColumnTtlFromRow) {
        columns.iter_mut().for_each(|(_, slot)| planted_ttl_from_row(slot, entry.doc_ht.ht));
    }
    Ok(Scanned::Packed(PackedRead { doc_ht: entry.doc_ht, row_ttl: entry.value.ttl, columns }))
}

/// The plant `yb-packed-column-ttl-from-row`, YugabyteDB's reader: a column folded into a
/// packed row with a TTL of its own expires that TTL after the packed row's write time,
/// not its own (`GetHelper::DoDecodePackedColumn`, `docdb/doc_reader.cc`, passes
/// `packed_row->doc_ht()` to `GetNewExpiration`; the column's kept time only feeds
/// `writetime()`). Stated here as a shorter TTL from the column's own time (at least
/// 1 ms: `Ttl::Ms` is never 0).
fn planted_ttl_from_row(slot: &mut Slot, row_ht: HybridTime) {
    let (Some(written), Some(value)) = (slot.written, slot.value.as_mut()) else { return };
    let Ttl::Ms(ms) = value.ttl else { return };
    let last_us = row_ht.physical_us() + ms.saturating_mul(1000);
    let left_ms = last_us.saturating_sub(written.ht.physical_us()) / 1000;
    value.ttl = Ttl::Ms(left_ms.max(1));
}

/// Push `entry`, or the entries it stands for if it is a packed row at a document root;
/// `key` is its stored key, for errors. Returns whether it was a packed row (the caller
/// must then put the document's entries back in key order).
pub(super) fn push_entry(
    entry: DocEntry,
    packings: (&Packings, Plants),
    key: &[u8],
    out: &mut Vec<DocEntry>,
) -> Result<bool> {
    match scanned(entry, packings, key)? {
        Scanned::Entry(entry) => out.push(entry),
        Scanned::Packed(row) => {
            row.expand(out);
            return Ok(true);
        }
    }
    Ok(false)
}

impl PackedRead {
    /// Push the entries the packed row stands for: the liveness column and each packed
    /// column at the row's time (a repacked column at its own), a NULL as a tombstone.
    pub(super) fn expand(self, out: &mut Vec<DocEntry>) {
        let at = |subkey: Primitive, value: Value, doc_ht| DocEntry {
            table_key: false,
            subkeys: vec![KeyEntry::asc(subkey)],
            doc_ht,
            value,
        };
        let liveness = Value { ttl: self.row_ttl, kind: ValueKind::Primitive(Primitive::Null) };
        out.push(at(Primitive::SystemColumnId(0), liveness, self.doc_ht));
        for (id, slot) in self.columns {
            let value = match slot.value {
                None => Value::tombstone(),
                Some(Value { ttl: Ttl::Inherit, kind }) => Value { ttl: self.row_ttl, kind },
                Some(own) => own,
            };
            let doc_ht = slot.written.unwrap_or(self.doc_ht);
            out.push(at(Primitive::ColumnId(id as i32), value, doc_ht));
        }
    }

    /// The row, when the packed row is all a read sees of its document and nothing in it
    /// can expire or was planted: each non-NULL column's value by id. Else the packed row
    /// back, for [`PackedRead::expand`].
    ///
    /// It is what the reader makes of the expanded entries (`read_subdocument`): the
    /// liveness column makes the row exist, every column entry is visible (all at or after
    /// the root's time, none older than the read), a NULL is deleted. YugabyteDB's reader
    /// decodes a packed row's columns straight into the projection the same way when no
    /// newer column entry covers them (`DocDBTableReader`, `docdb/doc_reader.cc`).
    pub(super) fn alone(self, read: &ReadConfig) -> std::result::Result<PackedCells, PackedRead> {
        let no_ttl = |ttl: &Ttl| *ttl == Ttl::Inherit;
        let plain = |slot: &Slot| {
            slot.written.is_none()
                && slot
                    .value
                    .as_ref()
                    .is_none_or(|v| no_ttl(&v.ttl) && matches!(v.kind, ValueKind::Primitive(_)))
        };
        // A row newer than the read is the scan's to skip; handed back, the reader ignores it.
        let simple = no_ttl(&self.row_ttl) && read.table_ttl_ms.is_none();
        if !simple
            || self.doc_ht.ht > read.read_ht
            || read.plants != Plants::NONE
            || !self.columns.iter().all(|(_, s)| plain(s))
        {
            return Err(self);
        }
        let cells = self.columns.into_iter().filter_map(|(id, slot)| match slot.value {
            Some(Value { kind: ValueKind::Primitive(p), .. }) => Some((id, p)),
            _ => None,
        });
        Ok(cells.collect())
    }
}

/// A row read from a packed row alone: each non-NULL column's value by column id.
pub type PackedCells = Vec<(u32, Primitive)>;

#[cfg(test)]
mod tests {
    use crate::encoding::{DocKey, DocPath, KeyEntry, Packings, Primitive, SchemaPacking};
    use crate::encoding::{Value, ValueKind};
    use crate::gc::CompactionKind;
    use crate::hybrid_time::HybridTime;
    use crate::write_batch::DocWriteBatch;

    /// A packed row read alone gives exactly the row the reader makes of its expanded
    /// entries, and is handed back whenever anything in it can expire, carries its own
    /// write time, is newer than the read or a bug is planted: row TTLs (none, never, some),
    /// a table TTL or not, pairs of slots (NULL, a value, a null value, a TTL of its own,
    /// never expiring, its own later write time), a plant or not, reads before, at and
    /// after the write.
    #[test]
    fn a_packed_row_alone_reads_as_its_expanded_entries() {
        use super::{Slot, Ttl};
        use crate::canary::{Plant, Plants};
        use crate::hybrid_time::DocHybridTime;
        let int = |v| Some(Value::new(ValueKind::Primitive(Primitive::Int32(v))));
        let kind = ValueKind::Primitive(Primitive::Int32(3));
        let written = Some(DocHybridTime::new(HybridTime::from_micros(1_100), 1));
        let null = Some(Value::new(ValueKind::Primitive(Primitive::Null)));
        let slots = [
            (Slot::of(None), true),
            (Slot::of(int(7)), true),
            (Slot::of(null), true),
            (Slot::of(Some(Value { ttl: Ttl::Ms(5), kind: kind.clone() })), false),
            (Slot::of(Some(Value { ttl: Ttl::Never, kind })), false),
            (Slot { value: int(8), written }, false),
        ];
        let plants = [Plants::NONE, Plants::of(Some(Plant::TtlOffByOne))];
        let mut read_alone = 0;
        for row_ttl in [Ttl::Inherit, Ttl::Never, Ttl::Ms(3)] {
            for table_ttl_ms in [None, Some(2)] {
                for ((a, plain_a), (b, plain_b)) in (0..36).map(|i| (&slots[i % 6], &slots[i / 6]))
                {
                    let times = |p| [(p, 999), (p, 1_000), (p, 9_000)];
                    for (plants, read_us) in plants.iter().flat_map(|&p| times(p)) {
                        let plain = row_ttl == Ttl::Inherit && table_ttl_ms.is_none();
                        let alone = plain && plants == Plants::NONE && *plain_a && *plain_b;
                        let alone = alone && read_us >= 1_000;
                        let read = ReadConfig {
                            read_ht: HybridTime::from_micros(read_us),
                            table_ttl_ms,
                            plants,
                        };
                        let columns = vec![(10, a.clone()), (11, b.clone())];
                        let what = format!(
                            "{row_ttl:?} {table_ttl_ms:?} {columns:?} {plants:?} @{read_us}"
                        );
                        assert_eq!(read_row_alone(row_ttl, columns, read, &what), alone, "{what}");
                        read_alone += usize::from(alone);
                    }
                }
            }
        }
        assert_eq!(read_alone, 18, "plain rows (3 plain slots, 9 pairs) at two read times");
    }

    use crate::reader::ReadConfig;

    /// Whether a packed row of these columns, written at 1000 µs, reads alone; if it does,
    /// the row must be what the reader makes of its expanded entries.
    fn read_row_alone(
        row_ttl: super::Ttl,
        columns: super::PackedColumns,
        read: ReadConfig,
        what: &str,
    ) -> bool {
        use super::PackedRead;
        use crate::document::Document;
        use crate::hybrid_time::DocHybridTime;
        use crate::reader::{read_subdocument, DocEntry};
        let doc_ht = DocHybridTime::new(HybridTime::from_micros(1_000), 0);
        let row = PackedRead { doc_ht, row_ttl, columns: columns.clone() };
        let Ok(cells) = row.alone(&read) else { return false };
        let mut entries: Vec<DocEntry> = Vec::new();
        PackedRead { doc_ht, row_ttl, columns }.expand(&mut entries);
        entries.sort_by(DocEntry::key_cmp);
        let root = DocPath::new(DocKey::new(vec![], vec![]), vec![]);
        let mut row = std::collections::BTreeMap::new();
        let liveness = KeyEntry::asc(Primitive::SystemColumnId(0));
        row.insert(liveness, Document::Primitive(Primitive::Null));
        for (id, value) in cells {
            row.insert(KeyEntry::asc(Primitive::ColumnId(id as i32)), Document::Primitive(value));
        }
        assert_eq!(read_subdocument(&entries, &root, read), Some(Document::Object(row)), "{what}");
        true
    }

    /// A packed row naming a schema version the table never had cannot be repacked: the
    /// full compaction keeps it as it is and fails with a corruption error naming it.
    #[test]
    fn a_packed_row_that_does_not_decode_fails_the_compaction() {
        let dir = crate::tests::scratch_dir("packed");
        let mut db = crate::db::DocDb::open(&dir).expect("open");
        let mut packings = Packings::default();
        packings.insert(SchemaPacking::new(0, vec![10]).expect("one column"));
        db.set_packings(packings, false);
        let unknown = SchemaPacking::new(7, vec![10]).expect("one column");
        let body = unknown.body(&[Some(Value::new(ValueKind::Primitive(Primitive::Int32(1))))]);
        let row = DocKey::new(vec![], vec![KeyEntry::asc(Primitive::Int32(1))]);
        let mut batch = DocWriteBatch::new();
        batch.push(&DocPath::new(row, vec![]), &Value::new(ValueKind::PackedRow(body)));
        db.write(&batch, HybridTime::from_micros(1000), None, &[]).expect("write");
        let cutoff = HybridTime::from_micros(2000);
        let err = db
            .compact(cutoff, CompactionKind::Full, (None, Default::default()), None)
            .expect_err("undecodable");
        let text = err.to_string();
        let key = "4880000001212380ff05543df729bc18804b";
        let first = "malformed packed row at byte 0: no packing for schema version 7";
        let said = format!(
            "corruption: malformed compacted entry at byte 0: compaction kept 1 undecodable \
             entries; first: corruption: {first} (key {key})"
        );
        assert_eq!(text, said);
        assert_eq!(db.dump().expect("dump").len(), 1, "the row is kept");
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A packed row stands only at a row's root: one stored beneath it (under a column)
    /// is refused by the read, naming its key.
    #[test]
    fn a_packed_row_below_a_rows_root_is_refused() {
        let dir = crate::tests::scratch_dir("packed-below-root");
        let db = crate::db::DocDb::open(&dir).expect("open");
        let packing = SchemaPacking::new(0, vec![10]).expect("one column");
        let body = packing.body(&[Some(Value::new(ValueKind::Primitive(Primitive::Int32(1))))]);
        let row = DocKey::new(vec![], vec![KeyEntry::asc(Primitive::Int32(1))]);
        let column = vec![KeyEntry::asc(Primitive::ColumnId(10))];
        let mut batch = DocWriteBatch::new();
        let path = DocPath::new(row.clone(), column);
        batch.push(&path, &Value::new(ValueKind::PackedRow(body)));
        db.write(&batch, HybridTime::from_micros(1000), None, &[]).expect("write");
        let root = DocPath::new(row, vec![]);
        let err = db.get(&root, HybridTime::from_micros(2000), None).expect_err("refused");
        let key = "4880000001214b8a2380ff05543df729bc18804b"; // row 1, col(10), @1000 µs
        let said =
            format!("corruption: malformed packed row at byte 0: not at a row's root (key {key})");
        assert_eq!(err.to_string(), said);
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
