//! Raft snapshots of a replica's state: docsim's own rule and format. YugabyteDB has no
//! Raft snapshots: when `PeerMessageQueue::RequestForPeer` finds that the entries a
//! follower needs were collected, it reports the follower failed
//! (`NotifyObserversOfFailedFollower`) and the master replaces it; the new copy starts
//! with a remote bootstrap (`RemoteBootstrapSession`: a RocksDB checkpoint and log
//! segments copied as files). A snapshot here does the catching up in place.
//!
//! ```text
//! snapshot data := "docsnap3" applied_ht:u64be history_cutoff:u64be pairs pairs
//!                  checkpoint_count:u64be checkpoint*
//!                  crc32c(all before):u32le
//! pairs          := count:u64be (key_len:u32le key value_len:u32le value)*
//! checkpoint     := id_len:u32le id term:u64be index:u64be ht:u64be
//!                   kept_flag:u8 kept:u64be frontier_term:u64be frontier_index:u64be
//!                   frontier_ht:u64be history_cutoff:u64be pairs pairs
//! ```
//! The first pairs are the documents, the second the tablet's metadata (its schema with
//! every packing version, its list-index counter: `tablet.rs`), so the receiver reads
//! the data it installs under the schema it was written under. Then the tablet's table
//! snapshots (`db/snapshots.rs`), each with its documents and metadata, so that a replica
//! caught up by a snapshot can restore one (YugabyteDB's remote bootstrap copies the
//! snapshot directories with the tablet). The op id and the configuration travel in
//! raft-rs's snapshot metadata.

use crate::db::{CheckpointCopy, Export, SnapshotInfo};
use crate::hybrid_time::HybridTime;
use crate::ids::OpId;

const MAGIC: &[u8; 8] = b"docsnap3";

/// A replica's documents at its applied entry, and that entry's last write time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SnapshotData {
    pub applied_ht: HybridTime,
    pub export: Export,
    /// The tablet's metadata keys and values.
    pub metadata: Vec<(Vec<u8>, Vec<u8>)>,
    /// The tablet's table snapshots.
    pub checkpoints: Vec<CheckpointCopy>,
}

impl SnapshotData {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        let cutoff = self.export.history_cutoff.raw();
        for v in [self.applied_ht.raw(), cutoff] {
            out.extend_from_slice(&v.to_be_bytes());
        }
        put_pairs(&mut out, &self.export.pairs);
        put_pairs(&mut out, &self.metadata);
        out.extend_from_slice(&(self.checkpoints.len() as u64).to_be_bytes());
        for copy in &self.checkpoints {
            put_checkpoint(&mut out, copy);
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
        let count = reader.u64()?;
        let mut checkpoints = Vec::new();
        for _ in 0..count {
            checkpoints.push(reader.checkpoint()?);
        }
        if reader.at != body.len() {
            return Err(format!("{} bytes after the last pair", body.len() - reader.at));
        }
        check_pairs("the tablet", &pairs, &metadata)?;
        let mut ids = std::collections::BTreeSet::new();
        for copy in &checkpoints {
            let id = &copy.info.id;
            if !crate::tablet::valid_snapshot_id(id) || !ids.insert(id) {
                return Err(format!("snapshot `{id}`: not a snapshot name, or named twice"));
            }
            check_pairs(&format!("snapshot {id}"), &copy.export.pairs, &copy.metadata)?;
        }
        let export = Export { pairs, history_cutoff };
        Ok(SnapshotData { applied_ht, export, metadata, checkpoints })
    }
}

/// Documents' keys outside the metadata range, metadata keys inside it and none of those
/// the install writes itself (a snapshot written wrong is refused, never installed).
fn check_pairs(what: &str, docs: &Pairs, metadata: &Pairs) -> Result<(), String> {
    let meta = |key: &[u8]| key.first() == Some(&0x01);
    if let Some((key, _)) = docs.iter().find(|(key, _)| meta(key)) {
        return Err(format!("{what}: document key {key:02x?} in the metadata range"));
    }
    let own: [&[u8]; 3] = [b"\x01frontier", b"\x01history_cutoff", b"\x01snapshot"];
    match metadata.iter().find(|(key, _)| !meta(key) || own.contains(&key.as_slice())) {
        Some((key, _)) => Err(format!("{what}: metadata key {key:02x?} not allowed")),
        None => Ok(()),
    }
}

fn put_pairs(out: &mut Vec<u8>, pairs: &Pairs) {
    out.extend_from_slice(&(pairs.len() as u64).to_be_bytes());
    for (key, value) in pairs {
        for bytes in [key, value] {
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(bytes);
        }
    }
}

fn put_checkpoint(out: &mut Vec<u8>, copy: &CheckpointCopy) {
    let SnapshotInfo { id, op_id, ht, kept } = &copy.info;
    out.extend_from_slice(&(id.len() as u32).to_le_bytes());
    out.extend_from_slice(id.as_bytes());
    for v in [op_id.term, op_id.index, ht.raw()] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    out.push(u8::from(kept.is_some()));
    let (frontier, frontier_ht) = copy.frontier;
    let kept = kept.unwrap_or(HybridTime::MIN).raw();
    let cutoff = copy.export.history_cutoff.raw();
    for v in [kept, frontier.term, frontier.index, frontier_ht.raw(), cutoff] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    put_pairs(out, &copy.export.pairs);
    put_pairs(out, &copy.metadata);
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

    fn checkpoint(&mut self) -> Result<CheckpointCopy, String> {
        let id =
            String::from_utf8(self.sized()?.to_vec()).map_err(|_| "a snapshot id not UTF-8")?;
        let op_id = OpId::new(self.u64()?, self.u64()?);
        let ht = HybridTime::from_raw(self.u64()?);
        let kept_flag = self.take(1)?[0];
        let kept = HybridTime::from_raw(self.u64()?);
        let kept = match kept_flag {
            0 => None,
            1 => Some(kept),
            other => return Err(format!("snapshot {id}: kept flag {other}")),
        };
        let frontier = (OpId::new(self.u64()?, self.u64()?), HybridTime::from_raw(self.u64()?));
        let history_cutoff = HybridTime::from_raw(self.u64()?);
        let export = Export { pairs: self.pairs()?, history_cutoff };
        let info = SnapshotInfo { id, op_id, ht, kept };
        Ok(CheckpointCopy { info, frontier, export, metadata: self.pairs()? })
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
        SnapshotData { applied_ht: HybridTime::from_raw(99), export, metadata, checkpoints: vec![] }
    }

    #[test]
    fn a_snapshot_round_trips() {
        let data = sample();
        assert_eq!(SnapshotData::decode(&data.encode()), Ok(data.clone()));
        let mut with_checkpoints = data.clone();
        for (id, kept) in [("s0", None), ("s1", Some(HybridTime::from_raw(5)))] {
            let info =
                SnapshotInfo { id: id.into(), op_id: OpId::new(2, 9), ht: data.applied_ht, kept };
            let frontier = (OpId::new(2, 8), HybridTime::from_raw(40));
            let (export, metadata) = (data.export.clone(), data.metadata.clone());
            with_checkpoints.checkpoints.push(CheckpointCopy { info, frontier, export, metadata });
        }
        let encoded = with_checkpoints.encode();
        assert_eq!(SnapshotData::decode(&encoded), Ok(with_checkpoints));
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
        assert_eq!(refused(&[b"docsnap2", &body[8..]].concat()), "not a docsim snapshot");
        assert_eq!(refused(&body[..30]), "cut short at byte 24");
        assert_eq!(refused(&body[..37]), "cut short at byte 36");
        // A third document pair read where the metadata count is (54..62): an empty key,
        // then a value length of 2^24 (the count's last bytes), cut short at its start.
        let mut one_pair_more = body.to_vec();
        one_pair_more[31] += 1;
        assert_eq!(refused(&one_pair_more), "cut short at byte 62");
        assert_eq!(refused(&[body, b"xy"].concat()), "2 bytes after the last pair");
        // Sealed, well framed, but not installable: refused by what is wrong.
        let mut bad = sample();
        bad.metadata.push((b"\x01frontier".to_vec(), vec![0; 24]));
        assert!(SnapshotData::decode(&bad.encode()).unwrap_err().contains("not allowed"));
        let mut bad = sample();
        bad.export.pairs.push((b"\x01conf".to_vec(), vec![]));
        assert!(SnapshotData::decode(&bad.encode()).unwrap_err().contains("metadata range"));
        let mut bad = sample();
        let info = SnapshotInfo {
            id: "/abs".into(),
            op_id: OpId::new(1, 1),
            ht: HybridTime::MIN,
            kept: None,
        };
        let (export, metadata) = (Export::default(), vec![]);
        let frontier = (OpId::new(1, 1), HybridTime::MIN);
        bad.checkpoints.push(CheckpointCopy { info, frontier, export, metadata });
        assert!(SnapshotData::decode(&bad.encode()).unwrap_err().contains("not a snapshot name"));
        bad.checkpoints[0].info.id = "s1".into();
        bad.checkpoints[0].metadata.push((b"\x01snapshot".to_vec(), vec![0; 16]));
        let why = SnapshotData::decode(&bad.encode()).unwrap_err();
        assert!(why.starts_with("snapshot s1: metadata key"), "{why}");
        let mut huge_key = body.to_vec();
        huge_key[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(refused(&huge_key), "cut short at byte 36");
    }
}
