//! Repacking: a full compaction with history cutoff H folds a row's newest packed row at
//! or below H and the column entries at or below H into one packed row of the newest
//! schema version. A pure decision per row ([`plan_row`]), tested apart from RocksDB.
//!
//! **Why a plan.** YugabyteDB repacks in its own compaction feed (`PackedRowData`,
//! `docdb_compaction_context.cc`), which sees a row's packed row and the column entries
//! after it before it writes anything. A RocksDB compaction filter is shown one entry at a
//! time and may only keep, drop or change that entry, and the packed row (`DocKey#T`)
//! sorts before its columns. So just before a full compaction the tablet reads every row
//! and plans: the new value of the newest packed row at or below H, and the entries folded
//! into it, which the filter then drops. **Why it is safe**: the compaction is manual,
//! runs on the caller's thread and covers every file; the write path is the caller's
//! thread too, so no write lands between the plan and the compaction; every entry the
//! plan names is at or below H, and a read at R >= H sees, for each packed column, the
//! newest version at or below H unless a newer one above H (kept, untouched) hides it —
//! exactly what the new packed row holds, each folded column with its own value, TTL and
//! write time (`packed_row.rs`; YugabyteDB keeps the write time for `writetime()` only and
//! counts the TTL from the row's: the plant `yb-packed-column-ttl-from-row`).
//!
//! A row expired whole at H (its TTL and every column's ran out) goes instead, with what
//! it hid at or below H ([`expired_whole`]).
//!
//! The rules (docsim's, where they are stricter than YugabyteDB's):
//! - only when the newest version of the row's root at or below H is a packed row (a
//!   row tombstone there hides it, and GC drops them both);
//! - the liveness column `sys(0)` and collections stay as they are (they are not packed);
//! - a column's newest version at or below H newer than the packed row's (or of a column
//!   the packed row's schema version lacks) is folded in; a tombstone folds in as NULL,
//!   which hides what it hid; every older version of the column at or below H goes;
//! - a value that inherits its TTL cannot be folded into a row with a TTL of its own (in
//!   the packed row it would inherit the row's): then the row is left as it is;
//! - a column the newest schema no longer has (dropped) is not repacked, and its entries
//!   at or below H go (YugabyteDB repacks with the newest schema packing too);
//! - older packed rows at or below H go: the new one holds all they could show.

use crate::canary::{Plant, Plants};
use crate::decode_error::DecodeError;
use crate::encoding::{unpack, KeyEntry, Packings, Primitive, Slot, Ttl, Value, ValueKind};
use crate::hybrid_time::{DocHybridTime, HybridTime};
use crate::reader::DocEntry;
use std::collections::BTreeSet;

/// What repacking does to one row: the new value of its newest packed row at or below
/// the cutoff, and which of its entries the packed row now holds (they are dropped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowRepack {
    /// The index (in the row's entries) of the packed row that gets the new value.
    pub packed_row: usize,
    /// The new value, encoded; `None`: the row is expired whole at the cutoff, and its
    /// packed row goes with what is folded.
    pub value: Option<Vec<u8>>,
    /// Indexes of the entries folded in (or superseded): the compaction drops them.
    pub folded: BTreeSet<usize>,
}

/// Plan the repacking of one row. `entries` are all the row's stored entries in key order
/// (the root's versions newest first, then each column's). `None`: nothing to repack.
pub fn plan_row(
    entries: &[DocEntry],
    (cutoff_ht, table_ttl_ms): (HybridTime, Option<u64>),
    packings: &Packings,
    plants: Plants,
) -> Result<Option<RowRepack>, DecodeError> {
    let is_root = |e: &DocEntry| !e.table_key && e.subkeys.is_empty();
    let packed = |e: &DocEntry| matches!(e.value.kind, ValueKind::PackedRow(_));
    let Some(newest) = packings.newest() else { return Ok(None) };
    let Some(at) = entries.iter().position(|e| is_root(e) && e.doc_ht.ht <= cutoff_ht) else {
        return Ok(None);
    };
    let row = &entries[at];
    let ValueKind::PackedRow(body) = &row.value.kind else { return Ok(None) };
    let (version, old_slots) = unpack(body, 0, |v| packings.get(v))?;
    // The newest row tombstone older than the packed row: it hides what is older.
    let floor = entries[at..].iter().find(|e| is_root(e) && !packed(e)).map(|e| e.doc_ht);
    let above_floor = |e: &DocEntry| floor.is_none_or(|f| e.doc_ht > f);
    // An older packed row of a newer schema (a repack of it before this row was written)
    // cannot be folded into this one; it is hidden all the same unless it holds a column
    // written after this row, so the row can still go if it expired whole.
    let older = entries[at + 1..].iter().filter(|e| is_root(e) && packed(e) && above_floor(e));
    let Some(newer_schema) = older_rows(older, (version, row), packings)? else {
        return Ok(None);
    };
    let mut folded: BTreeSet<usize> = entries
        .iter()
        .enumerate()
        .filter(|(i, e)| *i != at && is_root(e) && packed(e) && e.doc_ht.ht <= cutoff_ht)
        .map(|(i, _)| i)
        .collect();
    let mut slots = Vec::with_capacity(newest.column_ids().len());
    // Columns whose visible version cannot be folded in: it stays beside the row, with
    // the index of that version.
    let mut unfolded = Vec::new();
    for &id in newest.column_ids() {
        let versions = column_versions(entries, id, cutoff_ht, plants);
        let visible = versions.iter().map(|&i| (i, &entries[i]));
        let visible = visible.take_while(|(_, e)| above_floor(e)).next();
        let in_row = old_slots.iter().find(|(c, _)| *c == id).map(|(_, s)| s.clone());
        match (new_slot(visible.map(|(_, e)| e), in_row, row), visible) {
            (Some(slot), _) => slots.push(slot),
            (None, Some((i, _))) => unfolded.push(i),
            (None, None) => unreachable!("only a visible version can fail to fold"),
        }
        folded.extend(versions);
    }
    folded.extend(dropped_columns(entries, packings, cutoff_ht));
    let keeps_expired = plants.contains(Plant::GcKeepsExpired); // planted: the old rule
    if !keeps_expired && expired_whole((row, &slots), cutoff_ht, table_ttl_ms) {
        // It goes, with the liveness versions it hid; the unfolded versions stay (they
        // hide its values of their columns).
        folded.retain(|i| !unfolded.contains(i));
        folded.insert(at);
        folded.extend(hidden_liveness(entries, row.doc_ht, cutoff_ht));
        return Ok(Some(RowRepack { packed_row: at, value: None, folded }));
    }
    if !unfolded.is_empty() || newer_schema {
        // It cannot be repacked; if it expired on its own, it can still go.
        let alone =
            !keeps_expired && expired_alone(entries, (at, &old_slots), cutoff_ht, table_ttl_ms);
        return Ok(alone.then(|| drop_hidden(entries, at, packings, cutoff_ht)));
    }
    let body = newest.body_of_slots(&slots);
    if folded.is_empty() && body == *body_of(row) {
        return Ok(None); // already packed as it would be
    }
    let value = Value { ttl: row.value.ttl, kind: ValueKind::PackedRow(body) };
    Ok(Some(RowRepack { packed_row: at, value: Some(value.encode()), folded }))
}

/// The indexes of the liveness column's versions at or below the cutoff older than a
/// packed row written at `row`: its expanded liveness (expired or not) hides them.
fn hidden_liveness(entries: &[DocEntry], row: DocHybridTime, cutoff_ht: HybridTime) -> Vec<usize> {
    let liveness = [KeyEntry::asc(Primitive::SystemColumnId(0))];
    let hidden = |e: &DocEntry| {
        !e.table_key && e.subkeys == liveness && e.doc_ht < row && e.doc_ht.ht <= cutoff_ht
    };
    entries.iter().enumerate().filter(|(_, e)| hidden(e)).map(|(i, _)| i).collect()
}

/// Whether the packed row `row`, repacked as `slots`, reads as nothing at the cutoff and
/// after: its liveness (the row's TTL, from its write time) and every column (NULL, or
/// expired through its own TTL, else the row's, from its own write time) ran out at
/// `cutoff_ht` — the reader's expansion of a packed row (`db/packed.rs`,
/// `PackedRead::expand`) with the TTL rules of `expiry.rs`. Nothing inherits a packed
/// row's TTL, and what it hid at or below the cutoff is folded with it, so it goes whole:
/// YugabyteDB drops an expired packed row too (`DocDBCompactionFeed::Feed`: the expiry
/// test comes before `PackedRowData::ProcessPackedRow`), though it judges the row's TTL
/// alone, not the columns' (`docs/findings.md`).
fn expired_whole(
    (row, slots): (&DocEntry, &[Slot]),
    cutoff_ht: HybridTime,
    table_ttl_ms: Option<u64>,
) -> bool {
    let ran_out = |ttl: Ttl, written: HybridTime| {
        let exp = match ttl {
            Ttl::Inherit => None,
            explicit => Some((written, explicit)),
        };
        crate::expiry::is_expired(exp, written, table_ttl_ms, cutoff_ht)
    };
    let row_ht = row.doc_ht.ht;
    // A column takes the row's TTL if it has none of its own, counted from its own
    // write time (a column folded in keeps its own).
    let column_ran_out = |slot: &Slot| match &slot.value {
        None => true,
        Some(v) => {
            let ttl = if v.ttl == Ttl::Inherit { row.value.ttl } else { v.ttl };
            ran_out(ttl, slot.written.map_or(row_ht, |w| w.ht))
        }
    };
    ran_out(row.value.ttl, row_ht) && slots.iter().all(column_ran_out)
}

/// The row `entries[at]` goes with what it hid (older versions of the row and of its
/// columns); the entries written after it stand on their own.
fn drop_hidden(
    entries: &[DocEntry],
    at: usize,
    packings: &Packings,
    cutoff: HybridTime,
) -> RowRepack {
    let row = &entries[at];
    let hidden = |(i, e): &(usize, &DocEntry)| {
        *i == at || (e.doc_ht < row.doc_ht && e.doc_ht.ht <= cutoff && !e.table_key)
    };
    let mut gone: BTreeSet<usize> =
        entries.iter().enumerate().filter(hidden).map(|(i, _)| i).collect();
    gone.extend(dropped_columns(entries, packings, cutoff));
    RowRepack { packed_row: at, value: None, folded: gone }
}

/// Whether the packed row `entries[at]` reads as nothing at the cutoff on its own (its
/// liveness and its own columns ran out: [`expired_whole`] of its own slots) and every
/// entry of the row written after it either carries a TTL of its own or was written after
/// the row ran out, so that none inherits the row's TTL (`expiry.rs`): dropping the row
/// then changes no read. Columns written after it that could not be folded in (a value
/// without a TTL under a row with one) would otherwise keep an expired row forever
/// (torture: seed 60755, three replicas, entities).
fn expired_alone(
    entries: &[DocEntry],
    (at, own): (usize, &[(u32, Slot)]),
    cutoff_ht: HybridTime,
    table_ttl_ms: Option<u64>,
) -> bool {
    let row = &entries[at];
    let own: Vec<Slot> = own.iter().map(|(_, slot)| slot.clone()).collect();
    if !expired_whole((row, &own), cutoff_ht, table_ttl_ms) {
        return false;
    }
    let exp = match row.value.ttl {
        Ttl::Inherit => None,
        explicit => Some((row.doc_ht.ht, explicit)),
    };
    let Some(last) = crate::expiry::expires_at(exp, row.doc_ht.ht, table_ttl_ms) else {
        return false; // never expires (not reached: it expired above)
    };
    let independent = |e: &DocEntry| e.value.ttl != Ttl::Inherit || e.doc_ht.ht > last;
    // A version a newer one of its path at or below the cutoff hides goes in this same
    // compaction: what it would inherit no longer matters (torture: seed 70738, three
    // replicas, packed rows: an UPDATE inside the row's TTL, overwritten after it).
    let superseded = |e: &DocEntry| {
        entries.iter().any(|n| {
            n.table_key == e.table_key
                && n.subkeys == e.subkeys
                && n.doc_ht > e.doc_ht
                && n.doc_ht.ht <= cutoff_ht
        })
    };
    entries.iter().filter(|e| e.doc_ht > row.doc_ht && !superseded(e)).all(independent)
}

/// A column's slot in the new packed row: its `visible` version at or below the cutoff if
/// newer than its slot `in_row` (folded in; `None` if it cannot be), else that slot.
fn new_slot(visible: Option<&DocEntry>, in_row: Option<Slot>, row: &DocEntry) -> Option<Slot> {
    match (visible, in_row) {
        (Some(e), None) => fold(e, row.value.ttl),
        (Some(e), Some(s)) if e.doc_ht > s.written.unwrap_or(row.doc_ht) => fold(e, row.value.ttl),
        (_, Some(slot)) => Some(slot),
        (None, None) => Some(Slot::of(None)),
    }
}

fn body_of(row: &DocEntry) -> &Vec<u8> {
    match &row.value.kind {
        ValueKind::PackedRow(body) => body,
        _ => unreachable!("a packed row"),
    }
}

/// Whether an `older` packed row is of a newer schema than the newest one (`row`, of
/// schema `version`); `None` when one holds a column written after `row` (the row is left
/// alone).
fn older_rows<'a>(
    older: impl Iterator<Item = &'a DocEntry>,
    (version, row): (u32, &DocEntry),
    packings: &Packings,
) -> Result<Option<bool>, DecodeError> {
    let holds = older.map(|e| holds_all_of(e, (version, row), packings));
    let holds = holds.collect::<Result<Vec<Holds>, DecodeError>>()?;
    Ok((!holds.contains(&Holds::Later)).then(|| holds.contains(&Holds::NewerSchema)))
}

/// What the newest packed row at or below the cutoff holds of an older packed row.
#[derive(Debug, PartialEq, Eq)]
enum Holds {
    /// Everything it could show: it can be folded in.
    All,
    /// It is of a newer schema (a repack of it before the newest row was written): it
    /// cannot be folded in, but the newest row hides all of it.
    NewerSchema,
    /// A column folded into it later than the newest row was written, which the newest
    /// row does not hide (writes out of time order, a script's): the row is left alone.
    Later,
}

/// What the newest packed row (`row`, of schema `version`) holds of the older packed row
/// `older` ([`Holds`]).
fn holds_all_of(
    older: &DocEntry,
    (version, row): (u32, &DocEntry),
    packings: &Packings,
) -> Result<Holds, DecodeError> {
    let (older_version, slots) = unpack(body_of(older), 0, |v| packings.get(v))?;
    let later = |s: &Slot| s.written.is_some_and(|w| w > row.doc_ht);
    Ok(match (slots.iter().any(|(_, s)| later(s)), older_version <= version) {
        (true, _) => Holds::Later,
        (false, false) => Holds::NewerSchema,
        (false, true) => Holds::All,
    })
}

/// The indexes of column `id`'s versions at or below the cutoff, newest first (planted:
/// also those above it).
fn column_versions(
    entries: &[DocEntry],
    id: u32,
    cutoff_ht: HybridTime,
    plants: Plants,
) -> Vec<usize> {
    let path = [KeyEntry::asc(Primitive::ColumnId(id as i32))];
    let every = plants.contains(Plant::RepackDropsNewerUpdate);
    entries
        .iter()
        .enumerate()
        .filter(|(_, e)| !e.table_key && e.subkeys == path)
        .filter(|(_, e)| every || e.doc_ht.ht <= cutoff_ht)
        .map(|(i, _)| i)
        .collect()
}

/// The slot a column entry folds into, with its own write time and TTL; `None` if it
/// cannot be stated in a packed row whose TTL is `row_ttl` (a value inheriting its TTL).
fn fold(entry: &DocEntry, row_ttl: Ttl) -> Option<Slot> {
    match &entry.value.kind {
        ValueKind::Tombstone => Some(Slot::of(None)),
        ValueKind::Primitive(_) if entry.value.ttl == Ttl::Inherit && row_ttl != Ttl::Inherit => {
            None
        }
        ValueKind::Primitive(_) => {
            Some(Slot { value: Some(entry.value.clone()), written: Some(entry.doc_ht) })
        }
        _ => None, // an object marker or a record: not a packed column's version
    }
}

/// The indexes of entries at or below the cutoff of columns some schema version packed
/// and the newest does not: dropped columns.
fn dropped_columns(entries: &[DocEntry], packings: &Packings, cutoff_ht: HybridTime) -> Vec<usize> {
    let newest = packings.newest().map(|p| p.column_ids().to_vec()).unwrap_or_default();
    let dropped = |e: &DocEntry| match e.subkeys.first().map(|k| &k.value) {
        Some(&Primitive::ColumnId(id)) => {
            u32::try_from(id).is_ok_and(|id| !newest.contains(&id) && packings.packs_ever(id))
        }
        _ => false,
    };
    entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.doc_ht.ht <= cutoff_ht && !e.table_key && dropped(e))
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests;
