//! The simulator's own reading of a Raft log's files, as an fsck would read them: only
//! the framing, stated here from the format's description (engine/src/log.rs) and not
//! from the engine's reader, so the book can say what bootstrap must find without asking
//! the engine.
//!
//! ```text
//!  record  := len:u32le crc:u32le kind:u8 payload[len]
//!  header  := the first record of a segment; payload = "docsimlg" seq:u64le
//!             prev_term:u64le prev_index:u64le term:u64le vote:u64le commit:u64le
//!  entry   := kind 2; payload = term:u64le index:u64le data
//! ```
//!
//! A record is *whole* when all its `9 + len` bytes are there. The checker never verifies
//! checksums: it knows what the disk did (the fault ledger), so it only needs to know
//! where records begin and end.

/// Bytes before a record's payload: length, checksum, kind.
const RECORD_HEADER_BYTES: usize = 9;
const KIND_ENTRY: u8 = 2;
const MAGIC: &[u8; 8] = b"docsimlg";

/// The `(offset, size)` of each whole record from the start of `bytes`, in order; stops
/// at the first record that is not whole.
pub fn whole_records(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut records = Vec::new();
    let mut offset = 0;
    while let Some(len) = u32_at(bytes, offset) {
        let size = RECORD_HEADER_BYTES + len as usize;
        if bytes.len() - offset < size {
            break;
        }
        records.push((offset, size));
        offset += size;
    }
    records
}

/// The offset of the whole record that holds byte `offset` of a segment, if one does.
pub fn record_holding(bytes: &[u8], offset: usize) -> Option<usize> {
    whole_records(bytes)
        .into_iter()
        .find(|(start, size)| (*start..start + size).contains(&offset))
        .map(|(start, _)| start)
}

/// The index of the op id a segment's header says comes before its first entry.
pub fn segment_prev_index(bytes: &[u8]) -> Option<u64> {
    segment_header(bytes).map(|(_, (_, prev_index))| prev_index)
}

/// A segment header's `seq` and the op id `(term, index)` before its first entry.
pub fn segment_header(bytes: &[u8]) -> Option<(u64, (u64, u64))> {
    let payload = bytes.get(RECORD_HEADER_BYTES..)?;
    if payload.get(..8)? != MAGIC {
        return None;
    }
    Some((u64_at(payload, 8)?, (u64_at(payload, 16)?, u64_at(payload, 24)?)))
}

/// The op id `(term, index)` of the entry record at `offset`, if an entry is there.
pub fn entry_op_id(bytes: &[u8], offset: usize) -> Option<(u64, u64)> {
    if *bytes.get(offset + 8)? != KIND_ENTRY {
        return None;
    }
    let payload = offset + RECORD_HEADER_BYTES;
    Some((u64_at(bytes, payload)?, u64_at(bytes, payload + 8)?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = (payload.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&[0xAB; 4]); // the checksum: never read here
        out.push(kind);
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn whole_records_stop_at_a_cut_record() {
        let mut bytes = record(1, &[0; 56]);
        bytes.extend(record(2, &[7; 20]));
        let cut = record(2, &[9; 30]);
        bytes.extend_from_slice(&cut[..12]);
        assert_eq!(whole_records(&bytes), vec![(0, 65), (65, 29)]);
        assert_eq!(record_holding(&bytes, 64), Some(0));
        assert_eq!(record_holding(&bytes, 65), Some(65));
        assert_eq!(record_holding(&bytes, 100), None, "inside the cut record");
    }

    #[test]
    fn a_header_names_its_prev_index_and_an_entry_its_op_id() {
        let mut header = MAGIC.to_vec();
        for v in [3u64, 2, 41, 2, 1, 41] {
            header.extend_from_slice(&v.to_le_bytes());
        }
        let mut bytes = record(1, &header);
        assert_eq!(segment_prev_index(&bytes), Some(41));
        let mut entry = 2u64.to_le_bytes().to_vec();
        entry.extend_from_slice(&42u64.to_le_bytes());
        let at = bytes.len();
        bytes.extend(record(2, &entry));
        assert_eq!(entry_op_id(&bytes, at), Some((2, 42)));
        assert_eq!(entry_op_id(&bytes, 0), None, "a header is not an entry");
    }
}
