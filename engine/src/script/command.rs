//! docscript commands, one per line: the contract's, docsim's extensions
//! (`docs/docscript-extensions.md`), and the commands of a replicated script (a script
//! whose first command is a `cluster` header). A script without a header is a group of
//! one. Each command parses with line/column errors (`script/parse.rs`) and prints back
//! as the same text (reproducers and traces are docscript).
//!
//! Routing options (replicated scripts; in a group of one they name node 1 or nothing):
//! a write takes ` to=<i>` (the replica it is sent to; default: the one that claims to
//! lead) and ` nowait`; a read ` from=<i>`; a node's own command (`flush`, `compact`,
//! `crash`, `fault`, `restart`, `disarm`, `dump`, `files`, `log`) ` node=<i>` (default:
//! every node for `flush` and `compact`, node 1 otherwise). A write may omit its `@T`
//! (the leader's clock gives the time), and a read may read `@now`, `@now+<dur>` (the
//! replica's clock) or `@safe` (its safe time).

use crate::crash::CrashPoint;
use crate::db::Layout;
use crate::disk::{IoTarget, SimDisk};
use crate::doc_write::{DocWrite, MarkerMode, WriteKind};
use crate::encoding::DocPath;
use crate::error::Error;
use crate::hybrid_time::HybridTime;
use crate::notation::format_duration_us;
use std::fmt;

/// Which `dump`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpStyle {
    /// Column ids as `col(N)`.
    Plain,
    /// Declared column names.
    Names,
    /// With the hex of each key and value.
    Raw,
}

/// When a read reads (or, `Ht` only, when a write writes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// `@T`: this hybrid time.
    Ht(HybridTime),
    /// `@now` / `@now+<dur>`: the replica's clock now, plus `ahead_us`.
    Now { ahead_us: u64 },
    /// `@safe`: the replica's safe time.
    Safe,
}

/// Where a request goes: the replica it is sent to or read from (`to=<i>`, `from=<i>`;
/// `None`: the one that claims to lead), and for a write whether the script waits for its
/// answer (` nowait`: it goes on at once).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Route {
    pub node: Option<u64>,
    pub nowait: bool,
}

/// A replicated script's first line: `cluster replicas=<n> seed=<s> [loss=<p>%]
/// [max-skew=<dur>]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Replicas per tablet: 1, 3 or 5.
    pub replicas: usize,
    /// The seed of madsim's network (message delays and loss).
    pub seed: u64,
    /// Percent of messages the network drops.
    pub loss_percent: u32,
    /// The clock-skew bound (it sets how long a restarted replica stays quiet).
    pub max_skew_us: u64,
}

/// One membership change (`conf ...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfChange {
    AddLearner(u64),
    AddVoter(u64),
    Remove(u64),
    /// Remove the first, add the second as a voter: one joint change.
    Replace(u64, u64),
}

/// One docscript command.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// `cluster replicas=<n> seed=<s> ...`: the group (first command only).
    Header(Header),
    /// `markers optional|required`.
    Markers(MarkerMode),
    /// `layout packed|entity|declared|unpacked` (docsim extension): how the CQL tables
    /// declared after it store their rows.
    Layout(Layout),
    /// `memstore <bytes>[KiB|MiB]` / `memstore off` (docsim extension): every node's
    /// server-wide memstore limit (`Node`'s memory flushes).
    Memstore(Option<usize>),
    /// A document write (`set`, `extend`, `obj`, `del`).
    Write {
        write: DocWrite,
        ht: Option<HybridTime>,
        route: Route,
    },
    /// `batch @T { ...; ... }`: one write batch.
    Batch {
        ht: Option<HybridTime>,
        writes: Vec<DocWrite>,
        route: Route,
    },
    /// `default_ttl <dur>` (microseconds) or `default_ttl none`, and (docsim extension) the
    /// time the metadata change takes, `@T` (else the tablet's clock gives it).
    DefaultTtl {
        ttl_us: Option<u64>,
        ht: Option<HybridTime>,
    },
    /// `get <path> @T [table=<name>]`: from the document tablet, or a CQL table's.
    Get {
        path: DocPath,
        at: At,
        table: Option<String>,
        from: Option<u64>,
    },
    /// `dump`, `dump names`, `dump raw`.
    Dump {
        style: DumpStyle,
        node: Option<u64>,
    },
    /// `flush`.
    Flush {
        node: Option<u64>,
    },
    /// `compact [minor] cutoff=T`, or (docsim extension) `compact minor
    /// files=<first>..<last> cutoff=T [table=<name>]`: a minor compaction of that run of one
    /// tablet's SST files, numbered oldest first from 0 as `files` prints them.
    Compact {
        cutoff: HybridTime,
        minor: bool,
        run: Option<FileRun>,
        node: Option<u64>,
    },
    /// `compact [minor] [files=<a>..<b> [table=<name>]] [@T]` (docsim extension): flush,
    /// then compact every tablet (or that run of one tablet's files) with
    /// the history cutoff its retention policy gives at `T` (the node's hybrid time, at
    /// least `T`): the lowest of it less the retention interval, the oldest read point a
    /// long scan registered and the replica's safe time. Prints the document tablet's
    /// cutoff, then each table's lowest where it differs.
    Retained {
        minor: bool,
        run: Option<FileRun>,
        at: Option<HybridTime>,
        node: Option<u64>,
    },
    /// `retention <dur>` (docsim extension): the retention interval of the node's
    /// compactions by policy from now on (YugabyteDB's
    /// `timestamp_history_retention_interval_sec`; default 900 s).
    Retention {
        interval_us: u64,
        node: Option<u64>,
    },
    /// `snapshot create|delete <id> <table> [to=<i>]` (docsim extension): a snapshot of
    /// every tablet of the table taken, or deleted, by a Raft entry of each.
    SnapshotWrite {
        op: crate::tablet::SnapshotOp,
        table: String,
        ht: Option<HybridTime>,
        route: Route,
    },
    /// `restore <snapshot> <table> [@T] [to=<i>]`, `restore <table> to <T> [@T] [to=<i>]`
    /// (docsim extension): every tablet of the table restored, by a Raft entry of each,
    /// to the snapshot or to the time `T` (`db/restore.rs`).
    Restore {
        target: crate::tablet::RestoreTarget,
        table: String,
        ht: Option<HybridTime>,
        route: Route,
    },
    /// `backup export|import|damage ...` (docsim extension): a table's snapshot
    /// exported to the run's backup store, imported as a new table, or a backup's file
    /// damaged (`crate::backup`).
    Backup(BackupOp),
    /// `snapshot list [node=<i>]` (docsim extension): one line per snapshot of each
    /// tablet on the node.
    SnapshotList {
        node: Option<u64>,
    },
    /// `snapshot select <id> [@T] [node=<i>] <SELECT>` (docsim extension): a SELECT of
    /// the snapshot's tablets, at its own hybrid time (or `T`).
    SnapshotSelect {
        id: String,
        at: Option<HybridTime>,
        node: Option<u64>,
        statement: String,
    },
    /// `files` (docsim extension): one line per SST file of each tablet.
    Files {
        node: Option<u64>,
    },
    /// `stats` (docsim extension): one line per tablet, what its reads skipped and read.
    Stats {
        node: Option<u64>,
    },
    /// `crash [torn[=<k>]]` (power loss now), or `crash at <point> [torn[=<k>]]` (docsim
    /// extension: at that point of the next write, or after the next flush).
    Crash {
        at: Option<CrashPoint>,
        tear: Option<u32>,
        node: Option<u64>,
    },
    /// `disarm` (docsim extension): cancel a power cut armed and not reached.
    Disarm {
        node: Option<u64>,
    },
    /// `fault ...` (docsim extension): a disk fault, injected exactly.
    Fault {
        fault: FaultCommand,
        node: Option<u64>,
    },
    /// `restart`.
    Restart {
        node: Option<u64>,
    },
    /// `log` (docsim extension): one line per Raft log segment of each tablet.
    Log {
        node: Option<u64>,
    },
    /// `table <CREATE TABLE ...>`.
    Table(String),
    /// `cql @T <statement>`.
    Cql {
        at: Option<At>,
        statement: String,
        route: Route,
    },
    /// `cql [@T] page=<n> [after=<key>] [hold] <SELECT>` (docsim extension): a page of a
    /// paged read. The paging state is the read time (`@T`) and the last row's key.
    Page {
        at: Option<At>,
        paging: PageOptions,
        statement: String,
        route: Route,
    },
    /// `redis @T <command>`.
    Redis {
        at: Option<At>,
        command: String,
        route: Route,
    },
    /// `expect <line>` (docsim extension).
    Expect(String),
    /// `partition 1,2 | 3 [| 4,5]`: every link between two groups cut.
    Partition(Vec<Vec<u64>>),
    /// `cut 1-3,2-3`: these links cut, both ways.
    Cut(Vec<(u64, u64)>),
    /// `heal`: every link restored.
    Heal,
    /// `skew node=<i> [-]<dur>`: a replica's clock offset from true simulated time.
    Skew(u64, i64),
    /// `slow node=<i> <dur>`: a replica's log syncs take this long (0: as fast as the rest).
    Slow(u64, u64),
    /// `wait <dur>`: simulated time passes.
    Wait(u64),
    /// `conf add-learner <i> | add-voter <i> | remove <i> | replace <i> with <j> [to=<i>]
    /// [tablet=<table>]`: a membership change of the document tablet's group, or a table's.
    Conf {
        change: ConfChange,
        to: Option<u64>,
        table: Option<String>,
    },
    /// `leader`, `status`: what the script prints of the groups.
    Leader,
    Status,
    /// `converge`: faults stop, the network heals, every node runs; the groups must agree.
    Converge,
}

/// A run of SST files by age, `files=<first>..<last>`, of one tablet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRun {
    /// The oldest and the newest file of the run (inclusive).
    pub first: usize,
    pub last: usize,
    /// The CQL table whose tablet it is (`None`: the document tablet).
    pub table: Option<String>,
}

/// A docscript `fault` command: one disk fault, exact so that reproducers replay it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultCommand {
    /// `fault io-error <target>`: the next append (or sync) of a Raft log file, of an SST
    /// file, or of a MANIFEST, fails with an I/O error, once ([`IoTarget`]).
    IoError(IoTarget),
    /// `fault disk-full <bytes>`: the disk holds only `bytes` more than it holds now.
    DiskFull { free_bytes: u64 },
    /// `fault clear`: disarm an I/O error not yet fired and lift the disk's capacity.
    Clear,
    /// `fault flip <file> <offset> bit=<b>`: flip one bit of a file's synced data (a
    /// Raft log file's, or one of RocksDB's).
    Flip { file: String, offset: usize, bit: u8 },
    /// `fault lose-rocksdb <dir>`: every RocksDB file of the tablet in disk directory
    /// `dir` is gone for good, its Raft log kept (a lost or reformatted data volume).
    LoseRocksDb { dir: String },
}

/// A page's options: its size, where it starts, whether it is a long scan's.
#[derive(Clone, Debug, PartialEq)]
pub struct PageOptions {
    /// At most this many rows.
    pub size: usize,
    /// The rows after this key (the previous page's last).
    pub after: Option<crate::encoding::DocKey>,
    /// A long scan: its read point stays registered from its first page to its last.
    pub hold: bool,
}

/// What a `backup` command does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackupOp {
    /// `backup export <name> <snapshot> <table> [node=<i>]`: snapshot `snapshot` of every
    /// tablet of the table, as node `i` (else the first that runs) holds it, written to
    /// the backup store as backup `name`.
    Export { name: String, snapshot: String, table: String, node: Option<u64> },
    /// `backup import <name> [as <table>]`: every file checked, the table created anew
    /// (under its own name, or `table`), the checkpoints placed on every replica as a
    /// snapshot, and every tablet restored from it by a Raft entry.
    Import { name: String, table: Option<String> },
    /// `backup damage <name> <file>`: one byte of the backup's file flipped (a test's
    /// fault: the store's files are real files).
    Damage { name: String, file: String },
}

impl Command {
    /// Whether only the simulator's executor runs the command (`docsim script`): paged
    /// reads and compactions by retention policy.
    pub fn needs_simulator(&self) -> bool {
        matches!(
            self,
            Command::Page { .. }
                | Command::Retained { .. }
                | Command::Retention { .. }
                | Command::SnapshotWrite { .. }
                | Command::Restore { .. }
                | Command::SnapshotList { .. }
                | Command::SnapshotSelect { .. }
                | Command::Backup(_)
        )
    }

    /// Whether the command needs a replicated group (the simulator's executor): a
    /// network command, or a node other than node 1.
    pub fn is_replicated(&self) -> bool {
        let beyond_one = |node: &Option<u64>| node.is_some_and(|n| n != 1);
        match self {
            Command::Header(h) => h.replicas > 1,
            Command::Partition(_)
            | Command::Cut(_)
            | Command::Heal
            | Command::Skew(..)
            | Command::Slow(..)
            | Command::Wait(_)
            | Command::Conf { .. }
            | Command::Leader
            | Command::Status
            | Command::Converge => true,
            Command::Write { route, .. }
            | Command::Batch { route, .. }
            | Command::Cql { route, .. }
            | Command::Page { route, .. }
            | Command::SnapshotWrite { route, .. }
            | Command::Restore { route, .. }
            | Command::Redis { route, .. } => beyond_one(&route.node) || route.nowait,
            Command::SnapshotList { node }
            | Command::SnapshotSelect { node, .. }
            | Command::Backup(BackupOp::Export { node, .. }) => beyond_one(node),
            Command::Backup(_) => false,
            Command::Get { from, .. } => beyond_one(from),
            Command::Dump { node, .. }
            | Command::Flush { node }
            | Command::Compact { node, .. }
            | Command::Retained { node, .. }
            | Command::Retention { node, .. }
            | Command::Files { node }
            | Command::Stats { node }
            | Command::Crash { node, .. }
            | Command::Disarm { node }
            | Command::Fault { node, .. }
            | Command::Restart { node }
            | Command::Log { node } => beyond_one(node),
            Command::Markers(_)
            | Command::Layout(_)
            | Command::Memstore(_)
            | Command::DefaultTtl { .. }
            | Command::Table(_)
            | Command::Expect(_) => false,
        }
    }
}

impl FaultCommand {
    /// Inject the fault into `disk`.
    pub fn inject(&self, disk: &SimDisk) -> Result<(), Error> {
        match self {
            FaultCommand::IoError(target) => disk.arm_io_error(*target),
            FaultCommand::DiskFull { free_bytes } => disk.set_free_bytes(Some(*free_bytes)),
            FaultCommand::Clear => disk.clear_faults(),
            FaultCommand::Flip { file, offset, bit } => {
                let named = disk.resolve(file);
                let file =
                    named.ok_or_else(|| Error::Io(format!("cannot flip {file}: no such file")))?;
                disk.flip(&file, *offset, *bit)?
            }
            FaultCommand::LoseRocksDb { dir } => disk.lose_files(dir)?,
        }
        Ok(())
    }
}

impl fmt::Display for FaultCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultCommand::IoError(target) => write!(f, "io-error {}", target.name()),
            FaultCommand::LoseRocksDb { dir } => write!(f, "lose-rocksdb {dir}"),
            FaultCommand::DiskFull { free_bytes } => write!(f, "disk-full {free_bytes}"),
            FaultCommand::Clear => f.write_str("clear"),
            FaultCommand::Flip { file, offset, bit } => write!(f, "flip {file} {offset} bit={bit}"),
        }
    }
}

impl fmt::Display for DocWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            WriteKind::Set(doc) => write!(f, "set {} = {doc}", self.path),
            WriteKind::Extend(doc) => write!(f, "extend {} = {doc}", self.path),
            WriteKind::Obj => write!(f, "obj {}", self.path),
            WriteKind::Del => write!(f, "del {}", self.path),
            // Only Redis EXPIRE writes one; docscript has no command for it.
            WriteKind::TtlOnly { .. } => write!(f, "ttl-only {}", self.path),
        }
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Ht(ht) => write!(f, "@{ht}"),
            At::Now { ahead_us: 0 } => f.write_str("@now"),
            At::Now { ahead_us } => write!(f, "@now+{}", format_duration_us(*ahead_us)),
            At::Safe => f.write_str("@safe"),
        }
    }
}

impl fmt::Display for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cluster replicas={} seed={}", self.replicas, self.seed)?;
        if self.loss_percent > 0 {
            write!(f, " loss={}%", self.loss_percent)?;
        }
        if self.max_skew_us > 0 {
            write!(f, " max-skew={}", format_duration_us(self.max_skew_us))?;
        }
        Ok(())
    }
}

impl fmt::Display for ConfChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfChange::AddLearner(id) => write!(f, "add-learner {id}"),
            ConfChange::AddVoter(id) => write!(f, "add-voter {id}"),
            ConfChange::Remove(id) => write!(f, "remove {id}"),
            ConfChange::Replace(out, into) => write!(f, "replace {out} with {into}"),
        }
    }
}

impl ConfChange {
    /// The replicas the change names.
    pub fn nodes(self) -> Vec<u64> {
        match self {
            ConfChange::AddLearner(id) | ConfChange::AddVoter(id) | ConfChange::Remove(id) => {
                vec![id]
            }
            ConfChange::Replace(out, into) => vec![out, into],
        }
    }

    /// The change as Raft membership changes.
    pub fn changes(self) -> Vec<crate::replica::Membership> {
        use crate::replica::Membership;
        match self {
            ConfChange::AddLearner(id) => vec![Membership::AddLearner(id)],
            ConfChange::AddVoter(id) => vec![Membership::AddVoter(id)],
            ConfChange::Remove(id) => vec![Membership::Remove(id)],
            ConfChange::Replace(out, into) => {
                vec![Membership::AddVoter(into), Membership::Remove(out)]
            }
        }
    }
}

/// `{ <write>; <write> }`.
fn write_batch_body(f: &mut fmt::Formatter<'_>, writes: &[DocWrite]) -> fmt::Result {
    f.write_str("{ ")?;
    for (i, w) in writes.iter().enumerate() {
        if i > 0 {
            f.write_str("; ")?;
        }
        write!(f, "{w}")?;
        write_ttl(f, w.ttl_us)?;
    }
    f.write_str(" }")
}

fn write_ttl(f: &mut fmt::Formatter<'_>, ttl_us: Option<u64>) -> fmt::Result {
    match ttl_us {
        Some(us) => write!(f, " ttl={}", format_duration_us(us)),
        None => Ok(()),
    }
}

fn write_ht(f: &mut fmt::Formatter<'_>, ht: &Option<HybridTime>) -> fmt::Result {
    match ht {
        Some(ht) => write!(f, " @{ht}"),
        None => Ok(()),
    }
}

fn write_route(f: &mut fmt::Formatter<'_>, word: &str, route: &Route) -> fmt::Result {
    if let Some(node) = route.node {
        write!(f, " {word}={node}")?;
    }
    if route.nowait {
        f.write_str(" nowait")?;
    }
    Ok(())
}

fn write_node(f: &mut fmt::Formatter<'_>, node: &Option<u64>) -> fmt::Result {
    match node {
        Some(node) => write!(f, " node={node}"),
        None => Ok(()),
    }
}

/// Whether a CQL or Redis text reads (its route prints as `from=`, else `to=`).
fn reads(word: &str, text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or_default().to_ascii_lowercase();
    match word {
        "cql" => first == "select",
        _ => matches!(first.as_str(), "get" | "hget" | "hgetall" | "smembers"),
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::Header(header) => write!(f, "{header}"),
            Command::Markers(_) | Command::Layout(_) | Command::Memstore(_) => {
                write_setting(f, self)
            }
            Command::Write { write, ht, route } => {
                write!(f, "{write}")?;
                write_ht(f, ht)?;
                write_ttl(f, write.ttl_us)?;
                write_route(f, "to", route)
            }
            Command::Batch { ht, writes, route } => {
                f.write_str("batch")?;
                write_ht(f, ht)?;
                f.write_str(" ")?;
                write_batch_body(f, writes)?;
                write_route(f, "to", route)
            }
            Command::DefaultTtl { ttl_us, ht } => {
                match ttl_us {
                    None => f.write_str("default_ttl none")?,
                    Some(us) => write!(f, "default_ttl {}", format_duration_us(*us))?,
                }
                write_ht(f, ht)
            }
            Command::Get { path, at, table, from } => {
                write!(f, "get {path} {at}")?;
                if let Some(t) = table {
                    write!(f, " table={t}")?;
                }
                write_route(f, "from", &Route { node: *from, nowait: false })
            }
            Command::Dump { .. }
            | Command::Flush { .. }
            | Command::Compact { .. }
            | Command::Retained { .. }
            | Command::Retention { .. }
            | Command::Files { .. }
            | Command::Stats { .. }
            | Command::Crash { .. }
            | Command::Disarm { .. }
            | Command::Fault { .. }
            | Command::Restart { .. }
            | Command::Log { .. } => write_node_command(f, self),
            Command::Table(stmt) => write!(f, "table {stmt}"),
            Command::Cql { at, statement, route } => {
                write_statement(f, "cql", at, statement, route)
            }
            Command::Page { at, paging, statement, route } => {
                write_page(f, at.as_ref(), paging, route)?;
                write!(f, " {statement}")
            }
            Command::Redis { at, command, route } => {
                write_statement(f, "redis", at, command, route)
            }
            Command::Expect(line) => write!(f, "expect {line}"),
            Command::SnapshotWrite { .. }
            | Command::Restore { .. }
            | Command::SnapshotList { .. }
            | Command::SnapshotSelect { .. } => write_snapshot_command(f, self),
            Command::Backup(op) => write!(f, "{op}"),
            _ => super::parse::write_replicated(f, self),
        }
    }
}

impl fmt::Display for BackupOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackupOp::Export { name, snapshot, table, node } => {
                write!(f, "backup export {name} {snapshot} {table}")?;
                match node {
                    Some(i) => write!(f, " node={i}"),
                    None => Ok(()),
                }
            }
            BackupOp::Import { name, table: None } => write!(f, "backup import {name}"),
            BackupOp::Import { name, table: Some(t) } => write!(f, "backup import {name} as {t}"),
            BackupOp::Damage { name, file } => write!(f, "backup damage {name} {file}"),
        }
    }
}

/// `snapshot create|delete|list|select ...`.
fn write_snapshot_command(f: &mut fmt::Formatter<'_>, command: &Command) -> fmt::Result {
    use crate::tablet::{RestoreTarget, SnapshotOp};
    match command {
        Command::SnapshotWrite { op, table, ht, route } => {
            match op {
                SnapshotOp::Create(id) => write!(f, "snapshot create {id} {table}")?,
                SnapshotOp::Delete(id) => write!(f, "snapshot delete {id} {table}")?,
            }
            write_ht(f, ht)?;
            write_route(f, "to", route)
        }
        Command::Restore { target, table, ht, route } => {
            match target {
                RestoreTarget::Snapshot(id) => write!(f, "restore {id} {table}")?,
                RestoreTarget::Time(to) => write!(f, "restore {table} to {to}")?,
                // Not a line of its own: `backup import` issues it (printed for debugging).
                RestoreTarget::Imported(id) => write!(f, "restore imported={id} {table}")?,
            }
            write_ht(f, ht)?;
            write_route(f, "to", route)
        }
        Command::SnapshotList { node } => {
            f.write_str("snapshot list")?;
            write_node(f, node)
        }
        Command::SnapshotSelect { id, at, node, statement } => {
            write!(f, "snapshot select {id}")?;
            write_ht(f, at)?;
            write_node(f, node)?;
            write!(f, " {statement}")
        }
        other => unreachable!("not a snapshot command: {other:?}"),
    }
}

/// A setting: `markers ...`, `layout ...`, `memstore ...`.
fn write_setting(f: &mut fmt::Formatter<'_>, command: &Command) -> fmt::Result {
    match command {
        Command::Markers(MarkerMode::Optional) => f.write_str("markers optional"),
        Command::Markers(MarkerMode::Required) => f.write_str("markers required"),
        Command::Layout(Layout::Packed) => f.write_str("layout packed"),
        Command::Layout(Layout::Declared) => f.write_str("layout declared"),
        Command::Layout(Layout::Unpacked) => f.write_str("layout unpacked"),
        Command::Layout(Layout::Entity) => f.write_str("layout entity"),
        Command::Memstore(None) => f.write_str("memstore off"),
        Command::Memstore(Some(bytes)) => write!(f, "memstore {}", format_bytes(*bytes)),
        other => unreachable!("not a setting: {other:?}"),
    }
}

/// `cql|redis [@T] [to=<i>|from=<i>] [nowait] <text>`.
fn write_statement(
    f: &mut fmt::Formatter<'_>,
    word: &str,
    at: &Option<At>,
    text: &str,
    route: &Route,
) -> fmt::Result {
    f.write_str(word)?;
    if let Some(at) = at {
        write!(f, " {at}")?;
    }
    write_route(f, if reads(word, text) { "from" } else { "to" }, route)?;
    write!(f, " {text}")
}

/// A page's command up to its statement: `cql [@T] page=<n> [after=<key>] [hold]
/// [from=<i>]`.
fn write_page(
    f: &mut fmt::Formatter<'_>,
    at: Option<&At>,
    paging: &PageOptions,
    route: &Route,
) -> fmt::Result {
    f.write_str("cql")?;
    if let Some(at) = at {
        write!(f, " {at}")?;
    }
    write!(f, " page={}", paging.size)?;
    if let Some(after) = &paging.after {
        write!(f, " after={after}")?;
    }
    if paging.hold {
        f.write_str(" hold")?;
    }
    write_route(f, "from", route)
}

/// `compact [minor] [files=<a>..<b> [table=<name>]] [@T]`, `retention <dur>`.
fn write_retention_command(f: &mut fmt::Formatter<'_>, command: &Command) -> fmt::Result {
    match command {
        Command::Retained { minor, run, at, node } => {
            f.write_str(if *minor { "compact minor" } else { "compact" })?;
            if let Some(run) = run {
                write!(f, " files={}..{}", run.first, run.last)?;
                if let Some(table) = &run.table {
                    write!(f, " table={table}")?;
                }
            }
            write_ht(f, at)?;
            write_node(f, node)
        }
        Command::Retention { interval_us, node } => {
            write!(f, "retention {}", format_duration_us(*interval_us))?;
            write_node(f, node)
        }
        other => unreachable!("not a retention command: {other:?}"),
    }
}

/// A node's own command (`flush`, `compact`, `crash`, ... with `node=<i>`).
fn write_node_command(f: &mut fmt::Formatter<'_>, command: &Command) -> fmt::Result {
    match command {
        Command::Dump { style, node } => {
            f.write_str(match style {
                DumpStyle::Plain => "dump",
                DumpStyle::Names => "dump names",
                DumpStyle::Raw => "dump raw",
            })?;
            write_node(f, node)
        }
        Command::Flush { node } => {
            f.write_str("flush")?;
            write_node(f, node)
        }
        Command::Compact { cutoff, minor, run, node } => {
            f.write_str("compact")?;
            if *minor {
                f.write_str(" minor")?;
            }
            if let Some(run) = run {
                write!(f, " files={}..{}", run.first, run.last)?;
            }
            write!(f, " cutoff={cutoff}")?;
            if let Some(table) = run.as_ref().and_then(|r| r.table.as_ref()) {
                write!(f, " table={table}")?;
            }
            write_node(f, node)
        }
        Command::Retained { .. } | Command::Retention { .. } => write_retention_command(f, command),
        Command::Files { node } => {
            f.write_str("files")?;
            write_node(f, node)
        }
        Command::Stats { node } => {
            f.write_str("stats")?;
            write_node(f, node)
        }
        Command::Crash { at, tear, node } => {
            f.write_str("crash")?;
            write_node(f, node)?;
            if let Some(point) = at {
                write!(f, " at {point}")?;
            }
            match tear {
                None => Ok(()),
                Some(0) => f.write_str(" torn"),
                Some(k) => write!(f, " torn={k}"),
            }
        }
        Command::Disarm { node } => {
            f.write_str("disarm")?;
            write_node(f, node)
        }
        Command::Fault { fault, node } => {
            f.write_str("fault")?;
            write_node(f, node)?;
            write!(f, " {fault}")
        }
        Command::Restart { node } => {
            f.write_str("restart")?;
            write_node(f, node)
        }
        Command::Log { node } => {
            f.write_str("log")?;
            write_node(f, node)
        }
        other => unreachable!("not a node's command: {other:?}"),
    }
}

/// A byte count as `memstore` takes it: in KiB or MiB when whole, else in bytes.
pub fn format_bytes(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}KiB", b >> 10),
        b => b.to_string(),
    }
}
