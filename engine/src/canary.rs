//! Planted bugs, for testing the tester: each is off unless switched on at run time, and
//! the simulator must catch every one (`docsim torture --plant NAME`). A planted bug lives
//! exactly where the real mistake would: one condition at one site.

use std::cell::Cell;

/// A plantable bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Plant {
    /// A TTL'd value stays visible one microsecond past `write + ttl` (reader).
    TtlOffByOne,
    /// Visibility compares hybrid times only, ignoring write ids (reader).
    WriteIdIgnored,
    /// A read exactly at the history cutoff is refused (the cutoff made exclusive).
    ExclusiveCutoff,
    /// A child without its own TTL does not inherit its parent's (reader).
    ParentTtlNotInherited,
    /// Required-marker writes forget the `{}` markers of missing ancestors.
    MissingInitMarker,
    /// Compaction drops overwritten versions even above the history cutoff.
    GcIgnoresCutoff,
    /// Bootstrap takes the last applied op as the flushed frontier: it believes data in
    /// the lost memtables was durable (the frontier advanced before the data was).
    FrontierBeforeDurable,
    /// Bootstrap re-applies the frontier entry itself (replay starts one entry early).
    ReplayOneEarly,
    /// Bootstrap skips the first entry above the frontier (replay starts one entry late).
    ReplayOneLate,
    /// Log GC goes by the last committed op alone, past the flushed frontier.
    LogGcPastFrontier,
    /// A write is acknowledged after the log append, before the sync.
    AckBeforeSync,
}

impl Plant {
    /// Every plantable bug.
    pub const ALL: [Plant; 11] = [
        Plant::TtlOffByOne,
        Plant::WriteIdIgnored,
        Plant::ExclusiveCutoff,
        Plant::ParentTtlNotInherited,
        Plant::MissingInitMarker,
        Plant::GcIgnoresCutoff,
        Plant::FrontierBeforeDurable,
        Plant::ReplayOneEarly,
        Plant::ReplayOneLate,
        Plant::LogGcPastFrontier,
        Plant::AckBeforeSync,
    ];

    /// Whether only crashes can reveal the bug (torture must enable them to catch it).
    pub fn needs_crashes(self) -> bool {
        matches!(
            self,
            Plant::FrontierBeforeDurable
                | Plant::ReplayOneEarly
                | Plant::ReplayOneLate
                | Plant::LogGcPastFrontier
                | Plant::AckBeforeSync
        )
    }

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Plant::TtlOffByOne => "ttl-off-by-one",
            Plant::WriteIdIgnored => "write-id-ignored",
            Plant::ExclusiveCutoff => "exclusive-cutoff",
            Plant::ParentTtlNotInherited => "parent-ttl-not-inherited",
            Plant::MissingInitMarker => "missing-init-marker",
            Plant::GcIgnoresCutoff => "gc-ignores-cutoff",
            Plant::FrontierBeforeDurable => "frontier-before-durable",
            Plant::ReplayOneEarly => "replay-one-early",
            Plant::ReplayOneLate => "replay-one-late",
            Plant::LogGcPastFrontier => "log-gc-past-frontier",
            Plant::AckBeforeSync => "ack-before-sync",
        }
    }

    /// The bug with this command-line name.
    pub fn from_name(name: &str) -> Option<Plant> {
        Plant::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// A set of planted bugs (placeholder until the plumbing lands).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Plants(u32);

impl Plants {
    /// No bug planted.
    pub const NONE: Plants = Plants(0);

    /// `plant` alone, or none.
    pub fn of(plant: Option<Plant>) -> Plants {
        Plants(plant.map_or(0, |p| 1 << p as u32))
    }

    /// Whether `plant` is in the set.
    pub fn contains(self, plant: Plant) -> bool {
        self.0 & (1 << plant as u32) != 0
    }

    /// Switch this set on for the calling thread (bridge until the set is passed down).
    pub(crate) fn install(self) {
        PLANTED.with(|p| p.set(self.0));
    }
}

thread_local! {
    /// Per thread, so that runs on different threads (torture workers, parallel tests)
    /// never see each other's bugs. Code on RocksDB's own threads gets the switch passed in
    /// (see `GcParams::ignore_cutoff_bug`).
    static PLANTED: Cell<u32> = const { Cell::new(0) };
}

/// Switch the planted bugs for this thread: `None` switches all off.
pub fn plant(bug: Option<Plant>) {
    PLANTED.with(|p| p.set(bug.map_or(0, |b| 1 << b as u32)));
}

/// Whether `bug` is planted on this thread.
pub(crate) fn planted(bug: Plant) -> bool {
    PLANTED.with(|p| p.get() & (1 << bug as u32) != 0)
}
