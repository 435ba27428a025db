//! CQL on DocDB: each row is a document keyed by its primary key; each regular column a
//! subdocument keyed by its column id; INSERT also writes the liveness column `sys(0)`.
//!
//! ```text
//! INSERT  → sys(0) -> null (w0), then the columns in declaration order; a collection
//!           written whole is an init marker then its elements (overwrite)
//! UPDATE  → only the assigned columns, in statement order; `m = m + {..}` elements only
//! DELETE  → one tombstone at the row (or at each named column); no read
//! SELECT  → read the rows of one hash key at a hybrid time, in clustering order; without
//!           the hash key, every row of the tablet in hash order (each tablet of the table
//!           in turn: the client merges them in hash order)
//! ```
//! A row exists at R iff its liveness column or some regular column is visible at R: a row
//! made by INSERT survives all its columns being nulled; a row made only by UPDATE does not.
//!
//! A statement is text only up to [`parse_statement`]: the parser produces a typed
//! [`Statement`] (literals as written), the node executes it against the table's schema,
//! and `Display` prints it back as the same text.

mod ast;
mod json;
mod lexer;
mod parse;
mod schema;
mod statement;

pub use ast::{AlterChange, Assignment, CmpOp, Condition, DeleteTarget, Literal, Statement};
pub use lexer::SyntaxError;
pub use parse::parse_statement;
pub use schema::{Column, ColumnKind, CqlTable, CqlType};
pub use statement::{format_rows, partition_hash, Cell, Outcome, Paging, Row};
pub(crate) use statement::{read_page, read_select, write_entries};
