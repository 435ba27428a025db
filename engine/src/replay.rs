//! Which log entries bootstrap re-applies: a pure decision, tested apart from the log and
//! RocksDB.
//!
//! The flushed frontier F is the op id of the last entry whose data is in RocksDB's
//! persisted tier (it is written in the same RocksDB write batch as that entry's data, so
//! it is flushed exactly with it; see `db/frontier.rs`). Bootstrap re-applies exactly the committed
//! entries above F, in order: `F.index < index <= commit`. An entry at or below F is never
//! re-applied (its data is durable; applying it twice would be harmless for idempotent
//! puts, but a count that disagrees hides bugs). The entries it needs must all be in the
//! log: a missing one means log GC went past the frontier, and bootstrap fails loudly
//! instead of silently losing acknowledged writes.

use crate::ids::OpId;
use std::ops::Range;

/// The positions in `entries` to re-apply. `prev` is the op id before `entries[0]` (what
/// the oldest segment read starts after), `frontier` the flushed frontier, `commit_index`
/// the last committed index.
pub fn plan_replay(
    prev: OpId,
    entries: &[OpId],
    frontier: OpId,
    commit_index: u64,
) -> Result<Range<usize>, String> {
    let last_index = entries.last().map_or(prev.index, |e| e.index);
    if frontier.index > last_index {
        // Applied entries are synced first, so the log always reaches the frontier.
        return Err(format!(
            "the flushed frontier {frontier} is beyond the end of the log (index {last_index}): \
             the log lost entries that were applied"
        ));
    }
    let commit_index = commit_index.min(last_index);
    let first_needed = frontier.index + 1;
    // Checked even when nothing is to be replayed: entries above the frontier the log no
    // longer holds may have committed since the commit index was last made durable (and
    // raft-rs refuses a commit index below where its log starts).
    if prev.index + 1 > first_needed {
        return Err(format!(
            "the log starts after {prev} but bootstrap needs entries from index {first_needed} \
             (flushed frontier {frontier}): log GC removed entries that were not flushed"
        ));
    }
    if first_needed > commit_index {
        return Ok(entries.len()..entries.len());
    }
    let position = |index: u64| (index - prev.index - 1) as usize;
    for (i, op) in entries.iter().enumerate() {
        assert_eq!(op.index, prev.index + 1 + i as u64, "the log reader resolves gaps");
    }
    Ok(position(first_needed)..position(commit_index) + 1)
}

/// docsim's rule: whether bootstrap must finish a snapshot install. It must when the
/// flushed state is a snapshot's (`installed`, the op id the last install wrote, is the
/// flushed frontier: no write or configuration change flushed since) and the log does
/// not hold the frontier's entry (the log was not restarted after the snapshot before a
/// crash). Any other log
/// that does not reach the frontier lost applied entries: [`plan_replay`] refuses it.
pub fn must_finish_install(
    prev: OpId,
    entries: &[OpId],
    frontier: OpId,
    installed: Option<OpId>,
) -> bool {
    installed == Some(frontier) && frontier != prev && !entries.contains(&frontier)
}

/// The bound below which log GC may remove whole segments: nothing at or above the
/// flushed frontier's successor, nor above the last committed op, is ever removed.
pub fn log_gc_bound(flushed: OpId, committed: OpId) -> u64 {
    flushed.index.min(committed.index) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(indexes: std::ops::RangeInclusive<u64>) -> Vec<OpId> {
        indexes.map(|i| OpId::new(1, i)).collect()
    }

    #[test]
    fn replays_exactly_the_committed_entries_above_the_frontier() {
        let entries = ops(1..=10);
        let none = OpId::default();
        assert_eq!(plan_replay(none, &entries, none, 10), Ok(0..10), "nothing flushed");
        assert_eq!(plan_replay(none, &entries, OpId::new(1, 10), 10), Ok(10..10), "all flushed");
        assert_eq!(plan_replay(none, &entries, OpId::new(1, 4), 10), Ok(4..10), "the tail");
        assert_eq!(plan_replay(none, &entries, OpId::new(1, 4), 7), Ok(4..7), "uncommitted");
    }

    #[test]
    fn only_an_unfinished_snapshot_install_restarts_the_log_at_boot() {
        let (installed, frontier) = (Some(OpId::new(3, 40)), OpId::new(3, 40));
        let none = OpId::default();
        assert!(must_finish_install(none, &ops(1..=12), frontier, installed), "log too short");
        let other_term: Vec<OpId> = (1..=45).map(|i| OpId::new(2, i)).collect();
        assert!(must_finish_install(none, &other_term, frontier, installed), "another history");
        let held: Vec<OpId> = (38..=41).map(|i| OpId::new(3, i)).collect();
        assert!(!must_finish_install(OpId::new(3, 37), &held, frontier, installed), "restarted");
        assert!(!must_finish_install(frontier, &[], frontier, installed), "restarted, empty");
        // Entries applied since the snapshot: the log is the truth, and a log that does
        // not reach the frontier lost applied entries (plan_replay refuses it).
        let later = OpId::new(3, 50);
        assert!(!must_finish_install(none, &ops(1..=12), later, installed));
        assert!(!must_finish_install(none, &ops(1..=12), frontier, None), "never installed");
    }

    #[test]
    fn segments_skipped_below_the_frontier_are_not_needed() {
        let entries = ops(6..=9);
        assert_eq!(plan_replay(OpId::new(1, 5), &entries, OpId::new(1, 5), 9), Ok(0..4));
        assert_eq!(plan_replay(OpId::new(1, 5), &entries, OpId::new(1, 7), 9), Ok(2..4));
    }

    #[test]
    fn a_log_missing_entries_above_the_frontier_is_an_error() {
        let entries = ops(6..=9);
        let err = plan_replay(OpId::new(1, 5), &entries, OpId::new(1, 3), 9).unwrap_err();
        assert_eq!(
            err,
            "the log starts after 1.5 but bootstrap needs entries from index 4 (flushed \
             frontier 1.3): log GC removed entries that were not flushed"
        );
        // At the boundary: exactly one entry missing, the first one needed.
        let err = plan_replay(OpId::new(1, 5), &entries, OpId::new(1, 4), 9).unwrap_err();
        assert_eq!(
            err,
            "the log starts after 1.5 but bootstrap needs entries from index 5 (flushed \
             frontier 1.4): log GC removed entries that were not flushed"
        );
        // Even with nothing known committed above the frontier: the missing entries may
        // have committed since the commit index was last made durable.
        let none_committed = plan_replay(OpId::new(1, 5), &entries, OpId::new(1, 3), 3);
        let first = plan_replay(OpId::new(1, 5), &entries, OpId::new(1, 3), 9);
        assert_eq!(none_committed.unwrap_err(), first.unwrap_err());
    }

    #[test]
    fn a_log_that_ends_before_the_frontier_lost_applied_entries() {
        let err = plan_replay(OpId::default(), &ops(1..=4), OpId::new(1, 6), 4).unwrap_err();
        assert_eq!(
            err,
            "the flushed frontier 1.6 is beyond the end of the log (index 4): the log lost \
             entries that were applied"
        );
    }

    #[test]
    fn gc_keeps_the_first_entry_above_the_frontier_and_the_last_committed() {
        assert_eq!(log_gc_bound(OpId::new(1, 4), OpId::new(1, 9)), 5);
        assert_eq!(log_gc_bound(OpId::new(1, 9), OpId::new(1, 7)), 8);
    }
}
