//! The error of a byte string that does not decode: a leaf of the module graph, so that
//! the encoding layer can name it without depending on the engine's [`crate::Error`].

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
