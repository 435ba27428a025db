//! Coverage probes: named counters at rare paths, so a campaign report can say which
//! corners a run reached and which none did. Counted per thread (a simulated run owns its
//! thread); compaction-filter counts are handed back to the caller's thread after each
//! compaction.

use std::cell::RefCell;
use std::collections::BTreeMap;

/// Every probe, by name, in sorted order (a probe is checked by binary search).
pub const KNOWN: [&str; 49] = [
    "backup.exported",
    "backup.imported",
    "disk.write_failed_tablet_down",
    "gc.compaction.full",
    "gc.compaction.minor",
    "gc.dropped",
    "gc.folded_into_packed_rows",
    "gc.kept_above_cutoff",
    "gc.kept_expired",
    "gc.repacked_rows",
    "gc.rewritten_as_tombstone",
    "log.corruption_refused",
    "log.gc_removed_segment",
    "log.segment_skipped",
    "log.torn_tail_truncated",
    "node.memory_flush",
    "page.read",
    "page.read_aborted",
    "page.read_point_held",
    "page.snapshot_too_old",
    "raft.entry_replayed",
    "raft.restart_nothing_to_replay",
    "read.born_after_expiry",
    "read.expired_hides_older",
    "read.packed_row",
    "read.snapshot_too_old",
    "read.table_tombstone",
    "restore.applied",
    "restore.from_backup",
    "restore.from_live_data",
    "restore.from_snapshot",
    "restore.refused",
    "retention.cutoff_held_by_read",
    "rocksdb.compaction_cut_durable",
    "rocksdb.compaction_cut_lost",
    "rocksdb.corruption_reported",
    "rocksdb.flush_cut_durable",
    "rocksdb.flush_cut_lost",
    "rocksdb.lost_files_refused",
    "rocksdb.write_failed_tablet_down",
    "snapshot.taken",
    "write.del_missing_skipped",
    "write.marker_seek",
    "write.marker_seek_descendant",
    "write.marker_seek_expired",
    "write.marker_seek_overwritten",
    "write.marker_seek_through_ttl_only",
    "write.packed_row",
    "write.required_marker",
];

thread_local! {
    static COUNTS: RefCell<BTreeMap<&'static str, u64>> = const { RefCell::new(BTreeMap::new()) };
}

/// Count one hit of `name` on this thread.
pub fn hit(name: &'static str) {
    add(name, 1);
}

/// Count `n` hits of `name` on this thread.
pub(crate) fn add(name: &'static str, n: u64) {
    if n > 0 {
        COUNTS.with(|c| *c.borrow_mut().entry(name).or_default() += n);
    }
}

/// This thread's counts since the last `take`, resetting them. Every name counted must
/// be a known probe (checked here rather than at every hit, which reads run often).
pub fn take() -> BTreeMap<String, u64> {
    let counts = COUNTS.with(|c| std::mem::take(&mut *c.borrow_mut()));
    let unknown = counts.keys().find(|name| KNOWN.binary_search(name).is_err());
    assert!(unknown.is_none(), "unknown probe {unknown:?}");
    counts.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_known_probes_are_sorted_and_distinct() {
        assert!(super::KNOWN.windows(2).all(|w| w[0] < w[1]), "{:?}", super::KNOWN);
    }

    /// A misspelt probe is found when the counts are taken, known ones pass.
    #[test]
    fn taking_counts_refuses_an_unknown_probe() {
        super::hit("read.packed_row");
        assert_eq!(super::take().get("read.packed_row"), Some(&1));
        super::hit("read.packed_rows");
        let taken = std::panic::catch_unwind(super::take);
        let message = *taken.expect_err("an unknown probe").downcast::<String>().expect("text");
        assert_eq!(message, "unknown probe Some(\"read.packed_rows\")");
    }
}
