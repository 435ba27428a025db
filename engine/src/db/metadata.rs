//! Every metadata key the instance holds beside the documents (keys `\x01...`: the history
//! cutoff, the flushed frontier, the replica's configuration, the last snapshot installed)
//! and their encodings, with whole-instance export and install for Raft snapshots.
//!
//! All ride on the flushed-frontier rule (`FRONTIER_KEY`, `db/frontier.rs`): metadata
//! written in the same RocksDB batch as the frontier reaches an SST file in the same flush,
//! so what is read back at open is the state as of the flushed frontier.

use super::{corrupt_record, DocDb};
use crate::encoding::Value;
use crate::error::Result;
use crate::hybrid_time::HybridTime;
use crate::ids::OpId;
use rocksdb::WriteBatch;

/// First byte of the engine's own metadata keys; sorts before every document key.
pub(super) const META_PREFIX: u8 = 0x01;
/// Metadata key holding the highest history cutoff so far (8 bytes, big-endian raw HT).
pub(super) const HISTORY_CUTOFF_KEY: &[u8] = b"\x01history_cutoff";
/// Metadata key holding the op id (term, index) and hybrid time of the last Raft entry
/// applied (24 bytes, big-endian). It is put into the memtable just before each flush
/// (`db/frontier.rs`), so it reaches an SST file in the same flush as the data it covers:
/// RocksDB installs a flush's files atomically (MANIFEST), and without a WAL a crash
/// keeps only what was flushed. Read back at open (memtables are empty then), it is
/// therefore exactly the **flushed frontier**: the last entry whose data is durable.
pub(super) const FRONTIER_KEY: &[u8] = b"\x01frontier";
/// Metadata key holding the replica's configuration as of the frontier: an opaque
/// encoding chosen by the replica (docsim's rule; YB keeps it in the consensus metadata
/// file, `ConsensusMetadata::committed_config`).
pub const CONF_KEY: &[u8] = b"\x01conf";
/// Metadata key holding the op id of the last snapshot installed (16 bytes, big-endian).
pub(super) const SNAPSHOT_KEY: &[u8] = b"\x01snapshot";

/// A whole instance's documents at one applied entry, as a snapshot carries them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Export {
    /// Every stored key and value (metadata excluded), in key order.
    pub pairs: Vec<(Vec<u8>, Vec<u8>)>,
    pub history_cutoff: HybridTime,
}

impl DocDb {
    /// Record the metadata `pairs` (keys `\x01...`) that the entry `op_id` (which carries
    /// no document write) made: the frontier moves to it, `ht` being the entry's time (or
    /// the last applied write's). One RocksDB batch: the metadata is durable exactly with
    /// its frontier.
    pub fn write_metadata(
        &self,
        pairs: &[(&[u8], &[u8])],
        op_id: OpId,
        ht: HybridTime,
    ) -> Result<()> {
        let mut batch = WriteBatch::default();
        batch.put(FRONTIER_KEY, encode_frontier(op_id, ht));
        for (key, value) in pairs {
            assert_eq!(key.first(), Some(&META_PREFIX), "a metadata key");
            batch.put(key, value);
        }
        self.write_unlogged(batch)?;
        super::lock(&self.unflushed).written(op_id, ht);
        Ok(())
    }

    /// Record the configuration `conf` made by the entry `op_id`.
    pub fn write_conf(&self, conf: &[u8], op_id: OpId, ht: HybridTime) -> Result<()> {
        self.write_metadata(&[(CONF_KEY, conf)], op_id, ht)
    }

    /// The metadata stored under `key`, as of the flushed frontier and what was applied
    /// since.
    pub fn metadata(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        assert_eq!(key.first(), Some(&META_PREFIX), "a metadata key");
        Ok(self.db().get(key)?)
    }

    /// The metadata keys a snapshot's copy carries: every one but those
    /// [`DocDb::install`] writes itself (the frontier, the history cutoff, the installed
    /// snapshot).
    pub(super) fn metadata_pairs(&self) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut pairs = Vec::new();
        let own = [FRONTIER_KEY, HISTORY_CUTOFF_KEY, SNAPSHOT_KEY];
        self.for_each_stored(|key, value, _| {
            if key.first() == Some(&META_PREFIX) && !own.contains(&key) {
                pairs.push((key.to_vec(), value.to_vec()));
            }
            Ok(())
        })?;
        Ok(pairs)
    }

    /// The configuration as of the flushed frontier (what [`DocDb::write_conf`] wrote).
    pub fn durable_conf(&self) -> Result<Option<Vec<u8>>> {
        self.metadata(CONF_KEY)
    }

    /// The op id of the last snapshot installed, as of the flushed frontier.
    pub fn installed_snapshot(&self) -> Result<Option<OpId>> {
        let Some(raw) = self.db().get(SNAPSHOT_KEY)? else { return Ok(None) };
        let [term, index] = decode_u64s(SNAPSHOT_KEY, &raw)?;
        Ok(Some(OpId::new(term, index)))
    }

    /// Every document entry, for a snapshot. An entity row goes as the packed row it
    /// stores (its columns read back): the snapshot carries values, and a packed row reads
    /// alike in either layout (`db/packed.rs`).
    pub fn export(&self) -> Result<Export> {
        let mut pairs = Vec::new();
        self.for_each_stored(|key, value, it| {
            if key.first() == Some(&META_PREFIX) {
                return Ok(());
            }
            let decoded = Value::decode(value).map_err(|e| super::with_key(key, e))?;
            match self.entity_as_packed(key, &decoded, it)? {
                Some(packed) => pairs.push((key.to_vec(), packed.encode())),
                None => pairs.push((key.to_vec(), value.to_vec())),
            }
            Ok(())
        })?;
        Ok(Export { pairs, history_cutoff: self.history_cutoff_ht })
    }

    /// Replace everything with `export`, as of the entry `op_id` (last write at `ht`),
    /// with the metadata `meta` (the configuration, the tablet's schema), durably: one
    /// batch deletes every key and writes the snapshot's, then a flush installs it
    /// atomically (RocksDB's MANIFEST). A crash before the flush completes keeps the old
    /// instance whole.
    pub fn install(
        &mut self,
        export: &Export,
        op_id: OpId,
        ht: HybridTime,
        meta: &[(Vec<u8>, Vec<u8>)],
    ) -> Result<()> {
        let mut batch = WriteBatch::default();
        self.for_each_stored(|key, _, _| {
            batch.delete(key);
            Ok(())
        })?;
        for (key, value) in &export.pairs {
            batch.put(key, value);
        }
        let cutoff = export.history_cutoff;
        batch.put(HISTORY_CUTOFF_KEY, cutoff.raw().to_be_bytes());
        batch.put(FRONTIER_KEY, encode_frontier(op_id, ht));
        for (key, value) in meta {
            assert_eq!(key.first(), Some(&META_PREFIX), "a metadata key");
            batch.put(key, value);
        }
        batch.put(SNAPSHOT_KEY, encode_u64s(&[op_id.term, op_id.index]));
        self.write_unlogged(batch)?;
        super::lock(&self.unflushed).written(op_id, ht);
        self.flush()?;
        self.history_cutoff_ht = cutoff;
        Ok(())
    }
}

pub(super) fn encode_frontier(op_id: OpId, ht: HybridTime) -> Vec<u8> {
    encode_u64s(&[op_id.term, op_id.index, ht.raw()])
}

pub(super) fn decode_frontier(raw: &[u8]) -> Result<(crate::ids::OpId, HybridTime)> {
    let v: [u64; 3] = decode_u64s(FRONTIER_KEY, raw)?;
    Ok((crate::ids::OpId::new(v[0], v[1]), HybridTime::from_raw(v[2])))
}

/// The `N` big-endian u64s a metadata value at `key` holds.
fn decode_u64s<const N: usize>(key: &[u8], raw: &[u8]) -> Result<[u64; N]> {
    if raw.len() != 8 * N {
        return Err(corrupt_record(key, format!("{} bytes, not {}", raw.len(), 8 * N)));
    }
    Ok(std::array::from_fn(|i| u64::from_be_bytes(raw[i * 8..i * 8 + 8].try_into().expect("8"))))
}

/// `values` as big-endian bytes, for a metadata value.
fn encode_u64s(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_be_bytes()).collect()
}
