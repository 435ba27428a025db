//! Reads that span time: the pages of a paged read, the read points of long scans, and
//! the history cutoff they hold back (`retention.rs` states the rule; this is where a
//! replica keeps its registry and asks it).
//!
//! A page of a paged SELECT is one request: its read point is registered for the call
//! (YugabyteDB's `ScopedReadOperation`), which in a call that returns before anything
//! else runs amounts to the check at registration: a read time below the highest cutoff
//! used is `snapshot_too_old` (the tablet's own check, `DocDb::check_read_time`, makes
//! the same one). Between pages only the retention interval protects the read time.
//! A long scan registers its read point once ([`Replica::hold_read`]) and keeps it until
//! it ends ([`Replica::release_read`]); its pages must find a read point at its time still
//! registered, or fail with `read_aborted` (the replica restarted: its registry is gone
//! with the process). Points are counted by time, as YugabyteDB's `active_readers_` are:
//! two scans at one time hold it together.

use super::Replica;
use crate::canary::Plant;
use crate::error::{Error, Result};
use crate::hybrid_time::HybridTime;
use crate::retention::{effective_cutoff, Cutoff, HeldBy};
use crate::tablet::{Reply, Request};

impl Replica {
    /// A page of a paged read (`Request::Page`) at `read_ht`, the time its first page
    /// read at; with `held`, a long scan's page: its read point must be registered here.
    pub fn read_page(
        &mut self,
        request: &Request,
        read_ht: HybridTime,
        now_us: u64,
        held: bool,
    ) -> Result<Reply> {
        self.check_up()?;
        if held && !self.readers.holds(read_ht) {
            return Err(Error::ReadAborted { read_ht });
        }
        let next_page = matches!(request, Request::Page(_, paging) if paging.after.is_some());
        if next_page && self.options.plants.contains(Plant::PageFreshReadTime) {
            let now = self.now_ht(now_us); // the paging state's time forgotten
            return self.read(request, now, now_us);
        }
        self.read(request, read_ht, now_us)
    }

    /// Register a long scan's read point at `read_ht` until [`Replica::release_read`]
    /// (`TabletRetentionPolicy::RegisterReaderTimestamp`): refused below the highest
    /// history cutoff used.
    pub fn hold_read(&mut self, read_ht: HybridTime) -> Result<()> {
        self.check_up()?;
        let cutoff = self.history_cutoff();
        self.readers
            .register(read_ht, cutoff)
            .map_err(|cutoff_ht| Error::SnapshotTooOld { read_ht, cutoff_ht })
    }

    /// A long scan at `read_ht` ended: its read point no longer holds the cutoff back.
    pub fn release_read(&mut self, read_ht: HybridTime) {
        self.readers.unregister(read_ht);
    }

    /// How many read points are registered here.
    pub fn read_points(&self) -> usize {
        self.readers.len()
    }

    /// The history cutoff a compaction at `now` (the tablet server's hybrid time) takes,
    /// with a retention interval of `interval_us`: the lower of now less the interval
    /// and the oldest registered read point
    /// (`TabletRetentionPolicy::GetRetentionDirective`), and never above this replica's
    /// safe time (docsim's rule, `retention.rs`).
    pub fn retention_cutoff(&self, now: HybridTime, interval_us: u64) -> Cutoff {
        let plants = self.options.plants;
        let cutoff = effective_cutoff(now, interval_us, self.readers.oldest(), plants);
        let safe = self.safe_time();
        let cutoff = match safe < cutoff.ht && !plants.contains(Plant::CutoffIgnoresSafeTime) {
            true => Cutoff { ht: safe, held_by: HeldBy::SafeTime, ..cutoff },
            false => cutoff,
        };
        match self.tablet.kept_since().filter(|_| !plants.contains(Plant::CutoffIgnoresSnapshots)) {
            Some(kept) if kept < cutoff.ht => {
                Cutoff { ht: kept, held_by: HeldBy::Snapshot, ..cutoff }
            }
            _ => cutoff,
        }
    }
}
