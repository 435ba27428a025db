//! What a check found: one typed failure for every check of every replica count. The
//! kind is the failure's fingerprint — what the shrinker keeps while it shrinks, what
//! reports group by — and the message says the rest.

/// Which check failed.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum FailureKind {
    /// A document read differs from the model.
    Get,
    /// A CQL SELECT differs.
    Select,
    /// A Redis reply differs (to a read, or to a write).
    Redis,
    /// A write (or a flush, compaction or crash arm) failed in the engine but not in the
    /// model.
    RefusedWrite,
    /// A write succeeded in the engine but the model refuses it.
    AcceptedWrite,
    /// A read at or above a compaction's cutoff changed after it.
    ChangedByCompaction,
    /// A full compaction left an entry no read at or above its cutoff can need.
    GcIncomplete,
    /// Log GC left a segment that the flushed frontier frees.
    LogGcIncomplete,
    /// A restart failed, or reported a frontier or replay other than the book's.
    Restart,
    /// Two replicas applied different entries at one index (Raft's state machine safety).
    TwoHistories,
    /// Hybrid times went back along a committed log.
    TimeWentBack,
    /// A committed entry is no client's proposal, or not at the time it was proposed at.
    UnknownEntry,
    /// An acknowledged write is not in the committed log.
    AckedWriteLost,
    /// Two leaders handed out one op id in one term.
    TwoLeaders,
    /// The group did not converge within the liveness phase: no single leader, entries
    /// not applied everywhere, or replicas reading differently.
    NoConvergence,
    /// A replica failed where it must not (refused a message, a read or a restart).
    ReplicaFailed,
    /// The engine (or the harness) panicked: a failed seed, not a dead campaign.
    Panic,
    /// A statement reached a tablet whose hash range does not hold its key, by the
    /// model's own statement of the hash and of the table's split.
    Misrouted,
    /// The memstore limit flushed another tablet than the one holding the oldest write,
    /// or a tablet kept more log than the limit allows.
    MemoryFlush,
    /// A compaction's history cutoff passed a read point a long scan registered, or lies
    /// above now less the retention interval (`retention.rs`'s rule, restated).
    Retention,
    /// A replica's snapshot is missing, names another entry, or holds other rows than the
    /// model did when its entry committed.
    Snapshot,
    /// A table's snapshot exported as a backup and imported into a fresh node reads other
    /// rows than the model's copy of the table restored to it (`check/backup.rs`).
    Backup,
}

impl FailureKind {
    /// Every kind.
    pub const ALL: [FailureKind; 22] = [
        FailureKind::Get,
        FailureKind::Select,
        FailureKind::Redis,
        FailureKind::RefusedWrite,
        FailureKind::AcceptedWrite,
        FailureKind::ChangedByCompaction,
        FailureKind::GcIncomplete,
        FailureKind::LogGcIncomplete,
        FailureKind::Restart,
        FailureKind::TwoHistories,
        FailureKind::TimeWentBack,
        FailureKind::UnknownEntry,
        FailureKind::AckedWriteLost,
        FailureKind::TwoLeaders,
        FailureKind::NoConvergence,
        FailureKind::ReplicaFailed,
        FailureKind::Panic,
        FailureKind::Misrouted,
        FailureKind::MemoryFlush,
        FailureKind::Retention,
        FailureKind::Snapshot,
        FailureKind::Backup,
    ];

    /// The kind's name in reports and reproducers (snake_case).
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::Get => "get",
            FailureKind::Select => "select",
            FailureKind::Redis => "redis",
            FailureKind::RefusedWrite => "refused_write",
            FailureKind::AcceptedWrite => "accepted_write",
            FailureKind::ChangedByCompaction => "changed_by_compaction",
            FailureKind::GcIncomplete => "gc_incomplete",
            FailureKind::LogGcIncomplete => "log_gc_incomplete",
            FailureKind::Restart => "restart",
            FailureKind::TwoHistories => "two_histories",
            FailureKind::TimeWentBack => "time_went_back",
            FailureKind::UnknownEntry => "unknown_entry",
            FailureKind::AckedWriteLost => "acked_write_lost",
            FailureKind::TwoLeaders => "two_leaders",
            FailureKind::NoConvergence => "no_convergence",
            FailureKind::ReplicaFailed => "replica_failed",
            FailureKind::Panic => "panic",
            FailureKind::Misrouted => "misrouted",
            FailureKind::MemoryFlush => "memory_flush",
            FailureKind::Retention => "retention",
            FailureKind::Snapshot => "snapshot",
            FailureKind::Backup => "backup",
        }
    }

    /// The kind with this name.
    pub fn from_name(name: &str) -> Option<FailureKind> {
        FailureKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A check that failed: its kind and what it found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broken {
    pub kind: FailureKind,
    pub message: String,
}

impl Broken {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Broken {
        Broken { kind, message: message.into() }
    }
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_named_once_and_parse_back() {
        let mut names: Vec<&str> = FailureKind::ALL.iter().map(|k| k.name()).collect();
        for kind in FailureKind::ALL {
            assert_eq!(FailureKind::from_name(kind.name()), Some(kind));
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FailureKind::ALL.len());
    }
}
