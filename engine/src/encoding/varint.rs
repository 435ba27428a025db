//! YugabyteDB's memcmp-ordered signed varint (`FastEncodeSignedVarInt`).
//!
//! A non-negative value in `n` bytes is: a 1 bit (sign), `n - 1` one bits, a 0 bit, then the
//! magnitude in the remaining `7n - 1` bits, big-endian. A negative value is the bitwise
//! complement of the encoding of its magnitude. So one byte holds magnitudes below 2^6, two
//! below 2^13, ..., ten below 2^69; longer encodings of positive values have more leading
//! ones and sort higher, and every negative value starts with a 0 bit and sorts lower.
//! Examples: 0 → `80`, 1 → `81`, -1 → `7E`, 63 → `BF`, 64 → `C0 40`.

use crate::decode_error::DecodeError;

/// The longest encoding (a 64-bit magnitude needs 10 bytes).
pub const MAX_LEN: usize = 10;

/// Append the encoding of `v` to `out`.
pub fn encode_signed(v: i64, out: &mut Vec<u8>) {
    let (buf, len) = signed_bytes(v);
    out.extend_from_slice(&buf[..len]);
}

/// [`encode_signed`]'s bytes: the first `len` of the array.
pub fn signed_bytes(v: i64) -> ([u8; MAX_LEN], usize) {
    let magnitude = v.unsigned_abs();
    let len = encoded_len(magnitude);
    let mut buf = [0u8; MAX_LEN];
    let header_bits = len + 1; // sign bit + (len - 1) ones + the zero bit
    let payload_bits = 8 * len - header_bits;
    // Layout as a big-endian 80-bit number: header in the top bits, magnitude below.
    let header: u128 = ((1u128 << len) - 1) << 1; // `len` ones then a zero
    let word: u128 = (header << payload_bits) | u128::from(magnitude);
    let bytes = word.to_be_bytes();
    buf[..len].copy_from_slice(&bytes[16 - len..]);
    if v < 0 {
        buf[..len].iter_mut().for_each(|b| *b = !*b);
    }
    (buf, len)
}

fn encoded_len(magnitude: u64) -> usize {
    let bits = 64 - magnitude.leading_zeros() as usize;
    // n bytes hold 7n - 1 bits of magnitude.
    (1..=MAX_LEN).find(|n| 7 * n > bits).expect("10 bytes hold 69 bits")
}

/// The length of the varint starting `input`, read from its header bits alone.
pub fn len_from_header(input: &[u8]) -> Option<usize> {
    input.first().map(|&first| header_len(first, input.get(1).copied()))
}

/// The length a header gives: one more than the run of ones after the sign bit (of the
/// complement, for a negative value), counted across the first two bytes (`second`:
/// `None` past the end of the input).
fn header_len(first: u8, second: Option<u8>) -> usize {
    let flip = |b: u8| if first & 0x80 == 0 { !b } else { b };
    let header = u16::from_be_bytes([flip(first), second.map_or(0, flip)]);
    (header << 1).leading_ones() as usize + 1
}

/// Decode a signed varint at the start of `input`; returns the value and its length.
/// `base` is the offset of `input` in the whole buffer, for error messages.
pub fn decode_signed(input: &[u8], base: usize) -> Result<(i64, usize), DecodeError> {
    let err =
        |offset: usize, reason: &str| DecodeError::new("signed varint", base + offset, reason);
    let first = *input.first().ok_or_else(|| err(0, "unexpected end of input"))?;
    let negative = first & 0x80 == 0;
    let flip = |b: u8| if negative { !b } else { b };
    let len = header_len(first, input.get(1).copied());
    if len > MAX_LEN {
        return Err(err(0, "length prefix longer than 10 bytes"));
    }
    if input.len() < len {
        return Err(err(input.len(), &format!("truncated: {len} bytes needed")));
    }
    let mut be_bytes = [0; 16];
    for (to, &b) in be_bytes[16 - len..].iter_mut().zip(&input[..len]) {
        *to = flip(b);
    }
    let word = u128::from_be_bytes(be_bytes);
    let payload_bits = 8 * len - (len + 1);
    let magnitude = word & ((1u128 << payload_bits) - 1);
    if len > 1 && magnitude >> (7 * (len - 1) - 1) == 0 {
        return Err(err(0, "non-minimal encoding"));
    }
    let value = if negative {
        if magnitude == 0 {
            return Err(err(0, "negative zero"));
        }
        if magnitude > u128::from(i64::MIN.unsigned_abs()) {
            return Err(err(0, "value below i64::MIN"));
        }
        (magnitude as u64).wrapping_neg() as i64
    } else {
        i64::try_from(magnitude).map_err(|_| err(0, "value above i64::MAX"))?
    };
    Ok((value, len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn enc(v: i64) -> Vec<u8> {
        let mut out = Vec::new();
        encode_signed(v, &mut out);
        out
    }

    #[test]
    fn vectors_from_yugabyte() {
        assert_eq!(enc(0), [0x80]);
        assert_eq!(enc(1), [0x81]);
        assert_eq!(enc(-1), [0x7E]);
        assert_eq!(enc(63), [0xBF]);
        assert_eq!(enc(64), [0xC0, 0x40]);
        assert_eq!(enc(i64::MAX).len(), 10);
        assert_eq!(enc(i64::MIN).len(), 10);
    }

    /// Each malformed input is refused for its own reason, named at its offset.
    #[test]
    fn rejects_garbage() {
        let error = |input: &[u8]| {
            let e = decode_signed(input, 0).unwrap_err();
            (e.offset, e.reason)
        };
        let said = |offset: usize, reason: &str| (offset, reason.to_string());
        assert_eq!(error(&[]), said(0, "unexpected end of input"));
        assert_eq!(error(&[0xC0]), said(1, "truncated: 2 bytes needed"));
        assert_eq!(error(&[0x7F]), said(0, "negative zero"));
        assert_eq!(error(&[0xFF; 12]), said(0, "length prefix longer than 10 bytes"));
        assert_eq!(error(&[0x00; 12]), said(0, "length prefix longer than 10 bytes"));
        assert_eq!(error(&[0xC0, 0x01]), said(0, "non-minimal encoding"));
        assert_eq!(error(&[0x3F, 0xFE]), said(0, "non-minimal encoding"));
    }

    /// The ends of the range decode; one past either end is refused, by name. (The
    /// round-trip property rarely draws the ends themselves.)
    #[test]
    fn the_range_ends_exactly_at_i64_min_and_max() {
        for v in [i64::MIN, i64::MIN + 1, i64::MAX] {
            assert_eq!(decode_signed(&enc(v), 0).unwrap(), (v, 10));
        }
        // 2^63 + 1 and 2^63 as magnitudes: the first negated, the second positive.
        let mut below_min = enc(i64::MIN);
        *below_min.last_mut().expect("10 bytes") ^= 1;
        let error = decode_signed(&below_min, 0).unwrap_err().to_string();
        assert_eq!(error, "malformed signed varint at byte 0: value below i64::MIN");
        let above_max: Vec<u8> = enc(i64::MIN).iter().map(|b| !b).collect();
        let error = decode_signed(&above_max, 0).unwrap_err().to_string();
        assert_eq!(error, "malformed signed varint at byte 0: value above i64::MAX");
    }

    /// An error names its offset in the whole buffer: `base`, plus where in `input`.
    #[test]
    fn errors_name_their_offset_in_the_whole_buffer() {
        let truncated = decode_signed(&[0xC0], 7).unwrap_err();
        assert_eq!((truncated.offset, truncated.reason.as_str()), (8, "truncated: 2 bytes needed"));
        let non_minimal = decode_signed(&[0xC0, 0x01], 7).unwrap_err();
        assert_eq!((non_minimal.offset, non_minimal.reason.as_str()), (7, "non-minimal encoding"));
    }

    proptest! {
        #[test]
        fn round_trip_and_order(a: i64, b: i64) {
            let (ea, eb) = (enc(a), enc(b));
            prop_assert_eq!(decode_signed(&ea, 0).unwrap(), (a, ea.len()));
            prop_assert_eq!(a.cmp(&b), ea.cmp(&eb));
        }

        #[test]
        fn never_panics(bytes: Vec<u8>) {
            let _ = decode_signed(&bytes, 0);
        }
    }
}

/// YugabyteDB's unsigned varint (`FastEncodeUnsignedVarInt`, `util/fast_varint.cc`):
/// `n - 1` one bits, a 0 bit, then the value in the remaining `7n` bits, big-endian; one
/// byte holds values below 2^7, two below 2^14. docsim encodes up to 8 bytes (values below
/// 2^56: schema versions and merge flags are far smaller); YugabyteDB's 9- and 10-byte
/// forms are refused on decoding.
pub fn encode_unsigned(v: u64, out: &mut Vec<u8>) {
    assert!(v < 1 << 56, "docsim's unsigned varints stay below 2^56: {v}");
    let n = (1..=8).find(|n| v < 1u64 << (7 * n)).expect("below 2^56");
    let prefix: u64 = !((1u64 << (9 - n)) - 1) & 0xff; // n - 1 ones, then a zero
    let word = (prefix << (8 * (n - 1))) | v;
    out.extend_from_slice(&word.to_be_bytes()[8 - n..]);
}

/// Decode an unsigned varint at the start of `input`; returns the value and its length.
/// `base` is the offset of `input` in the whole buffer, for error messages.
pub fn decode_unsigned(input: &[u8], base: usize) -> Result<(u64, usize), DecodeError> {
    let err = |reason: &str| DecodeError::new("unsigned varint", base, reason);
    let first = *input.first().ok_or_else(|| err("unexpected end of input"))?;
    let n = first.leading_ones() as usize + 1;
    if n > 8 {
        return Err(err("a 9- or 10-byte form, beyond docsim's range"));
    }
    let bytes = input.get(..n).ok_or_else(|| err("cut short"))?;
    let mut word = [0u8; 8];
    word[8 - n..].copy_from_slice(bytes);
    let mask = (1u64 << (7 * n)) - 1;
    Ok((u64::from_be_bytes(word) & mask, n))
}

#[cfg(test)]
mod unsigned_tests {
    use super::*;

    #[test]
    fn unsigned_varints_match_yugabytes_forms() {
        let enc = |v: u64| {
            let mut out = Vec::new();
            encode_unsigned(v, &mut out);
            out
        };
        assert_eq!(enc(0), [0x00]);
        assert_eq!(enc(3), [0x03]);
        assert_eq!(enc(127), [0x7f]);
        assert_eq!(enc(128), [0x80, 0x80]);
        assert_eq!(enc(0x3fff), [0xbf, 0xff]);
        assert_eq!(enc(0x4000), [0xc0, 0x40, 0x00]);
        for v in [0, 1, 127, 128, 300, 0x3fff, 0x4000, u32::MAX as u64, (1 << 56) - 1] {
            assert_eq!(decode_unsigned(&enc(v), 0), Ok((v, enc(v).len())), "{v}");
        }
        let error = |input: &[u8]| decode_unsigned(input, 4).unwrap_err().to_string();
        let said = |reason: &str| format!("malformed unsigned varint at byte 4: {reason}");
        assert_eq!(error(&[]), said("unexpected end of input"));
        assert_eq!(error(&[0xc0, 0x40]), said("cut short"));
        assert_eq!(error(&[0xff; 9]), said("a 9- or 10-byte form, beyond docsim's range"));
    }
}
