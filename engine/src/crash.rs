//! Where an injected power cut fires: a leaf of the module graph, named by the error a cut
//! write returns, by the replica that fires it and by docscript. One set of points for
//! every group size: a group of one passes the same points in one call (append, sync,
//! commit, apply), where a bigger group passes them as messages come and go.

/// A moment in a replica's (or its node's) work where the power can be cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CrashPoint {
    /// New entries are appended to the log, not synced.
    AfterAppend,
    /// They are durable; the messages that needed them have not left.
    AfterSync,
    /// Entries are known committed, not applied (nor their commit index persisted).
    AfterCommit,
    /// Committed entries are applied, not acknowledged.
    AfterApply,
    /// Messages were sent.
    AfterSend,
    /// A vote was sent.
    AfterVote,
    /// A snapshot's documents are durable, the log not yet restarted after it.
    AfterSnapshot,
    /// The node's next flush (or compaction) is durable, its log GC not done.
    AfterFlush,
}

impl CrashPoint {
    pub const ALL: [CrashPoint; 8] = [
        CrashPoint::AfterAppend,
        CrashPoint::AfterSync,
        CrashPoint::AfterCommit,
        CrashPoint::AfterApply,
        CrashPoint::AfterSend,
        CrashPoint::AfterVote,
        CrashPoint::AfterSnapshot,
        CrashPoint::AfterFlush,
    ];

    /// The points a replica passes inside a write (the others: a node's flush, messages,
    /// snapshots).
    pub const IN_WRITE: [CrashPoint; 4] = [
        CrashPoint::AfterAppend,
        CrashPoint::AfterSync,
        CrashPoint::AfterCommit,
        CrashPoint::AfterApply,
    ];

    /// The docscript name (`after-append`, ...).
    pub fn name(self) -> &'static str {
        match self {
            CrashPoint::AfterAppend => "after-append",
            CrashPoint::AfterSync => "after-sync",
            CrashPoint::AfterCommit => "after-commit",
            CrashPoint::AfterApply => "after-apply",
            CrashPoint::AfterSend => "after-send",
            CrashPoint::AfterVote => "after-vote",
            CrashPoint::AfterSnapshot => "after-snapshot",
            CrashPoint::AfterFlush => "after-flush",
        }
    }

    /// The point with this docscript name.
    pub fn from_name(name: &str) -> Option<CrashPoint> {
        CrashPoint::ALL.into_iter().find(|c| c.name() == name)
    }
}

impl std::fmt::Display for CrashPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
