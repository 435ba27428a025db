//! Translating between the model's types (which the workload generates) and the engine's,
//! at the checker's boundary. Plain data translation only: no encoding, no reading, no
//! semantics, no text (the engine's own printers render what the run prints).

use docsim_engine::cql::{
    AlterChange, Assignment, Cell as EngineCell, CmpOp, Condition, CqlTable, CqlType, DeleteTarget,
    Literal, Statement,
};
use docsim_engine::redis::{Command as RedisCommand, Expiry, Reply as EngineReply};
use docsim_engine::{
    DocKey, DocPath, DocWrite as EngineWrite, Document, HybridTime, KeyEntry, Primitive, SortOrder,
    WriteKind,
};
use docsim_models::cql::{Alter, Assign, Cell, Cmp, CqlOp, CqlValue, Schema};
use docsim_models::redis::{RedisOp, Reply};
use docsim_models::{Doc, DocId, Key, Scalar, Ttl, Write};
use docsim_workloads::{CqlTableSpec, DocWrite};

/// Model time → engine hybrid time (both are `physical_us << 12 | logical`).
pub fn ht(time: u64) -> HybridTime {
    HybridTime::from_raw(time)
}

/// Engine primitive → model scalar.
pub fn scalar(p: &Primitive) -> Scalar {
    match p {
        Primitive::Null => Scalar::Null,
        Primitive::Bool(b) => Scalar::Bool(*b),
        Primitive::Int32(v) => Scalar::Int32(*v),
        Primitive::Int64(v) => Scalar::Int64(*v),
        Primitive::Double(d) => {
            Scalar::Double(if d.is_nan() { f64::NAN.to_bits() } else { d.to_bits() })
        }
        Primitive::String(s) => Scalar::Str(s.clone()),
        Primitive::Timestamp(v) => Scalar::Timestamp(*v),
        Primitive::ColumnId(v) => Scalar::Column(*v),
        Primitive::SystemColumnId(v) => Scalar::SystemColumn(*v),
    }
}

/// Model scalar → engine primitive.
pub fn primitive(s: &Scalar) -> Primitive {
    match s {
        Scalar::Null => Primitive::Null,
        Scalar::Bool(b) => Primitive::Bool(*b),
        Scalar::Int32(v) => Primitive::Int32(*v),
        Scalar::Int64(v) => Primitive::Int64(*v),
        Scalar::Double(bits) => Primitive::Double(f64::from_bits(*bits)),
        Scalar::Str(s) => Primitive::String(s.clone()),
        Scalar::Timestamp(v) => Primitive::Timestamp(*v),
        Scalar::Column(v) => Primitive::ColumnId(*v),
        Scalar::SystemColumn(v) => Primitive::SystemColumnId(*v),
    }
}

/// Engine key entry → model key.
pub fn key(e: &KeyEntry) -> Key {
    Key { scalar: scalar(&e.value), desc: e.order == SortOrder::Descending }
}

/// Model key → engine key entry.
pub fn entry(k: &Key) -> KeyEntry {
    let order = if k.desc { SortOrder::Descending } else { SortOrder::Ascending };
    KeyEntry { value: primitive(&k.scalar), order }
}

/// Model document id → engine document key.
pub fn doc_key(id: &DocId) -> DocKey {
    DocKey {
        colocation_id: id.colocation,
        hashed: id.hashed.iter().map(entry).collect(),
        range: id.range.iter().map(entry).collect(),
    }
}

/// Engine document key → model document id.
pub fn doc_id(key: &DocKey) -> DocId {
    DocId {
        colocation: key.colocation_id,
        hashed: key.hashed.iter().map(self::key).collect(),
        range: key.range.iter().map(self::key).collect(),
    }
}

/// A model document id and path below it → the engine's path.
pub fn path(id: &DocId, subkeys: &[Key]) -> DocPath {
    DocPath::new(doc_key(id), subkeys.iter().map(entry).collect())
}

/// An engine path → the model's document id and subkeys below it.
pub fn doc_and_subkeys(path: &DocPath) -> (DocId, Vec<Key>) {
    let doc = DocId {
        colocation: path.doc_key.colocation_id,
        hashed: path.doc_key.hashed.iter().map(key).collect(),
        range: path.doc_key.range.iter().map(key).collect(),
    };
    (doc, path.subkeys.iter().map(key).collect())
}

/// Engine document → model document.
pub fn doc(d: &Document) -> Doc {
    match d {
        Document::Primitive(p) => Doc::Leaf(scalar(p)),
        Document::Object(map) => Doc::Object(map.iter().map(|(k, v)| (key(k), doc(v))).collect()),
    }
}

/// Model document → engine document.
pub fn document(d: &Doc) -> Document {
    match d {
        Doc::Leaf(s) => Document::Primitive(primitive(s)),
        Doc::Object(map) => {
            Document::Object(map.iter().map(|(k, v)| (entry(k), document(v))).collect())
        }
    }
}

/// A generated document write → the engine's.
pub fn write(w: &DocWrite) -> EngineWrite {
    let kind = match &w.write {
        Write::Set(d) => WriteKind::Set(document(d)),
        Write::Extend(map) => WriteKind::Extend(document(&Doc::Object(map.clone()))),
        Write::Obj => WriteKind::Obj,
        Write::Del => WriteKind::Del,
    };
    let ttl_us = match w.ttl {
        Ttl::Inherit => None,
        Ttl::Never => Some(0),
        Ttl::Ms(ms) => Some(ms * 1000),
    };
    EngineWrite { path: path(&w.doc, &w.path), kind, ttl_us }
}

/// A generated marker mode → the engine's.
pub fn marker_mode(m: docsim_models::Markers) -> docsim_engine::MarkerMode {
    match m {
        docsim_models::Markers::Optional => docsim_engine::MarkerMode::Optional,
        docsim_models::Markers::Required => docsim_engine::MarkerMode::Required,
    }
}

/// A generated table → the engine's schema. `None` if a column type does not parse
/// (the generator only uses types the engine supports).
pub fn table(spec: &CqlTableSpec) -> Option<CqlTable> {
    let s = &spec.schema;
    let columns = spec
        .types
        .iter()
        .map(|(n, t)| Some((n.clone(), CqlType::from_name(t).ok()?)))
        .collect::<Option<Vec<_>>>()?;
    let order = |desc: bool| if desc { SortOrder::Descending } else { SortOrder::Ascending };
    let range = s.range.iter().map(|(n, desc)| (n.clone(), order(*desc))).collect();
    let mut table =
        CqlTable::declare(&s.name, columns, s.hash.clone(), range, s.default_ttl_s).ok()?;
    table.tablets = spec.tablets;
    Some(table)
}

/// A scalar as the CQL literal a statement carries.
fn literal(s: &Scalar) -> Literal {
    match s {
        Scalar::Null => Literal::Null,
        Scalar::Bool(b) => Literal::Bool(*b),
        Scalar::Int32(v) => Literal::Num(v.to_string()),
        Scalar::Int64(v) => Literal::Num(v.to_string()),
        Scalar::Double(bits) => Literal::Num(format!("{:?}", f64::from_bits(*bits))),
        Scalar::Str(text) => Literal::Str(text.clone()),
        Scalar::Timestamp(us) => Literal::Num((us / 1000).to_string()),
        Scalar::Column(_) | Scalar::SystemColumn(_) => unreachable!("not a CQL value"),
    }
}

fn value(v: &CqlValue) -> Literal {
    match v {
        CqlValue::Null => Literal::Null,
        CqlValue::Scalar(s) => literal(s),
        CqlValue::Map(items) => {
            Literal::Braces(items.iter().map(|(k, v)| (literal(k), Some(literal(v)))).collect())
        }
        CqlValue::Set(items) => Literal::Braces(items.iter().map(|e| (literal(e), None)).collect()),
        CqlValue::List(items) => Literal::List(items.iter().map(literal).collect()),
        CqlValue::Json(json) => Literal::Str(json.text()),
    }
}

fn key_names(s: &Schema) -> Vec<String> {
    s.hash.iter().cloned().chain(s.range.iter().map(|(n, _)| n.clone())).collect()
}

fn equal(column: String, v: &Scalar) -> Condition {
    Condition { column, op: CmpOp::Eq, value: literal(v) }
}

fn where_key(s: &Schema, key: &[Scalar]) -> Vec<Condition> {
    key_names(s).into_iter().zip(key).map(|(n, v)| equal(n, v)).collect()
}

fn assignment(a: &Assign) -> Assignment {
    match a {
        Assign::Whole(n, v) => Assignment::Whole { column: n.clone(), value: value(v) },
        Assign::MapPut(n, k, v) => {
            Assignment::Element { column: n.clone(), key: literal(k), value: literal(v) }
        }
        Assign::Add(n, v) => {
            let concat = matches!(v, CqlValue::Json(_)); // jsonb merges with `||`
            Assignment::Append { column: n.clone(), value: value(v), concat }
        }
        Assign::Remove(n, keys) => Assignment::Remove {
            column: n.clone(),
            value: Literal::Braces(keys.iter().map(|k| (literal(k), None)).collect()),
        },
    }
}

/// A generated CQL op on the table `s` → the engine's statement.
pub fn statement(s: &Schema, op: &CqlOp) -> Statement {
    let table = s.name.clone();
    match op {
        CqlOp::Insert { key, values, ttl_s } => {
            let mut columns = key_names(s);
            let mut lits: Vec<Literal> = key.iter().map(literal).collect();
            for (n, v) in values {
                columns.push(n.clone());
                lits.push(value(v));
            }
            Statement::Insert { table, columns, values: lits, ttl_s: *ttl_s }
        }
        CqlOp::Update { key, assigns, ttl_s } => Statement::Update {
            table,
            ttl_s: *ttl_s,
            assignments: assigns.iter().map(assignment).collect(),
            key: where_key(s, key),
        },
        CqlOp::DeleteRow { key } => {
            Statement::Delete { targets: vec![], table, key: where_key(s, key) }
        }
        CqlOp::DeleteColumns { key, columns } => {
            let targets =
                columns.iter().map(|c| DeleteTarget { column: c.clone(), element: None }).collect();
            Statement::Delete { targets, table, key: where_key(s, key) }
        }
        CqlOp::Select { hash, range, columns } => {
            let mut conditions: Vec<Condition> =
                s.hash.iter().zip(hash).map(|(n, v)| equal(n.clone(), v)).collect();
            for (cmp, v) in range {
                let op = match cmp {
                    Cmp::Eq => CmpOp::Eq,
                    Cmp::Lt => CmpOp::Lt,
                    Cmp::Le => CmpOp::Le,
                    Cmp::Gt => CmpOp::Gt,
                    Cmp::Ge => CmpOp::Ge,
                };
                conditions.push(Condition { column: s.range[0].0.clone(), op, value: literal(v) });
            }
            Statement::Select { columns: columns.clone(), table, conditions }
        }
        CqlOp::Alter(Alter::Add { column, ty, .. }) => {
            let ty = CqlType::from_name(&ty.name()).expect("generated types parse");
            Statement::Alter { table, change: AlterChange::Add { column: column.clone(), ty } }
        }
        CqlOp::Alter(Alter::Drop { column }) => {
            Statement::Alter { table, change: AlterChange::Drop { column: column.clone() } }
        }
    }
}

/// A generated Redis op → the engine's command.
pub fn redis(op: &RedisOp) -> RedisCommand {
    match op.clone() {
        RedisOp::Set { key, value, ttl_ms } => {
            let expiry =
                ttl_ms
                    .map(|ms| if ms % 1000 == 0 { Expiry::Ex(ms / 1000) } else { Expiry::Px(ms) });
            RedisCommand::Set { key, value, expiry }
        }
        RedisOp::Get { key } => RedisCommand::Get { key },
        RedisOp::Del { keys } => RedisCommand::Del { keys },
        RedisOp::Expire { key, secs } => RedisCommand::Expire { key, secs },
        RedisOp::HSet { key, fields } => RedisCommand::HSet { key, fields, multi: false },
        RedisOp::HGet { key, field } => RedisCommand::HGet { key, field },
        RedisOp::HDel { key, fields } => RedisCommand::HDel { key, fields },
        RedisOp::HGetAll { key } => RedisCommand::HGetAll { key },
        RedisOp::SAdd { key, members } => RedisCommand::SAdd { key, members },
        RedisOp::SRem { key, members } => RedisCommand::SRem { key, members },
        RedisOp::SMembers { key } => RedisCommand::SMembers { key },
    }
}

/// Engine result cell → model cell.
pub fn cell(c: &EngineCell) -> Cell {
    match c {
        EngineCell::Null => Cell::Null,
        EngineCell::Value(p) => Cell::Scalar(scalar(p)),
        EngineCell::Map(items) => {
            Cell::Map(items.iter().map(|(k, v)| (scalar(k), scalar(v))).collect())
        }
        EngineCell::Set(items) => Cell::Set(items.iter().map(scalar).collect()),
        EngineCell::List(items) => Cell::List(items.iter().map(scalar).collect()),
        EngineCell::Json(d) => Cell::Json(doc(d)),
    }
}

/// Model cell → engine cell (for printing expectations).
pub fn engine_cell(c: &Cell) -> EngineCell {
    match c {
        Cell::Null => EngineCell::Null,
        Cell::Scalar(s) => EngineCell::Value(primitive(s)),
        Cell::Map(items) => {
            EngineCell::Map(items.iter().map(|(k, v)| (primitive(k), primitive(v))).collect())
        }
        Cell::Set(items) => EngineCell::Set(items.iter().map(primitive).collect()),
        Cell::List(items) => EngineCell::List(items.iter().map(primitive).collect()),
        Cell::Json(d) => EngineCell::Json(document(d)),
    }
}

/// Engine Redis reply → model reply.
pub fn reply(r: &EngineReply) -> Reply {
    match r {
        EngineReply::Status(s) => Reply::Status(s.clone()),
        EngineReply::Bulk(b) => Reply::Bulk(b.clone()),
        EngineReply::Integer(n) => Reply::Integer(*n),
        EngineReply::Array(items) => Reply::Array(items.clone()),
    }
}

/// Model Redis reply → engine reply (for printing expectations).
pub fn engine_reply(r: &Reply) -> EngineReply {
    match r {
        Reply::Status(s) => EngineReply::Status(s.clone()),
        Reply::Bulk(b) => EngineReply::Bulk(b.clone()),
        Reply::Integer(n) => EngineReply::Integer(*n),
        Reply::Array(items) => EngineReply::Array(items.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The model's statement of DocDB's subkey order (which the required-marker seeks use
    /// to find a level's first entry) agrees with the engine's encoded keys, bytewise, on
    /// every pair of a sample of each type, both orders, and boundary values.
    #[test]
    fn the_models_key_order_is_the_engines_byte_order() {
        let mut scalars = vec![Scalar::Null, Scalar::Bool(false), Scalar::Bool(true)];
        for v in [i32::MIN, -7, -1, 0, 1, 255, 256, i32::MAX] {
            scalars.extend([Scalar::Int32(v), Scalar::Column(v.max(0)), Scalar::SystemColumn(v)]);
        }
        for v in [i64::MIN, -300, -1, 0, 1, 300, i64::MAX] {
            scalars.extend([Scalar::Int64(v), Scalar::Timestamp(v)]);
        }
        for d in [f64::NEG_INFINITY, -2.5, -0.0, 0.0, 1.0e-300, 2.5, f64::INFINITY] {
            scalars.push(Scalar::Double(d.to_bits()));
        }
        for s in ["", "a", "a\0", "a\0b", "ab", "b", "é"] {
            scalars.push(Scalar::Str(s.to_owned()));
        }
        let keys: Vec<Key> = scalars
            .iter()
            .flat_map(|s| [false, true].map(|desc| Key { scalar: s.clone(), desc }))
            .collect();
        let encoded = |k: &Key| {
            let mut out = Vec::new();
            entry(k).encode_to(&mut out);
            out
        };
        for a in &keys {
            for b in &keys {
                let (model, engine) =
                    (docsim_models::docdb_key_cmp(a, b), encoded(a).cmp(&encoded(b)));
                assert_eq!(model, engine, "{a:?} vs {b:?}");
            }
        }
    }
}
