//! A node: one tablet server. It hosts a replica of each tablet assigned to it (the
//! document tablet, a CQL table's tablet or, for a table split by hash range, its
//! tablets), owns the simulated disk their Raft logs
//! live on and the RocksDB environment their files live in, and the power: a crash stops
//! every replica at once, a restart bootstraps each from its flushed frontier and log.
//!
//! Which tablets a node hosts, and the schema each was created with, is the master's
//! knowledge (YugabyteDB's catalog manager creates a tablet's replicas with
//! `CreateTablet` calls); the node keeps it across power cuts as that assignment.
//! Everything a tablet changed since it was created (schema changes, its default TTL) is
//! in its Raft log and its files.
//!
//! Two ways in: the replicated one ([`Node::propose`], [`Node::read`], [`Node::tick`],
//! [`Node::receive`]: a caller moves envelopes between nodes) and, for groups of one, the
//! synchronous one of `node/alone.rs` (a write returns once applied), which docscript's
//! runner and the engine's tests use. Both run the same replicas.

mod alone;
pub mod route;

pub use alone::TabletDump;

use crate::canary::Plants;
use crate::crash::CrashPoint;
use crate::db::{Medium, Rocks, StorageConfig};
use crate::disk::{SimDisk, Tear};
use crate::error::{Error, Result};
use crate::hybrid_time::HybridTime;
use crate::ids::{OpId, TabletId};
use crate::replica::{AppliedEntry, Envelope, Proposed, Replica, ReplicaOptions, RestartReport};
use crate::tablet::{Reply, Request, Schema, Tablet};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How a node stores its data and runs its replicas.
#[derive(Clone)]
pub struct NodeOptions {
    /// This node's id: its replicas' Raft id in every group.
    pub id: u64,
    /// The voters every tablet's group starts with.
    pub voters: Vec<u64>,
    /// Where RocksDB's files live: on the simulated disk beside the Raft logs
    /// (simulation), in RocksDB's in-memory environment (every write durable at once), or
    /// in real files under the node's directory.
    pub medium: Medium,
    /// The simulated disk the Raft logs (and, on [`Medium::SimDisk`], RocksDB's files)
    /// live on.
    pub disk: SimDisk,
    /// Raft log segment size in bytes.
    pub segment_bytes: usize,
    /// Planted bugs (testing the tester).
    pub plants: Plants,
    /// RocksDB table options of every tablet, and how new CQL tables store their rows.
    pub storage: StorageConfig,
    /// Raft timing: election and heartbeat ticks, the lease, a restart's quiet time.
    pub timing: Timing,
    /// The server-wide memstore limit: unflushed bytes of all the node's tablets, by the
    /// engine's own count ([`crate::Memstore`]); `None`: no limit (only the caller
    /// flushes).
    pub memstore_limit_bytes: Option<usize>,
}

/// A replica's Raft timing (see [`ReplicaOptions`]).
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub election_tick: usize,
    pub heartbeat_tick: usize,
    pub lease_us: u64,
    pub quiet_us: u64,
}

impl NodeOptions {
    /// A node alone: the only voter of every group it hosts.
    pub fn alone(disk: SimDisk, segment_bytes: usize, plants: Plants, medium: Medium) -> Self {
        let o = ReplicaOptions::alone(segment_bytes, plants);
        NodeOptions {
            id: 1,
            voters: vec![1],
            medium,
            disk,
            segment_bytes,
            plants,
            storage: StorageConfig::default(),
            memstore_limit_bytes: None,
            timing: Timing {
                election_tick: o.election_tick,
                heartbeat_tick: o.heartbeat_tick,
                lease_us: o.lease_us,
                quiet_us: o.quiet_us,
            },
        }
    }
}

/// A power cut armed for a later moment, and how it tears unsynced data when it fires.
#[derive(Clone, Copy, Debug)]
struct Armed {
    at: CrashPoint,
    tear: Tear,
}

/// One node.
pub struct Node {
    dir: PathBuf,
    /// The RocksDB environment and block cache the node's tablets share.
    rocks: Rocks,
    options: NodeOptions,
    /// The tablets assigned to this node and the schema each was created with.
    catalog: BTreeMap<TabletId, Schema>,
    /// The tables in the order they were created (the document tablet comes first).
    created: Vec<TabletId>,
    replicas: BTreeMap<TabletId, Replica>,
    /// The tablets whose replica failed to open since the node started, with why.
    not_opened: BTreeMap<TabletId, Error>,
    /// Whether the power is on.
    powered: bool,
    armed: Option<Armed>,
    /// The physical time of the last call (the synchronous API keeps its own).
    now_us: u64,
    /// Writes the synchronous API acknowledged, and the entry of a write it failed.
    acks: Vec<(TabletId, OpId)>,
    in_doubt: Vec<(TabletId, OpId)>,
    /// What stopped replicas applied and installed before the power went, not yet taken
    /// ([`Node::take_applied`]).
    applied: Vec<(TabletId, AppliedEntry)>,
    installed: Vec<(TabletId, OpId)>,
    /// The tablets the memstore limit flushed, not yet taken ([`Node::take_memory_flushes`]).
    memory_flushes: Vec<MemoryFlush>,
    /// The disk operations of each flush or compaction since the last
    /// [`Node::take_jobs`].
    jobs: Vec<Job>,
    /// How long history is kept for reads in the past (YugabyteDB's tablet server flag
    /// `timestamp_history_retention_interval_sec`): [`Node::compact_by`]'s policy.
    retention_us: u64,
}

/// One tablet's flush or compaction as the disk saw it: every mutating operation it made,
/// in order (RocksDB's and the engine's). What a durability book needs to tell, after a
/// fault or a power cut, whether the job's MANIFEST edit survived.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    pub tablet: TabletId,
    pub compaction: bool,
    pub ops: Vec<crate::disk::DiskOp>,
    /// The disk's fault-ledger length when the job began: the faults it met follow.
    pub ledger_from: usize,
}

impl Job {
    /// Where the job's first MANIFEST edit begins (a compaction's is its own flush's):
    /// the file and the offset of its first append. `None`: the job edited no MANIFEST.
    pub fn first_edit(&self) -> Option<(&str, usize)> {
        let manifest = |op: &&crate::disk::DiskOp| {
            let file = op.file.rsplit('/').next().unwrap_or(&op.file);
            op.kind == crate::disk::OpKind::Append && file.starts_with("MANIFEST-")
        };
        self.ops.iter().find(manifest).map(|op| (op.file.as_str(), op.len_before))
    }
}

/// A flush the server-wide memstore limit made: the tablet, and what the node's running
/// tablets held when it chose: each one's [`crate::Memstore`] and the index of the last
/// entry it had applied (where in its log the choice was made).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryFlush {
    pub tablet: TabletId,
    pub held: Vec<(TabletId, crate::db::Memstore, u64)>,
    /// Whether the log rolled over and log GC ran after the flush (a disk fault or a
    /// power cut armed after a flush stops them: the tablet or the node is down).
    pub log_gc: bool,
}

/// A tablet's snapshot as a backup exports it ([`Node::export_snapshot`]).
#[derive(Clone, Debug)]
pub struct ExportedSnapshot {
    pub info: crate::db::SnapshotInfo,
    /// The table's schema at the snapshot.
    pub schema: Schema,
    /// The checkpoint's files: RocksDB name and bytes.
    pub files: Vec<(String, Vec<u8>)>,
}

impl Node {
    /// A node keeping its tablets under `dir`, powered on, hosting nothing yet.
    pub fn new(dir: &Path, options: NodeOptions) -> Result<Node> {
        let cache_bytes = options.storage.block_cache_kib << 10;
        let rocks = match options.medium {
            Medium::SimDisk => {
                Rocks::on_sim_disk(options.disk.clone(), dir, options.plants, cache_bytes)
            }
            medium => Rocks::new(medium == Medium::Memory, cache_bytes)?,
        };
        Node::with_rocks(dir, options, rocks)
    }

    /// [`Node::new`] with the caller's RocksDB environment and block cache instead of
    /// those `options` make (a bench's [`Rocks::without_midpoint_insertion`]): the cache's
    /// size is its own, not the storage's; its medium must be the one `options` name.
    pub fn with_rocks(dir: &Path, options: NodeOptions, rocks: Rocks) -> Result<Node> {
        if rocks.medium() != options.medium {
            return Err(Error::InvalidRequest(
                "the node's RocksDB environment is not the one its options say".into(),
            ));
        }
        Ok(Node {
            dir: dir.to_owned(),
            rocks,
            options,
            catalog: BTreeMap::new(),
            created: Vec::new(),
            replicas: BTreeMap::new(),
            not_opened: BTreeMap::new(),
            powered: true,
            armed: None,
            now_us: 0,
            acks: Vec::new(),
            in_doubt: Vec::new(),
            applied: Vec::new(),
            installed: Vec::new(),
            memory_flushes: Vec::new(),
            jobs: Vec::new(),
            retention_us: crate::retention::DEFAULT_INTERVAL_US,
        })
    }

    /// This node's id.
    pub fn id(&self) -> u64 {
        self.options.id
    }

    fn check_on(&self) -> Result<()> {
        match self.powered {
            true => Ok(()),
            false => Err(Error::Down { cause: None }),
        }
    }

    /// The directory of tablet `id`'s Raft log on the node's simulated disk.
    pub fn log_dir(id: &TabletId) -> String {
        format!("{}/log", tablet_dir(id))
    }

    /// Host a replica of tablet `id`, created with `schema` (the master's `CreateTablet`),
    /// and open it: its bootstrap's report, or `None` while the node is down (it opens at
    /// the next restart). A tablet the node hosts already is refused.
    pub fn create_tablet(
        &mut self,
        id: TabletId,
        schema: Schema,
        now_us: u64,
    ) -> Result<Option<RestartReport>> {
        if self.catalog.contains_key(&id) {
            return Err(match id {
                TabletId::Table(name, _) => Error::TableExists(name),
                TabletId::Docs => Error::InvalidRequest("the document tablet exists".into()),
            });
        }
        self.catalog.insert(id.clone(), schema);
        self.created.push(id.clone());
        if !self.powered {
            return Ok(None); // opened at the next restart, as a master's retry would
        }
        self.open_replica(&id, now_us).map(Some)
    }

    /// Whether the node hosts tablet `id` (running or not).
    pub fn hosts(&self, id: &TabletId) -> bool {
        self.catalog.contains_key(id)
    }

    fn open(&mut self, id: &TabletId, now_us: u64) -> Result<RestartReport> {
        let schema = self.catalog[id].clone();
        let dir = self.dir.join(tablet_dir(id));
        let o = &self.options;
        let part = match id {
            TabletId::Table(_, part) => *part,
            TabletId::Docs => crate::ids::Part::WHOLE,
        };
        let tablet = Tablet::open(&dir, &self.rocks, o.plants, o.storage, schema)?.owning(part);
        let options = ReplicaOptions {
            id: o.id,
            voters: o.voters.clone(),
            // Each tablet's elections apart from the others', its preferred leader first.
            election_tick: o.timing.election_tick + election_delay(id, o.id, &o.voters),
            heartbeat_tick: o.timing.heartbeat_tick,
            lease_us: o.timing.lease_us,
            quiet_us: o.timing.quiet_us,
            segment_bytes: o.segment_bytes,
            plants: o.plants,
        };
        let (mut replica, report) =
            Replica::open(tablet, &o.disk, &Node::log_dir(id), options, now_us)?;
        if let Some(Armed { at, .. }) = self.armed.filter(|a| !a.at.in_job()) {
            replica.arm_crash(Some(at));
        }
        self.replicas.insert(id.clone(), replica);
        Ok(report)
    }

    /// Open tablet `id`'s replica; one that fails to open (a full disk, an I/O error) is
    /// down, as a tablet an I/O error stopped, until the node restarts.
    fn open_replica(&mut self, id: &TabletId, now_us: u64) -> Result<RestartReport> {
        let opened = self.open(id, now_us);
        if let Err(e) = &opened {
            self.not_opened.insert(id.clone(), e.clone());
        }
        opened
    }

    /// The running replica of tablet `id`.
    pub fn replica(&self, id: &TabletId) -> Result<&Replica> {
        self.check_on()?;
        self.replicas.get(id).ok_or_else(|| self.no_such(id))
    }

    /// Whether an error stopped one of its replicas (it serves nothing until a restart).
    pub fn any_replica_down(&self) -> bool {
        !self.not_opened.is_empty() || self.replicas.values().any(Replica::is_down)
    }

    /// Why tablet `id` has no running replica here.
    fn no_such(&self, id: &TabletId) -> Error {
        match (self.not_opened.get(id), id) {
            (Some(why), _) => Error::Down { cause: Some(Box::new(why.clone())) },
            (None, TabletId::Table(name, _)) => Error::NoSuchTable(name.clone()),
            (None, TabletId::Docs) => {
                Error::InvalidRequest("the node hosts no document tablet".into())
            }
        }
    }

    /// The running replica of tablet `id`, to drive.
    pub fn replica_mut(&mut self, id: &TabletId) -> Result<&mut Replica> {
        self.check_on()?;
        if !self.replicas.contains_key(id) {
            return Err(self.no_such(id));
        }
        Ok(self.replicas.get_mut(id).expect("checked above"))
    }

    /// The running replicas, in [`Node::tablet_ids`]'s order.
    pub fn replicas(&self) -> impl Iterator<Item = (&TabletId, &Replica)> {
        let ids = self.tablet_ids();
        ids.into_iter().filter_map(|id| self.replicas.get_key_value(&id))
    }

    /// The tablets this node hosts (running or not): the document tablet first, then the
    /// tables in the order they were created.
    pub fn tablet_ids(&self) -> Vec<TabletId> {
        let docs = self.catalog.contains_key(&TabletId::Docs).then_some(TabletId::Docs);
        let tables = self.created.iter().filter(|id| **id != TabletId::Docs).cloned();
        docs.into_iter().chain(tables).collect()
    }

    /// The disk the logs live on.
    pub fn disk(&self) -> &SimDisk {
        &self.options.disk
    }

    /// Whether the power is on.
    pub fn powered(&self) -> bool {
        self.powered
    }

    /// Evaluate and propose the write `request` at tablet `id`'s replica, which must lead
    /// (see [`Replica::propose`]); call [`Node::process`] to persist it.
    pub fn propose(
        &mut self,
        id: &TabletId,
        request: &Request,
        at: Option<HybridTime>,
        now_us: u64,
    ) -> Result<Proposed> {
        self.now_us = now_us;
        self.replica_mut(id)?.propose(request, at, now_us)
    }

    /// Handle tablet `id`'s replica's `Ready`s; the envelopes it sends.
    pub fn process(&mut self, id: &TabletId) -> Result<Vec<Envelope>> {
        let sent = self.replica_mut(id)?.process()?;
        // What the replica persisted stands whatever the memory flush after it does: a
        // flush, log roll or GC that fails takes its tablet down, as a failed flush does;
        // a power cut armed after a flush that fires there takes the node down (the
        // caller hears of it, as from any write).
        match self.limit_memstore() {
            Err((_, crashed @ Error::Crashed(_))) => Err(crashed),
            _ => Ok(sent),
        }
    }

    /// Serve the read `request` at `read_ht` from tablet `id`'s replica.
    pub fn read(
        &mut self,
        id: &TabletId,
        request: &Request,
        read_ht: HybridTime,
        now_us: u64,
    ) -> Result<Reply> {
        self.now_us = now_us;
        self.replica_mut(id)?.read(request, read_ht, now_us)
    }

    /// Arm a power cut at `at`: inside the next write (or other work) of any replica,
    /// inside the next flush or compaction, or after the next flush, before its log GC.
    pub fn arm_crash(&mut self, at: CrashPoint, tear: Tear) -> Result<()> {
        self.check_on()?;
        self.armed = Some(Armed { at, tear });
        if !at.in_job() {
            self.replicas.values_mut().for_each(|r| r.arm_crash(Some(at)));
        }
        Ok(())
    }

    /// Cancel an armed power cut not reached.
    pub fn disarm(&mut self) {
        self.armed = None;
        self.replicas.values_mut().for_each(|r| r.arm_crash(None));
    }

    /// How the armed power cut tears, if one is armed.
    pub fn armed_tear(&self) -> Option<Tear> {
        self.armed.map(|a| a.tear)
    }

    /// Whether the power goes once `sent` has left (a replica armed after a send, or after
    /// a vote when what it sent grants one); that replica then refuses everything.
    pub fn crash_after_send(&mut self, sent: &[(TabletId, Envelope)]) -> bool {
        let mut fires = false;
        for (id, replica) in &mut self.replicas {
            let own: Vec<Envelope> =
                sent.iter().filter(|(t, _)| t == id).map(|(_, e)| e.clone()).collect();
            fires |= replica.crash_after_send(&own);
        }
        fires
    }

    /// Whether an armed power cut fired inside a replica (the caller cuts the power).
    pub fn cut_fired(&self) -> bool {
        self.replicas.values().any(Replica::powered_off)
    }

    /// Power loss now: every replica stops (memtables lost), then the disk drops what was
    /// not durable, tearing as `tear` says.
    pub fn crash(&mut self, tear: Tear) {
        self.armed = None;
        self.stop();
        self.options.disk.crash(tear);
    }

    /// Stop every replica (a clean stop: no flush; the logs are durable anyway), keeping
    /// what they applied for [`Node::take_applied`].
    fn stop(&mut self) {
        self.gather();
        self.replicas.clear();
        self.not_opened.clear();
        self.powered = false;
    }

    fn gather(&mut self) {
        for (id, replica) in &mut self.replicas {
            let applied = replica.take_applied().into_iter().map(|a| (id.clone(), a));
            self.applied.extend(applied);
            let installed = replica.take_installed().into_iter().map(|op| (id.clone(), op));
            self.installed.extend(installed);
        }
    }

    /// The entries the replicas applied (live or replayed) since the last call, by tablet,
    /// in the order each applied them.
    pub fn take_applied(&mut self) -> Vec<(TabletId, AppliedEntry)> {
        self.gather();
        std::mem::take(&mut self.applied)
    }

    /// The snapshots the replicas installed since the last call (their op ids).
    pub fn take_installed(&mut self) -> Vec<(TabletId, OpId)> {
        self.gather();
        std::mem::take(&mut self.installed)
    }

    /// Log syncs of the running replicas since they opened (a slow disk's caller holds
    /// back what follows each).
    pub fn syncs(&self) -> u64 {
        self.replicas.values().map(Replica::syncs).sum()
    }

    /// Reopen every tablet the node hosts (stopping them first if they run), each
    /// bootstrapping from its flushed frontier and log; the reports in tablet order. If a
    /// tablet fails to open, the node stays down.
    pub fn restart_at(&mut self, now_us: u64) -> Result<Vec<(TabletId, RestartReport)>> {
        self.armed = None;
        self.stop();
        self.powered = true;
        self.now_us = now_us;
        let mut reports = Vec::new();
        for id in self.tablet_ids() {
            match self.open_replica(&id, now_us) {
                Ok(report) => reports.push((id, report)),
                Err(e) => {
                    self.replicas.clear();
                    self.powered = false;
                    return Err(e);
                }
            }
        }
        Ok(reports)
    }

    /// Every running replica's log segments, oldest first.
    pub fn log_segments(&self) -> Result<Vec<(TabletId, Vec<crate::log::SegmentInfo>)>> {
        self.check_on()?;
        Ok(self.replicas().map(|(id, r)| (id.clone(), r.log_segments().to_vec())).collect())
    }

    /// The bytes each running replica's log keeps on the disk, in [`Node::tablet_ids`]'s
    /// order: all its segments, what log GC has not freed yet (the sum of
    /// [`Node::log_segments`]' sizes, without copying them). Read-only.
    pub fn retained_log_bytes(&self) -> Result<Vec<(TabletId, usize)>> {
        self.check_on()?;
        let bytes = |r: &Replica| r.log_segments().iter().map(|s| s.bytes).sum();
        Ok(self.replicas().map(|(id, r)| (id.clone(), bytes(r))).collect())
    }

    /// Each running replica's snapshots.
    pub fn snapshots(&self) -> Result<Vec<(TabletId, Vec<crate::db::SnapshotInfo>)>> {
        self.check_on()?;
        let of = |(id, r): (&TabletId, &Replica)| Ok((id.clone(), r.tablet().db().snapshots()?));
        self.replicas().map(of).collect()
    }

    /// Read `request` from snapshot `snapshot` of tablet `id` on this node, at `read_ht`
    /// (`None`: the snapshot's own hybrid time), opening its checkpoint to read only: the
    /// time read at, and the reply.
    pub fn read_snapshot(
        &self,
        id: &TabletId,
        snapshot: &str,
        request: &Request,
        read_ht: Option<HybridTime>,
    ) -> Result<(HybridTime, Reply)> {
        let db = self.replica(id)?.tablet().db();
        let info = db.snapshots()?.into_iter().find(|s| s.id == snapshot);
        let no_such = || Error::InvalidRequest(format!("no snapshot {snapshot} of {id} here"));
        let info = info.ok_or_else(no_such)?;
        let dir = db.snapshot_dir(snapshot).ok_or_else(no_such)?;
        let o = &self.options;
        let part = match id {
            TabletId::Table(_, part) => *part,
            TabletId::Docs => crate::ids::Part::WHOLE,
        };
        let schema = self.catalog[id].clone();
        let tablet = Tablet::open_snapshot(&dir, &self.rocks, o.plants, o.storage, schema)?;
        let read_ht = read_ht.unwrap_or(info.ht);
        Ok((read_ht, tablet.owning(part).read(request, read_ht)?))
    }

    /// Snapshot `snapshot` of tablet `id` on this node as a backup exports it
    /// (`backup export`): its record, the table's schema as its checkpoint holds it, and
    /// its checkpoint's files read through the disk, once every entry of the checkpoint
    /// read back (a damaged one is refused).
    pub fn export_snapshot(&self, id: &TabletId, snapshot: &str) -> Result<ExportedSnapshot> {
        self.check_on()?;
        let db = self.replica(id)?.tablet().db();
        let no_such = || Error::InvalidRequest(format!("no snapshot {snapshot} of {id} here"));
        let info = db.snapshots()?.into_iter().find(|s| s.id == snapshot).ok_or_else(no_such)?;
        let dir = db.snapshot_dir(snapshot).ok_or_else(no_such)?;
        let (o, schema) = (&self.options, self.catalog[id].clone());
        // A damaged checkpoint is refused here, not carried into a backup whose checksums
        // would then vouch for it.
        db.verify_checkpoint(&dir)?;
        let tablet = Tablet::open_snapshot(&dir, &self.rocks, o.plants, o.storage, schema)?;
        let schema = tablet.schema().clone();
        drop(tablet);
        Ok(ExportedSnapshot { info, schema, files: db.snapshot_files(snapshot)? })
    }

    /// Make a backup's checkpoint `files` snapshot `info.id` of this node's replica of
    /// tablet `id` (`backup import`; `Replica::place_snapshot`).
    pub fn place_snapshot(
        &mut self,
        id: &TabletId,
        info: &crate::db::SnapshotInfo,
        files: &[(String, Vec<u8>)],
    ) -> Result<()> {
        self.check_on()?;
        self.replica_mut(id)?.place_snapshot(info, files)
    }

    /// Every running replica's live SST files, oldest first.
    pub fn files(&self) -> Result<Vec<(TabletId, Vec<crate::sst_files::SstFile>)>> {
        self.check_on()?;
        let on_disk = self.options.medium == Medium::SimDisk;
        let durable = |id: &TabletId, file: &mut crate::sst_files::SstFile| {
            let name = format!("{}/{}", tablet_dir(id), file.name.trim_start_matches('/'));
            file.durable = on_disk.then(|| self.options.disk.durable(&name));
        };
        let files = |(id, r): (&TabletId, &Replica)| {
            let mut files = r.files()?;
            files.iter_mut().for_each(|f| durable(id, f));
            Ok((id.clone(), files))
        };
        self.replicas().map(files).collect()
    }

    /// What each running replica's reads skipped and read since it opened.
    pub fn read_stats(&self) -> Result<Vec<(TabletId, crate::db::ReadStats)>> {
        self.check_on()?;
        self.replicas().map(|(id, r)| Ok((id.clone(), r.read_stats()?))).collect()
    }

    /// One tick of every replica; the envelopes each sends, by tablet. A replica whose
    /// tick fails stops (see [`Replica::process`]); its error is returned with the others.
    pub fn tick(&mut self, now_us: u64) -> Output {
        self.now_us = now_us;
        let mut out = Output::default();
        for id in self.tablet_ids() {
            if let Some(replica) = self.replicas.get_mut(&id) {
                out.add(&id, replica.tick(now_us));
            }
        }
        out.limited(self.limit_memstore());
        out
    }

    /// Take one envelope for tablet `id`'s replica (dropped when the node does not host
    /// it, as for a replica that was never created here).
    pub fn receive(&mut self, id: &TabletId, envelope: Envelope, now_us: u64) -> Output {
        self.now_us = now_us;
        let mut out = Output::default();
        if let Some(replica) = self.replicas.get_mut(id) {
            out.add(id, replica.receive(envelope, now_us));
        }
        out.limited(self.limit_memstore());
        out
    }

    /// YugabyteDB's `TabletMemoryManager::FlushTabletIfLimitExceeded`: while the unflushed
    /// bytes of the node's running tablets pass the limit, flush the tablet whose memtable
    /// holds the oldest write (smallest `OldestMutableMemtableWriteHybridTime`; the lower
    /// tablet id on a tie), roll its log over to a new segment
    /// (`AsyncAllocateSegmentAndRollover`) and GC its log, so the log that holds back log
    /// GC is released first.
    pub(super) fn limit_memstore(&mut self) -> std::result::Result<(), (TabletId, Error)> {
        let Some(limit) = self.options.memstore_limit_bytes.filter(|_| self.powered) else {
            return Ok(());
        };
        loop {
            // Every write and message of the node comes here: only the sum, until it is over.
            let running = || self.replicas.iter().filter(|(_, r)| !r.is_down());
            if running().map(|(_, r)| r.memstore().bytes).sum::<usize>() <= limit {
                return Ok(());
            }
            let held: Vec<(TabletId, crate::db::Memstore, u64)> =
                running().map(|(id, r)| (id.clone(), r.memstore(), r.status().applied)).collect();
            let newest = self.options.plants.contains(crate::canary::Plant::MemstoreFlushesNewest);
            let Some(tablet) = memory_flush_choice(&held, newest) else { return Ok(()) };
            crate::probe::hit("node.memory_flush");
            let replica = self.replica_mut(&tablet).map_err(|e| (tablet.clone(), e))?;
            replica.flush().map_err(|e| (tablet.clone(), e))?;
            let rolled = self.replica_mut(&tablet).and_then(Replica::roll_log);
            let log_gc = rolled.and_then(|()| self.gc_logs(Some(&tablet)));
            let flush = MemoryFlush { tablet: tablet.clone(), held, log_gc: log_gc.is_ok() };
            self.memory_flushes.push(flush);
            log_gc.map_err(|e| (tablet, e))?;
        }
    }

    /// The memstore limit's flushes since the last call.
    pub fn take_memory_flushes(&mut self) -> Vec<MemoryFlush> {
        std::mem::take(&mut self.memory_flushes)
    }
}

/// What a node's replicas produced in one call: envelopes to send, by tablet, and the
/// errors that stopped replicas.
#[derive(Debug, Default)]
pub struct Output {
    pub envelopes: Vec<(TabletId, Envelope)>,
    /// An armed power cut fired: the caller cuts the node's power.
    pub crashed: bool,
    pub errors: Vec<(TabletId, Error)>,
}

impl Output {
    /// What the memstore limit's flush did: a power cut armed after a flush that fired,
    /// or an error that stopped a replica.
    fn limited(&mut self, result: std::result::Result<(), (TabletId, Error)>) {
        if let Err((id, e)) = result {
            self.add(&id, Err(e));
        }
    }

    fn add(&mut self, id: &TabletId, result: Result<Vec<Envelope>>) {
        match result {
            Ok(envelopes) => self.envelopes.extend(envelopes.into_iter().map(|e| (id.clone(), e))),
            Err(Error::Crashed(_)) => self.crashed = true,
            Err(Error::Down { .. }) | Err(Error::Removed { .. }) => {}
            Err(e) => self.errors.push((id.clone(), e)),
        }
    }
}

/// The tablet a memory flush takes, of the running tablets and what each holds: the one
/// holding the oldest write (`newest`: the plant's newest), the lower id on a tie; `None`
/// when no tablet holds a write.
fn memory_flush_choice(
    held: &[(TabletId, crate::db::Memstore, u64)],
    newest: bool,
) -> Option<TabletId> {
    // By hybrid time, then tablet id: the same choice whatever order `held` is in.
    let writes = held.iter().filter_map(|(id, m, _)| Some((m.oldest_write?, id)));
    let chosen = match newest {
        false => writes.min(),
        true => writes.max(),
    };
    chosen.map(|(_, id)| id.clone())
}

/// Tablet `id`'s directory (RocksDB's files under the node's directory; its log under the
/// same name on the simulated disk).
pub fn tablet_dir(id: &TabletId) -> String {
    match id {
        TabletId::Docs => "docs".to_owned(),
        TabletId::Table(table, part) if part.count == 1 => format!("table-{table}"),
        TabletId::Table(table, part) => format!("table-{table}-{}", part.index),
    }
}

/// Ticks added to tablet `id`'s election timeout at node `node`: 0 to 4 from the table's
/// name (groups that start together elect at different ticks) and, for a table split by
/// hash range, 10 more unless `node` is the tablet's preferred leader: tablet i of a
/// split table prefers voter i (mod the voters), so a node hosts many tablets' replicas,
/// leading some and following the rest. A rule of docsim's own, standing in for
/// YugabyteDB's leader balancing (the master's load balancer moves leaders until each
/// tablet server leads its share); the document tablet and unsplit tables elect whoever
/// times out first, as before.
fn election_delay(id: &TabletId, node: u64, voters: &[u64]) -> usize {
    // As many ticks as the nodes' own election timeouts differ (the simulator draws 10 to
    // 19).
    const NOT_PREFERRED_TICKS: usize = 10;
    let name = match id {
        TabletId::Table(name, _) => format!("table-{name}"), // the table's, every tablet
        TabletId::Docs => "docs".to_owned(),
    };
    let hash = name
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    let spread = (hash % 5) as usize;
    let TabletId::Table(_, part) = id else { return spread };
    if part.count == 1 || voters.is_empty() {
        return spread;
    }
    let preferred = voters[usize::from(part.index) % voters.len()];
    spread + if preferred == node { 0 } else { NOT_PREFERRED_TICKS }
}
