//! The engine's errors, typed by what the caller must do about them.

use crate::hybrid_time::HybridTime;
use std::fmt;

/// A byte string that does not decode: what was being decoded, where, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// What was being decoded ("key", "value", "signed varint", ...).
    pub what: &'static str,
    /// Byte offset of the problem in the input.
    pub offset: usize,
    /// What is wrong there.
    pub reason: String,
}

impl DecodeError {
    pub(crate) fn new(what: &'static str, offset: usize, reason: impl Into<String>) -> Self {
        DecodeError { what, offset, reason: reason.into() }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed {} at byte {}: {}", self.what, self.offset, self.reason)
    }
}

impl std::error::Error for DecodeError {}

/// Engine errors. Invariant violations are not errors: they are assertions.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Stored bytes do not decode. `key` is the hex of the key involved, when known.
    #[error("corruption: {error}{}", key_suffix(.key))]
    Corruption { error: DecodeError, key: Option<String> },
    /// The caller asked for something invalid (bad path, type mismatch, bad TTL...).
    #[error("{0}")]
    InvalidInput(String),
    /// A read below the history cutoff, whose data compaction may have removed.
    #[error("snapshot too old: read at {read_ht} is below the history cutoff {cutoff_ht}")]
    SnapshotTooOld { read_ht: HybridTime, cutoff_ht: HybridTime },
    /// A crash was injected at this stage of a write (simulation): the tablet is down
    /// until it is restarted.
    #[error("crashed {0}")]
    Crashed(&'static str),
    /// The storage layer failed (RocksDB or the file system).
    #[error("storage error: {0}")]
    Storage(String),
    /// The compaction filter could not decide some entries (they were kept unchanged).
    #[error("compaction filter failed: {0}")]
    CompactionFilter(String),
}

fn key_suffix(key: &Option<String>) -> String {
    key.as_ref().map(|k| format!(" (key {k})")).unwrap_or_default()
}

impl From<DecodeError> for Error {
    fn from(error: DecodeError) -> Self {
        Error::Corruption { error, key: None }
    }
}

impl From<rocksdb::Error> for Error {
    fn from(e: rocksdb::Error) -> Self {
        Error::Storage(e.into_string())
    }
}

/// Engine result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `Err(Error::InvalidInput(format!(...)))`.
macro_rules! errinput {
    ($($arg:tt)*) => { Err($crate::error::Error::InvalidInput(format!($($arg)*))) };
}
pub(crate) use errinput;
