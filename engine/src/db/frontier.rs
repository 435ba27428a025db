//! When the flushed frontier is written.
//!
//! The frontier (the last applied Raft entry) must reach an SST file in the same flush as
//! that entry's data, and never a newer one than the data beside it. YugabyteDB sets it
//! on each write batch as metadata (`ConsensusFrontiers`, `Tablet::WriteToRocksDB`), which
//! memtables and the files a flush writes carry, and which the MANIFEST keeps as the
//! flushed frontier (`VersionSet::FlushedFrontier`). The C API has no such metadata, so
//! docsim keeps it as a metadata key. Rewriting that key in every write batch doubled a
//! write's memtable inserts; instead the frontier is kept here, in memory, and put into
//! the memtable just before a flush the engine asks for (docsim's rule).
//!
//! RocksDB also flushes by itself when the memtable fills up. The simulator chooses every
//! flush and never writes that much, but in case it happens: once the bytes written since
//! the last flush pass an eighth of the memtable, every write batch carries the frontier
//! again, so whatever a flush makes durable has its frontier beside it.

use crate::hybrid_time::HybridTime;
use crate::log::OpId;

/// Bytes a memtable entry costs beyond its key and value (the skip list node, lengths,
/// sequence number), counted generously.
const ENTRY_OVERHEAD_BYTES: usize = 64;

/// The frontier not yet in RocksDB, and how full the memtable may be.
#[derive(Debug)]
pub(super) struct Unflushed {
    /// The last applied entry and its write's hybrid time, once it differs from what
    /// RocksDB holds.
    frontier: Option<(OpId, HybridTime)>,
    /// Bytes written since the last flush, counted from the data alone.
    written_bytes: usize,
    /// Above this many bytes every write batch carries the frontier.
    inline_above_bytes: usize,
}

impl Unflushed {
    /// Nothing pending, for a memtable of `memtable_bytes`.
    pub(super) fn new(memtable_bytes: usize) -> Unflushed {
        Unflushed { frontier: None, written_bytes: 0, inline_above_bytes: memtable_bytes / 8 }
    }

    /// A write batch of `entries` entries holding `data_bytes` key and value bytes was
    /// applied as entry `op_id` (if it came from the log) at `ht`. Returns the frontier the
    /// batch itself must carry, if the memtable is too full to wait for the flush.
    pub(super) fn applied(
        &mut self,
        op_id: Option<OpId>,
        ht: HybridTime,
        entries: usize,
        data_bytes: usize,
    ) -> Option<(OpId, HybridTime)> {
        self.written_bytes += data_bytes + entries * ENTRY_OVERHEAD_BYTES;
        let op_id = op_id?;
        self.frontier = Some((op_id, ht));
        (self.written_bytes > self.inline_above_bytes).then_some((op_id, ht))
    }

    /// A batch wrote the frontier `(op_id, ht)` itself: a later flush must not put an
    /// older one over it.
    pub(super) fn written(&mut self, op_id: OpId, ht: HybridTime) {
        self.frontier = Some((op_id, ht));
    }

    /// A flush begins: the frontier to put into the memtable first, if any. Counting
    /// starts again.
    pub(super) fn flushing(&mut self) -> Option<(OpId, HybridTime)> {
        self.written_bytes = 0;
        self.frontier.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(index: u64) -> Option<OpId> {
        Some(OpId::new(1, index))
    }

    #[test]
    fn the_frontier_waits_for_the_flush_and_is_the_last_applied() {
        let mut unflushed = Unflushed::new(64 << 20);
        let ht = HybridTime::from_micros;
        assert_eq!(unflushed.applied(op(1), ht(10), 2, 100), None);
        assert_eq!(unflushed.applied(None, ht(11), 1, 10), None, "not from the log");
        assert_eq!(unflushed.applied(op(2), ht(12), 1, 10), None);
        assert_eq!(unflushed.flushing(), Some((OpId::new(1, 2), ht(12))));
        assert_eq!(unflushed.flushing(), None, "written once");
    }

    #[test]
    fn a_frontier_written_directly_is_never_overwritten_by_an_older_one() {
        let mut unflushed = Unflushed::new(64 << 20);
        let ht = HybridTime::from_micros;
        unflushed.applied(op(3), ht(10), 1, 10);
        unflushed.written(OpId::new(2, 9), ht(20)); // a snapshot installed
        assert_eq!(unflushed.flushing(), Some((OpId::new(2, 9), ht(20))));
    }

    #[test]
    fn a_filling_memtable_puts_the_frontier_in_every_batch() {
        let mut unflushed = Unflushed::new(8 << 10); // an eighth: 1 KiB
        let ht = HybridTime::from_micros(5);
        let with = |u: &mut Unflushed, i| u.applied(op(i), ht, 1, 100).is_some();
        let inline: Vec<bool> = (1..=8).map(|i| with(&mut unflushed, i)).collect();
        // 164 bytes a batch: the seventh passes 1,024.
        assert_eq!(inline, [false, false, false, false, false, false, true, true]);
        assert_eq!(unflushed.applied(None, ht, 1, 100), None, "no entry, no frontier");
        unflushed.flushing();
        assert!(!with(&mut unflushed, 9), "counting starts again after a flush");
    }
}
