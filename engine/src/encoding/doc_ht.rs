//! DocHybridTime in keys: four descending signed varints, so newer versions sort first.
//!
//! Fields: generation (always 0), physical microseconds minus YugabyteDB's epoch
//! (1 500 000 000 000 000 µs), the logical part, and `(write_id + 1) << 5`. Each is encoded
//! as the varint of its negation. The low 5 bits of the last byte are then replaced by the
//! total length, so a decoder can find the start of the DocHybridTime from the end of a key.

use super::varint;
use crate::decode_error::DecodeError;
use crate::hybrid_time::{DocHybridTime, HybridTime, LOGICAL_MAX};

/// YugabyteDB's microsecond epoch for DocHybridTime (about 2017-07-14).
pub const YUGABYTE_EPOCH_US: i64 = 1_500_000_000_000_000;
/// The longest encoded DocHybridTime.
pub const MAX_ENCODED_LEN: usize = 30;

/// Append the encoding of `dht`.
pub fn encode(dht: DocHybridTime, out: &mut Vec<u8>) {
    let start = out.len();
    varint::encode_signed(0, out);
    let physical_us = dht.ht.physical_us() as i64; // < 2^52: fits
    varint::encode_signed(YUGABYTE_EPOCH_US - physical_us, out);
    varint::encode_signed(-i64::from(dht.ht.logical()), out);
    varint::encode_signed(-((i64::from(dht.write_id) + 1) << 5), out);
    stamp_length(&mut out[start..]);
}

/// Replace the low 5 bits of `encoded`'s last byte, the write-id field's lowest, by the
/// length of `encoded`. They are always ones: the field is `-((write_id + 1) << 5)`, and a
/// negative varint is the complement of its magnitude's, whose low 5 bits are zeros.
fn stamp_length(encoded: &mut [u8]) {
    let len = encoded.len();
    debug_assert!(len < 1 << 5, "a DocHybridTime of {len} bytes");
    encoded[len - 1] = (encoded[len - 1] & !0x1F) | len as u8;
}

/// Encodes the DocHybridTimes of one write batch: the hybrid-time fields are encoded once,
/// only the write-id field differs between entries.
pub struct BatchTimeEncoder {
    /// The three fields' bytes, in the first `prefix_len`.
    prefix: [u8; 3 * varint::MAX_LEN],
    prefix_len: usize,
}

impl BatchTimeEncoder {
    /// An encoder for entries at `ht`.
    pub fn new(ht: HybridTime) -> BatchTimeEncoder {
        let mut encoder = BatchTimeEncoder { prefix: [0; 3 * varint::MAX_LEN], prefix_len: 0 };
        let physical = YUGABYTE_EPOCH_US - ht.physical_us() as i64;
        for field in [0, physical, -i64::from(ht.logical())] {
            let (bytes, len) = varint::signed_bytes(field);
            encoder.prefix[encoder.prefix_len..][..len].copy_from_slice(&bytes[..len]);
            encoder.prefix_len += len;
        }
        encoder
    }

    /// The encoding of `(ht, write_id)`, in the first `len` bytes; identical to [`encode`].
    pub fn encoded(&self, write_id: u32) -> ([u8; MAX_ENCODED_LEN], usize) {
        let mut out = [0; MAX_ENCODED_LEN];
        out[..self.prefix_len].copy_from_slice(&self.prefix[..self.prefix_len]);
        let (field, field_len) = varint::signed_bytes(-((i64::from(write_id) + 1) << 5));
        out[self.prefix_len..][..field_len].copy_from_slice(&field[..field_len]);
        let len = self.prefix_len + field_len;
        stamp_length(&mut out[..len]);
        (out, len)
    }
}

/// Decode a DocHybridTime that fills `input` exactly. `base` is its offset in the key.
pub fn decode(input: &[u8], base: usize) -> Result<DocHybridTime, DecodeError> {
    let err = |at: usize, reason: String| DecodeError::new("DocHybridTime", base + at, reason);
    if input.len() > MAX_ENCODED_LEN {
        return Err(err(0, format!("{} bytes, at most {MAX_ENCODED_LEN}", input.len())));
    }
    let mut pos = 0;
    let generation = read_field(input, &mut pos, base)?;
    let physical_at = pos;
    let physical = read_field(input, &mut pos, base)?;
    let logical_at = pos;
    let logical = read_field(input, &mut pos, base)?;
    let write_id_at = pos;
    let write_field = read_write_id_field(input, &mut pos, base)?;
    if generation != 0 {
        return Err(err(0, format!("generation {generation}, expected 0")));
    }
    if pos != input.len() {
        return Err(err(pos, format!("{} trailing bytes", input.len() - pos)));
    }
    let size_bits = usize::from(input[pos - 1] & 0x1F);
    if size_bits != input.len() {
        return Err(err(pos - 1, format!("length field {size_bits}, actual {}", input.len())));
    }
    let physical_us = YUGABYTE_EPOCH_US
        .checked_sub(physical)
        .filter(|p| (0..=HybridTime::PHYSICAL_MAX_US as i64).contains(p))
        .ok_or_else(|| err(physical_at, format!("physical time field {physical} out of range")))?;
    let logical = logical
        .checked_neg()
        .and_then(|l| u16::try_from(l).ok())
        .filter(|l| *l <= LOGICAL_MAX)
        .ok_or_else(|| err(logical_at, format!("logical field {logical} out of range")))?;
    // The field is -((write_id + 1) << 5).
    let write_id = write_field
        .checked_neg()
        .filter(|shifted| shifted & 0x1F == 0)
        .and_then(|shifted| u32::try_from((shifted >> 5) - 1).ok())
        .ok_or_else(|| err(write_id_at, format!("write id field {write_field} invalid")))?;
    Ok(DocHybridTime::new(HybridTime::new(physical_us as u64, logical), write_id))
}

/// Read one varint field at `*pos`, and move past it.
fn read_field(input: &[u8], pos: &mut usize, base: usize) -> Result<i64, DecodeError> {
    let (value, len) = varint::decode_signed(&input[*pos..], base + *pos)?;
    *pos += len;
    Ok(value)
}

/// [`read_field`] for the write-id field, the last: the low 5 bits of its last byte hold
/// the DocHybridTime's length, so they are set back to ones (see [`stamp_length`]) first.
fn read_write_id_field(input: &[u8], pos: &mut usize, base: usize) -> Result<i64, DecodeError> {
    let rest = &input[*pos..];
    let mut field = [0; varint::MAX_LEN];
    let field = &mut field[..rest.len().min(varint::MAX_LEN)];
    field.copy_from_slice(&rest[..field.len()]);
    if let Some(last) = varint::len_from_header(field).and_then(|len| field.get_mut(len - 1)) {
        *last |= 0x1F;
    }
    let (value, len) = varint::decode_signed(field, base + *pos)?;
    *pos += len;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(dht: DocHybridTime) -> String {
        let mut out = Vec::new();
        encode(dht, &mut out);
        out.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn vectors() {
        // From the comment in YugabyteDB's doc_key.h.
        let yb = DocHybridTime::new(HybridTime::from_micros(1_581_475_435_181_551), 0);
        assert_eq!(hex(yb), "8001b5e605a0ca10804a");
        let t = |us, w| DocHybridTime::new(HybridTime::from_micros(us), w);
        assert_eq!(hex(t(1000, 0)), "80ff05543df729bc18804b");
        assert_eq!(hex(t(1000, 1)), "80ff05543df729bc18803fac");
        assert_eq!(hex(t(2000, 0)), "80ff05543df729b830804b");
        assert_eq!(hex(DocHybridTime::new(HybridTime::new(0, 100), 0)), "80ff05543df729c0003f9b4c");
    }

    #[test]
    fn batch_encoder_matches_encode() {
        for ht in [HybridTime::new(7, 3), HybridTime::from_micros(1_581_475_435_181_551)] {
            let enc = BatchTimeEncoder::new(ht);
            for w in [0, 1, 31, 1 << 20, u32::MAX] {
                let (a, len) = enc.encoded(w);
                let mut b = Vec::new();
                encode(DocHybridTime::new(ht, w), &mut b);
                assert_eq!(&a[..len], &b[..]);
            }
        }
    }

    #[test]
    fn errors_name_their_offset_in_the_key() {
        let error = |bytes: &[u8]| {
            let e = decode(bytes, 5).unwrap_err();
            (e.offset, e.reason)
        };
        // Longer than YugabyteDB's own bound (`kMaxBytesPerEncodedHybridTime`,
        // doc_hybrid_time.h): refused before any field is read.
        assert_eq!(error(&[0x80; 31]), (5, "31 bytes, at most 30".to_string()));
        // The bound itself is read field by field: 30 bytes (fields of 10, 10, 9 and 1)
        // whose generation is not 0.
        let mut at_bound = Vec::new();
        for field in [i64::MAX, i64::MAX, 1 << 60, -32] {
            varint::encode_signed(field, &mut at_bound);
        }
        stamp_length(&mut at_bound);
        assert_eq!(at_bound.len(), MAX_ENCODED_LEN);
        let generation = format!("generation {}, expected 0", i64::MAX);
        assert_eq!(error(&at_bound), (5, generation));
        // Bytes after the write-id field: named where they begin.
        let mut trailing = Vec::new();
        encode(DocHybridTime::new(HybridTime::new(7, 3), 0), &mut trailing);
        let end = trailing.len();
        trailing.extend([0x80, 0x80]);
        assert_eq!(error(&trailing), (5 + end, "2 trailing bytes".to_string()));
    }

    /// Four fields encoded as given, the last stamped with the length: (bytes, each field's
    /// offset).
    fn encoded_fields(values: [i64; 4]) -> (Vec<u8>, [usize; 4]) {
        let (mut out, mut at) = (Vec::new(), [0; 4]);
        for (value, at) in values.into_iter().zip(&mut at) {
            *at = out.len();
            varint::encode_signed(value, &mut out);
        }
        stamp_length(&mut out);
        (out, at)
    }

    /// Each field out of its range is refused by name, at the field's offset in the key,
    /// never a panic (a negated i64::MIN would overflow).
    #[test]
    fn fields_out_of_range_are_named_where_they_are() {
        let physical = YUGABYTE_EPOCH_US - 1000; // 1000 µs

        // Field `field` of `values` is refused with `reason`, named at its offset.
        let refused_at = |field: usize, reason: &str, values| {
            let (bytes, at) = encoded_fields(values);
            let e = decode(&bytes, 5).unwrap_err();
            let said = (e.offset, e.reason.as_str());
            assert_eq!(said, (5 + at[field], reason), "{values:?}");
        };
        let before_epoch = YUGABYTE_EPOCH_US + 1;
        let out_of_range = format!("physical time field {before_epoch} out of range");
        refused_at(1, &out_of_range, [0, before_epoch, 0, -32]);
        refused_at(2, "logical field -4096 out of range", [0, physical, -4096, -32]);
        refused_at(2, "logical field 1 out of range", [0, physical, 1, -32]);
        let min = format!("logical field {} out of range", i64::MIN);
        refused_at(2, &min, [0, physical, i64::MIN, -32]);
        let min = format!("write id field {} invalid", i64::MIN);
        refused_at(3, &min, [0, physical, 0, i64::MIN]);
        // One past the largest write id, u32::MAX.
        let over = -((i64::from(u32::MAX) + 2) << 5);
        refused_at(3, &format!("write id field {over} invalid"), [0, physical, 0, over]);
        // A non-negative field reads with its low five bits set: 31.
        refused_at(3, "write id field 31 invalid", [0, physical, 0, 0]);
        let (largest, _) = encoded_fields([
            0,
            physical,
            -i64::from(LOGICAL_MAX),
            -((i64::from(u32::MAX) + 1) << 5),
        ]);
        let ht = HybridTime::new(1000, LOGICAL_MAX);
        assert_eq!(decode(&largest, 5), Ok(DocHybridTime::new(ht, u32::MAX)));
    }

    /// A malformed varint inside a field is named at its offset in the key too.
    #[test]
    fn a_malformed_field_is_named_in_the_key() {
        let non_minimal = [0xC0, 0x01]; // 1 in two bytes
        let (good, at) = encoded_fields([0, YUGABYTE_EPOCH_US - 1000, 0, -32]);
        let physical = [&good[..at[1]], &non_minimal, &good[at[2]..]].concat();
        let e = decode(&physical, 5).unwrap_err();
        assert_eq!(
            (e.what, e.offset, e.reason.as_str()),
            ("signed varint", 6, "non-minimal encoding")
        );
        // The write-id field, last: its low five bits (the length) read as ones.
        let mut write_id = [&good[..at[3]], &non_minimal].concat();
        stamp_length(&mut write_id);
        let e = decode(&write_id, 5).unwrap_err();
        let at_write_id = 5 + at[3];
        assert_eq!(
            (e.what, e.offset, e.reason.as_str()),
            ("signed varint", at_write_id, "non-minimal encoding")
        );
    }

    /// A field: mostly in its range (`valid`), else anything, the ends of i64 included.
    fn field_value(valid: impl Strategy<Value = i64> + 'static) -> impl Strategy<Value = i64> {
        let any = prop_oneof![any::<i64>(), Just(i64::MIN), Just(i64::MAX), -100i64..100];
        prop_oneof![3 => valid, 1 => any]
    }

    fn four_fields() -> impl Strategy<Value = [i64; 4]> {
        let physical_min = YUGABYTE_EPOCH_US - HybridTime::PHYSICAL_MAX_US as i64;
        let write_id = (0..=i64::from(u32::MAX)).prop_map(|w| -((w + 1) << 5));
        [
            field_value(Just(0).boxed()).boxed(),
            field_value(physical_min..=YUGABYTE_EPOCH_US).boxed(),
            field_value(-i64::from(LOGICAL_MAX)..=0).boxed(),
            field_value(write_id).boxed(),
        ]
    }

    /// The time four field values stand for, from the format's definition alone (`None`:
    /// none). The write-id field is read with its low five bits set back to the ones the
    /// length stamp replaced: in the magnitude of a negative field, five zeros.
    fn meant([generation, physical, logical, write]: [i64; 4]) -> Option<DocHybridTime> {
        let physical_us = i128::from(YUGABYTE_EPOCH_US) - i128::from(physical);
        let physical_us = u64::try_from(physical_us).ok()?;
        let logical = u16::try_from(-i128::from(logical)).ok()?;
        let write = match write {
            w if w < 0 => -i128::from(w.unsigned_abs() & !0x1F),
            w => i128::from(w | 0x1F),
        };
        let write_id = u32::try_from((-write >> 5) - 1).ok()?;
        let in_range = physical_us <= HybridTime::PHYSICAL_MAX_US && logical <= LOGICAL_MAX;
        let ht = || HybridTime::new(physical_us, logical);
        (generation == 0 && write < 0 && in_range).then(|| DocHybridTime::new(ht(), write_id))
    }

    proptest! {
        /// Any four fields decode to the time they stand for, which encodes back to the
        /// same bytes, or are refused when they stand for none: never a panic, never two
        /// encodings of one time.
        #[test]
        fn any_fields_decode_canonically_or_are_refused(values in four_fields()) {
            let len: usize = values.iter().map(|v| varint::signed_bytes(*v).1).sum();
            prop_assume!(len <= MAX_ENCODED_LEN);
            let (bytes, _) = encoded_fields(values);
            let decoded = decode(&bytes, 0).ok();
            prop_assert_eq!(decoded, meant(values), "{:?}", values);
            if let Some(dht) = decoded {
                let mut again = Vec::new();
                encode(dht, &mut again);
                prop_assert_eq!(again, bytes);
            }
        }

        /// An encoding damaged (a byte flipped, bytes cut or added) decodes to a time that
        /// encodes back to the same bytes, or is refused: never a panic.
        #[test]
        fn damaged_encodings_decode_canonically_or_are_refused(
            physical_us in 0..=HybridTime::PHYSICAL_MAX_US,
            logical in 0..=LOGICAL_MAX,
            write_id: u32,
            flip in any::<(prop::sample::Index, u8)>(),
            cut in any::<prop::sample::Index>(),
            extra in prop::collection::vec(any::<u8>(), 0..3),
        ) {
            let mut bytes = Vec::new();
            encode(DocHybridTime::new(HybridTime::new(physical_us, logical), write_id), &mut bytes);
            let at = flip.0.index(bytes.len());
            bytes[at] ^= flip.1;
            bytes.truncate(cut.index(bytes.len() + 1));
            bytes.extend(extra);
            if let Ok(dht) = decode(&bytes, 0) {
                let mut again = Vec::new();
                encode(dht, &mut again);
                prop_assert_eq!(again, bytes);
            }
        }
    }

    #[test]
    fn round_trip_extremes() {
        for dht in [
            DocHybridTime::MIN,
            DocHybridTime::new(HybridTime::new(HybridTime::PHYSICAL_MAX_US, LOGICAL_MAX), u32::MAX),
            DocHybridTime::new(HybridTime::new(7, 4095), 12345),
        ] {
            let mut out = Vec::new();
            encode(dht, &mut out);
            assert!(out.len() <= MAX_ENCODED_LEN);
            assert_eq!(decode(&out, 0).unwrap(), dht);
        }
    }
}
