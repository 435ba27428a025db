//! One simulated run: a seed, a workload, a schedule, a simulated clock, and a check of
//! every read against the reference model.
//!
//! The seed feeds independent ChaCha streams, one per subsystem (workload, clock,
//! schedule), so a new knob in one never reshuffles another. madsim runs the run with
//! simulated time: each step sleeps a jittered simulated interval, and the hybrid clock
//! reads that simulated time through a skewing physical clock.

use crate::step::{step_catching_panics, State};
use crate::ScratchDir;
use docsim_engine::canary::{Plant, Plants};
use docsim_engine::StorageConfig;
use docsim_engine::{HybridClock, HybridTime, PhysicalClock, TabletId};
use docsim_workloads::{CrashPoint, DiskFault, Op, Profile, Workload};
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
    /// RocksDB table options and row layout (`docsim run --metamorphic` runs the set).
    pub storage: docsim_engine::StorageConfig,
    /// Disk faults whose effect depends on where bytes lie in the log (I/O errors and
    /// full disks at the next write, torn crashes, bit flips). On, but for the metamorphic
    /// comparison of row layouts: packed rows make log entries smaller, so such a fault
    /// lands elsewhere (`metamorphic.rs`). Crashes stay, untorn.
    pub byte_faults: bool,
}

impl RunConfig {
    /// A run of `ops` operations of `seed`, the seed choosing everything else, with
    /// every fault and the default storage configuration.
    pub fn new(seed: u64, ops: usize) -> RunConfig {
        RunConfig {
            seed,
            ops,
            profile: None,
            plant: None,
            keep_trace: false,
            storage: docsim_engine::StorageConfig::default(),
            byte_faults: true,
        }
    }
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
    /// A Redis reply differs (to a read, or to a write).
    Redis,
    /// A write (or a flush, compaction or crash arm) failed in the engine but not in the
    /// model.
    EngineRefusedWrite,
    /// A write succeeded in the engine but the model refuses it.
    EngineAcceptedWrite,
    /// A read at or above a compaction's cutoff changed after it.
    ChangedByCompaction,
    /// A full compaction left an entry no read at or above its cutoff can need
    /// (`gc_complete.rs`).
    GcIncomplete,
    /// Log GC left a segment that the flushed frontier frees (`Book::log_gc_leftovers`).
    LogGcIncomplete,
    /// A restart failed, or reported a frontier or replay other than the book's.
    Restart,
    /// The engine (or the harness) panicked: a failed seed, not a dead campaign.
    Panic,
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
    /// Wall-clock time by part of the simulator: `engine` (calls on the node), `model`
    /// (calls on the reference model) and `harness` (everything else in a step:
    /// rendering, the trace, comparisons, the book). For reports only.
    pub part_time: BTreeMap<&'static str, docsim_reports::StepTime>,
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
const STREAM_DISK: u64 = 5;
const STREAM_FAULTS: u64 = 6;
/// The storage configuration torture draws per seed (`metamorphic::drawn`).
pub(crate) const STREAM_STORAGE: u64 = 7;

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
pub(crate) fn simulated_now() -> madsim::time::Instant {
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

/// The schedule's knobs: how often the simulator flushes and compacts, and how far the
/// history cutoff lags behind now. Drawn from the schedule stream.
struct Schedule {
    rng: ChaCha8Rng,
    flush_permille: u32,
    compact_permille: u32,
    minor_percent: u32,
    /// Of minor compactions, the share (in %) that take a run of files, not all of them.
    run_percent: u32,
    lag_max_us: u64,
}

impl Schedule {
    fn new(mut rng: ChaCha8Rng) -> Schedule {
        Schedule {
            flush_permille: swarm_rate(&mut rng, 2, 64),
            compact_permille: swarm_rate(&mut rng, 1, 32),
            minor_percent: rng.random_range(0..60),
            lag_max_us: rng.random_range(0..50_000),
            run_percent: rng.random_range(0..100),
            rng,
        }
    }

    /// A flush, a compaction (its cutoff never moves back; a minor one may take a run of
    /// the `doc_files` SST files of the document tablet), or `None`: a workload op.
    fn next(
        &mut self,
        now: HybridTime,
        cutoff: HybridTime,
        doc_files: impl FnOnce() -> usize,
    ) -> Option<Op> {
        let roll = self.rng.random_range(0..1000u32);
        if roll < self.flush_permille {
            return Some(Op::Flush);
        }
        if roll < self.flush_permille + self.compact_permille {
            let lag_us = self.rng.random_range(0..=self.lag_max_us);
            let target = HybridTime::from_raw(now.raw().saturating_sub(lag_us << 12));
            let minor = self.rng.random_range(0..100) < self.minor_percent;
            let run = minor && self.rng.random_range(0..100) < self.run_percent;
            let doc_files = if run { doc_files() } else { 0 };
            let files = (doc_files > 0).then(|| {
                let first = self.rng.random_range(0..doc_files);
                (first, self.rng.random_range(first..doc_files))
            });
            return Some(Op::Compact { cutoff: target.max(cutoff).raw(), minor, files });
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
    fn next(&mut self, cutoff: HybridTime) -> Vec<Op> {
        if self.rng.random_range(0..10_000u32) >= self.per_10k {
            return Vec::new();
        }
        let torn = self.rng.random_range(0..2u32) == 1;
        // Which sector boundary a torn crash keeps is the disk-fault stream's to draw.
        let crash = |at| Op::Crash { at, tear: torn.then_some(0) };
        const IN_WRITE: [CrashPoint; 3] =
            [CrashPoint::AfterAppend, CrashPoint::AfterSync, CrashPoint::AfterApply];
        match self.rng.random_range(0..7u32) {
            0 => vec![crash(CrashPoint::Now)],
            1..=3 => vec![crash(IN_WRITE[self.rng.random_range(0..IN_WRITE.len())])],
            4 => vec![crash(CrashPoint::AfterFlush), Op::Flush],
            5 => vec![Op::Flush, crash(CrashPoint::Now)],
            _ => vec![
                Op::Compact { cutoff: cutoff.raw(), minor: false, files: None },
                crash(CrashPoint::Now),
            ],
        }
    }
}

/// Disk faults beyond power loss, drawn from their own stream by swarm: one seed in four
/// injects none, the others a few kinds at a rate of their own (most seeds few faults,
/// some many).
struct DiskFaults {
    rng: ChaCha8Rng,
    /// Per 10k steps, the chance of arming an I/O fault for the next write.
    io_per_10k: u32,
    /// The I/O faults this seed arms.
    io_kinds: Vec<IoKind>,
    /// A torn crash keeps its tail up to a sector boundary in `0..=max_sector`.
    max_sector: u32,
    /// The chance (in %) that an immediate crash comes with a bit flip in synced log data.
    flip_percent: u32,
    /// Whether a crash the crash stream draws torn tears (else it is a clean power cut).
    tears: bool,
}

#[derive(Clone, Copy, Debug)]
enum IoKind {
    Append,
    Sync,
    Full,
}

impl DiskFaults {
    fn new(mut rng: ChaCha8Rng) -> DiskFaults {
        let on = rng.random_range(0..4u32) != 0;
        let io_on = on && rng.random_range(0..3u32) != 0;
        let io_per_10k = if io_on { swarm_rate(&mut rng, 4, 128) } else { 0 };
        let mut io_kinds: Vec<IoKind> = [IoKind::Append, IoKind::Sync, IoKind::Full]
            .into_iter()
            .filter(|_| rng.random_range(0..2u32) == 1)
            .collect();
        if io_kinds.is_empty() {
            io_kinds.push([IoKind::Append, IoKind::Sync, IoKind::Full][rng.random_range(0..3)]);
        }
        let max_sector = if on { rng.random_range(0..8) } else { 0 };
        let flip_on = on && rng.random_range(0..4u32) == 0;
        let flip_percent = if flip_on { rng.random_range(1..30) } else { 0 };
        DiskFaults { rng, io_per_10k, io_kinds, max_sector, flip_percent, tears: true }
    }

    /// No fault whose effect depends on the log's bytes (the draws above stay, so every
    /// other stream is unchanged).
    fn placed_by_bytes_off(&mut self) {
        (self.io_per_10k, self.flip_percent, self.tears) = (0, 0, false);
    }

    /// The sector boundary a torn crash keeps.
    fn tear_sector(&mut self) -> u32 {
        self.rng.random_range(0..=self.max_sector)
    }

    /// An I/O fault for the next write, or nothing.
    fn next_io(&mut self) -> Option<Op> {
        if self.rng.random_range(0..10_000u32) >= self.io_per_10k {
            return None;
        }
        Some(Op::Fault(match self.io_kinds[self.rng.random_range(0..self.io_kinds.len())] {
            IoKind::Append => DiskFault::AppendError,
            IoKind::Sync => DiskFault::SyncError,
            // Little room: most writes hit it, some fit and the fault is lifted unfired.
            IoKind::Full => DiskFault::DiskFull { free_bytes: self.rng.random_range(0..200) },
        }))
    }

    /// A bit flip in synced data of some log file (weighted by synced bytes), or nothing.
    fn flip(&mut self, disk: &docsim_engine::disk::SimDisk) -> Option<Op> {
        if self.rng.random_range(0..100) >= self.flip_percent {
            return None;
        }
        let files: Vec<(String, usize)> = disk
            .list("")
            .into_iter()
            .filter_map(|name| disk.synced_len(&name).map(|len| (name, len)))
            .filter(|(_, len)| *len > 0)
            .collect();
        let total: usize = files.iter().map(|(_, len)| len).sum();
        if total == 0 {
            return None;
        }
        let (mut at, bit) = (self.rng.random_range(0..total), self.rng.random_range(0..8u8));
        for (file, len) in files {
            if at < len {
                return Some(Op::Fault(DiskFault::Flip { file, offset: at, bit }));
            }
            at -= len;
        }
        unreachable!("`at` is below the total")
    }
}

impl std::fmt::Display for DiskFaults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "io={}/10k {:?} tear<={} flip={}%",
            self.io_per_10k, self.io_kinds, self.max_sector, self.flip_percent
        )
    }
}

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "flush={}\u{2030} compact={}\u{2030} minor={}% runs={}% cutoff_lag<={}us",
            self.flush_permille,
            self.compact_permille,
            self.minor_percent,
            self.run_percent,
            self.lag_max_us
        )
    }
}

/// A run's state: its node in a scratch directory, with the planted bug, and the disk's
/// random stream derived from the run's seed.
fn new_state(plant: Option<Plant>, seed: u64, storage: StorageConfig) -> (ScratchDir, State) {
    let scratch = ScratchDir::new().expect("scratch directory");
    let disk_seed = stream(seed, STREAM_DISK).random::<u64>();
    let state = State::new(scratch.path(), Plants::of(plant), disk_seed, storage);
    (scratch, state)
}

async fn simulate(config: RunConfig) -> RunOutcome {
    let mut workload_rng = stream(config.seed, STREAM_WORKLOAD);
    let mut clock_rng = stream(config.seed, STREAM_CLOCK);
    let mut schedule = Schedule::new(stream(config.seed, STREAM_SCHEDULE));
    let mut crashes = Crashes::new(stream(config.seed, STREAM_CRASHES));
    let mut faults = DiskFaults::new(stream(config.seed, STREAM_FAULTS));
    if !config.byte_faults {
        faults.placed_by_bytes_off();
    }
    let mut workload = Workload::new(&mut workload_rng, config.profile);
    let step_mean_us = clock_rng.random_range(20..400u64);
    let jitter_us = clock_rng.random_range(0..50u64);
    let knobs = format!(
        "{} clock_step={step_mean_us}us jitter={jitter_us}us {schedule} crash={}/10k {faults} \
         storage=[{}]",
        workload.knobs(),
        crashes.per_10k,
        config.storage
    );
    let clock = SimClock { rng: clock_rng.clone(), start: simulated_now(), jitter_us };
    let mut clock = HybridClock::new(clock);
    let (_scratch, mut state) = new_state(config.plant, config.seed, config.storage);
    crate::step::note_run(Some(crate::report::reproduce_command(&config, config.seed)));
    let mut outcome = RunOutcome::new(config.seed, knobs);
    let mut pending: std::collections::VecDeque<Op> = workload.setup_ops(clock.now().raw()).into();
    let mut flipped = false;
    // A run that spent its operations on a crash still restarts and re-checks (a rule of
    // docsim's own): every crash's restart is compared with the book, the last one too.
    while !state.ended && (!pending.is_empty() || state.settling() || outcome.ops < config.ops) {
        let idle = !state.settling() && state.book.fault_armed_at.is_none();
        if pending.is_empty() && idle {
            // The node opens its document tablet at first use, which writes to the disk:
            // an I/O fault is armed only once it is open, so that the next write fires it.
            let docs_open = state.node.tablet_ids().contains(&TabletId::Docs);
            pending.extend(next_faults(&mut crashes, &mut faults, state.cutoff, docs_open));
        }
        let next = match state.queued.pop_front() {
            Some(op) => Some(op),
            // While the power is off, a bit of synced log data may rot (once).
            None if state.needs_restart && !flipped => Some(flip_or_restart(&mut faults, &state)),
            None if state.needs_restart => Some(Op::Restart),
            None => pending.pop_front(),
        };
        let op = match next {
            Some(op) => op,
            None => {
                let step_us = clock_rng.random_range(1..=2 * step_mean_us);
                madsim::time::sleep(Duration::from_micros(step_us)).await;
                let now = clock.now();
                let cutoff = state.cutoff;
                schedule.next(now, cutoff, || state.doc_files()).unwrap_or_else(|| {
                    outcome.ops += 1;
                    workload.next_op(&mut workload_rng, now.raw(), state.cutoff.raw())
                })
            }
        };
        flipped = matches!(op, Op::Fault(DiskFault::Flip { .. }));
        if matches!(op, Op::Compact { .. }) {
            outcome.compactions += 1;
        }
        if !timed_step(&mut state, &mut outcome, &config, &op) {
            break;
        }
    }
    outcome.finish(&state);
    crate::step::note_run(None);
    outcome
}

/// The next crash group, or else an I/O fault for the next write, or nothing. A torn
/// crash keeps its tail up to a sector boundary the fault stream draws.
fn next_faults(
    crashes: &mut Crashes,
    faults: &mut DiskFaults,
    cutoff: HybridTime,
    io_allowed: bool,
) -> Vec<Op> {
    let mut group = crashes.next(cutoff);
    if group.is_empty() {
        group.extend(faults.next_io().filter(|_| io_allowed));
    }
    for op in &mut group {
        if let Op::Crash { tear: tear @ Some(_), .. } = op {
            *tear = faults.tears.then(|| faults.tear_sector());
        }
    }
    group
}

/// Before a restart, a bit flip in the disk's synced log data if the fault stream draws
/// one (chosen now, from the disk as the crash left it), else the restart. Not after a
/// torn crash: the bytes a tear kept are durable but not all whole records, and a flip
/// there is a torn tail, not corruption.
fn flip_or_restart(faults: &mut DiskFaults, state: &State) -> Op {
    let disk = state.node.disk();
    let torn = disk
        .ledger_since(state.book.ledger_seen)
        .iter()
        .any(|f| matches!(f, docsim_engine::disk::Fault::Torn { .. }));
    match faults.flip(disk) {
        Some(flip) if !torn => flip,
        _ => Op::Restart,
    }
}

/// Run one step, record its trace line and its time; returns whether to go on.
fn timed_step(state: &mut State, outcome: &mut RunOutcome, config: &RunConfig, op: &Op) -> bool {
    let watch = crate::bench::Stopwatch::start();
    let parts_before = state.parts;
    crate::step::note_step(outcome.steps);
    let (line, result) = step_catching_panics(state, op);
    let seconds = watch.seconds();
    let spent = docsim_reports::StepTime { steps: 1, seconds };
    outcome.step_time.entry(step_kind(op)).or_default().add(spent);
    add_parts(&mut outcome.part_time, seconds, parts_before, state.parts);
    record(outcome, config, result, &line)
}

impl RunOutcome {
    fn new(seed: u64, knobs: String) -> RunOutcome {
        RunOutcome {
            seed,
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
            part_time: BTreeMap::new(),
        }
    }

    /// Take the counts the run's state kept: reads, crashes, replays, faults.
    fn finish(&mut self, state: &State) {
        self.checked_reads = state.checked_reads;
        let book = &state.book;
        (self.crashes, self.restarts) = (book.crashes, book.restarts);
        assert!(
            self.failure.is_some() || book.crashes == book.restarts,
            "seed {}: a passing run left {} crashes for {} restarts",
            self.seed,
            book.crashes,
            book.restarts
        );
        (self.replayed, self.expected_replayed) = (book.replayed, book.expected_replayed);
        self.faults = book.crash_stages.clone();
        for fault in state.node.disk().ledger() {
            *self.faults.entry(fault.kind().to_owned()).or_default() += 1;
        }
        if state.ended {
            self.faults.insert("ended-by-refused-corrupt-log".to_owned(), 1);
        }
    }
}

/// Split one step's `seconds` into the node's part, the model's and the harness's.
fn add_parts(
    parts: &mut BTreeMap<&'static str, docsim_reports::StepTime>,
    seconds: f64,
    before: crate::step::Parts,
    after: crate::step::Parts,
) {
    let engine_s = after.engine_s - before.engine_s;
    let model_s = after.model_s - before.model_s;
    let harness_s = (seconds - engine_s - model_s).max(0.0);
    for (part, seconds) in [("engine", engine_s), ("model", model_s), ("harness", harness_s)] {
        parts.entry(part).or_default().add(docsim_reports::StepTime { steps: 1, seconds });
    }
}

/// What kind of step `op` is, for the time breakdown: `read`, `write`, `flush`,
/// `compaction` (with the re-checks after it), `crash` or `restart`.
fn step_kind(op: &Op) -> &'static str {
    match op {
        Op::Restart => "restart",
        Op::Crash { .. } => "crash",
        Op::Fault(_) => "fault",
        Op::Flush => "flush",
        Op::Compact { .. } => "compaction",
        _ if op.is_read() => "read",
        _ => "write",
    }
}

/// Hash (and keep) the step's trace line; store a failure. Returns whether to go on.
fn record(
    outcome: &mut RunOutcome,
    config: &RunConfig,
    result: Result<Vec<String>, Box<Failure>>,
    op: &str,
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

pub(crate) const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a over `bytes` and a newline, continuing from `hash`.
pub(crate) fn fnv(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes.iter().chain(b"\n") {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// Run a fixed op list (no generation: the ops carry their times) through the same checks
/// as a simulated run; the first failure, if any. The shrinker's oracle.
pub fn replay_ops(
    ops: &[Op],
    plant: Option<Plant>,
    seed: u64,
    storage: StorageConfig,
) -> Option<Failure> {
    let (_scratch, mut state) = new_state(plant, seed, storage);
    ops.iter().enumerate().find_map(|(i, op)| {
        step_catching_panics(&mut state, op).1.err().map(|mut f| {
            f.step = i;
            *f
        })
    })
}
