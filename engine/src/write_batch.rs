//! One tablet write, encoded: entries as (key without hybrid time, value) byte pairs in
//! write-id order. It is what a Raft log entry carries; applying it appends `#` and the
//! DocHybridTime `(batch hybrid time, index)` to each key, so applying the same batch at the
//! same hybrid time always yields the same RocksDB key/values.

use crate::decode_error::DecodeError;
use crate::encoding::{DocPath, Value};

/// An encoded write batch. One buffer for all bytes: a row of five columns is two
/// allocations, not twenty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DocWriteBatch {
    bytes: Vec<u8>,
    /// For each entry, the end of its key and the end of its value in `bytes`.
    ends: Vec<(u32, u32)>,
}

impl DocWriteBatch {
    /// An empty batch.
    pub fn new() -> DocWriteBatch {
        DocWriteBatch::default()
    }

    /// An empty batch with room for `entries` entries of `bytes` bytes in all.
    pub fn with_capacity(entries: usize, bytes: usize) -> DocWriteBatch {
        DocWriteBatch { bytes: Vec::with_capacity(bytes), ends: Vec::with_capacity(entries) }
    }

    /// Append an entry.
    pub fn push(&mut self, path: &DocPath, value: &Value) {
        self.push_with(|key| path.encode_to(key), |v| value.encode_to(v));
    }

    /// Append an entry whose key and value the closures write into the batch's buffer.
    pub fn push_with(&mut self, key: impl FnOnce(&mut Vec<u8>), value: impl FnOnce(&mut Vec<u8>)) {
        key(&mut self.bytes);
        let key_end = self.offset();
        value(&mut self.bytes);
        let value_end = self.offset();
        self.ends.push((key_end, value_end));
    }

    fn offset(&self) -> u32 {
        u32::try_from(self.bytes.len()).expect("a write batch stays below 4 GiB")
    }

    /// Entries in the batch.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// The key and value bytes of all its entries.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the batch writes nothing.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The (key without hybrid time, value) pairs in write-id order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        let mut start = 0usize;
        self.ends.iter().map(move |&(key_end, value_end)| {
            let (k, v) = (key_end as usize, value_end as usize);
            let pair = (&self.bytes[start..k], &self.bytes[k..v]);
            start = v;
            pair
        })
    }

    /// The length of the serialized batch ([`DocWriteBatch::write_to`]).
    pub fn encoded_len(&self) -> usize {
        4 + 8 * self.len() + self.bytes.len()
    }

    /// Append the serialized batch to `out`: entry count, then per entry `u32` key length,
    /// key, `u32` value length, value (little endian lengths).
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        out.extend_from_slice(&(self.len() as u32).to_le_bytes());
        for (k, v) in self.iter() {
            out.extend_from_slice(&(k.len() as u32).to_le_bytes());
            out.extend_from_slice(k);
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            out.extend_from_slice(v);
        }
    }

    /// Parse [`DocWriteBatch::write_to`] output. Total: lengths are checked against the
    /// input before anything is allocated from them.
    pub fn from_bytes(input: &[u8]) -> Result<DocWriteBatch, DecodeError> {
        let mut pos = 0;
        let read_u32 = |pos: &mut usize| -> Result<usize, DecodeError> {
            let bytes = input
                .get(*pos..*pos + 4)
                .ok_or_else(|| DecodeError::new("write batch", *pos, "truncated length"))?;
            *pos += 4;
            Ok(u32::from_le_bytes(bytes.try_into().expect("4 bytes")) as usize)
        };
        let count = read_u32(&mut pos)?;
        if count > input.len() / 8 {
            return Err(DecodeError::new("write batch", 0, format!("{count} entries cannot fit")));
        }
        let mut batch = DocWriteBatch::with_capacity(count, input.len());
        for _ in 0..count {
            let field = |pos: &mut usize| -> Result<&[u8], DecodeError> {
                let len = read_u32(pos)?;
                let bytes = input
                    .get(*pos..*pos + len)
                    .ok_or_else(|| DecodeError::new("write batch", *pos, "truncated entry"))?;
                *pos += len;
                Ok(bytes)
            };
            let key = field(&mut pos)?;
            let value = field(&mut pos)?;
            batch.push_with(|b| b.extend_from_slice(key), |b| b.extend_from_slice(value));
        }
        if pos != input.len() {
            return Err(DecodeError::new("write batch", pos, "trailing bytes"));
        }
        Ok(batch)
    }
}

impl<'a> FromIterator<&'a (DocPath, Value)> for DocWriteBatch {
    fn from_iter<I: IntoIterator<Item = &'a (DocPath, Value)>>(entries: I) -> Self {
        let mut batch = DocWriteBatch::with_capacity(4, 256);
        entries.into_iter().for_each(|(path, value)| batch.push(path, value));
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn serialization_round_trips(
            pairs in prop::collection::vec((any::<Vec<u8>>(), any::<Vec<u8>>()), 0..8),
        ) {
            let mut batch = DocWriteBatch::new();
            for (k, v) in &pairs {
                batch.push_with(|b| b.extend_from_slice(k), |b| b.extend_from_slice(v));
            }
            let got: Vec<(Vec<u8>, Vec<u8>)> =
                batch.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
            prop_assert_eq!(&got, &pairs);
            let mut bytes = Vec::new();
            batch.write_to(&mut bytes);
            prop_assert_eq!(bytes.len(), batch.encoded_len());
            prop_assert_eq!(DocWriteBatch::from_bytes(&bytes).unwrap(), batch);
        }

        #[test]
        fn parsing_garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = DocWriteBatch::from_bytes(&bytes);
        }
    }

    /// Each malformed batch is refused naming the byte where it goes wrong; a count is
    /// refused before anything is allocated for it once the input cannot hold that many
    /// entries of 8 bytes (two empty lengths) each.
    #[test]
    fn malformed_batches_are_refused_naming_the_byte() {
        let u32s =
            |words: &[u32]| -> Vec<u8> { words.iter().flat_map(|w| w.to_le_bytes()).collect() };
        let cases = [
            (vec![1, 0], "malformed write batch at byte 0: truncated length"),
            (u32s(&[2, 0, 0]), "malformed write batch at byte 0: 2 entries cannot fit"),
            (u32s(&[1, 0]), "malformed write batch at byte 8: truncated length"),
            (
                [&u32s(&[1, 3])[..], b"ab"].concat(),
                "malformed write batch at byte 8: truncated entry",
            ),
            (
                [&u32s(&[1, 0, 0])[..], b"x"].concat(),
                "malformed write batch at byte 12: trailing bytes",
            ),
        ];
        for (bytes, want) in cases {
            let got = DocWriteBatch::from_bytes(&bytes).map_err(|e| e.to_string());
            assert_eq!(got, Err(want.to_string()), "{bytes:?}");
        }
        let one_empty_entry = DocWriteBatch::from_bytes(&u32s(&[1, 0, 0])).unwrap();
        assert_eq!(one_empty_entry.iter().collect::<Vec<_>>(), [(&b""[..], &b""[..])]);
    }
}
