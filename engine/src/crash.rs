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
    /// Inside the node's next flush, right after the `k`-th mutating operation RocksDB
    /// (or the engine) makes on the disk (`disk::OpKind`: creating, appending to or
    /// syncing an SST file, a MANIFEST edit, a directory sync...). A flush with fewer
    /// operations ends first: the cut falls after it, before its log GC.
    InFlush(u32),
    /// The same inside the node's next compaction (its own flush first, then RocksDB's
    /// compaction: output files, the MANIFEST edit, the inputs' deletion).
    InCompaction(u32),
    /// The same inside the next snapshot a replica of the node takes (its flush, the
    /// checkpoint's links and files, its record, the renames and directory syncs); a
    /// snapshot with fewer operations ends first: the cut falls after it, before the
    /// entry is acknowledged.
    InSnapshot(u32),
    /// The same inside the next restore a replica of the node makes (`db/restore.rs`:
    /// the staged copy's links or checkpoint, its deletions and flush, the renames, the
    /// swap); a restore with fewer operations ends first.
    InRestore(u32),
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
            CrashPoint::InFlush(_) => "in-flush",
            CrashPoint::InCompaction(_) => "in-compaction",
            CrashPoint::InSnapshot(_) => "in-snapshot",
            CrashPoint::InRestore(_) => "in-restore",
        }
    }

    /// The `k` of a point inside a flush or a compaction.
    pub fn op(self) -> Option<u32> {
        match self {
            CrashPoint::InFlush(k)
            | CrashPoint::InCompaction(k)
            | CrashPoint::InSnapshot(k)
            | CrashPoint::InRestore(k) => Some(k),
            _ => None,
        }
    }

    /// Whether the point lies inside the node's flushes or compactions (the node, not a
    /// replica, fires it).
    pub fn in_job(self) -> bool {
        matches!(
            self,
            CrashPoint::InFlush(_) | CrashPoint::InCompaction(_) | CrashPoint::AfterFlush
        )
    }

    /// The point with this docscript name (`op`: the `k` of `in-flush op=<k>`, which
    /// only the points inside a job take, and need).
    pub fn from_name(name: &str, op: Option<u32>) -> Option<CrashPoint> {
        match (name, op) {
            ("in-flush", Some(k)) => Some(CrashPoint::InFlush(k)),
            ("in-compaction", Some(k)) => Some(CrashPoint::InCompaction(k)),
            ("in-snapshot", Some(k)) => Some(CrashPoint::InSnapshot(k)),
            ("in-restore", Some(k)) => Some(CrashPoint::InRestore(k)),
            (_, Some(_)) => None,
            (_, None) => CrashPoint::ALL.into_iter().find(|c| c.name() == name),
        }
    }

    /// The names of every point, as docscript spells them.
    pub fn names() -> Vec<&'static str> {
        let mut names: Vec<&str> = CrashPoint::ALL.iter().map(|c| c.name()).collect();
        names.extend(["in-flush op=<k>", "in-compaction op=<k>", "in-snapshot op=<k>"]);
        names.push("in-restore op=<k>");
        names
    }
}

impl std::fmt::Display for CrashPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())?;
        match self.op() {
            Some(k) => write!(f, " op={k}"),
            None => Ok(()),
        }
    }
}
