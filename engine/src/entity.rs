//! RocksDB wide-column entities: `PutEntity` in a write batch and `GetEntity`, which
//! RocksDB's C API (and so the `rocksdb` crate) lacks. They come from a small C++ shim
//! (`entity/shim.cc`, built by `build.rs` against the headers of the RocksDB that
//! librocksdb-sys compiles); this module is the whole `unsafe` boundary around it.
//!
//! An entity is a key with named columns instead of one value. A plain iterator or `get`
//! sees an entity's default column (the one with the empty name) as its value; a
//! compaction filter written against the C API (`Filter`, as the engine's GC filter is)
//! never sees entities at all: RocksDB's default `FilterV3` keeps every entity without
//! asking (`compaction_filter.h`). So the shim also has a `FilterV3` filter factory whose
//! filters ask Rust ([`EntityFilter`], [`set_filter_factory`]) about plain values and
//! entities alike. The same shim writes and reads table properties for Rust (`props.rs`):
//! a collector run for every SST file and an iterator's table filter reading it back,
//! and makes LRU block caches with options the C API cannot set (`cache.rs`).

mod cache;
mod props;

pub use cache::LruCache;
pub use props::{
    add_property_collector, live_file_entries, KeepFile, MakeCollector, PropertyCollector,
};

use librocksdb_sys as ffi;
use rocksdb::AsRawPtr;
use std::ffi::{c_char, c_int, c_void, CStr};

unsafe extern "C" {
    fn docsim_writebatch_put_entity(
        db: *mut ffi::rocksdb_t,
        batch: *mut ffi::rocksdb_writebatch_t,
        key: *const c_char,
        key_len: usize,
        n: usize,
        names: *const *const c_char,
        name_lens: *const usize,
        values: *const *const c_char,
        value_lens: *const usize,
        errptr: *mut *mut c_char,
    );
    fn docsim_iter_columns(
        it: *const ffi::rocksdb_iterator_t,
        column: unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize),
        ctx: *mut c_void,
    );
    fn docsim_filter_set_value(out: *mut c_void, value: *const c_char, len: usize);
    fn docsim_filter_add_column(
        out: *mut c_void,
        name: *const c_char,
        name_len: usize,
        value: *const c_char,
        value_len: usize,
    );
    fn docsim_options_set_filter_factory(
        opts: *mut ffi::rocksdb_options_t,
        cb: *const Callbacks,
        state: *mut c_void,
    );
    fn docsim_get_entity(
        db: *mut ffi::rocksdb_t,
        key: *const c_char,
        key_len: usize,
        column: unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize),
        ctx: *mut c_void,
        errptr: *mut *mut c_char,
    ) -> c_int;
}

/// One column of an entity: its name and value.
pub type Column = (Vec<u8>, Vec<u8>);

/// A RocksDB write batch that can also hold entities, written atomically with its other
/// entries.
pub struct EntityBatch {
    raw: *mut ffi::rocksdb_writebatch_t,
}

impl EntityBatch {
    /// An empty batch.
    pub fn new() -> EntityBatch {
        // SAFETY: creating a batch has no preconditions; it is destroyed in `drop`.
        EntityBatch { raw: unsafe { ffi::rocksdb_writebatch_create() } }
    }

    /// An empty batch with room for `bytes` bytes of RocksDB's encoding (it grows beyond).
    pub fn with_capacity(bytes: usize) -> EntityBatch {
        // SAFETY: as `new`; no size limit, no per-key protection, no timestamps.
        EntityBatch { raw: unsafe { ffi::rocksdb_writebatch_create_with_params(bytes, 0, 0, 0) } }
    }

    /// Put a plain value.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        // SAFETY: `raw` is a live batch; RocksDB copies key and value.
        unsafe {
            ffi::rocksdb_writebatch_put(
                self.raw,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
            )
        }
    }

    /// Put an entity with `columns` (distinct names) at `key`, for `db`'s default column
    /// family.
    pub fn put_entity(
        &mut self,
        db: &rocksdb::DB,
        key: &[u8],
        columns: &[(&[u8], &[u8])],
    ) -> Result<(), String> {
        let names: Vec<*const c_char> = columns.iter().map(|(n, _)| n.as_ptr().cast()).collect();
        let name_lens: Vec<usize> = columns.iter().map(|(n, _)| n.len()).collect();
        let values: Vec<*const c_char> = columns.iter().map(|(_, v)| v.as_ptr().cast()).collect();
        let value_lens: Vec<usize> = columns.iter().map(|(_, v)| v.len()).collect();
        let mut err: *mut c_char = std::ptr::null_mut();
        // SAFETY: `db` and `raw` are live; the four arrays hold `columns.len()` entries
        // pointing into `columns`, which outlives the call; RocksDB copies what it keeps.
        unsafe {
            docsim_writebatch_put_entity(
                db.as_raw_ptr(),
                self.raw,
                key.as_ptr().cast(),
                key.len(),
                columns.len(),
                names.as_ptr(),
                name_lens.as_ptr(),
                values.as_ptr(),
                value_lens.as_ptr(),
                &mut err,
            )
        };
        take_error(err)
    }

    /// Write the batch to `db`, with or without RocksDB's WAL.
    pub fn write(self, db: &rocksdb::DB, wal: bool) -> Result<(), String> {
        let mut err: *mut c_char = std::ptr::null_mut();
        // SAFETY: `db` and `raw` are live; the write options live as long as the process.
        unsafe { ffi::rocksdb_write(db.as_raw_ptr(), write_options(wal).0, self.raw, &mut err) };
        take_error(err)
    }
}

/// RocksDB write options, without and with the WAL: made once per process (never freed),
/// as they never change.
struct WriteOptions(*mut ffi::rocksdb_writeoptions_t);

// SAFETY: nothing changes the options after they are made; RocksDB only reads them, from
// any thread.
unsafe impl Send for WriteOptions {}
unsafe impl Sync for WriteOptions {}

fn write_options(wal: bool) -> &'static WriteOptions {
    static OPTIONS: std::sync::OnceLock<[WriteOptions; 2]> = std::sync::OnceLock::new();
    let made = OPTIONS.get_or_init(|| {
        [false, true].map(|wal| {
            // SAFETY: creating options has no preconditions; they are set before sharing.
            let options = unsafe { ffi::rocksdb_writeoptions_create() };
            unsafe { ffi::rocksdb_writeoptions_disable_WAL(options, c_int::from(!wal)) };
            WriteOptions(options)
        })
    });
    &made[usize::from(wal)]
}

impl Default for EntityBatch {
    fn default() -> EntityBatch {
        EntityBatch::new()
    }
}

impl Drop for EntityBatch {
    fn drop(&mut self) {
        // SAFETY: `raw` was created by `rocksdb_writebatch_create` (or `_with_params`) and is
        // destroyed once.
        unsafe { ffi::rocksdb_writebatch_destroy(self.raw) }
    }
}

/// A RocksDB iterator through the C API, which can also show the columns of the entity
/// it is at (the `rocksdb` crate's iterator cannot: its C iterator is private).
pub struct Iter<'a> {
    raw: *mut ffi::rocksdb_iterator_t,
    options: *mut ffi::rocksdb_readoptions_t,
    /// The upper bound the read options point into: it must outlive the iterator.
    _upper_bound: Option<Box<[u8]>>,
    _db: std::marker::PhantomData<&'a rocksdb::DB>,
}

// SAFETY: a RocksDB iterator may be used from any thread, one at a time; `Iter` is not
// `Sync`, so it never is used from two at once.
unsafe impl Send for Iter<'_> {}

impl<'a> Iter<'a> {
    /// An iterator over `db`, below `upper_bound` if given, in total order (ignoring the
    /// prefix extractor's bloom filters) if `total_order`.
    pub fn new(db: &'a rocksdb::DB, upper_bound: Option<Vec<u8>>, total_order: bool) -> Iter<'a> {
        Iter::with(db, upper_bound, total_order, true, None)
    }

    /// [`Iter::new`] reading only the files `keep` accepts, given each file's
    /// user-collected `property` (`props.rs`; RocksDB's `ReadOptions::table_filter`).
    /// Memtables are always read.
    pub fn filtered(
        db: &'a rocksdb::DB,
        (upper_bound, total_order): (Option<Vec<u8>>, bool),
        property: &'static CStr,
        keep: KeepFile,
    ) -> Iter<'a> {
        let filter = props::TableFilter { property, keep };
        Iter::with(db, upper_bound, total_order, true, Some(filter))
    }

    /// An iterator over all of `db` in total order that does not fill the block cache: a
    /// walk of a whole tablet (a dump, a compaction's planning) leaves the server's hot
    /// set in place (`ReadOptions::fill_cache(false)`, as YugabyteDB's full scans).
    pub fn walk(db: &'a rocksdb::DB) -> Iter<'a> {
        Iter::with(db, None, true, false, None)
    }

    fn with(
        db: &'a rocksdb::DB,
        upper_bound: Option<Vec<u8>>,
        total_order: bool,
        fill_cache: bool,
        filter: Option<props::TableFilter>,
    ) -> Iter<'a> {
        let upper_bound = upper_bound.map(Vec::into_boxed_slice);
        // SAFETY: the options are created here and destroyed in `drop` after the iterator;
        // the bound they point into is boxed in `self` (its heap bytes never move) and
        // dropped after both; `db` outlives the iterator (`'a`).
        unsafe {
            let options = ffi::rocksdb_readoptions_create();
            if let Some(bound) = &upper_bound {
                let (key, len) = (bound.as_ptr().cast(), bound.len());
                ffi::rocksdb_readoptions_set_iterate_upper_bound(options, key, len);
            }
            ffi::rocksdb_readoptions_set_total_order_seek(options, u8::from(total_order));
            ffi::rocksdb_readoptions_set_fill_cache(options, u8::from(fill_cache));
            if let Some(filter) = filter {
                props::set_table_filter(options, filter);
            }
            let raw = ffi::rocksdb_create_iterator(db.as_raw_ptr(), options);
            Iter { raw, options, _upper_bound: upper_bound, _db: std::marker::PhantomData }
        }
    }

    /// Position at the first key at or after `key`.
    pub fn seek(&mut self, key: &[u8]) {
        // SAFETY: `raw` is live; RocksDB copies the key.
        unsafe { ffi::rocksdb_iter_seek(self.raw, key.as_ptr().cast(), key.len()) }
    }

    /// Position at the first key.
    pub fn seek_to_first(&mut self) {
        // SAFETY: `raw` is live.
        unsafe { ffi::rocksdb_iter_seek_to_first(self.raw) }
    }

    /// Move to the next key.
    pub fn next(&mut self) {
        if self.valid() {
            // SAFETY: `raw` is live and valid.
            unsafe { ffi::rocksdb_iter_next(self.raw) }
        }
    }

    fn valid(&self) -> bool {
        // SAFETY: `raw` is live.
        unsafe { ffi::rocksdb_iter_valid(self.raw) != 0 }
    }

    /// The current key, if the iterator is at one (valid until it moves).
    pub fn key(&self) -> Option<&[u8]> {
        // SAFETY: when valid, the key's bytes live until the iterator moves, which needs
        // `&mut self`, so no longer than this borrow.
        self.valid().then(|| unsafe {
            let mut len = 0;
            let key = ffi::rocksdb_iter_key(self.raw, &mut len);
            std::slice::from_raw_parts(key.cast::<u8>(), len)
        })
    }

    /// The current value (an entity's default column), if at a key.
    pub fn value(&self) -> Option<&[u8]> {
        // SAFETY: as for `key`.
        self.valid().then(|| unsafe {
            let mut len = 0;
            let value = ffi::rocksdb_iter_value(self.raw, &mut len);
            std::slice::from_raw_parts(value.cast::<u8>(), len)
        })
    }

    /// The current entry's columns (in name order; a plain value is one column with the
    /// empty name); none if not at a key.
    pub fn columns(&self) -> Vec<Column> {
        let mut columns: Vec<Column> = Vec::new();
        if self.valid() {
            // SAFETY: `raw` is live and valid; `push` only touches `columns` during the
            // call, copying bytes that live until the iterator moves.
            unsafe {
                docsim_iter_columns(
                    self.raw,
                    push_column,
                    (&mut columns as *mut Vec<Column>).cast(),
                )
            };
        }
        columns
    }

    /// An error the iteration met, if any.
    pub fn status(&self) -> Result<(), String> {
        let mut err: *mut c_char = std::ptr::null_mut();
        // SAFETY: `raw` is live.
        unsafe { ffi::rocksdb_iter_get_error(self.raw, &mut err) };
        take_error(err)
    }
}

impl Drop for Iter<'_> {
    fn drop(&mut self) {
        // SAFETY: both were created in `new` and are destroyed once, the iterator first.
        unsafe {
            ffi::rocksdb_iter_destroy(self.raw);
            ffi::rocksdb_readoptions_destroy(self.options);
        }
    }
}

/// The shim's column callback: push one column onto the `Vec<Column>` at `ctx`.
unsafe extern "C" fn push_column(
    ctx: *mut c_void,
    name: *const c_char,
    name_len: usize,
    value: *const c_char,
    value_len: usize,
) {
    // SAFETY: `ctx` is a live `Vec<Column>`; name and value point to `name_len` and
    // `value_len` bytes valid for the call.
    unsafe {
        let out = &mut *ctx.cast::<Vec<Column>>();
        let name = std::slice::from_raw_parts(name.cast::<u8>(), name_len);
        let value = std::slice::from_raw_parts(value.cast::<u8>(), value_len);
        out.push((name.to_vec(), value.to_vec()));
    }
}

/// The columns (in name order) of the entity at `key` in `db`'s default column family; a
/// plain value reads as one column with the empty name; `None` if the key is absent.
pub fn get_entity(db: &rocksdb::DB, key: &[u8]) -> Result<Option<Vec<Column>>, String> {
    let mut columns: Vec<Column> = Vec::new();
    let mut err: *mut c_char = std::ptr::null_mut();
    // SAFETY: `db` is live; `push` only touches `columns` through `ctx` during the call.
    let found = unsafe {
        docsim_get_entity(
            db.as_raw_ptr(),
            key.as_ptr().cast(),
            key.len(),
            push_column,
            (&mut columns as *mut Vec<Column>).cast(),
            &mut err,
        )
    };
    take_error(err)?;
    Ok((found != 0).then_some(columns))
}

/// An entry a compaction shows a filter.
#[derive(Debug)]
pub enum Entry<'a> {
    /// A plain value.
    Value(&'a [u8]),
    /// An entity's columns (name, value), in name order.
    Entity(Vec<(&'a [u8], &'a [u8])>),
}

/// What a filter does with an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntityDecision {
    Keep,
    Remove,
    /// Replace the entry by this plain value.
    ChangeValue(Vec<u8>),
    /// Replace the entry by an entity of these columns (distinct names).
    ChangeEntity(Vec<Column>),
}

/// A compaction filter shown plain values and entities (`FilterV3`), one per compaction.
pub trait EntityFilter: Send {
    /// Decide one entry. A panic keeps the entry (it never crosses into RocksDB) and is
    /// handed to [`EntityFilter::panicked`].
    fn filter(&mut self, level: u32, key: &[u8], entry: Entry<'_>) -> EntityDecision;

    /// `filter` panicked with `message`: the filter must keep every entry from now on
    /// (its state is not to be trusted) and report the failure.
    fn panicked(&mut self, message: String);
}

/// What makes a filter for each compaction: told whether it is a full compaction and a
/// manual one. RocksDB may call it from several threads at once (subcompactions); it runs
/// behind `extern "C"`: it must not panic.
pub type MakeFilter = Box<dyn Fn(bool, bool) -> Box<dyn EntityFilter> + Send + Sync>;

/// The shim's callback table (`docsim_filter_callbacks` in shim.cc, field for field).
#[repr(C)]
struct Callbacks {
    create: unsafe extern "C" fn(*mut c_void, c_int, c_int) -> *mut c_void,
    destroy: unsafe extern "C" fn(*mut c_void),
    destroy_factory: unsafe extern "C" fn(*mut c_void),
    filter: FilterFn,
}

type FilterFn = unsafe extern "C" fn(
    *mut c_void,
    c_int,
    *const c_char,
    usize,
    c_int,
    usize,
    *const *const c_char,
    *const usize,
    *const *const c_char,
    *const usize,
    *mut c_void,
) -> c_int;

/// Install, on `opts`, a compaction filter factory whose filters `make` builds and which
/// see entities too. It replaces any factory set before: install it last.
pub fn set_filter_factory(opts: &mut rocksdb::Options, make: MakeFilter) {
    let callbacks = Callbacks { create, destroy, destroy_factory, filter: filter_entry };
    let state = Box::into_raw(Box::new(make)).cast::<c_void>();
    // SAFETY: `opts` is live; the shim copies the callback table; `state` is a leaked
    // `Box<MakeFilter>` the factory owns and frees through `destroy_factory`.
    unsafe { docsim_options_set_filter_factory(opts.as_raw_ptr(), &callbacks, state) }
}

unsafe extern "C" fn create(factory: *mut c_void, full: c_int, manual: c_int) -> *mut c_void {
    // SAFETY: `factory` is the `Box<MakeFilter>` of `set_filter_factory`, alive until
    // `destroy_factory`; shared access only (`Fn + Sync`), as RocksDB may call concurrently.
    let make = unsafe { &*factory.cast::<MakeFilter>() };
    Box::into_raw(Box::new(make(full != 0, manual != 0))).cast()
}

unsafe extern "C" fn destroy(filter: *mut c_void) {
    // SAFETY: `filter` came from `create` and is destroyed once, by its C++ owner.
    drop(unsafe { Box::from_raw(filter.cast::<Box<dyn EntityFilter>>()) });
}

unsafe extern "C" fn destroy_factory(factory: *mut c_void) {
    // SAFETY: `factory` came from `set_filter_factory` and is destroyed once.
    drop(unsafe { Box::from_raw(factory.cast::<MakeFilter>()) });
}

/// The shim's filter callback: the entry as slices, the Rust filter's decision back.
#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn filter_entry(
    filter: *mut c_void,
    level: c_int,
    key: *const c_char,
    key_len: usize,
    entity: c_int,
    n: usize,
    names: *const *const c_char,
    name_lens: *const usize,
    values: *const *const c_char,
    value_lens: *const usize,
    out: *mut c_void,
) -> c_int {
    // SAFETY: the shim passes `n` names and values with their lengths, and the key,
    // all valid for the call; `filter` is a live filter from `create`.
    let (filter, key, columns) = unsafe {
        let bytes = |p: *const c_char, len: usize| std::slice::from_raw_parts(p.cast::<u8>(), len);
        let columns: Vec<(&[u8], &[u8])> = (0..n)
            .map(|i| {
                (bytes(*names.add(i), *name_lens.add(i)), bytes(*values.add(i), *value_lens.add(i)))
            })
            .collect();
        (&mut *filter.cast::<Box<dyn EntityFilter>>(), bytes(key, key_len), columns)
    };
    let entry = match entity {
        0 => Entry::Value(columns.first().map_or(&[][..], |(_, v)| v)),
        _ => Entry::Entity(columns),
    };
    let level = u32::try_from(level).unwrap_or(0);
    let decided =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| filter.filter(level, key, entry)));
    let decided = decided.unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| filter.panicked(message)));
        EntityDecision::Keep
    });
    match decided {
        EntityDecision::Keep => 0,
        EntityDecision::Remove => 1,
        EntityDecision::ChangeValue(value) => {
            // SAFETY: `out` is the shim's output for this call; the shim copies the bytes.
            unsafe { docsim_filter_set_value(out, value.as_ptr().cast(), value.len()) };
            2
        }
        EntityDecision::ChangeEntity(columns) => {
            for (name, value) in &columns {
                // SAFETY: as above.
                unsafe {
                    docsim_filter_add_column(
                        out,
                        name.as_ptr().cast(),
                        name.len(),
                        value.as_ptr().cast(),
                        value.len(),
                    )
                };
            }
            3
        }
    }
}

/// A C API error message (malloc'ed by RocksDB or the shim) as a `String`, freed.
pub(crate) fn take_error(err: *mut c_char) -> Result<(), String> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: a non-null error is a NUL-terminated string allocated with malloc, which
    // `rocksdb_free` releases; it is read before it is freed.
    let message = unsafe { CStr::from_ptr(err).to_string_lossy().into_owned() };
    unsafe { ffi::rocksdb_free(err.cast()) };
    Err(message)
}

#[cfg(test)]
mod tests;
