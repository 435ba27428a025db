//! CQL table schemas: `CREATE TABLE` parsing, column ids and key layout.
//!
//! Hash columns form the hashed group of the document key, clustering columns the range
//! group (ascending or descending); every other column is a subdocument keyed by its
//! column id, assigned in declaration order from `col(10)`. The liveness column is `sys(0)`.

use super::lexer::{Cursor, Result};
use crate::encoding::{Packings, SchemaPacking, SortOrder};
use std::fmt;

/// The first column id given to a non-key column.
pub const FIRST_COLUMN_ID: i32 = 10;

/// A CQL type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CqlType {
    Text,
    Int,
    Bigint,
    Double,
    Boolean,
    Timestamp,
    Map(Box<CqlType>, Box<CqlType>),
    Set(Box<CqlType>),
    List(Box<CqlType>),
    Jsonb,
}

impl CqlType {
    /// Whether values of this type are stored as a subdocument.
    pub fn is_nested(&self) -> bool {
        matches!(self, CqlType::Map(..) | CqlType::Set(_) | CqlType::List(_) | CqlType::Jsonb)
    }

    /// The type's CQL name (`int`, `map<text, bigint>`).
    pub fn name(&self) -> String {
        match self {
            CqlType::Text => "text".into(),
            CqlType::Int => "int".into(),
            CqlType::Bigint => "bigint".into(),
            CqlType::Double => "double".into(),
            CqlType::Boolean => "boolean".into(),
            CqlType::Timestamp => "timestamp".into(),
            CqlType::Jsonb => "jsonb".into(),
            CqlType::Map(k, v) => format!("map<{}, {}>", k.name(), v.name()),
            CqlType::Set(e) => format!("set<{}>", e.name()),
            CqlType::List(e) => format!("list<{}>", e.name()),
        }
    }

    /// The type a CQL type name (`map<text, int>`) names.
    pub fn from_name(name: &str) -> Result<CqlType> {
        let mut c = Cursor::new(name)?;
        let ty = CqlType::parse(&mut c)?;
        c.finish()?;
        Ok(ty)
    }

    pub(super) fn parse(c: &mut Cursor<'_>) -> Result<CqlType> {
        let name = c.ident()?;
        let elem = |c: &mut Cursor<'_>| -> Result<Box<CqlType>> {
            let t = CqlType::parse(c)?;
            if t.is_nested() {
                return Err(c.error("nested collections are not supported"));
            }
            Ok(Box::new(t))
        };
        Ok(match name.as_str() {
            "text" | "varchar" => CqlType::Text,
            "int" => CqlType::Int,
            "bigint" => CqlType::Bigint,
            "double" => CqlType::Double,
            "boolean" => CqlType::Boolean,
            "timestamp" => CqlType::Timestamp,
            "jsonb" => CqlType::Jsonb,
            "map" => {
                c.expect("<")?;
                let k = elem(c)?;
                c.expect(",")?;
                let v = elem(c)?;
                c.expect(">")?;
                CqlType::Map(k, v)
            }
            "set" | "list" => {
                c.expect("<")?;
                let e = elem(c)?;
                c.expect(">")?;
                if name == "set" {
                    CqlType::Set(e)
                } else {
                    CqlType::List(e)
                }
            }
            other => return Err(c.error(format!("unsupported type `{other}`"))),
        })
    }
}

/// The role of a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnKind {
    /// Part of the partition (hash) key.
    Hash,
    /// A clustering (range) column and its order.
    Range(SortOrder),
    /// A regular column with its id.
    Regular(i32),
}

/// One column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// Lower-case name.
    pub name: String,
    /// Type.
    pub ty: CqlType,
    /// Role.
    pub kind: ColumnKind,
}

/// A table schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CqlTable {
    /// Lower-case name.
    pub name: String,
    /// Columns in declaration order (the order of `SELECT *`).
    pub columns: Vec<Column>,
    /// Hash column names in key order.
    pub hash_key: Vec<String>,
    /// Clustering column names in key order.
    pub range_key: Vec<String>,
    /// `default_time_to_live`, in milliseconds.
    pub default_ttl_ms: Option<u64>,
    /// `WITH packed_rows = true`: an INSERT naming every non-key column writes one packed
    /// row (`statement.rs`).
    pub packed_rows: bool,
    /// Packed rows are stored as RocksDB entities (the entity layout: `layout entity`).
    pub entity_rows: bool,
    /// `WITH tablets = N`: the table split into N tablets by ranges of the 16-bit hash
    /// (`ids::Part`); 1 unless declared.
    pub tablets: u16,
    /// The schema version: 0 at `CREATE TABLE`, one more at each `ALTER TABLE`.
    pub schema_version: u32,
    /// The id the next added column gets: ids are never reused, so a column dropped and
    /// added again is a new column and its old values stay hidden.
    next_column_id: i32,
    /// The packing of every schema version so far.
    packings: Packings,
}

/// What an `ALTER TABLE` changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AlterChange {
    /// `ADD <column> <type>`.
    Add { column: String, ty: CqlType },
    /// `DROP <column>`.
    Drop { column: String },
}

impl CqlTable {
    /// Parse a `CREATE TABLE` statement (the schema checks — declared, non-collection
    /// key columns — are part of parsing, reported at the end of the statement).
    pub fn parse(statement: &str) -> Result<CqlTable> {
        let mut c = Cursor::new(statement)?;
        c.expect_kw("create")?;
        c.expect_kw("table")?;
        let name = c.ident()?;
        c.expect("(")?;
        let mut decls: Vec<(String, CqlType)> = Vec::new();
        let mut hash: Vec<String> = Vec::new();
        let mut range: Vec<String> = Vec::new();
        loop {
            if c.eat_kw("primary") {
                c.expect_kw("key")?;
                parse_primary_key(&mut c, &mut hash, &mut range)?;
            } else {
                let col = c.ident()?;
                let ty = CqlType::parse(&mut c)?;
                if c.eat_kw("primary") {
                    c.expect_kw("key")?;
                    hash.push(col.clone());
                }
                if decls.iter().any(|(n, _)| *n == col) {
                    return Err(c.error(format!("column {col} declared twice")));
                }
                decls.push((col, ty));
            }
            if !c.eat(",") {
                break;
            }
        }
        c.expect(")")?;
        let with = parse_with(&mut c)?;
        c.finish()?;
        // The schema checks point at the end of the statement.
        let mut table = build(name, decls, hash, range, with.desc, with.ttl_ms);
        if let Ok(table) = &mut table {
            table.packed_rows = with.packed_rows;
            table.tablets = with.tablets.unwrap_or(1);
        }
        table.map_err(|m| c.error(m))
    }

    /// The table declared by parts: columns in declaration order with their types, the
    /// hash key, the clustering key with each column's order, `default_time_to_live` in
    /// seconds (0: none). The same checks as `CREATE TABLE`; a table that fails them is an
    /// invalid request (there is no text to point into).
    pub fn declare(
        name: &str,
        columns: Vec<(String, CqlType)>,
        hash: Vec<String>,
        range: Vec<(String, SortOrder)>,
        default_ttl_s: Option<u64>,
    ) -> crate::error::Result<CqlTable> {
        let desc = range.iter().filter(|(_, o)| *o == SortOrder::Descending);
        let desc = desc.map(|(n, _)| n.clone()).collect();
        let range = range.into_iter().map(|(n, _)| n).collect();
        let ttl_ms = default_ttl_s.filter(|s| *s > 0).map(|s| s.saturating_mul(1000));
        build(name.to_owned(), columns, hash, range, desc, ttl_ms)
            .map_err(crate::error::Error::InvalidRequest)
    }

    /// The packing of every schema version so far, for reading packed rows.
    pub fn packings(&self) -> &Packings {
        &self.packings
    }

    /// The packing of the current schema version.
    pub fn packing(&self) -> &SchemaPacking {
        self.packings.get(self.schema_version).expect("every version has its packing")
    }

    /// Apply an `ALTER TABLE`: a new schema version. An added column gets a new id (as
    /// YugabyteDB's `SchemaBuilder::AddColumn`, `common/schema.cc`: the next id after the
    /// highest ever used); a dropped column's values stay stored under its id, which no
    /// column of the table has any more, so no read shows them.
    pub fn alter(&mut self, change: &AlterChange) -> crate::error::Result<()> {
        let invalid = |why: String| Err(crate::error::Error::InvalidRequest(why));
        match change {
            AlterChange::Add { column, ty } => {
                if self.column(column).is_some() {
                    return invalid(format!("column {column} already exists in {}", self.name));
                }
                let kind = ColumnKind::Regular(self.next_column_id);
                self.next_column_id += 1;
                self.columns.push(Column { name: column.clone(), ty: ty.clone(), kind });
            }
            AlterChange::Drop { column } => match self.column(column).map(|c| c.kind) {
                None => return invalid(format!("unknown column {column} in table {}", self.name)),
                Some(ColumnKind::Regular(_)) => self.columns.retain(|c| c.name != *column),
                Some(_) => return invalid(format!("cannot drop key column {column}")),
            },
        }
        self.schema_version += 1;
        self.packings.insert(packing_of(self.schema_version, &self.columns));
        Ok(())
    }

    /// Go back to the columns of `then` (this table as it was at an earlier time: a
    /// restore), as a new schema version: versions are never reused, and every earlier
    /// version keeps its packing, so a row packed under any of them still decodes (a full
    /// compaction repacks a row under the version of its time, keeping the row's own
    /// hybrid time). Column ids continue from `then`'s, as the model's do.
    pub fn restore_columns(&mut self, then: &CqlTable) {
        self.columns = then.columns.clone();
        self.next_column_id = then.next_column_id;
        self.schema_version += 1;
        self.packings.insert(packing_of(self.schema_version, &self.columns));
    }

    /// The column named `name`.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The name of regular column `id`.
    pub fn column_name(&self, id: i32) -> Option<&str> {
        self.columns.iter().find(|c| c.kind == ColumnKind::Regular(id)).map(|c| c.name.as_str())
    }

    /// Hash columns in key order.
    pub fn hash_columns(&self) -> impl Iterator<Item = &Column> {
        self.hash_key.iter().map(|n| self.column(n).expect("key columns are declared"))
    }

    /// Clustering columns in key order.
    pub fn range_columns(&self) -> impl Iterator<Item = &Column> {
        self.range_key.iter().map(|n| self.column(n).expect("key columns are declared"))
    }
}

fn parse_primary_key(
    c: &mut Cursor<'_>,
    hash: &mut Vec<String>,
    range: &mut Vec<String>,
) -> Result<()> {
    if !hash.is_empty() {
        return Err(c.error("primary key declared twice"));
    }
    c.expect("(")?;
    if c.eat("(") {
        hash.extend(c.comma_list(Cursor::ident)?);
        c.expect(")")?;
    } else {
        hash.push(c.ident()?);
    }
    while c.eat(",") {
        range.push(c.ident()?);
    }
    c.expect(")")
}

/// A `CREATE TABLE`'s `WITH` properties.
#[derive(Default)]
struct WithClause {
    ttl_ms: Option<u64>,
    desc: Vec<String>,
    packed_rows: bool,
    tablets: Option<u16>,
}

/// The most tablets a table may be split into: docsim's own bound (YugabyteDB allows up
/// to 0xffff), as every tablet is a Raft group and a RocksDB instance on every node.
pub const MAX_TABLETS: u16 = 256;

fn parse_with(c: &mut Cursor<'_>) -> Result<WithClause> {
    let mut with = WithClause::default();
    if !c.eat_kw("with") {
        return Ok(with);
    }
    loop {
        if c.eat_kw("default_time_to_live") {
            c.expect("=")?;
            let secs = c.unsigned()?;
            with.ttl_ms = (secs > 0).then(|| secs.saturating_mul(1000));
        } else if c.eat_kw("tablets") {
            c.expect("=")?;
            let mut out_of_range = c.error(""); // at the number
            let n = c.unsigned()?;
            if !(1..=u64::from(MAX_TABLETS)).contains(&n) {
                out_of_range.message = format!("tablets is 1 to {MAX_TABLETS}, not {n}");
                return Err(out_of_range);
            }
            with.tablets = Some(n as u16);
        } else if c.eat_kw("packed_rows") {
            c.expect("=")?;
            with.packed_rows = match c.ident()?.as_str() {
                "true" => true,
                "false" => false,
                other => return Err(c.error(format!("packed_rows is true or false, not {other}"))),
            };
        } else if c.eat_kw("clustering") {
            c.expect_kw("order")?;
            c.expect_kw("by")?;
            c.expect("(")?;
            loop {
                let col = c.ident()?;
                if c.eat_kw("desc") {
                    with.desc.push(col);
                } else {
                    c.eat_kw("asc");
                }
                if !c.eat(",") {
                    break;
                }
            }
            c.expect(")")?;
        } else {
            return Err(c.error(format!("unsupported table property {}", c.found())));
        }
        if !c.eat_kw("and") {
            return Ok(with);
        }
    }
}

fn build(
    name: String,
    decls: Vec<(String, CqlType)>,
    hash: Vec<String>,
    range: Vec<String>,
    desc: Vec<String>,
    default_ttl_ms: Option<u64>,
) -> std::result::Result<CqlTable, String> {
    if hash.is_empty() {
        return Err("a table needs a PRIMARY KEY".into());
    }
    for key in hash.iter().chain(&range).chain(&desc) {
        let Some((_, ty)) = decls.iter().find(|(n, _)| n == key) else {
            return Err(format!("key column {key} is not declared"));
        };
        if ty.is_nested() {
            return Err(format!("key column {key} cannot be a collection"));
        }
    }
    if let Some(d) = desc.iter().find(|d| !range.contains(d)) {
        return Err(format!("CLUSTERING ORDER names {d}, which is not a clustering column"));
    }
    let mut next_id = FIRST_COLUMN_ID;
    let mut columns = Vec::new();
    for (n, ty) in decls {
        let kind = if hash.contains(&n) {
            ColumnKind::Hash
        } else if range.contains(&n) {
            let desc = desc.contains(&n);
            ColumnKind::Range(if desc { SortOrder::Descending } else { SortOrder::Ascending })
        } else {
            next_id += 1;
            ColumnKind::Regular(next_id - 1)
        };
        columns.push(Column { name: n, ty, kind });
    }
    let mut packings = Packings::default();
    packings.insert(packing_of(0, &columns));
    Ok(CqlTable {
        name,
        columns,
        hash_key: hash,
        range_key: range,
        default_ttl_ms,
        packed_rows: false,
        entity_rows: false,
        tablets: 1,
        schema_version: 0,
        next_column_id: next_id,
        packings,
    })
}

/// The packing of schema `version` with `columns`: the regular columns a packed row holds,
/// in schema order. Collections are not packed (YugabyteDB's `SchemaPacking` constructor,
/// `dockv/schema_packing.cc`, skips `is_collection()` and static columns); neither is
/// jsonb here, which docsim stores as a subdocument (YugabyteDB stores a jsonb value as
/// one encoded value and packs it: a difference of docsim's).
fn packing_of(version: u32, columns: &[Column]) -> SchemaPacking {
    let ids = columns.iter().filter(|c| !c.ty.is_nested()).filter_map(|c| match c.kind {
        ColumnKind::Regular(id) => Some(id as u32),
        _ => None,
    });
    SchemaPacking::new(version, ids.collect()).expect("column ids are distinct")
}

impl fmt::Display for CqlTable {
    /// The `CREATE TABLE` statement that declares this table (parses back to it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let columns: Vec<String> =
            self.columns.iter().map(|c| format!("{} {}", c.name, c.ty.name())).collect();
        let mut key = format!("({})", self.hash_key.join(", "));
        if !self.range_key.is_empty() {
            key = format!("{key}, {}", self.range_key.join(", "));
        }
        write!(f, "CREATE TABLE {} ({}, PRIMARY KEY ({key}))", self.name, columns.join(", "))?;
        let mut with = Vec::new();
        if let Some(ms) = self.default_ttl_ms {
            with.push(format!("default_time_to_live = {}", ms / 1000));
        }
        let desc = |c: &Column| c.kind == ColumnKind::Range(SortOrder::Descending);
        if self.range_columns().any(desc) {
            let by: Vec<String> = self
                .range_columns()
                .map(|c| format!("{} {}", c.name, if desc(c) { "DESC" } else { "ASC" }))
                .collect();
            with.push(format!("CLUSTERING ORDER BY ({})", by.join(", ")));
        }
        if self.packed_rows {
            with.push("packed_rows = true".into());
        }
        if self.tablets > 1 {
            with.push(format!("tablets = {}", self.tablets));
        }
        if !with.is_empty() {
            write!(f, " WITH {}", with.join(" AND "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table declared by parts (as the simulator declares its workloads' tables) is the
    /// table its `CREATE TABLE` declares: descending clustering columns, and a default TTL
    /// in seconds, 0 being none.
    #[test]
    fn a_declared_table_is_the_one_its_create_table_declares() {
        let ty = |name: &str| CqlType::from_name(name).expect(name);
        let columns: Vec<(String, CqlType)> =
            [("h", "text"), ("a", "int"), ("b", "int"), ("v", "text")]
                .map(|(n, t)| (n.to_owned(), ty(t)))
                .into();
        let range = [("a", SortOrder::Ascending), ("b", SortOrder::Descending)];
        let range: Vec<(String, SortOrder)> = range.map(|(n, o)| (n.to_owned(), o)).into();
        let declared = |ttl_s| {
            CqlTable::declare("t", columns.clone(), vec!["h".into()], range.clone(), ttl_s)
                .expect("a valid table")
        };
        let create = "CREATE TABLE t (h text, a int, b int, v text, PRIMARY KEY ((h), a, b)) \
                      WITH CLUSTERING ORDER BY (b DESC)";
        let parsed = |with: &str| CqlTable::parse(&format!("{create}{with}")).expect(with);
        assert_eq!(declared(None), parsed(""));
        assert_eq!(declared(Some(0)), parsed(""));
        assert_eq!(declared(Some(5)), parsed(" AND default_time_to_live = 5"));
        assert_eq!(parsed(" AND default_time_to_live = 0"), parsed(""), "0 is no TTL");
    }

    /// A table prints as the `CREATE TABLE` that declares it (reproducers declare their
    /// tables so), and that text parses back to the same table.
    #[test]
    fn a_table_prints_as_the_create_table_that_declares_it() {
        let texts = [
            "CREATE TABLE t (h text, a int, b int, v text, PRIMARY KEY ((h), a, b)) WITH \
             default_time_to_live = 5 AND CLUSTERING ORDER BY (a ASC, b DESC) AND \
             packed_rows = true",
            "CREATE TABLE u (k int, v text, PRIMARY KEY ((k)))",
            "CREATE TABLE w (h text, i int, a int, PRIMARY KEY ((h, i), a))",
            "CREATE TABLE x (k int, v text, PRIMARY KEY ((k))) WITH tablets = 16",
        ];
        for text in texts {
            let table = CqlTable::parse(text).expect(text);
            assert_eq!(table.to_string(), text);
            assert_eq!(CqlTable::parse(&table.to_string()), Ok(table));
        }
    }

    #[test]
    fn a_tablet_count_outside_one_to_the_bound_is_refused_where_it_stands() {
        let create = |n: &str| {
            CqlTable::parse(&format!("CREATE TABLE t (k int PRIMARY KEY) WITH tablets = {n}"))
        };
        assert_eq!(create("4").map(|t| t.tablets), Ok(4));
        assert_eq!(create("256").map(|t| t.tablets), Ok(256));
        let error = |n: &str| create(n).expect_err(n).to_string();
        assert_eq!(error("0"), "CQL: tablets is 1 to 256, not 0 at column 51 of the statement");
        assert_eq!(error("257"), "CQL: tablets is 1 to 256, not 257 at column 51 of the statement");
    }
}
