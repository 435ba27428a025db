//! Primitive values and their binary-comparable key encoding.
//!
//! A key component is a type byte followed by a payload whose bytewise order is the value
//! order. Descending components use their own type byte and the bitwise complement of the
//! ascending payload: every ascending payload is self-delimiting (fixed width, a varint, or
//! an escaped and terminated string), so complementing it reverses the order exactly.

use super::tag;
use super::varint;
use crate::decode_error::DecodeError;
use std::cmp::Ordering;

/// A primitive value: what a key component or a leaf of a document holds.
#[derive(Clone, Debug)]
pub enum Primitive {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// `123i32`.
    Int32(i32),
    /// `123`.
    Int64(i64),
    /// `1.5`; NaN is canonicalised when encoded.
    Double(f64),
    /// `"text"`.
    String(String),
    /// `ts(N)`: microseconds since the Unix epoch.
    Timestamp(i64),
    /// `col(N)`: a CQL column id.
    ColumnId(i32),
    /// `sys(N)`: a system column id; `sys(0)` is the liveness column.
    SystemColumnId(i32),
}

/// Sort direction of a key component.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SortOrder {
    /// Natural order.
    Ascending,
    /// Reversed order: `desc(<literal>)`.
    Descending,
}

/// One component of a document key or a subkey: a primitive and its sort order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyEntry {
    /// The value.
    pub value: Primitive,
    /// Its sort direction.
    pub order: SortOrder,
}

fn canonical(d: f64) -> f64 {
    if d.is_nan() {
        f64::NAN
    } else {
        d
    }
}

impl Primitive {
    /// Compare two values of the same key type byte (same kind); values of different kinds
    /// are ordered by their type bytes, never by this.
    fn cmp_payload(&self, other: &Primitive) -> Ordering {
        use Primitive::*;
        match (self, other) {
            (Int32(a), Int32(b)) => a.cmp(b),
            (Int64(a), Int64(b)) | (Timestamp(a), Timestamp(b)) => a.cmp(b),
            (Double(a), Double(b)) => canonical(*a).total_cmp(&canonical(*b)),
            (String(a), String(b)) => a.as_bytes().cmp(b.as_bytes()),
            (ColumnId(a), ColumnId(b)) | (SystemColumnId(a), SystemColumnId(b)) => a.cmp(b),
            _ => Ordering::Equal, // Null, Bool: the type byte decides
        }
    }
}

impl Primitive {
    /// The order of two values as ascending key components: type byte, then payload
    /// (`KeyEntry`'s order in `SortOrder::Ascending`, without building the entries).
    pub fn cmp_ascending(&self, other: &Primitive) -> Ordering {
        let type_byte = |v: &Primitive| key_type_byte(v, SortOrder::Ascending);
        type_byte(self).cmp(&type_byte(other)).then_with(|| self.cmp_payload(other))
    }
}

impl PartialEq for Primitive {
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && key_type_byte(self, SortOrder::Ascending)
                == key_type_byte(other, SortOrder::Ascending)
            && self.cmp_payload(other) == Ordering::Equal
    }
}
impl Eq for Primitive {}

impl KeyEntry {
    /// An ascending component.
    pub fn asc(value: Primitive) -> KeyEntry {
        KeyEntry { value, order: SortOrder::Ascending }
    }

    /// A descending component.
    pub fn desc(value: Primitive) -> KeyEntry {
        KeyEntry { value, order: SortOrder::Descending }
    }

    /// The component's type byte.
    pub fn type_byte(&self) -> u8 {
        key_type_byte(&self.value, self.order)
    }

    /// Append the binary-comparable encoding.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        encode_component(&self.value, self.order, out);
    }

    /// Decode one component at `input[pos..]`; returns it and the position after it.
    pub fn decode(input: &[u8], pos: usize) -> Result<(KeyEntry, usize), DecodeError> {
        decode_key_entry(input, pos)
    }
}

impl Ord for KeyEntry {
    /// The order of the encodings: type byte first, then the payload in its direction.
    fn cmp(&self, other: &Self) -> Ordering {
        self.type_byte().cmp(&other.type_byte()).then_with(|| {
            let ord = self.value.cmp_payload(&other.value);
            match self.order {
                SortOrder::Ascending => ord,
                SortOrder::Descending => ord.reverse(),
            }
        })
    }
}

impl PartialOrd for KeyEntry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Append the binary-comparable encoding of `value` in `order` (a borrowed [`KeyEntry`]).
pub fn encode_component(value: &Primitive, order: SortOrder, out: &mut Vec<u8>) {
    out.push(key_type_byte(value, order));
    let start = out.len();
    encode_payload(value, out);
    if order == SortOrder::Descending {
        out[start..].iter_mut().for_each(|b| *b = !*b);
    }
}

fn key_type_byte(value: &Primitive, order: SortOrder) -> u8 {
    use Primitive::*;
    let (asc, desc) = match value {
        Null => (tag::NULL_LOW, tag::NULL_HIGH),
        Bool(false) => (tag::FALSE, tag::FALSE_DESC),
        Bool(true) => (tag::TRUE, tag::TRUE_DESC),
        Int32(_) => (tag::INT32, tag::INT32_DESC),
        Int64(_) => (tag::INT64, tag::INT64_DESC),
        Double(_) => (tag::DOUBLE, tag::DOUBLE_DESC),
        String(_) => (tag::STRING, tag::STRING_DESC),
        Timestamp(_) => (tag::TIMESTAMP, tag::TIMESTAMP_DESC),
        ColumnId(_) => (tag::COLUMN_ID, tag::COLUMN_ID_DESC),
        SystemColumnId(_) => (tag::SYSTEM_COLUMN_ID, tag::SYSTEM_COLUMN_ID_DESC),
    };
    match order {
        SortOrder::Ascending => asc,
        SortOrder::Descending => desc,
    }
}

fn encode_payload(value: &Primitive, out: &mut Vec<u8>) {
    use Primitive::*;
    match value {
        Null | Bool(_) => {}
        Int32(v) => out.extend_from_slice(&((*v as u32) ^ 0x8000_0000).to_be_bytes()),
        Int64(v) | Timestamp(v) => {
            out.extend_from_slice(&((*v as u64) ^ 0x8000_0000_0000_0000).to_be_bytes())
        }
        Double(d) => {
            let bits = canonical(*d).to_bits();
            let ordered = if bits >> 63 == 1 { !bits } else { bits ^ (1 << 63) };
            out.extend_from_slice(&ordered.to_be_bytes());
        }
        String(s) => {
            for &b in s.as_bytes() {
                out.push(b);
                if b == 0 {
                    out.push(1);
                }
            }
            out.extend_from_slice(&[0, 0]);
        }
        ColumnId(id) | SystemColumnId(id) => varint::encode_signed(i64::from(*id), out),
    }
}

fn decode_key_entry(input: &[u8], pos: usize) -> Result<(KeyEntry, usize), DecodeError> {
    let err = |at: usize, reason: String| DecodeError::new("key component", at, reason);
    let &type_byte = input.get(pos).ok_or_else(|| err(pos, "unexpected end of key".into()))?;
    let (kind, order) = tag::key_kind(type_byte)
        .ok_or_else(|| err(pos, format!("unknown key type byte 0x{type_byte:02x}")))?;
    let body = pos + 1;
    let flip = order == SortOrder::Descending;
    // Undo the complement of descending payloads on a bounded copy (at most one varint).
    let head: Vec<u8> =
        input[body..].iter().take(varint::MAX_LEN).map(|&b| if flip { !b } else { b }).collect();
    let rest: &[u8] = &head;
    let fixed = |n: usize| -> Result<[u8; 8], DecodeError> {
        let bytes =
            rest.get(..n).ok_or_else(|| err(body, format!("truncated: {n} bytes needed")))?;
        let mut buf = [0u8; 8];
        buf[8 - n..].copy_from_slice(bytes);
        Ok(buf)
    };
    use tag::KeyKind as K;
    let (value, len) = match kind {
        K::Null => (Primitive::Null, 0),
        K::False => (Primitive::Bool(false), 0),
        K::True => (Primitive::Bool(true), 0),
        K::Int32 => {
            let raw = u64::from_be_bytes(fixed(4)?) as u32 ^ 0x8000_0000;
            (Primitive::Int32(raw as i32), 4)
        }
        K::Int64 | K::Timestamp => {
            let raw = (u64::from_be_bytes(fixed(8)?) ^ (1 << 63)) as i64;
            let v =
                if kind == K::Int64 { Primitive::Int64(raw) } else { Primitive::Timestamp(raw) };
            (v, 8)
        }
        K::Double => {
            let ordered = u64::from_be_bytes(fixed(8)?);
            let bits = if ordered >> 63 == 1 { ordered ^ (1 << 63) } else { !ordered };
            let d = f64::from_bits(bits);
            if d.is_nan() && bits != f64::NAN.to_bits() {
                // The engine writes one NaN; another would not re-encode to its own bytes.
                return Err(err(
                    body,
                    format!("a NaN other than the canonical one ({bits:#018x})"),
                ));
            }
            (Primitive::Double(d), 8)
        }
        K::String => decode_escaped_string(&input[body..], flip, body)?,
        K::ColumnId | K::SystemColumnId => {
            let (v, n) = varint::decode_signed(rest, body)?;
            let id =
                i32::try_from(v).map_err(|_| err(body, format!("column id {v} out of range")))?;
            let v = if kind == K::ColumnId {
                Primitive::ColumnId(id)
            } else {
                Primitive::SystemColumnId(id)
            };
            (v, n)
        }
    };
    Ok((KeyEntry { value, order }, body + len))
}

fn decode_escaped_string(
    raw: &[u8],
    flip: bool,
    body: usize,
) -> Result<(Primitive, usize), DecodeError> {
    let err = |at: usize, reason: &str| DecodeError::new("string key component", body + at, reason);
    let at = |i: usize| raw.get(i).map(|&b| if flip { !b } else { b });
    let mut bytes = Vec::new();
    let mut i = 0;
    loop {
        match at(i) {
            None => return Err(err(i, "missing terminator 00 00")),
            Some(0) => match at(i + 1) {
                Some(0) => break,
                Some(1) => {
                    bytes.push(0);
                    i += 2;
                }
                Some(_) => return Err(err(i + 1, "bad escape after 00")),
                None => return Err(err(i + 1, "missing terminator 00 00")),
            },
            Some(b) => {
                bytes.push(b);
                i += 1;
            }
        }
    }
    let s =
        String::from_utf8(bytes).map_err(|e| err(e.utf8_error().valid_up_to(), "invalid UTF-8"))?;
    Ok((Primitive::String(s), i + 2))
}

/// Skip the key components from `pos` up to the byte `stop`, without decoding them (for
/// the prefix extractor, which runs on every key RocksDB touches); `on_end` gets where
/// each component ends. Returns the position of `stop`, or `None` if the components do
/// not end well.
pub(crate) fn skip_key_entries(
    key: &[u8],
    mut pos: usize,
    stop: u8,
    mut on_end: impl FnMut(usize),
) -> Option<usize> {
    while *key.get(pos)? != stop {
        let next = skip_key_entry(key, pos)?;
        assert!(next > pos, "skipping the key component at {pos} did not move forward");
        on_end(next);
        pos = next;
    }
    Some(pos)
}

/// The position after the key component at `input[pos..]`, without decoding it.
pub(crate) fn skip_key_entry(input: &[u8], pos: usize) -> Option<usize> {
    let (kind, order) = tag::key_kind(*input.get(pos)?)?;
    let body = pos + 1;
    use tag::KeyKind as K;
    let len = match kind {
        K::Null | K::False | K::True => 0,
        K::Int32 => 4,
        K::Int64 | K::Timestamp | K::Double => 8,
        K::ColumnId | K::SystemColumnId => varint::len_from_header(input.get(body..)?)?,
        K::String => {
            let (zero, escape) = match order {
                SortOrder::Ascending => (0x00, 0x01),
                SortOrder::Descending => (0xFF, 0xFE),
            };
            // An iterator, so that every step moves forward: no loop here can spin.
            let mut bytes = input.get(body..)?.iter().enumerate();
            loop {
                let (i, &b) = bytes.next()?;
                if b == zero {
                    match *bytes.next()?.1 {
                        next if next == zero => break i + 2,
                        next if next == escape => {}
                        _ => return None,
                    }
                }
            }
        }
    };
    (body + len <= input.len()).then_some(body + len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `test` on a thread and fails if it is still running after 10 s (it takes
    /// milliseconds): a loop that stops making progress fails the test, not hangs it.
    fn within_10_s(test: fn()) {
        use std::sync::mpsc::{channel, RecvTimeoutError};
        let (done, finished) = channel();
        let thread = std::thread::spawn(move || {
            test();
            let _ = done.send(());
        });
        let waited = finished.recv_timeout(std::time::Duration::from_secs(10));
        assert_ne!(waited, Err(RecvTimeoutError::Timeout), "still running after 10 s");
        if let Err(panic) = thread.join() {
            std::panic::resume_unwind(panic); // the test's own failure
        }
    }

    /// A string key component that does not end well is reported at the byte where it
    /// goes wrong: after a lone `00`, the byte that is missing or is no escape.
    #[test]
    fn a_bad_string_component_is_reported_where_it_goes_wrong() {
        let mut encoded = vec![0xAA]; // an unrelated byte before it
        KeyEntry::asc(Primitive::String("a".into())).encode_to(&mut encoded);
        assert_eq!(encoded[2..], [b'a', 0, 0], "tag, text, terminator");
        let error = |bytes: &[u8]| {
            let e = KeyEntry::decode(bytes, 1).expect_err("damaged");
            (e.what, e.offset, e.reason)
        };
        let what = "string key component";
        let cut = |n: usize| &encoded[..encoded.len() - n];
        assert_eq!(error(cut(2)), (what, 3, "missing terminator 00 00".to_string()));
        assert_eq!(error(cut(1)), (what, 4, "missing terminator 00 00".to_string()));
        let bad_escape = [cut(1), &[7]].concat();
        assert_eq!(error(&bad_escape), (what, 4, "bad escape after 00".to_string()));
    }

    /// The prefix extractor's skip lands where decoding ends, for strings holding the
    /// bytes that need escaping (a NUL, 0x01, 0xFE, 0xFF) in both orders, and for every
    /// fixed-size kind. (Skipping an escape must move forward: a watchdog fails a loop.)
    #[test]
    fn skipping_a_key_entry_ends_where_decoding_it_ends() {
        within_10_s(skipping_a_key_entry_ends_where_decoding_it_ends_unguarded);
    }

    fn skipping_a_key_entry_ends_where_decoding_it_ends_unguarded() {
        let strings = ["", "a", "\0", "a\0b", "\0\0", "\u{1}", "\u{7f}\u{ff}", "é\0é"];
        let mut values: Vec<Primitive> =
            strings.iter().map(|s| Primitive::String((*s).into())).collect();
        values.extend([Primitive::Int64(-3), Primitive::Int32(7), Primitive::Double(-0.5)]);
        for value in values {
            for entry in [KeyEntry::asc(value.clone()), KeyEntry::desc(value.clone())] {
                let mut bytes = vec![0xAA]; // an unrelated byte before it
                entry.encode_to(&mut bytes);
                bytes.push(b'#'); // and one after it
                let (decoded, end) = KeyEntry::decode(&bytes, 1).expect("decodes");
                assert_eq!(decoded, entry);
                assert_eq!(skip_key_entry(&bytes, 1), Some(end), "{entry:?}: {bytes:?}");
            }
        }
        // A string cut before its terminator, or with a bad escape, has no end.
        let mut bytes = Vec::new();
        KeyEntry::asc(Primitive::String("a\0b".into())).encode_to(&mut bytes);
        assert_eq!(skip_key_entry(&bytes[..bytes.len() - 1], 0), None);
        let bad_escape = [bytes[0], b'a', 0x00, 0x07, 0x00, 0x00];
        assert_eq!(skip_key_entry(&bad_escape, 0), None);
    }
}
