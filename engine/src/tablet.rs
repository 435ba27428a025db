//! A tablet: one DocDB instance and its table properties (the default TTL). Every write is
//! one batch at one hybrid time. Write times are not required to increase: docscript lets
//! tests write at any hybrid time to build exact file layouts.

use crate::db::{DocDb, RawEntry};
use crate::document::Document;
use crate::encoding::DocPath;
use crate::error::Result;
use crate::gc::CompactionKind;
use crate::hybrid_time::HybridTime;
use crate::write_batch::DocWriteBatch;
use std::path::Path;

/// One tablet.
pub struct Tablet {
    db: DocDb,
    table_ttl_ms: Option<u64>,
}

impl Tablet {
    /// Open (or create) the tablet stored in `dir`.
    pub fn open(dir: &Path) -> Result<Tablet> {
        Tablet::open_in(dir, None)
    }

    /// Open (or create) the tablet in `dir` of an in-memory RocksDB environment, or of the
    /// real file system when `env` is `None`.
    pub fn open_in(dir: &Path, env: Option<&rocksdb::Env>) -> Result<Tablet> {
        if env.is_none() {
            std::fs::create_dir_all(dir).map_err(|e| {
                crate::error::Error::Storage(format!("cannot create {}: {e}", dir.display()))
            })?;
        }
        Ok(Tablet { db: DocDb::open_in(dir, env)?, table_ttl_ms: None })
    }

    /// The storage, for building write batches that need reads.
    pub fn db(&self) -> &DocDb {
        &self.db
    }

    /// Apply one write batch at `ht` (write ids in order). An empty batch writes nothing.
    pub fn write(&mut self, entries: &DocWriteBatch, ht: HybridTime) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        self.db.write(entries, ht)
    }

    /// The subdocument at `path` as of `read_ht`.
    pub fn get(&self, path: &DocPath, read_ht: HybridTime) -> Result<Option<Document>> {
        self.db.get(path, read_ht, self.table_ttl_ms)
    }

    /// The table default TTL in milliseconds.
    pub fn table_ttl_ms(&self) -> Option<u64> {
        self.table_ttl_ms
    }

    /// Set the table default TTL.
    pub fn set_table_ttl_ms(&mut self, ttl_ms: Option<u64>) {
        self.table_ttl_ms = ttl_ms;
    }

    /// Flush memtables.
    pub fn flush(&self) -> Result<()> {
        self.db.flush()
    }

    /// Flush, then compact everything with history cutoff `cutoff_ht`.
    pub fn compact(&mut self, cutoff_ht: HybridTime, kind: CompactionKind) -> Result<()> {
        self.db.compact(cutoff_ht, kind, self.table_ttl_ms)
    }

    /// Every stored entry with its raw key and value bytes.
    pub fn dump(&self) -> Result<Vec<RawEntry>> {
        self.db.dump()
    }

    /// The highest history cutoff so far.
    pub fn history_cutoff(&self) -> HybridTime {
        self.db.history_cutoff()
    }
}
