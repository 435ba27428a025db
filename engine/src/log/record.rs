//! One log record: `len:u32le crc32c:u32le kind:u8 payload`, the checksum over kind and
//! payload. Decoding is total: any byte string gives a record or a [`RecordError`].

use super::{HardState, LogEntry, OpId};
use std::fmt;

/// Bytes before a record's payload: length, checksum, kind.
pub(super) const HEADER_BYTES: usize = 9;
const KIND_HEADER: u8 = 1;
const KIND_ENTRY: u8 = 2;
const KIND_HARD_STATE: u8 = 3;
const KIND_SNAPSHOT: u8 = 4;
const MAGIC: &[u8; 8] = b"docsimlg";
/// Larger lengths are corruption, not a torn tail (no record is this big).
pub(super) const MAX_PAYLOAD_BYTES: usize = 64 << 20;

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Record {
    Header {
        seq: u64,
        prev: OpId,
        hard_state: HardState,
    },
    Entry(LogEntry),
    HardState(HardState),
    /// The log restarts after a snapshot of the state at this op id: every entry before
    /// this record is superseded (it follows the header of the segment a reset creates).
    Snapshot(OpId),
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum RecordError {
    /// The bytes end inside the record: a torn write, if at the tail.
    Incomplete,
    /// A whole record that is wrong.
    Corrupt(String),
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::Incomplete => write!(f, "the record is cut short"),
            RecordError::Corrupt(why) => write!(f, "{why}"),
        }
    }
}

impl Record {
    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Record::Header { seq, prev, hard_state } => frame(out, KIND_HEADER, |payload| {
                payload.extend_from_slice(MAGIC);
                put_u64s(payload, &[*seq, prev.term, prev.index]);
                put_hard_state(payload, hard_state);
            }),
            Record::Entry(entry) => Record::encode_entry(entry, out),
            Record::HardState(hs) => frame(out, KIND_HARD_STATE, |payload| {
                put_hard_state(payload, hs);
            }),
            Record::Snapshot(op_id) => frame(out, KIND_SNAPSHOT, |payload| {
                put_u64s(payload, &[op_id.term, op_id.index]);
            }),
        }
    }

    /// [`Record::encode`] of `Record::Entry(entry)`, without owning the entry.
    pub(super) fn encode_entry(entry: &LogEntry, out: &mut Vec<u8>) {
        frame(out, KIND_ENTRY, |payload| {
            put_u64s(payload, &[entry.op_id.term, entry.op_id.index]);
            payload.extend_from_slice(&entry.data);
        })
    }

    /// Decode the record at `offset`; returns it and the offset after it.
    pub(super) fn decode(bytes: &[u8], offset: usize) -> Result<(Record, usize), RecordError> {
        let rest = &bytes[offset..];
        if rest.len() < HEADER_BYTES {
            return Err(RecordError::Incomplete);
        }
        let len = u32::from_le_bytes(rest[0..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(rest[4..8].try_into().expect("4 bytes"));
        if len > MAX_PAYLOAD_BYTES {
            return Err(RecordError::Corrupt(format!("record length {len} is impossible")));
        }
        if rest.len() < HEADER_BYTES + len {
            return Err(RecordError::Incomplete);
        }
        let (kind, payload) = (rest[8], &rest[HEADER_BYTES..HEADER_BYTES + len]);
        let actual = crc32c::crc32c_append(crc32c::crc32c(&[kind]), payload);
        if actual != crc {
            return Err(RecordError::Corrupt(format!(
                "checksum mismatch (stored {crc:08x}, computed {actual:08x})"
            )));
        }
        let record = decode_payload(kind, payload).map_err(RecordError::Corrupt)?;
        Ok((record, offset + HEADER_BYTES + len))
    }
}

fn decode_payload(kind: u8, payload: &[u8]) -> Result<Record, String> {
    match kind {
        KIND_HEADER => {
            if payload.len() != 8 + 6 * 8 || &payload[..8] != MAGIC {
                return Err("bad segment header".into());
            }
            let v = get_u64s::<6>(&payload[8..]);
            let hard_state = HardState { term: v[3], vote: v[4], commit: v[5] };
            Ok(Record::Header { seq: v[0], prev: OpId::new(v[1], v[2]), hard_state })
        }
        KIND_ENTRY if payload.len() >= 16 => {
            let v = get_u64s::<2>(payload);
            let data = payload[16..].to_vec();
            Ok(Record::Entry(LogEntry { op_id: OpId::new(v[0], v[1]), data }))
        }
        KIND_HARD_STATE if payload.len() == 24 => {
            let v = get_u64s::<3>(payload);
            Ok(Record::HardState(HardState { term: v[0], vote: v[1], commit: v[2] }))
        }
        KIND_SNAPSHOT if payload.len() == 16 => {
            let v = get_u64s::<2>(payload);
            Ok(Record::Snapshot(OpId::new(v[0], v[1])))
        }
        _ => Err(format!("record kind {kind} with {} payload bytes", payload.len())),
    }
}

/// Append one record of `kind` to `out`: its header, then the payload `payload` writes
/// (straight into `out`), the length and checksum filled in afterwards.
fn frame(out: &mut Vec<u8>, kind: u8, payload: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&[0; 8]); // length and checksum, known once the payload is in
    out.push(kind);
    payload(out);
    let len = (out.len() - start - HEADER_BYTES) as u32;
    let crc = crc32c::crc32c(&out[start + 8..]); // over kind and payload
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

fn put_u64s(out: &mut Vec<u8>, values: &[u64]) {
    values.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
}

fn put_hard_state(out: &mut Vec<u8>, hs: &HardState) {
    put_u64s(out, &[hs.term, hs.vote, hs.commit]);
}

/// `N` little-endian u64s; the caller checked the length.
fn get_u64s<const N: usize>(bytes: &[u8]) -> [u64; N] {
    std::array::from_fn(|i| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8")))
}
