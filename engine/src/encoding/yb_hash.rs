//! YugabyteDB's 16-bit partition hash of a key's hashed components
//! (`YBPartition::HashColumnCompoundValue`, src/yb/util/yb_partition.cc): Bob Jenkins'
//! lookup2 hash in its 64-bit form (`Hash64StringWithSeed`, src/yb/gutil/hash/jenkins.cc,
//! `mix` in jenkins_lookup2.h) with seed 97, over the components' QL key bytes
//! concatenated without framing (`AppendToKey`, src/yb/common/ql_value.cc), folded to 16
//! bits as `(h>>48) ^ 3*(h>>32) ^ 5*(h>>16) ^ 7*(h & 0xffff)`.
//!
//! QL key bytes, per type: bool one byte (0 or 1); int32 and int64 big-endian two's
//! complement (no sign flip, unlike the DocKey encoding); double its IEEE bits
//! big-endian after NaN is canonicalised; text its raw UTF-8 bytes; timestamp the
//! microseconds as an int64. Rules of docsim's own, for what YugabyteDB never hashes:
//! `null` contributes no bytes, and a column id (never a hash column in YugabyteDB)
//! hashes as an int32.

use super::primitive::Primitive;

/// The bytes hashed, inline up to a typical key's length.
type KeyBytes = smallvec::SmallVec<[u8; 64]>;

/// YugabyteDB's partitioning seed.
const SEED: u64 = 97;
/// The golden-ratio start of lookup2's `a` and `b`.
const GOLDEN: u64 = 0xe08c_1d66_8b75_6f82;

/// The 16-bit hash of hashed components with these values, in order.
pub fn hash_values<'a>(values: impl IntoIterator<Item = &'a Primitive>) -> u16 {
    // Keys are short: their bytes stay on the stack (every write and read hashes one).
    let mut bytes = KeyBytes::new();
    values.into_iter().for_each(|v| append_ql_key_bytes(v, &mut bytes));
    fold(hash64(&bytes, SEED))
}

/// `AppendToKey`: a value's bytes as YugabyteDB hashes them.
fn append_ql_key_bytes(value: &Primitive, out: &mut KeyBytes) {
    match value {
        Primitive::Null => {}
        Primitive::Bool(b) => out.push(u8::from(*b)),
        Primitive::Int32(v) | Primitive::ColumnId(v) | Primitive::SystemColumnId(v) => {
            out.extend_from_slice(&v.to_be_bytes())
        }
        Primitive::Int64(v) | Primitive::Timestamp(v) => out.extend_from_slice(&v.to_be_bytes()),
        Primitive::Double(d) => {
            // Every NaN hashes as the canonical one (`util::CanonicalizeDouble`).
            let bits = if d.is_nan() { 0x7ff8_0000_0000_0000 } else { d.to_bits() };
            out.extend_from_slice(&bits.to_be_bytes())
        }
        Primitive::String(s) => out.extend_from_slice(s.as_bytes()),
    }
}

/// The 16-bit fold of `HashColumnCompoundValue`.
fn fold(h: u64) -> u16 {
    let folded = (h >> 48)
        ^ 3u64.wrapping_mul(h >> 32)
        ^ 5u64.wrapping_mul(h >> 16)
        ^ 7u64.wrapping_mul(h & 0xffff);
    (folded & 0xffff) as u16
}

/// lookup2's 64-bit `mix` of three words.
fn mix(a: &mut u64, b: &mut u64, c: &mut u64) {
    const SHIFTS: [(u32, u32, u32); 4] = [(43, 9, 8), (38, 23, 5), (35, 49, 11), (12, 18, 22)];
    for (sa, sb, sc) in SHIFTS {
        *a = a.wrapping_sub(*b).wrapping_sub(*c) ^ (*c >> sa);
        *b = b.wrapping_sub(*c).wrapping_sub(*a) ^ (*a << sb);
        *c = c.wrapping_sub(*a).wrapping_sub(*b) ^ (*b >> sc);
    }
}

/// A little-endian word of up to 8 bytes, the first byte least significant, shifted up
/// by `skip` bytes (the tail's third word leaves its low byte to the length).
fn word(bytes: &[u8], skip: usize) -> u64 {
    bytes.iter().enumerate().fold(0, |w, (i, &b)| w | u64::from(b) << (8 * (i + skip)))
}

/// `Hash64StringWithSeed`: 24-byte blocks into `a`, `b`, `c`, the total length into `c`,
/// the tail's bytes into `a` (0..8), `b` (8..16) and `c` (16..23, above its low byte).
fn hash64(bytes: &[u8], seed: u64) -> u64 {
    let (mut a, mut b, mut c) = (GOLDEN, GOLDEN, seed);
    let mut blocks = bytes.chunks_exact(24);
    for block in &mut blocks {
        a = a.wrapping_add(word(&block[0..8], 0));
        b = b.wrapping_add(word(&block[8..16], 0));
        c = c.wrapping_add(word(&block[16..24], 0));
        mix(&mut a, &mut b, &mut c);
    }
    let tail = blocks.remainder();
    c = c.wrapping_add(bytes.len() as u64);
    a = a.wrapping_add(word(&tail[..tail.len().min(8)], 0));
    b = b.wrapping_add(word(tail.get(8..tail.len().min(16)).unwrap_or_default(), 0));
    c = c.wrapping_add(word(tail.get(16..).unwrap_or_default(), 1));
    mix(&mut a, &mut b, &mut c);
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(text: &str) -> Vec<u8> {
        let digit = |i: usize| u8::from_str_radix(&text[i..i + 2], 16).expect("hex");
        (0..text.len()).step_by(2).map(digit).collect()
    }

    /// Vectors of YugabyteDB's own tests of the 64-bit hash with seed 97 (the Java
    /// driver's `TestLoadBalancing.testJenkins64`, the C++ driver's `test_jenkins.cpp`):
    /// 17 bytes (a tail into `c`) and 40 (a whole block, then a 16-byte tail).
    #[test]
    fn the_64_bit_hash_matches_yugabytes_test_vectors() {
        let b1 = unhex("c7251d5d753a4e4622294d6c677aa82571");
        assert_eq!(hash64(&b1, 97), 1_789_751_740_810_280_356);
        let b2 = unhex(concat!(
            "838e7ef071ef9b3e4ae61260c0a1f9945a859bb1f68697e1",
            "ab87c8abc128d172730bda50e3e6f942"
        ));
        assert_eq!(hash64(&b2, 97), 4_001_818_822_847_464_429);
    }

    #[test]
    fn partition_hashes_match_yugabytes_key_dumps() {
        // src/yb/dockv/doc_key.h: SubDocKey(DocKey(0xfca0, [3], []), ...).
        assert_eq!(hash_values(&[Primitive::Int32(3)]), 0xfca0);
        // A YSQL key dump: hash(int4 3, int4 2) = 0x07b6.
        assert_eq!(hash_values(&[Primitive::Int32(3), Primitive::Int32(2)]), 0x07b6);
        // Partition hashes a server reported for (int, blob) and (bigint, text) keys (a
        // driver's test vectors: the blob bytes stand in as text here, hashed raw alike).
        let blob = [Primitive::Int32(-2147483648), Primitive::String("key".into())];
        assert_eq!(hash_values(&blob), 52240);
        let key = |n: i64, s: &str| [Primitive::Int64(n), Primitive::String(s.into())];
        assert_eq!(hash_values(&key(-5, "senzing")), 4373);
        assert_eq!(hash_values(&key(i64::MAX, "kv")), 6310);
        assert_eq!(hash_values(&key(0, "a")), 54981);
    }
}
