//! RocksDB wide-column entities: `PutEntity` in a write batch and `GetEntity`, which
//! RocksDB's C API (and so the `rocksdb` crate) lacks. They come from a small C++ shim
//! (`entity/shim.cc`, built by `build.rs` against the headers of the RocksDB that
//! librocksdb-sys compiles); this module is the whole `unsafe` boundary around it.
//!
//! An entity is a key with named columns instead of one value. A plain iterator or `get`
//! sees an entity's default column (the one with the empty name) as its value; a
//! compaction filter written against the C API (`Filter`, as the engine's GC filter is)
//! never sees entities at all: RocksDB's default `FilterV3` keeps every entity without
//! asking (`compaction_filter.h`). The third storage layout of issue 16, packed rows as
//! entities, needs a `FilterV3` filter in the shim as well; it is not built yet.

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
        // SAFETY: `db` and `raw` are live; the write options live until after the write.
        unsafe {
            let options = ffi::rocksdb_writeoptions_create();
            ffi::rocksdb_writeoptions_disable_WAL(options, c_int::from(!wal));
            ffi::rocksdb_write(db.as_raw_ptr(), options, self.raw, &mut err);
            ffi::rocksdb_writeoptions_destroy(options);
        }
        take_error(err)
    }
}

impl Default for EntityBatch {
    fn default() -> EntityBatch {
        EntityBatch::new()
    }
}

impl Drop for EntityBatch {
    fn drop(&mut self) {
        // SAFETY: `raw` was created by `rocksdb_writebatch_create` and is destroyed once.
        unsafe { ffi::rocksdb_writebatch_destroy(self.raw) }
    }
}

/// The columns (in name order) of the entity at `key` in `db`'s default column family; a
/// plain value reads as one column with the empty name; `None` if the key is absent.
pub fn get_entity(db: &rocksdb::DB, key: &[u8]) -> Result<Option<Vec<Column>>, String> {
    unsafe extern "C" fn push(
        ctx: *mut c_void,
        name: *const c_char,
        name_len: usize,
        value: *const c_char,
        value_len: usize,
    ) {
        // SAFETY: `ctx` is the `Vec` below, alive for the call; name and value point to
        // `name_len` and `value_len` bytes RocksDB keeps pinned until the call returns.
        unsafe {
            let out = &mut *ctx.cast::<Vec<Column>>();
            let name = std::slice::from_raw_parts(name.cast::<u8>(), name_len);
            let value = std::slice::from_raw_parts(value.cast::<u8>(), value_len);
            out.push((name.to_vec(), value.to_vec()));
        }
    }
    let mut columns: Vec<Column> = Vec::new();
    let mut err: *mut c_char = std::ptr::null_mut();
    // SAFETY: `db` is live; `push` only touches `columns` through `ctx` during the call.
    let found = unsafe {
        docsim_get_entity(
            db.as_raw_ptr(),
            key.as_ptr().cast(),
            key.len(),
            push,
            (&mut columns as *mut Vec<Column>).cast(),
            &mut err,
        )
    };
    take_error(err)?;
    Ok((found != 0).then_some(columns))
}

/// A C API error message (malloc'ed by RocksDB or the shim) as a `String`, freed.
fn take_error(err: *mut c_char) -> Result<(), String> {
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
