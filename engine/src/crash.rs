//! Where an injected power cut fires: a leaf of the module graph, named by the error a
//! cut write returns, by the replica that fires it and by docscript.

/// A point in the write path where the simulator (or a script) can cut the power.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CrashStage {
    /// The entry is appended to the log but not synced.
    AfterAppend,
    /// The entry is durable, not yet applied.
    AfterSync,
    /// The entry is applied to the memtable, not yet acknowledged.
    AfterApply,
}

impl CrashStage {
    pub const ALL: [CrashStage; 3] =
        [CrashStage::AfterAppend, CrashStage::AfterSync, CrashStage::AfterApply];

    pub fn name(self) -> &'static str {
        match self {
            CrashStage::AfterAppend => "after-append",
            CrashStage::AfterSync => "after-sync",
            CrashStage::AfterApply => "after-apply",
        }
    }

    pub fn from_name(name: &str) -> Option<CrashStage> {
        CrashStage::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Where an injected crash cuts the power: at a stage of the next write, or after the
/// next flush (or compaction) is durable, before its log GC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CrashPoint {
    /// At this stage of the next write.
    Write(CrashStage),
    /// After the next flush is durable, before its log GC.
    AfterFlush,
    /// At a moment of a replicated peer's work (armed by the simulator, not by
    /// single-replica scripts).
    Peer(PeerCrash),
}

impl CrashPoint {
    /// The docscript name (`after-append`, ..., `after-flush`).
    pub fn name(self) -> &'static str {
        match self {
            CrashPoint::Write(stage) => stage.name(),
            CrashPoint::AfterFlush => "after-flush",
            CrashPoint::Peer(at) => at.name(),
        }
    }

    /// The point with this docscript name.
    pub fn from_name(name: &str) -> Option<CrashPoint> {
        match name {
            "after-flush" => Some(CrashPoint::AfterFlush),
            _ => CrashStage::from_name(name).map(CrashPoint::Write),
        }
    }
}

impl std::fmt::Display for CrashPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A moment in a replica's work where the simulator cuts its power: once a new entry is
/// appended (not synced), once it is synced (before the messages that needed it leave),
/// once entries are known committed (before they apply), once a committed entry is
/// applied, once messages were sent, or once a vote was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PeerCrash {
    AfterAppend,
    AfterSync,
    /// Entries known committed, not yet applied (nor their commit index persisted).
    AfterCommit,
    AfterApply,
    AfterSend,
    AfterVote,
    /// A snapshot's documents are durable, the log not yet restarted after it.
    AfterSnapshot,
}

impl PeerCrash {
    pub const ALL: [PeerCrash; 7] = [
        PeerCrash::AfterAppend,
        PeerCrash::AfterSync,
        PeerCrash::AfterCommit,
        PeerCrash::AfterApply,
        PeerCrash::AfterSend,
        PeerCrash::AfterVote,
        PeerCrash::AfterSnapshot,
    ];

    /// The docscript name (`after-append`, ...).
    pub fn name(self) -> &'static str {
        match self {
            PeerCrash::AfterAppend => "after-append",
            PeerCrash::AfterSync => "after-sync",
            PeerCrash::AfterCommit => "after-commit",
            PeerCrash::AfterApply => "after-apply",
            PeerCrash::AfterSend => "after-send",
            PeerCrash::AfterVote => "after-vote",
            PeerCrash::AfterSnapshot => "after-snapshot",
        }
    }

    /// The stage with this docscript name.
    pub fn from_name(name: &str) -> Option<PeerCrash> {
        PeerCrash::ALL.into_iter().find(|c| c.name() == name)
    }
}
