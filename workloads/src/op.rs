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

/// Where a crash cuts the power.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CrashPoint {
    /// At once.
    Now,
    /// In the next write, once its entry is appended to the log but not synced.
    AfterAppend,
    /// In the next write, once its entry is durable but not applied.
    AfterSync,
    /// In the next write, once its entry is applied but not acknowledged.
    AfterApply,
    /// After the next flush (or compaction) is durable, before its log GC.
    AfterFlush,
}

/// A disk fault, exact so that a reproducer replays it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DiskFault {
    /// The next append to any log file fails with an I/O error.
    AppendError,
    /// The next sync of any log file fails with an I/O error.
    SyncError,
    /// The disk holds only `free_bytes` more than it holds now.
    DiskFull {
        /// Bytes left.
        free_bytes: u64,
    },
    /// Disarm an I/O error not yet fired and lift the capacity.
    Clear,
    /// Flip bit `bit` of byte `offset` of the log file `file` (synced data).
    Flip {
        /// The file's name on the simulated disk.
        file: String,
        /// The byte.
        offset: usize,
        /// The bit, 0 to 7.
        bit: u8,
    },
}

/// One operation. Times are the model's raw hybrid times (`physical_us << 12 | logical`).
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
    // Node ops, drawn by the simulator's schedule
    /// Flush the memtables.
    Flush,
    /// A compaction with history cutoff `cutoff`; `minor` keeps tombstones.
    Compact {
        /// The history cutoff (inclusive).
        cutoff: Time,
        /// A minor compaction (not bottommost).
        minor: bool,
        /// `Some((first, last))`: only that run of the document tablet's SST files,
        /// numbered oldest first from 0 (a minor compaction); `None`: every file of every
        /// tablet.
        files: Option<(usize, usize)>,
    },
    /// Cut the power at `at`; `tear` tears the last unsynced append.
    Crash {
        /// When the power goes.
        at: CrashPoint,
        /// `Some(k)`: each file keeps its unsynced tail up to its `k`-th sector boundary
        /// (clamped to the last one inside the tail); `None`: no unsynced byte survives.
        tear: Option<u32>,
    },
    /// Inject a disk fault (docscript `fault ...`).
    Fault(DiskFault),
    /// Restart after a crash: replay what the log holds above the persisted frontier.
    Restart,
}

impl Op {
    /// Whether the op reads (and so is checked against the model).
    pub fn is_read(&self) -> bool {
        match self {
            Op::Get { .. } => true,
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
