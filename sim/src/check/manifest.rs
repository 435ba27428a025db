//! The simulator's own reading of RocksDB's MANIFEST framing, as far as the book needs
//! it: where an edit appended at some offset ends. Stated from RocksDB's log format
//! (`db/log_format.h`, the MANIFEST is a log file): 32 KiB blocks of physical records,
//! each `crc:u32 length:u16 type:u8` then `length` bytes; type 1 is a whole record, 2, 3
//! and 4 its first, middle and last fragments; a block's tail shorter than a header is
//! zero padding. A reader drops a record cut short at the file's end
//! (`kTolerateCorruptedTailRecords`), so an edit is durable exactly when all its
//! fragments survive.

const BLOCK_BYTES: usize = 32 * 1024;
const HEADER_BYTES: usize = 7;
const FULL: u8 = 1;
const LAST: u8 = 4;

/// The end of the logical record appended at `start` of a MANIFEST holding `bytes`
/// (volatile bytes included), or `None` if `bytes` do not hold all of it.
pub fn edit_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut at = start;
    loop {
        let left_in_block = BLOCK_BYTES - at % BLOCK_BYTES;
        if left_in_block < HEADER_BYTES {
            at += left_in_block; // padding
        }
        let header = bytes.get(at..at + HEADER_BYTES)?;
        let length = u16::from_le_bytes([header[4], header[5]]) as usize;
        let end = at + HEADER_BYTES + length;
        if end > bytes.len() {
            return None;
        }
        if matches!(header[6], FULL | LAST) {
            return Some(end);
        }
        at = end;
    }
}

#[cfg(test)]
mod tests {
    use super::edit_end;

    fn record(kind: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![0; 4];
        out.extend_from_slice(&(payload.len() as u16).to_le_bytes());
        out.push(kind);
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn an_edit_ends_after_its_last_fragment_and_needs_every_byte() {
        let mut bytes = record(1, b"older");
        let start = bytes.len();
        bytes.extend(record(2, b"first"));
        bytes.extend(record(4, b"last"));
        assert_eq!(edit_end(&bytes, start), Some(bytes.len()));
        assert_eq!(edit_end(&bytes[..bytes.len() - 1], start), None, "a byte short");
        assert_eq!(edit_end(&bytes, 0), Some(start), "a whole record alone");
        assert_eq!(edit_end(&bytes, bytes.len()), None, "nothing appended");
    }

    #[test]
    fn a_block_tail_shorter_than_a_header_is_padding() {
        let mut bytes = vec![0; 32 * 1024 - 3];
        let start = bytes.len();
        bytes.extend([0; 3]);
        bytes.extend(record(1, b"edit"));
        assert_eq!(edit_end(&bytes, start), Some(bytes.len()));
    }
}
