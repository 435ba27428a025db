//! A replicated run: one document tablet as a Raft group of 1, 3 or 5 replicas, each a
//! madsim node with its own simulated disk, RocksDB instance and skewed clock, talking
//! over madsim's network (latency, reordering, loss, partitions). `docsim cluster`.
//!
//! The **controller** (madsim's main task) is the clients and the fault schedule: it
//! writes through the replica it believes leads, waits for the acknowledgement (or times
//! out, or hears nothing because the node crashed), reads from any replica at a hybrid
//! time of its choosing, and draws faults per seed by swarm: partitions (one node cut
//! off, the leader cut off, flapping), crashes (tearing unsynced log data) and restarts,
//! clock skew, packet loss, flushes. A **liveness phase** ends every seed: faults stop,
//! the network heals, every node restarts, and within [`LIVENESS`] of simulated time there
//! must be one leader, every replica applied up to its commit index, and identical dumps.
//! Then `check` judges the whole history.
//!
//! Randomness: the workload, the schedule and each replica's election jitter come from
//! the run's seed through separate ChaCha streams; message delays and loss come from
//! madsim's own seeded generator. raft-rs draws nothing (see `PeerOptions`).

mod check;
mod command;
mod cost;
mod execute;
mod membership;
mod net;
mod script;
mod shrink;

pub use script::{is_cluster_script, run_cluster_script};
pub use shrink::{failure_class, shrink_script, ShrunkScript};

use crate::convert;
use crate::simulate::simulated_now;
use check::{Answer, History, Read};
use command::{Command, Header, ReadAt};
use cost::Part;
use docsim_engine::canary::Plants;
use docsim_engine::disk::{FaultConfig, SimDisk, Tear};
use docsim_engine::{BootReport, ErrorKind, HybridTime, Peer, PeerCrash, PeerOptions};
use docsim_workloads::{Op, Profile, Workload};
use madsim::net::NetSim;
use net::{Shared, Slot, World};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

const STREAM_WORKLOAD: u64 = 21;
const STREAM_SCHEDULE: u64 = 22;
const STREAM_ELECTION: u64 = 23;

/// How long the liveness phase may take, in simulated time.
pub const LIVENESS: Duration = Duration::from_secs(10);
/// How long a client waits for an acknowledgement.
const WRITE_TIMEOUT: Duration = Duration::from_millis(600);
/// A leader's hybrid-time lease: 10 ticks, the shortest election timeout, so a leader
/// cut off loses it before raft-rs's quorum check (one to two of its own, longer,
/// election timeouts) makes it step down.
const LEASE_US: u64 = 100_000;

/// One replicated run.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    pub seed: u64,
    pub replicas: usize,
    /// Client operations (writes, reads) plus faults.
    pub ops: usize,
    pub faults: bool,
    pub plants: Plants,
}

/// What a replicated run did, and its verdict.
#[derive(Clone, Debug, Default)]
pub struct ClusterOutcome {
    pub seed: u64,
    pub ops: usize,
    pub writes_acked: usize,
    pub writes_timed_out: usize,
    pub writes_unanswered: usize,
    pub writes_not_leader: usize,
    pub reads_served: usize,
    /// Refused reads by error kind.
    pub reads_refused: BTreeMap<&'static str, usize>,
    pub leader_changes: usize,
    /// Steps at which two replicas claimed to lead (an old leader not yet deposed).
    pub two_leader_steps: usize,
    pub max_term: u64,
    pub partitions: usize,
    /// Partitions that left no group with a majority.
    pub no_majority_partitions: usize,
    /// Cuts that left a bridge: one replica reaching two halves that do not reach each other.
    pub bridges: usize,
    /// Membership changes proposed.
    pub membership_changes: usize,
    /// The most entries a running member's applied index trailed its leader's commit
    /// index, at any moment the controller looked.
    pub max_lag: u64,
    pub crashes: usize,
    pub restarts: usize,
    /// Entries bootstrap handed to Raft unapplied, over all restarts.
    pub orphaned: usize,
    /// Committed entries re-applied by bootstraps.
    pub replayed: usize,
    /// Snapshots replicas installed (a peer needed entries log GC had removed).
    pub snapshots_installed: usize,
    /// Times a replica's disk turned slow.
    pub slow_disks: usize,
    /// Snapshot installs a crash cut short, finished at the next boot.
    pub installs_finished_at_boot: usize,
    /// Log segments removed by GC after flushes.
    pub log_segments_collected: usize,
    /// Proposals that never committed (their uncommitted tail was overwritten or lost).
    pub overwritten: usize,
    pub committed: usize,
    /// Simulated milliseconds the liveness phase took.
    pub liveness_ms: u64,
    /// Wall-clock seconds the run took (reports only; never traced).
    pub seconds: f64,
    /// Of those, the seconds spent by the replicas in their nodes' tasks, in the clients'
    /// calls into replicas, and in the checker (`cluster/cost.rs`).
    pub cost_seconds: [f64; 3],
    /// What the run printed: a replicated script of [`ClusterOutcome::script`] prints it
    /// line for line.
    pub trace: Vec<String>,
    /// The run as a replicated docscript: its header, then each command it carried out.
    pub script: Vec<String>,
    pub failure: Option<String>,
}

impl ClusterOutcome {
    /// FNV-1a over the trace lines: equal in two processes for one seed.
    pub fn trace_hash(&self) -> u64 {
        let fnv = crate::simulate::fnv;
        self.trace.iter().fold(crate::simulate::FNV_OFFSET, |hash, line| fnv(hash, line.as_bytes()))
    }
}

/// Run one replicated seed under madsim.
pub fn run(config: &ClusterConfig) -> ClusterOutcome {
    run_recorded(config, Default::default())
}

/// The run's script, shared with the caller: it survives a panic inside the run.
type ScriptSink = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

fn run_recorded(config: &ClusterConfig, script: ScriptSink) -> ClusterOutcome {
    let mut runtime =
        madsim::runtime::Runtime::with_seed_and_config(config.seed, madsim::Config::default());
    runtime.set_allow_system_thread(true);
    runtime.block_on(simulate(config.clone(), script))
}

fn lock_script(script: &ScriptSink) -> std::sync::MutexGuard<'_, Vec<String>> {
    script.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn stream(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

/// The knobs one seed draws.
struct Knobs {
    fault_percent: u32,
    loss_percent: u32,
    max_skew_us: i64,
    flush_percent: u32,
    /// Writes in flight at once (clients).
    clients: usize,
    /// Percent of generated writes sent (the others become reads: read-heavy seeds).
    write_percent: u32,
    /// Faults in force at once.
    max_faults: usize,
    /// Whether the nemesis changes the group's membership.
    membership: bool,
}

impl Knobs {
    /// A script's knobs: its header's loss and skew bound; every fault is a command.
    fn scripted(loss_percent: u32, max_skew_us: i64) -> Knobs {
        Knobs {
            fault_percent: 0,
            loss_percent,
            max_skew_us,
            flush_percent: 0,
            clients: 1,
            write_percent: 100,
            max_faults: 0,
            membership: false,
        }
    }

    fn draw(rng: &mut ChaCha8Rng, faults: bool) -> Knobs {
        Knobs {
            fault_percent: if faults { [2, 5, 10, 20][rng.random_range(0..4)] } else { 0 },
            loss_percent: if faults { [0, 0, 1, 5][rng.random_range(0..4)] } else { 0 },
            max_skew_us: if faults {
                [0, 5_000, 50_000, 500_000][rng.random_range(0..4)]
            } else {
                0
            },
            flush_percent: [0, 2, 5][rng.random_range(0..3)],
            clients: [1, 2, 4, 8][rng.random_range(0..4)],
            write_percent: [100, 50, 10][rng.random_range(0..3)],
            max_faults: rng.random_range(1..=2),
            membership: faults && rng.random_bool(0.5),
        }
    }
}

/// The nemesis's current fault.
#[derive(Clone, Copy)]
enum Fault {
    Partition,
    Crash(u64),
    /// A replica's disk syncs slowly.
    Slow(u64),
}

/// A write a replica accepted, waiting for its answer.
struct Pending {
    target: u64,
    /// The target's incarnation when it accepted (a restart loses the client's call).
    incarnation: u64,
    deadline: madsim::time::Instant,
    op_id: docsim_engine::OpId,
}

/// The replicas and what the controller knows of them.
struct Cluster {
    config: ClusterConfig,
    knobs: Knobs,
    world: World,
    env: rocksdb::Env,
    disks: Vec<SimDisk>,
    slots: Vec<Shared>,
    nodes: Vec<madsim::runtime::NodeHandle>,
    election_ticks: Vec<usize>,
    /// Cut links (from, to), by replica id.
    cut: std::collections::BTreeSet<(u64, u64)>,
    history: History,
    /// Writes proposed and not answered yet.
    pending: Vec<Pending>,
    /// The paths of the latest writes (documents and subkeys).
    recent: std::collections::VecDeque<(docsim_models::DocId, Vec<docsim_models::Key>)>,
    /// The faults in force and when each ends.
    nemesis: Vec<(madsim::time::Instant, Fault)>,
    /// The first failure `collect` found (sticky).
    broken: Option<String>,
    outcome: ClusterOutcome,
    last_leader: Option<(u64, u64)>,
    /// The configuration the newest leader reported last.
    last_members: Option<docsim_engine::Members>,
    /// The members (voters and learners) at convergence.
    members: Vec<u64>,
    /// The commands carried out, as text.
    script: ScriptSink,
}

async fn simulate(config: ClusterConfig, script: ScriptSink) -> ClusterOutcome {
    let mut schedule = stream(config.seed, STREAM_SCHEDULE);
    let mut workload_rng = stream(config.seed, STREAM_WORKLOAD);
    let knobs = Knobs::draw(&mut schedule, config.faults);
    let mut cluster = match Cluster::start(config.clone(), knobs) {
        Ok(cluster) => cluster,
        Err(e) => {
            return ClusterOutcome { seed: config.seed, failure: Some(e), ..Default::default() }
        }
    };
    let mut workload = Workload::new(&mut workload_rng, Some(Profile::Nested));
    let k = &cluster.knobs;
    let header = Header {
        replicas: config.replicas,
        seed: config.seed,
        loss_percent: k.loss_percent,
        max_skew_us: k.max_skew_us as u64,
    };
    let knobs = format!(
        "# seed {} drew: faults={}% flush={}% clients={} writes={}% max-faults={} membership={}",
        config.seed,
        k.fault_percent,
        k.flush_percent,
        k.clients,
        k.write_percent,
        k.max_faults,
        k.membership
    );
    cluster.script = script;
    lock_script(&cluster.script).extend([header.to_string(), knobs]);
    cluster.drive(&mut schedule, &mut workload_rng, &mut workload).await;
    let mut outcome = std::mem::take(&mut cluster.outcome);
    outcome.script = lock_script(&cluster.script).clone();
    outcome.seed = config.seed;
    outcome.failure = cluster.broken.take();
    outcome
}

impl Cluster {
    fn start(config: ClusterConfig, knobs: Knobs) -> Result<Cluster, String> {
        let env = rocksdb::Env::mem_env().map_err(|e| e.to_string())?;
        let mut election = stream(config.seed, STREAM_ELECTION);
        let n = config.replicas as u64;
        // One more than the group: the spare a membership change adds (started then).
        let election_ticks = (0..=n).map(|_| 10 + election.random_range(0..10)).collect();
        let disks = (0..=n)
            .map(|i| SimDisk::new(config.seed ^ (i << 48), FaultConfig::default()))
            .collect();
        let world = World { start: simulated_now() };
        let loss = f64::from(knobs.loss_percent) / 100.0;
        NetSim::current().update_config(|c| c.packet_loss_rate = loss);
        let mut cluster = Cluster {
            config,
            knobs,
            world,
            env,
            disks,
            slots: Vec::new(),
            nodes: Vec::new(),
            election_ticks,
            cut: Default::default(),
            history: History::default(),
            pending: Vec::new(),
            nemesis: Vec::new(),
            broken: None,
            recent: Default::default(),
            outcome: ClusterOutcome::default(),
            last_leader: None,
            last_members: None,
            members: Vec::new(),
            script: Default::default(),
        };
        for id in 1..=n {
            cluster.spawn(id)?;
        }
        Ok(cluster)
    }

    /// Start replica `id` (the next one): a madsim node with a fresh peer.
    fn spawn(&mut self, id: u64) -> Result<(), String> {
        assert_eq!(id as usize, self.slots.len() + 1, "replicas start in order");
        let (peer, _) = self.open(id).map_err(|e| format!("node {id} does not open: {e}"))?;
        let slot: Shared = std::sync::Arc::new(std::sync::Mutex::new(Slot {
            peer: Some(peer),
            ..Slot::default()
        }));
        self.slots.push(slot.clone());
        self.nodes.push(net::spawn_node(id, slot, self.world));
        Ok(())
    }

    /// Every replica started: the group's first ones, and the spare once added.
    fn ids(&self) -> impl Iterator<Item = u64> {
        1..=self.slots.len() as u64
    }

    fn options(&self, id: u64) -> PeerOptions {
        PeerOptions {
            id,
            voters: (1..=self.config.replicas as u64).collect(),
            election_tick: self.election_ticks[id as usize - 1],
            heartbeat_tick: 3,
            lease_us: LEASE_US,
            // A lease is at most lease_us past its leader's clock, which leads true time by
            // up to max_skew; the restarted peer's clock may trail by as much, and a skew
            // change while it waits may shorten the wait by twice that.
            quiet_us: LEASE_US
                + 4 * self.knobs.max_skew_us as u64
                + 2 * net::TICK.as_micros() as u64,
            // Small, so that flushes let log GC remove segments a lagging peer still
            // needs, and the leader sends it a snapshot.
            segment_bytes: 4 << 10,
            plants: self.config.plants,
        }
    }

    fn open(&self, id: u64) -> docsim_engine::Result<(Peer, BootReport)> {
        let dir = PathBuf::from(format!("/cluster/n{id}"));
        let disk = &self.disks[id as usize - 1];
        let skew = self.slots.get(id as usize - 1).map_or(0, |s| s.lock().expect("slot").skew_us);
        Peer::open(&dir, Some(&self.env), disk, "log", self.options(id), self.world.now_us(skew))
    }

    fn slot(&self, id: u64) -> std::sync::MutexGuard<'_, Slot> {
        self.slots[id as usize - 1].lock().expect("slot lock")
    }

    fn now_us(&self, id: u64) -> u64 {
        let skew = self.slot(id).skew_us;
        self.world.now_us(skew)
    }

    /// Take every replica's applied entries into the history. A failure sticks: once the
    /// history is broken every later call reports it, so no caller can drop it.
    fn collect(&mut self) -> Result<(), String> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        let result = self.collect_once();
        if let Err(e) = &result {
            self.fail(e.clone());
        }
        result
    }

    /// The run failed: said once in the trace (`check: <why>`); the first failure sticks.
    fn fail(&mut self, why: String) {
        if self.broken.is_none() {
            self.trace(format!("check: {why}"));
            self.broken = Some(why);
        }
    }

    fn collect_once(&mut self) -> Result<(), String> {
        for id in self.ids() {
            let (applied, installed) = self.slot(id).take_reports();
            for op_id in installed {
                self.outcome.snapshots_installed += 1;
                self.trace(format!("snapshot node={id}: installed {op_id}"));
            }
            for a in applied {
                self.history.applied(id, a.op_id, a.ht)?;
            }
            if let Some(e) = self.slot(id).refused.first() {
                return Err(format!("node {id} failed: {e}"));
            }
            if std::mem::take(&mut self.slot(id).crashed) {
                self.trace(format!("crash node={id} (armed, fired)"));
                self.power_off(id);
            }
        }
        self.note_leader();
        Ok(())
    }

    fn note_leader(&mut self) {
        let claiming = self
            .ids()
            .filter(|&id| self.slot(id).peer.as_ref().is_some_and(|p| p.status().leader))
            .count();
        if claiming > 1 {
            self.outcome.two_leader_steps += 1;
        }
        for id in self.ids() {
            let Some(status) = self.slot(id).peer.as_ref().map(|p| p.status()) else { continue };
            self.outcome.max_term = self.outcome.max_term.max(status.term);
            if status.leader && self.last_leader.is_none_or(|(term, _)| term < status.term) {
                self.last_leader = Some((status.term, id));
                self.outcome.leader_changes += 1;
                self.trace(format!("elected node={id} term={}", status.term));
            }
        }
        self.note_members();
        self.note_lag();
    }

    fn note_lag(&mut self) {
        let Some(leader) = self.leader_guess() else { return };
        let Some((commit, members)) =
            self.slot(leader).peer.as_ref().map(|p| (p.status().commit, p.members()))
        else {
            return;
        };
        for id in members.voters.iter().chain(&members.learners) {
            let applied = self.slot(*id).running().map(|p| p.status().applied);
            if let Some(applied) = applied {
                self.outcome.max_lag = self.outcome.max_lag.max(commit.saturating_sub(applied));
            }
        }
    }

    fn trace(&mut self, line: String) {
        self.outcome.trace.push(line);
    }

    /// The replica a client sends writes to: the newest leader it heard of, if up.
    fn leader_guess(&self) -> Option<u64> {
        let mut best: Option<(u64, u64)> = None;
        for id in self.ids() {
            if let Some(status) = self.slot(id).peer.as_ref().map(|p| p.status()) {
                if status.leader && best.is_none_or(|(term, _)| status.term > term) {
                    best = Some((status.term, id));
                }
            }
        }
        best.map(|(_, id)| id)
    }

    /// The random run: decide each command from the seed and what the controller sees,
    /// and carry it out with [`Cluster::step`] (which records it); stop at the first
    /// failure; end with the liveness phase and the whole-history check.
    async fn drive(
        &mut self,
        schedule: &mut ChaCha8Rng,
        rng: &mut ChaCha8Rng,
        workload: &mut Workload,
    ) {
        self.step(Command::Wait(Duration::from_millis(400))).await; // the first election
        for _ in 0..self.config.ops {
            if self.broken.is_some() {
                return;
            }
            self.outcome.ops += 1;
            self.fault(schedule).await;
            if schedule.random_range(0..100) < self.knobs.flush_percent {
                let id = schedule.random_range(1..=self.ids().count() as u64);
                if self.slot(id).running().is_some() {
                    self.step(Command::Flush(id)).await;
                }
            } else {
                let now = self.world.now_us(0) << 12;
                let op = workload.next_op(rng, now, 0);
                if self.pending.len() < self.knobs.clients {
                    self.client_op(schedule, op).await;
                }
            }
            let pause_ms = schedule.random_range(0..20);
            if pause_ms > 0 {
                self.step(Command::Wait(Duration::from_millis(pause_ms))).await;
            }
        }
        if self.broken.is_none() {
            self.step(Command::Wait(WRITE_TIMEOUT)).await;
            self.step(Command::Converge).await;
        }
    }

    async fn client_op(&mut self, schedule: &mut ChaCha8Rng, op: Op) {
        let (doc, path) = match op {
            Op::Write { .. } | Op::Batch { .. }
                if schedule.random_range(0..100) >= self.knobs.write_percent =>
            {
                if self.recent.is_empty() {
                    return;
                }
                self.recent[schedule.random_range(0..self.recent.len())].clone()
            }
            Op::Write { write, .. } => return self.write_op(schedule, vec![write]).await,
            Op::Batch { writes, .. } => return self.write_op(schedule, writes).await,
            // Half the reads go to a path written lately: a stale replica shows there.
            Op::Get { doc, path, .. } => match self.recent.len() {
                n if n > 0 && schedule.random_bool(0.5) => {
                    self.recent[schedule.random_range(0..n)].clone()
                }
                _ => (doc, path),
            },
            _ => return, // markers, default TTLs, CQL, Redis: not replicated yet
        };
        self.read_op(schedule, doc, path).await;
    }

    /// A client sends a write to the replica it believes leads (sometimes to any); it
    /// joins the pending writes, answered by a later [`Cluster::settle`].
    async fn write_op(
        &mut self,
        schedule: &mut ChaCha8Rng,
        writes: Vec<docsim_workloads::DocWrite>,
    ) {
        let n = self.ids().count() as u64;
        let target = match self.leader_guess() {
            Some(id) if schedule.random_range(0..10) > 0 => id,
            _ => schedule.random_range(1..=n),
        };
        let writes = writes.iter().map(convert::write).collect();
        self.step(Command::Write { writes, to: Some(target), wait: false }).await;
    }

    /// Propose `writes` at replica `target` and persist them there: the op id, its time and
    /// the replica's incarnation, or `None` when the replica is down. A power cut armed
    /// for the append or the sync fires here: the write is then in doubt.
    #[allow(clippy::type_complexity)]
    fn propose(
        &mut self,
        target: u64,
        writes: &[docsim_engine::DocWrite],
    ) -> docsim_engine::Result<Option<((docsim_engine::OpId, HybridTime), u64)>> {
        let now_us = self.now_us(target);
        let mut slot = self.slot(target);
        let slot = &mut *slot;
        let incarnation = slot.incarnation;
        let Some(peer) = slot.running() else { return Ok(None) };
        let proposed = cost::timed(Part::ClientCalls, || peer.propose(writes, now_us))?;
        match cost::timed(Part::ClientCalls, || peer.process()) {
            Ok(out) => slot.outbox.extend(out),
            Err(e) if e.kind() == ErrorKind::Crashed => slot.crashed = true,
            Err(e) => return Err(e),
        }
        Ok(Some((proposed, incarnation)))
    }

    /// Answer the pending writes that have an answer: applied at the replica that took
    /// them (acknowledged), that replica crashed since (no answer), or past the deadline.
    fn settle(&mut self, all: bool) {
        let now = simulated_now();
        let mut still = Vec::new();
        for p in std::mem::take(&mut self.pending) {
            let answer = {
                let slot = self.slot(p.target);
                match slot.peer.as_ref() {
                    _ if slot.incarnation != p.incarnation => Some(Answer::Unanswered),
                    None => Some(Answer::Unanswered),
                    Some(peer) if peer.is_applied(p.op_id) => Some(Answer::Acked),
                    Some(_) if all || now >= p.deadline => Some(Answer::TimedOut),
                    Some(_) => None,
                }
            };
            let Some(answer) = answer else {
                still.push(p);
                continue;
            };
            match answer {
                Answer::Acked => self.outcome.writes_acked += 1,
                Answer::TimedOut => self.outcome.writes_timed_out += 1,
                Answer::Unanswered => self.outcome.writes_unanswered += 1,
            }
            let proposal = self.history.proposals.get_mut(&p.op_id).expect("proposed");
            proposal.answer = answer;
            let ht = proposal.ht;
            self.trace(format!("write node={} {} @{ht}: {}", p.target, p.op_id, answer.name()));
        }
        self.pending = still;
    }

    /// Where a client reads: any replica, or one that claims to lead (maybe an old
    /// leader cut off from the rest: its reads must be refused once its lease is gone).
    fn read_target(&self, schedule: &mut ChaCha8Rng) -> u64 {
        let n = self.ids().count() as u64;
        let claiming: Vec<u64> = self
            .ids()
            .filter(|&id| self.slot(id).peer.as_ref().is_some_and(|p| p.status().leader))
            .collect();
        match schedule.random_range(0..2) {
            0 if !claiming.is_empty() => claiming[schedule.random_range(0..claiming.len())],
            _ => schedule.random_range(1..=n),
        }
    }

    /// A client reads a running replica: a leader "now" (its clock) most of the time, or
    /// ahead of now inside the lease it may hold; a follower at its safe time, a little
    /// before it, or now (refused unless it is caught up).
    async fn read_op(
        &mut self,
        schedule: &mut ChaCha8Rng,
        doc: docsim_models::DocId,
        path: Vec<docsim_models::Key>,
    ) {
        let id = self.read_target(schedule);
        let Some((leader, safe)) =
            self.slot(id).running().map(|peer| (peer.status().leader, peer.safe_time()))
        else {
            return;
        };
        let at = match (leader, schedule.random_range(0..4)) {
            (true, 0) => ReadAt::Now { ahead_us: schedule.random_range(0..LEASE_US) },
            (true, _) | (false, 0) => ReadAt::Now { ahead_us: 0 },
            (false, 1) => ReadAt::At(HybridTime::from_raw(
                safe.raw().saturating_sub(schedule.random_range(0..1 << 22)),
            )),
            (false, _) => ReadAt::Safe,
        };
        let path = convert::path(&doc, &path);
        self.step(Command::Get { path, from: id, at }).await;
    }

    /// The nemesis: up to one or two faults in force at once (a swarm knob) — at most one
    /// partition, crashes of replicas that are up — each lasting a drawn while (50 ms, a
    /// flap, to 2 s) before the network heals or the replica restarts; clock skew changes
    /// on its own.
    async fn fault(&mut self, schedule: &mut ChaCha8Rng) {
        let now = simulated_now();
        for (until, fault) in std::mem::take(&mut self.nemesis) {
            match fault {
                _ if now < until => self.nemesis.push((until, fault)),
                Fault::Partition => self.step(Command::Heal).await,
                Fault::Crash(id) if self.slot(id).running().is_some() => {
                    self.step(Command::Disarm(id)).await; // armed, never reached
                }
                Fault::Crash(id) if self.slot(id).peer.is_some() => {
                    self.nemesis.push((until, fault)); // fired: collect cuts it, then restart
                }
                Fault::Crash(id) => self.step(Command::Restart(id)).await,
                Fault::Slow(id) => self.step(Command::Slow(id, Duration::ZERO)).await,
            }
        }
        if self.nemesis.len() >= self.knobs.max_faults
            || schedule.random_range(0..100) >= self.knobs.fault_percent
        {
            return;
        }
        let n = self.ids().count() as u64;
        let victim = match self.leader_guess() {
            Some(leader) if schedule.random_bool(0.5) => leader,
            _ => schedule.random_range(1..=n),
        };
        let lasts_ms = [50, 200, 500, 1_000, 2_000][schedule.random_range(0..5)];
        let until = now + Duration::from_millis(lasts_ms);
        let partitioned = self.nemesis.iter().any(|(_, f)| matches!(f, Fault::Partition));
        match schedule.random_range(0..8) {
            0 | 1 if !partitioned => {
                let side = self.minority(schedule, victim);
                let rest: Vec<u64> = self.ids().filter(|id| !side.contains(id)).collect();
                if !rest.is_empty() {
                    self.step(Command::Partition(vec![side, rest])).await;
                    self.nemesis.push((until, Fault::Partition));
                }
            }
            5 if !partitioned => {
                if let Some(command) = self.split_or_bridge(schedule, victim) {
                    self.step(command).await;
                    self.nemesis.push((until, Fault::Partition));
                }
            }
            2 | 3 if self.slot(victim).running().is_some() => {
                let at = match schedule.random_bool(0.5) {
                    true => None,
                    false => Some(PeerCrash::ALL[schedule.random_range(0..PeerCrash::ALL.len())]),
                };
                self.step(Command::Crash(victim, at)).await;
                self.nemesis.push((until, Fault::Crash(victim)));
            }
            6 if self.knobs.membership => {
                if let Some(command) = self.next_membership(schedule) {
                    self.step(command).await;
                }
            }
            7 if self.slot(victim).sync_latency.is_zero() => {
                let sync_ms = [2, 10, 50, 200][schedule.random_range(0..4)];
                self.step(Command::Slow(victim, Duration::from_millis(sync_ms))).await;
                self.nemesis.push((until, Fault::Slow(victim)));
            }
            4 => {
                let max = self.knobs.max_skew_us;
                let skew = if max == 0 { 0 } else { schedule.random_range(-max..=max) };
                self.step(Command::Skew(victim, skew)).await;
            }
            _ => {}
        }
    }

    /// Cut every link between two of `groups`, both ways.
    fn partition(&mut self, groups: &[Vec<u64>]) {
        let mut links = Vec::new();
        for (i, a) in groups.iter().enumerate() {
            for b in &groups[i + 1..] {
                links.extend(a.iter().flat_map(|&x| b.iter().map(move |&y| (x, y))));
            }
        }
        self.clog(&links);
        // No group holds a majority of the voters in force (the newest leader's).
        let voters = self.last_members.as_ref().map(|m| m.voters.clone());
        let voters = voters.unwrap_or_else(|| (1..=self.config.replicas as u64).collect());
        let held = |g: &Vec<u64>| g.iter().filter(|id| voters.contains(id)).count();
        if groups.iter().all(|g| held(g) * 2 <= voters.len()) {
            self.outcome.no_majority_partitions += 1;
        }
        let shown: Vec<String> = groups
            .iter()
            .map(|g| g.iter().map(u64::to_string).collect::<Vec<_>>().join(","))
            .collect();
        self.trace(format!("partition {}", shown.join(" | ")));
    }

    /// Cut these links, both ways.
    fn cut_links(&mut self, links: &[(u64, u64)]) {
        self.clog(links);
        self.outcome.bridges += 1;
        self.trace(Command::Cut(links.to_vec()).to_string());
    }

    fn clog(&mut self, links: &[(u64, u64)]) {
        let net = NetSim::current();
        for &(a, b) in links {
            let (na, nb) = (self.nodes[a as usize - 1].id(), self.nodes[b as usize - 1].id());
            net.clog_link(na, nb);
            net.clog_link(nb, na);
            self.cut.insert((a, b));
            self.cut.insert((b, a));
        }
        self.outcome.partitions += 1;
    }

    /// No majority anywhere (`split`: 1|1|1, or 2|2|1 of five), or a bridge: `victim`
    /// reaches both halves of the others, which do not reach each other.
    /// (`None` with fewer than three replicas started: no halves to split.)
    fn split_or_bridge(&self, schedule: &mut ChaCha8Rng, victim: u64) -> Option<Command> {
        let mut others: Vec<u64> = self.ids().filter(|&id| id != victim).collect();
        if others.len() < 2 {
            return None;
        }
        for i in (1..others.len()).rev() {
            others.swap(i, schedule.random_range(0..=i));
        }
        let half = others.len() / 2;
        let (left, right) = others.split_at(half);
        if schedule.random_bool(0.5) {
            let links = left.iter().flat_map(|&a| right.iter().map(move |&b| (a, b))).collect();
            return Some(Command::Cut(links));
        }
        let mut groups = vec![vec![victim], left.to_vec(), right.to_vec()];
        groups.iter_mut().for_each(|g| g.sort_unstable());
        Some(Command::Partition(groups))
    }

    /// A minority holding `victim` (alone, or with followers up to just under half).
    fn minority(&self, schedule: &mut ChaCha8Rng, victim: u64) -> Vec<u64> {
        let n = self.config.replicas as u64;
        let size = schedule.random_range(1..=((n - 1) / 2).max(1));
        let mut side = vec![victim];
        let mut others: Vec<u64> = self.ids().filter(|&id| id != victim).collect();
        while (side.len() as u64) < size && !others.is_empty() {
            side.push(others.remove(schedule.random_range(0..others.len())));
        }
        // With the learners half the time: a leader cut off from its voters but not from
        // the replicas that do not vote (where Jepsen lost YugaByte DB 1.1.9's writes).
        let learners = self
            .leader_guess()
            .and_then(|l| self.slot(l).peer.as_ref().map(|p| p.members().learners));
        if let Some(learners) = learners.filter(|l| !l.is_empty()) {
            if schedule.random_bool(0.5) {
                side.extend(learners); // deduplicated below
            }
        }
        side.sort_unstable();
        side.dedup();
        side
    }

    fn heal(&mut self) {
        let net = NetSim::current();
        for (a, b) in std::mem::take(&mut self.cut) {
            net.unclog_link(self.nodes[a as usize - 1].id(), self.nodes[b as usize - 1].id());
        }
        self.trace("heal".into());
    }

    fn crash(&mut self, id: u64) {
        if self.slot(id).peer.is_none() {
            return;
        }
        let _ = self.collect(); // a failure sticks: the next collect reports it
        if self.slot(id).peer.is_some() {
            self.trace(format!("crash node={id}"));
            self.power_off(id);
        }
    }

    /// Cut replica `id`'s power: its tasks stop, its memory goes, its disk keeps only
    /// what was synced (torn at random).
    fn power_off(&mut self, id: u64) {
        madsim::runtime::Handle::current().kill(self.nodes[id as usize - 1].id());
        let mut slot = self.slot(id);
        slot.peer = None;
        slot.outbox.clear();
        slot.crashed = false;
        drop(slot);
        self.disks[id as usize - 1].crash(Tear::Random);
        self.outcome.crashes += 1;
    }

    /// Arm a power cut of replica `id` at a moment of its work (it fires when reached).
    fn arm_crash(&mut self, id: u64, at: PeerCrash) {
        if let Some(peer) = self.slot(id).peer.as_mut() {
            peer.arm_crash(Some(at));
        }
        self.trace(format!("crash node={id} at {}", at.name()));
    }

    fn restart(&mut self, id: u64) -> Result<(), String> {
        let opened = cost::timed(Part::Replicas, || self.open(id));
        let (peer, report) = opened.map_err(|e| format!("node {id} does not restart: {e}"))?;
        self.outcome.restarts += 1;
        self.outcome.orphaned += report.uncommitted;
        self.outcome.replayed += report.replayed;
        self.trace(format!("restart node={id}: {report}"));
        if report.finished_install {
            self.outcome.installs_finished_at_boot += 1;
            self.trace(format!(
                "node {id}: log restarted after snapshot {}",
                report.frontier.op_id
            ));
        }
        let mut slot = self.slot(id);
        slot.peer = Some(peer);
        slot.syncs_sent = 0;
        slot.incarnation += 1;
        drop(slot);
        madsim::runtime::Handle::current().restart(self.nodes[id as usize - 1].id());
        Ok(())
    }

    /// Faults stop, the network heals, every node runs: the group must converge.
    async fn liveness(&mut self) -> Result<(), String> {
        if !self.cut.is_empty() {
            self.heal();
        }
        NetSim::current().update_config(|c| c.packet_loss_rate = 0.0);
        self.nemesis.clear();
        for id in self.ids().collect::<Vec<_>>() {
            self.slot(id).sync_latency = Duration::ZERO; // disks as fast as the rest
        }
        for id in self.ids().collect::<Vec<_>>() {
            if let Some(peer) = self.slot(id).peer.as_mut() {
                peer.arm_crash(None); // no power cut armed earlier fires now
            }
        }
        self.collect()?; // a cut that fired is carried out before the restarts
        for id in self.ids().collect::<Vec<_>>() {
            if self.slot(id).peer.is_none() {
                self.restart(id)?;
            }
        }
        let start = simulated_now();
        loop {
            madsim::time::sleep(Duration::from_millis(50)).await;
            self.collect()?;
            if let Some((last_index, members)) = self.converged() {
                self.members = members;
                self.outcome.liveness_ms = start.elapsed().as_millis() as u64;
                self.trace(format!("converged at index {last_index}"));
                self.same_dumps()?;
                if !self.read_every_document()? {
                    continue; // a leader's lease still trails its newest write: wait
                }
                let counts = cost::timed(Part::Check, || self.history.check(last_index))?;
                self.outcome.committed = counts.committed;
                self.outcome.overwritten = counts.proposals_lost;
                return Ok(());
            }
            if start.elapsed() > LIVENESS {
                let statuses: Vec<String> = self
                    .ids()
                    .map(|id| {
                        let slot = self.slot(id);
                        let status = slot.peer.as_ref().map(|p| (p.status(), p.progress()));
                        format!("{id}: {status:?}")
                    })
                    .collect();
                return Err(format!("no convergence within {LIVENESS:?}: {}", statuses.join("; ")));
            }
        }
    }

    /// One leader every member follows (its configuration's voters and learners, not in
    /// a joint configuration), everything applied: the last index and the members. A
    /// replica removed from the group is left behind.
    fn converged(&self) -> Option<(u64, Vec<u64>)> {
        let leader = self.leader_guess()?;
        let (leader, members) = {
            let slot = self.slot(leader);
            let peer = slot.peer.as_ref()?;
            (peer.status(), peer.members())
        };
        if !members.outgoing.is_empty() {
            return None;
        }
        let mut ids = [members.voters, members.learners].concat();
        ids.sort_unstable();
        let all = ids.iter().all(|&id| {
            self.slot(id).peer.as_ref().map(|p| p.status()).is_some_and(|s| {
                s.term == leader.term
                    && s.leader_id == leader.leader_id
                    && s.applied == leader.last_index
                    && s.last_index == leader.last_index
            })
        });
        all.then_some((leader.last_index, ids))
    }

    /// After convergence, every replica reads every document any proposal wrote, at its
    /// safe time (past every committed write): the check compares each with the model, so
    /// a wrong apply the same on every replica shows even where no sampled read looked.
    /// `false` while some replica cannot serve its safe time yet (a new leader whose
    /// clock was moved past an old leader's lease, ahead of its own physical clock).
    fn read_every_document(&mut self) -> Result<bool, String> {
        let docs: std::collections::BTreeSet<docsim_models::DocId> = self
            .history
            .proposals
            .values()
            .flat_map(|p| p.writes.iter().map(|w| w.doc.clone()))
            .collect();
        let mut reads = Vec::new();
        for id in self.members.clone() {
            let now_us = self.now_us(id);
            for doc in &docs {
                let path = convert::path(doc, &[]);
                let mut slot = self.slot(id);
                let peer = slot.peer.as_mut().expect("every replica runs after convergence");
                let read_ht = peer.safe_time();
                let got = match cost::timed(Part::Check, || peer.read(&path, read_ht, now_us)) {
                    Ok(got) => got,
                    Err(e) if e.kind() == ErrorKind::LeaseExpired => return Ok(false),
                    Err(e) => {
                        return Err(format!("node {id} refused a read after convergence: {e}"))
                    }
                };
                drop(slot);
                reads.push(Read { node: id, doc: doc.clone(), path: vec![], read_ht, got });
            }
        }
        self.history.reads.extend(reads);
        Ok(true)
    }

    fn same_dumps(&self) -> Result<(), String> {
        let mut first: Option<(u64, Vec<_>)> = None;
        for &id in &self.members {
            let peer = self.slot(id);
            let dump = cost::timed(Part::Check, || peer.peer.as_ref().expect("members run").dump());
            drop(peer);
            let dump = dump.map_err(|e| e.to_string())?;
            match &first {
                None => first = Some((id, dump)),
                Some((a, first)) if *first != dump => {
                    return Err(format!(
                        "node {id} and node {a} hold different data after convergence"
                    ))
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

/// Run seeds `first..end` on `jobs` threads (each seed in its own madsim runtime);
/// outcomes in seed order.
pub fn campaign(
    first: u64,
    end: u64,
    jobs: usize,
    template: &ClusterConfig,
) -> Vec<ClusterOutcome> {
    let next = std::sync::atomic::AtomicU64::new(first);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let seed = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if seed >= end {
                    return;
                }
                let config = ClusterConfig { seed, ..template.clone() };
                let watch = crate::bench::Stopwatch::start();
                cost::take(); // what an earlier seed on this thread left
                              // A panic is a failed seed, not a dead campaign; its script is kept.
                let script = ScriptSink::default();
                let recorded = || run_recorded(&config, script.clone());
                let outcome = std::panic::catch_unwind(recorded).unwrap_or_else(|panic| {
                    let failure = Some(format!("panic: {}", panic_message(&*panic)));
                    let script = lock_script(&script).clone();
                    ClusterOutcome { seed, failure, script, ..Default::default() }
                });
                let cost_seconds = cost::take();
                let outcome = ClusterOutcome { seconds: watch.seconds(), cost_seconds, ..outcome };
                results.lock().expect("results").push(outcome);
            });
        }
    });
    let mut outcomes = results.into_inner().expect("results");
    outcomes.sort_by_key(|o| o.seed);
    outcomes
}

/// What a panic said.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic.downcast_ref::<String>().cloned();
    text.or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

/// The campaign's totals, one line per counter.
pub fn summary(outcomes: &[ClusterOutcome]) -> Vec<String> {
    let sum = |f: fn(&ClusterOutcome) -> usize| outcomes.iter().map(f).sum::<usize>();
    let mut refused: BTreeMap<&str, usize> = BTreeMap::new();
    for o in outcomes {
        for (kind, n) in &o.reads_refused {
            *refused.entry(kind).or_default() += n;
        }
    }
    let refused: Vec<String> = refused.iter().map(|(k, n)| format!("{k}={n}")).collect();
    vec![
        format!(
            "seeds {}  failures {}",
            outcomes.len(),
            outcomes.iter().filter(|o| o.failure.is_some()).count()
        ),
        format!("ops {}  committed writes {}", sum(|o| o.ops), sum(|o| o.committed)),
        format!(
            "writes acked {}  timed out {}  unanswered {}  not_leader {}  never committed {}",
            sum(|o| o.writes_acked),
            sum(|o| o.writes_timed_out),
            sum(|o| o.writes_unanswered),
            sum(|o| o.writes_not_leader),
            sum(|o| o.overwritten)
        ),
        format!("reads served {}  refused [{}]", sum(|o| o.reads_served), refused.join(" ")),
        format!(
            "leader changes {}  two-leader steps {}  partitions {} (no majority {}, bridges {})  \
             crashes {}  restarts {}  orphaned entries {}  replayed {}",
            sum(|o| o.leader_changes),
            sum(|o| o.two_leader_steps),
            sum(|o| o.partitions),
            sum(|o| o.no_majority_partitions),
            sum(|o| o.bridges),
            sum(|o| o.crashes),
            sum(|o| o.restarts),
            sum(|o| o.orphaned),
            sum(|o| o.replayed)
        ),
        format!(
            "membership changes proposed {}  slow disks {}",
            sum(|o| o.membership_changes),
            sum(|o| o.slow_disks)
        ),
        format!(
            "log segments collected {}  snapshots installed {} (cut short and finished at boot {})",
            sum(|o| o.log_segments_collected),
            sum(|o| o.snapshots_installed),
            sum(|o| o.installs_finished_at_boot)
        ),
        cost_line(outcomes),
        format!(
            "liveness max {} ms (bound {} ms)",
            outcomes.iter().map(|o| o.liveness_ms).max().unwrap_or(0),
            LIVENESS.as_millis()
        ),
    ]
}

/// Where the campaign's wall time went (`cluster/cost.rs`), as shares of the seeds' time.
/// A seed's time is its wall time: with more jobs than cores it includes waiting, so
/// ops per seed-second is ops/s/core only with at most one job per core.
fn cost_line(outcomes: &[ClusterOutcome]) -> String {
    let total: f64 = outcomes.iter().map(|o| o.seconds).sum();
    let part = |i: usize| outcomes.iter().map(|o| o.cost_seconds[i]).sum::<f64>();
    let share = |s: f64| if total > 0.0 { 100.0 * s / total } else { 0.0 };
    let (replicas, calls, check) = (part(0), part(1), part(2));
    let ops: usize = outcomes.iter().map(|o| o.ops).sum();
    let per_core = if total > 0.0 { ops as f64 / total } else { 0.0 };
    format!(
        "cost {total:.1}s of seeds ({per_core:.0} ops per seed-second): replicas' tasks \
         {:.0}%  client calls {:.0}%  checker {:.0}%  madsim, controller, workload {:.0}%",
        share(replicas),
        share(calls),
        share(check),
        share(total - replicas - calls - check)
    )
}

/// The campaign as a report (`--report DIR`: JSON, Markdown, HTML with the replication
/// charts, JUnit), one run per seed.
pub fn campaign_report(
    outcomes: &[ClusterOutcome],
    template: &ClusterConfig,
    seconds: f64,
    reproducers: &std::path::Path,
) -> docsim_reports::CampaignReport {
    let plant = docsim_engine::canary::Plant::ALL
        .into_iter()
        .chain(docsim_engine::canary::Plant::REPLICATED)
        .find(|&p| template.plants.contains(p));
    docsim_reports::CampaignReport {
        commit: crate::report::COMMIT.into(),
        plant: plant.map(|p| p.name().into()),
        shards: vec!["0/1".into()],
        known_probes: vec![],
        seconds,
        runs: outcomes.iter().map(|o| run_report(o, reproducers)).collect(),
    }
}

fn run_report(o: &ClusterOutcome, reproducers: &std::path::Path) -> docsim_reports::RunReport {
    let count = |n: usize| n as u64;
    let faults = [
        ("partition", count(o.partitions)),
        ("partition_no_majority", count(o.no_majority_partitions)),
        ("bridge", count(o.bridges)),
        ("power_cut", count(o.crashes)),
        ("membership_change", count(o.membership_changes)),
        ("slow_disk", count(o.slow_disks)),
    ];
    let mut replication: BTreeMap<String, u64> = [
        ("leader_changes", count(o.leader_changes)),
        ("two_leader_steps", count(o.two_leader_steps)),
        ("orphaned_entries", count(o.orphaned)),
        ("proposals_never_committed", count(o.overwritten)),
        ("writes_acked", count(o.writes_acked)),
        ("writes_timed_out", count(o.writes_timed_out)),
        ("writes_unanswered", count(o.writes_unanswered)),
        ("writes_not_leader", count(o.writes_not_leader)),
        ("max_lag", o.max_lag),
        ("log_segments_collected", count(o.log_segments_collected)),
        ("snapshots_installed", count(o.snapshots_installed)),
        ("snapshot_installs_finished_at_boot", count(o.installs_finished_at_boot)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for (kind, n) in &o.reads_refused {
        replication.insert(format!("reads_refused_{kind}"), count(*n));
    }
    let failure = o.failure.as_ref().map(|f| docsim_reports::FailureReport {
        step: o.script.len().saturating_sub(2),
        kind: failure_class(f),
        op: o.script.last().cloned().unwrap_or_default(),
        expected: vec![],
        actual: vec![f.clone()],
        reproducer: Some(
            reproducers.join(format!("cluster-{}", o.seed)).join("repro.ds").display().to_string(),
        ),
    });
    docsim_reports::RunReport {
        seed: o.seed,
        knobs: o.script.get(1).cloned().unwrap_or_default(),
        ops: o.ops,
        steps: o.script.len().saturating_sub(2),
        checked_reads: o.reads_served,
        seconds: o.seconds,
        trace_hash: format!("{:016x}", o.trace_hash()),
        faults: faults.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        replayed: count(o.replayed),
        crashes: count(o.crashes),
        restarts: count(o.restarts),
        replication,
        failure,
        ..Default::default()
    }
}
