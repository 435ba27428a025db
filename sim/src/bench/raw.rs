//! Raw RocksDB for the feature benchmarks (`bloom`, `cache`, `memstore`): a plain
//! `rocksdb::DB` in a scratch directory with a tablet's table options where the feature
//! needs them (data block size, its own LRU block cache with filter and index blocks in
//! it, with or without midpoint insertion, bloom filters of 10 bits per key over a
//! fixed-length key prefix, snappy, the memtable size, no automatic compactions), written
//! with the exact key/value pairs a docsim node stored ([`super::pairs_by_write`]) and
//! read with plain iterators.

use super::err;
use docsim_engine::entity::LruCache;
use rocksdb::{BlockBasedOptions, Cache, DBRawIterator, Options, ReadOptions, SliceTransform, DB};
use std::path::Path;

/// How a raw database is set up.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawSetup {
    pub block_bytes: usize,
    pub cache_bytes: usize,
    /// The cache's midpoint insertion (RocksDB's default LRU); off, an LRU without a
    /// high-priority pool (the engine's shim: `LruCache`).
    pub midpoint_insertion: bool,
    /// Bloom filters over the first `prefix_len` bytes of each key.
    pub bloom: bool,
    /// A fixed-length prefix extractor (`None`: none).
    pub prefix_len: Option<usize>,
    /// The memtable size (`write_buffer_size`).
    pub write_buffer_bytes: usize,
}

/// Open (create) a raw database under `dir`, set up as `setup` says.
pub(crate) fn open(dir: &Path, setup: RawSetup) -> Result<DB, String> {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_disable_auto_compactions(true);
    opts.set_write_buffer_size(setup.write_buffer_bytes);
    opts.set_compression_type(rocksdb::DBCompressionType::Snappy);
    if let Some(len) = setup.prefix_len {
        opts.set_prefix_extractor(SliceTransform::create_fixed_prefix(len));
    }
    let mut table = BlockBasedOptions::default();
    match setup.midpoint_insertion {
        true => table.set_block_cache(&Cache::new_lru_cache(setup.cache_bytes)),
        false => table.disable_cache(), // the shim's cache is installed below
    }
    table.set_cache_index_and_filter_blocks(true);
    if setup.bloom {
        table.set_bloom_filter(10.0, false);
    }
    table.set_whole_key_filtering(false);
    table.set_block_size(setup.block_bytes);
    opts.set_block_based_table_factory(&table);
    if !setup.midpoint_insertion {
        LruCache::without_midpoint_insertion(setup.cache_bytes)?.install(&mut opts)?;
    }
    DB::open(&opts, dir).map_err(err)
}

/// An iterator in prefix mode (`prefix_same_as_start`): each seek consults the bloom
/// filters of its key's prefix, as the engine's partition reads do.
pub(crate) fn prefix_iterator(db: &DB) -> DBRawIterator<'_> {
    let mut opts = ReadOptions::default();
    opts.set_prefix_same_as_start(true);
    db.raw_iterator_opt(opts)
}

/// Seek `it` to `start` and copy out every key and value that starts with `prefix`;
/// how many there were.
pub(crate) fn scan(it: &mut DBRawIterator<'_>, start: &[u8], prefix: &[u8]) -> usize {
    it.seek(start);
    let mut kvs = Vec::new();
    while let (Some(k), Some(v)) = (it.key(), it.value()) {
        if !k.starts_with(prefix) {
            break;
        }
        kvs.push((k.to_vec(), v.to_vec()));
        it.next();
    }
    it.status().expect("raw RocksDB's scan");
    kvs.len()
}

/// The bloom-prefix length (`encoding::bloom_prefix_len`) that every key of `keys`
/// shares, for raw RocksDB's fixed-length prefix extractor.
pub(crate) fn common_prefix_len<'a>(keys: impl Iterator<Item = &'a [u8]>) -> Result<usize, String> {
    let mut lens = keys.map(docsim_engine::encoding::bloom_prefix_len);
    let first = lens.next().flatten().ok_or("no key with a bloom prefix")?;
    match lens.all(|len| len == Some(first)) {
        true => Ok(first),
        false => Err("the keys' bloom prefixes differ in length".into()),
    }
}

/// The document key of the stored key `key` (what a row's read seeks).
pub(crate) fn doc_key(key: &[u8]) -> &[u8] {
    &key[..docsim_engine::encoding::doc_key_len(key).expect("a document key")]
}
