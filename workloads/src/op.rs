//! The operation type: what a run does, in the model's vocabulary.

use docsim_models::cql::{CqlOp, Schema};
use docsim_models::redis::RedisOp;
use docsim_models::{DocId, Key, Markers, Time, Ttl, Write};
use serde::{Deserialize, Serialize};

/// A CQL table as generated: the model's schema and each column's CQL type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CqlTableSpec {
    pub schema: Schema,
    /// `(column, CQL type)` in declaration order: key columns, then regular ones.
    pub types: Vec<(String, String)>,
    /// Columns dropped so far (the generator adds some back, as new columns).
    pub dropped: Vec<String>,
    /// `WITH tablets = N`: the tablets the table is split into by hash range.
    #[serde(default = "one_tablet")]
    pub tablets: u16,
}

fn one_tablet() -> u16 {
    1
}

/// One document write: which document, the path below its root, what, and its TTL.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DocWrite {
    /// The document.
    pub doc: DocId,
    /// The subkeys from the document root down to the written path (empty: the root).
    pub path: Vec<Key>,
    /// What is written there.
    pub write: Write,
    /// The write's TTL.
    pub ttl: Ttl,
}

impl DocWrite {
    /// The write as the model's [`docsim_models::Model::write_batch`] takes it.
    pub fn to_model(&self) -> (DocId, Vec<Key>, Write, Ttl) {
        (self.doc.clone(), self.path.clone(), self.write.clone(), self.ttl)
    }
}

/// One client operation. Times are the model's raw hybrid times (`physical_us << 12 |
/// logical`). A write's time is the workload's guess: a replica's clock gives the time it
/// writes at.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Op {
    // Document ops
    /// The init-marker mode of later document writes (docscript `markers`).
    Markers(Markers),
    /// The document tablet's default TTL (`default_ttl`), in ms.
    DefaultTtl {
        /// The TTL; `None` removes it.
        ttl_ms: Option<u64>,
    },
    /// One write command at hybrid time `ht` (docscript `set`/`extend`/`obj`/`del`).
    Write {
        /// The write's hybrid time.
        ht: Time,
        /// The write.
        write: DocWrite,
    },
    /// One write batch (docscript `batch @T { ... }`).
    Batch {
        /// The batch's hybrid time.
        ht: Time,
        /// Its writes, in order (write ids 0, 1, ...).
        writes: Vec<DocWrite>,
    },
    /// Read the subdocument at `path` of `doc` as of `ht`.
    Get {
        /// The read time.
        ht: Time,
        /// The document.
        doc: DocId,
        /// The subkeys below the document root.
        path: Vec<Key>,
    },
    // CQL and Redis
    /// Declare a CQL table.
    Table(CqlTableSpec),
    /// A CQL statement on the table named `table`, at `ht`.
    Cql {
        /// The statement's hybrid time (a SELECT's read time).
        ht: Time,
        /// The table's name (declared by an earlier [`Op::Table`]).
        table: String,
        /// The statement.
        op: CqlOp,
    },
    /// A Redis command at `ht`.
    Redis {
        /// The command's hybrid time.
        ht: Time,
        /// The command.
        op: RedisOp,
    },
    /// A snapshot of every tablet of `table` taken (or, `delete`, deleted) by a Raft entry
    /// of each (docsim's docscript `snapshot create|delete <id> <table>`).
    Snapshot {
        /// The table's name.
        table: String,
        /// The snapshot's name.
        id: String,
        /// Delete it instead.
        delete: bool,
    },
    /// Every tablet of `table` restored by a Raft entry of each (docsim's docscript
    /// `restore <snapshot> <table>`, `restore <table> to <T>`).
    Restore {
        /// The table's name.
        table: String,
        /// A snapshot, or a time.
        to: RestoreTo,
    },
    /// A page of a paged SELECT (docsim's docscript `cql page=<n> [after=<key>] [hold]`):
    /// at most `size` rows after the row `after` (`None`: the first page), every page
    /// read at the first page's time `ht` (the paging state carries it).
    Page {
        /// The read time.
        ht: Time,
        /// The table's name.
        table: String,
        /// The SELECT ([`CqlOp::Select`]).
        op: CqlOp,
        /// At most this many rows.
        size: usize,
        /// The key of the last row of the page before (the paging state).
        after: Option<DocId>,
        /// A long scan: its read point registered from its first page to its last.
        hold: bool,
    },
}

/// What a restore goes back to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RestoreTo {
    /// The snapshot of this name, at its own time.
    Snapshot(String),
    /// This hybrid time.
    Time(Time),
}

impl Op {
    /// The hybrid time the workload gave the op, if it carries one (0: none given).
    pub fn time(&self) -> Option<Time> {
        let ht = match self {
            Op::Write { ht, .. } | Op::Batch { ht, .. } | Op::Get { ht, .. } => *ht,
            Op::Cql { ht, .. } | Op::Redis { ht, .. } | Op::Page { ht, .. } => *ht,
            Op::Markers(_) | Op::DefaultTtl { .. } | Op::Table(_) | Op::Snapshot { .. } => 0,
            Op::Restore { .. } => 0,
        };
        (ht > 0).then_some(ht)
    }

    /// Whether the op reads (and so is checked against the model).
    pub fn is_read(&self) -> bool {
        match self {
            Op::Get { .. } | Op::Page { .. } => true,
            Op::Cql { op: CqlOp::Select { .. }, .. } => true,
            Op::Redis { op, .. } => matches!(
                op,
                RedisOp::Get { .. }
                    | RedisOp::HGet { .. }
                    | RedisOp::HGetAll { .. }
                    | RedisOp::SMembers { .. }
            ),
            _ => false,
        }
    }
}
