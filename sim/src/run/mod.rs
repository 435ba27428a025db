//! One simulated run: a seed, a group of 1, 3 or 5 replicas of every tablet, a workload of
//! the whole data model, a schedule of flushes and compactions per node, power cuts and
//! disk faults, and with replicas a nemesis (partitions, skew, loss, slow disks,
//! membership changes). Every step goes through the one executor (`exec/`), which records
//! it as docscript; the checker (`check/`) judges every event. A group of one is the same
//! path with one node: its writes are answered in the call that proposes them.
//!
//! The seed feeds independent ChaCha streams, one per part (`knobs.rs`), so a new knob in
//! one never reshuffles another. madsim runs the run with simulated time.

mod driver;
pub mod knobs;
mod nemesis;
pub mod step;

pub use driver::header;
pub use step::Step;

use crate::exec::{Counts, ScriptSink, Setup};
use crate::failure::FailureKind;
use docsim_engine::canary::{Plant, Plants};
use docsim_engine::StorageConfig;
use docsim_workloads::Profile;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// What to run.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The seed that rules the run.
    pub seed: u64,
    /// Replicas per tablet: 1, 3 or 5.
    pub replicas: usize,
    /// Workload operations to run (flushes, compactions and faults come on top).
    pub ops: usize,
    /// Force a profile (default: the seed draws one).
    pub profile: Option<Profile>,
    /// A planted bug to switch on.
    pub plant: Option<Plant>,
    /// Keep every trace line (for `replay` and the determinism check).
    pub keep_trace: bool,
    /// The layout of the CQL tables, and node 1's RocksDB options (`--config`); with
    /// replicas the other nodes draw theirs unless `same_options`.
    pub storage: StorageConfig,
    /// Every node with `storage`'s RocksDB options (the metamorphic comparison).
    pub same_options: bool,
    /// Disk faults whose effect depends on where bytes lie in the log (I/O errors and full
    /// disks at the next write, torn crashes, bit flips). On, but for the metamorphic
    /// comparison of row layouts.
    pub byte_faults: bool,
    /// The nemesis (replicated runs): partitions, skew, loss, slow disks, membership.
    pub faults: bool,
    /// RocksDB's files in its in-memory environment instead of on the simulated disk
    /// (`--rocks-in-memory`: what the simulated disk costs, measured).
    pub rocks_in_memory: bool,
}

impl RunConfig {
    /// A run of `ops` operations of `seed` with `replicas` replicas, the seed choosing
    /// everything else, with every fault and the default storage configuration.
    pub fn new(seed: u64, replicas: usize, ops: usize) -> RunConfig {
        RunConfig {
            seed,
            replicas,
            ops,
            profile: None,
            plant: None,
            keep_trace: false,
            storage: StorageConfig::default(),
            same_options: false,
            byte_faults: true,
            faults: true,
            rocks_in_memory: false,
        }
    }
}

/// A check that failed, with what the reproducer needs.
#[derive(Clone, Debug)]
pub struct Failure {
    /// Index of the failing step.
    pub step: usize,
    /// The failing command (docscript).
    pub op: String,
    /// What the check expected, as output lines.
    pub expected: Vec<String>,
    /// What the engine did.
    pub actual: Vec<String>,
    /// The last commands before it (docscript).
    pub last_ops: Vec<String>,
    /// A docscript that reproduces the failure with `docsim script` alone.
    pub reproducer: String,
    /// What kind of check failed (the shrinker keeps it).
    pub kind: FailureKind,
    /// Every step executed up to and including the failing one (for the shrinker).
    pub steps: Vec<Step>,
}

/// How a run ended.
#[derive(Clone, Debug, Default)]
pub struct RunOutcome {
    pub seed: u64,
    pub replicas: usize,
    /// Every knob the seed chose.
    pub knobs: String,
    /// Steps executed (client ops, node commands, network commands, re-checks).
    pub steps: usize,
    /// Workload operations executed.
    pub ops: usize,
    /// Reads compared with the model (re-checks and convergence reads included).
    pub checked_reads: usize,
    /// Reads checked, by the node that served them.
    pub checked_by_node: BTreeMap<u64, usize>,
    /// Compactions run.
    pub compactions: usize,
    /// Rolling FNV-1a hash of the trace.
    pub trace_hash: u64,
    /// The trace lines, when kept.
    pub trace: Vec<String>,
    /// The run as docscript (what the reproducer starts from).
    pub script: Vec<String>,
    /// The first failed check, if any.
    pub failure: Option<Failure>,
    /// Coverage probes hit during the run.
    pub probes: BTreeMap<String, u64>,
    /// Faults injected, by kind: power cuts by point, disk faults by kind, the nemesis's.
    pub faults: BTreeMap<String, u64>,
    pub crashes: u64,
    pub restarts: u64,
    /// Log entries bootstrap replayed, and (a group of one) the entries the book expected.
    pub replayed: u64,
    pub expected_replayed: u64,
    /// What the executor counted (writes answered, reads refused, leaders, snapshots...).
    pub counts: Counts,
    /// Wall-clock seconds the run took (for reports; never steers the run).
    pub seconds: f64,
    /// Wall-clock time by kind of step, for reports only.
    pub step_time: BTreeMap<&'static str, docsim_reports::StepTime>,
    /// Wall-clock time by part: the replicas' work, the clients' calls, the checker, the
    /// rest (madsim, the executor, the workload). For reports only.
    pub part_time: BTreeMap<&'static str, docsim_reports::StepTime>,
}

/// What survives a panic inside a run: the script and the steps so far.
#[derive(Clone, Default)]
pub struct Sinks {
    pub script: ScriptSink,
    pub steps: Arc<Mutex<Vec<Step>>>,
}

/// Run one seed under madsim. A panic is a failed run (kind `panic`), with the script and
/// steps up to it.
pub fn run(config: &RunConfig) -> RunOutcome {
    run_steps(config, None)
}

/// Run `steps` (no generation: a shrinker's candidate), under the seed's setup and
/// checks; `None`: the seed's own generated run.
pub fn run_steps(config: &RunConfig, steps: Option<Vec<Step>>) -> RunOutcome {
    let _ = docsim_engine::probe::take();
    crate::cost::take();
    let watch = crate::bench::Stopwatch::start();
    let sinks = Sinks::default();
    let shared = sinks.clone();
    let config2 = config.clone();
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let mut runtime =
            madsim::runtime::Runtime::with_seed_and_config(config2.seed, madsim::Config::default());
        // RocksDB starts its own threads (flush, compaction, a timer). They never race the
        // simulation: every flush and compaction is waited for before the next step.
        runtime.set_allow_system_thread(true);
        runtime.block_on(driver::simulate(config2, shared, steps))
    }));
    let mut outcome = ran.unwrap_or_else(|panic| panicked(config, &sinks, &*panic));
    outcome.probes = docsim_engine::probe::take();
    outcome.seconds = watch.seconds();
    add_parts(&mut outcome, crate::cost::take());
    outcome
}

/// The outcome of a run that panicked: a failure of kind `panic` at its last step.
fn panicked(config: &RunConfig, sinks: &Sinks, panic: &(dyn std::any::Any + Send)) -> RunOutcome {
    let message = panic_message(panic);
    let script = sinks.script.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let steps = sinks.steps.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut reproducer =
        driver::header(config).into_iter().chain(script.clone()).collect::<Vec<_>>();
    reproducer.push(format!("# expected: no panic (panic: {message})"));
    let failure = Failure {
        step: steps.len(),
        op: script.last().and_then(|r| r.lines().next()).unwrap_or_default().to_owned(),
        expected: vec![],
        actual: vec![format!("panic: {message}")],
        last_ops: script.iter().rev().take(12).rev().cloned().collect(),
        reproducer: reproducer.join("\n") + "\n",
        kind: FailureKind::Panic,
        steps,
    };
    RunOutcome {
        seed: config.seed,
        replicas: config.replicas,
        script,
        failure: Some(failure),
        ..RunOutcome::default()
    }
}

/// What a panic said.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic.downcast_ref::<String>().cloned();
    text.or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".into())
}

/// The run's wall time split by part (`cost.rs`): replicas, client calls, checker, rest.
fn add_parts(outcome: &mut RunOutcome, [replicas, calls, check]: [f64; 3]) {
    let rest = (outcome.seconds - replicas - calls - check).max(0.0);
    for (part, seconds) in
        [("replicas", replicas), ("clients", calls), ("checker", check), ("rest", rest)]
    {
        let spent = docsim_reports::StepTime { steps: 1, seconds };
        outcome.part_time.entry(part).or_default().add(spent);
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

/// The setup a seed's run has: its header, each node's storage, disk seeds, election
/// jitter.
pub fn setup(config: &RunConfig, nemesis: &knobs::Nemesis) -> Setup {
    let header = docsim_engine::script::Header {
        replicas: config.replicas,
        seed: config.seed,
        loss_percent: nemesis.loss_percent,
        max_skew_us: nemesis.max_skew_us,
    };
    let mut setup = Setup::scripted(header, Plants::of(config.plant), crate::script::SEGMENT_BYTES);
    setup.storage = (0..config.replicas + 1)
        .map(|i| match i == 0 || config.same_options {
            true => config.storage,
            false => node_options(config.seed, i, config.storage),
        })
        .collect();
    if config.rocks_in_memory {
        setup.medium = docsim_engine::Medium::Memory;
    }
    setup
}

/// The RocksDB options node `index` (0-based) of a replicated run of `seed` runs, drawn
/// from the set's option sets (the layout is the table's, `base`'s, on every replica):
/// replicas of one group differ in block size, bloom filters, compression and memtable,
/// and must never read differently.
fn node_options(seed: u64, index: usize, base: StorageConfig) -> StorageConfig {
    use rand::Rng;
    let mut rng = crate::streams::stream(
        seed ^ (index as u64).wrapping_mul(0x5851_F42D_4C95_7F2D),
        crate::streams::STREAM_STORAGE,
    );
    let options: Vec<StorageConfig> = StorageConfig::SET
        .iter()
        .copied()
        .filter(|s| s.layout == docsim_engine::Layout::Declared)
        .collect();
    StorageConfig { layout: base.layout, ..options[rng.random_range(0..options.len())] }
}
