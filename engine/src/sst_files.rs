//! The RocksDB calls the safe `rocksdb` crate does not wrap, made through its C API: the
//! live SST files with their sequence numbers (to order them by age), and a compaction of
//! a chosen set of files (`CompactFiles`). The only `unsafe` code of the engine; each
//! call checks what it hands over and copies out what it gets back before freeing it.
//!
//! With DocDB's layout (universal compaction, one level) every SST file is in level 0,
//! ordered by age; RocksDB widens a level-0 selection to the contiguous run between its
//! oldest and newest file, so a subset compaction is always a run of files by age.

use crate::error::{Error, Result};
use librocksdb_sys as ffi;
use rocksdb::{AsRawPtr, DB};
use std::ffi::{c_char, CStr, CString};

/// One live SST file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SstFile {
    /// The file's name, as RocksDB names it (`/000012.sst`).
    pub name: String,
    /// Entries it holds (deletions included).
    pub entries: u64,
    /// Its smallest and largest user key.
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    /// The newest sequence number in it: files ordered by it are ordered by age.
    largest_seqno: u64,
    /// On the simulated disk: whether a power cut now would keep it whole (its bytes
    /// synced, its name's directory synced). `None` on other media.
    pub durable: Option<bool>,
}

/// The live SST files, oldest first.
pub fn live_files(db: &DB) -> Vec<SstFile> {
    // SAFETY: `db` is open for the whole call; `rocksdb_livefiles` returns an owned list
    // that is only read by index below its count, copied out, then destroyed once.
    unsafe {
        let list = ffi::rocksdb_livefiles(db.as_raw_ptr());
        let count = ffi::rocksdb_livefiles_count(list);
        let mut files = Vec::with_capacity(count.max(0) as usize);
        for i in 0..count {
            let bytes = |get: unsafe extern "C" fn(_, _, *mut usize) -> *const c_char| {
                let mut len = 0usize;
                let ptr = get(list, i, &mut len);
                std::slice::from_raw_parts(ptr.cast::<u8>(), len).to_vec()
            };
            let name = CStr::from_ptr(ffi::rocksdb_livefiles_name(list, i));
            files.push(SstFile {
                name: name.to_string_lossy().into_owned(),
                entries: ffi::rocksdb_livefiles_entries(list, i),
                smallest: bytes(ffi::rocksdb_livefiles_smallestkey),
                largest: bytes(ffi::rocksdb_livefiles_largestkey),
                largest_seqno: ffi::rocksdb_livefiles_largest_seqno(list, i),
                durable: None,
            });
        }
        ffi::rocksdb_livefiles_destroy(list);
        files.sort_by_key(|f| f.largest_seqno);
        entries_from_properties(db, &mut files);
        files
    }
}

/// Each file's entries from its table properties: the live file list counts them only
/// once RocksDB has loaded them, which a reopened database does lazily (0 until then).
/// Unreadable properties leave the list's count.
fn entries_from_properties(db: &DB, files: &mut [SstFile]) {
    let Ok(counts) = crate::entity::live_file_entries(db) else { return };
    for file in files {
        let found = counts.iter().find(|(path, _)| path.ends_with(&file.name));
        if let Some((_, entries)) = found {
            file.entries = *entries;
        }
    }
}

/// Compact exactly the files `names` (level 0 into level 0), running the compaction
/// filter; returns once done. `CompactFiles` runs the compaction on the calling thread,
/// and it reads the thread's CPU clock, which a simulation thread's clock interposer
/// (madsim's) refuses: so the call runs on a plain thread of its own, waited for at once
/// (nothing else runs meanwhile; as `compact_range`'s background job is waited for).
pub fn compact_files(db: &DB, names: &[String]) -> Result<()> {
    std::thread::scope(|scope| {
        let job = scope.spawn(|| compact_files_here(db, names));
        job.join().unwrap_or_else(|_| Err(Error::Storage("the compaction thread panicked".into())))
    })
}

fn compact_files_here(db: &DB, names: &[String]) -> Result<()> {
    let names: Vec<CString> = names
        .iter()
        .map(|n| CString::new(n.as_str()))
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| Error::Storage(format!("an SST file name holds a NUL byte: {e}")))?;
    let pointers: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
    let mut error: *mut c_char = std::ptr::null_mut();
    // SAFETY: `db` is open; the names outlive the call; null options, outputs and job
    // info are accepted by the C API (defaults, not reported); `error` is either left
    // null or set to a string we own and free.
    unsafe {
        ffi::rocksdb_compact_files(
            db.as_raw_ptr(),
            std::ptr::null(),
            pointers.as_ptr(),
            pointers.len(),
            0,
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut error,
        );
        if error.is_null() {
            return Ok(());
        }
        let message = CStr::from_ptr(error).to_string_lossy().into_owned();
        ffi::rocksdb_free(error.cast());
        Err(match Error::from_rocksdb_status(message) {
            Error::Storage(message) => {
                Error::Storage(format!("compacting {} files: {message}", names.len()))
            }
            kind => kind, // corruption, I/O, full disk: RocksDB's words name the file
        })
    }
}
