//! Byte formats: binary-comparable keys, versioned keys and stored values.

mod doc_ht;
mod doc_key;
mod packed_row;
mod primitive;
pub(crate) mod tag;
mod value;
pub(crate) mod varint;
pub(crate) mod yb_hash;

pub use doc_key::{
    bloom_prefix_len, decode_key_suffix, doc_key_len, planted_bloom_prefix_len, DocKey, DocPath,
    SubDocKey,
};
pub use packed_row::{
    decode_packed_row, packed_header, unpack, PackedColumns, PackedRow, Packings, SchemaPacking,
    Slot, PACKED_ROW_V1,
};
pub use primitive::{KeyEntry, Primitive, SortOrder};
pub use value::{Ttl, Value, ValueKind};

pub(crate) use doc_ht::{decode as decode_doc_ht, BatchTimeEncoder};
pub(crate) use primitive::skip_key_entries;

/// Lowercase hex of `bytes`, for dumps and snapshots.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
