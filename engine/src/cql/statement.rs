//! Executing INSERT, UPDATE, DELETE and SELECT statements on a table's tablet.

use super::ast::{Assignment, CmpOp, Condition, DeleteTarget, Literal, Statement};
use super::json::parse_json;
use super::schema::{ColumnKind, CqlTable, CqlType};
use crate::db::{compare_components, DocDb, RangeCondition, Window};
use crate::db::{DocRead, PackedCells};
use crate::doc_write::{expand, DocWrite, WriteKind};
use crate::document::Document;
use crate::encoding::{DocKey, DocPath, KeyEntry, Primitive, Slot, Ttl, Value, ValueKind};
use crate::error::{errinput, Error, Result};
use crate::hybrid_time::HybridTime;
use crate::reader::read_subdocument;
use smallvec::{smallvec, SmallVec};
use std::collections::BTreeMap;

/// One cell of a result row.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// No value.
    Null,
    /// A primitive value.
    Value(Primitive),
    /// A map, in key order.
    Map(Vec<(Primitive, Primitive)>),
    /// A set, in order.
    Set(Vec<Primitive>),
    /// A list, in order.
    List(Vec<Primitive>),
    /// A jsonb document.
    Json(Document),
}

impl std::fmt::Display for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |items: Vec<String>| format!("[{}]", items.join(", "));
        match self {
            Cell::Null => f.write_str("null"),
            Cell::Value(p) => write!(f, "{p}"),
            Cell::Map(entries) => {
                let items: Vec<String> = entries.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                write!(f, "{{{}}}", items.join(", "))
            }
            Cell::Set(items) | Cell::List(items) => {
                f.write_str(&list(items.iter().map(ToString::to_string).collect()))
            }
            Cell::Json(doc) => write!(f, "{doc}"),
        }
    }
}

/// A result row: selected column names and their cells.
pub type Row = Vec<(String, Cell)>;

/// What a statement returned.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// A write.
    Written,
    /// The rows of a SELECT, in clustering order.
    Rows(Vec<Row>),
}

/// SELECT output as docscript prints it: one `(name: value, ...)` line a row, then
/// `(<n> rows)`.
pub fn format_rows(rows: &[Row]) -> Vec<String> {
    let mut lines: Vec<String> = rows
        .iter()
        .map(|row| {
            let cells: Vec<String> =
                row.iter().map(|(name, cell)| format!("{name}: {cell}")).collect();
            format!("({})", cells.join(", "))
        })
        .collect();
    lines.push(format!("({} rows)", rows.len()));
    lines
}

/// The entries a write statement (INSERT, UPDATE, DELETE) writes at `ht`, and the list
/// index after the last one it used. CQL writes are blind: they read nothing, so the
/// leader's batch is the same whatever the tablet holds. List elements take indexes from
/// `list_floor` on (the tablet's, `tablet.rs`).
pub(crate) fn write_entries(
    table: &CqlTable,
    list_floor: i64,
    statement: &Statement,
) -> Result<(Vec<(DocPath, Value)>, i64)> {
    let lists = ListIndexes(std::cell::Cell::new(list_floor));
    let entries = match statement {
        Statement::Insert { columns, values, ttl_s, .. } => {
            let stamp = Stamp { ttl: ttl(*ttl_s), lists: &lists };
            insert(table, columns, values, stamp)?
        }
        Statement::Update { ttl_s, assignments, key, .. } => {
            let doc = full_key(table, key)?;
            let mut out = Vec::new();
            let stamp = Stamp { ttl: ttl(*ttl_s), lists: &lists };
            for assignment in assignments {
                apply_assign(table, &doc, assignment, stamp, &mut out)?;
            }
            out
        }
        Statement::Delete { targets, key, .. } => delete(table, targets, key)?,
        Statement::Select { .. } | Statement::Alter { .. } => {
            unreachable!("a SELECT reads, an ALTER TABLE changes the tablet's metadata")
        }
    };
    Ok((entries, lists.0.get()))
}

/// The rows a SELECT reads at `ht` from the table's documents in `db`.
pub(crate) fn read_select(
    table: &CqlTable,
    db: &DocDb,
    ht: HybridTime,
    statement: &Statement,
) -> Result<Vec<Row>> {
    let Statement::Select { columns, conditions, .. } = statement else {
        unreachable!("only a SELECT reads")
    };
    select(table, db, columns.as_deref(), conditions, ht)
}

/// A page of the rows a SELECT reads at `ht`: at most `paging.size` rows after the row
/// `paging.after`, and the last row's key when the page is full (`None`: the read is
/// done). The scan reads documents in key order from just past `after` and stops once the
/// page is full, so a page costs what its rows cost, not the table.
pub(crate) fn read_page(
    table: &CqlTable,
    db: &DocDb,
    ht: HybridTime,
    statement: &Statement,
    paging: &Paging,
) -> Result<(Vec<Row>, Option<DocKey>)> {
    let Statement::Select { columns, conditions, .. } = statement else {
        unreachable!("only a SELECT reads")
    };
    let projected = projection(table, columns.as_deref())?;
    let (hash, ranges) = selection(table, conditions)?;
    let mut from = paging.after.as_ref().map(|key| key.encode());
    let mut page: Vec<(DocKey, Row)> = Vec::new();
    while page.len() < paging.size {
        let want = paging.size - page.len();
        let window = Window { from: from.as_deref(), after: true, limit: Some(want) };
        let rows = read_rows(table, db, hash.as_ref(), (ht, &ranges), window)?;
        let scanned = rows.len();
        from = rows.last().map(|(doc, _)| doc.encode()).or(from);
        for (doc, row) in rows {
            let Some(row) = row else { continue };
            if meets(&ranges, &doc) && row_exists(table, &row) {
                let projected_row = project_row(table, &projected, &doc, &row);
                page.push((doc, projected_row));
            }
        }
        if scanned < want {
            let rows = page.into_iter().map(|(_, row)| row).collect();
            return Ok((rows, None));
        }
    }
    let last = page.last().map(|(doc, _)| doc.clone());
    Ok((page.into_iter().map(|(_, row)| row).collect(), last))
}

/// Where a page of a SELECT starts and how many rows it holds: YugabyteDB's paging state
/// (`QLPagingStatePB`: the next row's key and the read time; the read time travels
/// beside it here, as the read's hybrid time).
#[derive(Clone, Debug, PartialEq)]
pub struct Paging {
    /// At most this many rows (at least 1).
    pub size: usize,
    /// The rows after this row's key (`None`: from the first).
    pub after: Option<DocKey>,
}

/// The partition hash of the rows a statement writes or reads: the hash of its hash key's
/// values (YugabyteDB's client computes it to pick the tablet: `YBPartition`), or `None`
/// for a statement of the whole table (a SELECT without the hash key, an ALTER TABLE). A
/// statement whose hash key is missing or does not fit its types hashes as `Some(0)`: its
/// tablet refuses it as any would.
pub fn partition_hash(table: &CqlTable, statement: &Statement) -> Option<u16> {
    let values: Result<Vec<Primitive>> = match statement {
        Statement::Alter { .. } => return None,
        Statement::Select { conditions, .. } => {
            let eq = |col: &super::Column| {
                conditions.iter().any(|c| c.column == col.name && c.op == CmpOp::Eq)
            };
            if !table.hash_columns().any(eq) {
                return None;
            }
            hash_values(table, conditions)
        }
        Statement::Update { key, .. } | Statement::Delete { key, .. } => hash_values(table, key),
        Statement::Insert { columns, values, .. } => {
            let conditions: Vec<Condition> = columns
                .iter()
                .zip(values)
                .map(|(c, v)| Condition { column: c.clone(), op: CmpOp::Eq, value: v.clone() })
                .collect();
            hash_values(table, &conditions)
        }
    };
    Some(values.map_or(0, |v| crate::encoding::yb_hash::hash_values(&v)))
}

/// The hash key's values as `=` conditions give them, in key order.
fn hash_values(table: &CqlTable, conditions: &[Condition]) -> Result<Vec<Primitive>> {
    let value = |col: &super::Column| match conditions.iter().find(|c| c.column == col.name) {
        Some(c) if c.op == CmpOp::Eq => primitive(&col.ty, &c.value, &col.name),
        _ => errinput!("missing key column {}", col.name),
    };
    table.hash_columns().map(value).collect()
}

/// The list indexes one statement hands out, in order, from the tablet's floor on.
struct ListIndexes(std::cell::Cell<i64>);

impl ListIndexes {
    fn take(&self) -> i64 {
        let index = self.0.get();
        self.0.set(index.saturating_add(1));
        index
    }
}

/// A literal as error messages show it.
fn shown(lit: &Literal) -> String {
    match lit {
        Literal::Str(s) => format!("'{s}'"),
        Literal::Braces(_) => "{...}".into(),
        Literal::List(_) => "[...]".into(),
        other => other.to_string(),
    }
}

/// Convert a scalar literal to a primitive of type `ty`.
fn primitive(ty: &CqlType, lit: &Literal, what: &str) -> Result<Primitive> {
    let mismatch =
        || errinput!("type mismatch for {what}: expected {}, got {}", ty.name(), shown(lit));
    let int = |n: &str| n.parse::<i64>().ok();
    Ok(match (ty, lit) {
        (CqlType::Text, Literal::Str(s)) => Primitive::String(s.clone()),
        (CqlType::Int, Literal::Num(n)) => match int(n).and_then(|v| i32::try_from(v).ok()) {
            Some(v) => Primitive::Int32(v),
            None => return mismatch(),
        },
        (CqlType::Bigint, Literal::Num(n)) => match int(n) {
            Some(v) => Primitive::Int64(v),
            None => return mismatch(),
        },
        (CqlType::Double, Literal::Num(n)) => match n.parse::<f64>() {
            Ok(v) => Primitive::Double(v),
            Err(_) => return mismatch(),
        },
        (CqlType::Boolean, Literal::Bool(b)) => Primitive::Bool(*b),
        // CQL timestamps are milliseconds since the epoch; stored as microseconds.
        (CqlType::Timestamp, Literal::Num(n)) => match int(n).and_then(|ms| ms.checked_mul(1000)) {
            Some(us) => Primitive::Timestamp(us),
            None => return mismatch(),
        },
        (_, Literal::Null) => return errinput!("{what} cannot be null"),
        _ => return mismatch(),
    })
}

/// `USING TTL n` (seconds) as a stored TTL: 0 means never expires.
fn ttl(ttl_s: Option<u64>) -> Ttl {
    ttl_s.map_or(Ttl::Inherit, |secs| Ttl::from_ms(secs.saturating_mul(1000)))
}

fn column<'t>(table: &'t CqlTable, name: &str) -> Result<&'t super::Column> {
    Ok(&table.columns[position(table, name)?])
}

fn column_path(doc: &DocKey, id: i32) -> DocPath {
    DocPath::new(doc.clone(), vec![KeyEntry::asc(Primitive::ColumnId(id))])
}

/// Where a value goes: the column's (or element's) type, its path, its name for messages.
struct Target<'a> {
    ty: &'a CqlType,
    path: DocPath,
    name: &'a str,
}

/// The statement's `USING TTL`, and the list indexes it may use.
#[derive(Clone, Copy)]
struct Stamp<'a> {
    ttl: Ttl,
    lists: &'a ListIndexes,
}

type Entries = Vec<(DocPath, Value)>;

/// Entries writing `lit` as the whole value of a column (overwrite).
fn write_whole(t: Target<'_>, lit: &Literal, s: Stamp, out: &mut Entries) -> Result<()> {
    if *lit == Literal::Null {
        out.push((t.path, Value::tombstone()));
        return Ok(());
    }
    if !t.ty.is_nested() {
        let p = primitive(t.ty, lit, t.name)?;
        out.push((t.path, Value { ttl: s.ttl, kind: ValueKind::Primitive(p) }));
        return Ok(());
    }
    // A collection or jsonb value (possibly a scalar jsonb) written whole: overwrite.
    let kind = WriteKind::Set(nested_document(t.ty, lit, s.lists, t.name)?);
    out.extend(expand(&DocWrite { path: t.path, kind, ttl_us: None }, s.ttl));
    Ok(())
}

/// Entries adding elements to a collection (`m = m + {...}`, `l = l + [...]`, `||`).
fn write_elements(t: Target<'_>, lit: &Literal, s: Stamp, out: &mut Entries) -> Result<()> {
    match nested_document(t.ty, lit, s.lists, t.name)? {
        doc @ Document::Object(_) => {
            let write = DocWrite { path: t.path, kind: WriteKind::Extend(doc), ttl_us: None };
            out.extend(expand(&write, s.ttl));
            Ok(())
        }
        Document::Primitive(_) => errinput!("{}: can only add an object or collection", t.name),
    }
}

/// A collection or jsonb literal as a document (keys in stored order).
fn nested_document(
    ty: &CqlType,
    lit: &Literal,
    lists: &ListIndexes,
    what: &str,
) -> Result<Document> {
    let mut map = BTreeMap::new();
    match (ty, lit) {
        (CqlType::Map(kt, vt), Literal::Braces(items)) => {
            for (k, v) in items {
                let Some(v) = v else { return errinput!("{what}: a map entry needs `key: value`") };
                let value = Document::Primitive(primitive(vt, v, what)?);
                map.insert(KeyEntry::asc(primitive(kt, k, what)?), value);
            }
        }
        (CqlType::Set(et), Literal::Braces(items)) => {
            for (e, v) in items {
                if v.is_some() {
                    return errinput!("{what}: a set literal has no `:`");
                }
                map.insert(
                    KeyEntry::asc(primitive(et, e, what)?),
                    Document::Primitive(Primitive::Null),
                );
            }
        }
        (CqlType::List(et), Literal::List(items)) => {
            if items.len() >= 1000 {
                return errinput!("{what}: at most 999 list elements per statement");
            }
            for e in items {
                let index = KeyEntry::asc(Primitive::Int64(lists.take()));
                map.insert(index, Document::Primitive(primitive(et, e, what)?));
            }
        }
        (CqlType::Jsonb, Literal::Str(text)) => {
            return parse_json(text).map_err(|e| Error::InvalidRequest(format!("{what}: {e}")));
        }
        _ => {
            return errinput!(
                "type mismatch for {what}: expected {}, got {}",
                ty.name(),
                shown(lit)
            )
        }
    }
    Ok(Document::Object(map))
}

fn insert(table: &CqlTable, names: &[String], lits: &[Literal], stamp: Stamp) -> Result<Entries> {
    if names.len() != lits.len() {
        return errinput!("INSERT names {} columns but gives {} values", names.len(), lits.len());
    }
    // The statement's literal for each column of the table, by the column's position, and
    // the key columns' values.
    // The first error in the statement's order, unless a column is named twice: that is
    // the error to report. It is looked for only once something is wrong (a repeated
    // column is itself wrong where it repeats).
    let twice = || Error::InvalidRequest("INSERT names a column twice".into());
    let or_twice = |e| match (1..names.len()).any(|i| names[..i].contains(&names[i])) {
        true => twice(),
        false => e,
    };
    let mut given: ByColumn<Option<&Literal>> = smallvec![None; table.columns.len()];
    let mut key: ByColumn<Option<Primitive>> = smallvec![None; table.columns.len()];
    for (name, lit) in names.iter().zip(lits) {
        let unused = |at: usize| if given[at].is_none() { Ok(at) } else { Err(twice()) };
        let at = position(table, name).and_then(unused).map_err(or_twice)?;
        given[at] = Some(lit);
        let col = &table.columns[at];
        if !matches!(col.kind, ColumnKind::Regular(_)) {
            key[at] = Some(primitive(&col.ty, lit, name).map_err(or_twice)?);
        }
    }
    let doc = doc_key_of(table, &mut key)?;
    let regular = || {
        let columns = table.columns.iter().zip(&given);
        columns.filter(|(c, _)| matches!(c.kind, ColumnKind::Regular(_)))
    };
    // YugabyteDB packs an INSERT that names exactly every non-key column
    // (`SchemaPacking::CouldPack`, `dockv/schema_packing.cc`; `QLWriteOperation::Apply`,
    // `docdb/cql_operation.cc`), and writes the liveness column only when it does not.
    let packed = table.packed_rows && regular().all(|(_, lit)| lit.is_some());
    let first = if packed {
        crate::probe::hit("write.packed_row");
        packed_row(table, &given, stamp.ttl)?
    } else {
        Value { ttl: stamp.ttl, kind: ValueKind::Primitive(Primitive::Null) }
    };
    let mut columns = Vec::new();
    for (col, lit) in regular() {
        let (ColumnKind::Regular(id), Some(lit)) = (col.kind, lit) else { continue };
        if packed && !col.ty.is_nested() {
            continue; // in the packed row
        }
        let target = Target { ty: &col.ty, path: column_path(&doc, id), name: &col.name };
        write_whole(target, lit, stamp, &mut columns)?;
    }
    // The packed row, or the liveness column, comes first: the document key moves there.
    let first_path = match packed {
        true => DocPath::new(doc, vec![]),
        false => DocPath::new(doc, vec![KeyEntry::asc(Primitive::SystemColumnId(0))]),
    };
    let mut out = Vec::with_capacity(1 + columns.len());
    out.push((first_path, first));
    out.append(&mut columns);
    Ok(out)
}

/// Values by column position (tables have few columns: they stay on the stack).
type ByColumn<T> = SmallVec<[T; 16]>;

/// The position of column `name` in the table.
fn position(table: &CqlTable, name: &str) -> Result<usize> {
    match table.columns.iter().position(|c| c.name == name) {
        Some(at) => Ok(at),
        None => errinput!("unknown column {name} in table {}", table.name),
    }
}

/// The document key of the key columns' values, given by column position (taken).
fn doc_key_of(table: &CqlTable, key: &mut [Option<Primitive>]) -> Result<DocKey> {
    let mut take = |name: &str| match key[position(table, name)?].take() {
        Some(value) => Ok(value),
        None => errinput!("missing key column {name}"),
    };
    let mut doc = DocKey::default();
    for name in &table.hash_key {
        doc.hashed.push(KeyEntry::asc(take(name)?));
    }
    for col in table.range_columns() {
        let ColumnKind::Range(order) = col.kind else { unreachable!("range column") };
        doc.range.push(KeyEntry { value: take(&col.name)?, order });
    }
    Ok(doc)
}

/// The packed row of an INSERT naming every non-key column (`given`: each column's
/// literal, by position): each packed column's value (`None` for null), in the current
/// schema version's order, with the statement's TTL.
fn packed_row(table: &CqlTable, given: &[Option<&Literal>], ttl: Ttl) -> Result<Value> {
    let packing = table.packing();
    let mut slots = Vec::with_capacity(packing.column_ids().len());
    for &id in packing.column_ids() {
        let at = table.columns.iter().position(|c| c.kind == ColumnKind::Regular(id as i32));
        let at = at.expect("a packed column is a column");
        let (col, lit) = (&table.columns[at], given[at].expect("every column is given"));
        slots.push(Slot::of(match lit {
            Literal::Null => None,
            lit => Some(Value::new(ValueKind::Primitive(primitive(&col.ty, lit, &col.name)?))),
        }));
    }
    Ok(Value { ttl, kind: ValueKind::PackedRow(packing.body_of_slots(&slots)) })
}

fn regular(table: &CqlTable, name: &str) -> Result<(i32, CqlType)> {
    let col = column(table, name)?;
    match col.kind {
        ColumnKind::Regular(id) => Ok((id, col.ty.clone())),
        _ => errinput!("cannot assign key column {name}"),
    }
}

fn apply_assign(
    table: &CqlTable,
    doc: &DocKey,
    assign: &Assignment,
    stamp: Stamp,
    out: &mut Entries,
) -> Result<()> {
    match assign {
        Assignment::Whole { column: name, value } => {
            let (id, ty) = regular(table, name)?;
            let target = Target { ty: &ty, path: column_path(doc, id), name };
            write_whole(target, value, stamp, out)
        }
        Assignment::Append { column: name, value, .. } => {
            let (id, ty) = regular(table, name)?;
            let target = Target { ty: &ty, path: column_path(doc, id), name };
            write_elements(target, value, stamp, out)
        }
        Assignment::Remove { column: name, value } => remove_elements(table, doc, name, value, out),
        Assignment::Element { column: name, key, value } => {
            let (id, ty) = regular(table, name)?;
            let CqlType::Map(kt, vt) = &ty else {
                return errinput!("{name}[...] needs a map column");
            };
            let path = column_path(doc, id).child(KeyEntry::asc(primitive(kt, key, name)?));
            write_whole(Target { ty: vt, path, name }, value, stamp, out)
        }
        Assignment::JsonPath { column: name, keys, value } => {
            let (id, ty) = regular(table, name)?;
            if ty != CqlType::Jsonb {
                return errinput!("{name}->... needs a jsonb column");
            }
            let mut path = column_path(doc, id);
            for k in keys {
                path = path.child(KeyEntry::asc(Primitive::String(k.clone())));
            }
            write_whole(Target { ty: &CqlType::Jsonb, path, name }, value, stamp, out)
        }
    }
}

/// `c = c - {k, ...}`: a tombstone per set element or map key.
fn remove_elements(
    table: &CqlTable,
    doc: &DocKey,
    name: &str,
    value: &Literal,
    out: &mut Entries,
) -> Result<()> {
    let (id, ty) = regular(table, name)?;
    let (CqlType::Set(key_ty) | CqlType::Map(key_ty, _), Literal::Braces(items)) = (&ty, value)
    else {
        return errinput!("{name}: `-` removes a set of elements or map keys");
    };
    for (k, _) in items {
        let key = KeyEntry::asc(primitive(key_ty, k, name)?);
        out.push((column_path(doc, id).child(key), Value::tombstone()));
    }
    Ok(())
}

fn delete(table: &CqlTable, targets: &[DeleteTarget], key: &[Condition]) -> Result<Entries> {
    let doc = full_key(table, key)?;
    if targets.is_empty() {
        return Ok(vec![(DocPath::new(doc, vec![]), Value::tombstone())]);
    }
    let mut out = Vec::new();
    for target in targets {
        let name = &target.column;
        let (id, ty) = regular(table, name)?;
        let mut path = column_path(&doc, id);
        if let Some(k) = &target.element {
            let (CqlType::Map(kt, _) | CqlType::Set(kt)) = &ty else {
                return errinput!("{name}[...] needs a map or set column");
            };
            path = path.child(KeyEntry::asc(primitive(kt, k, name)?));
        }
        out.push((path, Value::tombstone()));
    }
    Ok(out)
}

/// `WHERE` naming every key column with `=`: the row's document key.
fn full_key(table: &CqlTable, conditions: &[Condition]) -> Result<DocKey> {
    let mut key: Vec<Option<Primitive>> = vec![None; table.columns.len()];
    for cond in conditions {
        let at = position(table, &cond.column)?;
        let col = &table.columns[at];
        if matches!(col.kind, ColumnKind::Regular(_)) || cond.op != CmpOp::Eq {
            return errinput!(
                "WHERE must be `=` on the primary key columns, not {} {}",
                cond.column,
                cond.op.symbol()
            );
        }
        key[at] = Some(primitive(&col.ty, &cond.value, &cond.column)?);
    }
    doc_key_of(table, &mut key)
}

/// The key prefix a SELECT scans (its hash key and the clustering components its `=`
/// conditions fix from the first on; none when it names no hash key: every partition),
/// and its conditions on clustering columns (by column index).
type Selection = (Option<DocKey>, Vec<RangeCondition>);

fn selection(table: &CqlTable, conditions: &[Condition]) -> Result<Selection> {
    let mut hash = DocKey::default();
    let mut given = Vec::new();
    for col in table.hash_columns() {
        let found = conditions.iter().find(|k| k.column == col.name && k.op == CmpOp::Eq);
        match found {
            Some(cond) => {
                hash.hashed.push(KeyEntry::asc(primitive(&col.ty, &cond.value, &col.name)?))
            }
            None => given.push(col.name.clone()),
        }
    }
    let partial = !hash.hashed.is_empty() && !given.is_empty();
    if partial {
        return errinput!("SELECT needs the whole hash key or none of it: no `{} = ...`", given[0]);
    }
    let mut ranges = Vec::new();
    for cond in conditions {
        let col = column(table, &cond.column)?;
        match col.kind {
            ColumnKind::Hash if cond.op == CmpOp::Eq => {}
            ColumnKind::Hash => {
                return errinput!(
                    "a hash column takes only `=`, not {} {}",
                    col.name,
                    cond.op.symbol()
                )
            }
            ColumnKind::Range(_) => {
                let index = table.range_key.iter().position(|n| *n == col.name).expect("range");
                let value = primitive(&col.ty, &cond.value, &col.name)?;
                ranges.push(RangeCondition { index, op: cond.op, value });
            }
            ColumnKind::Regular(_) => {
                return errinput!("cannot filter on regular column {} (only key columns)", col.name)
            }
        }
    }
    if hash.hashed.is_empty() {
        return Ok((None, ranges)); // every partition, in hash order
    }
    hash.range = leading_equalities(table, &ranges);
    Ok((Some(hash), ranges))
}

/// The clustering components fixed by `=` conditions from the first clustering column on:
/// rows outside them cannot match, so the scan is narrowed to their prefix (a full primary
/// key reads one row). The conditions themselves are still applied to every row read.
fn leading_equalities(table: &CqlTable, ranges: &[RangeCondition]) -> Vec<KeyEntry> {
    let mut fixed = Vec::new();
    for (index, col) in table.range_columns().enumerate() {
        let Some(RangeCondition { value, .. }) =
            ranges.iter().find(|c| c.index == index && c.op == CmpOp::Eq)
        else {
            break;
        };
        let ColumnKind::Range(order) = col.kind else { unreachable!("a range column") };
        fixed.push(KeyEntry { value: value.clone(), order });
    }
    fixed
}

fn select(
    table: &CqlTable,
    db: &DocDb,
    columns: Option<&[String]>,
    conditions: &[Condition],
    ht: HybridTime,
) -> Result<Vec<Row>> {
    let projected = projection(table, columns)?;
    let (hash, ranges) = selection(table, conditions)?;
    let mut out = Vec::new();
    let whole = Window { from: None, after: false, limit: None };
    for (doc, row) in read_rows(table, db, hash.as_ref(), (ht, &ranges), whole)? {
        let Some(row) = row else { continue };
        if meets(&ranges, &doc) && row_exists(table, &row) {
            out.push(project_row(table, &projected, &doc, &row));
        }
    }
    Ok(out)
}

/// The columns a select list names (`None`: every column, in declaration order).
fn projection<'t>(
    table: &'t CqlTable,
    columns: Option<&[String]>,
) -> Result<Vec<&'t super::Column>> {
    match columns {
        None => Ok(table.columns.iter().collect()),
        Some(names) => names.iter().map(|n| column(table, n)).collect(),
    }
}

/// Whether the row `doc` meets every range condition.
fn meets(ranges: &[RangeCondition], doc: &DocKey) -> bool {
    ranges.iter().all(|c| c.op.holds(compare_components(&doc.range[c.index].value, &c.value)))
}

/// Every row whose key starts with `key` (a hash key and leading clustering components),
/// in clustering order, read at `ht`; with no key, every row of the tablet, in hash order
/// (a table's rows are hash-partitioned keys: they start with the hash's type byte). The
/// scan may skip SST files no row meeting `conditions` has an entry in, so rows that do
/// not meet them may come back incomplete: the caller drops them. A document that reads
/// as nothing comes back as `None` (a page counts it as scanned).
fn read_rows(
    table: &CqlTable,
    db: &DocDb,
    key: Option<&DocKey>,
    (ht, conditions): (HybridTime, &[RangeCondition]),
    window: Window<'_>,
) -> Result<Vec<(DocKey, Option<RowRead>)>> {
    db.check_read_time(ht)?;
    let prefix = match key {
        Some(key) => {
            let mut prefix = key.encode();
            prefix.pop(); // the range group's closing `!`: every row with these components
            prefix
        }
        None => vec![crate::encoding::tag::HASH],
    };
    let mut rows = Vec::new();
    let read = db.read_config(ht, table.default_ttl_ms);
    for (doc, scanned) in db.scan_documents(&prefix, &read, conditions, window)? {
        match scanned {
            DocRead::Packed(cells) => rows.push((doc, Some(RowRead::Packed(cells)))),
            DocRead::Entries(entries) => {
                let root = DocPath::new(doc.clone(), vec![]);
                let row = read_subdocument(entries, &root, read).map(RowRead::Document);
                rows.push((doc, row));
            }
        }
    }
    Ok(rows)
}

/// A row as read: the document the reader made of its entries, or the columns of a packed
/// row read alone (its liveness column makes it exist).
enum RowRead {
    Document(Document),
    Packed(PackedCells),
}

/// Whether a row exists: its liveness column, or a column of the current schema holding
/// something. A dropped column's values stay stored under an id no column has (a rule of
/// docsim's: they count no more than they show).
fn row_exists(table: &CqlTable, row: &RowRead) -> bool {
    let map = match row {
        RowRead::Packed(_) => return true, // its liveness column
        RowRead::Document(Document::Object(map)) => map,
        RowRead::Document(Document::Primitive(_)) => return false,
    };
    let current = |id: i32| table.column_name(id).is_some();
    map.iter().any(|(k, v)| match (&k.value, v) {
        (Primitive::SystemColumnId(0), _) => true,
        (Primitive::ColumnId(id), Document::Primitive(p)) => *p != Primitive::Null && current(*id),
        (Primitive::ColumnId(id), Document::Object(m)) => !m.is_empty() && current(*id),
        _ => false,
    })
}

fn project_row(table: &CqlTable, columns: &[&super::Column], doc: &DocKey, row: &RowRead) -> Row {
    let mut out = Vec::with_capacity(columns.len());
    for col in columns {
        let name = &col.name;
        let cell = match col.kind {
            ColumnKind::Hash => {
                let at = table.hash_key.iter().position(|n| n == name).expect("hash");
                Cell::Value(doc.hashed[at].value.clone())
            }
            ColumnKind::Range(_) => {
                let at = table.range_key.iter().position(|n| n == name).expect("range");
                Cell::Value(doc.range[at].value.clone())
            }
            ColumnKind::Regular(id) => match row {
                RowRead::Document(Document::Object(map)) => {
                    cell(&col.ty, map.get(&KeyEntry::asc(Primitive::ColumnId(id))))
                }
                RowRead::Document(_) => unreachable!("rows that exist are objects"),
                RowRead::Packed(cells) => {
                    let value = cells.iter().find(|(at, _)| *at as i32 == id);
                    let value = value.map(|(_, p)| Document::Primitive(p.clone()));
                    cell(&col.ty, value.as_ref())
                }
            },
        };
        out.push((name.clone(), cell));
    }
    out
}

fn cell(ty: &CqlType, doc: Option<&Document>) -> Cell {
    let leaf = |d: &Document| match d {
        Document::Primitive(p) => p.clone(),
        other => Primitive::String(other.to_string()),
    };
    match (ty, doc) {
        (_, None) => Cell::Null,
        (CqlType::Jsonb, Some(d)) => Cell::Json(d.clone()),
        (CqlType::Map(..), Some(Document::Object(m))) => {
            Cell::Map(m.iter().map(|(k, v)| (k.value.clone(), leaf(v))).collect())
        }
        (CqlType::Set(_), Some(Document::Object(m))) => {
            Cell::Set(m.keys().map(|k| k.value.clone()).collect())
        }
        (CqlType::List(_), Some(Document::Object(m))) => Cell::List(m.values().map(leaf).collect()),
        (_, Some(Document::Object(_))) => Cell::Null, // an object where a primitive belongs
        (_, Some(Document::Primitive(p))) => Cell::Value(p.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cql::parse_statement;

    /// The scan prefix and the clustering conditions of `select` on the table `ev` (hash
    /// key `dev`; clustering `day` ascending, then `ts` descending).
    fn selected(select: &str) -> (Vec<KeyEntry>, Vec<(usize, CmpOp, Primitive)>) {
        let ev = "CREATE TABLE ev (dev text, day int, ts bigint, val double, \
                  PRIMARY KEY ((dev), day, ts)) WITH CLUSTERING ORDER BY (day ASC, ts DESC)";
        let table = CqlTable::parse(ev).unwrap();
        let Statement::Select { conditions, .. } = parse_statement(select).unwrap() else {
            panic!("{select} is a SELECT")
        };
        let (doc, ranges) = selection(&table, &conditions).unwrap();
        let doc = doc.expect("a partition's scan");
        assert_eq!(doc.hashed, [KeyEntry::asc(Primitive::String("d1".into()))], "{select}");
        (doc.range, ranges.into_iter().map(|c| (c.index, c.op, c.value)).collect())
    }

    /// A SELECT scans only the rows its `=` conditions on clustering columns fix, from the
    /// first clustering column on and in the columns' order, whatever the order the
    /// conditions are written in; a full primary key scans one row. Every condition is
    /// still applied to each row read.
    #[test]
    fn a_select_scans_the_prefix_its_leading_equalities_fix() {
        let (day, ts) =
            (|d| KeyEntry::asc(Primitive::Int32(d)), |t| KeyEntry::desc(Primitive::Int64(t)));
        let scans =
            |select: &str| selected(&format!("SELECT * FROM ev WHERE dev = 'd1'{select}")).0;
        assert_eq!(scans(""), []);
        assert_eq!(scans(" AND day = 1"), [day(1)]);
        assert_eq!(scans(" AND day = 1 AND ts < 20"), [day(1)]);
        assert_eq!(scans(" AND ts = 20 AND day = 1"), [day(1), ts(20)]);
        assert_eq!(scans(" AND day > 1 AND ts = 20"), []);
        assert_eq!(scans(" AND ts = 20"), []);
        let (_, ranges) = selected("SELECT * FROM ev WHERE ts = 20 AND dev = 'd1' AND day >= 1");
        let want = [(1, CmpOp::Eq, Primitive::Int64(20)), (0, CmpOp::Ge, Primitive::Int32(1))];
        assert_eq!(ranges, want);
    }
}
