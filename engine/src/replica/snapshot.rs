//! Raft snapshots of a replica's state: docsim's own rule and format. YugabyteDB has no
//! Raft snapshots: when `PeerMessageQueue::RequestForPeer` finds that the entries a
//! follower needs were collected, it reports the follower failed
//! (`NotifyObserversOfFailedFollower`) and the master replaces it; the new copy starts
//! with a remote bootstrap (`RemoteBootstrapSession`: a RocksDB checkpoint and log
//! segments copied as files). A snapshot here does the catching up in place.
//!
//! ```text
//! snapshot data := "docsnap2" applied_ht:u64be history_cutoff:u64be
//!                  count:u64be (key_len:u32le key value_len:u32le value)*
//!                  meta_count:u64be (key_len:u32le key value_len:u32le value)*
//!                  crc32c(all before):u32le
//! ```
//! The first pairs are the documents, the second the tablet's metadata (its schema with
//! every packing version, its list-index counter: `tablet.rs`), so the receiver reads
//! the data it installs under the schema it was written under. The op id and the
//! configuration travel in raft-rs's snapshot metadata.

use crate::db::Export;
use crate::hybrid_time::HybridTime;

const MAGIC: &[u8; 8] = b"docsnap2";

/// A replica's documents at its applied entry, and that entry's last write time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SnapshotData {
    pub applied_ht: HybridTime,
    pub export: Export,
    /// The tablet's metadata keys and values.
    pub metadata: Vec<(Vec<u8>, Vec<u8>)>,
}

impl SnapshotData {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        let cutoff = self.export.history_cutoff.raw();
        for v in [self.applied_ht.raw(), cutoff] {
            out.extend_from_slice(&v.to_be_bytes());
        }
        for pairs in [&self.export.pairs, &self.metadata] {
            out.extend_from_slice(&(pairs.len() as u64).to_be_bytes());
            for (key, value) in pairs {
                for bytes in [key, value] {
                    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                    out.extend_from_slice(bytes);
                }
            }
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decode; any byte string gives a snapshot or says what is wrong with it.
    pub fn decode(bytes: &[u8]) -> Result<SnapshotData, String> {
        let body_len = bytes.len().checked_sub(4).ok_or("shorter than its checksum")?;
        let (body, crc) = bytes.split_at(body_len);
        let stored = u32::from_le_bytes(crc.try_into().expect("4 bytes"));
        if crc32c::crc32c(body) != stored {
            return Err("checksum mismatch".into());
        }
        let mut reader = Reader { bytes: body, at: 0 };
        if reader.take(8)? != MAGIC {
            return Err("not a docsim snapshot".into());
        }
        let applied_ht = HybridTime::from_raw(reader.u64()?);
        let history_cutoff = HybridTime::from_raw(reader.u64()?);
        let pairs = reader.pairs()?;
        let metadata = reader.pairs()?;
        if reader.at != body.len() {
            return Err(format!("{} bytes after the last pair", body.len() - reader.at));
        }
        Ok(SnapshotData { applied_ht, export: Export { pairs, history_cutoff }, metadata })
    }
}

/// Keys and values, in order.
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&end| end <= self.bytes.len());
        let end = end.ok_or_else(|| format!("cut short at byte {}", self.at))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    fn pairs(&mut self) -> Result<Pairs, String> {
        let count = self.u64()?;
        let mut pairs = Vec::new();
        for _ in 0..count {
            let key = self.sized()?.to_vec();
            pairs.push((key, self.sized()?.to_vec()));
        }
        Ok(pairs)
    }

    fn sized(&mut self) -> Result<&'a [u8], String> {
        let len = u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"));
        self.take(len as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SnapshotData {
        let pairs = vec![(b"k1".to_vec(), b"v1".to_vec()), (b"k2".to_vec(), vec![])];
        let export = Export { pairs, history_cutoff: HybridTime::from_raw(7) };
        let metadata = vec![(b"\x01schema".to_vec(), b"docs".to_vec())];
        SnapshotData { applied_ht: HybridTime::from_raw(99), export, metadata }
    }

    #[test]
    fn a_snapshot_round_trips() {
        let data = sample();
        assert_eq!(SnapshotData::decode(&data.encode()), Ok(data));
    }

    #[test]
    fn damaged_snapshots_are_refused_never_a_panic() {
        let bytes = sample().encode();
        let refused = |bytes: &[u8]| SnapshotData::decode(bytes).unwrap_err();
        for cut in 0..bytes.len() {
            let reason = if cut < 4 { "shorter than its checksum" } else { "checksum mismatch" };
            assert_eq!(refused(&bytes[..cut]), reason, "cut at {cut}");
        }
        for i in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[i] ^= 0x04;
            assert_eq!(refused(&flipped), "checksum mismatch", "flip at {i}");
        }
    }

    /// Behind a good checksum the body is read with care too: a snapshot written wrong
    /// (not damaged on the way) is refused, by what is wrong with it.
    #[test]
    fn a_sealed_but_malformed_body_is_refused_by_name() {
        let encoded = sample().encode();
        let body = &encoded[..encoded.len() - 4];
        // magic 0..8, applied 8..16, cutoff 16..24, count 24..32, then the first key's
        // length at 32 and its bytes at 36, its value's length at 38...
        let sealed = |body: &[u8]| [body, &crc32c::crc32c(body).to_le_bytes()].concat();
        let refused = |body: &[u8]| SnapshotData::decode(&sealed(body)).unwrap_err();
        assert_eq!(SnapshotData::decode(&sealed(body)), Ok(sample()));
        assert_eq!(refused(&[b"docsnap1", &body[8..]].concat()), "not a docsim snapshot");
        assert_eq!(refused(&body[..30]), "cut short at byte 24");
        assert_eq!(refused(&body[..37]), "cut short at byte 36");
        // A third document pair read where the metadata count is (54..62): an empty key,
        // then a value length of 2^24 (the count's last bytes), cut short at its start.
        let mut one_pair_more = body.to_vec();
        one_pair_more[31] += 1;
        assert_eq!(refused(&one_pair_more), "cut short at byte 62");
        assert_eq!(refused(&[body, b"xy"].concat()), "2 bytes after the last pair");
        let mut huge_key = body.to_vec();
        huge_key[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(refused(&huge_key), "cut short at byte 36");
    }
}
