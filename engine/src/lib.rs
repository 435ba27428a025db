//! # docsim-engine: YugabyteDB's DocDB document layer on RocksDB
//!
//! DocDB stores *documents* — nested objects of primitive values — in a key-value store.
//! Every leaf, every object and every deletion is its own RocksDB entry, keyed by the path
//! from the document root and versioned by a hybrid time:
//!
//! ```text
//!  doc(; "mydockey", 123456) @T2000            -> {}          init marker (object exists)
//!  doc(; "mydockey", 123456)."a" @T2000w1      -> "value_a"   leaf, 2nd entry of the batch
//!  doc(; "mydockey", 123456)."b" @T6000        -> DEL         tombstone: hides what is below
//!  doc(; "mydockey", 123456)."b" @T3000        -> {}          older version of the same path
//!  doc(; "mydockey", 123456)."b"."c" @T3000w1  -> "value_bc"  child: visible while its
//!                                                             ancestors' newest versions
//!                                                             are older than it
//! ```
//!
//! **Keys** ([`encoding`]) are binary-comparable: a document key (optional colocation id,
//! 16-bit hash and hashed components, range components), then subkeys, then `#` and the
//! version encoded so that newer versions sort first. RocksDB's bytewise order is therefore
//! the order a reader wants: for each path its versions newest first, and a parent before
//! its children, so one forward scan reconstructs a document at any read time.
//!
//! **Versions** ([`HybridTime`], [`DocHybridTime`]) are hybrid times (physical microseconds
//! and a 12-bit logical counter) plus the entry's write id inside its batch. The engine
//! never reads a clock: hybrid times arrive as arguments, or from a [`HybridClock`] over an
//! injected [`PhysicalClock`].
//!
//! **Values** carry an optional TTL control field (absent: inherit; `0`: never expires),
//! then a primitive, an init marker `{}` or a tombstone `DEL`. A deletion is one tombstone,
//! written without reading; a newer tombstone or marker at an ancestor hides every older
//! descendant. Redis EXPIRE writes a TTL-only record (merge flags 1): it hides nothing,
//! and gives the version beneath it its TTL. With required markers (Redis-like writes)
//! each level of a path exists by the first entry found at or below it (`doc_write`).
//!
//! **Reads** at a hybrid time R take, per path, the newest version at or before R; a
//! version is visible only if it is strictly newer (write id included) than the version in
//! effect at every ancestor — the colocated table key, the document root, each shorter
//! path. One walk (`shadow`), shared by the reader, GC and the raw-bytes read filter, keeps
//! per path level the newest version along the ancestor chain. **TTL**: visible at R iff
//! R <= W + ttl; an entry without a TTL takes the nearest ancestor's (write time, TTL),
//! alive or not when it was written (YugabyteDB's reader), else the table default from its
//! own write time; `0` never expires. An expired or deleted version still hides what is
//! older.
//!
//! **Compaction GC** (`gc`) is a pure function over entries in key order, run by a RocksDB
//! compaction filter with a history cutoff H (inclusive): versions hidden at H by a newer
//! version of themselves or an ancestor go; full compactions drop tombstones and entries
//! expired through an inherited TTL at or below H, minor ones keep tombstones; an entry
//! expired through its own TTL stays until overwritten (its children inherit it). Invariant,
//! checked by a proptest on real RocksDB and by every simulated compaction: no read at
//! R >= H changes.
//! Reads below the highest cutoff are refused (`snapshot too old`). A compaction's cutoff
//! comes from the tablet's **retention policy** (`retention`): now less the retention
//! interval, held back by the read points long scans registered (`replica/reads.rs`);
//! the pages of a paged SELECT all read at the first page's time. A table **snapshot** is
//! a Raft entry of each tablet: every replica flushes and checkpoints RocksDB beside the
//! tablet at that entry (`db/snapshots.rs`). A **restore** is one too: each replica builds
//! the tablet as it was at a snapshot or a time beside the live one, with the restore's
//! entry as its flushed frontier, and swaps it in by renames (`db/restore.rs`). A
//! **backup** ([`backup`]) is a table snapshot's checkpoint files, schema, op ids and
//! times as a directory of real files, each file checksummed; an import places them on a
//! new table's replicas as a snapshot and restores from it, taking its schema.
//!
//! **Packed rows** (`encoding/packed_row.rs`, `db/packed.rs`, `gc/repack.rs`): a CQL
//! table `WITH packed_rows = true` stores an INSERT of every non-key column as one value
//! at the row's root, in YugabyteDB's V1 format under the row's schema version. The scans
//! hand the reader the entries that value stands for, so packing changes no read; a full
//! compaction repacks each row's newest packed row and the column entries at or below H
//! into one, from a plan made before it (a compaction filter sees one entry at a time).
//!
//! **Raft and durability** (`tablet`, `replica`, `log`, `replay`, [`disk`]): a write is
//! one Raft entry — proposed to raft-rs, appended to the tablet's own segmented log of
//! CRC-32C records and synced, committed, applied to RocksDB (whose WAL is off), then
//! acknowledged. The last applied entry's op id is the *frontier*, put into the memtable
//! just before each flush (`db/frontier.rs`), so the frontier RocksDB holds after a crash
//! is exactly the last entry whose data is durable; bootstrap re-applies exactly the
//! committed entries above it, skipping whole log segments below it, and log GC deletes
//! only segments wholly below min(frontier, committed) + 1. The log lives on a seeded
//! simulated disk whose crashes drop unsynced data and may tear it; a torn tail is cut,
//! corruption is reported. RocksDB's own files live on the same disk (`simfs`: a RocksDB
//! file system over it), so a power cut inside a flush or a compaction keeps exactly what
//! RocksDB synced, and a tablet whose RocksDB files were lost is refused, not served.
//!
//! **The tablet** ([`Tablet`]) is the state machine of one Raft group: it evaluates a
//! client request at a hybrid time into a payload (a document write batch, or a metadata
//! change: `ALTER TABLE`, a default TTL), applies payloads in log order, and serves reads.
//! Its schema and default TTL change only by Raft entries, stored with the frontier, so a
//! replica that restarts or installs a snapshot has every packing its rows reference
//! (YugabyteDB's `ChangeMetadataOperation`).
//!
//! **The replica** ([`Replica`]) drives raft-rs for one tablet: one bootstrap, one `Ready`
//! loop, one crash-point type ([`CrashPoint`]) and one restart report ([`RestartReport`]),
//! whatever the group's size (a group of one is the same code with one voter). The caller
//! moves [`Envelope`]s between replicas and ticks them; envelopes carry hybrid time and a
//! hybrid-time lease, so a replica knows which reads it may serve (a leader within its
//! majority's lease, a follower at or below its safe time), and a restarted replica hands
//! the entries above its persisted commit index to Raft unapplied.
//!
//! **The node** ([`Node`]) is a tablet server: it hosts one replica of every tablet it is
//! given (the document tablet, each CQL table's tablets: one, or one per hash range
//! `WITH tablets = N`, routed by `node/route.rs`) on its simulated disk, and owns the
//! power (crash, restart). It takes typed requests — document writes ([`DocWrite`]) and
//! reads, CQL statements as a typed tree ([`cql::Statement`]), Redis commands
//! ([`redis::Command`]), flush, compaction, crash points — and answers with typed results
//! or a typed [`Error`] whose [`ErrorKind`] says what the caller must do. The node never
//! parses text. `node/alone.rs` is its synchronous face for groups of one (a write
//! returns once applied). Its tablets share what a YB-TServer shares: one block cache
//! (`db/options.rs`, `Rocks`) and a memstore limit (the tablet holding the oldest write
//! flushes first). Reads skip SST files two ways, neither changing a row: bloom filters
//! keyed by partition prefix, and range pruning by each file's clustering-column bounds
//! (`db/range_bounds.rs`, written by a collector in the shim, `entity/props.rs`).
//!
//! **docscript** ([`notation`], [`script`]) is a thin client on top: it parses a line into
//! a typed request (CQL and Redis text through their own parsers, whose errors carry a
//! column), calls the node, and prints the typed result; printing and parsing round-trip,
//! and the simulator prints its traces and reproducers through the same printer.
//! [`canary`] holds the bugs the simulator must catch, switched on as configuration
//! ([`canary::Plants`], in [`NodeOptions`]); [`probe`] counts rare paths for coverage
//! reports.
//!
//! ## Layers
//!
//! Bottom up; a module uses only modules of lower layers (`sim/tests/tidy.rs` checks it,
//! in `use` lines and inline paths alike; test code may reach anything):
//!
//! 1. `hybrid_time`, `ids`, `decode_error`, `crash`, `canary`, `probe`, `shadow`, `entity`
//! 2. `encoding`, `replay`, `retention`
//! 3. `error`, `document`, `expiry`, `write_batch`
//! 4. `notation`, `disk`, `sst_files`, `reader`, `backup`
//! 5. `log`, `gc`, `simfs`
//! 6. `db`
//! 7. `doc_write`
//! 8. `cql`, `redis`
//! 9. `tablet`
//! 10. `replica`
//! 11. `node`
//! 12. `script`

pub mod backup;
pub mod canary;
pub mod cql;
mod crash;
mod db;
mod decode_error;
pub mod disk;
mod doc_write;
mod document;
pub mod encoding;
pub mod entity;
mod error;
mod expiry;
pub mod gc;
mod hybrid_time;
mod ids;
mod log;
mod node;
pub mod notation;
pub mod probe;
mod reader;
pub mod redis;
mod replay;
mod replica;
pub mod retention;
pub mod script;
mod shadow;
mod simfs;
mod sst_files;
mod tablet;
mod write_batch;

pub use crash::CrashPoint;
pub use db::{
    DocDb, Entry, Frontier, Layout, Medium, Memstore, RawEnv, ReadStats, Rocks, SnapshotInfo,
    StorageConfig,
};
pub use doc_write::{DocWrite, MarkerMode, WriteKind};
pub use document::Document;
pub use encoding::{
    DocKey, DocPath, KeyEntry, Primitive, SortOrder, SubDocKey, Ttl, Value, ValueKind,
};
pub use error::{without_file_numbers, DecodeError, Error, ErrorKind, Result};
pub use hybrid_time::{DocHybridTime, HybridClock, HybridTime, PhysicalClock};
pub use ids::{OpId, Part, TabletId};
pub use log::{SegmentInfo, Truncation};
pub use node::{
    route, tablet_dir, ExportedSnapshot, Job, MemoryFlush, Node, NodeOptions, Output, TabletDump,
    Timing,
};
pub use reader::DocEntry;
pub use replica::{
    AppliedEntry, Envelope, Members, Membership, Proposed, Replica, ReplicaOptions, ReplicaStatus,
    RestartReport,
};
pub use sst_files::SstFile;
pub use tablet::{
    MetaChange, Payload, Reply, Request, RestoreTarget, Schema, SnapshotOp, SnapshotTaken, Tablet,
};
pub use write_batch::DocWriteBatch;

#[cfg(test)]
mod tests;
