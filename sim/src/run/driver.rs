//! The random run's loop: draw the next step (a fault's aftermath first, then power cuts
//! and disk faults, the nemesis, the schedule, the workload), carry it out through the
//! executor, and hand its events to the checker; stop at the first failure and build its
//! reproducer from the run's recorded script.

use super::knobs::{
    Crashes, CutAt, DiskFaults, Nemesis, RocksFaults, Schedule, SnapshotStep, Spans, Work,
};
use super::nemesis::NemesisState;
use super::{fnv, Failure, RunConfig, RunOutcome, Sinks, Step, FNV_OFFSET};
use crate::check::{Checker, Found, Recheck};
use crate::exec::{Cluster, WRITE_TIMEOUT};
use docsim_engine::script::{At, Command, FaultCommand, FileRun, Route};
use docsim_engine::{CrashPoint, HybridTime, Layout, Node, TabletId};
use docsim_models::cql::{CqlOp, Schema};
use docsim_workloads::{Op, RestoreTo, Workload};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// How often a run's final snapshot is proposed before the backup check makes do with
/// an earlier one.
const FINAL_SNAPSHOT_TRIES: usize = 5;

/// The reproducer's first lines: a replicated group's header (a group of one has none).
pub fn header(config: &RunConfig) -> Vec<String> {
    if config.replicas == 1 {
        return Vec::new();
    }
    let nemesis = draw_nemesis(config);
    let setup = super::setup(config, &nemesis);
    vec![setup.header.to_string()]
}

fn draw_nemesis(config: &RunConfig) -> Nemesis {
    let mut rng = crate::streams::stream(config.seed, crate::streams::STREAM_NEMESIS);
    Nemesis::draw(&mut rng, config.faults && config.replicas > 1)
}

/// Run the seed of `config` (or the steps `given`, a shrinker's candidate).
pub(super) async fn simulate(
    config: RunConfig,
    sinks: Sinks,
    given: Option<Vec<Step>>,
) -> RunOutcome {
    let nemesis = draw_nemesis(&config);
    let setup = super::setup(&config, &nemesis);
    let cluster = match Cluster::start(setup, sinks.script.clone()) {
        Ok(cluster) => cluster,
        Err(e) => panic!("the cluster does not start: {e}"),
    };
    let mut driver = Driver::new(config, cluster, nemesis, sinks);
    driver.settings().await;
    let generated = given.is_none();
    match given {
        Some(steps) => driver.replay(steps).await,
        None => driver.generate().await,
    }
    driver.finish(generated)
}

/// What the run draws from, and what it did.
pub(super) struct Driver {
    config: RunConfig,
    cluster: Cluster,
    checker: Checker,
    sinks: Sinks,
    /// The tables' schemas as created (statements name their key columns by them).
    schemas: BTreeMap<String, Schema>,
    outcome: RunOutcome,
    /// Cluster trace lines already in the run's trace.
    trace_seen: usize,
    failure: Option<Failure>,
    workload: Workload,
    workload_rng: ChaCha8Rng,
    clock_rng: ChaCha8Rng,
    step_mean_us: u64,
    /// Every node's memstore limit, drawn per seed.
    memstore_limit: Option<usize>,
    schedule: Schedule,
    crashes: Crashes,
    faults: DiskFaults,
    rocks_faults: RocksFaults,
    spans: Spans,
    /// The next page of each paged read still open, as the step that reads it.
    open_pages: Vec<Step>,
    /// The snapshots drawn and not deleted: (table, id).
    snapshots: Vec<(String, String)>,
    pub(super) nemesis: NemesisState,
    /// Steps to run next, before anything else (a fault's aftermath).
    queued: VecDeque<Step>,
    /// Nodes with a disk fault armed (cleared before they restart).
    faulty: Vec<u64>,
    /// Each node's fault-ledger length when its last power cut was armed or cut.
    ledger_seen: BTreeMap<u64, usize>,
}

/// The faults in RocksDB's files a run of `config` draws: none without byte faults or
/// with RocksDB in memory; no SST flips in the metamorphic comparison of storage options
/// (where a flip lands in an SST file depends on the file's size, which the options
/// change).
fn rocks_faults(config: &RunConfig) -> RocksFaults {
    let stream = crate::streams::stream(config.seed, crate::streams::STREAM_ROCKS_FAULTS);
    let mut rocks_faults = RocksFaults::new(stream);
    if !config.byte_faults || config.rocks_in_memory {
        rocks_faults.off();
    }
    if config.same_options {
        rocks_faults.flip_percent = 0;
    }
    rocks_faults
}

impl Driver {
    fn new(config: RunConfig, cluster: Cluster, nemesis: Nemesis, sinks: Sinks) -> Driver {
        let seed = config.seed;
        let mut workload_rng = crate::streams::stream(seed, crate::streams::STREAM_WORKLOAD);
        let mut clock_rng = crate::streams::stream(seed, crate::streams::STREAM_CLOCK);
        let workload = Workload::new(&mut workload_rng, config.profile);
        let schedule = Schedule::new(crate::streams::stream(seed, crate::streams::STREAM_SCHEDULE));
        let crashes = Crashes::new(crate::streams::stream(seed, crate::streams::STREAM_CRASHES));
        let mut faults =
            DiskFaults::new(crate::streams::stream(seed, crate::streams::STREAM_FAULTS));
        let rocks_faults = rocks_faults(&config);
        let mut spans = Spans::new(crate::streams::stream(seed, crate::streams::STREAM_SPANS));
        if config.rocks_in_memory {
            spans.snapshot_permille = 0; // RocksDB's in-memory environment keeps none
        }
        if !config.byte_faults {
            faults.placed_by_bytes_off();
        }
        let step_mean_us = clock_rng.random_range(20..400u64) * workload.clock_scale();
        // A memory flush depends on bytes a layout or a split changes: the metamorphic
        // set, which compares layouts line by line, runs without the limit.
        let memstore = crate::streams::stream(seed, crate::streams::STREAM_MEMSTORE);
        let memstore_limit =
            super::knobs::memstore_limit(memstore).filter(|_| !config.same_options);
        let knobs = format!(
            "replicas={} {} clock_step={step_mean_us}us {schedule} {spans} crash={}/10k \
             {faults} {rocks_faults} {nemesis} memstore={} storage=[{}]",
            config.replicas,
            workload.knobs(),
            crashes.per_10k,
            memstore_limit.map_or("off".into(), docsim_engine::script::format_bytes),
            config.storage
        );
        let nemesis = NemesisState::new(
            crate::streams::stream(seed, crate::streams::STREAM_NEMESIS),
            nemesis,
        );
        let outcome = RunOutcome {
            seed,
            replicas: config.replicas,
            knobs,
            trace_hash: FNV_OFFSET,
            ..RunOutcome::default()
        };
        Driver {
            checker: Checker::new(config.replicas),
            config,
            cluster,
            sinks,
            schemas: BTreeMap::new(),
            outcome,
            trace_seen: 0,
            failure: None,
            workload,
            workload_rng,
            clock_rng,
            step_mean_us,
            memstore_limit,
            schedule,
            crashes,
            faults,
            rocks_faults,
            spans,
            open_pages: Vec::new(),
            snapshots: Vec::new(),
            nemesis,
            queued: VecDeque::new(),
            faulty: Vec::new(),
            ledger_seen: BTreeMap::new(),
        }
    }

    fn replicated(&self) -> bool {
        self.config.replicas > 1
    }

    fn over(&self) -> bool {
        self.failure.is_some() || self.checker.ended
    }

    /// The generated run.
    /// The row layout of the run's tables (`--config`) and the nodes' memstore limit: in
    /// the script, not steps of the trace (so that the layouts' traces compare line by
    /// line, `metamorphic.rs`).
    async fn settings(&mut self) {
        if self.config.storage.layout != Layout::Declared {
            self.cluster.step(Command::Layout(self.config.storage.layout)).await;
            self.trace_seen = self.cluster.trace_lines().len();
        }
        if self.memstore_limit.is_some() {
            self.cluster.step(Command::Memstore(self.memstore_limit)).await;
            self.trace_seen = self.cluster.trace_lines().len();
        }
        let retention = Command::Retention { interval_us: self.spans.retention_us, node: None };
        self.cluster.step(retention).await;
        self.trace_seen = self.cluster.trace_lines().len();
    }

    async fn generate(&mut self) {
        let now = self.now(1).raw();
        for op in self.workload.setup_ops(now) {
            self.exec(Step::client(op)).await;
        }
        if self.replicated() {
            self.wait(Duration::from_millis(400)).await; // the first elections
        }
        while !self.over() && (self.settling() || self.outcome.ops < self.config.ops) {
            let step = self.next_step().await;
            self.exec(step).await;
        }
        self.end().await;
    }

    /// Steps a shrinker chose.
    async fn replay(&mut self, steps: Vec<Step>) {
        for step in steps {
            if self.over() {
                return;
            }
            self.exec(step).await;
        }
        self.backup_check();
    }

    /// Whether a fault's aftermath is still to run: queued steps, or a node to restart (a
    /// group of one restarts at once).
    fn settling(&self) -> bool {
        !self.queued.is_empty() || (!self.replicated() && self.cluster.needs_restart(1))
    }

    /// The next step: a fault's aftermath, a fault, the schedule's work, or a client op.
    async fn next_step(&mut self) -> Step {
        if let Some(step) = self.queued.pop_front() {
            return step;
        }
        if !self.replicated() && self.cluster.needs_restart(1) {
            // A failed log write stopped the tablet: the node loses power (fail-stop, as
            // a replicated node does in `world::with_node`), then restarts.
            let mut steps = Vec::new();
            if self.cluster.running(1) {
                steps.push(Step::Command(Command::Crash { at: None, tear: None, node: None }));
            }
            steps.extend(self.restart_steps(1));
            self.queued.extend(steps);
            return self.queued.pop_front().expect("a restart");
        }
        let mut drawn = self.power_faults();
        if drawn.is_empty() && self.faulty.is_empty() {
            drawn.extend(self.io_fault());
        }
        if self.replicated() {
            drawn.extend(self.nemesis_steps().await);
        }
        if !drawn.is_empty() {
            self.queued.extend(drawn);
            return self.queued.pop_front().expect("drawn");
        }
        self.advance_time().await;
        if let Some(step) = self.work() {
            return step;
        }
        self.outcome.ops += 1;
        self.client_step()
    }

    /// Simulated time passes between steps: a group of one sleeps without a trace (its
    /// writes and reads carry their times), a replicated group by `wait` commands.
    async fn advance_time(&mut self) {
        if self.replicated() {
            let pause_ms = self.nemesis.rng.random_range(0..20);
            if pause_ms > 0 {
                self.wait(Duration::from_millis(pause_ms)).await;
            }
            return;
        }
        let step_us = self.clock_rng.random_range(1..=2 * self.step_mean_us);
        madsim::time::sleep(Duration::from_micros(step_us)).await;
    }

    async fn wait(&mut self, d: Duration) {
        self.exec(Step::Command(Command::Wait(d.as_micros() as u64))).await;
    }

    /// Node `id`'s clock now, as a hybrid time (what the workload calls now).
    fn now(&self, id: u64) -> HybridTime {
        HybridTime::from_micros(self.cluster.now_us(id))
    }

    /// A node's flush or compaction, if the schedule draws one (a random running node).
    fn work(&mut self) -> Option<Step> {
        let id = self.running_node()?;
        let now = self.now(id);
        let node = self.replicated().then_some(id);
        let cluster = &self.cluster;
        // How many SST files the document tablet has: asked only for a compaction of a run
        // of files (listing them is RocksDB work).
        let docs_files = || {
            let files = cluster.slot(id).node.files().ok();
            let docs = files.and_then(|f| f.into_iter().find(|(t, _)| *t == TabletId::Docs));
            docs.map_or(0, |(_, f)| f.len())
        };
        let at = (!self.replicated()).then_some(now);
        Some(Step::Command(match self.schedule.next(docs_files)? {
            Work::Flush => Command::Flush { node },
            Work::Compact { minor, files } => {
                self.outcome.compactions += 1;
                let run = files.map(|(first, last)| FileRun { first, last, table: None });
                Command::Retained { minor, run, at, node }
            }
        }))
    }

    /// A running node drawn from the schedule's stream (node 1 in a group of one).
    fn running_node(&mut self) -> Option<u64> {
        let running: Vec<u64> = self.cluster.ids().filter(|&id| self.cluster.running(id)).collect();
        match running.len() {
            0 => None,
            1 => Some(running[0]),
            n => Some(running[self.schedule.rng.random_range(0..n)]),
        }
    }

    /// A power cut the crash stream draws, on a running node: its commands.
    fn power_faults(&mut self) -> Vec<Step> {
        let points: &[CrashPoint] = match self.replicated() {
            false => &CrashPoint::IN_WRITE,
            true => &CrashPoint::ALL[..7],
        };
        let Some((at, torn)) = self.crashes.next(points) else { return Vec::new() };
        let at = self.rocks_faults.inside(at);
        let Some(id) = self.running_node() else { return Vec::new() };
        let tear = (torn && self.faults.tears).then(|| self.faults.tear_sector());
        let node = self.replicated().then_some(id);
        let name = match at {
            CutAt::InFlush(_) => Some("armed.in-flush"),
            CutAt::InCompaction(_) => Some("armed.in-compaction"),
            _ => None,
        };
        if let Some(name) = name {
            *self.outcome.faults.entry(name.to_owned()).or_default() += 1;
        }
        let crash = |at| Step::Command(Command::Crash { at, tear, node });
        let now = (!self.replicated()).then(|| self.now(id));
        let compact = Command::Retained { minor: false, run: None, at: now, node };
        let steps = match at {
            CutAt::Now => vec![crash(None)],
            CutAt::Armed(point) => vec![crash(Some(point))],
            CutAt::AfterFlush => {
                vec![crash(Some(CrashPoint::AfterFlush)), Step::Command(Command::Flush { node })]
            }
            CutAt::AfterLogGc => vec![Step::Command(Command::Flush { node }), crash(None)],
            CutAt::AfterCompaction => vec![Step::Command(compact), crash(None)],
            CutAt::InFlush(k) => {
                vec![crash(Some(CrashPoint::InFlush(k))), Step::Command(Command::Flush { node })]
            }
            CutAt::InCompaction(k) => {
                vec![crash(Some(CrashPoint::InCompaction(k))), Step::Command(compact)]
            }
        };
        if self.replicated() {
            self.nemesis.restart_later(id);
        }
        steps
    }

    /// An I/O fault armed on a running node for its next log write, or nothing.
    fn io_fault(&mut self) -> Option<Step> {
        let fault = self.rocks_faults.io(self.faults.next_io()?);
        let id = self.running_node()?;
        self.faulty.push(id);
        let node = self.replicated().then_some(id);
        Some(Step::Command(Command::Fault { fault, node }))
    }

    /// Restart node `id`: its disk faults cleared first, and now and then (not after a
    /// tear) a bit of its synced log data rotted while it was down.
    fn restart_steps(&mut self, id: u64) -> Vec<Step> {
        let node = self.replicated().then_some(id);
        let mut steps = Vec::new();
        if let Some(at) = self.faulty.iter().position(|&f| f == id) {
            self.faulty.remove(at);
            steps.push(Step::Command(Command::Fault { fault: FaultCommand::Clear, node }));
        }
        // A replica that refuses its corrupt log would need YugabyteDB's remote bootstrap
        // (a tombstoned tablet copied from a healthy peer), which docsim does not have:
        // bit flips are a group of one's (its restart must refuse the log).
        if let Some(flip) = self.flip(id).filter(|_| !self.replicated()) {
            steps.push(Step::Command(Command::Fault { fault: flip, node }));
        } else if !self.replicated() {
            // Likewise a tablet whose RocksDB files were lost is refused, not rebuilt.
            let tablets = self.gc_logged_tablets(id);
            let disk = self.cluster.slot(id).node.disk().clone();
            let rocks = &mut self.rocks_faults;
            if let Some(fault) = rocks.lose(&tablets).or_else(|| rocks.sst_flip(&disk)) {
                steps.push(Step::Command(Command::Fault { fault, node }));
            }
        }
        steps.push(Step::Command(Command::Restart { node }));
        steps
    }

    /// The nemesis's steps now, the restarts it calls for included.
    async fn nemesis_steps(&mut self) -> Vec<Step> {
        let (mut steps, restarts) = self.nemesis.steps(&self.cluster);
        for id in restarts {
            steps.extend(self.restart_steps(id));
        }
        steps
    }

    /// A bit flip in node `id`'s synced log data, unless its last power cut tore (the
    /// bytes a tear kept are durable but not all whole records: a flip there is a torn
    /// tail, not corruption).
    fn flip(&mut self, id: u64) -> Option<FaultCommand> {
        let disk = self.cluster.slot(id).node.disk().clone();
        let seen = self.ledger_seen.get(&id).copied().unwrap_or(0);
        let torn = disk
            .ledger_since(seen.min(disk.ledger_len()))
            .iter()
            .any(|f| matches!(f, docsim_engine::disk::Fault::Torn { .. }));
        self.faults.flip(&disk).filter(|_| !torn)
    }

    /// The disk directories of node `id`'s tablets whose Raft log starts above entry 1
    /// (log GC ran): losing their RocksDB files is detectable.
    fn gc_logged_tablets(&self, id: u64) -> Vec<String> {
        let slot = self.cluster.slot(id);
        let disk = slot.node.disk();
        let oldest_prev = |tablet: &TabletId| {
            let oldest =
                disk.list(&format!("{}/wal-", Node::log_dir(tablet))).into_iter().next()?;
            crate::check::segment_prev_index(&disk.read(&oldest).ok()?)
        };
        let ids = slot.node.tablet_ids();
        let gc_logged = ids.into_iter().filter(|t| oldest_prev(t).is_some_and(|prev| prev > 0));
        gc_logged.map(|t| docsim_engine::tablet_dir(&t)).collect()
    }

    /// The next page of an open paged read, or the workload's next op (a SELECT maybe
    /// read in pages), as a client step routed by the run.
    fn client_step(&mut self) -> Step {
        if let Some(at) = self.spans.next_page(self.open_pages.len()) {
            return self.open_pages.remove(at);
        }
        let tables: Vec<String> = self.schemas.keys().cloned().collect();
        let op = match self.spans.snapshot(&tables, &self.snapshots) {
            Some(SnapshotStep::Take(table, id, delete)) => Op::Snapshot { table, id, delete },
            Some(SnapshotStep::Restore(table, id)) => {
                Op::Restore { table, to: RestoreTo::Snapshot(id) }
            }
            Some(SnapshotStep::RestoreBack(table, back_us)) => {
                let id = if self.replicated() { self.nemesis.any_node(&self.cluster) } else { 1 };
                let now = self.now(id);
                let to = HybridTime::new(now.physical_us().saturating_sub(back_us), 0);
                Op::Restore { table, to: RestoreTo::Time(to.raw()) }
            }
            None => {
                let id = if self.replicated() { self.nemesis.any_node(&self.cluster) } else { 1 };
                let now = self.now(id).raw();
                let cutoff = self.nemesis.cutoff(id).raw();
                let op = self.workload.next_op(&mut self.workload_rng, now, cutoff);
                self.paged(op)
            }
        };
        if !self.replicated() {
            return Step::client(op);
        }
        self.nemesis.route(op, &self.cluster)
    }

    /// A whole-row SELECT, now and then read in pages (a long scan, now and then).
    fn paged(&mut self, op: Op) -> Op {
        match op {
            Op::Cql { ht, table, op: select @ CqlOp::Select { columns: None, .. } } => {
                match self.spans.paged() {
                    Some((size, hold)) => {
                        Op::Page { ht, table, op: select, size, after: None, hold }
                    }
                    None => Op::Cql { ht, table, op: select },
                }
            }
            op => op,
        }
    }

    /// What a step's events tell the run's own bookkeeping: the cutoffs compactions took
    /// (the workload reads at or above them), and a page's paging state (its read's next
    /// page, still to read).
    fn note_spans(&mut self, step: &Step, events: &[crate::exec::Event]) {
        use crate::exec::Event;
        for event in events {
            let (read_ht, result) = match event {
                Event::Compacted { node, request, .. } => {
                    if let Some(cutoff) = request.highest_cutoff() {
                        self.nemesis.compacted(*node, cutoff);
                    }
                    continue;
                }
                Event::Read { read_ht, result, .. } => (*read_ht, result.clone()),
                Event::Scan { parts, read_ht, .. } => {
                    (*read_ht, crate::exec::merged_reply(parts.iter().map(|p| p.2.clone())))
                }
                _ => continue,
            };
            let Step::Client { op: Op::Page { table, op, size, hold, .. }, route, .. } = step
            else {
                continue;
            };
            if let Ok(docsim_engine::Reply::Page { last: Some(last), .. }) = result {
                let after = Some(crate::convert::doc_id(&last));
                let (table, op, size, hold) = (table.clone(), op.clone(), *size, *hold);
                let op = Op::Page { ht: read_ht.raw(), table, op, size, after, hold };
                let at = Some(At::Ht(read_ht));
                self.open_pages.push(Step::Client { op, route: *route, at });
            }
        }
    }

    /// Carry out `step` (and the re-checks it calls for) and check its events.
    pub(super) async fn exec(&mut self, step: Step) {
        let mut todo = VecDeque::from([(step, false)]);
        while let Some((step, recheck)) = todo.pop_front() {
            if self.over() {
                return;
            }
            let rechecks = self.exec_one(step, recheck).await;
            todo.extend(rechecks.into_iter().map(|r| (self.recheck_step(r), true)));
        }
    }

    fn recheck_step(&self, r: Recheck) -> Step {
        let from = self.replicated().then_some(r.node);
        Step::Client {
            op: r.op,
            route: Route { node: from, nowait: false },
            at: Some(At::Ht(r.read_ht)),
        }
    }

    /// What the run keeps of `op`: a table's schema, the snapshots live.
    fn note_op(&mut self, op: &Op) {
        match op {
            Op::Table(spec) => {
                self.schemas.insert(spec.schema.name.clone(), spec.schema.clone());
            }
            Op::Snapshot { table, id, delete: false } => {
                self.snapshots.push((table.clone(), id.clone()))
            }
            Op::Snapshot { id, delete: true, .. } => self.snapshots.retain(|(_, s)| s != id),
            _ => {}
        }
    }

    async fn exec_one(&mut self, step: Step, recheck: bool) -> Vec<Recheck> {
        if let Some(op) = step.op() {
            self.checker.before(op);
            self.note_op(op);
        }
        let command = step.command(&self.schemas);
        // A node the group does not have (a shrunk step list may name the spare it no
        // longer starts): the executor refuses the command, and nothing is noted here.
        let started = |node: &Option<u64>| node.unwrap_or(1) <= self.cluster.ids().count() as u64;
        if let Command::Restart { node } = &command {
            if started(node) {
                self.checker.before_restart(&self.cluster, node.unwrap_or(1));
            }
        }
        if let Command::Fault { fault: FaultCommand::Flip { file, offset, .. }, node } = &command {
            if started(node) {
                self.checker.before_flip(&self.cluster, node.unwrap_or(1), file, *offset);
            }
        }
        if let Command::Crash { node, .. } = &command {
            if started(node) {
                let id = node.unwrap_or(1);
                let seen = self.cluster.slot(id).node.disk().ledger_len();
                self.ledger_seen.insert(id, seen);
                if id == 1 {
                    self.checker.book.ledger_seen = seen;
                }
            }
        }
        let watch = crate::bench::Stopwatch::start();
        self.cluster.step(command.clone()).await;
        let events = self.cluster.take_events();
        if !recheck {
            self.note_spans(&step, &events);
        }
        self.retime(&step, &events);
        let step = self.pinned(step, &events);
        let checked = crate::cost::timed(crate::cost::Part::Check, || {
            self.checker.observe(step.op(), events, &self.cluster)
        });
        self.record(&command, watch.seconds());
        if !recheck {
            self.sinks.steps.lock().unwrap_or_else(|p| p.into_inner()).push(step.clone());
        }
        match checked {
            Ok(rechecks) => {
                if let Some(broken) = self.cluster.broken().cloned() {
                    let found = Found {
                        kind: broken.kind,
                        expected: vec![],
                        actual: vec![broken.message],
                        then_run: None,
                        at_step: None,
                    };
                    self.fail(found, recheck);
                }
                rechecks
            }
            Err(found) => {
                self.fail(found, recheck);
                Vec::new()
            }
        }
    }

    /// A replicated group's leader timed the step's write: the workload learns when (its
    /// TTL-boundary reads aim at the real time).
    fn retime(&mut self, step: &Step, events: &[crate::exec::Event]) {
        let Some(generated) = step.op().filter(|op| !op.is_read()).and_then(Op::time) else {
            return;
        };
        for event in events {
            if let crate::exec::Event::Proposed { ht, op_id: Some(_), .. } = event {
                self.workload.retime(generated, ht.raw());
            }
        }
    }

    /// A group of one's client step with the time it took (a replay of the steps runs
    /// without the sleeps between them: its writes and reads carry their times, as its
    /// script does).
    fn pinned(&self, step: Step, events: &[crate::exec::Event]) -> Step {
        use crate::exec::Event;
        let Step::Client { op, route, at: None } = step else { return step };
        if self.replicated() {
            return Step::Client { op, route, at: None };
        }
        let ht = events.iter().find_map(|e| match e {
            Event::Proposed { ht, .. } | Event::Refused { ht, .. } => Some(*ht),
            Event::Read { read_ht, .. } | Event::Scan { read_ht, .. } => Some(*read_ht),
            _ => None,
        });
        Step::Client { op, route, at: ht.map(At::Ht) }
    }

    /// Hash (and keep) the step's trace line: its command as recorded, then what it
    /// printed; count its time by kind.
    fn record(&mut self, command: &Command, seconds: f64) {
        let recorded = self.cluster.last_recorded();
        let printed = &self.cluster.trace_lines()[self.trace_seen..];
        self.trace_seen = self.cluster.trace_lines().len();
        let index = self.outcome.steps;
        self.outcome.steps += 1;
        let line = format!("#{index} {recorded} => {}", printed.join(" | "));
        self.outcome.trace_hash = fnv(self.outcome.trace_hash, line.as_bytes());
        if self.config.keep_trace {
            self.outcome.trace.push(line);
        }
        let spent = docsim_reports::StepTime { steps: 1, seconds };
        self.outcome.step_time.entry(step_kind(command)).or_default().add(spent);
    }

    /// The run failed: its failure and reproducer (the run's script, then what the check
    /// expected).
    fn fail(&mut self, found: Found, recheck: bool) {
        let kind = match (recheck, found.kind) {
            (
                true,
                crate::failure::FailureKind::Get
                | crate::failure::FailureKind::Select
                | crate::failure::FailureKind::Redis,
            ) => crate::failure::FailureKind::ChangedByCompaction,
            (_, kind) => kind,
        };
        let script = self.cluster.script();
        let expects = found.expected.iter().map(|l| format!("expect {l}"));
        let mut lines: Vec<String> = header(&self.config);
        match found.at_step {
            // The expectation is about an earlier step: the script up to it, then it.
            Some(step) => {
                lines.extend(script.iter().take(step + 1).cloned());
                lines.extend(expects);
            }
            None => {
                // The failing step's command without the error the run expected of it:
                // the checker's expectation replaces it.
                let (last, before) =
                    script.split_last().map_or((None, &[][..]), |(l, b)| (Some(l), b));
                lines.extend(before.iter().cloned());
                lines.extend(last.and_then(|l| l.lines().next()).map(str::to_owned));
                lines.extend(found.then_run.iter().cloned());
                lines.extend(expects);
            }
        }
        if found.expected.is_empty() {
            lines.push(format!("# expected: {}", found.actual.join(" | ")));
        }
        let steps = self.sinks.steps.lock().unwrap_or_else(|p| p.into_inner()).clone();
        self.failure = Some(Failure {
            step: self.outcome.steps.saturating_sub(1),
            op: found
                .at_step
                .map_or(script.last(), |step| script.get(step))
                .and_then(|r| r.lines().next())
                .unwrap_or_default()
                .to_owned(),
            expected: found.expected,
            actual: found.actual,
            last_ops: script.iter().rev().take(12).rev().cloned().collect(),
            reproducer: lines.join("\n") + "\n",
            kind,
            steps,
        });
    }

    /// The run's end: a group of one restarts if its last step cut the power (every
    /// power cut's restart is checked, the last one too); a replicated group converges.
    async fn end(&mut self) {
        if self.over() {
            return;
        }
        if self.replicated() {
            self.wait(WRITE_TIMEOUT).await;
            self.exec(Step::Command(Command::Converge)).await;
            if let (false, Err(found)) = (self.over(), self.checker.served_reads_hold()) {
                self.fail(found, false);
            }
        }
        self.final_snapshot().await;
        // A power cut armed earlier may fire inside it: its aftermath runs (a group of one
        // restarts, every power cut's restart checked).
        while !self.over() && self.settling() {
            let step = self.next_step().await;
            self.exec(step).await;
        }
        self.backup_check();
    }

    /// A snapshot of the first table, if the run has a table and RocksDB's files are on a
    /// disk: the backup check takes it (or, if its entry did not commit, the last one
    /// that did).
    async fn final_snapshot(&mut self) {
        let Some(table) = self.schemas.keys().next().cloned() else { return };
        if self.config.rocks_in_memory {
            return; // RocksDB's in-memory environment keeps no snapshot
        }
        if self.over() {
            return;
        }
        // Through the leader, waiting for its answer (after a replicated run's converge);
        // while an entry of it did not commit (a leader not ready yet, a power cut), another
        // snapshot under a new name (taking one name twice would leave the replicas that
        // applied the first holding another cut than the model's last).
        for attempt in 0..FINAL_SNAPSHOT_TRIES {
            self.advance_time().await; // as before every drawn step: its own physical time
            let id = match attempt {
                0 => "final".to_owned(),
                n => format!("final{n}"),
            };
            let op = Op::Snapshot { table: table.clone(), id: id.clone(), delete: false };
            self.exec(Step::Client { op, route: Route::default(), at: None }).await;
            let models = &self.checker.models;
            let noted = |t: TabletId| models.snapshots.contains_key(&(t, id.clone()));
            if self.over() || models.tablets_of(&table).into_iter().all(noted) {
                return;
            }
            self.wait(Duration::from_millis(200)).await;
        }
    }

    /// The run's last live snapshot the model knows of, exported and imported into a
    /// fresh node of one, read back against the model (`check/backup.rs`), a second
    /// after the latest clock.
    fn backup_check(&mut self) {
        if self.over() {
            return;
        }
        let latest = self.cluster.ids().map(|id| self.now(id)).max().unwrap_or_default();
        let at = latest.add_micros(1_000_000);
        let plants = docsim_engine::canary::Plants::of(self.config.plant);
        for (table, id) in self.snapshots.clone().iter().rev() {
            match self.checker.backup_holds(&self.cluster, (table, id), at, plants) {
                Ok(false) => continue,
                Ok(true) => return,
                Err(found) => return self.fail(found, false),
            }
        }
        if !self.snapshots.is_empty() {
            // Said in the report, not silent: no snapshot of the run could be checked.
            self.outcome.faults.insert("backup-check-skipped".to_owned(), 1);
        }
    }

    fn finish(mut self, generated: bool) -> RunOutcome {
        let counts = self.cluster.counts().clone();
        self.outcome.checked_reads = self.checker.checked_reads;
        self.outcome.checked_by_node = self.checker.checked_by_node.clone();
        self.outcome.crashes = counts.crashes as u64;
        self.outcome.restarts = counts.restarts as u64;
        self.outcome.replayed = counts.replayed as u64;
        self.outcome.expected_replayed = self.checker.book.expected_replayed;
        for id in self.cluster.ids().collect::<Vec<_>>() {
            for fault in self.cluster.slot(id).node.disk().ledger() {
                *self.outcome.faults.entry(fault.kind_by_file()).or_default() += 1;
            }
        }
        self.outcome.faults.extend(self.nemesis.counts.clone());
        if self.checker.ended {
            self.outcome.faults.insert("ended-by-detected-damage".to_owned(), 1);
        }
        if self.checker.backups_refused_damage > 0 {
            let n = self.checker.backups_refused_damage;
            self.outcome.faults.insert("backup-export-refused-damage".to_owned(), n);
        }
        if self.checker.snapshots_unreadable > 0 {
            let n = self.checker.snapshots_unreadable;
            self.outcome.faults.insert("snapshot-past-follower-cutoff".to_owned(), n);
        }
        if generated && self.failure.is_none() && !self.replicated() && !self.checker.ended {
            assert_eq!(
                counts.crashes, counts.restarts,
                "seed {}: a passing run left {} crashes for {} restarts",
                self.config.seed, counts.crashes, counts.restarts
            );
        }
        self.outcome.counts = counts;
        self.outcome.script = self.cluster.script();
        self.outcome.failure = self.failure.take();
        self.outcome
    }
}

/// What kind of step `command` is, for the time breakdown.
fn step_kind(command: &Command) -> &'static str {
    match command {
        Command::Restart { .. } => "restart",
        Command::Crash { .. } | Command::Disarm { .. } => "crash",
        Command::Fault { .. } => "fault",
        Command::Flush { .. } => "flush",
        Command::Compact { .. } | Command::Retained { .. } => "compaction",
        Command::Get { .. } => "read",
        Command::Cql { statement, .. } if statement.to_ascii_lowercase().starts_with("select") => {
            "read"
        }
        Command::Redis { command, .. } if is_redis_read(command) => "read",
        Command::Page { .. } => "read",
        Command::SnapshotWrite { .. } => "snapshot",
        Command::Restore { .. } => "restore",
        Command::Write { .. }
        | Command::Batch { .. }
        | Command::Cql { .. }
        | Command::Redis { .. } => "write",
        Command::Converge => "converge",
        _ => "other",
    }
}

fn is_redis_read(command: &str) -> bool {
    let first = command.split_whitespace().next().unwrap_or_default().to_ascii_lowercase();
    matches!(first.as_str(), "get" | "hget" | "hgetall" | "smembers")
}
