//! The sync mark: a durable record of how far the newest segment is synced, so that
//! opening the log can tell a torn tail (cut short beyond the mark: a crash tore an
//! unsynced append) from damage to synced data (a record cut short below the mark, e.g. a
//! flipped length field), which must never be cut silently: every acknowledged entry is
//! below the mark.
//!
//! ```text
//!  synced-a, synced-b := counter:u64le seq:u64le len:u64le crc32c(first 24 bytes):u32le
//! ```
//!
//! The mark is written after every sync, alternately into two slot files, each rewritten
//! whole in one append smaller than a sector: on the simulated disk (whose truncate is
//! durable at once and whose tears fall on sector boundaries) a crash leaves a slot either
//! whole or empty, and the other slot intact. A non-empty slot whose checksum fails was
//! damaged after it was synced: that is corruption, reported, never skipped. (On a real
//! file system a torn in-place rewrite could leave other bytes; a checksum over each
//! record's header, length included, would close the same gap without a second file.)

use crate::disk::SimDisk;
use crate::error::{Error, Result};

/// Bytes of one encoded mark.
const MARK_BYTES: usize = 28;

/// How far segment `seq` is synced: `len` bytes. `counter` orders marks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct SyncMark {
    pub counter: u64,
    pub seq: u64,
    pub len: u64,
}

/// The two slots' file names in `dir`, by the parity of the counter of the mark they hold.
pub(super) fn slot_names(dir: &str) -> [String; 2] {
    [format!("{dir}/synced-a"), format!("{dir}/synced-b")]
}

impl SyncMark {
    fn encode(&self) -> [u8; MARK_BYTES] {
        let mut out = [0; MARK_BYTES];
        for (i, v) in [self.counter, self.seq, self.len].into_iter().enumerate() {
            out[8 * i..][..8].copy_from_slice(&v.to_le_bytes());
        }
        let crc = crc32c::crc32c(&out[..24]);
        out[24..].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// `None` for an empty slot (never written, or its rewrite lost in a crash).
    pub(super) fn decode(bytes: &[u8], name: &str) -> Result<Option<SyncMark>> {
        if bytes.is_empty() {
            return Ok(None);
        }
        let corrupt = |reason: &str| Error::LogCorruption {
            segment: name.to_owned(),
            offset: 0,
            reason: reason.to_owned(),
        };
        if bytes.len() != MARK_BYTES {
            return Err(corrupt("a sync mark of the wrong size"));
        }
        let crc = u32::from_le_bytes(bytes[24..28].try_into().expect("4 bytes"));
        if crc32c::crc32c(&bytes[..24]) != crc {
            return Err(corrupt("sync mark checksum mismatch"));
        }
        let word = |i: usize| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8"));
        Ok(Some(SyncMark { counter: word(0), seq: word(1), len: word(2) }))
    }

    /// The newest mark of the log in `dir` (the default, all zero, if none was written).
    /// Creates the slot files that do not exist yet, durably, so writing a mark never has
    /// to look for them.
    pub fn read(disk: &SimDisk, dir: &str) -> Result<SyncMark> {
        let mut newest = SyncMark::default();
        let mut created = false;
        for name in slot_names(dir) {
            if disk.list(&name).is_empty() {
                disk.create(&name)?;
                created = true;
            } else if let Some(mark) = SyncMark::decode(&disk.read(&name)?, &name)? {
                if mark.counter > newest.counter {
                    newest = mark;
                }
            }
        }
        if created {
            disk.sync_dir(dir)?;
        }
        Ok(newest)
    }

    /// [`SyncMark::write_in`] the slots of the log in `dir`.
    #[cfg(test)]
    pub fn write(&mut self, disk: &SimDisk, dir: &str, seq: u64, len: usize) -> Result<()> {
        self.write_in(disk, &slot_names(dir), seq, len)
    }

    /// Durably record that segment `seq` is synced up to `len` bytes, in the one of
    /// `slots` (the log's [`slot_names`]) the previous mark is not in.
    /// The mark changes only once it is durable: a failed write leaves the previous one,
    /// so a retry never rewrites the slot that holds the only durable mark.
    pub fn write_in(
        &mut self,
        disk: &SimDisk,
        slots: &[String; 2],
        seq: u64,
        len: usize,
    ) -> Result<()> {
        let next = SyncMark { counter: self.counter + 1, seq, len: len as u64 };
        let name = &slots[(next.counter % 2) as usize];
        disk.truncate(name, 0)?; // both slots exist: `read` created them
        disk.append(name, &next.encode())?;
        disk.sync(name)?;
        *self = next;
        Ok(())
    }

    /// How many bytes of segment `seq`, the newest in `dir`, are known to be synced. A mark
    /// naming a newer segment means a synced segment is gone: corruption.
    pub fn synced_len(&self, dir: &str, seq: u64) -> Result<usize> {
        if self.seq > seq {
            return Err(Error::LogCorruption {
                segment: super::segment_name(dir, self.seq),
                offset: 0,
                reason: format!(
                    "the sync mark names it (synced to {} bytes), but it is gone",
                    self.len
                ),
            });
        }
        // A mark from before this segment existed: only its header, checked on its own.
        Ok(if self.seq == seq { self.len as usize } else { 0 })
    }
}
