//! CQL statements as a typed tree: what the parser produces, what the node executes, and
//! what prints back as statement text (`Display`), so reproducers and traces carry the
//! same statement the node ran. Values stay literals as written: their CQL types come from
//! the table's schema when the statement runs.

pub use super::schema::AlterChange;
use std::fmt;

/// A literal as written in a statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// `'text'` (the text without quotes; `''` in the source is one quote).
    Str(String),
    /// A number as written (`10`, `-2.5`, `1e3`).
    Num(String),
    /// `true` / `false`.
    Bool(bool),
    /// `null`.
    Null,
    /// `{k: v, ...}` (every item has a value: a map) or `{e, ...}` (a set).
    Braces(Vec<(Literal, Option<Literal>)>),
    /// `[e, ...]`.
    List(Vec<Literal>),
}

pub use crate::db::CmpOp;

/// `<column> <op> <value>` in a `WHERE` clause.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    pub column: String,
    pub op: CmpOp,
    pub value: Literal,
}

/// One assignment of an UPDATE's `SET`.
#[derive(Clone, Debug, PartialEq)]
pub enum Assignment {
    /// `c = v` (a collection or jsonb value is overwritten).
    Whole { column: String, value: Literal },
    /// `c = c + v` (or `c = c || v` when `concat`): add elements.
    Append { column: String, value: Literal, concat: bool },
    /// `c = c - {k, ...}`: remove set elements or map keys.
    Remove { column: String, value: Literal },
    /// `m[k] = v`: one map entry.
    Element { column: String, key: Literal, value: Literal },
    /// `j->'a'->'b' = v`: a value inside a jsonb column.
    JsonPath { column: String, keys: Vec<String>, value: Literal },
}

/// One target of a `DELETE`: a column, or one element of a map or set column.
#[derive(Clone, Debug, PartialEq)]
pub struct DeleteTarget {
    pub column: String,
    pub element: Option<Literal>,
}

/// A statement. `ttl_s` is `USING TTL n` in seconds (0: never expires).
#[derive(Clone, Debug, PartialEq)]
pub enum Statement {
    /// `INSERT INTO t (c, ...) VALUES (v, ...) [USING TTL n]`.
    Insert { table: String, columns: Vec<String>, values: Vec<Literal>, ttl_s: Option<u64> },
    /// `UPDATE t [USING TTL n] SET a, ... WHERE <key>`.
    Update { table: String, ttl_s: Option<u64>, assignments: Vec<Assignment>, key: Vec<Condition> },
    /// `DELETE [targets] FROM t WHERE <key>` (no targets: the whole row).
    Delete { targets: Vec<DeleteTarget>, table: String, key: Vec<Condition> },
    /// `SELECT * | c, ... FROM t [WHERE <conditions>]` (`columns: None` is `*`; without
    /// the hash key, a scan of every partition in hash order).
    Select { columns: Option<Vec<String>>, table: String, conditions: Vec<Condition> },
    /// `ALTER TABLE t ADD c <type>` / `ALTER TABLE t DROP c`: a new schema version.
    Alter { table: String, change: AlterChange },
}

impl Statement {
    /// The table the statement names.
    pub fn table(&self) -> &str {
        match self {
            Statement::Insert { table, .. }
            | Statement::Update { table, .. }
            | Statement::Delete { table, .. }
            | Statement::Select { table, .. }
            | Statement::Alter { table, .. } => table,
        }
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Str(s) => write!(f, "'{}'", s.replace('\'', "''")),
            Literal::Num(n) => f.write_str(n),
            Literal::Bool(b) => write!(f, "{b}"),
            Literal::Null => f.write_str("null"),
            Literal::Braces(items) => {
                let items: Vec<String> = items
                    .iter()
                    .map(|(k, v)| match v {
                        Some(v) => format!("{k}: {v}"),
                        None => k.to_string(),
                    })
                    .collect();
                write!(f, "{{{}}}", items.join(", "))
            }
            Literal::List(items) => write!(f, "[{}]", join(items, ", ")),
        }
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.column, self.op.symbol(), self.value)
    }
}

impl fmt::Display for Assignment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Assignment::Whole { column, value } => write!(f, "{column} = {value}"),
            Assignment::Append { column, value, concat } => {
                let op = if *concat { "||" } else { "+" };
                write!(f, "{column} = {column} {op} {value}")
            }
            Assignment::Remove { column, value } => write!(f, "{column} = {column} - {value}"),
            Assignment::Element { column, key, value } => write!(f, "{column}[{key}] = {value}"),
            Assignment::JsonPath { column, keys, value } => {
                f.write_str(column)?;
                for key in keys {
                    write!(f, "->{}", Literal::Str(key.clone()))?;
                }
                write!(f, " = {value}")
            }
        }
    }
}

impl fmt::Display for DeleteTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.element {
            None => f.write_str(&self.column),
            Some(e) => write!(f, "{}[{e}]", self.column),
        }
    }
}

fn join<T: fmt::Display>(items: &[T], separator: &str) -> String {
    items.iter().map(ToString::to_string).collect::<Vec<_>>().join(separator)
}

fn using(ttl_s: &Option<u64>) -> String {
    ttl_s.map(|s| format!(" USING TTL {s}")).unwrap_or_default()
}

impl fmt::Display for Statement {
    /// The statement as CQL text (keywords upper case), which parses back to itself.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Insert { table, columns, values, ttl_s } => write!(
                f,
                "INSERT INTO {table} ({}) VALUES ({}){}",
                columns.join(", "),
                join(values, ", "),
                using(ttl_s)
            ),
            Statement::Update { table, ttl_s, assignments, key } => write!(
                f,
                "UPDATE {table}{} SET {} WHERE {}",
                using(ttl_s),
                join(assignments, ", "),
                join(key, " AND ")
            ),
            Statement::Delete { targets, table, key } if targets.is_empty() => {
                write!(f, "DELETE FROM {table} WHERE {}", join(key, " AND "))
            }
            Statement::Delete { targets, table, key } => {
                write!(
                    f,
                    "DELETE {} FROM {table} WHERE {}",
                    join(targets, ", "),
                    join(key, " AND ")
                )
            }
            Statement::Select { columns, table, conditions } => {
                let columns = columns.as_ref().map_or("*".to_owned(), |c| c.join(", "));
                write!(f, "SELECT {columns} FROM {table}")?;
                match conditions.is_empty() {
                    true => Ok(()),
                    false => write!(f, " WHERE {}", join(conditions, " AND ")),
                }
            }
            Statement::Alter { table, change: AlterChange::Add { column, ty } } => {
                write!(f, "ALTER TABLE {table} ADD {column} {}", ty.name())
            }
            Statement::Alter { table, change: AlterChange::Drop { column } } => {
                write!(f, "ALTER TABLE {table} DROP {column}")
            }
        }
    }
}
