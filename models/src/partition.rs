//! Which tablet of a split table holds a row, stated on the model's own: YugabyteDB's
//! partition hash of a row's hash key and its split of the 16-bit hash space. The engine
//! has its own statement of both (`engine/src/encoding/yb_hash.rs`, `engine/src/ids.rs`);
//! the model never calls it, so a wrong hash or split in the engine shows as a row in the
//! wrong tablet or out of hash order.
//!
//! - The hash (`YBPartition::HashColumnCompoundValue`, src/yb/util/yb_partition.cc): the
//!   hash key's values as QL key bytes (`AppendToKey`, src/yb/common/ql_value.cc: a bool
//!   one byte, int32/int64/timestamp big-endian, a double its IEEE bits big-endian, text
//!   its UTF-8 bytes) one after the other, through Bob Jenkins' lookup2 hash in 64 bits
//!   with seed 97 (`Hash64StringWithSeed`, src/yb/gutil/hash/jenkins.cc), folded to 16 bits
//!   as `h>>48 ^ 3(h>>32) ^ 5(h>>16) ^ 7(h & 0xffff)`.
//! - The split (`PartitionSchema::CreateHashPartitions`, src/yb/dockv/partition.cc): of
//!   `n` tablets, tablet i starts at hash `i * 65536 / n`; the next one's start ends it.

use crate::doc::Scalar;

/// The 16-bit partition hash of a hash key with these values, in key order.
pub fn hash_of(values: &[Scalar]) -> u16 {
    let mut bytes = Vec::new();
    for value in values {
        match value {
            Scalar::Null => {}
            Scalar::Bool(b) => bytes.push(*b as u8),
            Scalar::Int32(n) => bytes.extend(n.to_be_bytes()),
            Scalar::Int64(n) | Scalar::Timestamp(n) => bytes.extend(n.to_be_bytes()),
            Scalar::Double(bits) => bytes.extend(bits.to_be_bytes()),
            Scalar::Str(s) => bytes.extend(s.as_bytes()),
            Scalar::Column(n) | Scalar::SystemColumn(n) => bytes.extend(n.to_be_bytes()),
        }
    }
    let h = jenkins64(&bytes, 97);
    let folded = (h >> 48)
        ^ (h >> 32).wrapping_mul(3)
        ^ (h >> 16).wrapping_mul(5)
        ^ (h & 0xffff).wrapping_mul(7);
    folded as u16
}

/// The tablet (0-based, in hash order) of a table of `tablets` tablets owning `hash`.
pub fn tablet_of(hash: u16, tablets: u16) -> u16 {
    let start = |i: u32| i * 65536 / u32::from(tablets);
    let owner = (0..u32::from(tablets)).rev().find(|&i| start(i) <= u32::from(hash));
    owner.expect("tablet 0 starts at hash 0") as u16
}

/// lookup2's 64-bit hash: 24-byte blocks into three lanes, each block mixed; then the
/// rest, with the whole length added to the third lane below the rest's bytes there.
fn jenkins64(bytes: &[u8], seed: u64) -> u64 {
    const GOLDEN: u64 = 0xe08c_1d66_8b75_6f82;
    let mut lanes = [GOLDEN, GOLDEN, seed];
    let whole = bytes.len() / 24 * 24;
    for block in bytes[..whole].chunks(24) {
        add_block(&mut lanes, block);
        mix(&mut lanes);
    }
    // The rest as one block: lanes a and b take bytes 0..16, lane c's low byte stays free
    // for the length and its bytes 1..8 take the rest's bytes 16..23.
    let rest = &bytes[whole..];
    let mut block = [0u8; 24];
    for (i, byte) in rest.iter().enumerate() {
        block[if i < 16 { i } else { i + 1 }] = *byte;
    }
    add_block(&mut lanes, &block);
    lanes[2] = lanes[2].wrapping_add(bytes.len() as u64);
    mix(&mut lanes);
    lanes[2]
}

/// Add a block's three little-endian words to the lanes.
fn add_block(lanes: &mut [u64; 3], block: &[u8]) {
    for (lane, word) in lanes.iter_mut().zip(block.chunks(8)) {
        let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        *lane = lane.wrapping_add(word);
    }
}

/// lookup2's `mix64`: twelve steps, each `x -= y; x -= z; x ^= z >> s` (or `<< s`) over
/// the lanes in turn.
fn mix(lanes: &mut [u64; 3]) {
    const STEPS: [(u32, bool); 12] = [
        (43, true),
        (9, false),
        (8, true),
        (38, true),
        (23, false),
        (5, true),
        (35, true),
        (49, false),
        (11, true),
        (12, true),
        (18, false),
        (22, true),
    ];
    for (step, (shift, right)) in STEPS.into_iter().enumerate() {
        let (x, y, z) = (step % 3, (step + 1) % 3, (step + 2) % 3);
        let shifted = if right { lanes[z] >> shift } else { lanes[z] << shift };
        lanes[x] = lanes[x].wrapping_sub(lanes[y]).wrapping_sub(lanes[z]) ^ shifted;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// YugabyteDB's own vectors (drivers' Jenkins tests, key dumps in its sources and
    /// partition hashes a server reported).
    #[test]
    fn the_hash_is_yugabytes() {
        let hex = |t: &str| {
            (0..t.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&t[i..i + 2], 16).unwrap())
                .collect::<Vec<u8>>()
        };
        assert_eq!(
            jenkins64(&hex("c7251d5d753a4e4622294d6c677aa82571"), 97),
            1_789_751_740_810_280_356
        );
        let forty =
            "838e7ef071ef9b3e4ae61260c0a1f9945a859bb1f68697e1ab87c8abc128d172730bda50e3e6f942";
        assert_eq!(jenkins64(&hex(forty), 97), 4_001_818_822_847_464_429);
        assert_eq!(hash_of(&[Scalar::Int32(3)]), 0xfca0);
        assert_eq!(hash_of(&[Scalar::Int32(3), Scalar::Int32(2)]), 0x07b6);
        let key = |n: i64, s: &str| [Scalar::Int64(n), Scalar::Str(s.into())];
        assert_eq!(hash_of(&key(-5, "senzing")), 4373);
        assert_eq!(hash_of(&key(i64::MAX, "kv")), 6310);
        assert_eq!(hash_of(&key(0, "a")), 54981);
    }

    #[test]
    fn tablets_split_the_hash_space_as_yugabyte_does() {
        assert_eq!(
            [0, 21844, 21845, 43689, 43690, 0xffff].map(|h| tablet_of(h, 3)),
            [0, 0, 1, 1, 2, 2]
        );
        assert_eq!(
            [0, 0x3fff, 0x4000, 0xbfff, 0xc000, 0xffff].map(|h| tablet_of(h, 4)),
            [0, 0, 1, 2, 3, 3]
        );
        assert!((0..=0xffff).all(|h| tablet_of(h, 1) == 0));
    }
}
