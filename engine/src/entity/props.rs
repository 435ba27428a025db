//! Table properties written and read in Rust: a collector RocksDB runs for every SST file
//! it builds (flushes and compactions), which writes one user-collected property, and an
//! iterator's table filter, which reads that property back to skip whole files. RocksDB's
//! C API has the filter (`rocksdb_readoptions_set_table_filter`) but neither a way to
//! write a collector nor to read a user property; both come from the shim.

use librocksdb_sys as ffi;
use rocksdb::AsRawPtr;
use std::ffi::{c_char, c_void, CStr};

unsafe extern "C" {
    fn docsim_live_file_entries(
        db: *mut ffi::rocksdb_t,
        each: unsafe extern "C" fn(*mut c_void, *const c_char, usize, u64),
        ctx: *mut c_void,
        errptr: *mut *mut c_char,
    );
    fn docsim_options_add_collector(
        opts: *mut ffi::rocksdb_options_t,
        cb: *const CollectorCallbacks,
        state: *mut c_void,
        name: *const c_char,
    );
    fn docsim_property_set(out: *mut c_void, value: *const c_char, len: usize);
    fn docsim_table_property(
        props: *const ffi::rocksdb_table_properties_t,
        name: *const c_char,
        len: *mut usize,
    ) -> *const c_char;
}

/// One file's collector: shown every user key of the file in order, then asked for the
/// property's bytes. It runs behind `extern "C"` on RocksDB's threads: it must not panic
/// (a panic is caught and leaves the property empty, which readers take as "no bounds").
pub trait PropertyCollector: Send {
    fn add(&mut self, key: &[u8]);
    fn finish(&mut self) -> Vec<u8>;
}

/// What makes a collector for each file RocksDB builds.
pub type MakeCollector = Box<dyn Fn() -> Box<dyn PropertyCollector> + Send + Sync>;

/// The shim's callback table (`docsim_collector_callbacks` in shim.cc, field for field).
#[repr(C)]
struct CollectorCallbacks {
    create: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
    destroy: unsafe extern "C" fn(*mut c_void),
    destroy_factory: unsafe extern "C" fn(*mut c_void),
    add: unsafe extern "C" fn(*mut c_void, *const c_char, usize),
    finish: unsafe extern "C" fn(*mut c_void, *mut c_void),
}

/// Add, on `opts`, a collector factory whose collectors `make` builds, each writing the
/// user-collected property `name`.
pub fn add_property_collector(opts: &mut rocksdb::Options, name: &CStr, make: MakeCollector) {
    let callbacks = CollectorCallbacks { create, destroy, destroy_factory, add, finish };
    let state = Box::into_raw(Box::new(make)).cast::<c_void>();
    // SAFETY: `opts` is live; the shim copies the callback table and the name; `state` is
    // a leaked `Box<MakeCollector>` the factory owns and frees through `destroy_factory`.
    unsafe { docsim_options_add_collector(opts.as_raw_ptr(), &callbacks, state, name.as_ptr()) }
}

unsafe extern "C" fn create(factory: *mut c_void) -> *mut c_void {
    // SAFETY: `factory` is the `Box<MakeCollector>` of `add_property_collector`, alive
    // until `destroy_factory`; shared access only (`Fn + Sync`).
    let make = unsafe { &*factory.cast::<MakeCollector>() };
    let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(make))
        .unwrap_or_else(|_| Box::new(Nothing));
    Box::into_raw(Box::new(made)).cast()
}

/// The collector of a factory that panicked: an empty property.
struct Nothing;

impl PropertyCollector for Nothing {
    fn add(&mut self, _key: &[u8]) {}
    fn finish(&mut self) -> Vec<u8> {
        Vec::new()
    }
}

unsafe extern "C" fn destroy(collector: *mut c_void) {
    // SAFETY: `collector` came from `create` and is destroyed once, by its C++ owner.
    drop(unsafe { Box::from_raw(collector.cast::<Box<dyn PropertyCollector>>()) });
}

unsafe extern "C" fn destroy_factory(factory: *mut c_void) {
    // SAFETY: `factory` came from `add_property_collector` and is destroyed once.
    drop(unsafe { Box::from_raw(factory.cast::<MakeCollector>()) });
}

unsafe extern "C" fn add(collector: *mut c_void, key: *const c_char, key_len: usize) {
    // SAFETY: `collector` is live (from `create`); the key is valid for the call.
    let (collector, key) = unsafe {
        let key = std::slice::from_raw_parts(key.cast::<u8>(), key_len);
        (&mut *collector.cast::<Box<dyn PropertyCollector>>(), key)
    };
    let added = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| collector.add(key)));
    if added.is_err() {
        *collector = Box::new(Nothing);
    }
}

unsafe extern "C" fn finish(collector: *mut c_void, out: *mut c_void) {
    // SAFETY: `collector` is live (from `create`).
    let collector = unsafe { &mut *collector.cast::<Box<dyn PropertyCollector>>() };
    let bytes = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| collector.finish()))
        .unwrap_or_default();
    // SAFETY: `out` is the shim's string for this call; the shim copies the bytes.
    unsafe { docsim_property_set(out, bytes.as_ptr().cast(), bytes.len()) }
}

/// Which files an iterator reads: given a file's property (`None`: the file has none),
/// whether to read it. It runs behind `extern "C"`: a panic reads the file.
pub type KeepFile = Box<dyn Fn(Option<&[u8]>) -> bool + Send + Sync>;

/// An iterator's table filter: the property it reads and the decision.
pub(super) struct TableFilter {
    pub(super) property: &'static CStr,
    pub(super) keep: KeepFile,
}

/// Set `filter` on `options` (which then own it).
///
/// # Safety
/// `options` must be live read options.
pub(super) unsafe fn set_table_filter(
    options: *mut ffi::rocksdb_readoptions_t,
    filter: TableFilter,
) {
    let state = Box::into_raw(Box::new(filter)).cast::<c_void>();
    // SAFETY: the options own `state` from now on and free it through `drop_filter`.
    unsafe {
        ffi::rocksdb_readoptions_set_table_filter(options, state, Some(drop_filter), Some(keep))
    }
}

unsafe extern "C" fn drop_filter(state: *mut c_void) {
    // SAFETY: `state` came from `set_table_filter` and is freed once, by its options.
    drop(unsafe { Box::from_raw(state.cast::<TableFilter>()) });
}

unsafe extern "C" fn keep(state: *mut c_void, props: *const ffi::rocksdb_table_properties_t) -> u8 {
    // SAFETY: `state` is the live filter of `set_table_filter`; `props` is valid for the
    // call, and so is the property's bytes the shim points into.
    let (filter, property) = unsafe {
        let filter = &*state.cast::<TableFilter>();
        let mut len = 0;
        let found = docsim_table_property(props, filter.property.as_ptr(), &mut len);
        let property = (!found.is_null()).then(|| std::slice::from_raw_parts(found.cast(), len));
        (filter, property)
    };
    let kept = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (filter.keep)(property)));
    u8::from(kept.unwrap_or(true))
}

/// Each live SST file's path (as RocksDB names it) and entries, from its table
/// properties (RocksDB's live-file list counts them only once it has loaded them).
pub fn live_file_entries(db: &rocksdb::DB) -> Result<Vec<(String, u64)>, String> {
    unsafe extern "C" fn each(ctx: *mut c_void, name: *const c_char, len: usize, entries: u64) {
        // SAFETY: `ctx` is the vector below, `name` holds `len` bytes, for the call.
        let (out, name) = unsafe {
            (&mut *ctx.cast::<Vec<(String, u64)>>(), std::slice::from_raw_parts(name.cast(), len))
        };
        out.push((String::from_utf8_lossy(name).into_owned(), entries));
    }
    let mut out: Vec<(String, u64)> = Vec::new();
    let mut err: *mut c_char = std::ptr::null_mut();
    let ctx = (&mut out as *mut Vec<(String, u64)>).cast();
    // SAFETY: `db` is open; `each` touches `out` only during the call.
    unsafe { docsim_live_file_entries(db.as_raw_ptr(), each, ctx, &mut err) };
    super::take_error(err).map(|()| out)
}
