//! Parsing and executing INSERT, UPDATE, DELETE and SELECT.

use super::json::parse_json;
use super::lexer::{Cursor, Tok};
use super::schema::{ColumnKind, CqlTable, CqlType};
use crate::doc_write::expand;
use crate::document::Document;
use crate::encoding::{DocKey, DocPath, KeyEntry, Primitive, SortOrder, Ttl, Value, ValueKind};
use crate::error::{errinput, Error, Result};
use crate::hybrid_time::HybridTime;
use crate::reader::read_subdocument;
use crate::script::{DocWrite, WriteKind};
use crate::tablet::Tablet;
use crate::write_batch::DocWriteBatch;
use std::collections::BTreeMap;

/// The table a statement names.
pub fn target_table(statement: &str) -> Result<String> {
    let mut c = Cursor::new(statement)?;
    match c.ident()?.as_str() {
        "insert" => c.expect_kw("into")?,
        "update" => {}
        "delete" | "select" => {
            while !c.eat_kw("from") {
                if c.next_tok().is_none() {
                    return Err(c.error("expected FROM"));
                }
            }
        }
        other => return Err(c.error(format!("unsupported statement `{}`", other.to_uppercase()))),
    }
    c.ident()
}

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

/// Run one statement at `ht`.
pub fn run(
    table: &CqlTable,
    tablet: &mut Tablet,
    ht: HybridTime,
    statement: &str,
) -> Result<Outcome> {
    let mut c = Cursor::new(statement)?;
    let verb = c.ident()?;
    let entries = match verb.as_str() {
        "insert" => insert(table, &mut c, ht)?,
        "update" => update(table, &mut c, ht)?,
        "delete" => delete(table, &mut c)?,
        "select" => return select(table, tablet, &mut c, ht).map(Outcome::Rows),
        other => return errinput!("CQL: unsupported statement {}", other.to_uppercase()),
    };
    tablet.write(&entries.iter().collect(), ht)?;
    Ok(Outcome::Written)
}

/// A CQL literal as written.
#[derive(Clone, Debug, PartialEq)]
enum Lit {
    Str(String),
    Num(String),
    Bool(bool),
    Null,
    /// `{k: v, ...}` (values present) or `{e, ...}` (a set).
    Braces(Vec<(Lit, Option<Lit>)>),
    List(Vec<Lit>),
}

impl std::fmt::Display for Lit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lit::Str(s) => write!(f, "'{s}'"),
            Lit::Num(n) => f.write_str(n),
            Lit::Bool(b) => write!(f, "{b}"),
            Lit::Null => f.write_str("null"),
            Lit::Braces(_) => f.write_str("{...}"),
            Lit::List(_) => f.write_str("[...]"),
        }
    }
}

fn literal(c: &mut Cursor<'_>) -> Result<Lit> {
    match c.next_tok() {
        Some(Tok::Str(s)) => Ok(Lit::Str(s)),
        Some(Tok::Num(n)) => Ok(Lit::Num(n)),
        Some(Tok::Ident(w)) if w == "true" || w == "false" => Ok(Lit::Bool(w == "true")),
        Some(Tok::Ident(w)) if w == "null" => Ok(Lit::Null),
        Some(Tok::Sym("{")) => {
            let mut items = Vec::new();
            while !c.eat("}") {
                let k = literal(c)?;
                let v = if c.eat(":") { Some(literal(c)?) } else { None };
                items.push((k, v));
                if !c.eat(",") {
                    c.expect("}")?;
                    break;
                }
            }
            Ok(Lit::Braces(items))
        }
        Some(Tok::Sym("[")) => {
            let mut items = Vec::new();
            while !c.eat("]") {
                items.push(literal(c)?);
                if !c.eat(",") {
                    c.expect("]")?;
                    break;
                }
            }
            Ok(Lit::List(items))
        }
        _ => {
            c.i_back();
            Err(c.error(format!("expected a value, found {}", c.found())))
        }
    }
}

/// Convert a scalar literal to a primitive of type `ty`.
fn primitive(ty: &CqlType, lit: &Lit, what: &str) -> Result<Primitive> {
    let mismatch = || errinput!("type mismatch for {what}: expected {}, got {lit}", type_name(ty));
    let int = |n: &str| n.parse::<i64>().ok();
    Ok(match (ty, lit) {
        (CqlType::Text, Lit::Str(s)) => Primitive::String(s.clone()),
        (CqlType::Int, Lit::Num(n)) => match int(n).and_then(|v| i32::try_from(v).ok()) {
            Some(v) => Primitive::Int32(v),
            None => return mismatch(),
        },
        (CqlType::Bigint, Lit::Num(n)) => match int(n) {
            Some(v) => Primitive::Int64(v),
            None => return mismatch(),
        },
        (CqlType::Double, Lit::Num(n)) => match n.parse::<f64>() {
            Ok(v) => Primitive::Double(v),
            Err(_) => return mismatch(),
        },
        (CqlType::Boolean, Lit::Bool(b)) => Primitive::Bool(*b),
        // CQL timestamps are milliseconds since the epoch; stored as microseconds.
        (CqlType::Timestamp, Lit::Num(n)) => match int(n).and_then(|ms| ms.checked_mul(1000)) {
            Some(us) => Primitive::Timestamp(us),
            None => return mismatch(),
        },
        (_, Lit::Null) => return errinput!("{what} cannot be null"),
        _ => return mismatch(),
    })
}

fn type_name(ty: &CqlType) -> String {
    match ty {
        CqlType::Text => "text".into(),
        CqlType::Int => "int".into(),
        CqlType::Bigint => "bigint".into(),
        CqlType::Double => "double".into(),
        CqlType::Boolean => "boolean".into(),
        CqlType::Timestamp => "timestamp".into(),
        CqlType::Jsonb => "jsonb".into(),
        CqlType::Map(k, v) => format!("map<{}, {}>", type_name(k), type_name(v)),
        CqlType::Set(e) => format!("set<{}>", type_name(e)),
        CqlType::List(e) => format!("list<{}>", type_name(e)),
    }
}

/// `USING TTL n` (seconds): 0 means never expires.
fn using_ttl(c: &mut Cursor<'_>) -> Result<Ttl> {
    if !c.eat_kw("using") {
        return Ok(Ttl::Inherit);
    }
    c.expect_kw("ttl")?;
    let secs = c.unsigned()?;
    Ok(Ttl::from_ms(secs.saturating_mul(1000)))
}

fn column<'t>(table: &'t CqlTable, name: &str) -> Result<&'t super::Column> {
    match table.column(name) {
        Some(col) => Ok(col),
        None => errinput!("unknown column {name} in table {}", table.name),
    }
}

fn doc_key(table: &CqlTable, key: &BTreeMap<String, Primitive>) -> Result<DocKey> {
    let mut doc = DocKey::default();
    for col in table.hash_columns() {
        let Some(v) = key.get(&col.name) else {
            return errinput!("missing key column {}", col.name);
        };
        doc.hashed.push(KeyEntry::asc(v.clone()));
    }
    for col in table.range_columns() {
        let Some(v) = key.get(&col.name) else {
            return errinput!("missing key column {}", col.name);
        };
        let ColumnKind::Range(order) = col.kind else { unreachable!("range column") };
        doc.range.push(KeyEntry { value: v.clone(), order });
    }
    Ok(doc)
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

/// The statement's hybrid time and `USING TTL`.
#[derive(Clone, Copy)]
struct Stamp {
    ht: HybridTime,
    ttl: Ttl,
}

/// Entries writing `lit` as the whole value of a column (overwrite).
fn write_whole(t: Target<'_>, lit: &Lit, s: Stamp, out: &mut Vec<(DocPath, Value)>) -> Result<()> {
    if *lit == Lit::Null {
        out.push((t.path, Value::tombstone()));
        return Ok(());
    }
    if !t.ty.is_nested() {
        let p = primitive(t.ty, lit, t.name)?;
        out.push((t.path, Value { ttl: s.ttl, kind: ValueKind::Primitive(p) }));
        return Ok(());
    }
    // A collection or jsonb value (possibly a scalar jsonb) written whole: overwrite.
    let kind = WriteKind::Set(nested_document(t.ty, lit, s.ht, t.name)?);
    out.extend(expand(&DocWrite { path: t.path, kind, ttl_us: None }, s.ttl));
    Ok(())
}

/// Entries adding elements to a collection (`m = m + {...}`, `l = l + [...]`, `||`).
fn write_elements(
    t: Target<'_>,
    lit: &Lit,
    s: Stamp,
    out: &mut Vec<(DocPath, Value)>,
) -> Result<()> {
    match nested_document(t.ty, lit, s.ht, t.name)? {
        doc @ Document::Object(_) => {
            let write = DocWrite { path: t.path, kind: WriteKind::Extend(doc), ttl_us: None };
            out.extend(expand(&write, s.ttl));
            Ok(())
        }
        Document::Primitive(_) => errinput!("{}: can only add an object or collection", t.name),
    }
}

/// A collection or jsonb literal as a document (keys in stored order).
fn nested_document(ty: &CqlType, lit: &Lit, ht: HybridTime, what: &str) -> Result<Document> {
    let mut map = BTreeMap::new();
    match (ty, lit) {
        (CqlType::Map(kt, vt), Lit::Braces(items)) => {
            for (k, v) in items {
                let Some(v) = v else { return errinput!("{what}: a map entry needs `key: value`") };
                let value = Document::Primitive(primitive(vt, v, what)?);
                map.insert(KeyEntry::asc(primitive(kt, k, what)?), value);
            }
        }
        (CqlType::Set(et), Lit::Braces(items)) => {
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
        (CqlType::List(et), Lit::List(items)) => {
            if items.len() >= 1000 {
                return errinput!("{what}: at most 999 list elements per statement");
            }
            let base = i64::try_from(ht.physical_us()).unwrap_or(i64::MAX / 1000) * 1000;
            for (i, e) in items.iter().enumerate() {
                let index = KeyEntry::asc(Primitive::Int64(base + i as i64));
                map.insert(index, Document::Primitive(primitive(et, e, what)?));
            }
        }
        (CqlType::Jsonb, Lit::Str(text)) => {
            return parse_json(text).map_err(|e| Error::InvalidInput(format!("{what}: {e}")));
        }
        _ => return errinput!("type mismatch for {what}: expected {}, got {lit}", type_name(ty)),
    }
    Ok(Document::Object(map))
}

fn insert(table: &CqlTable, c: &mut Cursor<'_>, ht: HybridTime) -> Result<Vec<(DocPath, Value)>> {
    c.expect_kw("into")?;
    c.ident()?;
    c.expect("(")?;
    let names = c.comma_list(Cursor::ident)?;
    c.expect(")")?;
    c.expect_kw("values")?;
    c.expect("(")?;
    let lits = c.comma_list(literal)?;
    c.expect(")")?;
    let ttl = using_ttl(c)?;
    c.finish()?;
    if names.len() != lits.len() {
        return errinput!("INSERT names {} columns but gives {} values", names.len(), lits.len());
    }
    let given: BTreeMap<&str, &Lit> = names.iter().map(String::as_str).zip(&lits).collect();
    if given.len() != names.len() {
        return errinput!("INSERT names a column twice");
    }
    let mut key = BTreeMap::new();
    for name in &names {
        let col = column(table, name)?;
        if !matches!(col.kind, ColumnKind::Regular(_)) {
            key.insert(name.clone(), primitive(&col.ty, given[name.as_str()], name)?);
        }
    }
    let doc = doc_key(table, &key)?;
    let liveness = DocPath::new(doc.clone(), vec![KeyEntry::asc(Primitive::SystemColumnId(0))]);
    let mut out = vec![(liveness, Value { ttl, kind: ValueKind::Primitive(Primitive::Null) })];
    for col in &table.columns {
        if let (ColumnKind::Regular(id), Some(lit)) = (col.kind, given.get(col.name.as_str())) {
            let target = Target { ty: &col.ty, path: column_path(&doc, id), name: &col.name };
            write_whole(target, lit, Stamp { ht, ttl }, &mut out)?;
        }
    }
    Ok(out)
}

/// One `SET` assignment.
enum Assign {
    Whole(String, Lit),
    Add(String, Lit),
    Remove(String, Lit),
    Element(String, Lit, Lit),
    JsonPath(String, Vec<String>, Lit),
}

fn assignment(c: &mut Cursor<'_>) -> Result<Assign> {
    let name = c.ident()?;
    if c.eat("[") {
        let key = literal(c)?;
        c.expect("]")?;
        c.expect("=")?;
        return Ok(Assign::Element(name, key, literal(c)?));
    }
    if matches!(c.peek(), Some(Tok::Sym("->"))) {
        let mut path = Vec::new();
        while c.eat("->") {
            match c.next_tok() {
                Some(Tok::Str(s)) => path.push(s),
                _ => return Err(c.error("expected a quoted jsonb key after ->")),
            }
        }
        c.expect("=")?;
        return Ok(Assign::JsonPath(name, path, literal(c)?));
    }
    c.expect("=")?;
    if matches!(c.peek(), Some(Tok::Ident(n)) if *n == name) {
        c.next_tok();
        let op = c.next_tok();
        let lit = literal(c)?;
        return match op {
            Some(Tok::Sym("+")) | Some(Tok::Sym("||")) => Ok(Assign::Add(name, lit)),
            Some(Tok::Sym("-")) => Ok(Assign::Remove(name, lit)),
            _ => Err(c.error("expected `+`, `-` or `||` after the column name")),
        };
    }
    Ok(Assign::Whole(name, literal(c)?))
}

fn update(table: &CqlTable, c: &mut Cursor<'_>, ht: HybridTime) -> Result<Vec<(DocPath, Value)>> {
    c.ident()?;
    let ttl = using_ttl(c)?;
    c.expect_kw("set")?;
    let assigns = c.comma_list(assignment)?;
    let doc = where_full_key(table, c)?;
    let mut out = Vec::new();
    for assign in assigns {
        apply_assign(table, &doc, assign, ttl, ht, &mut out)?;
    }
    Ok(out)
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
    assign: Assign,
    ttl: Ttl,
    ht: HybridTime,
    out: &mut Vec<(DocPath, Value)>,
) -> Result<()> {
    match assign {
        Assign::Whole(name, lit) => {
            let (id, ty) = regular(table, &name)?;
            let target = Target { ty: &ty, path: column_path(doc, id), name: &name };
            write_whole(target, &lit, Stamp { ht, ttl }, out)
        }
        Assign::Add(name, lit) => {
            let (id, ty) = regular(table, &name)?;
            let target = Target { ty: &ty, path: column_path(doc, id), name: &name };
            write_elements(target, &lit, Stamp { ht, ttl }, out)
        }
        Assign::Remove(name, lit) => {
            let (id, ty) = regular(table, &name)?;
            let keys: Vec<Lit> = match (&ty, lit) {
                (CqlType::Set(_) | CqlType::Map(..), Lit::Braces(items)) => {
                    items.into_iter().map(|(k, _)| k).collect()
                }
                _ => return errinput!("{name}: `-` removes a set of elements or map keys"),
            };
            let key_ty = match &ty {
                CqlType::Set(e) | CqlType::Map(e, _) => e,
                _ => unreachable!("matched above"),
            };
            for k in keys {
                let key = KeyEntry::asc(primitive(key_ty, &k, &name)?);
                out.push((column_path(doc, id).child(key), Value::tombstone()));
            }
            Ok(())
        }
        Assign::Element(name, key, value) => {
            let (id, ty) = regular(table, &name)?;
            let CqlType::Map(kt, vt) = &ty else {
                return errinput!("{name}[...] needs a map column");
            };
            let path = column_path(doc, id).child(KeyEntry::asc(primitive(kt, &key, &name)?));
            write_whole(Target { ty: vt, path, name: &name }, &value, Stamp { ht, ttl }, out)
        }
        Assign::JsonPath(name, keys, lit) => {
            let (id, ty) = regular(table, &name)?;
            if ty != CqlType::Jsonb {
                return errinput!("{name}->... needs a jsonb column");
            }
            let mut path = column_path(doc, id);
            for k in keys {
                path = path.child(KeyEntry::asc(Primitive::String(k)));
            }
            let target = Target { ty: &CqlType::Jsonb, path, name: &name };
            write_whole(target, &lit, Stamp { ht, ttl }, out)
        }
    }
}

fn delete(table: &CqlTable, c: &mut Cursor<'_>) -> Result<Vec<(DocPath, Value)>> {
    let mut targets: Vec<(String, Option<Lit>)> = Vec::new();
    while !c.eat_kw("from") {
        let name = c.ident()?;
        let elem = if c.eat("[") {
            let k = literal(c)?;
            c.expect("]")?;
            Some(k)
        } else {
            None
        };
        targets.push((name, elem));
        c.eat(",");
    }
    c.ident()?;
    let doc = where_full_key(table, c)?;
    if targets.is_empty() {
        return Ok(vec![(DocPath::new(doc, vec![]), Value::tombstone())]);
    }
    let mut out = Vec::new();
    for (name, elem) in targets {
        let (id, ty) = regular(table, &name)?;
        let mut path = column_path(&doc, id);
        if let Some(k) = elem {
            let (CqlType::Map(kt, _) | CqlType::Set(kt)) = &ty else {
                return errinput!("{name}[...] needs a map or set column");
            };
            path = path.child(KeyEntry::asc(primitive(kt, &k, &name)?));
        }
        out.push((path, Value::tombstone()));
    }
    Ok(out)
}

/// A `WHERE` condition.
struct Condition {
    column: String,
    op: &'static str,
    value: Lit,
}

fn where_clause(c: &mut Cursor<'_>) -> Result<Vec<Condition>> {
    c.expect_kw("where")?;
    let mut conds = Vec::new();
    loop {
        let column = c.ident()?;
        let op = match c.next_tok() {
            Some(Tok::Sym(s @ ("=" | "<" | "<=" | ">" | ">="))) => s,
            _ => return Err(c.error("expected a comparison (=, <, <=, >, >=)")),
        };
        conds.push(Condition { column, op, value: literal(c)? });
        if !(c.eat_kw("and") || c.eat(",")) {
            break;
        }
    }
    c.finish()?;
    Ok(conds)
}

/// `WHERE` naming every key column with `=`: the row's document key.
fn where_full_key(table: &CqlTable, c: &mut Cursor<'_>) -> Result<DocKey> {
    let mut key = BTreeMap::new();
    for cond in where_clause(c)? {
        let col = column(table, &cond.column)?;
        if matches!(col.kind, ColumnKind::Regular(_)) || cond.op != "=" {
            return errinput!(
                "WHERE must be `=` on the primary key columns, not {} {}",
                cond.column,
                cond.op
            );
        }
        key.insert(cond.column.clone(), primitive(&col.ty, &cond.value, &cond.column)?);
    }
    doc_key(table, &key)
}

fn select(
    table: &CqlTable,
    tablet: &Tablet,
    c: &mut Cursor<'_>,
    ht: HybridTime,
) -> Result<Vec<Row>> {
    let names = if c.eat("*") {
        table.columns.iter().map(|col| col.name.clone()).collect()
    } else {
        c.comma_list(|c| Ok(column(table, &c.ident()?)?.name.clone()))?
    };
    c.expect_kw("from")?;
    c.ident()?;
    let conds = where_clause(c)?;
    let mut hash = DocKey::default();
    for col in table.hash_columns() {
        let Some(cond) = conds.iter().find(|k| k.column == col.name && k.op == "=") else {
            return errinput!("SELECT needs `{} = ...` (the whole hash key)", col.name);
        };
        hash.hashed.push(KeyEntry::asc(primitive(&col.ty, &cond.value, &col.name)?));
    }
    let mut ranges = Vec::new();
    for cond in &conds {
        let col = column(table, &cond.column)?;
        match col.kind {
            ColumnKind::Hash => {}
            ColumnKind::Range(_) => {
                let index = table.range_key.iter().position(|n| *n == col.name).expect("range");
                ranges.push((index, cond.op, primitive(&col.ty, &cond.value, &col.name)?));
            }
            ColumnKind::Regular(_) => {
                return errinput!("cannot filter on regular column {} (only key columns)", col.name)
            }
        }
    }
    let mut out = Vec::new();
    for (doc, row) in read_rows(tablet, &hash, ht)? {
        let in_range = ranges.iter().all(|(i, op, v)| {
            let ord = KeyEntry::asc(doc.range[*i].value.clone()).cmp(&KeyEntry::asc(v.clone()));
            match *op {
                "=" => ord.is_eq(),
                "<" => ord.is_lt(),
                "<=" => ord.is_le(),
                ">" => ord.is_gt(),
                _ => ord.is_ge(),
            }
        });
        if in_range && row_exists(&row) {
            out.push(project_row(table, &names, &doc, &row));
        }
    }
    Ok(out)
}

/// Every row of one hash key, in clustering order, read at `ht`.
fn read_rows(tablet: &Tablet, hash: &DocKey, ht: HybridTime) -> Result<Vec<(DocKey, Document)>> {
    tablet.db().check_read_time(ht)?;
    let mut prefix = hash.encode();
    prefix.pop(); // the empty range group's `!`: keep the hashed group only
    let mut rows = Vec::new();
    let read = tablet.db().read_config(ht, tablet.table_ttl_ms());
    for (doc, entries) in tablet.db().scan_documents(&prefix, ht)? {
        let root = DocPath::new(doc.clone(), vec![]);
        if let Some(row) = read_subdocument(entries, &root, read) {
            rows.push((doc, row));
        }
    }
    Ok(rows)
}

fn row_exists(row: &Document) -> bool {
    let Document::Object(map) = row else { return false };
    map.iter().any(|(k, v)| match (&k.value, v) {
        (Primitive::SystemColumnId(0), _) => true,
        (Primitive::ColumnId(_), Document::Primitive(p)) => *p != Primitive::Null,
        (Primitive::ColumnId(_), Document::Object(m)) => !m.is_empty(),
        _ => false,
    })
}

fn project_row(table: &CqlTable, names: &[String], doc: &DocKey, row: &Document) -> Row {
    let Document::Object(map) = row else { unreachable!("rows that exist are objects") };
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let col = table.column(name).expect("validated");
        let cell = match col.kind {
            ColumnKind::Hash => {
                let at = table.hash_key.iter().position(|n| n == name).expect("hash");
                Cell::Value(doc.hashed[at].value.clone())
            }
            ColumnKind::Range(_) => {
                let at = table.range_key.iter().position(|n| n == name).expect("range");
                Cell::Value(doc.range[at].value.clone())
            }
            ColumnKind::Regular(id) => {
                cell(&col.ty, map.get(&KeyEntry::asc(Primitive::ColumnId(id))))
            }
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

/// A prepared INSERT with bound values: the entries of one row, in the order an INSERT
/// writes them (liveness column, then the given columns in declaration order). Values are
/// primitives of the columns' types; collections need the statement form. The document
/// key is encoded once and shared by every entry.
pub fn insert_row(
    table: &CqlTable,
    values: &[(&str, Primitive)],
    ttl: Ttl,
) -> Result<DocWriteBatch> {
    for (name, value) in values {
        check_type(&column(table, name)?.ty, value, name)?;
    }
    let bound = |name: &String| match values.iter().find(|(n, _)| n == name) {
        Some((_, v)) => Ok(v),
        None => errinput!("missing key column {name}"),
    };
    let mut hashed = Vec::with_capacity(table.hash_key.len());
    for name in &table.hash_key {
        hashed.push((bound(name)?, SortOrder::Ascending));
    }
    let mut range = Vec::with_capacity(table.range_key.len());
    for col in table.range_columns() {
        let ColumnKind::Range(order) = col.kind else { unreachable!("range column") };
        range.push((bound(&col.name)?, order));
    }
    let mut doc = Vec::with_capacity(64);
    crate::encoding::encode_doc_key(None, &hashed, &range, &mut doc);
    let mut batch =
        DocWriteBatch::with_capacity(values.len() + 1, (doc.len() + 24) * (values.len() + 1));
    let subkey = |k: &mut Vec<u8>, p: Primitive| {
        k.extend_from_slice(&doc);
        KeyEntry::asc(p).encode_to(k);
    };
    batch.push_with(
        |k| subkey(k, Primitive::SystemColumnId(0)),
        |v| Value::encode_leaf(ttl, &Primitive::Null, v),
    );
    for col in &table.columns {
        let ColumnKind::Regular(id) = col.kind else { continue };
        if let Some((_, value)) = values.iter().find(|(n, _)| *n == col.name) {
            batch.push_with(
                |k| subkey(k, Primitive::ColumnId(id)),
                |v| match value {
                    Primitive::Null => Value::tombstone().encode_to(v),
                    leaf => Value::encode_leaf(ttl, leaf, v),
                },
            );
        }
    }
    Ok(batch)
}

/// Read one row by its full primary key (key columns in key order: hash, then range).
/// `None` if the row does not exist at `ht`.
pub fn read_row(
    table: &CqlTable,
    tablet: &Tablet,
    key: &[Primitive],
    ht: HybridTime,
) -> Result<Option<Document>> {
    let names = table.hash_key.iter().chain(&table.range_key);
    let key: BTreeMap<String, Primitive> = names.cloned().zip(key.iter().cloned()).collect();
    let doc = doc_key(table, &key)?;
    let row = tablet.get(&DocPath::new(doc, vec![]), ht)?;
    Ok(row.filter(row_exists))
}

fn check_type(ty: &CqlType, value: &Primitive, what: &str) -> Result<()> {
    let ok = matches!(
        (ty, value),
        (_, Primitive::Null)
            | (CqlType::Text, Primitive::String(_))
            | (CqlType::Int, Primitive::Int32(_))
            | (CqlType::Bigint, Primitive::Int64(_))
            | (CqlType::Double, Primitive::Double(_))
            | (CqlType::Boolean, Primitive::Bool(_))
            | (CqlType::Timestamp, Primitive::Timestamp(_))
    );
    if ok {
        Ok(())
    } else {
        errinput!("type mismatch for {what}: expected {}, got {}", type_name(ty), value.type_name())
    }
}
