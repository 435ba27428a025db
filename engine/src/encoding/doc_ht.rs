//! DocHybridTime in keys: four descending signed varints, so newer versions sort first.
//!
//! Fields: generation (always 0), physical microseconds minus YugabyteDB's epoch
//! (1 500 000 000 000 000 µs), the logical part, and `(write_id + 1) << 5`. Each is encoded
//! as the varint of its negation. The low 5 bits of the last byte are then replaced by the
//! total length, so a decoder can find the start of the DocHybridTime from the end of a key.

use super::varint;
use crate::error::DecodeError;
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

/// Replace the low 5 bits of `encoded`'s last byte, the write-id field's lowest, which are
/// always 0 (the field is `(write_id + 1) << 5`, negated), by the length of `encoded`.
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
    let generation = read_field(input, &mut pos, base, false)?;
    let physical = read_field(input, &mut pos, base, false)?;
    let logical = read_field(input, &mut pos, base, false)?;
    let logical_at = pos;
    let write_field = read_field(input, &mut pos, base, true)?;
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
        .ok_or_else(|| err(0, format!("physical time field {physical} out of range")))?;
    let logical = u16::try_from(-logical)
        .ok()
        .filter(|l| *l <= LOGICAL_MAX)
        .ok_or_else(|| err(logical_at, format!("logical field {logical} out of range")))?;
    let shifted = -write_field;
    if shifted < (1 << 5) || shifted & 0x1F != 0 || (shifted >> 5) - 1 > i64::from(u32::MAX) {
        return Err(err(logical_at, format!("write id field {write_field} invalid")));
    }
    let write_id = ((shifted >> 5) - 1) as u32;
    Ok(DocHybridTime::new(HybridTime::new(physical_us as u64, logical), write_id))
}

/// Read one varint field at `*pos`. The write-id field is the last: its low 5 bits hold
/// the length instead, so they are restored to the complement bits before decoding.
fn read_field(input: &[u8], pos: &mut usize, base: usize, last: bool) -> Result<i64, DecodeError> {
    let rest = &input[*pos..];
    let (v, n) = if last {
        let mut field: Vec<u8> = rest.iter().take(varint::MAX_LEN).copied().collect();
        let len = varint::len_from_header(&field).unwrap_or(0);
        if let Some(b) = field.get_mut(len.wrapping_sub(1)) {
            *b |= 0x1F;
        }
        varint::decode_signed(&field, base + *pos)?
    } else {
        varint::decode_signed(rest, base + *pos)?
    };
    *pos += n;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

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
