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
//! the last flush (counted from the data, at least what the memtable spends on them) pass
//! half the memtable, every write batch carries the frontier again, so whatever a flush
//! makes durable has its frontier beside it. RocksDB flushes by itself only near a full
//! memtable (`MemTable::ShouldFlushNow`: allocated bytes near `write_buffer_size`; an
//! arena block is an eighth of it).
//!
//! The frontier moves only after a write succeeded, and is cleared only after the flush
//! that wrote it succeeded: a failed write never lends its entry to the frontier, and a
//! failed flush leaves it pending for the next.

use crate::hybrid_time::HybridTime;
use crate::ids::OpId;

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
    /// Above this many bytes (half the memtable) every write batch carries the frontier.
    inline_above_bytes: usize,
    /// The hybrid time of the oldest write since the last flush (YugabyteDB's
    /// `OldestMutableMemtableWriteHybridTime`).
    oldest_write: Option<HybridTime>,
}

/// What a tablet's memtable holds, by the engine's own count: the server-wide memstore
/// limit's measure (`node.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Memstore {
    /// Bytes written since the last flush, counted from the data (key and value bytes and
    /// a fixed cost per entry), never from RocksDB's allocator.
    pub bytes: usize,
    /// The hybrid time of the oldest write since the last flush.
    pub oldest_write: Option<HybridTime>,
}

impl Unflushed {
    /// Nothing pending, for a memtable of `memtable_bytes`.
    pub(super) fn new(memtable_bytes: usize) -> Unflushed {
        let inline_above_bytes = memtable_bytes / 2;
        Unflushed { frontier: None, written_bytes: 0, inline_above_bytes, oldest_write: None }
    }

    /// The frontier a write batch applying entry `op_id` (if it came from the log) at `ht`
    /// must carry itself, with `entries` entries of `data_bytes` key and value bytes: when
    /// the memtable would be too full to wait for the flush.
    pub(super) fn inline(
        &self,
        op_id: Option<OpId>,
        ht: HybridTime,
        entries: usize,
        data_bytes: usize,
    ) -> Option<(OpId, HybridTime)> {
        let full = self.written_bytes + cost_bytes(entries, data_bytes) > self.inline_above_bytes;
        op_id.filter(|_| full).map(|op_id| (op_id, ht))
    }

    /// That batch was written: its entry is the frontier now.
    pub(super) fn applied(
        &mut self,
        op_id: Option<OpId>,
        ht: HybridTime,
        entries: usize,
        data_bytes: usize,
    ) {
        self.written_bytes += cost_bytes(entries, data_bytes);
        if entries > 0 {
            self.oldest_write = Some(self.oldest_write.map_or(ht, |oldest| oldest.min(ht)));
        }
        if let Some(op_id) = op_id {
            self.frontier = Some((op_id, ht));
        }
    }

    /// A batch holding the frontier `(op_id, ht)` itself was written: a later flush must
    /// not put an older one over it.
    pub(super) fn written(&mut self, op_id: OpId, ht: HybridTime) {
        self.frontier = Some((op_id, ht));
    }

    /// A flush begins: the frontier to put into the memtable first, if any.
    pub(super) fn pending(&self) -> Option<(OpId, HybridTime)> {
        self.frontier
    }

    /// The flush that wrote `pending` succeeded: nothing newer is pending unless applied
    /// since, and counting starts again.
    pub(super) fn flushed(&mut self, pending: Option<(OpId, HybridTime)>) {
        if self.frontier == pending {
            self.frontier = None;
        }
        self.written_bytes = 0;
        self.oldest_write = None;
    }

    /// What the memtable holds since the last flush.
    pub(super) fn memstore(&self) -> Memstore {
        Memstore { bytes: self.written_bytes, oldest_write: self.oldest_write }
    }
}

/// What a batch costs the memtable, counted generously.
fn cost_bytes(entries: usize, data_bytes: usize) -> usize {
    data_bytes + entries * ENTRY_OVERHEAD_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(index: u64) -> Option<OpId> {
        Some(OpId::new(1, index))
    }

    /// Apply one batch as the engine does: ask, write, record.
    fn apply(u: &mut Unflushed, op_id: Option<OpId>, data_bytes: usize) -> bool {
        let ht = HybridTime::from_micros(5);
        let inline = u.inline(op_id, ht, 1, data_bytes).is_some();
        u.applied(op_id, ht, 1, data_bytes);
        inline
    }

    #[test]
    fn the_frontier_waits_for_the_flush_and_is_the_last_applied() {
        let mut unflushed = Unflushed::new(64 << 20);
        let ht = HybridTime::from_micros;
        unflushed.applied(op(1), ht(10), 2, 100);
        unflushed.applied(None, ht(11), 1, 10); // not from the log
        unflushed.applied(op(2), ht(12), 1, 10);
        let pending = unflushed.pending();
        assert_eq!(pending, Some((OpId::new(1, 2), ht(12))));
        assert_eq!(unflushed.pending(), pending, "kept until the flush succeeds");
        unflushed.flushed(pending);
        assert_eq!(unflushed.pending(), None, "written once");
    }

    #[test]
    fn a_frontier_is_only_what_was_written_and_only_cleared_once_flushed() {
        let mut unflushed = Unflushed::new(64 << 20);
        let ht = HybridTime::from_micros;
        unflushed.applied(op(3), ht(10), 1, 10);
        unflushed.written(OpId::new(2, 9), ht(20)); // a snapshot installed
        assert_eq!(unflushed.pending(), Some((OpId::new(2, 9), ht(20))));
        // Asking whether a batch must carry it changes nothing (the write may fail).
        assert_eq!(unflushed.inline(op(10), ht(30), 1, 10), None);
        assert_eq!(unflushed.pending(), Some((OpId::new(2, 9), ht(20))));
        // An entry applied while a flush ran stays pending after it.
        let pending = unflushed.pending();
        unflushed.applied(op(11), ht(31), 1, 10);
        unflushed.flushed(pending);
        assert_eq!(unflushed.pending(), Some((OpId::new(1, 11), ht(31))));
    }

    #[test]
    fn each_entry_costs_its_overhead_and_only_passing_half_the_memtable_counts() {
        let unflushed = Unflushed::new(2 << 10); // half: 1,024
        let ht = HybridTime::from_micros(5);
        // 10 entries of 384 data bytes in all: 384 + 10 * 64 = 1,024, not past half.
        assert_eq!(unflushed.inline(op(1), ht, 10, 384), None);
        assert_eq!(unflushed.inline(op(1), ht, 10, 385), Some((OpId::new(1, 1), ht)));
    }

    #[test]
    fn a_filling_memtable_puts_the_frontier_in_every_batch() {
        let mut unflushed = Unflushed::new(2 << 10); // half: 1 KiB
        let inline: Vec<bool> = (1..=8).map(|i| apply(&mut unflushed, op(i), 100)).collect();
        // 164 bytes a batch: the seventh passes 1,024.
        assert_eq!(inline, [false, false, false, false, false, false, true, true]);
        assert!(!apply(&mut unflushed, None, 100), "no entry, no frontier");
        unflushed.flushed(unflushed.pending());
        assert!(!apply(&mut unflushed, op(9), 100), "counting starts again after a flush");
    }
}
