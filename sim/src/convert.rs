//! Translating between the engine's types and the model's, at the checker's boundary.
//! Plain data translation only: no encoding, no reading, no semantics.

use docsim_engine::cql::Cell as EngineCell;
use docsim_engine::redis::Reply as EngineReply;
use docsim_engine::script::{DocWrite, WriteKind};
use docsim_engine::{DocKey, Document, KeyEntry, Primitive, SortOrder};
use docsim_models::cql::Cell;
use docsim_models::redis::Reply;
use docsim_models::{Doc, DocId, Key, Scalar, Ttl, Write};

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

/// Model scalar → engine primitive (for printing expectations).
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

fn entry(k: &Key) -> KeyEntry {
    let order = if k.desc { SortOrder::Descending } else { SortOrder::Ascending };
    KeyEntry { value: primitive(&k.scalar), order }
}

/// Engine document key → model document id.
pub fn doc_id(k: &DocKey) -> DocId {
    DocId {
        colocation: k.colocation_id,
        hashed: k.hashed.iter().map(key).collect(),
        range: k.range.iter().map(key).collect(),
    }
}

/// Engine document → model document.
pub fn doc(d: &Document) -> Doc {
    match d {
        Document::Primitive(p) => Doc::Leaf(scalar(p)),
        Document::Object(map) => Doc::Object(map.iter().map(|(k, v)| (key(k), doc(v))).collect()),
    }
}

/// Model document → engine document (for printing expectations).
pub fn document(d: &Doc) -> Document {
    match d {
        Doc::Leaf(s) => Document::Primitive(primitive(s)),
        Doc::Object(map) => {
            Document::Object(map.iter().map(|(k, v)| (entry(k), document(v))).collect())
        }
    }
}

/// An engine document write → the model's.
pub fn write(w: &DocWrite) -> (DocId, Vec<Key>, Write, Ttl) {
    let kind = match &w.kind {
        WriteKind::Set(d) => Write::Set(doc(d)),
        WriteKind::Extend(Document::Object(map)) => {
            Write::Extend(map.iter().map(|(k, v)| (key(k), doc(v))).collect())
        }
        WriteKind::Extend(Document::Primitive(_)) => unreachable!("extend takes an object"),
        WriteKind::Obj => Write::Obj,
        WriteKind::Del => Write::Del,
    };
    let ttl = match w.ttl_us {
        None => Ttl::Inherit,
        Some(0) => Ttl::Never,
        Some(us) => Ttl::Ms(us / 1000),
    };
    (doc_id(&w.path.doc_key), w.path.subkeys.iter().map(key).collect(), kind, ttl)
}

/// Engine result cell → model cell.
pub fn cell(c: &EngineCell) -> Cell {
    match c {
        EngineCell::Null => Cell::Null,
        EngineCell::Value(p) => Cell::Scalar(scalar(p)),
        EngineCell::Map(items) => {
            Cell::Map(items.iter().map(|(k, v)| (scalar(k), scalar(v))).collect())
        }
        EngineCell::Set(items) | EngineCell::List(items) => {
            Cell::Set(items.iter().map(scalar).collect())
        }
        EngineCell::Json(d) => Cell::Scalar(Scalar::Str(d.to_string())),
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
