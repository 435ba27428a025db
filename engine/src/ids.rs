//! Identifiers many layers name: a Raft entry's op id and a tablet's id. A leaf of the
//! module graph (it imports nothing of the engine), so the storage layer can record an op
//! id as its flushed frontier without naming the log.

use std::fmt;

/// A Raft op id: the term and index of a log entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId {
    pub term: u64,
    pub index: u64,
}

impl OpId {
    pub fn new(term: u64, index: u64) -> OpId {
        OpId { term, index }
    }
}

impl fmt::Display for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.term, self.index)
    }
}

/// Which tablet of a node.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TabletId {
    /// The document tablet (document commands and Redis keys).
    Docs,
    /// A CQL table's tablet.
    Table(String),
}
