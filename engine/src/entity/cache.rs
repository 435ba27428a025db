//! A RocksDB LRU block cache made by the shim from `rocksdb::LRUCacheOptions`, for the one
//! option RocksDB's C API (and so the `rocksdb` crate, whose `Cache::new_lru_cache` is
//! `NewLRUCache(capacity)`) cannot set: `high_pri_pool_ratio`, the share of the cache kept
//! for blocks hit again. At RocksDB's default, 0.5, a new block enters below the midpoint
//! and a block hit again moves above it (midpoint insertion), so a scan's blocks evict each
//! other before a hot set's; at 0 the cache is a plain LRU. Everything else is as
//! `new_lru_cache` makes it. A cache is installed on options after their block-based table
//! factory is set ([`LruCache::install`]); the options, and any database opened with them,
//! hold the cache themselves.

use librocksdb_sys as ffi;
use rocksdb::AsRawPtr;
use std::ffi::{c_char, c_void};
use std::sync::Arc;

unsafe extern "C" {
    fn docsim_cache_create_lru(
        capacity: usize,
        high_pri_pool_ratio: f64,
        errptr: *mut *mut c_char,
    ) -> *mut c_void;
    fn docsim_cache_destroy(cache: *mut c_void);
    fn docsim_cache_usage(cache: *const c_void) -> usize;
    fn docsim_cache_capacity(cache: *const c_void) -> usize;
    fn docsim_options_set_block_cache(
        opts: *mut ffi::rocksdb_options_t,
        cache: *const c_void,
        errptr: *mut *mut c_char,
    );
}

/// An LRU block cache with a chosen `high_pri_pool_ratio`; clones share the cache.
#[derive(Clone)]
pub struct LruCache(Arc<Handle>);

/// The shim's `docsim_cache` (a `std::shared_ptr<rocksdb::Cache>`), destroyed once.
struct Handle(*mut c_void);

// SAFETY: the handle is only read after it is made (the shared pointer is never reset),
// and RocksDB's caches are safe to use from any thread at once.
unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the pointer came from `docsim_cache_create_lru` and is destroyed once;
        // options and databases the cache was installed in keep their own references.
        unsafe { docsim_cache_destroy(self.0) }
    }
}

impl LruCache {
    /// A cache of `capacity` bytes keeping `high_pri_pool_ratio` (within 0 and 1) of it for
    /// blocks hit again: 0.5 is `Cache::new_lru_cache`'s cache, 0 one without midpoint
    /// insertion.
    pub fn new(capacity: usize, high_pri_pool_ratio: f64) -> Result<LruCache, String> {
        let mut err: *mut c_char = std::ptr::null_mut();
        // SAFETY: no pointer goes in but the error's, which the shim sets only on failure.
        let raw = unsafe { docsim_cache_create_lru(capacity, high_pri_pool_ratio, &mut err) };
        super::take_error(err)?;
        match raw.is_null() {
            true => Err("the shim made no cache".into()),
            false => Ok(LruCache(Arc::new(Handle(raw)))),
        }
    }

    /// An LRU cache of `capacity` bytes without midpoint insertion (no high-priority pool).
    pub fn without_midpoint_insertion(capacity: usize) -> Result<LruCache, String> {
        LruCache::new(capacity, 0.0)
    }

    /// The bytes the cache holds.
    pub fn usage(&self) -> usize {
        // SAFETY: the handle is live while `self` is.
        unsafe { docsim_cache_usage(self.0 .0) }
    }

    /// The cache's capacity in bytes.
    pub fn capacity(&self) -> usize {
        // SAFETY: as for `usage`.
        unsafe { docsim_cache_capacity(self.0 .0) }
    }

    /// Make this the block cache of `opts`' block-based table factory, replacing the one
    /// set before: call it after `set_block_based_table_factory` (which would replace it).
    /// An error if the options' table factory is not block-based.
    pub fn install(&self, opts: &mut rocksdb::Options) -> Result<(), String> {
        let mut err: *mut c_char = std::ptr::null_mut();
        // SAFETY: `opts` and the handle are live; the options' new table factory takes its
        // own reference to the cache.
        unsafe { docsim_options_set_block_cache(opts.as_raw_ptr(), self.0 .0, &mut err) };
        super::take_error(err)
    }
}

#[cfg(test)]
mod tests {
    use super::LruCache;
    use crate::tests::scratch_dir;
    use rocksdb::perf::{set_perf_stats, PerfContext, PerfMetric, PerfStatsLevel};
    use rocksdb::{BlockBasedOptions, Options, DB};

    /// Options with 1 KiB blocks, no compression, and `cache` as their block cache.
    fn options(cache: &LruCache) -> Options {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.set_compression_type(rocksdb::DBCompressionType::None);
        let mut table = BlockBasedOptions::default();
        table.set_block_size(1 << 10);
        opts.set_block_based_table_factory(&table);
        cache.install(&mut opts).expect("a block-based table factory");
        opts
    }

    /// Blocks read (cache misses) by reading the 50 hot keys after a scan of 1 MiB of cold
    /// ones through a 64 KiB cache, the hot keys read twice before.
    fn hot_misses_after_a_scan(name: &str, cache: &LruCache) -> u64 {
        let db = DB::open(&options(cache), scratch_dir(name)).expect("open");
        let value = [b'x'; 100];
        (0..50).for_each(|k| db.put(format!("hot{k:04}"), value).expect("put"));
        (0..10_000).for_each(|k| db.put(format!("zcold{k:05}"), value).expect("put"));
        db.flush().expect("flush");
        let read_hot =
            || (0..50).for_each(|k| assert!(db.get(format!("hot{k:04}")).unwrap().is_some()));
        read_hot();
        read_hot();
        assert!(cache.usage() > 0, "the reads went through the installed cache");
        assert_eq!(
            db.iterator(rocksdb::IteratorMode::From(b"z", rocksdb::Direction::Forward)).count(),
            10_000
        );
        set_perf_stats(PerfStatsLevel::EnableCount);
        let mut perf = PerfContext::default();
        perf.reset();
        read_hot();
        let misses = perf.metric(PerfMetric::BlockReadCount);
        set_perf_stats(PerfStatsLevel::Disable);
        misses
    }

    /// The shim's cache at the default ratio keeps a hot set through a scan, as
    /// `Cache::new_lru_cache`'s does; without midpoint insertion the scan evicts it.
    #[test]
    fn midpoint_insertion_keeps_the_hot_set_through_a_scan() {
        let with = LruCache::new(64 << 10, 0.5).expect("cache");
        assert_eq!(with.capacity(), 64 << 10);
        assert_eq!(hot_misses_after_a_scan("lru-midpoint", &with), 0);
        let without = LruCache::without_midpoint_insertion(64 << 10).expect("cache");
        assert!(hot_misses_after_a_scan("lru-plain", &without) > 0);
    }

    /// A ratio outside [0, 1] and options whose table factory is not block-based are
    /// errors, not crashes.
    #[test]
    fn bad_ratios_and_other_table_factories_are_errors() {
        for ratio in [-0.1, 1.5, f64::NAN] {
            assert!(LruCache::new(1 << 20, ratio).is_err(), "{ratio}");
        }
        let cache = LruCache::new(1 << 20, 1.0).expect("the whole cache high-priority");
        let mut opts = Options::default();
        opts.set_plain_table_factory(&rocksdb::PlainTableFactoryOptions {
            user_key_length: 0,
            bloom_bits_per_key: 10,
            hash_table_ratio: 0.75,
            index_sparseness: 16,
            huge_page_tlb_size: 0,
            encoding_type: rocksdb::KeyEncodingType::Plain,
            full_scan_mode: false,
            store_index_in_file: false,
        });
        let err = cache.install(&mut opts).expect_err("a plain table factory");
        assert!(err.contains("not block-based"), "{err}");
    }
}
