//! The storage configuration: the metamorphic set of RocksDB options and row layouts
//! (`StorageConfig`, `Layout`), the block cache every instance shares, the RocksDB options
//! a DocDB instance opens with, and opening RocksDB itself.

use super::gc_filter::{new_gc_filter, GcEntityFilter, GcState};
use super::metadata::META_PREFIX;
use super::range_bounds::{self, BoundsCollector};
use super::OPEN_CLOSE;
use crate::canary::{Plant, Plants};
use crate::encoding::{bloom_prefix_len, planted_bloom_prefix_len};
use crate::entity::{add_property_collector, LruCache, MakeCollector};
use crate::error::{Error, Result};
use crate::simfs::SimEnv;
use rocksdb::{BlockBasedOptions, Cache, DBCompactionStyle, Options, SliceTransform, DB};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// RocksDB options and row layouts that must never change what a reader sees (the
/// metamorphic set, `docsim run --metamorphic`). Only options that change neither which
/// files a compaction sees nor when flushes happen belong here: no memtable small enough
/// to flush by itself (a larger one is in the set), no leveled compaction (GC's
/// full-compaction premise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StorageConfig {
    /// The data block size of SST files.
    pub block_bytes: usize,
    /// Bloom filters over each key's partition prefix (`encoding::bloom_prefix_len`).
    pub bloom_filter: bool,
    /// Snappy compression of SST blocks (the only codec librocksdb-sys builds here).
    pub snappy: bool,
    /// How CQL rows are stored.
    pub layout: Layout,
    /// The memtable size (`write_buffer_size`), in MiB; RocksDB's default is 64.
    pub memtable_mib: usize,
    /// The node's block cache, in KiB, shared by its tablets ([`Rocks`]).
    pub block_cache_kib: usize,
    /// Scans with conditions on clustering columns skip the SST files whose range
    /// bounds cannot meet them (`db/range_bounds.rs`); off, files get no bounds either.
    pub pruning: bool,
    /// RocksDB keeps statistics (tickers, no timers) for `DocDb::read_stats`. Script runs
    /// and benches turn them on; torture runs do not: they cost each open RocksDB a
    /// statistics object that, in the simulator, tripled a run's memory.
    pub statistics: bool,
    /// Every CQL table split into this many tablets, whatever its `WITH tablets` says
    /// (`None`: as declared). A rule of docsim's metamorphic set: no read or dump line
    /// depends on it.
    pub tablets: Option<u16>,
}

/// How CQL rows are stored: the tables' own choice, or packed rows for every table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Each table as declared: one entry per column unless `WITH packed_rows = true`.
    Declared,
    /// Every table packs its rows (`WITH packed_rows = true` for all).
    Packed,
    /// No table packs its rows, whatever its `WITH` says (tests compare the two).
    Unpacked,
    /// Every table packs its rows, each packed row stored as a RocksDB entity with one
    /// column per CQL column (`db/packed.rs`).
    Entity,
}

impl Default for StorageConfig {
    fn default() -> StorageConfig {
        StorageConfig::SET[0]
    }
}

impl StorageConfig {
    /// The metamorphic set: the default first. RocksDB's own default compression is
    /// snappy when it is built in, as here.
    pub const SET: [StorageConfig; 12] = [
        config(32, true, true, DECL, 64),
        config(1, true, true, DECL, 64),
        config(32, false, true, DECL, 64),
        config(4, false, false, DECL, 64),
        config(32, true, true, PACKED, 64),
        config(32, true, true, ENTITY, 64),
        config(32, true, true, DECL, 256),
        StorageConfig { block_cache_kib: 64, ..config(4, true, true, DECL, 64) },
        StorageConfig { block_cache_kib: 1 << 20, ..config(32, true, true, DECL, 64) },
        StorageConfig { tablets: Some(4), ..config(32, true, true, DECL, 64) },
        StorageConfig { tablets: Some(16), ..config(4, true, true, DECL, 64) },
        StorageConfig { pruning: false, ..config(4, true, true, DECL, 64) },
    ];
}

/// A configuration of the set: block size in KiB, bloom filters, snappy, the layout and
/// the memtable size in MiB.
const fn config(
    block_kib: usize,
    bloom_filter: bool,
    snappy: bool,
    layout: Layout,
    memtable_mib: usize,
) -> StorageConfig {
    let block_bytes = block_kib << 10;
    StorageConfig {
        block_bytes,
        bloom_filter,
        snappy,
        layout,
        memtable_mib,
        block_cache_kib: 64 << 10,
        pruning: true,
        statistics: false,
        tablets: None,
    }
}

const DECL: Layout = Layout::Declared;
const PACKED: Layout = Layout::Packed;
const ENTITY: Layout = Layout::Entity;

impl std::fmt::Display for StorageConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bloom = if self.bloom_filter { "bloom" } else { "no-bloom" };
        let codec = if self.snappy { "snappy" } else { "uncompressed" };
        let layout = match self.layout {
            Layout::Declared => "",
            Layout::Packed => " packed",
            Layout::Unpacked => " unpacked",
            Layout::Entity => " entity",
        };
        write!(f, "block={}KiB {bloom} {codec}{layout}", self.block_bytes >> 10)?;
        if self.memtable_mib != 64 {
            write!(f, " memtable={}MiB", self.memtable_mib)?;
        }
        match self.block_cache_kib {
            65536 => {}
            kib if kib < 1024 => write!(f, " cache={kib}KiB")?,
            kib => write!(f, " cache={}MiB", kib >> 10)?,
        }
        if !self.pruning {
            f.write_str(" no-pruning")?;
        }
        match self.tablets {
            None => Ok(()),
            Some(n) => write!(f, " tablets={n}"),
        }
    }
}

/// What a tablet server's RocksDB instances share: the medium their files live on (the
/// node's simulated disk, an in-memory environment, or the real file system) and one
/// block cache, as a YB-TServer shares one LRU across its tablets
/// (`--db_block_cache_size_bytes`). RocksDB's LRU inserts data blocks at low priority and
/// promotes a block hit again (midpoint insertion: `high_pri_pool_ratio`, on by default
/// through the C API), and whole-tablet walks do not fill it (`db/scan.rs`): a scan does
/// not wipe out the hot set. A bench can turn midpoint insertion off
/// ([`Rocks::without_midpoint_insertion`]) to measure it.
#[derive(Clone)]
pub struct Rocks {
    pub(crate) medium: RocksMedium,
    pub(crate) block_cache: BlockCache,
}

/// Where a node's RocksDB files live.
#[derive(Clone)]
pub(crate) enum RocksMedium {
    /// Real files under the node's directory.
    Files,
    /// RocksDB's in-memory environment: every file durable the moment it is written.
    Memory(rocksdb::Env),
    /// The node's simulated disk (`simfs.rs`): volatile until synced, lost in power cuts.
    SimDisk(Arc<SimEnv>),
}

/// What raw databases opened on a [`Rocks`] keep alive ([`Rocks::install_raw`]).
pub struct RawEnv(#[allow(dead_code)] Option<Arc<SimEnv>>);

/// The medium a node's RocksDB files live on, as options name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Medium {
    Files,
    Memory,
    SimDisk,
}

/// The block cache of a node's tablets.
#[derive(Clone)]
pub(crate) enum BlockCache {
    /// RocksDB's default LRU (`Cache::new_lru_cache`: midpoint insertion).
    Default(Cache),
    /// An LRU without a high-priority pool (`high_pri_pool_ratio` 0), made by the shim.
    NoMidpoint(LruCache),
}

impl Rocks {
    /// On real files or in memory (`in_memory`), with a block cache of
    /// `block_cache_bytes`.
    pub fn new(in_memory: bool, block_cache_bytes: usize) -> Result<Rocks> {
        let block_cache = BlockCache::Default(Cache::new_lru_cache(block_cache_bytes));
        Ok(Rocks { medium: medium(in_memory)?, block_cache })
    }

    /// On `disk`, under the node's directory `root` (RocksDB's paths are `root` joined
    /// with disk names), with a block cache of `block_cache_bytes`. `plants`: a planted
    /// `sst-sync-skipped` lives in the file system.
    pub fn on_sim_disk(
        disk: crate::disk::SimDisk,
        root: &Path,
        plants: Plants,
        block_cache_bytes: usize,
    ) -> Rocks {
        let skip_sst_sync = plants.contains(Plant::SstSyncSkipped);
        let env = Arc::new(SimEnv::new(disk, root, skip_sst_sync));
        let block_cache = BlockCache::Default(Cache::new_lru_cache(block_cache_bytes));
        Rocks { medium: RocksMedium::SimDisk(env), block_cache }
    }

    /// [`Rocks::new`] with an LRU cache without midpoint insertion: new blocks and blocks
    /// hit again share one LRU list, so a scan evicts a hot set as readily as its own
    /// blocks. Everything else as RocksDB's default LRU; for benches (the simulator never
    /// uses it).
    pub fn without_midpoint_insertion(in_memory: bool, block_cache_bytes: usize) -> Result<Rocks> {
        let cache = LruCache::without_midpoint_insertion(block_cache_bytes);
        let block_cache = BlockCache::NoMidpoint(cache.map_err(Error::Storage)?);
        Ok(Rocks { medium: medium(in_memory)?, block_cache })
    }

    /// The real file system, with RocksDB's default cache size (tests, tools).
    pub fn on_disk() -> Rocks {
        let block_cache = BlockCache::Default(Cache::new_lru_cache(8 << 20));
        Rocks { medium: RocksMedium::Files, block_cache }
    }

    /// The same medium with a block cache of its own (1 MiB): what is read through it
    /// comes from the files, not from blocks the node's cache holds of files that share
    /// their cache keys (a checkpoint's SSTs are copies of the live ones).
    pub(crate) fn with_own_cache(&self) -> Rocks {
        let block_cache = BlockCache::Default(Cache::new_lru_cache(1 << 20));
        Rocks { medium: self.medium.clone(), block_cache }
    }

    /// The medium the files live on.
    pub fn medium(&self) -> Medium {
        match self.medium {
            RocksMedium::Files => Medium::Files,
            RocksMedium::Memory(_) => Medium::Memory,
            RocksMedium::SimDisk(_) => Medium::SimDisk,
        }
    }

    /// Open raw RocksDB databases of `opts` (a bench's baseline) on this medium: every
    /// database opened with them must close before the returned guard drops.
    pub fn install_raw(&self, opts: &mut Options) -> RawEnv {
        RawEnv(self.install(opts))
    }

    /// Open databases of `opts` on this medium; what they must keep alive.
    pub(crate) fn install(&self, opts: &mut Options) -> Option<Arc<SimEnv>> {
        match &self.medium {
            RocksMedium::Files => None,
            RocksMedium::Memory(env) => {
                opts.set_env(env);
                None
            }
            RocksMedium::SimDisk(env) => {
                env.install(opts);
                Some(env.clone())
            }
        }
    }
}

/// An in-memory environment, or the real file system.
fn medium(in_memory: bool) -> Result<RocksMedium> {
    Ok(match in_memory {
        true => RocksMedium::Memory(rocksdb::Env::mem_env()?),
        false => RocksMedium::Files,
    })
}

/// Open RocksDB, retrying a spurious failure: RocksDB's process-wide periodic-task timer
/// refuses a registration stamped earlier than the task it is running, which happens when
/// the opening thread's clock is madsim's simulated one. Nothing is written by a failed
/// open, and the data decides nothing about when it succeeds.
/// Open the database in `dir` to read only (a snapshot's checkpoint).
pub(super) fn open_read_only(opts: &Options, dir: &Path) -> Result<DB> {
    let _guard = OPEN_CLOSE.lock().unwrap_or_else(|e| e.into_inner());
    Ok(DB::open_for_read_only(opts, dir, false)?)
}

pub(super) fn open_with_retry(opts: &Options, dir: &Path) -> Result<DB> {
    let open = || {
        let _guard = OPEN_CLOSE.lock().unwrap_or_else(|e| e.into_inner());
        DB::open(opts, dir)
    };
    for _ in 0..100 {
        match open() {
            Err(e) if e.to_string().contains("register periodic task") => {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            other => return Ok(other?),
        }
    }
    Ok(open()?)
}

pub(super) fn options(
    gc: Arc<Mutex<GcState>>,
    (storage, plants): (StorageConfig, Plants),
    rocks: &Rocks,
) -> Result<Options> {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_disable_auto_compactions(true);
    // DocDB's layout: universal compaction in one level, so a manual compaction always
    // covers every file (the GC's "full compaction" premise).
    opts.set_compaction_style(DBCompactionStyle::Universal);
    opts.set_num_levels(1);
    opts.set_max_subcompactions(1);
    opts.set_max_background_jobs(2);
    // No periodic statistics: the tasks run on RocksDB's timer thread and are stamped with
    // the opening thread's clock, which in simulation is madsim's; they would fire at
    // arbitrary moments (and race DB close). The engine reports what it needs itself.
    opts.set_stats_dump_period_sec(0);
    opts.set_stats_persist_period_sec(0);
    opts.set_skip_stats_update_on_db_open(true);
    // Open table files on the opening thread: the default (16) starts and joins 15 threads
    // at every open, which was half of a restart's wall time.
    opts.set_max_file_opening_threads(1);
    // Bloom filters keyed by partition (YugabyteDB's `kUpToHashOrFirstRange`), not by
    // document: a read of a row, a partition or a collection skips the files without it
    // (`encoding::bloom_prefix_len`; partition reads seek in prefix mode, `db/scan.rs`).
    let transform = match plants.contains(Plant::BloomPrefixOneLong) {
        false => bloom_prefix as fn(&[u8]) -> &[u8],
        true => planted_bloom_prefix,
    };
    opts.set_prefix_extractor(SliceTransform::create(
        "docdb_hash_or_first_range",
        transform,
        Some(in_bloom_domain),
    ));
    opts.set_write_buffer_size(storage.memtable_mib << 20);
    opts.set_block_based_table_factory(&table_options(&storage, rocks));
    // A cache the shim made goes into the table factory just set.
    if let BlockCache::NoMidpoint(cache) = &rocks.block_cache {
        cache.install(&mut opts).map_err(Error::Storage)?;
    }
    opts.set_compression_type(match storage.snappy {
        true => rocksdb::DBCompressionType::Snappy,
        false => rocksdb::DBCompressionType::None,
    });
    // Not in the Rust API: a close (and so a crash) must not persist memtables, or replay
    // after a crash would never be exercised. (This builds new options: what must outlive
    // the database, like the logger below, is set on them afterwards.)
    let mut opts = opts.get_options_from_string("avoid_flush_during_shutdown=true")?;
    // The GC filter, through the shim's `FilterV3` so it is shown entities too; set on the
    // final options, last.
    let make: crate::entity::MakeFilter =
        Box::new(move |_full, _manual| Box::new(GcEntityFilter(new_gc_filter(&gc), false)));
    crate::entity::set_filter_factory(&mut opts, make);
    // Each SST file's range-component bounds, for pruning (`db/range_bounds.rs`).
    if storage.pruning {
        let make: MakeCollector = Box::new(|| Box::new(BoundsCollector::default()));
        add_property_collector(&mut opts, range_bounds::PROPERTY, make);
    }
    // Counts of what reads skipped (`DocDb::read_stats`): tickers only, no timers.
    if storage.statistics {
        opts.enable_statistics();
        opts.set_statistics_level(rocksdb::statistics::StatsLevel::ExceptHistogramOrTimers);
    }
    set_fatal_logger(&mut opts);
    Ok(opts)
}

/// No info LOG file: every open would format hundreds of option lines into it. Header
/// lines reach the callback whatever its level, hence the filter; fatal messages still
/// reach stderr, and failures reach the caller as statuses regardless.
fn set_fatal_logger(opts: &mut Options) {
    opts.set_info_logger(rocksdb::InfoLogger::new_callback_logger(
        rocksdb::LogLevel::Fatal,
        |level, message| {
            if level == rocksdb::LogLevel::Fatal {
                eprintln!("rocksdb: {}", message.trim_end());
            }
        },
    ));
}

/// The tablets' block-based table options: the node's block cache (unless the shim made
/// it: it is installed after), holding index and filter blocks too.
fn table_options(storage: &StorageConfig, rocks: &Rocks) -> BlockBasedOptions {
    let mut table = BlockBasedOptions::default();
    match &rocks.block_cache {
        BlockCache::Default(cache) => table.set_block_cache(cache),
        // No default cache made to be replaced.
        BlockCache::NoMidpoint(_) => table.disable_cache(),
    }
    table.set_cache_index_and_filter_blocks(true);
    // Bloom filters over the partition prefix: reads of one partition skip files.
    if storage.bloom_filter {
        table.set_bloom_filter(10.0, false);
    }
    table.set_whole_key_filtering(false);
    table.set_block_size(storage.block_bytes);
    table
}

fn bloom_prefix(key: &[u8]) -> &[u8] {
    &key[..bloom_prefix_len(key).unwrap_or(key.len())]
}

fn planted_bloom_prefix(key: &[u8]) -> &[u8] {
    &key[..planted_bloom_prefix_len(key).unwrap_or(key.len()).min(key.len())]
}

/// Keys with a bloom prefix: every document key, and a partition's own prefix.
fn in_bloom_domain(key: &[u8]) -> bool {
    key.first() != Some(&META_PREFIX) && bloom_prefix_len(key).is_some()
}

#[cfg(test)]
mod tests {
    use super::StorageConfig;

    /// The metamorphic set as reports name it: block size, bloom filters, codec, layout
    /// and a memtable other than RocksDB's default.
    #[test]
    fn the_storage_configurations_name_themselves() {
        let names = StorageConfig::SET.map(|config| config.to_string());
        let expected = [
            "block=32KiB bloom snappy",
            "block=1KiB bloom snappy",
            "block=32KiB no-bloom snappy",
            "block=4KiB no-bloom uncompressed",
            "block=32KiB bloom snappy packed",
            "block=32KiB bloom snappy entity",
            "block=32KiB bloom snappy memtable=256MiB",
            "block=4KiB bloom snappy cache=64KiB",
            "block=32KiB bloom snappy cache=1024MiB",
            "block=32KiB bloom snappy tablets=4",
            "block=4KiB bloom snappy tablets=16",
            "block=4KiB bloom snappy no-pruning",
        ];
        assert_eq!(names, expected);
        assert_eq!(StorageConfig::SET[1].block_bytes, 1024);
    }

    /// A tablet reads through its node's cache, the default one or one without midpoint
    /// insertion (installed on the options after their table factory).
    #[test]
    fn tablets_read_through_either_cache() {
        use super::{BlockCache, Rocks};
        use crate::{canary::Plants, db::DocDb, OpId};
        let caches = [
            ("default", Rocks::new(false, 1 << 20)),
            ("no-midpoint", Rocks::without_midpoint_insertion(false, 1 << 20)),
        ];
        for (name, rocks) in caches {
            let rocks = rocks.expect("rocks");
            let dir = crate::tests::scratch_dir(&format!("rocks-cache-{name}"));
            let db = DocDb::open_in(&dir, &rocks, Plants::NONE, StorageConfig::default());
            let db = db.expect("open");
            crate::tests::write_int(&db, 1, 1_000, Some(OpId::new(1, 1)));
            db.flush().expect("flush");
            assert!(db.db().get(super::super::FRONTIER_KEY).expect("read").is_some());
            let usage = match &rocks.block_cache {
                BlockCache::Default(cache) => cache.get_usage(),
                BlockCache::NoMidpoint(cache) => cache.usage(),
            };
            assert!(usage > 0, "{name}: nothing in the node's cache");
        }
    }
}
