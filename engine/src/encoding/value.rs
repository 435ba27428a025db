//! Stored values: optional control fields, then a type byte and payload.
//!
//! ```text
//! value = [ 't' ttl_ms:signed-varint ]  type-byte payload
//! ```
//! No `t` field means the entry inherits its TTL (from its parent, else the table default);
//! `t 80` (0 ms) means "never expires", overriding both. Primitive payloads are not
//! binary-comparable: integers are plain big-endian, strings run to the end of the value.

use super::{tag, varint, Primitive};
use crate::decode_error::DecodeError;

/// A value's time to live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Ttl {
    /// No TTL stored: the parent's expiration or the table default applies.
    #[default]
    Inherit,
    /// Explicitly never expires (stored as 0 ms; overrides the table default).
    Never,
    /// Expires this many milliseconds after the entry's write time (> 0).
    Ms(u64),
}

impl Ttl {
    /// A TTL from milliseconds: 0 is [`Ttl::Never`].
    pub fn from_ms(ttl_ms: u64) -> Ttl {
        if ttl_ms == 0 {
            Ttl::Never
        } else {
            Ttl::Ms(ttl_ms)
        }
    }
}

/// What a stored entry is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueKind {
    /// A leaf value.
    Primitive(Primitive),
    /// An init marker `{}`: an object exists here from this version on.
    Object,
    /// A tombstone `DEL`: nothing exists here (or below) at this version.
    Tombstone,
    /// A TTL-only record (merge flags 1): the version beneath keeps its content and takes
    /// this record's TTL, counted from this record's write time; it hides nothing.
    /// YugabyteDB's Redis EXPIRE writes it (`RedisWriteOperation::ApplySetTtl`,
    /// `src/yb/docdb/redis_operation.cc`) with the key's type as its value: an object
    /// (`object`, a hash or set) or an empty string.
    TtlOnly { object: bool },
    /// A packed row (`z`, value format V1): every packed non-key column of a CQL row in
    /// one value at the bare document key. Held as stored after the `z` (schema version,
    /// end offsets, column bytes); its columns decode only with the packing of its schema
    /// version (`packed_row.rs`).
    PackedRow(Vec<u8>),
    /// The default column of a packed row stored as a RocksDB entity: its schema version;
    /// the packed columns are the entity's other columns, one per column id (`db/packed.rs`).
    EntityRow(u32),
}

/// A stored value: TTL control field and kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Value {
    /// The TTL control field.
    pub ttl: Ttl,
    /// The entry.
    pub kind: ValueKind,
}

impl Value {
    /// A value without TTL.
    pub fn new(kind: ValueKind) -> Value {
        Value { ttl: Ttl::Inherit, kind }
    }

    /// A tombstone.
    pub fn tombstone() -> Value {
        Value::new(ValueKind::Tombstone)
    }

    /// Append the encoding.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        if let ValueKind::TtlOnly { .. } = self.kind {
            // YugabyteDB's unsigned varint of 1 (`FastEncodeUnsignedVarInt`): one byte.
            out.extend_from_slice(&[tag::VALUE_MERGE_FLAGS, tag::MERGE_FLAG_TTL]);
        }
        encode_ttl(self.ttl, out);
        match &self.kind {
            ValueKind::Object | ValueKind::TtlOnly { object: true } => out.push(tag::VALUE_OBJECT),
            ValueKind::TtlOnly { object: false } => out.push(tag::VALUE_STRING),
            ValueKind::Tombstone => out.push(tag::VALUE_TOMBSTONE),
            ValueKind::Primitive(p) => encode_primitive(p, out),
            ValueKind::PackedRow(body) => {
                out.push(tag::VALUE_PACKED_ROW_V1);
                out.extend_from_slice(body);
            }
            ValueKind::EntityRow(version) => {
                out.push(tag::VALUE_PACKED_ENTITY);
                varint::encode_unsigned(u64::from(*version), out);
            }
        }
    }

    /// Whether an encoded value hides nothing beneath it: a TTL-only record, or a packed
    /// row (it stands for its columns' entries, not for a version of the row itself).
    pub fn hides_nothing(encoded: &[u8]) -> bool {
        if Value::is_ttl_only(encoded) {
            return true;
        }
        let type_at = match encoded.first() {
            Some(&tag::VALUE_TTL) => 1 + varint::len_from_header(&encoded[1..]).unwrap_or(0),
            _ => 0,
        };
        matches!(encoded.get(type_at), Some(&(tag::VALUE_PACKED_ROW_V1 | tag::VALUE_PACKED_ENTITY)))
    }

    /// Whether an encoded value is a TTL-only record, from its first byte.
    pub fn is_ttl_only(encoded: &[u8]) -> bool {
        encoded.first() == Some(&tag::VALUE_MERGE_FLAGS)
    }

    /// The encoding.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_to(&mut out);
        out
    }

    /// Decode a whole value. Total: errors name the offset and what is wrong.
    pub fn decode(input: &[u8]) -> Result<Value, DecodeError> {
        let err = |at: usize, reason: String| DecodeError::new("value", at, reason);
        let (ttl_only, ttl, pos) = decode_control_fields(input)?;
        let &type_byte =
            input.get(pos).ok_or_else(|| err(pos, "missing value type byte".into()))?;
        let payload = &input[pos + 1..];
        let fixed = |n: usize| -> Result<[u8; 8], DecodeError> {
            if payload.len() != n {
                return Err(err(
                    pos + 1,
                    format!("payload of {} bytes, expected {n}", payload.len()),
                ));
            }
            let mut buf = [0u8; 8];
            buf[8 - n..].copy_from_slice(payload);
            Ok(buf)
        };
        let kind = match type_byte {
            tag::VALUE_OBJECT | tag::VALUE_TOMBSTONE | tag::NULL_LOW | tag::TRUE | tag::FALSE
                if !payload.is_empty() =>
            {
                return Err(err(pos + 1, format!("{} unexpected trailing bytes", payload.len())));
            }
            tag::VALUE_OBJECT => ValueKind::Object,
            tag::VALUE_PACKED_ROW_V1 if !ttl_only => ValueKind::PackedRow(payload.to_vec()),
            tag::VALUE_PACKED_ENTITY if !ttl_only => entity_row(payload, pos + 1)?,
            tag::VALUE_TOMBSTONE => ValueKind::Tombstone,
            tag::NULL_LOW => ValueKind::Primitive(Primitive::Null),
            tag::TRUE => ValueKind::Primitive(Primitive::Bool(true)),
            tag::FALSE => ValueKind::Primitive(Primitive::Bool(false)),
            tag::INT32 => {
                ValueKind::Primitive(Primitive::Int32(u64::from_be_bytes(fixed(4)?) as u32 as i32))
            }
            tag::INT64 => {
                ValueKind::Primitive(Primitive::Int64(u64::from_be_bytes(fixed(8)?) as i64))
            }
            tag::TIMESTAMP => {
                ValueKind::Primitive(Primitive::Timestamp(u64::from_be_bytes(fixed(8)?) as i64))
            }
            tag::DOUBLE => ValueKind::Primitive(Primitive::Double(f64::from_bits(
                u64::from_be_bytes(fixed(8)?),
            ))),
            tag::VALUE_STRING => {
                let s = std::str::from_utf8(payload).map_err(|e| {
                    err(pos + 1 + e.valid_up_to(), "invalid UTF-8 in string".into())
                })?;
                ValueKind::Primitive(Primitive::String(s.to_owned()))
            }
            tag::COLUMN_ID | tag::SYSTEM_COLUMN_ID => {
                let (v, n) = varint::decode_signed(payload, pos + 1)?;
                if n != payload.len() {
                    return Err(err(pos + 1 + n, "trailing bytes after column id".into()));
                }
                let id = i32::try_from(v)
                    .map_err(|_| err(pos + 1, format!("column id {v} out of range")))?;
                ValueKind::Primitive(if type_byte == tag::COLUMN_ID {
                    Primitive::ColumnId(id)
                } else {
                    Primitive::SystemColumnId(id)
                })
            }
            other => return Err(err(pos, format!("unknown value type byte 0x{other:02x}"))),
        };
        if ttl_only {
            return ttl_only_record(ttl, kind, pos);
        }
        Ok(Value { ttl, kind })
    }
}

/// The kind of an entity row's default column: its schema version (`payload`, found at
/// offset `at`), nothing after it.
fn entity_row(payload: &[u8], at: usize) -> Result<ValueKind, DecodeError> {
    let err = |pos: usize, reason: &str| DecodeError::new("value", pos, reason);
    let (version, n) = varint::decode_unsigned(payload, at)?;
    if n != payload.len() {
        return Err(err(at + n, "trailing bytes after the schema version"));
    }
    let version = u32::try_from(version).map_err(|_| err(at, "schema version over 32 bits"))?;
    Ok(ValueKind::EntityRow(version))
}

/// The control fields at the start of a value: whether it is a TTL-only record (merge
/// flags 1), its TTL, and where its type byte starts.
pub(super) fn decode_control_fields(input: &[u8]) -> Result<(bool, Ttl, usize), DecodeError> {
    let err = |at: usize, reason: String| DecodeError::new("value", at, reason);
    let mut pos = 0;
    let mut ttl_only = false;
    if input.first() == Some(&tag::VALUE_MERGE_FLAGS) {
        // The only merge flags YugabyteDB writes: 1, a one-byte unsigned varint.
        match input.get(1) {
            Some(&tag::MERGE_FLAG_TTL) => {}
            Some(other) => return Err(err(1, format!("unknown merge flags byte 0x{other:02x}"))),
            None => return Err(err(1, "missing merge flags".into())),
        }
        ttl_only = true;
        pos = 2;
    }
    let mut ttl = Ttl::Inherit;
    if input.get(pos) == Some(&tag::VALUE_TTL) {
        let (ms, n) = varint::decode_signed(&input[pos + 1..], pos + 1)?;
        let ms = u64::try_from(ms).map_err(|_| err(pos + 1, format!("negative TTL {ms} ms")))?;
        ttl = Ttl::from_ms(ms);
        pos += 1 + n;
    }
    Ok((ttl_only, ttl, pos))
}

/// A TTL-only record of `kind` (its type byte at `pos`): `{` or an empty string, with a TTL.
fn ttl_only_record(ttl: Ttl, kind: ValueKind, pos: usize) -> Result<Value, DecodeError> {
    let err = |reason: &str| Err(DecodeError::new("value", pos, reason));
    let kind = match kind {
        ValueKind::Object => ValueKind::TtlOnly { object: true },
        ValueKind::Primitive(Primitive::String(s)) if s.is_empty() => {
            ValueKind::TtlOnly { object: false }
        }
        _ => return err("a TTL-only record holds `{` or an empty string"),
    };
    if ttl == Ttl::Inherit {
        return err("a TTL-only record without a TTL");
    }
    Ok(Value { ttl, kind })
}

pub(super) fn encode_ttl(ttl: Ttl, out: &mut Vec<u8>) {
    match ttl {
        Ttl::Inherit => {}
        Ttl::Never => {
            out.push(tag::VALUE_TTL);
            varint::encode_signed(0, out);
        }
        Ttl::Ms(ms) => {
            out.push(tag::VALUE_TTL);
            varint::encode_signed(i64::try_from(ms).unwrap_or(i64::MAX), out);
        }
    }
}

fn encode_primitive(p: &Primitive, out: &mut Vec<u8>) {
    match p {
        Primitive::Null => out.push(tag::NULL_LOW),
        Primitive::Bool(true) => out.push(tag::TRUE),
        Primitive::Bool(false) => out.push(tag::FALSE),
        Primitive::Int32(v) => {
            out.push(tag::INT32);
            out.extend_from_slice(&v.to_be_bytes());
        }
        Primitive::Int64(v) => {
            out.push(tag::INT64);
            out.extend_from_slice(&v.to_be_bytes());
        }
        Primitive::Timestamp(v) => {
            out.push(tag::TIMESTAMP);
            out.extend_from_slice(&v.to_be_bytes());
        }
        Primitive::Double(d) => {
            out.push(tag::DOUBLE);
            let d = if d.is_nan() { f64::NAN } else { *d };
            out.extend_from_slice(&d.to_bits().to_be_bytes());
        }
        Primitive::String(s) => {
            out.push(tag::VALUE_STRING);
            out.extend_from_slice(s.as_bytes());
        }
        Primitive::ColumnId(id) => {
            out.push(tag::COLUMN_ID);
            varint::encode_signed(i64::from(*id), out);
        }
        Primitive::SystemColumnId(id) => {
            out.push(tag::SYSTEM_COLUMN_ID);
            varint::encode_signed(i64::from(*id), out);
        }
    }
}
