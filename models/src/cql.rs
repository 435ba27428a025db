//! CQL rows on the document model.
//!
//! A row is the document `(hash: hash key values; range: clustering values)`; regular
//! columns are subdocuments keyed by column id (from 10, in declaration order); INSERT
//! writes the liveness column `sys(0)` first, then its columns in declaration order; a
//! collection written whole is a marker then its elements; a null writes a tombstone. A
//! row exists at R iff its liveness column or a non-empty column is visible at R.
//!
//! **Schema changes**: `ALTER TABLE ADD` gives the new column the next id after the highest
//! ever given (ids are never reused), `DROP` removes a column from the schema. A dropped
//! column's values stay where they were written, under an id no column has any more: no
//! SELECT shows them, and they do not make a row exist. A column added again under an
//! old name is a new column: it reads null until written. How rows are stored (one entry
//! per column, or packed rows under schema versions) is not the model's business.
//!
//! A **list** reads back in the order its elements were written: by the writing
//! statement's hybrid time, then by position in the literal. An append therefore goes
//! after every element written before it, however close in time (YugabyteDB takes list
//! indexes from a per-tablet monotonic counter); a whole write replaces the list.
//!
//! A **jsonb** value is a document: a JSON object a map keyed by its string keys, an array
//! a map keyed by int64 positions from 0, an integer literal an int64, any other number a
//! double; `j = j || {...}` writes the object's entries without a marker at the column
//! (merge).

mod types;

pub use types::CqlType;

use crate::doc::{Doc, DocId, Entry, Key, Model, ModelError, Scalar, Time, Ttl};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// The shape of a regular column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ColKind {
    Scalar,
    Map,
    Set,
    List,
    Jsonb,
}

/// A JSON value, for jsonb columns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    /// The bit pattern of a finite double written with a fraction (`2.5`).
    Double(u64),
    Str(String),
    Array(Vec<Json>),
    /// Keys in the order written; a repeated key keeps the last value.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The JSON text a statement writes for this value (the model's own spelling, which
    /// the statement writers use: a text column stores a JSON literal as this text).
    pub fn text(&self) -> String {
        match self {
            Json::Null => "null".into(),
            Json::Bool(b) => b.to_string(),
            Json::Int(v) => v.to_string(),
            Json::Double(bits) => format!("{:?}", f64::from_bits(*bits)),
            Json::Str(text) => json_string(text),
            Json::Array(items) => {
                format!("[{}]", items.iter().map(Json::text).collect::<Vec<_>>().join(", "))
            }
            Json::Object(items) => {
                let items: Vec<String> = items
                    .iter()
                    .map(|(k, v)| format!("{}: {}", json_string(k), v.text()))
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
        }
    }

    /// The document a jsonb column stores for this value.
    pub fn doc(&self) -> Doc {
        match self {
            Json::Null => Doc::Leaf(Scalar::Null),
            Json::Bool(b) => Doc::Leaf(Scalar::Bool(*b)),
            Json::Int(v) => Doc::Leaf(Scalar::Int64(*v)),
            Json::Double(bits) => Doc::Leaf(Scalar::Double(*bits)),
            Json::Str(s) => Doc::Leaf(Scalar::Str(s.clone())),
            Json::Array(items) => Doc::Object(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (Key::of(Scalar::Int64(i as i64)), v.doc()))
                    .collect(),
            ),
            Json::Object(items) => Doc::Object(
                items.iter().map(|(k, v)| (Key::of(Scalar::Str(k.clone())), v.doc())).collect(),
            ),
        }
    }
}

/// A regular (non-key) column.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Regular {
    pub name: String,
    pub ty: CqlType,
    /// The column id its values are stored under.
    pub id: i32,
}

/// A table schema, as the model needs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schema {
    pub name: String,
    pub hash: Vec<String>,
    /// Clustering columns and whether each is descending.
    pub range: Vec<(String, bool)>,
    /// Regular columns in declaration order (at creation ids 10, 11, ...).
    pub regular: Vec<Regular>,
    pub default_ttl_s: Option<u64>,
    /// The id the next added column gets.
    next_id: i32,
}

/// A schema change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Alter {
    /// `ADD <column> <ty>` (`ty`: the CQL type's name, for the statement's text).
    Add { column: String, ty: CqlType },
    /// `DROP <column>`.
    Drop { column: String },
}

impl Schema {
    /// A table's schema at creation: regular columns get ids 10, 11, ... in order.
    pub fn new(
        name: &str,
        hash: Vec<String>,
        range: Vec<(String, bool)>,
        regular: Vec<(String, CqlType)>,
        default_ttl_s: Option<u64>,
    ) -> Schema {
        let regular: Vec<Regular> =
            (10..).zip(regular).map(|(id, (name, ty))| Regular { name, ty, id }).collect();
        let next_id = 10 + regular.len() as i32;
        Schema { name: name.into(), hash, range, regular, default_ttl_s, next_id }
    }

    /// Apply a schema change (`ALTER TABLE`). Adding a column that exists, or dropping
    /// one that does not (or a key column), is refused.
    pub fn alter(&mut self, change: &Alter) -> Result<(), ModelError> {
        match change {
            Alter::Add { column, ty } => {
                if self.is_column(column) {
                    return Err(ModelError::InvalidRequest);
                }
                let ty = ty.clone();
                self.regular.push(Regular { name: column.clone(), ty, id: self.next_id });
                self.next_id += 1;
            }
            Alter::Drop { column } => {
                if !self.regular.iter().any(|r| r.name == *column) {
                    return Err(ModelError::InvalidRequest);
                }
                self.regular.retain(|r| r.name != *column);
            }
        }
        Ok(())
    }

    /// Whether `name` is a column of the table (key or regular).
    pub fn is_column(&self, name: &str) -> bool {
        self.hash.iter().any(|n| n == name)
            || self.range.iter().any(|(n, _)| n == name)
            || self.regular.iter().any(|r| r.name == name)
    }

    fn regular_column(&self, name: &str) -> &Regular {
        self.regular.iter().find(|r| r.name == name).expect("a column of the schema")
    }

    fn column_id(&self, name: &str) -> i32 {
        self.regular_column(name).id
    }

    fn kind(&self, name: &str) -> ColKind {
        self.regular_column(name).ty.kind()
    }

    fn doc(&self, key: &[Scalar]) -> DocId {
        let (h, r) = key.split_at(self.hash.len());
        DocId {
            colocation: None,
            hashed: h.iter().cloned().map(Key::of).collect(),
            range: r
                .iter()
                .zip(&self.range)
                .map(|(s, (_, desc))| Key { scalar: s.clone(), desc: *desc })
                .collect(),
        }
    }
}

/// A JSON string literal: quotes, with `"`, `\` and control characters escaped.
fn json_string(text: &str) -> String {
    let mut out = String::from('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A column value in a statement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CqlValue {
    Null,
    Scalar(Scalar),
    Map(Vec<(Scalar, Scalar)>),
    Set(Vec<Scalar>),
    List(Vec<Scalar>),
    Json(Json),
}

/// One `SET` assignment of an UPDATE.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Assign {
    /// `c = v` (a collection is overwritten).
    Whole(String, CqlValue),
    /// `m['k'] = v`.
    MapPut(String, Scalar, Scalar),
    /// `c = c + {...}`.
    Add(String, CqlValue),
    /// `c = c - {...}`.
    Remove(String, Vec<Scalar>),
}

/// A comparison on the first clustering column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Cmp {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A CQL statement, structured. `key` lists hash then clustering values.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CqlOp {
    Insert {
        key: Vec<Scalar>,
        values: Vec<(String, CqlValue)>,
        ttl_s: Option<u64>,
    },
    Update {
        key: Vec<Scalar>,
        assigns: Vec<Assign>,
        ttl_s: Option<u64>,
    },
    DeleteRow {
        key: Vec<Scalar>,
    },
    DeleteColumns {
        key: Vec<Scalar>,
        columns: Vec<String>,
    },
    /// `hash` empty: no hash key, every row in hash order. `range`: conditions on the
    /// first clustering column, all of which a row must meet (none: every row).
    Select {
        hash: Vec<Scalar>,
        range: Vec<(Cmp, Scalar)>,
        columns: Option<Vec<String>>,
    },
    /// `ALTER TABLE`.
    Alter(Alter),
}

/// A result cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cell {
    Null,
    Scalar(Scalar),
    Map(Vec<(Scalar, Scalar)>),
    Set(Vec<Scalar>),
    /// List elements in list order.
    List(Vec<Scalar>),
    /// A jsonb column's document.
    Json(Doc),
}

/// What a statement returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CqlResult {
    Written,
    Rows(Vec<Vec<(String, Cell)>>),
}

/// The partition hash of the rows a statement names by its hash key (with the model's
/// own hash: [`crate::partition`]); `None` for one naming none (an ALTER TABLE, a SELECT
/// without the hash key).
pub fn partition_hash(schema: &Schema, op: &CqlOp) -> Option<u16> {
    let values = match op {
        CqlOp::Insert { key, .. }
        | CqlOp::Update { key, .. }
        | CqlOp::DeleteRow { key }
        | CqlOp::DeleteColumns { key, .. } => key.get(..schema.hash.len())?,
        CqlOp::Select { hash, .. } if !hash.is_empty() => hash,
        CqlOp::Select { .. } | CqlOp::Alter(_) => return None,
    };
    Some(crate::partition::hash_of(values))
}

fn ttl_of(ttl_s: Option<u64>) -> Ttl {
    match ttl_s {
        None => Ttl::Inherit,
        Some(0) => Ttl::Never,
        Some(s) => Ttl::Ms(s * 1000),
    }
}

type Entries = Vec<(DocId, Vec<Key>, Entry, Ttl)>;

impl Model {
    /// Run one CQL statement at `time` on the table `schema` (which `ALTER TABLE`
    /// changes).
    pub fn cql(
        &mut self,
        time: Time,
        schema: &mut Schema,
        op: &CqlOp,
    ) -> Result<CqlResult, ModelError> {
        let schema = match op {
            CqlOp::Alter(change) => return schema.alter(change).map(|()| CqlResult::Written),
            _ => &*schema,
        };
        if !names_known_columns(schema, op) || !values_fit(schema, op) {
            return Err(ModelError::InvalidRequest);
        }
        let op = &coerced(schema, op);
        let mut out: Entries = Vec::new();
        match op {
            CqlOp::Insert { key, values, ttl_s } => {
                let (doc, ttl) = (schema.doc(key), ttl_of(*ttl_s));
                let liveness = vec![Key::of(Scalar::SystemColumn(0))];
                out.push((doc.clone(), liveness, Entry::Value(Scalar::Null), ttl));
                let at = At { doc: &doc, ttl, time };
                for col in &schema.regular {
                    if let Some((_, v)) = values.iter().find(|(n, _)| *n == col.name) {
                        whole(at, column(schema, &col.name), v, &mut out);
                    }
                }
            }
            CqlOp::Update { key, assigns, ttl_s } => {
                let (doc, ttl) = (schema.doc(key), ttl_of(*ttl_s));
                let at = At { doc: &doc, ttl, time };
                for assign in assigns {
                    match assign {
                        Assign::Whole(name, v) => whole(at, column(schema, name), v, &mut out),
                        Assign::MapPut(name, k, v) => {
                            let path = vec![column(schema, name), Key::of(k.clone())];
                            out.push((doc.clone(), path, Entry::Value(v.clone()), ttl));
                        }
                        Assign::Add(name, v) => elements(at, column(schema, name), v, &mut out),
                        Assign::Remove(name, keys) => {
                            for k in keys {
                                let path = vec![column(schema, name), Key::of(k.clone())];
                                out.push((doc.clone(), path, Entry::Tombstone, Ttl::Inherit));
                            }
                        }
                    }
                }
            }
            CqlOp::DeleteRow { key } => {
                out.push((schema.doc(key), vec![], Entry::Tombstone, Ttl::Inherit))
            }
            CqlOp::DeleteColumns { key, columns } => {
                for name in columns {
                    let path = vec![column(schema, name)];
                    out.push((schema.doc(key), path, Entry::Tombstone, Ttl::Inherit));
                }
            }
            CqlOp::Alter(_) => unreachable!("applied above"),
            CqlOp::Select { hash, range, columns } => {
                return self
                    .select(time, schema, hash, range, columns.as_deref())
                    .map(CqlResult::Rows);
            }
        }
        self.write_entries(time, out);
        Ok(CqlResult::Written)
    }

    fn select(
        &self,
        time: Time,
        schema: &Schema,
        hash: &[Scalar],
        range: &[(Cmp, Scalar)],
        columns: Option<&[String]>,
    ) -> Result<Vec<Vec<(String, Cell)>>, ModelError> {
        if time < self.cutoff() {
            return Err(ModelError::SnapshotTooOld);
        }
        // No hash key: every row (of this tablet), in hash order.
        let hashed: Vec<Key> = hash.iter().cloned().map(Key::of).collect();
        let wanted = |d: &DocId| hashed.is_empty() || d.hashed == hashed;
        let mut docs = self.docs_where(|d| d.colocation.is_none() && wanted(d));
        docs.sort_by(key_order);
        let all: Vec<String> = schema
            .hash
            .iter()
            .chain(schema.range.iter().map(|(n, _)| n))
            .chain(schema.regular.iter().map(|r| &r.name))
            .cloned()
            .collect();
        let names = columns.map_or(all, <[String]>::to_vec);
        let mut rows = Vec::new();
        for doc in docs {
            if !range.iter().all(|(cmp, value)| compare(&doc.range[0].scalar, *cmp, value)) {
                continue;
            }
            let Some(Doc::Object(row)) = self.read(&doc, &[], time)? else { continue };
            if !exists(schema, &row) {
                continue;
            }
            rows.push(names.iter().map(|n| (n.clone(), cell(schema, &doc, &row, n))).collect());
        }
        Ok(rows)
    }
}

/// Whether every column `op` names is a column of `schema` (a regular one where it
/// writes): a statement naming another is refused.
fn names_known_columns(schema: &Schema, op: &CqlOp) -> bool {
    let regular = |name: &str| schema.regular.iter().any(|r| r.name == name);
    match op {
        CqlOp::Insert { values, .. } => values.iter().all(|(n, _)| regular(n)),
        CqlOp::Update { assigns, .. } => assigns.iter().all(|a| match a {
            Assign::Whole(n, _)
            | Assign::MapPut(n, ..)
            | Assign::Add(n, _)
            | Assign::Remove(n, _) => regular(n),
        }),
        CqlOp::DeleteColumns { columns, .. } => columns.iter().all(|n| regular(n)),
        CqlOp::Select { columns, .. } => columns.iter().flatten().all(|n| schema.is_column(n)),
        CqlOp::DeleteRow { .. } | CqlOp::Alter(_) => true,
    }
}

/// Whether every value a write names fits its column's type (`cql/types.rs`); the
/// columns are known.
fn values_fit(schema: &Schema, op: &CqlOp) -> bool {
    let ty = |name: &str| &schema.regular_column(name).ty;
    match op {
        CqlOp::Insert { values, .. } => values.iter().all(|(n, v)| ty(n).fits(v)),
        CqlOp::Update { assigns, .. } => assigns.iter().all(|a| match a {
            Assign::Whole(n, v) => ty(n).fits(v),
            Assign::MapPut(n, k, v) => match ty(n) {
                CqlType::Map(kt, vt) => kt.fits_scalar(k) && vt.fits_scalar(v),
                _ => false,
            },
            Assign::Add(n, v) => ty(n).fits_added(v),
            Assign::Remove(n, keys) => ty(n).fits_removed(keys),
        }),
        _ => true,
    }
}

/// `op` with every value as its column's type stores it (`CqlType::coerce`).
fn coerced(schema: &Schema, op: &CqlOp) -> CqlOp {
    let ty = |name: &str| &schema.regular_column(name).ty;
    let mut op = op.clone();
    match &mut op {
        CqlOp::Insert { values, .. } => {
            for (n, v) in values {
                *v = ty(n).coerce(v);
            }
        }
        CqlOp::Update { assigns, .. } => {
            for a in assigns {
                match a {
                    Assign::Whole(n, v) | Assign::Add(n, v) => *v = ty(n).coerce(v),
                    Assign::MapPut(n, k, v) => {
                        if let CqlType::Map(kt, vt) = ty(n) {
                            (*k, *v) = (kt.coerce_scalar(k), vt.coerce_scalar(v));
                        }
                    }
                    Assign::Remove(n, keys) => {
                        if let CqlType::Set(e) | CqlType::Map(e, _) = ty(n) {
                            keys.iter_mut().for_each(|k| *k = e.coerce_scalar(k));
                        }
                    }
                }
            }
        }
        _ => {}
    }
    op
}

fn column(schema: &Schema, name: &str) -> Key {
    Key::of(Scalar::Column(schema.column_id(name)))
}

/// Where and when a statement writes: the row, its TTL, its time.
#[derive(Clone, Copy)]
struct At<'a> {
    doc: &'a DocId,
    ttl: Ttl,
    time: Time,
}

/// A column written whole: a value, a tombstone for null, or a marker then the elements
/// of a collection or the entries of a jsonb document (overwrite).
fn whole(at: At, col: Key, value: &CqlValue, out: &mut Entries) {
    let doc = at.doc.clone();
    match value {
        CqlValue::Null => out.push((doc, vec![col], Entry::Tombstone, Ttl::Inherit)),
        CqlValue::Scalar(s) => out.push((doc, vec![col], Entry::Value(s.clone()), at.ttl)),
        CqlValue::Json(json) => document(at, vec![col], &json.doc(), out),
        CqlValue::Map(_) | CqlValue::Set(_) | CqlValue::List(_) => {
            out.push((doc, vec![col.clone()], Entry::Marker, at.ttl));
            elements(at, col, value, out);
        }
    }
}

/// A document written at `path`: a leaf, or a marker then its entries depth-first.
fn document(at: At, path: Vec<Key>, doc: &Doc, out: &mut Entries) {
    match doc {
        Doc::Leaf(s) => out.push((at.doc.clone(), path, Entry::Value(s.clone()), at.ttl)),
        Doc::Object(map) => {
            out.push((at.doc.clone(), path.clone(), Entry::Marker, at.ttl));
            children(at, &path, map, out);
        }
    }
}

fn children(at: At, path: &[Key], map: &BTreeMap<Key, Doc>, out: &mut Entries) {
    for (k, v) in map {
        let mut child = path.to_vec();
        child.push(k.clone());
        document(at, child, v, out);
    }
}

/// The elements of a collection (or the entries of a jsonb object or array) under `col`,
/// without a marker at `col` itself.
fn elements(at: At, col: Key, value: &CqlValue, out: &mut Entries) {
    let items: Vec<(Scalar, Scalar)> = match value {
        CqlValue::Map(items) => items.clone(),
        CqlValue::Set(items) => items.iter().map(|s| (s.clone(), Scalar::Null)).collect(),
        // The model's own list keys: the write's hybrid time, then the position (zero-padded
        // text sorts in that order). Only the order of the values is ever compared.
        CqlValue::List(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (Scalar::Str(format!("{:020}.{i:04}", at.time)), v.clone()))
            .collect(),
        CqlValue::Json(json) => {
            if let Doc::Object(map) = json.doc() {
                children(at, std::slice::from_ref(&col), &map, out);
            }
            Vec::new()
        }
        CqlValue::Null | CqlValue::Scalar(_) => Vec::new(),
    };
    for (k, v) in items {
        out.push((at.doc.clone(), vec![col.clone(), Key::of(k)], Entry::Value(v), at.ttl));
    }
}

/// The order of CQL key values (DocDB's key encoding keeps it): numbers numerically,
/// doubles in IEEE total order (-0.0 before 0.0, NaN last); text bytewise; false before
/// true. (`Scalar`'s own `Ord` is only a map order: it compares doubles by their bits.)
fn value_cmp(a: &Scalar, b: &Scalar) -> Ordering {
    match (a, b) {
        (Scalar::Double(x), Scalar::Double(y)) => f64::from_bits(*x).total_cmp(&f64::from_bits(*y)),
        _ => a.cmp(b),
    }
}

/// The order of rows in a tablet (DocDB's key order): by partition hash, then the hash
/// key's values, then clustering order. A paged read's next page starts after its paging
/// state's row in this order (`docdb/doc_rowwise_iterator.cc` seeks past the row key the
/// paging state carries; the row itself need not exist any more).
pub fn key_order(a: &DocId, b: &DocId) -> Ordering {
    let hash = |d: &DocId| {
        let values: Vec<Scalar> = d.hashed.iter().map(|k| k.scalar.clone()).collect();
        crate::partition::hash_of(&values)
    };
    hash(a)
        .cmp(&hash(b))
        .then_with(|| clustering_cmp(&a.hashed, &b.hashed))
        .then_with(|| clustering_cmp(&a.range, &b.range))
}

/// Clustering order: component by component, descending components reversed.
fn clustering_cmp(a: &[Key], b: &[Key]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let ord = value_cmp(&x.scalar, &y.scalar);
        let ord = if x.desc { ord.reverse() } else { ord };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    a.len().cmp(&b.len())
}

/// Whether `have` meets `<cmp> want` in CQL's order of the column's type.
pub fn compare(have: &Scalar, cmp: Cmp, want: &Scalar) -> bool {
    let ord = value_cmp(have, want);
    match cmp {
        Cmp::Eq => ord.is_eq(),
        Cmp::Lt => ord.is_lt(),
        Cmp::Le => ord.is_le(),
        Cmp::Gt => ord.is_gt(),
        Cmp::Ge => ord.is_ge(),
    }
}

/// A row exists if its liveness column is visible, or a column of the schema holds
/// something (a dropped column's values do not count).
fn exists(schema: &Schema, row: &BTreeMap<Key, Doc>) -> bool {
    let current = |id: &i32| schema.regular.iter().any(|r| r.id == *id);
    row.iter().any(|(k, v)| match (&k.scalar, v) {
        (Scalar::SystemColumn(0), _) => true,
        (Scalar::Column(id), Doc::Leaf(s)) => *s != Scalar::Null && current(id),
        (Scalar::Column(id), Doc::Object(m)) => !m.is_empty() && current(id),
        _ => false,
    })
}

fn cell(schema: &Schema, doc: &DocId, row: &BTreeMap<Key, Doc>, name: &str) -> Cell {
    if let Some(at) = schema.hash.iter().position(|n| n == name) {
        return Cell::Scalar(doc.hashed[at].scalar.clone());
    }
    if let Some(at) = schema.range.iter().position(|(n, _)| n == name) {
        return Cell::Scalar(doc.range[at].scalar.clone());
    }
    let leaf = |d: &Doc| match d {
        Doc::Leaf(s) => s.clone(),
        Doc::Object(_) => Scalar::Null,
    };
    match (schema.kind(name), row.get(&column(schema, name))) {
        (_, None) => Cell::Null,
        (ColKind::Scalar, Some(Doc::Leaf(s))) => Cell::Scalar(s.clone()),
        (ColKind::Map, Some(Doc::Object(m))) => {
            Cell::Map(m.iter().map(|(k, v)| (k.scalar.clone(), leaf(v))).collect())
        }
        (ColKind::Set, Some(Doc::Object(m))) => {
            Cell::Set(m.keys().map(|k| k.scalar.clone()).collect())
        }
        (ColKind::List, Some(Doc::Object(m))) => Cell::List(m.values().map(leaf).collect()),
        (ColKind::Jsonb, Some(doc)) => Cell::Json(doc.clone()),
        _ => Cell::Null,
    }
}
