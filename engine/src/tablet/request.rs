//! The typed requests a tablet serves and their replies. Text (docscript, CQL, Redis) is
//! parsed before it gets here.

use crate::cql::{Paging, Row, Statement};
use crate::doc_write::{DocWrite, MarkerMode};
use crate::document::Document;
use crate::encoding::DocKey;

/// One request to one tablet.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// Document writes as one batch (`set`, `extend`, `obj`, `del`, `batch`).
    Write { writes: Vec<DocWrite>, markers: MarkerMode },
    /// Read the subdocument at a path (`get`).
    Get { path: crate::encoding::DocPath },
    /// A CQL statement: a SELECT reads, an ALTER TABLE changes the metadata, the others
    /// write.
    Cql(Statement),
    /// A page of a SELECT (docsim's docscript: `cql page=<n> [after=<key>] SELECT ...`).
    Page(Statement, Paging),
    /// A Redis command.
    Redis(crate::redis::Command),
    /// The document tablet's default TTL (`default_ttl`), in milliseconds.
    DefaultTtl(Option<u64>),
    /// A snapshot of the tablet created or deleted (`snapshot create|delete`): a Raft
    /// entry, so every replica takes it at one op id.
    Snapshot(super::SnapshotOp),
    /// A restore of the tablet (`restore <snapshot>`, `restore <table> to <T>`): a Raft
    /// entry whose source the leader chooses (`Tablet::evaluate`).
    Restore(super::RestoreTarget),
}

impl Request {
    /// Whether the request only reads.
    pub fn is_read(&self) -> bool {
        match self {
            Request::Get { .. } => true,
            Request::Cql(statement) => matches!(statement, Statement::Select { .. }),
            Request::Page(..) => true,
            Request::Redis(command) => command.is_read(),
            Request::Write { .. }
            | Request::DefaultTtl(_)
            | Request::Snapshot(_)
            | Request::Restore(_) => false,
        }
    }

    /// Whether the request changes the tablet's metadata.
    pub fn is_metadata(&self) -> bool {
        matches!(
            self,
            Request::DefaultTtl(_)
                | Request::Snapshot(_)
                | Request::Restore(_)
                | Request::Cql(Statement::Alter { .. })
        )
    }

    /// The documents a write reads before it writes (its batch depends on what they
    /// hold): a Redis command's keys, a required-marker write's documents. Blind writes
    /// (CQL, optional markers) read none.
    pub fn reads_before_writing(&self) -> Vec<DocKey> {
        match self {
            Request::Redis(command) if !command.is_read() => command.doc_keys(),
            Request::Write { writes, markers: MarkerMode::Required } => {
                writes.iter().map(|w| w.path.doc_key.clone()).collect()
            }
            _ => Vec::new(),
        }
    }

    /// The documents a write writes (its batch's document keys, as far as the request
    /// names them): what a later write that reads before writing waits for.
    pub fn writes_to(&self) -> Vec<DocKey> {
        match self {
            Request::Write { writes, .. } => {
                writes.iter().map(|w| w.path.doc_key.clone()).collect()
            }
            Request::Redis(command) => command.doc_keys(),
            _ => Vec::new(),
        }
    }
}

/// A request's reply.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// A write done (or a metadata change).
    Written,
    /// A `get`'s subdocument.
    Document(Option<Document>),
    /// A SELECT's rows.
    Rows(Vec<Row>),
    /// A Redis reply.
    Redis(crate::redis::Reply),
    /// A page of a SELECT: its rows, and the key of its last row when the page is full
    /// (the paging state: the next page reads after it), `None` when the read is done.
    Page { rows: Vec<Row>, last: Option<DocKey> },
}
