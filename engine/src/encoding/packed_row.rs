//! YugabyteDB's packed row, value format V1 (the one YCQL uses): all of a row's non-key
//! columns in one value at the bare `DocKey#HT`.
//!
//! ```text
//! packed row := [row control fields]  'z'  schema_version:unsigned-varint
//!               end_offset:u32le × columns   column bytes × columns
//! column     := empty (NULL)  |  an encoded value: [control fields] type-byte payload
//! ```
//! From `RowPackerV1::Init` and `ColumnPackerV1::UpdateHeader` (`dockv/packed_row.cc`):
//! each offset is where its column's bytes end, counted from the start of the column
//! bytes. A YCQL table treats every column as variable-length (`IsVarlenColumn`: "CQL
//! columns could have individual TTL"), so every packed column has an offset, in schema
//! order; a column is NULL when its slot is empty or starts with a tombstone
//! (`PackedValueV1::IsNull`). Which columns a schema version packs, in which order, is its
//! [`SchemaPacking`] (`dockv/schema_packing.cc`: the non-key columns). Row control fields
//! here are the TTL only (YugabyteDB also allows a user timestamp).
//!
//! A stored packed row is a [`ValueKind::PackedRow`] holding the bytes after the `z`;
//! [`unpack`] decodes them with the [`Packings`] of the row's table.
//!
//! A column that repacking folded in from a later column entry keeps that entry's own
//! write time, so its TTL counts from where it did: a control field `u` before its value,
//! the entry's hybrid time (8 bytes) and write id (4 bytes), big-endian. docsim keeps the
//! whole version, logical part and write id included (a format of docsim's own, so a
//! folded column reads exactly as before). YugabyteDB keeps less: with `keep_write_time`
//! (YCQL tables) the column's physical write time goes into its user-timestamp field
//! (`PackedRowData::ProcessColumn`, `docdb_compaction_context.cc`), which only
//! `writetime()` reads; its reader counts the column's TTL from the packed row's write
//! time (`GetHelper::DoDecodePackedColumn`, `doc_reader.cc`), so after YugabyteDB's
//! repacking such a column expires early (a finding, `docs/findings.md`; the plant
//! `yb-packed-column-ttl-from-row`).

use super::{tag, value, varint, Ttl, Value, ValueKind};
use crate::decode_error::DecodeError;
use crate::hybrid_time::{DocHybridTime, HybridTime};
use std::collections::BTreeMap;

/// Value type byte of a V1 packed row (`ValueEntryType::kPackedRowV1`).
pub const PACKED_ROW_V1: u8 = tag::VALUE_PACKED_ROW_V1;

/// The packing of every schema version of one table a packed row may carry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Packings(BTreeMap<u32, SchemaPacking>);

impl Packings {
    /// Add (or replace) the packing of its schema version.
    pub fn insert(&mut self, packing: SchemaPacking) {
        self.0.insert(packing.version, packing);
    }

    /// The packing of schema `version`.
    pub fn get(&self, version: u32) -> Option<&SchemaPacking> {
        self.0.get(&version)
    }

    /// The packing of the newest schema version.
    pub fn newest(&self) -> Option<&SchemaPacking> {
        self.0.values().next_back()
    }

    /// Whether some schema version packs column `id`.
    pub fn packs_ever(&self, id: u32) -> bool {
        self.0.values().any(|p| p.column_ids.contains(&id))
    }

    /// Whether no version is known (a table without packed rows, or the document tablet).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The columns one schema version packs, by column id, in the order they are stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaPacking {
    version: u32,
    column_ids: Vec<u32>,
}

/// One packed column: its value (`None`: NULL) and, if repacking folded it in from a
/// later entry, that entry's version (else it was written with the row).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    pub value: Option<Value>,
    pub written: Option<DocHybridTime>,
}

impl Slot {
    /// A column written with its row.
    pub fn of(value: Option<Value>) -> Slot {
        Slot { value, written: None }
    }
}

/// A decoded packed row: its TTL, schema version and each packed column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedRow {
    pub ttl: Ttl,
    pub version: u32,
    pub columns: PackedColumns,
}

impl SchemaPacking {
    /// The packing of schema `version`: its non-key columns' ids in schema order.
    pub fn new(version: u32, column_ids: Vec<u32>) -> Result<SchemaPacking, String> {
        let mut sorted = column_ids.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("schema version {version} packs column {} twice", w[0]));
        }
        Ok(SchemaPacking { version, column_ids })
    }

    pub fn version(&self) -> u32 {
        self.version
    }

    pub fn column_ids(&self) -> &[u32] {
        &self.column_ids
    }

    /// Pack one value per column (`None`: NULL), with the row's TTL: the stored value.
    pub fn pack(&self, ttl: Ttl, columns: &[Option<Value>]) -> Vec<u8> {
        Value { ttl, kind: ValueKind::PackedRow(self.body(columns)) }.encode()
    }

    /// What follows the `z` of a packed row of one value per column (`None`: NULL): the
    /// schema version, an end offset per column, the columns' bytes.
    pub fn body(&self, columns: &[Option<Value>]) -> Vec<u8> {
        let slots: Vec<Slot> = columns.iter().cloned().map(Slot::of).collect();
        self.body_of_slots(&slots)
    }

    /// [`SchemaPacking::body`] of slots, each column's own write time where it has one.
    pub fn body_of_slots(&self, slots: &[Slot]) -> Vec<u8> {
        assert_eq!(slots.len(), self.column_ids.len(), "one value per packed column");
        // One buffer: the version, room for the offsets, then each slot's bytes, its end
        // offset (from the data's start) filled in once it is written.
        let mut out = Vec::with_capacity(5 + 4 * slots.len() + 16 * slots.len());
        varint::encode_unsigned(u64::from(self.version), &mut out);
        let offsets_at = out.len();
        out.resize(offsets_at + 4 * slots.len(), 0);
        let data_at = out.len();
        for (i, slot) in slots.iter().enumerate() {
            encode_slot(slot, &mut out);
            let end = (out.len() - data_at) as u32;
            out[offsets_at + 4 * i..][..4].copy_from_slice(&end.to_le_bytes());
        }
        out
    }

    /// A packed row's columns as the columns of a RocksDB entity (the entity layout,
    /// `db/packed.rs`): the default column holds the row's TTL and schema version, then
    /// one column per packed column, named by its id (4 bytes, big-endian), holding its
    /// slot's bytes (empty: NULL).
    pub fn entity_columns(&self, ttl: Ttl, slots: &[Slot]) -> Vec<(Vec<u8>, Vec<u8>)> {
        assert_eq!(slots.len(), self.column_ids.len(), "one slot per packed column");
        let header = Value { ttl, kind: ValueKind::EntityRow(self.version) }.encode();
        let mut columns = vec![(Vec::new(), header)];
        for (id, slot) in self.column_ids.iter().zip(slots) {
            let mut bytes = Vec::new();
            encode_slot(slot, &mut bytes);
            columns.push((id.to_be_bytes().to_vec(), bytes));
        }
        columns
    }

    /// The slots of a packed row stored as an entity (every column but the default one),
    /// in this packing's order. A column of the packing missing is corruption.
    pub fn slots_of_entity(
        &self,
        columns: &[(Vec<u8>, Vec<u8>)],
    ) -> Result<PackedColumns, DecodeError> {
        self.column_ids
            .iter()
            .map(|&id| {
                let name = id.to_be_bytes();
                let found = columns.iter().find(|(n, _)| *n == name).ok_or_else(|| {
                    DecodeError::new("entity row", 0, format!("no column {id} in the entity"))
                })?;
                Ok((id, decode_column(&found.1, 0)?))
            })
            .collect()
    }
}

/// The row TTL and schema version of a packed row's value.
pub fn packed_header(bytes: &[u8]) -> Result<(Ttl, u32), DecodeError> {
    let err = |at: usize, reason: &str| DecodeError::new("packed row", at, reason);
    let (ttl_only, ttl, pos) = value::decode_control_fields(bytes)?;
    if ttl_only {
        return Err(err(0, "merge flags on a packed row"));
    }
    if bytes.get(pos) != Some(&PACKED_ROW_V1) {
        return Err(err(pos, "not a V1 packed row (no 'z')"));
    }
    let (version, _) = varint::decode_unsigned(&bytes[pos + 1..], pos + 1)?;
    let version =
        u32::try_from(version).map_err(|_| err(pos + 1, "schema version over 32 bits"))?;
    Ok((ttl, version))
}

/// Decode a packed row; `packing_of` gives the packing of its schema version.
pub fn decode_packed_row<'a>(
    bytes: &[u8],
    packing_of: impl Fn(u32) -> Option<&'a SchemaPacking>,
) -> Result<PackedRow, DecodeError> {
    packed_header(bytes)?;
    let Value { ttl, kind: ValueKind::PackedRow(body) } = Value::decode(bytes)? else {
        unreachable!("a packed header was found")
    };
    let body_at = bytes.len() - body.len();
    let (version, columns) = unpack(&body, body_at, packing_of)?;
    Ok(PackedRow { ttl, version, columns })
}

/// Each packed column's id and slot, in packing order.
pub type PackedColumns = Vec<(u32, Slot)>;

/// Decode the body of a packed row (what follows its `z`, found at offset `at` of the
/// value, for error messages) into its schema version and each packed column's id and
/// value (`None`: NULL).
pub fn unpack<'a>(
    body: &[u8],
    at: usize,
    packing_of: impl Fn(u32) -> Option<&'a SchemaPacking>,
) -> Result<(u32, PackedColumns), DecodeError> {
    let err = |pos: usize, reason: String| DecodeError::new("packed row", at + pos, reason);
    let (version, len) = varint::decode_unsigned(body, at)?;
    let version =
        u32::try_from(version).map_err(|_| err(0, "schema version over 32 bits".into()))?;
    let packing = packing_of(version)
        .ok_or_else(|| err(0, format!("no packing for schema version {version}")))?;
    let n = packing.column_ids.len();
    let data_at = len + 4 * n;
    let data = body.get(data_at..).ok_or_else(|| err(body.len(), "offsets cut short".into()))?;
    let mut columns = Vec::with_capacity(n);
    let mut start = 0;
    for (i, &id) in packing.column_ids.iter().enumerate() {
        let pos = len + 4 * i;
        let end = u32::from_le_bytes(body[pos..pos + 4].try_into().expect("4 bytes")) as usize;
        if end < start || end > data.len() {
            let reason = format!("column {id} ends at {end}, outside {start}..={}", data.len());
            return Err(err(pos, reason));
        }
        columns.push((id, decode_column(&data[start..end], at + data_at + start)?));
        start = end;
    }
    if start != data.len() {
        let reason = format!("{} bytes after the last column", data.len() - start);
        return Err(err(data_at + start, reason));
    }
    Ok((version, columns))
}

/// Append one column's slot: nothing for NULL, else its value, after its own write time
/// if it has one.
fn encode_slot(slot: &Slot, out: &mut Vec<u8>) {
    if let Some(v) = &slot.value {
        if let Some(written) = slot.written {
            out.push(tag::VALUE_WRITE_TIME);
            out.extend_from_slice(&written.ht.raw().to_be_bytes());
            out.extend_from_slice(&written.write_id.to_be_bytes());
        }
        v.encode_to(out);
    }
}

/// One column's slot: empty or a tombstone is NULL; a value may carry its own write time.
fn decode_column(slot: &[u8], at: usize) -> Result<Slot, DecodeError> {
    let err = |pos: usize, reason: &str| DecodeError::new("packed column", at + pos, reason);
    if slot.is_empty() || slot[0] == tag::VALUE_TOMBSTONE {
        return Ok(Slot::of(None));
    }
    let (written, rest, pos) = match slot[0] {
        tag::VALUE_WRITE_TIME => {
            let time = slot.get(1..13).ok_or_else(|| err(1, "write time cut short"))?;
            let ht = u64::from_be_bytes(time[..8].try_into().expect("8 bytes"));
            let write_id = u32::from_be_bytes(time[8..].try_into().expect("4 bytes"));
            let dht = DocHybridTime::new(HybridTime::from_raw(ht), write_id);
            (Some(dht), &slot[13..], 13)
        }
        _ => (None, slot, 0),
    };
    let v = Value::decode(rest).map_err(|e| err(pos + e.offset, &e.reason))?;
    match v.kind {
        ValueKind::Primitive(_) => Ok(Slot { value: Some(v), written }),
        _ => Err(err(pos, "not a primitive value")),
    }
}

#[cfg(test)]
mod tests;
