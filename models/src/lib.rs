//! # docsim-models: the independent reference model
//!
//! The checker the simulator trusts. It states DocDB's semantics in the plainest data
//! structures and shares no code with the engine: no encoders, no reader, no compaction.
//! A document is a tree of paths (lists of subkeys), each node holding *all* the versions
//! ever written at its path; a read walks the tree below the path it reads, carrying the
//! newest version of every ancestor, and answers for every node one question straight
//! from the definition:
//!
//! > Is the newest version at or before R of this path strictly newer (hybrid time, then
//! > write id) than the newest version at or before R of each of its ancestors — the
//! > colocated table key, the document root, every shorter path — and neither a
//! > tombstone nor expired?
//!
//! Expiry: an entry written at W with TTL t is visible at R iff R <= W + t. An entry
//! without a TTL inherits the nearest explicit TTL of its visible ancestors that had not
//! run out at W, counted from that ancestor's write time. A TTL that ran out before W is
//! skipped: a child written under an expired parent is read as if the parent were gone.
//! That skip is docsim's own rule: YugabyteDB's reader hands a child without a TTL its
//! parent's (write time, TTL) unchanged, run out or not (`GetNewExpiration` in
//! `src/yb/docdb/doc_reader.cc`; `IsObsolete` tests it against the read time alone), so
//! such a child is invisible from birth — until YugabyteDB's major compaction drops the
//! expired parent and the child reads back (`DocDBCompactionFeed::Feed`). docsim reads it
//! as YugabyteDB does after that compaction, from the start, so that a compaction may
//! reclaim every expired entry and change no read. A child's own TTL replaces its
//! parent's (it is not cut short by it).
//! `Never` (0) never expires and overrides the table default (`ComputeTTL`,
//! `src/yb/dockv/doc_ttl_util.cc`); with no explicit TTL on the chain the table default
//! counts from the entry's own write time (YugabyteDB anchors a nested entry's table TTL at
//! its outermost inheriting ancestor's write time: a difference docsim keeps, as CQL
//! columns, the only place the table TTL applies there, are not nested).
//!
//! Table tombstones: a colocated table's own key (`doc(coloc=N | ;)`) is an ancestor of
//! every document of the table only through its tombstones — the newest tombstone there at
//! or before R hides every document version not newer than it. Any other entry at the
//! table key is just an entry: it hides nothing and passes no TTL down. YugabyteDB reads
//! it so (`GetTableTombstoneTime`, `src/yb/docdb/doc_reader.cc`: the entry at the table
//! key counts only if its value is a tombstone), except that YugabyteDB looks at the
//! newest version there alone, so a later non-tombstone entry at the table key would bring
//! the dropped table's documents back (until a compaction drops them); docsim takes the
//! newest *tombstone*, which no later entry there cancels (`docs/findings.md`).
//!
//! Redis EXPIRE ([`redis`]) takes a signed count of seconds; a count at or below zero
//! deletes the key, as YugabyteDB's parser turns such an EXPIRE into a DEL (`ParseExpire`,
//! `src/yb/yql/redis/redisserver/redis_parser.cc`); a positive one gives the key that TTL
//! from the command's time.
//!
//! Required markers (Redis-like writes) are not a read. A write decides, level by level
//! from the document down, whether each level of its path exists by the *first* entry at
//! or below that level — the level's own path first, then its descendants in DocDB's key
//! order (type byte, then value; [`Key`]s of one type numerically or bytewise, reversed
//! when descending) — taking that path's newest version at or before the write, from
//! before the batch or written by it earlier. The level is missing if that entry is a
//! tombstone, has run out of its own TTL (not an inherited one, not the table default),
//! or is older than the entry found one level up at that level's own path; table
//! tombstones play no part. Below a missing level the write puts `{}` markers, with no
//! more lookups; a level whose entry is a value refuses the write; a set does not look
//! at its own path; a delete looks there too and writes nothing unless every level
//! exists. This is YugabyteDB's `DocWriteBatch` (`DoSetPrimitive`,
//! `SetPrimitiveInternal`, `SeekToKeyPrefix` and its cache, `src/yb/docdb/
//! doc_write_batch.cc`). A compaction can change these answers (`docs/findings.md`); the workloads
//! avoid the documents where it would.
//!
//! The document at a path is built from the visible entries beneath it: a path with a
//! visible descendant is an object; otherwise a marker is `{}` and a value is a leaf.
//!
//! Compaction never changes the model: by the invariant it checks, a compaction with
//! cutoff H changes no read at R >= H. The model only remembers the highest cutoff, below
//! which reads must be refused ([`ModelError::SnapshotTooOld`]).
//!
//! CQL rows ([`cql`]) and Redis keys ([`redis`]) are stated on top of the same documents.
//! CQL key values order as DocDB's keys do (doubles numerically, not by bit pattern); a
//! list element is keyed by its statement's physical time × 1000 + its position; a jsonb
//! value is a document by the model's own JSON rule (see [`cql`]). A table split into
//! tablets keeps a model per tablet; [`partition`] says, with the model's own hash, which
//! tablet holds a row, and a SELECT without the hash key reads rows in hash order.
//!
//! The model's errors are typed ([`ModelError`]) and the simulator compares them with the
//! engine's error kinds exactly: a read below the cutoff must fail as `snapshot_too_old`,
//! a write below a primitive as `type_conflict`, a Redis command on the wrong type as
//! `wrong_type` — not merely fail.

pub mod cql;
mod doc;
pub mod partition;
pub mod redis;

pub use doc::{
    docdb_key_cmp, Doc, DocId, Entry, Key, Markers, Model, ModelError, Scalar, Time, Ttl, Write,
};
