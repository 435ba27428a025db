//! One simulated run: a seed, a workload, a schedule, a simulated clock, and a check of
//! every read against the reference model.
//!
//! The seed feeds independent ChaCha streams, one per subsystem (workload, clock,
//! schedule), so a new knob in one never reshuffles another. madsim runs the run with
//! simulated time: each step sleeps a jittered simulated interval, and the hybrid clock
//! reads that simulated time through a skewing physical clock.

use crate::convert;
use crate::durability::{Book, Snapshot};
use crate::ScratchDir;
use docsim_engine::canary::{Plant, Plants};
use docsim_engine::cql::format_rows;
use docsim_engine::cql::Outcome as CqlOutcome;
use docsim_engine::script::{format_get, format_restart, Command, CrashAt, MarkerMode, Runner};
use docsim_engine::{CrashStage, DocPath, Document, HybridClock, HybridTime, PhysicalClock};
use docsim_models::cql::{CqlOp, CqlResult, Schema};
use docsim_models::redis::RedisOp;
use docsim_models::{Markers, Model, ModelError};
use docsim_workloads::{Op, Profile, Workload};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::time::Duration;

/// What to run.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The seed that rules the run.
    pub seed: u64,
    /// Workload operations to run (flushes and compactions come on top).
    pub ops: usize,
    /// Force a profile (default: the seed draws one).
    pub profile: Option<Profile>,
    /// A planted bug to switch on.
    pub plant: Option<Plant>,
    /// Keep every trace line (for `replay` and the determinism check).
    pub keep_trace: bool,
}

/// A check that failed.
#[derive(Clone, Debug)]
pub struct Failure {
    /// Index of the failing step.
    pub step: usize,
    /// The failing operation (docscript).
    pub op: String,
    /// What the model expected, as docscript output lines.
    pub expected: Vec<String>,
    /// What the engine did.
    pub actual: Vec<String>,
    /// The last operations before it (docscript).
    pub last_ops: Vec<String>,
    /// A docscript that reproduces the failure with `docsim script` alone.
    pub reproducer: String,
    /// What kind of check failed (the shrinker keeps it).
    pub kind: FailureKind,
    /// Every op executed up to and including the failing one (for the shrinker).
    pub ops: Vec<Op>,
}

/// The fingerprint of a failure: which check, on what kind of op, which way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FailureKind {
    /// A document read differs from the model.
    Get,
    /// A CQL SELECT differs.
    Select,
    /// A Redis reply differs.
    Redis,
    /// A write failed in the engine but not in the model.
    EngineRefusedWrite,
    /// A write succeeded in the engine but the model refuses it.
    EngineAcceptedWrite,
    /// A read at or above a compaction's cutoff changed after it.
    ChangedByCompaction,
    /// A restart failed, or reported a frontier or replay other than the book's.
    Restart,
}

/// How a run ended.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// The seed.
    pub seed: u64,
    /// Every knob the seed chose.
    pub knobs: String,
    /// Steps executed (ops, flushes, compactions).
    pub steps: usize,
    /// Workload operations executed.
    pub ops: usize,
    /// Reads compared with the model (including re-checks after compactions).
    pub checked_reads: usize,
    /// Compactions run.
    pub compactions: usize,
    /// Rolling FNV-1a hash of the trace.
    pub trace_hash: u64,
    /// The trace lines, when kept.
    pub trace: Vec<String>,
    /// The first failed check, if any.
    pub failure: Option<Failure>,
    /// Coverage probes hit during the run.
    pub probes: BTreeMap<String, u64>,
    /// Faults injected, by kind: crashes by stage, disk faults by kind.
    pub faults: BTreeMap<String, u64>,
    pub crashes: u64,
    pub restarts: u64,
    /// Log entries bootstrap replayed, and the entries the book expected.
    pub replayed: u64,
    pub expected_replayed: u64,
    /// Wall-clock seconds the run took (for reports; never steers the run).
    pub seconds: f64,
    /// Wall-clock time by kind of step: read, write, flush, compaction (with its
    /// re-checks), crash, restart. For reports only.
    pub step_time: BTreeMap<&'static str, docsim_reports::StepTime>,
}

/// Derive the seed of one subsystem's stream (splitmix64 of seed and stream id).
pub fn stream(seed: u64, id: u64) -> ChaCha8Rng {
    let mut z = seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ChaCha8Rng::seed_from_u64(z ^ (z >> 31))
}

const STREAM_WORKLOAD: u64 = 1;
const STREAM_CLOCK: u64 = 2;
const STREAM_SCHEDULE: u64 = 3;
const STREAM_CRASHES: u64 = 4;

/// A physical clock over madsim's simulated time, with seeded skew: it may jump back.
struct SimClock {
    rng: ChaCha8Rng,
    start: madsim::time::Instant,
    jitter_us: u64,
}

impl PhysicalClock for SimClock {
    fn now_us(&mut self) -> u64 {
        let elapsed = self.start.elapsed().as_micros() as u64;
        let jitter = self.rng.random_range(0..=self.jitter_us);
        1_000_000 + elapsed + jitter
    }
}

/// Inside the madsim runtime `Instant::now` reads simulated time (madsim intercepts the
/// clock); this is the one place the simulation reads it.
#[allow(clippy::disallowed_methods)]
fn simulated_now() -> madsim::time::Instant {
    madsim::time::Instant::now()
}

/// Run one seed under madsim.
pub fn run(config: &RunConfig) -> RunOutcome {
    let _ = docsim_engine::probe::take();
    let watch = crate::bench::Stopwatch::start();
    let mut runtime =
        madsim::runtime::Runtime::with_seed_and_config(config.seed, madsim::Config::default());
    // RocksDB starts its own threads (flush, compaction, a timer). They never race the
    // simulation: every flush and compaction is waited for before the next step.
    runtime.set_allow_system_thread(true);
    let mut outcome = runtime.block_on(simulate(config.clone()));
    outcome.probes = docsim_engine::probe::take();
    outcome.seconds = watch.seconds();
    outcome
}

struct State {
    runner: Runner,
    /// The simulator's own account of acknowledged, flushed and in-doubt entries.
    book: Book,
    /// A crash took the node down: the next step is a `restart`.
    needs_restart: bool,
    docs: Model,
    tables: BTreeMap<String, (Schema, Model)>,
    markers: MarkerMode,
    cutoff: HybridTime,
    /// Recent reads, re-checked after each compaction if at or above its cutoff.
    recent_reads: std::collections::VecDeque<Op>,
    script: Vec<String>,
    /// The ops executed so far (re-checks excluded: replaying recreates them).
    ops: Vec<Op>,
    checked_reads: usize,
}

/// The schedule's knobs: how often the simulator flushes and compacts, and how far the
/// history cutoff lags behind now. Drawn from the schedule stream.
struct Schedule {
    rng: ChaCha8Rng,
    flush_permille: u32,
    compact_permille: u32,
    minor_percent: u32,
    lag_max_us: u64,
}

impl Schedule {
    fn new(mut rng: ChaCha8Rng) -> Schedule {
        Schedule {
            flush_permille: swarm_rate(&mut rng, 2, 64),
            compact_permille: swarm_rate(&mut rng, 1, 32),
            minor_percent: rng.random_range(0..60),
            lag_max_us: rng.random_range(0..50_000),
            rng,
        }
    }

    /// A flush, a compaction (its cutoff never moves back), or `None`: a workload op.
    fn next(&mut self, now: HybridTime, cutoff: HybridTime) -> Option<Command> {
        let roll = self.rng.random_range(0..1000u32);
        if roll < self.flush_permille {
            return Some(Command::Flush);
        }
        if roll < self.flush_permille + self.compact_permille {
            let lag_us = self.rng.random_range(0..=self.lag_max_us);
            let target = HybridTime::from_raw(now.raw().saturating_sub(lag_us << 12));
            let minor = self.rng.random_range(0..100) < self.minor_percent;
            return Some(Command::Compact { cutoff: target.max(cutoff), minor });
        }
        None
    }
}

/// A swarm-testing rate in `lo..hi` (powers of two): an octave drawn uniformly, then a
/// value within it. Most seeds get a low rate, a few a high one (integer-only, so a seed
/// draws the same rates on every machine).
fn swarm_rate(rng: &mut ChaCha8Rng, lo: u32, hi: u32) -> u32 {
    assert!(lo.is_power_of_two() && hi.is_power_of_two() && lo < hi, "rate range {lo}..{hi}");
    let octaves = hi.trailing_zeros() - lo.trailing_zeros();
    let base = lo << rng.random_range(0..octaves);
    rng.random_range(base..2 * base)
}

/// Crash injection: how often, and at which stage. Drawn from its own stream.
struct Crashes {
    rng: ChaCha8Rng,
    per_10k: u32,
}

impl Crashes {
    fn new(mut rng: ChaCha8Rng) -> Crashes {
        // One seed in eight runs without crashes (swarm testing: a feature switched off).
        let per_10k = if rng.random_range(0..8u32) == 0 { 0 } else { swarm_rate(&mut rng, 4, 64) };
        Crashes { per_10k, rng }
    }

    /// Nothing, or the commands of one crash: at once, armed inside the next write, after
    /// a flush before its log GC, after a log GC, or after a compaction.
    fn next(&mut self, cutoff: HybridTime) -> Vec<Command> {
        if self.rng.random_range(0..10_000u32) >= self.per_10k {
            return Vec::new();
        }
        let torn = self.rng.random_range(0..2u32) == 1;
        let crash = |at| Command::Crash { at, torn };
        match self.rng.random_range(0..7u32) {
            0 => vec![crash(CrashAt::Now)],
            1..=3 => {
                let stage = CrashStage::ALL[self.rng.random_range(0..CrashStage::ALL.len())];
                vec![crash(CrashAt::Write(stage))]
            }
            4 => vec![crash(CrashAt::AfterFlush), Command::Flush],
            5 => vec![Command::Flush, crash(CrashAt::Now)],
            _ => vec![Command::Compact { cutoff, minor: false }, crash(CrashAt::Now)],
        }
    }
}

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "flush={}\u{2030} compact={}\u{2030} minor={}% cutoff_lag<={}us",
            self.flush_permille, self.compact_permille, self.minor_percent, self.lag_max_us
        )
    }
}

/// A fresh node (its tablets opened with `plant` planted) and model.
fn new_state(plant: Option<Plant>) -> (ScratchDir, State) {
    let scratch = ScratchDir::new().expect("scratch directory");
    let runner = Runner::in_memory(scratch.path()).expect("in-memory RocksDB environment");
    let state = State {
        runner: runner.with_plants(Plants::of(plant)),
        book: Book::default(),
        needs_restart: false,
        docs: Model::new(),
        tables: BTreeMap::new(),
        markers: MarkerMode::Optional,
        cutoff: HybridTime::MIN,
        recent_reads: std::collections::VecDeque::new(),
        script: Vec::new(),
        ops: Vec::new(),
        checked_reads: 0,
    };
    (scratch, state)
}

async fn simulate(config: RunConfig) -> RunOutcome {
    let mut workload_rng = stream(config.seed, STREAM_WORKLOAD);
    let mut clock_rng = stream(config.seed, STREAM_CLOCK);
    let mut schedule = Schedule::new(stream(config.seed, STREAM_SCHEDULE));
    let mut crashes = Crashes::new(stream(config.seed, STREAM_CRASHES));
    let mut workload = Workload::new(&mut workload_rng, config.profile);
    let step_mean_us = clock_rng.random_range(20..400u64);
    let jitter_us = clock_rng.random_range(0..50u64);
    let knobs = format!(
        "{} clock_step={step_mean_us}us jitter={jitter_us}us {schedule} crash={}/10k",
        workload.knobs(),
        crashes.per_10k
    );
    let clock = SimClock { rng: clock_rng.clone(), start: simulated_now(), jitter_us };
    let mut clock = HybridClock::new(clock);
    let (_scratch, mut state) = new_state(config.plant);
    let mut outcome = RunOutcome {
        seed: config.seed,
        knobs,
        steps: 0,
        ops: 0,
        checked_reads: 0,
        compactions: 0,
        trace_hash: FNV_OFFSET,
        trace: Vec::new(),
        failure: None,
        probes: BTreeMap::new(),
        faults: BTreeMap::new(),
        crashes: 0,
        restarts: 0,
        replayed: 0,
        expected_replayed: 0,
        seconds: 0.0,
        step_time: BTreeMap::new(),
    };
    let mut pending: std::collections::VecDeque<Op> = workload.setup_ops(clock.now()).into();
    while !pending.is_empty() || outcome.ops < config.ops {
        if pending.is_empty() && !state.needs_restart {
            pending.extend(crashes.next(state.cutoff).into_iter().map(Op::Doc));
        }
        let next = if state.needs_restart { None } else { pending.pop_front() };
        let op = match next {
            _ if state.needs_restart => Op::Doc(Command::Restart),
            Some(op) => op,
            None => {
                let step_us = clock_rng.random_range(1..=2 * step_mean_us);
                madsim::time::sleep(Duration::from_micros(step_us)).await;
                let now = clock.now();
                match schedule.next(now, state.cutoff) {
                    Some(command) => Op::Doc(command),
                    None => {
                        outcome.ops += 1;
                        workload.next_op(&mut workload_rng, now, state.cutoff)
                    }
                }
            }
        };
        if matches!(op, Op::Doc(Command::Compact { .. })) {
            outcome.compactions += 1;
        }
        let watch = crate::bench::Stopwatch::start();
        let result = step(&mut state, &op);
        let spent = docsim_reports::StepTime { steps: 1, seconds: watch.seconds() };
        outcome.step_time.entry(step_kind(&op)).or_default().add(spent);
        if !record(&mut outcome, &config, result, &op) {
            break;
        }
    }
    outcome.checked_reads = state.checked_reads;
    let book = &state.book;
    (outcome.crashes, outcome.restarts) = (book.crashes, book.restarts);
    (outcome.replayed, outcome.expected_replayed) = (book.replayed, book.expected_replayed);
    outcome.faults = book.crash_stages.clone();
    for fault in state.runner.disk().ledger() {
        *outcome.faults.entry(fault.kind().to_owned()).or_default() += 1;
    }
    outcome
}

/// What kind of step `op` is, for the time breakdown: `read`, `write`, `flush`,
/// `compaction` (with the re-checks after it), `crash` or `restart`.
fn step_kind(op: &Op) -> &'static str {
    match op {
        Op::Doc(Command::Restart) => "restart",
        Op::Doc(Command::Crash { .. }) => "crash",
        Op::Doc(Command::Flush) => "flush",
        Op::Doc(Command::Compact { .. }) => "compaction",
        _ if op.is_read() => "read",
        _ => "write",
    }
}

/// Hash (and keep) the step's trace line; store a failure. Returns whether to go on.
fn record(
    outcome: &mut RunOutcome,
    config: &RunConfig,
    result: Result<Vec<String>, Box<Failure>>,
    op: &Op,
) -> bool {
    let index = outcome.steps;
    outcome.steps += 1;
    let shown = result.as_ref().map_or_else(|f| f.actual.join(" | "), |r| r.join(" | "));
    let line = format!("#{index} {op} => {shown}");
    outcome.trace_hash = fnv(outcome.trace_hash, line.as_bytes());
    if config.keep_trace {
        outcome.trace.push(line);
    }
    match result {
        Ok(_) => true,
        Err(mut failure) => {
            failure.step = index;
            outcome.failure = Some(*failure);
            false
        }
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes.iter().chain(b"\n") {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// Execute one op on the engine and the model; `Ok` carries the engine's output lines.
fn step(state: &mut State, op: &Op) -> Result<Vec<String>, Box<Failure>> {
    state.script.push(op.to_string());
    state.ops.push(op.clone());
    let result = match op {
        Op::Doc(Command::Restart) => restart(state),
        Op::Doc(Command::Crash { at, .. }) => Ok(crash(state, op, *at)),
        Op::Doc(Command::Compact { cutoff, .. }) => {
            let cutoff = *cutoff;
            let lines = execute_engine(state, op);
            if after_flush(state, &lines) {
                return Ok(lines); // a crash armed for after the flush cut it
            }
            state.docs.compacted(cutoff.raw());
            state.tables.values_mut().for_each(|(_, m)| m.compacted(cutoff.raw()));
            state.cutoff = state.cutoff.max(cutoff);
            if let Err((expected, actual)) = recheck(state, cutoff) {
                let read = state.script.last().cloned().unwrap_or_default();
                let mut f = failure(state, op, expected, actual);
                f.op = format!("{read} (re-checked after {op})");
                f.kind = FailureKind::ChangedByCompaction;
                return Err(Box::new(f));
            }
            Ok(lines)
        }
        _ if op.is_read() => check_read(state, op),
        _ => check_write(state, op),
    };
    let acks = state.runner.take_acks();
    state.book.acked(acks);
    if let Ok(lines) = &result {
        expect_agreed_error(state, lines);
    }
    result.map_err(|(expected, actual)| Box::new(failure(state, op, expected, actual)))
}

type Mismatch = (Vec<String>, Vec<String>);

fn execute_engine(state: &mut State, op: &Op) -> Vec<String> {
    let command = match op {
        Op::Doc(c) => c.clone(),
        other => docsim_engine::script::parse_line(&other.to_string(), 1)
            .expect("ops print as valid docscript")
            .expect("not blank"),
    };
    let mut out = String::new();
    if let Err(e) = state.runner.execute(&command, &mut out) {
        out.push_str(&format!("error: {e}\n"));
    }
    out.lines().map(str::to_owned).collect()
}

/// What a reproducer expects where the model refuses an operation: any error (the model
/// names no engine message).
const EXPECT_ERROR: &str = "error";

/// Writes: engine and model must both succeed or both refuse.
fn check_write(state: &mut State, op: &Op) -> Result<Vec<String>, Mismatch> {
    let before = matches!(state.book.armed, Some(Some(_)))
        .then(|| Snapshot { docs: state.docs.clone(), tables: state.tables.clone() });
    let model: Result<(), ModelError> = match op {
        Op::Doc(Command::Markers(mode)) => {
            state.markers = *mode;
            Ok(())
        }
        Op::Doc(Command::DefaultTtl(us)) => {
            state.docs.set_table_ttl_ms(us.map(|us| us.div_ceil(1000)));
            Ok(())
        }
        Op::Doc(Command::Write { write, ht }) => {
            let markers = markers(state.markers);
            state.docs.write_batch(ht.raw(), markers, &[convert::write(write)])
        }
        Op::Doc(Command::Batch { ht, writes }) => {
            let writes: Vec<_> = writes.iter().map(convert::write).collect();
            state.docs.write_batch(ht.raw(), markers(state.markers), &writes)
        }
        Op::Doc(_) => Ok(()), // flush
        Op::Table(spec) => {
            let mut model = Model::new();
            model.set_table_ttl_ms(spec.schema.default_ttl_s.map(|s| s * 1000));
            state.tables.insert(spec.schema.name.clone(), (spec.schema.clone(), model));
            Ok(())
        }
        Op::Cql { ht, table, op: cql, .. } => {
            let (schema, model) = state.tables.get_mut(table).expect("declared table");
            model.cql(ht.raw(), schema, cql).map(|_| ())
        }
        Op::Redis { ht, op: redis } => state.docs.redis(ht.raw(), redis).map(|_| ()),
    };
    let lines = execute_engine(state, op);
    if after_flush(state, &lines) {
        return Ok(lines);
    }
    if let (Some(stage), Some(before)) = (crashed_at(&lines), before) {
        state.book.cut(stage, before);
        state.book.crashed(stage.name());
        state.needs_restart = true;
        return match model {
            Ok(()) => Ok(lines),
            Err(_) => Err((vec![EXPECT_ERROR.into()], lines)),
        };
    }
    let engine_failed = lines.iter().any(|l| l.starts_with("error:"));
    match (&model, engine_failed) {
        (Ok(()), false) | (Err(_), true) => Ok(lines),
        (Ok(()), true) => Err((Vec::new(), lines)),
        (Err(_), false) => Err((vec![EXPECT_ERROR.into()], lines)),
    }
}

/// The write stage an `error: crashed <stage>` line names.
fn crashed_at(lines: &[String]) -> Option<CrashStage> {
    let stage = lines.iter().find_map(|l| l.strip_prefix("error: crashed "))?;
    CrashStage::from_name(stage)
}

/// Book a flush (or compaction) that succeeded or was cut by a crash after it was durable;
/// returns whether the crash cut it.
fn after_flush(state: &mut State, lines: &[String]) -> bool {
    let flushing = state
        .ops
        .last()
        .is_some_and(|op| matches!(op, Op::Doc(Command::Flush) | Op::Doc(Command::Compact { .. })));
    let cut = lines.iter().any(|l| l == "error: crashed after-flush");
    if flushing && (cut || !lines.iter().any(|l| l.starts_with("error:"))) {
        state.book.flushed();
    }
    if cut {
        state.book.crashed("after-flush");
        state.needs_restart = true;
    }
    cut
}

/// A `crash` command: cut the power now, or arm a crash.
fn crash(state: &mut State, op: &Op, at: CrashAt) -> Vec<String> {
    state.book.ledger_seen = state.runner.disk().ledger().len();
    let lines = execute_engine(state, op);
    match at {
        CrashAt::Now => {
            let previous = state.ops.iter().rev().nth(1);
            let stage = match previous {
                Some(Op::Doc(Command::Flush)) => "after-log-gc",
                Some(Op::Doc(Command::Compact { .. })) => "after-compaction",
                _ => "idle",
            };
            state.book.crashed(stage);
            state.needs_restart = true;
        }
        CrashAt::Write(stage) => state.book.armed = Some(Some(stage)),
        CrashAt::AfterFlush => state.book.armed = Some(None),
    }
    lines
}

/// Restart the node and check bootstrap against the book; then the recent reads again.
fn restart(state: &mut State) -> Result<Vec<String>, Mismatch> {
    state.needs_restart = false;
    let acks = state.runner.take_acks();
    state.book.acked(acks);
    let in_doubt = state.runner.take_in_doubt();
    let names = state.runner.tablet_names();
    let outcome = state.runner.restart().map_err(|e| e.to_string());
    let ledger = state.runner.disk().ledger();
    let checked = state.book.restarted(&names, &outcome, in_doubt, &ledger);
    let lines = match &outcome {
        Ok(reports) => reports.iter().map(|(n, r)| format_restart(n, r)).collect(),
        Err(e) => vec![format!("error: {e}")],
    };
    match checked {
        Ok(Some(before)) => {
            state.docs = before.docs;
            state.tables = before.tables;
        }
        Ok(None) => {}
        Err(mismatch) => return Err(mismatch),
    }
    let cutoff = state.cutoff;
    recheck(state, cutoff)?;
    Ok(lines)
}

fn markers(mode: MarkerMode) -> Markers {
    match mode {
        MarkerMode::Optional => Markers::Optional,
        MarkerMode::Required => Markers::Required,
    }
}

/// Reads: the engine's answer must equal the model's.
fn check_read(state: &mut State, op: &Op) -> Result<Vec<String>, Mismatch> {
    state.checked_reads += 1;
    state.recent_reads.push_back(op.clone());
    if state.recent_reads.len() > 16 {
        state.recent_reads.pop_front();
    }
    match op {
        Op::Doc(Command::Get { path, ht }) => check_get(state, path, *ht),
        Op::Cql { ht, table, op: cql, text } => check_select(state, *ht, table, cql, text),
        Op::Redis { ht, op: redis } => check_redis(state, *ht, redis),
        other => unreachable!("not a read: {other}"),
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

fn check_get(state: &mut State, path: &DocPath, ht: HybridTime) -> Result<Vec<String>, Mismatch> {
    let subkeys: Vec<_> = path.subkeys.iter().map(convert::key).collect();
    let want = state.docs.read(&convert::doc_id(&path.doc_key), &subkeys, ht.raw());
    let got = state.runner.get(path, ht);
    let show = |d: Option<Document>| format_get(path, ht, d.as_ref());
    let same = match (&want, &got) {
        (Ok(w), Ok(g)) => *w == g.as_ref().map(convert::doc),
        (Err(_), Err(_)) => true,
        _ => false,
    };
    let want_line = match &want {
        Ok(d) => show(d.as_ref().map(convert::document)),
        Err(_) => EXPECT_ERROR.into(),
    };
    let got_line = got.map_or_else(|e| format!("error: {e}"), show);
    verdict(same, vec![want_line], vec![got_line])
}

fn check_select(
    state: &mut State,
    ht: HybridTime,
    table: &str,
    cql: &CqlOp,
    text: &str,
) -> Result<Vec<String>, Mismatch> {
    let (schema, model) = state.tables.get_mut(table).expect("declared table");
    let want = model.cql(ht.raw(), schema, cql);
    let got = state.runner.cql_run(ht, text);
    let same = match (&want, &got) {
        (Ok(CqlResult::Rows(w)), Ok(CqlOutcome::Rows(g))) => {
            let g: Vec<Vec<_>> = g
                .iter()
                .map(|r| r.iter().map(|(n, c)| (n.clone(), convert::cell(c))).collect())
                .collect();
            *w == g
        }
        (Err(_), Err(_)) => true,
        _ => false,
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
        Err(_) => vec![EXPECT_ERROR.into()],
    };
    let got_lines = match got {
        Ok(CqlOutcome::Rows(rows)) => format_rows(&rows),
        Ok(CqlOutcome::Written) => Vec::new(),
        Err(e) => vec![format!("error: {e}")],
    };
    verdict(same, want_lines, got_lines)
}

fn check_redis(
    state: &mut State,
    ht: HybridTime,
    redis: &RedisOp,
) -> Result<Vec<String>, Mismatch> {
    let want = state.docs.redis(ht.raw(), redis);
    let got = state.runner.redis_run(ht, &docsim_workloads::redis_command(redis));
    let same = match (&want, &got) {
        (Ok(w), Ok(g)) => *w == convert::reply(g),
        (Err(_), Err(_)) => true,
        _ => false,
    };
    let lines = |text: String| text.lines().map(str::to_owned).collect::<Vec<_>>();
    let want_lines = match &want {
        Ok(r) => lines(convert::engine_reply(r).to_string()),
        Err(_) => vec![EXPECT_ERROR.into()],
    };
    let got_lines = match &got {
        Ok(r) => lines(r.to_string()),
        Err(e) => vec![format!("error: {e}")],
    };
    verdict(same, want_lines, got_lines)
}

/// After a compaction with `cutoff`, reads at or above it must not have changed.
fn recheck(state: &mut State, cutoff: HybridTime) -> Result<(), Mismatch> {
    let reads: Vec<Op> =
        state.recent_reads.iter().filter(|op| read_time(op) >= Some(cutoff)).cloned().collect();
    for read in reads {
        state.script.push(read.to_string());
        let lines = check_read(state, &read)?;
        expect_agreed_error(state, &lines);
    }
    Ok(())
}

/// An error both sides agree on is part of the run: the reproducer expects it.
fn expect_agreed_error(state: &mut State, lines: &[String]) {
    if lines.iter().any(|l| l.starts_with("error:")) {
        state.script.push("expect error".into());
    }
}

fn read_time(op: &Op) -> Option<HybridTime> {
    match op {
        Op::Doc(Command::Get { ht, .. }) | Op::Cql { ht, .. } | Op::Redis { ht, .. } => Some(*ht),
        _ => None,
    }
}

fn failure(state: &State, op: &Op, expected: Vec<String>, actual: Vec<String>) -> Failure {
    let last_ops: Vec<String> = state.script.iter().rev().take(12).rev().cloned().collect();
    let mut reproducer = state.script.join("\n");
    reproducer.push('\n');
    for line in &expected {
        reproducer.push_str(&format!("expect {line}\n"));
    }
    if expected.is_empty() {
        reproducer.push_str("# expected: this write succeeds\n");
    }
    let kind = match op {
        Op::Doc(Command::Restart) => FailureKind::Restart,
        Op::Doc(Command::Get { .. }) => FailureKind::Get,
        Op::Cql { op: CqlOp::Select { .. }, .. } => FailureKind::Select,
        Op::Redis { .. } if op.is_read() => FailureKind::Redis,
        _ if expected.is_empty() => FailureKind::EngineRefusedWrite,
        _ => FailureKind::EngineAcceptedWrite,
    };
    let ops = state.ops.clone();
    Failure { step: 0, op: op.to_string(), expected, actual, last_ops, reproducer, kind, ops }
}

/// Run a fixed op list (no generation: the ops carry their times) through the same checks
/// as a simulated run; the first failure, if any. The shrinker's oracle.
pub fn replay_ops(ops: &[Op], plant: Option<Plant>) -> Option<Failure> {
    let (_scratch, mut state) = new_state(plant);
    let failure = ops.iter().enumerate().find_map(|(i, op)| {
        step(&mut state, op).err().map(|mut f| {
            f.step = i;
            *f
        })
    });
    failure
}
