//! One step of a run: an op executed on the engine's [`Node`] and on the model, and the
//! check that they agree — results compared as typed values, errors compared by kind.
//! Each step also renders its op as the docscript line the trace and the reproducer
//! carry, through the engine's own printer.

use crate::convert;
use crate::durability::{Book, Cut, LogFiles, Snapshot};
use crate::simulate::{Failure, FailureKind};
use docsim_engine::canary::Plants;
use docsim_engine::cql::{format_rows, CqlTable, Outcome as CqlOutcome, Statement};
use docsim_engine::disk::{Fault, FaultConfig, IoTarget, SimDisk, Tear};
use docsim_engine::gc::CompactionKind;
use docsim_engine::redis::Command as RedisCommand;
use docsim_engine::script::{format_get, format_restart, Command, FaultCommand, FileRun};
use docsim_engine::{
    CrashPoint, DocPath, Error, ErrorKind, HybridTime, MarkerMode, Node, NodeOptions, TabletId,
};
use docsim_models::cql::{CqlOp, CqlResult, Schema};
use docsim_models::redis::RedisOp;
use docsim_models::{DocId, Key, Markers, Model, ModelError};
use docsim_workloads::{DiskFault, DocWrite, Op};
use std::collections::{BTreeMap, VecDeque};

/// Raft log segment size of simulated runs: small, so runs see segment rolls and log GC.
const SEGMENT_BYTES: usize = 1024;

/// How many recent reads are re-checked after a compaction or restart.
const RECENT_READS: usize = 16;

/// Seconds spent inside the node's calls and inside the model's, so far.
#[derive(Clone, Copy, Debug, Default)]
pub struct Parts {
    pub engine_s: f64,
    pub model_s: f64,
}

/// `f()`, adding the wall time it took to `seconds`.
fn timed<T>(seconds: &mut f64, f: impl FnOnce() -> T) -> T {
    let watch = crate::bench::Stopwatch::start();
    let result = f();
    *seconds += watch.seconds();
    result
}

/// A run's engine, model and bookkeeping.
pub struct State {
    /// Time spent in the node and in the model (for reports).
    pub parts: Parts,
    pub node: Node,
    /// The simulator's own account of acknowledged, flushed and in-doubt entries.
    pub book: Book,
    /// A crash took the node down: the next step is a `restart`.
    pub needs_restart: bool,
    /// Ops the simulator must run next, before anything else (a fault's aftermath).
    pub queued: VecDeque<Op>,
    /// The run is over as expected (a restart refused a log the book knew was corrupt).
    pub ended: bool,
    docs: Model,
    tables: BTreeMap<String, (Schema, Model)>,
    markers: Markers,
    pub cutoff: HybridTime,
    /// Recent reads, re-checked after each compaction if at or above its cutoff.
    recent_reads: VecDeque<Op>,
    /// The run so far as docscript (re-checks included, with `expect` lines).
    script: Vec<String>,
    /// The ops executed so far (re-checks excluded: replaying recreates them).
    ops: Vec<Op>,
    pub checked_reads: usize,
    /// The kind of the mismatch just found, where the op alone does not tell it.
    mismatch_kind: Option<FailureKind>,
}

impl State {
    /// A crash's aftermath is still to run: a restart, or ops queued behind it.
    pub fn settling(&self) -> bool {
        self.needs_restart || !self.queued.is_empty()
    }

    /// A fresh node (RocksDB in memory, logs on a fault-free disk whose random stream is
    /// `disk_seed`) under `dir`.
    pub fn new(
        dir: &std::path::Path,
        plants: Plants,
        disk_seed: u64,
        storage: docsim_engine::StorageConfig,
    ) -> State {
        let disk = SimDisk::new(disk_seed, FaultConfig::default());
        let options =
            NodeOptions { in_memory: true, disk, segment_bytes: SEGMENT_BYTES, plants, storage };
        State {
            parts: Parts::default(),
            node: Node::new(dir, options).expect("in-memory RocksDB environment"),
            book: Book::default(),
            needs_restart: false,
            queued: VecDeque::new(),
            ended: false,
            docs: Model::new(),
            tables: BTreeMap::new(),
            markers: Markers::Optional,
            cutoff: HybridTime::MIN,
            recent_reads: VecDeque::new(),
            // The layout is no step of the run (the trace, which every configuration must
            // share, does not show it), but the reproducer must run in it.
            script: match storage.layout {
                docsim_engine::Layout::Packed => vec!["layout packed".into()],
                docsim_engine::Layout::Unpacked => vec!["layout unpacked".into()],
                docsim_engine::Layout::Entity => vec!["layout entity".into()],
                docsim_engine::Layout::Declared => Vec::new(),
            },
            ops: Vec::new(),
            checked_reads: 0,
            mismatch_kind: None,
        }
    }

    /// How many SST files the document tablet has (0 while it is not open): a
    /// compaction may take a run of them.
    pub fn doc_files(&mut self) -> usize {
        let files = self.node.files().unwrap_or_default();
        files.iter().find(|(id, _)| *id == TabletId::Docs).map_or(0, |(_, f)| f.len())
    }

    /// The op in the engine's types, converted once (see [`Request`]).
    pub fn request(&self, op: &Op) -> Request {
        let ht = convert::ht;
        let (command, typed) = match op {
            Op::Markers(m) => (Command::Markers(marker_mode(*m)), Typed::None),
            Op::DefaultTtl { ttl_ms } => {
                (Command::DefaultTtl(ttl_ms.map(|ms| ms * 1000)), Typed::None)
            }
            Op::Write { ht: t, write } => {
                (Command::Write { write: convert::write(write), ht: ht(*t) }, Typed::None)
            }
            Op::Batch { ht: t, writes } => {
                let writes = writes.iter().map(convert::write).collect();
                (Command::Batch { ht: ht(*t), writes }, Typed::None)
            }
            Op::Get { ht: t, doc, path } => (
                Command::Get { path: convert::path(doc, path), ht: ht(*t), table: None },
                Typed::None,
            ),
            Op::Table(spec) => {
                let table = convert::table(spec).expect("generated tables are valid");
                (Command::Table(table.to_string()), Typed::Table(table))
            }
            Op::Cql { ht: t, table, op } => {
                let (schema, _) = self.tables.get(table).expect("declared table");
                let statement = convert::statement(schema, op);
                (
                    Command::Cql { ht: ht(*t), statement: statement.to_string() },
                    Typed::Cql(statement),
                )
            }
            Op::Redis { ht: t, op } => {
                let redis = convert::redis(op);
                (Command::Redis { ht: ht(*t), command: redis.to_string() }, Typed::Redis(redis))
            }
            Op::Flush => (Command::Flush, Typed::None),
            Op::Compact { cutoff, minor, files } => {
                let run = files.map(|(first, last)| FileRun { first, last, table: None });
                (Command::Compact { cutoff: ht(*cutoff), minor: *minor, run }, Typed::None)
            }
            Op::Crash { at, tear } => {
                (Command::Crash { at: convert::crash_point(*at), tear: *tear }, Typed::None)
            }
            Op::Fault(fault) => (Command::Fault(fault_command(fault)), Typed::None),
            Op::Restart => (Command::Restart, Typed::None),
        };
        Request { command, typed }
    }
}

/// An op in the engine's types, converted once per step: the docscript command the trace
/// and the reproducer print (it already holds typed document writes and paths), with the
/// typed table, CQL statement or Redis command the node runs where the command holds
/// their text.
pub struct Request {
    pub command: Command,
    typed: Typed,
}

enum Typed {
    None,
    Table(CqlTable),
    Cql(Statement),
    Redis(RedisCommand),
}

fn marker_mode(m: Markers) -> MarkerMode {
    match m {
        Markers::Optional => MarkerMode::Optional,
        Markers::Required => MarkerMode::Required,
    }
}

/// What the model expected and what the engine printed, when they differ.
pub type Mismatch = (Vec<String>, Vec<String>);

/// The engine error kind that means what the model's error means.
fn expected_kind(e: &ModelError) -> ErrorKind {
    match e {
        ModelError::SnapshotTooOld => ErrorKind::SnapshotTooOld,
        ModelError::NotAnObject => ErrorKind::TypeConflict,
        ModelError::WrongType => ErrorKind::WrongType,
        ModelError::InvalidRequest => ErrorKind::InvalidRequest,
    }
}

/// The reproducer line expecting the model's error.
fn expect_error(e: &ModelError) -> String {
    format!("error: {}", expected_kind(e))
}

/// Whether both sides succeeded, or both failed with the same kind of error.
fn agree<A, B>(model: &Result<A, ModelError>, engine: &Result<B, Error>) -> bool {
    match (model, engine) {
        (Ok(_), Ok(_)) => true,
        (Err(m), Err(e)) => expected_kind(m) == e.kind(),
        _ => false,
    }
}

fn error_line(e: &Error) -> String {
    format!("error: {e}")
}

thread_local! {
    /// The step this thread is running, for the panic hook's message.
    static CURRENT_STEP: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
    /// The command that reproduces the run this thread is running.
    static REPRODUCE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Note the run this thread starts (its reproduce command), or `None` when it ended.
pub fn note_run(reproduce: Option<String>) {
    CURRENT_STEP.with(|c| c.set(None));
    REPRODUCE.with(|r| *r.borrow_mut() = reproduce.unwrap_or_default());
}

/// Note the step about to run (cheap: the panic hook reads it).
pub fn note_step(step: usize) {
    CURRENT_STEP.with(|c| c.set(Some(step)));
}

/// Install (once per process) a panic hook that names the seed and step a simulation
/// thread was running and how to reproduce it, then prints the panic as usual.
pub fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some(step) = CURRENT_STEP.with(|c| c.get()) {
                let reproduce = REPRODUCE.with(|r| r.borrow().clone());
                eprintln!("docsim: panic at step {step}; reproduce: {reproduce}");
            }
            default(info);
        }));
    });
}

/// Render `op` and run [`step`]; a panic in the node or the harness becomes a failure of
/// kind [`FailureKind::Panic`] at this step (the run ends there; the campaign goes on).
pub fn step_catching_panics(
    state: &mut State,
    op: &Op,
) -> (String, Result<Vec<String>, Box<Failure>>) {
    install_panic_hook();
    state.mismatch_kind = None;
    let ops_before = state.ops.len();
    let mut line = String::new();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let request = state.request(op);
        line = request.command.to_string();
        step(state, op, &request, &line)
    }));
    match outcome {
        Ok(result) => (line, result),
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            let line = if line.is_empty() { format!("{op:?}") } else { line };
            if state.ops.len() == ops_before {
                state.script.push(line.clone()); // the panic came before `step` logged it
                state.ops.push(op.clone());
            }
            state.mismatch_kind = Some(FailureKind::Panic);
            let actual = vec![format!("panic: {message}")];
            let failure = failure(state, op, &line, Vec::new(), actual);
            (line, Err(Box::new(failure)))
        }
    }
}

/// Execute one op on the engine and the model; `Ok` carries the engine's output lines.
pub fn step(
    state: &mut State,
    op: &Op,
    request: &Request,
    line: &str,
) -> Result<Vec<String>, Box<Failure>> {
    state.script.push(line.to_owned());
    state.ops.push(op.clone());
    let result = match op {
        Op::Restart => restart(state),
        Op::Crash { at, tear } => crash(state, convert::crash_point(*at), *tear),
        Op::Fault(fault) => inject(state, fault, request),
        Op::Compact { cutoff, minor, files } => {
            compact(state, convert::ht(*cutoff), *minor, *files)
        }
        Op::Flush => flush(state),
        _ if op.is_read() => check_read(state, op, request),
        _ => check_write(state, op, request),
    };
    // An I/O fault armed for the next write must not fire anywhere else.
    let result = result.and_then(|lines| match state.book.fault_armed_at {
        Some(at) if fired_fault(state.node.disk(), at).is_some() => {
            state.mismatch_kind = Some(FailureKind::EngineRefusedWrite);
            Err((vec!["the I/O fault armed for the next write still armed".into()], lines))
        }
        _ => Ok(lines),
    });
    let acks = timed(&mut state.parts.engine_s, || state.node.take_acks());
    // A write acknowledges at most one entry, on its own tablet; nothing else does.
    let stray = match op {
        Op::Write { .. } | Op::Batch { .. } | Op::Redis { .. } | Op::Cql { .. } => {
            acks.len() > 1 || acks.iter().any(|(tablet, _)| *tablet != write_tablet(op))
        }
        _ => !acks.is_empty(),
    };
    let result = result.and_then(|lines| {
        if stray {
            return Err((vec![format!("at most one ack, on {:?}", write_tablet(op))], lines));
        }
        Ok(lines)
    });
    state.book.acked(acks, write_ht(op));
    result.map_err(|(expected, actual)| Box::new(failure(state, op, line, expected, actual)))
}

/// A flush must succeed, unless a crash armed for after it cut it.
fn flush(state: &mut State) -> Result<Vec<String>, Mismatch> {
    let result = timed(&mut state.parts.engine_s, || state.node.flush());
    let lines: Vec<String> = result.as_ref().err().iter().map(|e| error_line(e)).collect();
    if after_flush(state, &result, None) {
        expect_agreed_error(state, &result);
        return Ok(lines);
    }
    match result {
        Ok(()) => check_log_gc(state, None).map(|()| lines),
        Err(_) => Err((Vec::new(), lines)),
    }
}

/// After a flush or compaction ran log GC on every tablet (or on `only`): no segment the
/// book's frontier frees is left on the disk (`Book::log_gc_leftovers`). Reads cannot tell
/// a log GC that removes too little; only the disk fills. A failure's reproducer lists
/// the segments (`log`) and expects each leftover absent.
fn check_log_gc(state: &mut State, only: Option<&TabletId>) -> Result<(), Mismatch> {
    let ids = timed(&mut state.parts.engine_s, || state.node.tablet_ids());
    let ids: Vec<TabletId> = ids.into_iter().filter(|id| only.is_none_or(|o| o == id)).collect();
    let files = log_files(state.node.disk(), &ids);
    let leftovers: Vec<String> =
        files.iter().flat_map(|(id, segments)| state.book.log_gc_leftovers(id, segments)).collect();
    expect_absent(state, "log", FailureKind::LogGcIncomplete, leftovers)
}

/// `leftovers` (lines `command` prints) must not be there: a failure of `kind` whose
/// reproducer runs `command` and expects each of them absent.
fn expect_absent(
    state: &mut State,
    command: &str,
    kind: FailureKind,
    leftovers: Vec<String>,
) -> Result<(), Mismatch> {
    if leftovers.is_empty() {
        return Ok(());
    }
    state.script.push(command.into());
    state.mismatch_kind = Some(kind);
    let expected = leftovers.iter().map(|line| format!("absent {line}")).collect();
    Err((expected, leftovers))
}

fn compact(
    state: &mut State,
    cutoff: HybridTime,
    minor: bool,
    files: Option<(usize, usize)>,
) -> Result<Vec<String>, Mismatch> {
    let kind = if minor { CompactionKind::Minor } else { CompactionKind::Full };
    let node = &mut state.node;
    let result = timed(&mut state.parts.engine_s, || match files {
        None => node.compact(cutoff, kind),
        Some((first, last)) => node.compact_files(None, first..=last, cutoff),
    });
    let lines: Vec<String> = result.as_ref().err().iter().map(|e| error_line(e)).collect();
    let only = files.map(|_| TabletId::Docs);
    // A crash armed for after the flush cuts it after the compaction, before log GC: the
    // compaction happened, and its cutoff holds.
    let cut = after_flush(state, &result, only.as_ref());
    if result.is_err() && !cut {
        // The model compacts without fail: a compaction error (a filter that could not
        // judge entries, RocksDB, a down tablet) is the engine refusing an operation.
        state.mismatch_kind = Some(FailureKind::EngineRefusedWrite);
        return Err((Vec::new(), lines));
    }
    compacted(state, cutoff, only.clone());
    if cut {
        expect_agreed_error(state, &result);
        return Ok(lines);
    }
    if result.is_ok() {
        check_log_gc(state, only.as_ref())?;
    }
    if !minor && files.is_none() {
        check_gc_complete(state, cutoff)?;
    }
    recheck(state, cutoff)?; // a failure here is the re-checked read's (see `failure`)
    Ok(lines)
}

/// A compaction with `cutoff` happened, of every tablet or of `only` one: the book (whose
/// restart reports carry the cutoff) and the models learn it.
fn compacted(state: &mut State, cutoff: HybridTime, only: Option<TabletId>) {
    let every_tablet = only.is_none();
    let ids: Vec<TabletId> = match only {
        Some(id) => vec![id],
        None => std::iter::once(TabletId::Docs)
            .chain(state.tables.keys().map(|t| TabletId::Table(t.clone())))
            .collect(),
    };
    state.book.compacted(&ids, cutoff);
    state.docs.compacted(cutoff.raw());
    if every_tablet {
        state.tables.values_mut().for_each(|(_, m)| m.compacted(cutoff.raw()));
    }
    state.cutoff = state.cutoff.max(cutoff);
}

/// After a full compaction: every tablet's dump holds nothing at or below the cutoff that
/// no read can need (`gc_complete.rs`). A failure's reproducer dumps and expects each
/// leftover absent (`expect absent <line>`).
fn check_gc_complete(state: &mut State, cutoff: HybridTime) -> Result<(), Mismatch> {
    let dumps = timed(&mut state.parts.engine_s, || state.node.dump());
    let Ok(dumps) = dumps else { return Ok(()) }; // a down node: the restart checks it
    let mut leftovers = Vec::new();
    for tablet in dumps {
        // The tablet's default TTL as the simulator set it (the models hold it).
        let table_ttl_ms = match tablet.table {
            None => state.docs.table_ttl_ms(),
            Some(table) => state.tables.get(&table.name).and_then(|(_, m)| m.table_ttl_ms()),
        };
        let whole = tablet.table.is_some_and(|t| t.packed_rows || t.entity_rows);
        let entries: Vec<_> = tablet.entries.into_iter().map(|(entry, ..)| entry).collect();
        leftovers.extend(crate::gc_complete::leftovers(&entries, cutoff, table_ttl_ms, whole));
    }
    expect_absent(state, "dump", FailureKind::GcIncomplete, leftovers)
}

/// Book a flush (or compaction) that succeeded or was cut by a crash after it was durable;
/// returns whether the crash cut it.
/// `only`: the one tablet a compaction of a run of files flushed (`None`: every tablet).
fn after_flush(state: &mut State, result: &Result<(), Error>, only: Option<&TabletId>) -> bool {
    let cut = matches!(result, Err(Error::Crashed(CrashPoint::AfterFlush)));
    if cut || result.is_ok() {
        state.book.flushed(only);
    }
    if cut {
        state.book.crashed("after-flush");
        state.needs_restart = true;
    }
    cut
}

/// A `crash` command: cut the power now, or arm a crash (which a running node accepts).
fn crash(
    state: &mut State,
    at: Option<CrashPoint>,
    tear: Option<u32>,
) -> Result<Vec<String>, Mismatch> {
    state.book.ledger_seen = state.node.disk().ledger_len();
    let tear = tear.map_or(Tear::None, Tear::Sector);
    let Some(point) = at else {
        timed(&mut state.parts.engine_s, || state.node.crash(tear));
        let previous = state.ops.iter().rev().nth(1);
        let stage = match previous {
            _ if state.book.cut_by_disk_fault() => "after-disk-fault",
            Some(Op::Flush) => "after-log-gc",
            Some(Op::Compact { .. }) => "after-compaction",
            _ => "idle",
        };
        state.book.crashed(stage);
        state.needs_restart = true;
        return Ok(Vec::new());
    };
    if let Err(e) = timed(&mut state.parts.engine_s, || state.node.arm_crash(point, tear)) {
        state.mismatch_kind = Some(FailureKind::EngineRefusedWrite);
        return Err((Vec::new(), vec![error_line(&e)]));
    }
    state.book.armed = Some(point);
    Ok(Vec::new())
}

/// The docscript `fault` command of a fault.
fn fault_command(fault: &DiskFault) -> FaultCommand {
    match fault {
        DiskFault::AppendError => FaultCommand::IoError(IoTarget::NextAppend),
        DiskFault::SyncError => FaultCommand::IoError(IoTarget::NextSync),
        DiskFault::DiskFull { free_bytes } => FaultCommand::DiskFull { free_bytes: *free_bytes },
        DiskFault::Clear => FaultCommand::Clear,
        DiskFault::Flip { file, offset, bit } => {
            FaultCommand::Flip { file: file.clone(), offset: *offset, bit: *bit }
        }
    }
}

/// A `fault` command: arm an I/O fault for the next write, lift it, or flip a bit of
/// synced data (which the book notes first: the next restart must refuse it).
fn inject(
    state: &mut State,
    fault: &DiskFault,
    request: &Request,
) -> Result<Vec<String>, Mismatch> {
    let Command::Fault(command) = &request.command else { unreachable!("a fault's request") };
    let disk = state.node.disk().clone();
    if let DiskFault::Flip { file, offset, .. } = fault {
        state.book.flipping(file, &disk.read(file).unwrap_or_default(), *offset);
    }
    let ledger_len = disk.ledger_len();
    state.book.fault_armed_at = match fault {
        DiskFault::AppendError | DiskFault::SyncError | DiskFault::DiskFull { .. } => {
            Some(state.book.fault_armed_at.unwrap_or(ledger_len))
        }
        DiskFault::Clear => None,
        DiskFault::Flip { .. } => state.book.fault_armed_at,
    };
    match timed(&mut state.parts.engine_s, || command.inject(&disk)) {
        Ok(()) => Ok(Vec::new()),
        Err(e) => {
            state.mismatch_kind = Some(FailureKind::EngineRefusedWrite);
            Err((Vec::new(), vec![error_line(&e)]))
        }
    }
}

/// Each tablet's log segments as the disk holds them now (before bootstrap reads them).
fn log_files(disk: &SimDisk, ids: &[TabletId]) -> LogFiles {
    ids.iter()
        .map(|id| {
            let names = disk.list(&format!("{}/wal-", Node::log_dir(id)));
            let files = names.into_iter().map(|n| (n.clone(), disk.read(&n).unwrap_or_default()));
            (id.clone(), files.collect())
        })
        .collect()
}

/// Restart the node and check bootstrap against the book; then the recent reads again.
fn restart(state: &mut State) -> Result<Vec<String>, Mismatch> {
    state.needs_restart = false;
    let node = &mut state.node;
    let (acks, in_doubt, ids) = timed(&mut state.parts.engine_s, || {
        (node.take_acks(), node.take_in_doubt(), node.tablet_ids())
    });
    // Every step takes its own write's acknowledgements: none is left for a restart.
    assert!(acks.is_empty(), "acknowledgements left for the restart: {acks:?}");
    let files = log_files(state.node.disk(), &ids);
    let outcome = timed(&mut state.parts.engine_s, || state.node.restart());
    let ledger = state.node.disk().ledger();
    let checked = state.book.restarted(&ids, &outcome, in_doubt, &ledger, &files);
    let lines = match &outcome {
        Ok(reports) => reports.iter().map(|(id, r)| format_restart(id, r)).collect(),
        Err(e) => vec![error_line(e)],
    };
    let settled = checked?;
    if let Some(before) = settled.restore {
        state.docs = before.docs;
        state.tables = before.tables;
    }
    // A restart that passed its check adds no `expect restart` line to the reproducer: the
    // torn tails it reports depend on what the engine synced, which a planted bug changes
    // (a reproducer must pass without its bug). A failing restart's reproducer ends with
    // the book's full reports (`failure`), and a refused corrupt log with its kind.
    if let Err(e) = &outcome {
        state.script.push(format!("expect error: {}", e.kind()));
    }

    if settled.ended {
        state.ended = true;
        return Ok(lines);
    }
    let cutoff = state.cutoff;
    recheck(state, cutoff)?;
    Ok(lines)
}

/// What the model says of a write: success (with the output lines it expects, where it
/// knows them: a Redis reply) or its error.
fn model_write(
    state: &mut State,
    op: &Op,
) -> Result<Option<docsim_models::redis::Reply>, ModelError> {
    if let Op::Redis { ht, op: redis } = op {
        return state.docs.redis(*ht, redis).map(Some);
    }
    model_update(state, op).map(|()| None)
}

/// The model's side of a write that prints nothing.
fn model_update(state: &mut State, op: &Op) -> Result<(), ModelError> {
    match op {
        Op::Markers(m) => {
            state.markers = *m;
            Ok(())
        }
        Op::DefaultTtl { ttl_ms } => {
            state.docs.set_table_ttl_ms(*ttl_ms);
            Ok(())
        }
        Op::Write { ht, write } => state.docs.write_batch(*ht, state.markers, &[write.to_model()]),
        Op::Batch { ht, writes } => {
            let writes: Vec<_> = writes.iter().map(DocWrite::to_model).collect();
            state.docs.write_batch(*ht, state.markers, &writes)
        }
        Op::Table(spec) => {
            let mut model = Model::new();
            model.set_table_ttl_ms(spec.schema.default_ttl_s.map(|s| s * 1000));
            state.tables.insert(spec.schema.name.clone(), (spec.schema.clone(), model));
            Ok(())
        }
        Op::Cql { ht, table, op: cql } => {
            let (schema, model) = state.tables.get_mut(table).expect("declared table");
            model.cql(*ht, schema, cql).map(|_| ())
        }
        other => unreachable!("not a write: {other:?}"),
    }
}

/// A Redis reply as output lines.
fn reply_lines(reply: &docsim_engine::redis::Reply) -> Vec<String> {
    reply.to_string().lines().map(str::to_owned).collect()
}

/// The engine's side of a write: the lines it prints (a Redis reply), or its error.
fn engine_write(state: &mut State, request: &Request) -> Result<Vec<String>, Error> {
    let (node, markers) = (&mut state.node, marker_mode(state.markers));
    match (&request.command, &request.typed) {
        (Command::Redis { ht, .. }, Typed::Redis(redis)) => {
            return node.redis(*ht, redis).map(|reply| reply_lines(&reply))
        }
        (Command::Markers(_), _) => {} // the marker mode travels with each write
        (Command::DefaultTtl(ttl_us), _) => node.set_default_ttl(ttl_us.map(|us| us / 1000))?,
        (Command::Write { write, ht }, _) => {
            node.write(*ht, std::slice::from_ref(write), markers)?
        }
        (Command::Batch { ht, writes }, _) => node.write(*ht, writes, markers)?,
        (Command::Table(_), Typed::Table(table)) => node.create_table(table.clone())?,
        (Command::Cql { ht, .. }, Typed::Cql(statement)) => node.cql(*ht, statement).map(|_| ())?,
        (other, _) => unreachable!("not a write: {other}"),
    }
    Ok(Vec::new())
}

/// Writes: engine and model must both succeed, or both refuse with the same kind of error.
fn check_write(state: &mut State, op: &Op, request: &Request) -> Result<Vec<String>, Mismatch> {
    let armed_in_write = matches!(state.book.armed, Some(CrashPoint::Write(_)));
    let fault_armed = state.book.fault_armed_at;
    let before = (armed_in_write || fault_armed.is_some())
        .then(|| Snapshot { docs: state.docs.clone(), tables: state.tables.clone() });
    let watch = crate::bench::Stopwatch::start();
    let model = model_write(state, op);
    state.parts.model_s += watch.seconds();
    let model = model.map(|reply| reply.map(|r| reply_lines(&convert::engine_reply(&r))));
    let watch = crate::bench::Stopwatch::start();
    let engine = engine_write(state, request);
    state.parts.engine_s += watch.seconds();
    let lines = match &engine {
        Ok(lines) => lines.clone(),
        Err(e) => vec![error_line(e)],
    };
    if let Some(seen) = fault_armed {
        state.book.fault_armed_at = None; // an armed disk fault lives for one write
        if let Some(kind) = fired_fault(state.node.disk(), seen) {
            let before = before.expect("taken while a fault was armed");
            return disk_fault_cut(state, op, (&model, &engine), kind, lines, before);
        }
        state.queued.push_back(Op::Fault(DiskFault::Clear));
    }
    if let (Err(Error::Crashed(CrashPoint::Write(stage))), Some(before)) = (&engine, before) {
        let armed = state.book.armed;
        state.book.cut(Cut::Crash(*stage), write_tablet(op), write_ht(op), before);
        state.book.crashed(stage.name());
        state.needs_restart = true;
        return match &model {
            // The power went where the simulator armed it, or the engine is wrong.
            Ok(_) if armed != Some(CrashPoint::Write(*stage)) => {
                let want = armed.map_or("no crash".to_owned(), |at| format!("error: crashed {at}"));
                Err((vec![want], lines))
            }
            Ok(_) => {
                expect_agreed_error(state, &engine);
                Ok(lines)
            }
            Err(m) => Err((vec![expect_error(m)], lines)),
        };
    }
    match (&model, &engine) {
        (Ok(Some(want)), Ok(got)) if want != got => {
            state.mismatch_kind = Some(FailureKind::Redis); // the reply to a write differs
            Err((want.clone(), lines))
        }
        _ if agree(&model, &engine) => {
            expect_agreed_error(state, &engine);
            Ok(lines)
        }
        (Ok(_), _) => Err((Vec::new(), lines)),
        (Err(m), _) => Err((vec![expect_error(m)], lines)),
    }
}

/// The hybrid time a write op writes at (reads and other ops: none, `MIN`).
fn write_ht(op: &Op) -> HybridTime {
    match op {
        Op::Write { ht, .. } | Op::Batch { ht, .. } | Op::Redis { ht, .. } | Op::Cql { ht, .. } => {
            convert::ht(*ht)
        }
        _ => HybridTime::MIN,
    }
}

/// The tablet a write goes to: a CQL statement's table's, else the document tablet.
fn write_tablet(op: &Op) -> TabletId {
    match op {
        Op::Cql { table, .. } => TabletId::Table(table.clone()),
        _ => TabletId::Docs,
    }
}

/// The error kind the I/O fault that fired since the ledger held `seen` faults must give,
/// if one fired.
fn fired_fault(disk: &SimDisk, seen: usize) -> Option<ErrorKind> {
    disk.ledger_since(seen).iter().find_map(|fault| match fault {
        Fault::WriteError { .. } | Fault::SyncError { .. } => Some(ErrorKind::Io),
        Fault::DiskFull { .. } => Some(ErrorKind::DiskFull),
        _ => None,
    })
}

/// A write that an injected I/O error or a full disk failed: the engine must report it
/// (by kind), the write is in doubt (the book rules it lost), and the node loses power
/// before anything else runs: the fault is lifted, then the crash, then the restart.
fn disk_fault_cut<R>(
    state: &mut State,
    op: &Op,
    (model, engine): (&Result<R, ModelError>, &Result<Vec<String>, Error>),
    kind: ErrorKind,
    lines: Vec<String>,
    before: Snapshot,
) -> Result<Vec<String>, Mismatch> {
    state.book.cut(Cut::DiskFault, write_tablet(op), write_ht(op), before);
    let crash = Op::Crash { at: docsim_workloads::CrashPoint::Now, tear: None };
    state.queued.extend([Op::Fault(DiskFault::Clear), crash]);
    match (model, engine) {
        (Err(m), _) => Err((vec![expect_error(m)], lines)),
        (Ok(_), Err(e)) if e.kind() == kind => {
            expect_agreed_error(state, engine);
            Ok(lines)
        }
        (Ok(_), _) => Err((vec![format!("error: {kind}")], lines)),
    }
}

/// Reads: the engine's answer must equal the model's.
fn check_read(state: &mut State, op: &Op, request: &Request) -> Result<Vec<String>, Mismatch> {
    state.checked_reads += 1;
    state.recent_reads.push_back(op.clone());
    if state.recent_reads.len() > RECENT_READS {
        state.recent_reads.pop_front();
    }
    match (op, &request.command, &request.typed) {
        (Op::Get { doc, path: subkeys, .. }, Command::Get { path, ht, .. }, _) => {
            check_get(state, (doc, subkeys), path, *ht)
        }
        (Op::Cql { table, op: cql, .. }, Command::Cql { ht, .. }, Typed::Cql(statement)) => {
            check_select(state, *ht, (table, cql), statement)
        }
        (Op::Redis { op: redis, .. }, Command::Redis { ht, .. }, Typed::Redis(command)) => {
            check_redis(state, *ht, redis, command)
        }
        (other, ..) => unreachable!("not a read: {other:?}"),
    }
}

/// `Ok(got)` if the two sides agree, else the expected and actual output lines.
fn verdict(same: bool, want: Vec<String>, got: Vec<String>) -> Result<Vec<String>, Mismatch> {
    if same {
        Ok(got)
    } else {
        Err((want, got))
    }
}

/// A document read: the model's (document, path below it), the engine's path.
fn check_get(
    state: &mut State,
    (doc, subkeys): (&DocId, &[Key]),
    path: &DocPath,
    ht: HybridTime,
) -> Result<Vec<String>, Mismatch> {
    let want = timed(&mut state.parts.model_s, || state.docs.read(doc, subkeys, ht.raw()));
    let got = timed(&mut state.parts.engine_s, || state.node.get(path, ht));
    let same = match (&want, &got) {
        (Ok(w), Ok(g)) => *w == g.as_ref().map(convert::doc),
        _ => agree(&want, &got),
    };
    let show = |d: Option<docsim_engine::Document>| format_get(path, ht, d.as_ref());
    let want_line = match &want {
        Ok(d) => show(d.as_ref().map(convert::document)),
        Err(m) => expect_error(m),
    };
    if same {
        expect_agreed_error(state, &got);
    }
    let got_line = got.map_or_else(|e| error_line(&e), show);
    verdict(same, vec![want_line], vec![got_line])
}

/// A SELECT: the model's (table, op), the engine's statement.
fn check_select(
    state: &mut State,
    ht: HybridTime,
    (table, cql): (&str, &CqlOp),
    statement: &Statement,
) -> Result<Vec<String>, Mismatch> {
    let (schema, model) = state.tables.get_mut(table).expect("declared table");
    let want = timed(&mut state.parts.model_s, || model.cql(ht.raw(), schema, cql));
    let got = timed(&mut state.parts.engine_s, || state.node.cql(ht, statement));
    let same = match (&want, &got) {
        (Ok(CqlResult::Rows(w)), Ok(CqlOutcome::Rows(g))) => {
            let g: Vec<Vec<_>> = g
                .iter()
                .map(|r| r.iter().map(|(n, c)| (n.clone(), convert::cell(c))).collect())
                .collect();
            *w == g
        }
        (Ok(_), Ok(_)) => false,
        _ => agree(&want, &got),
    };
    let want_lines = match &want {
        Ok(CqlResult::Rows(rows)) => {
            let rows: Vec<Vec<_>> = rows
                .iter()
                .map(|r| r.iter().map(|(n, c)| (n.clone(), convert::engine_cell(c))).collect())
                .collect();
            format_rows(&rows)
        }
        Ok(CqlResult::Written) => Vec::new(),
        Err(m) => vec![expect_error(m)],
    };
    if same {
        expect_agreed_error(state, &got);
    }
    let got_lines = match got {
        Ok(CqlOutcome::Rows(rows)) => format_rows(&rows),
        Ok(CqlOutcome::Written) => Vec::new(),
        Err(e) => vec![error_line(&e)],
    };
    verdict(same, want_lines, got_lines)
}

/// A Redis read: the model's op, the engine's command.
fn check_redis(
    state: &mut State,
    ht: HybridTime,
    redis: &RedisOp,
    command: &RedisCommand,
) -> Result<Vec<String>, Mismatch> {
    let want = timed(&mut state.parts.model_s, || state.docs.redis(ht.raw(), redis));
    let got = timed(&mut state.parts.engine_s, || state.node.redis(ht, command));
    let same = match (&want, &got) {
        (Ok(w), Ok(g)) => *w == convert::reply(g),
        _ => agree(&want, &got),
    };
    let want_lines = match &want {
        Ok(r) => reply_lines(&convert::engine_reply(r)),
        Err(m) => vec![expect_error(m)],
    };
    if same {
        expect_agreed_error(state, &got);
    }
    let got_lines = match &got {
        Ok(r) => reply_lines(r),
        Err(e) => vec![error_line(e)],
    };
    verdict(same, want_lines, got_lines)
}

/// After a compaction with `cutoff` (or a restart), reads at or above it must not have
/// changed.
fn recheck(state: &mut State, cutoff: HybridTime) -> Result<(), Mismatch> {
    let reads: Vec<Op> =
        state.recent_reads.iter().filter(|op| read_time(op) >= Some(cutoff)).cloned().collect();
    for read in reads {
        let request = state.request(&read);
        state.script.push(request.command.to_string());
        check_read(state, &read, &request)?;
    }
    Ok(())
}

/// An error the engine returned, which the model agreed on (or the step fails anyway), is
/// part of the run: the reproducer expects it, by kind.
fn expect_agreed_error<T>(state: &mut State, result: &Result<T, Error>) {
    if let Err(e) = result {
        state.script.push(format!("expect error: {}", e.kind()));
    }
}

fn read_time(op: &Op) -> Option<HybridTime> {
    match op {
        Op::Get { ht, .. } | Op::Cql { ht, .. } | Op::Redis { ht, .. } => Some(convert::ht(*ht)),
        _ => None,
    }
}

fn failure(
    state: &State,
    op: &Op,
    line: &str,
    expected: Vec<String>,
    actual: Vec<String>,
) -> Failure {
    let last_ops: Vec<String> = state.script.iter().rev().take(12).rev().cloned().collect();
    let mut reproducer = state.script.join("\n");
    reproducer.push('\n');
    for expected_line in &expected {
        reproducer.push_str(&format!("expect {expected_line}\n"));
    }
    if state.mismatch_kind == Some(FailureKind::Panic) {
        reproducer.push_str(&format!("# expected: no panic ({})\n", actual.join(" ")));
    } else if expected.is_empty() {
        reproducer.push_str("# expected: this write succeeds\n");
    }
    let line = line.to_owned();
    let kind = match op {
        _ if state.mismatch_kind.is_some() => state.mismatch_kind.expect("checked"),
        Op::Restart => FailureKind::Restart,
        Op::Compact { .. } => FailureKind::ChangedByCompaction,
        Op::Get { .. } => FailureKind::Get,
        Op::Cql { op: CqlOp::Select { .. }, .. } => FailureKind::Select,
        Op::Redis { .. } if op.is_read() => FailureKind::Redis,
        _ if expected.is_empty() => FailureKind::EngineRefusedWrite,
        _ => FailureKind::EngineAcceptedWrite,
    };
    let op_text = match kind {
        FailureKind::ChangedByCompaction => {
            let read = state.script.last().cloned().unwrap_or_default();
            format!("{read} (re-checked after {line})")
        }
        _ => line,
    };
    let ops = state.ops.clone();
    Failure { step: 0, op: op_text, expected, actual, last_ops, reproducer, kind, ops }
}

#[cfg(test)]
mod tests {
    use super::*;
    use docsim_engine::cql::parse_statement;
    use docsim_engine::redis::Command as RedisCommand;
    use docsim_engine::script::parse_line;
    use docsim_workloads::{Profile, Workload};
    use rand::SeedableRng;

    /// A panic inside a step (here: the harness asked for a table nobody declared) is a
    /// failure of that step, with the op log and a reproducer; the caller goes on.
    #[test]
    fn a_panic_is_a_failed_step_not_a_dead_run() {
        let scratch = crate::ScratchDir::new().expect("scratch");
        let mut state = State::new(scratch.path(), Plants::NONE, 0, Default::default());
        let (_, first) = step_catching_panics(&mut state, &Op::Flush);
        assert_eq!(first.expect("a flush passes"), Vec::<String>::new());
        let select = CqlOp::Select { hash: vec![], range: None, columns: None };
        let bad = Op::Cql { ht: 1 << 12, table: "nope".into(), op: select };
        let (_, result) = step_catching_panics(&mut state, &bad);
        let failure = result.expect_err("the panic is a failure");
        assert_eq!(failure.kind, FailureKind::Panic);
        assert_eq!(failure.actual, ["panic: declared table"]);
        assert_eq!(failure.ops, [Op::Flush, bad.clone()]);
        assert!(failure.reproducer.starts_with("flush\n"), "{}", failure.reproducer);
        assert!(failure.reproducer.contains("# expected: no panic"), "{}", failure.reproducer);
        let (_, after) = step_catching_panics(&mut state, &Op::Flush);
        assert!(after.is_ok(), "the state is still usable for reporting");
    }

    /// Every op a workload generates prints, through the engine's printer, as one
    /// docscript line that parses back to the same command — and its CQL or Redis text
    /// parses back to the same typed statement or command.
    #[test]
    fn every_generated_op_prints_as_a_docscript_line_that_parses_back() {
        let scratch = crate::ScratchDir::new().expect("scratch");
        let mut state = State::new(scratch.path(), Plants::NONE, 0, Default::default());
        let mut checked = 0;
        for (seed, profile) in Profile::ALL.into_iter().enumerate() {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed as u64);
            let mut workload = Workload::new(&mut rng, Some(profile));
            let mut ops = workload.setup_ops(0);
            ops.extend((1..300u64).map(|i| workload.next_op(&mut rng, i << 22, 0)));
            ops.extend([
                Op::Flush,
                Op::Compact { cutoff: 7 << 12, minor: true, files: None },
                Op::Restart,
            ]);
            for op in ops {
                if let Op::Table(spec) = &op {
                    let model = (spec.schema.clone(), Model::new());
                    state.tables.insert(spec.schema.name.clone(), model);
                }
                let command = state.request(&op).command;
                let line = command.to_string();
                assert_eq!(parse_line(&line, 1), Ok(Some(command.clone())), "{line}");
                match (&op, &command) {
                    (Op::Cql { table, op: cql, .. }, Command::Cql { statement, .. }) => {
                        let want = convert::statement(&state.tables[table].0, cql);
                        assert_eq!(parse_statement(statement), Ok(want), "{line}");
                    }
                    (Op::Redis { op: redis, .. }, Command::Redis { command, .. }) => {
                        assert_eq!(RedisCommand::parse(command), Ok(convert::redis(redis)));
                    }
                    _ => {}
                }
                checked += 1;
            }
        }
        assert!(checked > 1_500, "{checked} ops checked");
    }
}
