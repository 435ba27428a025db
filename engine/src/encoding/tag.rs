//! Type bytes. Keys and values use YugabyteDB's bytes (`dockv/value_type.h`) so that dumps
//! line up with YugabyteDB's; RocksDB compares keys bytewise, so their numeric order is the
//! order of types in a key.

use super::primitive::SortOrder;

/// Ends the hashed group and the range group of a document key (lowest graphic byte, so a
/// key that is a component prefix of another sorts first).
pub const GROUP_END: u8 = b'!';
/// Precedes the encoded DocHybridTime; below every type byte, so a parent path sorts
/// before its children.
pub const HYBRID_TIME: u8 = b'#';
/// Colocation id prefix (+ 4 bytes big-endian).
pub const COLOCATION_ID: u8 = b'0';
/// 16-bit hash prefix (+ 2 bytes big-endian).
pub const HASH: u8 = b'G';

pub const NULL_LOW: u8 = b'$';
pub const NULL_HIGH: u8 = b'|';
pub const DOUBLE: u8 = b'D';
pub const FALSE: u8 = b'F';
pub const INT32: u8 = b'H';
pub const INT64: u8 = b'I';
pub const SYSTEM_COLUMN_ID: u8 = b'J';
pub const COLUMN_ID: u8 = b'K';
pub const DOUBLE_DESC: u8 = b'L';
/// docsim extension: YugabyteDB has no descending column ids.
pub const COLUMN_ID_DESC: u8 = b'P';
/// docsim extension: YugabyteDB has no descending system column ids.
pub const SYSTEM_COLUMN_ID_DESC: u8 = b'Q';
pub const STRING: u8 = b'S';
pub const TRUE: u8 = b'T';
pub const STRING_DESC: u8 = b'a';
pub const INT64_DESC: u8 = b'b';
pub const TIMESTAMP_DESC: u8 = b'c';
pub const INT32_DESC: u8 = b'e';
pub const TRUE_DESC: u8 = b'h';
pub const FALSE_DESC: u8 = b'i';
pub const TIMESTAMP: u8 = b's';

/// Value control field: merge flags (+ unsigned varint); 1 marks a TTL-only record.
pub const VALUE_MERGE_FLAGS: u8 = b'k';
/// The merge flag of a TTL-only record (YugabyteDB's `ValueControlFields::kTtlFlag`).
pub const MERGE_FLAG_TTL: u8 = 1;
/// Value control field: TTL in milliseconds (+ signed varint).
pub const VALUE_TTL: u8 = b't';
/// Value type: init marker of an object.
pub const VALUE_OBJECT: u8 = b'{';
/// Value type: tombstone.
pub const VALUE_TOMBSTONE: u8 = b'X';
/// Value type: string, raw bytes to the end of the value.
pub const VALUE_STRING: u8 = b'S';
/// Value control field of a packed column folded in by repacking: its own write time
/// (hybrid time and write id, 12 bytes; `packed_row.rs`).
pub const VALUE_WRITE_TIME: u8 = b'u';
/// Value type of a packed row stored as a RocksDB entity (docsim's own): the entity's
/// default column, its schema version after it; the columns are the entity's others.
pub const VALUE_PACKED_ENTITY: u8 = b'Z';
/// Value type: a packed row, value format V1 (`ValueEntryType::kPackedRowV1`).
pub const VALUE_PACKED_ROW_V1: u8 = b'z';

/// What a key type byte announces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    Null,
    False,
    True,
    Int32,
    Int64,
    Double,
    String,
    Timestamp,
    ColumnId,
    SystemColumnId,
}

/// The kind and direction of a key component type byte, or `None` if it is not one.
pub fn key_kind(byte: u8) -> Option<(KeyKind, SortOrder)> {
    use KeyKind as K;
    use SortOrder::{Ascending as A, Descending as D};
    Some(match byte {
        NULL_LOW => (K::Null, A),
        NULL_HIGH => (K::Null, D),
        FALSE => (K::False, A),
        FALSE_DESC => (K::False, D),
        TRUE => (K::True, A),
        TRUE_DESC => (K::True, D),
        INT32 => (K::Int32, A),
        INT32_DESC => (K::Int32, D),
        INT64 => (K::Int64, A),
        INT64_DESC => (K::Int64, D),
        DOUBLE => (K::Double, A),
        DOUBLE_DESC => (K::Double, D),
        STRING => (K::String, A),
        STRING_DESC => (K::String, D),
        TIMESTAMP => (K::Timestamp, A),
        TIMESTAMP_DESC => (K::Timestamp, D),
        COLUMN_ID => (K::ColumnId, A),
        COLUMN_ID_DESC => (K::ColumnId, D),
        SYSTEM_COLUMN_ID => (K::SystemColumnId, A),
        SYSTEM_COLUMN_ID_DESC => (K::SystemColumnId, D),
        _ => return None,
    })
}
