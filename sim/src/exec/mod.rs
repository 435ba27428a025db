//! The one executor of docscript: a group of one or a replicated group, every command of
//! the language (`docsim_engine::script`), for scripts and for random runs alike.
//!
//! A [`Cluster`] is the tablet servers of a run: madsim nodes (`world.rs`), each with its
//! own simulated disk, RocksDB environment, skewed clock and engine [`Node`], each hosting
//! a replica of every tablet (the document tablet, created on first use, and one per CQL
//! table: the master's catalog). [`Cluster::step`] carries out one command: it records the
//! command (the run's script), prints what the command prints (the run's trace), takes
//! what the replicas applied into each group's [`History`], and answers the writes that
//! have an answer. A script's output is its trace, so a run's recorded script printing the
//! run's trace line for line is the proof that the reproducer is exact.
//!
//! Clients (`client.rs`) write through the replica that claims to lead (or the one a
//! command names), waiting for the answer unless told not to; reads go to any replica at
//! a time of the script's choosing. A node's own commands (`node_ops.rs`) flush, compact,
//! crash, restart and fault one node (or every node). The network commands and membership
//! changes are `network.rs`'s; the liveness phase and the model-free checks of a group's
//! history are `converge.rs`'s and `history.rs`'s.
//!
//! The executor checks only what needs no model (one history per group, acknowledged
//! writes committed, convergence). It emits [`Event`]s — proposals with their replies,
//! answers, reads, entries applied, restarts — for a random run's checker, which holds the
//! model.
//!
//! In a group of one a write is answered in the call that proposes it, and the trace is
//! exactly what the contract's commands print (lines about elections, answers, snapshots
//! and membership are printed only for bigger groups).

pub(crate) mod backup;
mod client;
mod converge;
pub mod history;
mod network;
mod node_ops;

pub use client::reply_lines;
pub use history::{Answer, History};
pub(crate) use node_ops::cutoff_lines;

use crate::failure::{Broken, FailureKind};
use crate::world::{self, Shared, Slot, World};
use docsim_engine::canary::Plants;
use docsim_engine::disk::{FaultConfig, SimDisk};
use docsim_engine::script::{Command, Header, Last};
use docsim_engine::Job;
use docsim_engine::{
    Error, HybridTime, Layout, MarkerMode, Members, Node, NodeOptions, OpId, Reply, Request,
    RestartReport, Schema, StorageConfig, TabletId, Timing,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a client waits for a write's answer.
pub const WRITE_TIMEOUT: Duration = Duration::from_millis(600);
/// A leader's hybrid-time lease: 10 ticks, the shortest election timeout, so a leader cut
/// off loses it before raft-rs's quorum check makes it step down.
pub const LEASE_US: u64 = 100_000;

/// What a run's tablet servers are.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The group: replicas per tablet, the network's seed, loss and skew bound.
    pub header: Header,
    /// Planted bugs (testing the tester).
    pub plants: Plants,
    /// Each node's RocksDB options, node 1 first; the spare a membership change starts
    /// takes the last one. The layout of new CQL tables is the first's.
    pub storage: Vec<StorageConfig>,
    /// Raft log segment size in bytes.
    pub segment_bytes: usize,
    /// The seeds of the nodes' disks (their torn crashes), node 1 first.
    pub disk_seeds: Vec<u64>,
    /// Each replica's election timeout in ticks, node 1 first (the caller's seeded
    /// jitter: raft-rs draws nothing).
    pub election_ticks: Vec<usize>,
    /// Where the nodes' RocksDB files live: the simulated disk (what every run and script
    /// uses), or RocksDB's in-memory environment (`--rocks-medium memory`, to measure
    /// what the simulated disk costs).
    pub medium: docsim_engine::Medium,
    /// The run's backup store (`backup export|import`): a directory of real files that
    /// outlives the cluster; none, and the backup commands are refused.
    pub backups: Option<std::path::PathBuf>,
}

impl Setup {
    /// A group's setup from its header alone (a script's, or the random run's that
    /// wrote it): the disks' seeds and the election timeouts (10 to 19 ticks: raft-rs
    /// draws nothing itself) come from the header's seed; every node stores with RocksDB's
    /// defaults until the caller says otherwise.
    pub fn scripted(header: Header, plants: Plants, segment_bytes: usize) -> Setup {
        use rand::Rng;
        let n = header.replicas + 1;
        let mut disk = crate::streams::stream(header.seed, crate::streams::STREAM_DISK);
        let mut election = crate::streams::stream(header.seed, crate::streams::STREAM_ELECTION);
        Setup {
            header,
            plants,
            storage: vec![StorageConfig::default(); n],
            segment_bytes,
            disk_seeds: (0..n).map(|_| disk.random::<u64>()).collect(),
            election_ticks: (0..n).map(|_| 10 + election.random_range(0..10)).collect(),
            medium: docsim_engine::Medium::SimDisk,
            backups: None,
        }
    }
}

/// What happened, for a random run's checker (the executor itself is model-free).
#[derive(Clone, Debug)]
pub enum Event {
    /// A leader took a write: proposed it (`op_id`), or answered it at once (`None`: it
    /// changes nothing), at `ht`, with the reply the client gets.
    Proposed { tablet: TabletId, node: u64, op_id: Option<OpId>, ht: HybridTime, reply: Reply },
    /// A write the replica at `node` refused, evaluated at `ht`.
    Refused { tablet: TabletId, node: u64, ht: HybridTime, error: Error },
    /// A proposal's persist at its leader failed (`error`: a power cut that fired, an I/O
    /// error, a full disk): its entry is in doubt.
    Cut { tablet: TabletId, node: u64, op_id: OpId, error: Error },
    /// A proposal was answered.
    Answered { tablet: TabletId, op_id: OpId, answer: Answer },
    /// A read a replica served or refused.
    Read {
        tablet: TabletId,
        node: u64,
        request: Request,
        read_ht: HybridTime,
        result: Result<Reply, Error>,
    },
    /// A scan of a split table: every tablet's read at one time, each tablet at `node`,
    /// in hash order (the client prints their rows one after the other).
    Scan { parts: Vec<Part>, request: Request, read_ht: HybridTime },
    /// An entry a replica applied (live or replayed).
    /// `writes`: it wrote data into the memtable (not a metadata change); `snapshot`: the
    /// snapshot it took.
    Applied {
        tablet: TabletId,
        node: u64,
        op_id: OpId,
        ht: Option<HybridTime>,
        writes: bool,
        snapshot: Option<docsim_engine::SnapshotTaken>,
        /// It restored the tablet (`restore`).
        restored: bool,
    },
    /// A snapshot a replica installed.
    Installed { tablet: TabletId, node: u64, op_id: OpId },
    /// A node's power went off: an armed cut that fired (at its point) or a `crash`.
    Crashed { node: u64, fired: bool },
    /// A node restarted (or failed to).
    Restarted { node: u64, result: Result<Vec<(TabletId, RestartReport)>, Error> },
    /// The server-wide memstore limit flushed a tablet of `node`.
    MemoryFlushed { node: u64, flush: docsim_engine::MemoryFlush },
    /// A node's flush (`cutoff`: `None`) or compaction ended: done, or cut by the power
    /// (after it was durable), or refused.
    /// `jobs`: each tablet's flush or compaction as the disk saw it.
    Compacted { node: u64, request: Compaction, result: Result<(), Error>, jobs: Vec<Job> },
}

/// One tablet's part of a read: the tablet, the node that served it, its reply.
pub type Part = (TabletId, u64, Result<Reply, Error>);

/// A flush or compaction, as a node ran it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Compaction {
    /// The cutoff the command gave every tablet (`compact cutoff=<T>`); `None` with
    /// `retained` empty: a flush.
    pub cutoff: Option<HybridTime>,
    /// The cutoff each tablet's retention policy gave (`compact [@T]`), and whether a
    /// registered read decided it.
    pub retained: BTreeMap<TabletId, docsim_engine::retention::Cutoff>,
    /// The retention interval the policy applied.
    pub retention_us: u64,
    pub minor: bool,
    /// A run of one tablet's files.
    pub run: Option<(TabletId, usize, usize)>,
}

impl Compaction {
    /// The history cutoff tablet `tablet` compacted with (`None`: a flush, or a tablet
    /// the retention policy did not reach).
    pub fn cutoff_of(&self, tablet: &TabletId) -> Option<HybridTime> {
        self.cutoff.or_else(|| self.retained.get(tablet).map(|c| c.ht))
    }

    /// Whether it compacted (not only flushed).
    pub fn compacts(&self) -> bool {
        self.cutoff.is_some() || !self.retained.is_empty()
    }

    /// The highest cutoff of any tablet.
    pub fn highest_cutoff(&self) -> Option<HybridTime> {
        let retained = self.retained.values().map(|c| c.ht).max();
        self.cutoff.max(retained)
    }
}

/// What the executor counted, for reports.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    pub writes_acked: usize,
    pub writes_timed_out: usize,
    pub writes_unanswered: usize,
    pub writes_refused: BTreeMap<&'static str, usize>,
    pub reads_served: usize,
    pub reads_refused: BTreeMap<&'static str, usize>,
    pub leader_changes: usize,
    pub two_leader_steps: usize,
    pub partitions: usize,
    pub no_majority_partitions: usize,
    pub bridges: usize,
    pub membership_changes: usize,
    pub max_lag: u64,
    pub crashes: usize,
    pub restarts: usize,
    pub orphaned: usize,
    pub replayed: usize,
    pub snapshots_installed: usize,
    pub installs_finished_at_boot: usize,
    pub slow_disks: usize,
    pub liveness_ms: u64,
    pub committed: usize,
    pub proposals_lost: usize,
}

/// A write proposed and not answered yet.
struct Pending {
    tablet: TabletId,
    node: u64,
    /// The node's incarnation when it accepted (a restart loses the client's call).
    incarnation: u64,
    deadline: madsim::time::Instant,
    op_id: OpId,
}

/// The run's script, shared with the caller: it survives a panic inside the run.
pub type ScriptSink = Arc<Mutex<Vec<String>>>;

/// The tablet servers of a run and what the executor knows of them.
pub struct Cluster {
    setup: Setup,
    world: World,
    slots: Vec<Shared>,
    handles: Vec<madsim::runtime::NodeHandle>,
    /// Cut links (from, to), by node id.
    cut: BTreeSet<(u64, u64)>,
    /// The master's catalog: every tablet and the schema it was created with.
    catalog: Vec<(TabletId, Schema)>,
    markers: MarkerMode,
    layout: Layout,
    /// Every node's server-wide memstore limit (`memstore`).
    memstore_limit: Option<usize>,
    /// Every node's retention interval (`retention`), when a command set one.
    retention_us: Option<u64>,
    /// A group of one's memory flush lines, printed with the command that made them.
    memory_lines: Vec<String>,
    histories: BTreeMap<TabletId, History>,
    pending: Vec<Pending>,
    events: Vec<Event>,
    trace: Vec<String>,
    script: ScriptSink,
    /// The first failure a model-free check found (sticky).
    broken: Option<Broken>,
    last_leader: BTreeMap<TabletId, (u64, u64)>,
    last_members: BTreeMap<TabletId, Members>,
    /// The nodes every group's members held at convergence.
    members: BTreeMap<TabletId, Vec<u64>>,
    counts: Counts,
    /// The previous command's output, for `expect`.
    last: Last,
    /// The last restart's reports in full, for `expect restart`.
    restarts_full: Vec<String>,
    /// Commands that printed an error no `expect` took back.
    pub failed_commands: usize,
    /// Whether the last command's error counts as a failure (an `expect` of it takes it
    /// back).
    last_error_counted: bool,
    /// A write took a time the script gave (`@T`): times need not increase along the log.
    explicit_times: bool,
    /// The (group, node) pairs membership changes named.
    named: BTreeSet<(TabletId, u64)>,
}

impl Cluster {
    /// Start the tablet servers of `setup` (inside madsim's runtime).
    pub fn start(setup: Setup, script: ScriptSink) -> Result<Cluster, String> {
        let loss = f64::from(setup.header.loss_percent) / 100.0;
        madsim::net::NetSim::current().update_config(|c| c.packet_loss_rate = loss);
        let layout = setup.storage.first().map_or(Layout::Declared, |s| s.layout);
        let mut cluster = Cluster {
            world: World { start: crate::simulated_now() },
            setup,
            slots: Vec::new(),
            handles: Vec::new(),
            cut: BTreeSet::new(),
            catalog: Vec::new(),
            markers: MarkerMode::Optional,
            layout,
            memstore_limit: None,
            retention_us: None,
            memory_lines: Vec::new(),
            histories: BTreeMap::new(),
            pending: Vec::new(),
            events: Vec::new(),
            trace: Vec::new(),
            script,
            broken: None,
            last_leader: BTreeMap::new(),
            last_members: BTreeMap::new(),
            members: BTreeMap::new(),
            counts: Counts::default(),
            last: Last::default(),
            restarts_full: Vec::new(),
            failed_commands: 0,
            last_error_counted: false,
            explicit_times: false,
            named: BTreeSet::new(),
        };
        for id in 1..=cluster.setup.header.replicas as u64 {
            cluster.spawn(id)?;
        }
        if cluster.replicated() {
            // The master creates the document tablet with the group: its election starts
            // at once (a group of one creates it on first use, as the contract's node).
            cluster.docs_tablet();
        }
        Ok(cluster)
    }

    /// Writes proposed and not answered yet.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Whether node `id`'s replica of `tablet` runs and claims to lead.
    pub fn leads(&self, id: u64, tablet: &TabletId) -> bool {
        let slot = self.slot(id);
        slot.running() && slot.node.replica(tablet).is_ok_and(|r| r.status().leader)
    }

    /// Node `id`'s replica of `tablet`'s safe time, if it runs.
    pub fn safe_time(&self, id: u64, tablet: &TabletId) -> Option<HybridTime> {
        let slot = self.slot(id);
        slot.running().then(|| slot.node.replica(tablet).ok().map(|r| r.safe_time())).flatten()
    }

    /// Whether node `id` hosts any tablet (a spare not yet added hosts the catalog's).
    pub fn hosts_any(&self, id: u64) -> bool {
        !self.slot(id).node.tablet_ids().is_empty()
    }

    /// `tablet`'s configuration as its newest leader reports it.
    pub fn members(&self, tablet: &TabletId) -> Option<Members> {
        let leader = self.leader_guess(tablet)?;
        self.slot(leader).node.replica(tablet).ok().map(|r| r.members())
    }

    /// Whether a membership change of `tablet`'s group ever named node `id`.
    pub fn ever_member(&self, id: u64, tablet: &TabletId) -> bool {
        self.named.contains(&(tablet.clone(), id))
    }

    /// The group's size.
    pub fn replicas(&self) -> usize {
        self.setup.header.replicas
    }

    /// Whether the group has more than one replica (a group of one prints only what the
    /// contract's commands print).
    fn replicated(&self) -> bool {
        self.replicas() > 1
    }

    /// Start node `id` (the next one): a madsim node with a fresh engine node hosting
    /// every tablet of the catalog.
    fn spawn(&mut self, id: u64) -> Result<(), String> {
        assert_eq!(id as usize, self.slots.len() + 1, "nodes start in order");
        let mut node = Node::new(&std::path::PathBuf::from(format!("/n{id}")), self.options(id))
            .map_err(|e| format!("node {id} does not start: {e}"))?;
        if let Some(interval_us) = self.retention_us {
            node.set_retention(interval_us);
        }
        let now_us = self.world.now_us(0);
        for (tablet, schema) in &self.catalog {
            node.create_tablet(tablet.clone(), schema.clone(), now_us)
                .map_err(|e| format!("node {id} does not open {tablet:?}: {e}"))?;
        }
        let slot: Shared = Arc::new(Mutex::new(Slot::new(node)));
        self.slots.push(slot.clone());
        self.handles.push(world::spawn_node(id, slot, self.world));
        Ok(())
    }

    fn options(&self, id: u64) -> NodeOptions {
        let i = (id as usize - 1).min(self.setup.storage.len() - 1);
        let max_skew_us = self.setup.header.max_skew_us;
        let disk_seed = self.setup.disk_seeds.get(i).copied().unwrap_or(id);
        NodeOptions {
            id,
            voters: (1..=self.replicas() as u64).collect(),
            medium: self.setup.medium,
            disk: SimDisk::new(disk_seed, FaultConfig::default()),
            segment_bytes: self.setup.segment_bytes,
            plants: self.setup.plants,
            storage: StorageConfig { layout: self.layout, ..self.setup.storage[i] },
            memstore_limit_bytes: self.memstore_limit,
            timing: Timing {
                election_tick: self.setup.election_ticks.get(i).copied().unwrap_or(10),
                heartbeat_tick: 3,
                lease_us: LEASE_US,
                // A lease is at most lease_us past its leader's clock, which leads true time
                // by up to max_skew; the restarted replica's clock may trail by as much, and
                // a skew change while it waits may shorten the wait by twice that.
                quiet_us: LEASE_US + 4 * max_skew_us + 2 * world::TICK.as_micros() as u64,
            },
        }
    }

    /// Node `id`'s memory flushes since the last call, as events, and as the lines that
    /// print them.
    pub(super) fn memory_flushes(&mut self, id: u64) -> Vec<String> {
        let flushes = self.slot(id).node.take_memory_flushes();
        let node = self.replicated().then_some(id);
        let lines = flushes.iter().map(|f| docsim_engine::script::format_memory_flush(node, f));
        let lines = lines.collect();
        self.events
            .extend(flushes.into_iter().map(|flush| Event::MemoryFlushed { node: id, flush }));
        lines
    }

    /// Every node started: the group's, and the spare once a membership change added it.
    pub fn ids(&self) -> impl Iterator<Item = u64> {
        1..=self.slots.len() as u64
    }

    pub(crate) fn slot(&self, id: u64) -> std::sync::MutexGuard<'_, Slot> {
        self.slots[id as usize - 1].lock().expect("slot lock")
    }

    /// Node `id`'s physical clock now.
    pub fn now_us(&self, id: u64) -> u64 {
        let skew = self.slot(id).skew_us;
        self.world.now_us(skew)
    }

    /// Whether node `id` is to be restarted: it is off, or an error stopped a replica of it
    /// (a group of one's failed log write: its tablet answers `down` until a restart).
    pub fn needs_restart(&self, id: u64) -> bool {
        !self.running(id) || self.slot(id).node.any_replica_down()
    }

    /// Whether node `id` runs.
    pub fn running(&self, id: u64) -> bool {
        id >= 1 && (id as usize) <= self.slots.len() && self.slot(id).running()
    }

    /// The tablets of the catalog, the document tablet first.
    pub fn tablets(&self) -> Vec<TabletId> {
        let mut ids: Vec<TabletId> = self.catalog.iter().map(|(id, _)| id.clone()).collect();
        ids.sort_by_key(|id| *id != TabletId::Docs);
        ids
    }

    /// The Raft log segment size of every node.
    pub fn segment_bytes(&self) -> usize {
        self.setup.segment_bytes
    }

    /// Where the nodes' RocksDB files live.
    pub fn medium(&self) -> docsim_engine::Medium {
        self.setup.medium
    }

    /// Every node's server-wide memstore limit (`memstore`), if any.
    pub fn memstore_limit(&self) -> Option<usize> {
        self.memstore_limit
    }

    /// The catalog's tablets `name` names (`t`: every tablet of table t, in hash order;
    /// `t/i`: its tablet i).
    pub fn tablets_named(&self, name: &str) -> Result<Vec<TabletId>, Error> {
        docsim_engine::route::named(self.catalog.iter().map(|(id, _)| id), name)
    }

    /// Carry out `command`, record it, then collect what the replicas did and answer the
    /// writes that have an answer.
    pub async fn step(&mut self, command: Command) {
        let _ = self.collect();
        let recorded = self.execute(command).await;
        self.script.lock().unwrap_or_else(|p| p.into_inner()).push(recorded);
        let _ = self.collect(); // a failure is traced once, and sticks
        self.settle(false);
    }

    /// Print a line of the trace.
    pub fn print(&mut self, line: String) {
        self.trace.push(line);
    }

    pub(crate) fn trace(&mut self, line: String) {
        self.trace.push(line);
    }

    /// Print a line only a replicated group prints.
    pub(crate) fn note(&mut self, line: String) {
        if self.replicated() {
            self.trace.push(line);
        }
    }

    /// The trace so far.
    pub fn trace_lines(&self) -> &[String] {
        &self.trace
    }

    /// The recorded script so far.
    pub fn script(&self) -> Vec<String> {
        self.script.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The command the last step recorded (its first line: not an `expect` after it).
    pub fn last_recorded(&self) -> String {
        let script = self.script.lock().unwrap_or_else(|p| p.into_inner());
        script.last().and_then(|r| r.lines().next()).unwrap_or_default().to_owned()
    }

    /// Take the events since the last call.
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// The histories of the groups.
    pub fn history(&self, tablet: &TabletId) -> Option<&History> {
        self.histories.get(tablet)
    }

    /// The counts so far.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// Check an `expect` line against the previous command's output: the complaint, if
    /// it does not hold (an expected error no longer fails the script).
    pub fn expect(&mut self, want: &str) -> Result<(), String> {
        match self.last.check(want) {
            Ok(true) => {
                self.failed_commands -= usize::from(std::mem::take(&mut self.last_error_counted));
                Ok(())
            }
            Ok(false) => Ok(()),
            Err(complaint) => {
                self.failed_commands += 1;
                Err(complaint)
            }
        }
    }

    /// The first failure of a model-free check, if any.
    pub fn broken(&self) -> Option<&Broken> {
        self.broken.as_ref()
    }

    /// The run failed: said once in the trace (`check: <why>`); the first failure sticks.
    pub(crate) fn fail(&mut self, broken: Broken) {
        if self.broken.is_none() {
            self.trace(format!("check: {broken}"));
            self.broken = Some(broken);
        }
    }

    /// Take every node's applied entries and installed snapshots into the histories and
    /// the events; carry out power cuts that fired. A failure sticks.
    pub(crate) fn collect(&mut self) -> Result<(), Broken> {
        if let Some(broken) = &self.broken {
            return Err(broken.clone());
        }
        let result = self.collect_once();
        if let Err(broken) = &result {
            self.fail(broken.clone());
        }
        result
    }

    fn collect_once(&mut self) -> Result<(), Broken> {
        for id in self.ids().collect::<Vec<_>>() {
            let (applied, installed) = {
                let mut slot = self.slot(id);
                (slot.node.take_applied(), slot.node.take_installed())
            };
            for (tablet, op_id) in installed {
                self.counts.snapshots_installed += 1;
                self.note(format!(
                    "snapshot node={id} {}: installed {op_id}",
                    tablet_name(&tablet)
                ));
                self.events.push(Event::Installed { tablet, node: id, op_id });
            }
            for (tablet, a) in applied {
                let history = self.histories.entry(tablet.clone()).or_default();
                history.applied(id, a.op_id, a.ht)?;
                self.events.push(Event::applied(tablet, id, a));
            }
            let lines = self.memory_flushes(id);
            match self.replicated() {
                true => lines.into_iter().for_each(|line| self.note(line)),
                false => self.memory_lines.extend(lines), // printed with the command
            }
            let refused = self.slot(id).refused.first().cloned();
            if let Some(e) = refused {
                return Err(Broken::new(FailureKind::ReplicaFailed, format!("node {id}: {e}")));
            }
            // A replicated node whose replica an error stopped (a failed log write under a
            // membership change, a flush) stops whole: fail-stop, as `world::with_node`.
            let replicated = self.replicated();
            let fired = self.slot(id).node.powered() && {
                let slot = self.slot(id);
                slot.crashed
                    || slot.node.cut_fired()
                    || (replicated && slot.node.any_replica_down())
            };
            if fired {
                self.note(format!("crash node={id} (armed, fired)"));
                self.power_off(id, true);
            }
        }
        self.note_leaders();
        Ok(())
    }

    /// The replica of `tablet` a client sends writes to: the newest leader it heard of,
    /// if up.
    pub fn leader_guess(&self, tablet: &TabletId) -> Option<u64> {
        let mut best: Option<(u64, u64)> = None;
        for id in self.ids() {
            let slot = self.slot(id);
            if !slot.running() {
                continue;
            }
            let Ok(replica) = slot.node.replica(tablet) else { continue };
            let status = replica.status();
            if status.leader && best.is_none_or(|(term, _)| status.term > term) {
                best = Some((status.term, id));
            }
        }
        best.map(|(_, id)| id)
    }

    fn note_leaders(&mut self) {
        for tablet in self.tablets() {
            let claiming: Vec<(u64, u64)> = self
                .ids()
                .filter_map(|id| {
                    let slot = self.slot(id);
                    let status = slot.node.replica(&tablet).ok()?.status();
                    (slot.running() && status.leader).then_some((status.term, id))
                })
                .collect();
            if claiming.len() > 1 {
                self.counts.two_leader_steps += 1;
            }
            for (term, id) in claiming {
                let last = self.last_leader.get(&tablet).copied();
                if last.is_none_or(|(t, _)| t < term) {
                    self.last_leader.insert(tablet.clone(), (term, id));
                    self.counts.leader_changes += 1;
                    self.note(format!("elected node={id} term={term} {}", tablet_name(&tablet)));
                }
            }
            if self.replicated() {
                self.note_members(&tablet); // a group of one's never change
            }
        }
        if self.replicated() {
            self.note_lag(); // a group of one has none
        }
    }

    fn note_lag(&mut self) {
        for tablet in self.tablets() {
            let Some(leader) = self.leader_guess(&tablet) else { continue };
            let (commit, members) = {
                let slot = self.slot(leader);
                let Ok(replica) = slot.node.replica(&tablet) else { continue };
                (replica.status().commit, replica.members())
            };
            for id in members.voters.iter().chain(&members.learners) {
                let applied = {
                    let slot = self.slot(*id);
                    let applied = slot.node.replica(&tablet).ok().map(|r| r.status().applied);
                    applied.filter(|_| slot.running())
                };
                if let Some(applied) = applied {
                    self.counts.max_lag = self.counts.max_lag.max(commit.saturating_sub(applied));
                }
            }
        }
    }

    /// Answer the pending writes that have an answer: applied at the replica that took
    /// them (acknowledged), that replica crashed since (no answer), or past the deadline
    /// (every one left, with `all`).
    pub(crate) fn settle(&mut self, all: bool) {
        let now = crate::simulated_now();
        let mut still = Vec::new();
        for p in std::mem::take(&mut self.pending) {
            let answer = {
                let slot = self.slot(p.node);
                let applied = slot.node.replica(&p.tablet).is_ok_and(|r| r.is_applied(p.op_id));
                match () {
                    _ if slot.incarnation != p.incarnation || !slot.node.powered() => {
                        Some(Answer::Unanswered)
                    }
                    _ if applied => Some(Answer::Acked),
                    _ if all || now >= p.deadline => Some(Answer::TimedOut),
                    _ => None,
                }
            };
            match answer {
                None => still.push(p),
                Some(answer) => self.answer(p, answer),
            }
        }
        self.pending.extend(still);
    }

    fn answer(&mut self, p: Pending, answer: Answer) {
        match answer {
            Answer::Acked => self.counts.writes_acked += 1,
            Answer::TimedOut => self.counts.writes_timed_out += 1,
            Answer::Unanswered => self.counts.writes_unanswered += 1,
        }
        let history = self.histories.entry(p.tablet.clone()).or_default();
        let proposal = history.proposals.get_mut(&p.op_id).expect("proposed");
        proposal.answer = Some(answer);
        let ht = proposal.ht;
        self.note(format!("write node={} {} @{ht}: {}", p.node, p.op_id, answer.name()));
        self.events.push(Event::Answered { tablet: p.tablet, op_id: p.op_id, answer });
    }

    /// Cut node `id`'s power: its tasks stop, its memory goes, its disk keeps only what was
    /// synced (torn as an armed cut says, else not at all).
    pub(crate) fn power_off(&mut self, id: u64, fired: bool) {
        madsim::runtime::Handle::current().kill(self.handles[id as usize - 1].id());
        {
            let mut slot = self.slot(id);
            if slot.node.powered() {
                let tear = slot.node.armed_tear().unwrap_or(docsim_engine::disk::Tear::None);
                slot.node.crash(tear);
            }
            slot.outbox.clear();
            slot.crashed = false;
        }
        // What the replicas applied before the power went (kept by the node).
        let _ = self.collect_applied_of(id);
        self.counts.crashes += 1;
        self.events.push(Event::Crashed { node: id, fired });
    }

    fn collect_applied_of(&mut self, id: u64) -> Result<(), Broken> {
        let applied = self.slot(id).node.take_applied();
        for (tablet, a) in applied {
            let history = self.histories.entry(tablet.clone()).or_default();
            history.applied(id, a.op_id, a.ht)?;
            self.events.push(Event::applied(tablet, id, a));
        }
        Ok(())
    }
}

impl Event {
    /// Replica `node` of `tablet` applied `a`.
    fn applied(tablet: TabletId, node: u64, a: docsim_engine::AppliedEntry) -> Event {
        let (op_id, ht, writes, snapshot, restored) =
            (a.op_id, a.ht, a.writes, a.snapshot, a.restored);
        Event::Applied { tablet, node, op_id, ht, writes, snapshot, restored }
    }
}

/// What a read printed before each line of its reply: nothing in a group of one, else the
/// node that served it (`node 2: `), or the nodes that served a split table's tablets
/// (`nodes 1,3: `).
pub fn read_prefix(replicated: bool, nodes: &[u64]) -> String {
    let mut nodes = nodes.to_vec();
    nodes.sort_unstable();
    nodes.dedup();
    match (replicated, nodes.as_slice()) {
        (false, _) => String::new(),
        (true, [node]) => format!("node {node}: "),
        (true, nodes) => {
            let nodes: Vec<String> = nodes.iter().map(u64::to_string).collect();
            format!("nodes {}: ", nodes.join(","))
        }
    }
}

/// A split table's replies as the client prints them: every tablet's rows in turn (a
/// page's: with the last part's paging state), or the first refusal.
pub fn merged_reply(parts: impl IntoIterator<Item = Result<Reply, Error>>) -> Result<Reply, Error> {
    let (mut rows, mut page) = (Vec::new(), None);
    for part in parts {
        match part? {
            Reply::Rows(part) => rows.extend(part),
            Reply::Page { rows: part, last } => {
                rows.extend(part);
                page = Some(last);
            }
            other => return Ok(other),
        }
    }
    Ok(match page {
        Some(last) => Reply::Page { rows, last },
        None => Reply::Rows(rows),
    })
}

/// A tablet as trace lines name it: `docs`, `table=<name>` or `table=<name>/<index>`.
pub fn tablet_name(tablet: &TabletId) -> String {
    tablet.to_string()
}
