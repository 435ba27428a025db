//! History retention: the history cutoff a compaction of one tablet replica may use, and
//! the read points that hold it back (YugabyteDB's `TabletRetentionPolicy`,
//! `tablet/tablet_retention_policy.cc`).
//!
//! A compaction may collect every version a read at or above its cutoff cannot see. The
//! cutoff is the lowest of three times (`SanitizeHistoryCutoff`):
//!
//! - `now - retention interval` (`ClockBasedHistoryCutoff`; the interval is YugabyteDB's
//!   `timestamp_history_retention_interval_sec`, 900 s by default): between the pages of
//!   a paged read, nothing else protects its read time;
//! - the oldest read point registered by a request in flight (`active_readers_`, which
//!   `ScopedReadOperation` registers for the request's life): a long scan keeps every
//!   version it may still need;
//! - what snapshot schedules need kept (`allowed_history_cutoff_provider_`; the master's
//!   `MasterSnapshotCoordinator::AllowedHistoryCutoffProvider`: the time of each
//!   schedule's last snapshot). docsim has no schedule objects: every snapshot counts as
//!   a schedule's, and the term is the tablet's `kept_since` (`Tablet::kept_since`),
//!   moved by the snapshot and restore entries themselves, so every replica holds the
//!   same one (docsim's rule).
//!
//! docsim adds a fourth term, its own rule: the replica's **safe time** (the time no entry
//! it has yet to apply can be at or below). A follower behind its leader (or whose clock
//! runs ahead of the leader's) would otherwise collect, at a cutoff past entries still on
//! their way, versions those entries depend on: an expired parent whose TTL a child in
//! flight inherits is dropped, and the child then reads as alive (seed 90889, three
//! replicas, a 213 µs interval). `tablet_retention_policy.cc` has no such term; with its
//! 900 s default the hazard needs a follower 900 s behind. The plant
//! `cutoff-ignores-safe-time` is that rule.
//!
//! A read point below the cutoff already used is refused when it registers
//! (`RegisterReaderTimestamp`: `SnapshotTooOld`). Each replica computes its own cutoff
//! from its node's hybrid clock and its own readers (YugabyteDB's default:
//! `HistoryCutoffOperation`, the leader's cutoff replicated through Raft, is off unless
//! `enable_history_cutoff_propagation` is set). A follower's cutoff therefore never
//! passes a read point registered on it, nor (docsim's rule above) its safe time.
//!
//! The registry lives in memory, as YugabyteDB's does: a restart forgets it (the requests
//! it stood for died with the process). The cutoff a compaction used is kept with the
//! data (`db.rs`), so reads below it stay refused after a restart.

use crate::canary::{Plant, Plants};
use crate::hybrid_time::HybridTime;
use std::collections::BTreeMap;

/// YugabyteDB's default retention interval (`timestamp_history_retention_interval_sec`).
pub const DEFAULT_INTERVAL_US: u64 = 900 * 1_000_000;

/// Which term of the minimum decided a cutoff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeldBy {
    /// `now - retention interval`.
    Retention,
    /// A registered read point, older than that.
    Read,
    /// The replica's safe time, older still (docsim's rule, below).
    SafeTime,
    /// The time since which the tablet keeps its history for restores (its newest
    /// snapshot's or restore's).
    Snapshot,
}

/// Where a compaction's history cutoff comes from: the command
/// (`compact cutoff=<T>`), or each tablet's retention policy at physical time `now_us`
/// (`compact [@T]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutoffBy {
    Given(HybridTime),
    Policy { now_us: u64 },
}

/// A history cutoff, what decided it, and the clock reading it was computed at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cutoff {
    pub ht: HybridTime,
    pub held_by: HeldBy,
    /// The tablet server's hybrid time it was decided at (docsim: the latest of the
    /// node's replicas' clocks).
    pub now: HybridTime,
}

/// The cutoff of a compaction at `now`: the lower of `now - interval_us` and the oldest
/// registered read point (`EffectiveHistoryCutoff`). The two plants are the mistakes each
/// term invites: forgetting the readers, or the interval.
pub fn effective_cutoff(
    now: HybridTime,
    interval_us: u64,
    oldest_read: Option<HybridTime>,
    plants: Plants,
) -> Cutoff {
    let interval_us = match plants.contains(Plant::CutoffIgnoresRetention) {
        true => 0,
        false => interval_us,
    };
    let by_clock = match now.physical_us().checked_sub(interval_us) {
        Some(us) => HybridTime::new(us, now.logical()),
        None => HybridTime::MIN,
    };
    let oldest_read = oldest_read.filter(|_| !plants.contains(Plant::CutoffIgnoresReads));
    match oldest_read {
        Some(read) if read < by_clock => Cutoff { ht: read, held_by: HeldBy::Read, now },
        _ => Cutoff { ht: by_clock, held_by: HeldBy::Retention, now },
    }
}

/// One replica's registered read points (a multiset: two requests may read at one time).
#[derive(Clone, Debug, Default)]
pub struct Readers {
    points: BTreeMap<HybridTime, usize>,
}

impl Readers {
    /// Register a read at `read_ht`, unless it lies below `cutoff` (the highest cutoff a
    /// compaction used): then it is `Err(cutoff)`, a snapshot too old.
    pub fn register(&mut self, read_ht: HybridTime, cutoff: HybridTime) -> Result<(), HybridTime> {
        if read_ht < cutoff {
            return Err(cutoff);
        }
        *self.points.entry(read_ht).or_default() += 1;
        Ok(())
    }

    /// Whether a read at `read_ht` is registered.
    pub fn holds(&self, read_ht: HybridTime) -> bool {
        self.points.contains_key(&read_ht)
    }

    /// Unregister one read at `read_ht` (none registered: nothing happens).
    pub fn unregister(&mut self, read_ht: HybridTime) {
        if let Some(count) = self.points.get_mut(&read_ht) {
            *count -= 1;
            if *count == 0 {
                self.points.remove(&read_ht);
            }
        }
    }

    /// The oldest registered read point.
    pub fn oldest(&self) -> Option<HybridTime> {
        self.points.keys().next().copied()
    }

    /// How many reads are registered.
    pub fn len(&self) -> usize {
        self.points.values().sum()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ht(us: u64) -> HybridTime {
        HybridTime::from_micros(us)
    }

    #[test]
    fn the_cutoff_is_the_lower_of_the_clock_term_and_the_oldest_read() {
        let none = Plants::NONE;
        let by_clock = Cutoff { ht: ht(700), held_by: HeldBy::Retention, now: ht(1000) };
        assert_eq!(effective_cutoff(ht(1000), 300, None, none), by_clock);
        assert_eq!(effective_cutoff(ht(1000), 300, Some(ht(900)), none), by_clock);
        let held = Cutoff { ht: ht(650), held_by: HeldBy::Read, now: ht(1000) };
        assert_eq!(effective_cutoff(ht(1000), 300, Some(ht(650)), none), held);
        // An interval longer than the clock: nothing is collected.
        assert_eq!(effective_cutoff(ht(100), 300, None, none).ht, HybridTime::MIN);
    }

    #[test]
    fn each_plant_drops_its_term() {
        let reads = Plants::of(Some(Plant::CutoffIgnoresReads));
        assert_eq!(effective_cutoff(ht(1000), 300, Some(ht(650)), reads).ht, ht(700));
        let retention = Plants::of(Some(Plant::CutoffIgnoresRetention));
        assert_eq!(effective_cutoff(ht(1000), 300, None, retention).ht, ht(1000));
    }

    #[test]
    fn a_read_below_the_cutoff_does_not_register_and_reads_count_as_a_multiset() {
        let mut readers = Readers::default();
        assert_eq!(readers.register(ht(5), ht(10)), Err(ht(10)));
        assert!(readers.is_empty());
        // At the cutoff itself: allowed (the cutoff is inclusive).
        readers.register(ht(10), ht(10)).unwrap();
        readers.register(ht(10), ht(10)).unwrap();
        readers.register(ht(20), ht(10)).unwrap();
        assert_eq!((readers.len(), readers.oldest()), (3, Some(ht(10))));
        readers.unregister(ht(10));
        assert_eq!(readers.oldest(), Some(ht(10)));
        readers.unregister(ht(10));
        assert_eq!(readers.oldest(), Some(ht(20)));
        readers.unregister(ht(99));
        assert!(readers.holds(ht(20)) && readers.len() == 1);
    }
}
