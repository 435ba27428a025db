//! The engine's errors, typed by what the caller must do about them.
//!
//! Every variant names one situation a caller can branch on; [`Error::kind`] gives the
//! variant as an [`ErrorKind`] (what the simulator compares with the model's expected
//! error, and what `expect error: <kind>` names in docscript). Display texts are the
//! `error: <message>` lines docscript prints. Invariant violations are not errors: they
//! are assertions. Text the node never sees (docscript lines, CQL statements, Redis
//! command lines) fails in its parser's own error type, with a line or column.

use crate::crash::CrashPoint;
use crate::encoding::{DocPath, Primitive};
use crate::hybrid_time::HybridTime;
use std::fmt;

pub use crate::decode_error::DecodeError;

/// A write below a primitive: the path written, the ancestor holding the primitive, and
/// the primitive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeConflict {
    /// The path the write was for.
    pub path: DocPath,
    /// Its ancestor that holds a primitive.
    pub ancestor: DocPath,
    /// The primitive found there: the first entry at or below `ancestor` (YugabyteDB's
    /// prefix seek, `doc_write.rs`).
    pub found: Primitive,
    /// Where that primitive is stored: `ancestor` itself or a descendant of it.
    pub found_at: DocPath,
}

/// Engine errors.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Stored bytes do not decode. `key` is the hex of the key involved, when known.
    /// Nothing was changed; the data needs repair.
    #[error("corruption: {error}{}", key_suffix(.key))]
    Corruption { error: DecodeError, key: Option<String> },
    /// The request does not fit the data or schema it names (unknown column, a value of
    /// the wrong type, a malformed key...). Nothing was written; fix the request.
    #[error("{0}")]
    InvalidRequest(String),
    /// A required-marker write below a path that holds a primitive, not an object.
    /// Nothing was written.
    #[error("{0}")]
    TypeConflict(Box<TypeConflict>),
    /// Redis: the key holds another kind of value. Nothing was written.
    #[error("WRONGTYPE Operation against a key holding the wrong kind of value")]
    WrongType,
    /// No CQL table of that name.
    #[error("unknown table {0}")]
    NoSuchTable(String),
    /// `CREATE TABLE` of a name that exists.
    #[error("table {0} already exists")]
    TableExists(String),
    /// A read below the history cutoff, whose data compaction may have removed: read at
    /// or above `cutoff_ht`.
    #[error("snapshot too old: read at {read_ht} is below the history cutoff {cutoff_ht}")]
    SnapshotTooOld { read_ht: HybridTime, cutoff_ht: HybridTime },
    /// A page of a long scan whose read point this replica no longer holds: the replica
    /// restarted since the scan began (the registry is in memory), or is not the one the
    /// scan registered on. The scan must start again at a new time.
    #[error(
        "read aborted: no read at {read_ht} is registered on this replica (it restarted, \
         or the scan began elsewhere)"
    )]
    ReadAborted { read_ht: HybridTime },
    /// An injected crash fired at this point (simulation): the node lost power and is
    /// down until it is restarted. A write cut here may or may not survive.
    #[error("crashed {0}")]
    Crashed(CrashPoint),
    /// The node (`cause: None`: after a crash) or a tablet (after the failure `cause`)
    /// refuses everything until it is restarted.
    #[error("{}", down_message(.cause))]
    Down { cause: Option<Box<Error>> },
    /// The disk is full: nothing was written. Free space, then retry.
    #[error("disk full writing {bytes} bytes to {file} ({capacity} bytes capacity)")]
    DiskFull { file: String, bytes: usize, capacity: u64 },
    /// An I/O operation on the disk failed; the tablet stops (fail-stop).
    #[error("{0}")]
    Io(String),
    /// The Raft log holds bytes that are neither a record nor a torn tail: the tablet
    /// refuses to start (rebuild it from a peer).
    #[error("log corruption in {segment} at byte {offset}: {reason}")]
    LogCorruption { segment: String, offset: usize, reason: String },
    /// The log does not hold the entries bootstrap needs above the flushed frontier.
    #[error("{0}")]
    ReplayGap(String),
    /// The compaction filter could not judge some entries; it kept them unchanged.
    #[error("compaction filter failed: {0}")]
    CompactionFilter(String),
    /// RocksDB failed.
    #[error("storage error: {0}")]
    Storage(String),
    /// RocksDB found one of its files damaged (a block checksum, a MANIFEST record, a
    /// `CURRENT` file, a file shorter than the MANIFEST says): the message names the
    /// tablet's directory and the file where RocksDB does. Nothing was read or written.
    #[error("corruption: {0}")]
    FileCorruption(String),
    /// The tablet's RocksDB holds no flushed frontier (0.0) while its log starts after
    /// entry `log_start`: RocksDB's files were lost, and serving what the log's tail
    /// replays would miss everything older (YugabyteDB #19449). Rebuild it from a peer.
    #[error(
        "{dir}: RocksDB holds no flushed frontier, but the log starts after entry \
         {log_start}: its files were lost; rebuild the tablet from a peer"
    )]
    LostRocksDb { dir: String, log_start: u64 },
    /// A write sent to a peer that does not lead its Raft group; `leader` is the one it
    /// knows of. Nothing was written: send it there.
    #[error("not the leader{}", leader_hint(.leader))]
    NotLeader { leader: Option<u64> },
    /// A leader's read above the hybrid-time lease a majority of its peers granted: it may
    /// no longer lead. Nothing was read; read at or below `lease_ht`, or at the leader.
    #[error("lease expired: read at {read_ht} is above the majority's lease {lease_ht}")]
    LeaseExpired { read_ht: HybridTime, lease_ht: HybridTime },
    /// A read above what this replica knows to be committed and applied (`safe_ht`;
    /// `None`: a new leader that has not applied its first entry). Retry later or lower.
    #[error("safe time behind: {}", safe_message(.read_ht, .safe_ht))]
    SafeTimeBehind { read_ht: Option<HybridTime>, safe_ht: Option<HybridTime> },
    /// The replica applied its own removal from the group: it serves nothing more.
    #[error("replica {id} was removed from the group")]
    Removed { id: u64 },
    /// The leader cannot take the write now (a new leader's first entry is not applied,
    /// a write it must wait for or a metadata change is in flight). Nothing was written:
    /// retry.
    #[error("try again: {0}")]
    TryAgain(String),
}

fn leader_hint(leader: &Option<u64>) -> String {
    leader.map(|id| format!(" (node {id} is)")).unwrap_or_default()
}

fn safe_message(read_ht: &Option<HybridTime>, safe_ht: &Option<HybridTime>) -> String {
    let read = read_ht.map_or("the read".to_owned(), |ht| format!("read at {ht}"));
    match safe_ht {
        Some(safe) => format!("{read} is above the replica's safe time {safe}"),
        None => format!("{read} waits for the new leader's first entry to apply"),
    }
}

fn key_suffix(key: &Option<String>) -> String {
    key.as_ref().map(|k| format!(" (key {k})")).unwrap_or_default()
}

fn down_message(cause: &Option<Box<Error>>) -> String {
    match cause {
        None => "the node is down after a crash; `restart` it".into(),
        Some(cause) => format!("tablet is down ({cause}); restart it"),
    }
}

/// The variant of an [`Error`], without its data: what callers and checkers compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorKind {
    /// Stored bytes do not decode.
    Corruption,
    /// The request does not fit the data or schema.
    InvalidRequest,
    /// A write below a primitive.
    TypeConflict,
    /// Redis WRONGTYPE.
    WrongType,
    /// No table of that name.
    NoSuchTable,
    /// A table of that name exists.
    TableExists,
    /// A read below the history cutoff.
    SnapshotTooOld,
    /// A long scan's read point is gone with its replica's restart: start again.
    ReadAborted,
    /// An injected crash fired.
    Crashed,
    /// The node or a tablet is down until restarted.
    Down,
    /// The disk is full.
    DiskFull,
    /// An I/O operation failed.
    Io,
    /// The Raft log is corrupt.
    LogCorruption,
    /// The log lacks entries bootstrap needs.
    ReplayGap,
    /// The compaction filter could not judge entries.
    CompactionFilter,
    /// RocksDB failed.
    Storage,
    /// RocksDB's files were lost.
    LostRocksDb,
    /// Not the leader.
    NotLeader,
    /// A leader read above its lease.
    LeaseExpired,
    /// A read above the replica's safe time.
    SafeTimeBehind,
    /// The replica left the group.
    Removed,
    /// The leader cannot take the write now.
    TryAgain,
}

impl ErrorKind {
    /// Every kind.
    pub const ALL: [ErrorKind; 22] = [
        ErrorKind::Corruption,
        ErrorKind::InvalidRequest,
        ErrorKind::TypeConflict,
        ErrorKind::WrongType,
        ErrorKind::NoSuchTable,
        ErrorKind::TableExists,
        ErrorKind::SnapshotTooOld,
        ErrorKind::ReadAborted,
        ErrorKind::Crashed,
        ErrorKind::Down,
        ErrorKind::DiskFull,
        ErrorKind::Io,
        ErrorKind::LogCorruption,
        ErrorKind::ReplayGap,
        ErrorKind::CompactionFilter,
        ErrorKind::Storage,
        ErrorKind::LostRocksDb,
        ErrorKind::NotLeader,
        ErrorKind::LeaseExpired,
        ErrorKind::SafeTimeBehind,
        ErrorKind::Removed,
        ErrorKind::TryAgain,
    ];

    /// Whether the kind is a replicated group's answer about who serves what and when
    /// (not the leader, a lease or safe time not there yet, a write to retry, a replica
    /// removed, down or cut off), not about the data: a client goes elsewhere or tries
    /// again, and no model of the data says anything of it.
    pub fn is_routing(self) -> bool {
        matches!(
            self,
            ErrorKind::NotLeader
                | ErrorKind::LeaseExpired
                | ErrorKind::SafeTimeBehind
                | ErrorKind::Removed
                | ErrorKind::TryAgain
                | ErrorKind::Down
                | ErrorKind::Crashed
        )
    }

    /// The snake_case name (`expect error: <name>` in docscript).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Corruption => "corruption",
            ErrorKind::InvalidRequest => "invalid_request",
            ErrorKind::TypeConflict => "type_conflict",
            ErrorKind::WrongType => "wrong_type",
            ErrorKind::NoSuchTable => "no_such_table",
            ErrorKind::TableExists => "table_exists",
            ErrorKind::SnapshotTooOld => "snapshot_too_old",
            ErrorKind::ReadAborted => "read_aborted",
            ErrorKind::Crashed => "crashed",
            ErrorKind::Down => "down",
            ErrorKind::DiskFull => "disk_full",
            ErrorKind::Io => "io",
            ErrorKind::LogCorruption => "log_corruption",
            ErrorKind::ReplayGap => "replay_gap",
            ErrorKind::CompactionFilter => "compaction_filter",
            ErrorKind::Storage => "storage",
            ErrorKind::LostRocksDb => "lost_rocksdb",
            ErrorKind::NotLeader => "not_leader",
            ErrorKind::LeaseExpired => "lease_expired",
            ErrorKind::SafeTimeBehind => "safe_time_behind",
            ErrorKind::Removed => "removed",
            ErrorKind::TryAgain => "try_again",
        }
    }

    /// The kind with this name.
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Error {
    /// What kind of error this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Corruption { .. } => ErrorKind::Corruption,
            Error::InvalidRequest(_) => ErrorKind::InvalidRequest,
            Error::TypeConflict(_) => ErrorKind::TypeConflict,
            Error::WrongType => ErrorKind::WrongType,
            Error::NoSuchTable(_) => ErrorKind::NoSuchTable,
            Error::TableExists(_) => ErrorKind::TableExists,
            Error::SnapshotTooOld { .. } => ErrorKind::SnapshotTooOld,
            Error::ReadAborted { .. } => ErrorKind::ReadAborted,
            Error::Crashed(_) => ErrorKind::Crashed,
            Error::Down { .. } => ErrorKind::Down,
            Error::DiskFull { .. } => ErrorKind::DiskFull,
            Error::Io(_) => ErrorKind::Io,
            Error::LogCorruption { .. } => ErrorKind::LogCorruption,
            Error::ReplayGap(_) => ErrorKind::ReplayGap,
            Error::CompactionFilter(_) => ErrorKind::CompactionFilter,
            Error::Storage(_) => ErrorKind::Storage,
            Error::FileCorruption(_) => ErrorKind::Corruption,
            Error::LostRocksDb { .. } => ErrorKind::LostRocksDb,
            Error::NotLeader { .. } => ErrorKind::NotLeader,
            Error::LeaseExpired { .. } => ErrorKind::LeaseExpired,
            Error::SafeTimeBehind { .. } => ErrorKind::SafeTimeBehind,
            Error::Removed { .. } => ErrorKind::Removed,
            Error::TryAgain(_) => ErrorKind::TryAgain,
        }
    }
}

impl From<DecodeError> for Error {
    fn from(error: DecodeError) -> Self {
        Error::Corruption { error, key: None }
    }
}

/// RocksDB's error as the engine's: corruption, a full disk and an I/O error by their
/// kinds (on the simulated disk a full disk's message is `simfs.rs`'s, which names the
/// file and sizes), anything else a storage error. Paths under a simulated disk's node
/// directory lose that prefix (`disk_names`): what remains is deterministic.
impl From<rocksdb::Error> for Error {
    fn from(e: rocksdb::Error) -> Self {
        Error::from_rocksdb_status(e.into_string())
    }
}

impl Error {
    /// A storage error of a RocksDB status text that the shim reports as a string (an
    /// iterator's): its node directories and file numbers taken out, as the `From`
    /// conversion does, its kind left a storage error.
    pub(crate) fn storage(status: String) -> Error {
        Error::Storage(disk_names(status))
    }

    /// A RocksDB status as its text (`Status::ToString`, what the C API and the shim
    /// report), classified by its code as the `From` conversion says.
    pub(crate) fn from_rocksdb_status(status: String) -> Error {
        let message = disk_names(status);
        if let Some(full) = disk_full(&message) {
            return full;
        }
        if message.starts_with("Corruption: ") {
            Error::FileCorruption(message)
        } else if message.starts_with("IO error: ") {
            Error::Io(message)
        } else {
            Error::Storage(message)
        }
    }
}

/// The node directories of the live simulated disks' RocksDB Envs (`simfs.rs`), each
/// with a trailing `/`.
static DISK_ROOTS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// A simulated disk's node directory (with its trailing `/`) now holds RocksDB files.
pub(crate) fn register_disk_root(root: &str) {
    DISK_ROOTS.lock().unwrap_or_else(|e| e.into_inner()).push(root.to_owned());
}

/// The directory registered with [`register_disk_root`] no longer does (once).
pub(crate) fn unregister_disk_root(root: &str) {
    let mut roots = DISK_ROOTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(at) = roots.iter().position(|r| r == root) {
        roots.remove(at);
    }
}

/// `message` (a RocksDB error's) with every registered node directory taken out of its
/// paths: `docs/000012.sst`, not `/tmp/docsim-41/node1/docs/000012.sst` (a temporary
/// directory differs from process to process; a trace must not).
fn disk_names(message: String) -> String {
    let roots = DISK_ROOTS.lock().unwrap_or_else(|e| e.into_inner());
    let message = roots.iter().fold(message, |m, root| m.replace(root.as_str(), ""));
    without_file_numbers(&message)
}

/// `message` with RocksDB's file numbers replaced by `N` (`docs/N.sst`,
/// `docs/MANIFEST-N`): RocksDB numbers its files itself, and an open it retries (its timer
/// registration can race another thread's close, `db/options.rs`) takes new numbers, so
/// they must not reach a trace.
pub fn without_file_numbers(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        let run = rest[start..].find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len() - start);
        let (before, digits, after) =
            (&rest[..start], &rest[start..start + run], &rest[start + run..]);
        let named = before.ends_with("MANIFEST-") || before.ends_with("OPTIONS-");
        let numbered = [".sst", ".log", ".blob", ".dbtmp"].iter().any(|x| after.starts_with(x));
        out.push_str(before);
        match digits.len() >= 6 && (named || numbered) {
            true => out.push('N'),
            false => out.push_str(digits),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The full disk `simfs.rs` reported (`<file>: disk full writing <n> bytes (<c> capacity)`)
/// in a RocksDB message.
fn disk_full(message: &str) -> Option<Error> {
    let (head, tail) = message.split_once(": disk full writing ")?;
    let file = head.rsplit(": ").next()?.to_owned();
    let (bytes, tail) = tail.split_once(" bytes (")?;
    let capacity = tail.split_once(" capacity)")?.0;
    Some(Error::DiskFull { file, bytes: bytes.parse().ok()?, capacity: capacity.parse().ok()? })
}

/// Engine result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `Err(Error::InvalidRequest(format!(...)))`.
macro_rules! errinput {
    ($($arg:tt)*) => { Err($crate::error::Error::InvalidRequest(format!($($arg)*))) };
}
pub(crate) use errinput;

impl std::fmt::Display for TypeConflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let TypeConflict { path, ancestor, found, found_at } = self;
        write!(f, "cannot write {path}: {ancestor} holds the primitive {found}")?;
        if found_at != ancestor {
            write!(f, " (its first entry, at {found_at})")?;
        }
        f.write_str(", not an object")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocksdb_file_numbers_never_reach_a_message() {
        let m = "IO error: writing docs/MANIFEST-000016 and t/000012.sst, key 1234567";
        let want = "IO error: writing docs/MANIFEST-N and t/N.sst, key 1234567";
        assert_eq!(without_file_numbers(m), want);
        assert_eq!(
            without_file_numbers("OPTIONS-000007 12.sst 0000012"),
            "OPTIONS-N 12.sst 0000012"
        );
    }

    #[test]
    fn kind_names_round_trip_and_are_distinct() {
        for kind in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_name(kind.name()), Some(kind));
            assert_eq!(kind.to_string(), kind.name(), "a kind displays as its name");
        }
        let mut names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ErrorKind::ALL.len());
    }

    #[test]
    fn down_says_whether_the_node_or_a_tablet_stopped() {
        let node = Error::Down { cause: None };
        assert_eq!(node.to_string(), "the node is down after a crash; `restart` it");
        let io = Error::Io("I/O error syncing log/1 (injected)".into());
        let tablet = Error::Down { cause: Some(Box::new(io)) };
        assert_eq!(tablet.kind(), ErrorKind::Down);
        assert_eq!(
            tablet.to_string(),
            "tablet is down (I/O error syncing log/1 (injected)); restart it"
        );
    }

    /// A replica's refusals say where to go: the leader it knows of, or that it knows
    /// none; the safe time, or that a new leader has not applied its first entry.
    #[test]
    fn replica_refusals_name_the_leader_and_the_safe_time() {
        let text = |e: Error| e.to_string();
        assert_eq!(text(Error::NotLeader { leader: Some(3) }), "not the leader (node 3 is)");
        assert_eq!(text(Error::NotLeader { leader: None }), "not the leader");
        let (read, safe) = (HybridTime::from_micros(20), HybridTime::from_micros(10));
        let behind = Error::SafeTimeBehind { read_ht: Some(read), safe_ht: Some(safe) };
        assert_eq!(
            text(behind),
            format!("safe time behind: read at {read} is above the replica's safe time {safe}")
        );
        let new_leader = Error::SafeTimeBehind { read_ht: None, safe_ht: None };
        assert_eq!(
            text(new_leader),
            "safe time behind: the read waits for the new leader's first entry to apply"
        );
    }
}
