//! A random run's checks: what the executor's events say against the run's own
//! accounts, for every replica count.
//!
//! - **The models** (`model.rs`): every write's reply and every read of every replica
//!   against the reference model, fed the committed log in order; errors by kind.
//! - **Cutoffs**: a read below the history cutoff its replica compacted to must be refused
//!   (`snapshot_too_old`), one at or above it answered. The run knows each replica's
//!   cutoff from the compactions it ran there (exactly, in a group of one); a replica
//!   that installed a snapshot took its leader's, somewhere between nothing and the
//!   highest the group used.
//! - **Re-checks**: after a compaction (or a restart) of a replica, the recent reads at or
//!   above its cutoff are read there again: a compaction changes no such read.
//! - **Reads that span time** (`pages.rs`): each page of a paged read against the model's
//!   read of the whole SELECT at the read's one time; long scans' read points as the run
//!   registered them; each compaction's cutoff against the retention rule, restated.
//! - **GC completeness** (`gc_complete.rs`): after every full compaction, the replica's
//!   dump holds nothing at or below the cutoff that no read can need.
//! - **Memory flushes** (`memstore.rs`): each flush the memstore limit makes takes the
//!   tablet holding the oldest write by the run's own account, and no tablet keeps more
//!   log than the limit allows; routing (`misrouted`): every statement reaches the tablet
//!   the model's own partitioning gives it.
//! - **Durability** (`book.rs`, a group of one): every field of every restart report, and
//!   log GC's leftovers, from what the run did and the disk's fault ledger.
//!
//! With replicas, the executor's model-free checks (one history, acknowledged writes
//! committed, convergence) complete them at the end of the run.

mod backup;
mod book;
pub(crate) mod gc_complete;
mod log_files;
mod manifest;
mod memstore;
pub mod model;
mod pages;
mod snapshots;

pub use book::{Book, Cut, InDoubt, LogFiles};
pub use log_files::segment_prev_index;

use crate::convert;
use crate::exec::{Answer, Cluster, Compaction, Event};
use crate::failure::FailureKind;
use docsim_engine::{
    CrashPoint, Error, ErrorKind, HybridTime, Job, Node, OpId, Reply, Request, TabletId,
};
use docsim_models::{Markers, ModelError};
use docsim_workloads::Op;
use model::{ModelReply, Models, Proposed};
use std::collections::{BTreeMap, VecDeque};

/// How many recent reads are re-checked after a compaction or restart.
const RECENT_READS: usize = 16;

/// A check that failed: its kind, what was expected and what came (as output lines), and
/// when the expectation is about a command the run did not print (lines absent from a
/// `dump` or `log`, a read showing what a write did), that command: the reproducer runs
/// it, then expects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub kind: FailureKind,
    pub expected: Vec<String>,
    pub actual: Vec<String>,
    pub then_run: Option<String>,
    /// The step whose output the expectation is about, when not the last (a read checked
    /// again at the end of the run).
    pub at_step: Option<usize>,
}

impl Found {
    fn new(kind: FailureKind, expected: Vec<String>, actual: Vec<String>) -> Found {
        Found { kind, expected, actual, then_run: None, at_step: None }
    }
}

/// A read a replica served: the op, its time, the index the replica had applied (its
/// schema and default TTL), the reply.
#[derive(Clone, Debug)]
struct Served {
    op: Op,
    tablet: TabletId,
    node: u64,
    request: Request,
    read_ht: HybridTime,
    applied: u64,
    reply: Reply,
}

/// A read to do again: the op at its read time, at the replica that served it.
#[derive(Clone, Debug, PartialEq)]
pub struct Recheck {
    pub op: Op,
    pub tablet: TabletId,
    pub node: u64,
    pub read_ht: HybridTime,
}

/// The run's checker.
pub struct Checker {
    pub models: Models,
    pub book: Book,
    /// What each node's memtables hold, by the run's own account (`memstore.rs`).
    memstore: memstore::Account,
    /// The last entry each replica applied that moves the flushed frontier (a write or a
    /// metadata change), and its time.
    last_applied: BTreeMap<(TabletId, u64), (OpId, HybridTime)>,
    /// A group of one: the book's exact durability rules apply.
    alone: bool,
    /// Snapshots a lagging follower took past its own cutoff (unreadable at their time).
    pub snapshots_unreadable: u64,
    /// Snapshots the backup check found refused at export for damage the disk took (a
    /// rare path, so counted here, not as a probe every smoke run must hit).
    pub backups_refused_damage: u64,
    /// The read points long scans registered: (node, tablet, read time) → how many.
    holds: BTreeMap<(u64, TabletId, HybridTime), usize>,
    markers: Markers,
    /// Each replica's history cutoff: at least, at most.
    cutoffs: BTreeMap<(TabletId, u64), (HybridTime, HybridTime)>,
    /// The highest cutoff any replica of a tablet compacted to.
    highest: BTreeMap<TabletId, HybridTime>,
    /// Proposals not answered yet: their time, and whether they carry writes.
    proposals: BTreeMap<(TabletId, OpId), (HybridTime, bool)>,
    recent: VecDeque<Recheck>,
    /// Every read a replica of a replicated group served (with the step that read), to
    /// check again at the end against the whole committed log: a write committed after a
    /// read, at a time at or below the read's, shows a stale read (an old leader serving
    /// past its lease).
    served: Vec<(usize, Served)>,
    /// The index of the step whose events are being observed.
    pub step: usize,
    /// The disk and log files of a node about to restart (a group of one's book).
    before_restart: Option<(Vec<TabletId>, LogFiles)>,
    pub checked_reads: usize,
    /// Reads checked, by the node whose replica served them.
    pub checked_by_node: BTreeMap<u64, usize>,
    /// Reads refused for a reason of the group's (lease, safe time, leader), by kind.
    pub refused_reads: BTreeMap<&'static str, usize>,
    /// The run is over as expected (a restart refused a log the book knew corrupt, or
    /// lost RocksDB files; a read met a damaged SST block).
    pub ended: bool,
    /// SST files (disk names) with a flipped bit in their synced data.
    damaged: Vec<String>,
}

impl Checker {
    pub fn new(replicas: usize) -> Checker {
        Checker {
            models: Models::default(),
            book: Book::default(),
            memstore: memstore::Account::default(),
            last_applied: BTreeMap::new(),
            alone: replicas == 1,
            holds: BTreeMap::new(),
            snapshots_unreadable: 0,
            backups_refused_damage: 0,
            markers: Markers::Optional,
            cutoffs: BTreeMap::new(),
            highest: BTreeMap::new(),
            proposals: BTreeMap::new(),
            recent: VecDeque::new(),
            served: Vec::new(),
            step: 0,
            before_restart: None,
            checked_reads: 0,
            checked_by_node: BTreeMap::new(),
            refused_reads: BTreeMap::new(),
            ended: false,
            damaged: Vec::new(),
        }
    }

    /// A client op is about to run: what it changes of the run's own state.
    pub fn before(&mut self, op: &Op) {
        if let Op::Markers(m) = op {
            self.markers = *m;
        }
    }

    /// Node `id` of `cluster` is about to restart: the log files bootstrap will read.
    pub fn before_restart(&mut self, cluster: &Cluster, id: u64) {
        if self.alone {
            let node = cluster.slot(id);
            let ids = node.node.tablet_ids();
            self.before_restart = Some((ids.clone(), log_files(&node.node, &ids)));
        }
    }

    /// Bit flips at byte `offset` of node `id`'s `file`: in a group of one, the book's
    /// next restart must refuse the log there. A flip in an SST file damages one block:
    /// the first read of it (the restart's, a read's, a compaction's) must fail with
    /// `corruption` naming the file, and that ends the run (nothing rebuilds the tablet);
    /// until then every read is checked as usual (a checksum never lets a wrong answer
    /// through).
    pub fn before_flip(&mut self, cluster: &Cluster, id: u64, file: &str, offset: usize) {
        if !self.alone {
            return;
        }
        let disk = cluster.slot(id).node.disk().clone();
        let Some(file) = disk.resolve(file) else { return }; // refused: no such file
        if file.ends_with(".sst") {
            self.damaged.push(file);
            return;
        }
        let bytes = disk.read(&file).unwrap_or_default();
        self.book.flipping(&file, &bytes, offset);
    }

    /// Whether `event` failed with corruption in the tablet of a damaged SST file: naming
    /// the file, or another file of its directory (RocksDB reports a damaged properties
    /// block found at open as `properties unsorted ... The file <dir>/MANIFEST-<n> may be
    /// corrupted`, blaming the MANIFEST that lists the file).
    fn meets_damage(&self, event: &Event) -> bool {
        let dir = |file: &str| format!("{}/", file.rsplit_once('/').map_or("", |(dir, _)| dir));
        let named = |e: &Error| {
            let e = match e {
                Error::Down { cause: Some(cause) } => cause.as_ref(),
                other => other,
            };
            let message = e.to_string();
            let in_damaged = |f: &String| message.contains(&dir(f));
            e.kind() == ErrorKind::Corruption && self.damaged.iter().any(in_damaged)
        };
        match event {
            Event::Refused { error, .. } | Event::Cut { error, .. } => named(error),
            Event::Read { result: Err(e), .. } | Event::Restarted { result: Err(e), .. } => {
                named(e)
            }
            Event::Compacted { result: Err(e), .. } => named(e),
            Event::Scan { parts, .. } => parts.iter().any(|(_, _, r)| r.as_ref().is_err_and(named)),
            _ => false,
        }
    }

    /// The events one step caused (`op`: its client op, if it was one); the reads to
    /// check again, or the first check that failed.
    pub fn observe(
        &mut self,
        op: Option<&Op>,
        events: Vec<Event>,
        cluster: &Cluster,
    ) -> Result<Vec<Recheck>, Found> {
        if let Some(Op::Table(spec)) = op {
            // The tablets the catalog made of it (none if no node ran to create them).
            let tablets = cluster.tablets_named(&spec.schema.name).unwrap_or_default();
            self.models.create_table(spec.schema.clone(), &tablets);
        }
        let mut rechecks = Vec::new();
        for event in events {
            self.event(op, event, cluster, &mut rechecks)?;
        }
        Ok(rechecks)
    }

    fn event(
        &mut self,
        op: Option<&Op>,
        event: Event,
        cluster: &Cluster,
        rechecks: &mut Vec<Recheck>,
    ) -> Result<(), Found> {
        if !self.damaged.is_empty() && self.meets_damage(&event) {
            self.ended = true; // the damaged block was read, and reported: as it must
            docsim_engine::probe::hit("rocksdb.corruption_reported");
            return Ok(());
        }
        match event {
            Event::Applied { tablet, node, op_id, ht, writes, snapshot, restored } => {
                self.applied(cluster, (&tablet, node), (op_id, ht, writes))?;
                if let (true, Some(ht)) = (restored, ht) {
                    self.restored(&tablet, node, op_id, ht);
                }
                let taken = snapshot.map(|t| (t, op_id));
                taken.map_or(Ok(()), |t| self.snapshot_taken(cluster, (&tablet, node), t))
            }
            Event::Installed { tablet, node, op_id } => {
                self.installed(tablet, node, op_id);
                Ok(())
            }
            Event::Proposed { tablet, node, op_id, ht, reply } => {
                let op = op.expect("a client's proposal");
                self.route_holds(&tablet, op)?;
                self.proposed(op, (tablet, node), op_id, ht, reply)
            }
            Event::Refused { tablet, node, error, ht } => {
                // What the client sees first (a refusal the model does not make), then
                // whether it reached the tablet the model's partitioning gives it.
                let op = op.expect("a client's write");
                self.refused(&tablet, op, node, ht, &error)?;
                self.route_holds(&tablet, op)
            }
            Event::Cut { tablet, node, op_id, error } => {
                self.cut(tablet, node, op_id, &error);
                Ok(())
            }
            Event::Answered { tablet, op_id, answer } => {
                let proposal = self.proposals.remove(&(tablet.clone(), op_id));
                if let (true, Answer::Acked, Some((ht, writes))) = (self.alone, answer, proposal) {
                    self.book.acked(tablet, op_id, ht, writes);
                }
                Ok(())
            }
            Event::Read { .. } | Event::Scan { .. } if is_page(op) => {
                self.page_event(op.expect("a page"), event)
            }
            Event::Read { tablet, node, request, read_ht, result } => {
                self.read(op, (tablet, node, request), read_ht, &result)
            }
            Event::Scan { parts, request, read_ht } => {
                self.scan(op.expect("a client's scan"), &parts, &request, read_ht)
            }
            Event::MemoryFlushed { node, flush } => self.memory_flushed(node, &flush, cluster),
            Event::Crashed { .. } | Event::Restarted { .. } | Event::Compacted { .. } => {
                self.node_event(event, op, cluster, rechecks)
            }
        }
    }

    /// Replica (`tablet`, `node`) applied the entry `op_id` (at `ht`, with `writes`): the
    /// memstore's and the models' account move on, the models fed what committed.
    fn applied(
        &mut self,
        cluster: &Cluster,
        (tablet, node): (&TabletId, u64),
        (op_id, ht, writes): (OpId, Option<HybridTime>, bool),
    ) -> Result<(), Found> {
        if let Some(ht) = ht.filter(|_| writes) {
            self.memstore.applied(node, tablet, op_id.index, ht);
        }
        if let Some(ht) = ht {
            self.last_applied.insert((tablet.clone(), node), (op_id, ht));
        }
        self.models.applied(tablet, node, op_id.index);
        let committed = &cluster.history(tablet).expect("a group").applied;
        let fed = self.models.feed(tablet, committed);
        fed.map_err(|(kind, want, got)| Found::new(kind, want, got))
    }

    /// A replica installed a snapshot from its leader: its data, cutoff and registered
    /// read points are the snapshot's.
    fn installed(&mut self, tablet: TabletId, node: u64, op_id: OpId) {
        self.read_points_lost(node, Some(&tablet));
        self.memstore.unknowable(node, [tablet.clone()]);
        self.models.installed(&tablet, node, op_id.index);
        let highest = self.highest.get(&tablet).copied().unwrap_or(HybridTime::MIN);
        self.cutoffs.insert((tablet, node), (HybridTime::MIN, highest));
    }

    fn proposed(
        &mut self,
        op: &Op,
        (tablet, node): (TabletId, u64),
        op_id: Option<OpId>,
        ht: HybridTime,
        reply: Reply,
    ) -> Result<(), Found> {
        let Some(op_id) = op_id else {
            let now = (self.markers, node);
            let checked = self.models.evaluated_now(&tablet, op, now, ht, Ok(&reply));
            return checked.map_err(|(kind, want, got)| match self.read_back(op, node, ht) {
                // The write changed nothing in the engine, something in the model: a read
                // at its time shows which.
                Some((then_run, expected)) => {
                    Found { kind, expected, actual: got, then_run: Some(then_run), at_step: None }
                }
                None => Found::new(kind, want, got),
            });
        };
        let writes = !matches!(
            op,
            Op::DefaultTtl { .. }
                | Op::Snapshot { .. }
                | Op::Restore { .. }
                | Op::Cql { op: docsim_models::cql::CqlOp::Alter(_), .. }
        );
        self.proposals.insert((tablet.clone(), op_id), (ht, writes));
        let markers = self.markers;
        self.models.proposed(tablet, op_id, Proposed { op: op.clone(), markers, reply });
        Ok(())
    }

    fn refused(
        &mut self,
        tablet: &TabletId,
        op: &Op,
        node: u64,
        ht: HybridTime,
        error: &Error,
    ) -> Result<(), Found> {
        if routing(error.kind()) {
            return Ok(());
        }
        let checked = self.models.evaluated_now(tablet, op, (self.markers, node), ht, Err(error));
        checked.map_err(|(kind, want, got)| Found::new(kind, want, got))
    }

    /// A proposal's persist failed: in a group of one, its entry is in doubt until the
    /// restart settles it.
    fn cut(&mut self, tablet: TabletId, node: u64, op_id: OpId, error: &Error) {
        let Some(&(ht, writes)) = self.proposals.get(&(tablet.clone(), op_id)) else { return };
        if !self.alone {
            return;
        }
        let message = error.to_string();
        let cut = match error {
            Error::Crashed(point) => Cut::Crash(*point),
            // A fault in RocksDB's files while the entry applied (a snapshot's flush): the
            // entry is in the log, and bootstrap applies it again.
            Error::Io(_) | Error::DiskFull { .. } if !message.contains("/log/") => {
                if message.contains(".snapshots/") {
                    // In the snapshot's own files: its flush, which comes first, was done
                    // (seed 108588: a full disk at the snapshot's record).
                    self.book.flushed(Some(&tablet));
                    self.memstore.flushed(node, Some(&tablet));
                }
                Cut::Crash(CrashPoint::AfterApply)
            }
            _ => Cut::DiskFault,
        };
        self.book.cut(cut, InDoubt { tablet, op_id, ht, writes });
    }

    /// A statement reached the tablet the model's own partitioning gives it.
    fn route_holds(&self, tablet: &TabletId, op: &Op) -> Result<(), Found> {
        match self.models.misrouted(tablet, op) {
            Some((kind, want, got)) => Err(Found::new(kind, want, got)),
            None => Ok(()),
        }
    }

    /// A read served or refused: checked against the model as its replica stands.
    fn read(
        &mut self,
        op: Option<&Op>,
        (tablet, node, request): (TabletId, u64, Request),
        read_ht: HybridTime,
        result: &Result<Reply, Error>,
    ) -> Result<(), Found> {
        let Some((want, agrees)) =
            self.read_part(op, (&tablet, node, &request), read_ht, result)?
        else {
            return Ok(());
        };
        if agrees {
            return Ok(());
        }
        let want = match &want {
            Ok(reply) => self.expected_lines(&[node], &request, read_ht, reply),
            Err(m) => vec![format!("error: {}", model::expected_kind(m))],
        };
        Err(Found::new(self.read_kind(op), want, shown(result)))
    }

    /// A scan of a split table: each tablet's part checked as [`Checker::read`] checks a
    /// read, and the rows as the client printed them (every part's in turn) against the
    /// model's rows of every tablet of the table in hash order: a part read out of order,
    /// or a tablet not read, fails the scan as a wrong answer would.
    fn scan(
        &mut self,
        op: &Op,
        parts: &[crate::exec::Part],
        request: &Request,
        read_ht: HybridTime,
    ) -> Result<(), Found> {
        let mut wants = BTreeMap::new();
        let mut agree = true;
        for (tablet, node, result) in parts {
            let part = (tablet, *node, request);
            let Some((want, agrees)) = self.read_part(Some(op), part, read_ht, result)? else {
                return Ok(()); // a routing refusal: the scan is refused
            };
            agree &= agrees;
            wants.insert(tablet.clone(), want);
        }
        let got = crate::exec::merged_reply(parts.iter().map(|(.., r)| r.clone()));
        let first_node = parts.first().map_or(1, |(_, node, _)| *node);
        let mut in_order = Vec::new();
        let table = parts.first().and_then(|(t, ..)| t.table_name()).unwrap_or_default();
        for tablet in self.models.tablets_of(table) {
            let want = match wants.remove(&tablet) {
                Some(want) => want,
                None => self.models.read(&tablet, first_node, op, read_ht),
            };
            in_order.push(want);
        }
        let want = merged(in_order);
        let whole = matches!((&want, &got), (Ok(w), Ok(g)) if model::reply_agrees(w, g));
        if agree && (whole || got.is_err()) {
            return Ok(());
        }
        let nodes: Vec<u64> = parts.iter().map(|(_, node, _)| *node).collect();
        let want = match want {
            Ok(reply) => self.expected_lines(&nodes, request, read_ht, &reply),
            Err(m) => vec![format!("error: {}", model::expected_kind(&m))],
        };
        Err(Found::new(self.read_kind(Some(op)), want, shown(&got)))
    }

    /// One tablet's read against the model: the model's answer and whether the engine's
    /// agrees (`None`: a routing refusal, not the model's business), or a refusal the
    /// model does not make.
    fn read_part(
        &mut self,
        op: Option<&Op>,
        (tablet, node, request): (&TabletId, u64, &Request),
        read_ht: HybridTime,
        result: &Result<Reply, Error>,
    ) -> Result<Option<PartCheck>, Found> {
        if let Err(e) = result {
            if routing(e.kind()) {
                *self.refused_reads.entry(e.kind().name()).or_default() += 1;
                return Ok(None);
            }
        }
        self.checked_reads += 1;
        *self.checked_by_node.entry(node).or_default() += 1;
        let want = self.model_read(op, tablet, node, request, read_ht);
        // A statement the replica's schema refuses is refused before its read time is.
        let statement_error = matches!(want, Err(ModelError::InvalidRequest));
        let (lo, hi) = self.cutoffs.get(&(tablet.clone(), node)).copied().unwrap_or_default();
        let refused_old = matches!(result, Err(e) if e.kind() == ErrorKind::SnapshotTooOld);
        if read_ht < lo && !refused_old && !statement_error {
            let want = vec!["error: snapshot_too_old".to_owned()];
            return Err(Found::new(self.read_kind(op), want, shown(result)));
        }
        if refused_old && read_ht < hi && !statement_error {
            return Ok(Some((want, true))); // this replica may have compacted as far as that
        }
        let agrees = self.agrees(op, tablet, node, &want, result);
        if let Some(op) = op.filter(|_| agrees) {
            // A read the client saw right, at a tablet the model's partitioning does not
            // give it (a disagreement fails on what the client saw first).
            self.route_holds(tablet, op)?;
        }
        if let Some(op) = op {
            self.remember(op, tablet, node, read_ht);
            if let (Ok(reply), false) = (result, self.alone) {
                let applied = self.models.applied_index(tablet, node);
                let (op, request, reply) = (op.clone(), request.clone(), reply.clone());
                let tablet = tablet.clone();
                let served = Served { op, tablet, node, request, read_ht, applied, reply };
                self.served.push((self.step, served));
            }
        }
        Ok(Some((want, agrees)))
    }

    /// Whether the engine's answer to a read agrees with the model's.
    fn agrees(
        &self,
        op: Option<&Op>,
        tablet: &TabletId,
        node: u64,
        want: &Result<ModelReply, ModelError>,
        result: &Result<Reply, Error>,
    ) -> bool {
        let lists = self.models.list_columns(tablet, node);
        match (want, result) {
            (Ok(ModelReply::Document(w)), Ok(Reply::Document(g))) if op.is_none() => {
                // A row whose every column was dropped reads as nothing (or as `{}`).
                let row = |d: docsim_models::Doc| {
                    let empty = d == docsim_models::Doc::Object(Default::default());
                    (!empty || *tablet == TabletId::Docs).then(|| model::list_positions(d, &lists))
                };
                w.clone().and_then(row) == g.as_ref().and_then(|g| row(convert::doc(g)))
            }
            (Ok(want), Ok(got)) => model::reply_agrees(want, got),
            (Err(m), Err(e)) => model::expected_kind(m) == e.kind(),
            _ => false,
        }
    }

    /// The model's answer to a read (a convergence read: the whole document).
    fn model_read(
        &mut self,
        op: Option<&Op>,
        tablet: &TabletId,
        node: u64,
        request: &Request,
        read_ht: HybridTime,
    ) -> Result<ModelReply, ModelError> {
        match (op, request) {
            (Some(op), _) => self.models.read(tablet, node, op, read_ht),
            (None, Request::Get { path }) => {
                let (doc, _) = convert::doc_and_subkeys(path);
                self.models.document(tablet, node, &doc, read_ht).map(ModelReply::Document)
            }
            (None, other) => unreachable!("a convergence read is a get: {other:?}"),
        }
    }

    /// Every read a replica served, against the model fed the whole committed log: the
    /// first that disagrees (`at_step`: the step that read). Call once the run converged.
    pub fn served_reads_hold(&mut self) -> Result<(), Found> {
        for (step, s) in std::mem::take(&mut self.served) {
            let want = self.models.read_at(&s.tablet, s.applied, &s.op, s.read_ht);
            if matches!(&want, Ok(want) if model::reply_agrees(want, &s.reply)) {
                continue;
            }
            let want = match &want {
                Ok(reply) => self.expected_lines(&[s.node], &s.request, s.read_ht, reply),
                Err(m) => vec![format!("error: {}", model::expected_kind(m))],
            };
            // As the read printed it, with why it fails only now.
            let mut got = crate::exec::reply_lines(&s.request, s.read_ht, &s.reply);
            if !self.alone {
                got = got.into_iter().map(|l| format!("node {}: {l}", s.node)).collect();
            }
            got.push("(the read as served; checked again at the end of the run)".into());
            let mut found = Found::new(model::mismatch_kind(&s.op), want, got);
            found.at_step = Some(step);
            return Err(found);
        }
        Ok(())
    }

    /// A read of the first document the write `op` names at its time `ht` at `node`, and
    /// what the model answers it: the command and its expected output lines.
    fn read_back(&mut self, op: &Op, node: u64, ht: HybridTime) -> Option<(String, Vec<String>)> {
        let doc = match op {
            Op::Write { write, .. } => write.doc.clone(),
            Op::Batch { writes, .. } => writes.first()?.doc.clone(),
            Op::Redis { op, .. } => op.first_doc(),
            _ => return None,
        };
        let path = convert::path(&doc, &[]);
        let from = (!self.alone).then_some(node);
        let at = docsim_engine::script::At::Ht(ht);
        let get = docsim_engine::script::Command::Get { path: path.clone(), at, table: None, from };
        let want = self.models.document(&TabletId::Docs, node, &doc, ht).ok()?;
        let request = Request::Get { path };
        let lines = self.expected_lines(&[node], &request, ht, &ModelReply::Document(want));
        Some((get.to_string(), lines))
    }

    /// What replica `node` prints for a read of `request` at `read_ht` answered `reply`
    /// (a replicated group's lines name the node).
    fn expected_lines(
        &self,
        nodes: &[u64],
        request: &Request,
        read_ht: HybridTime,
        reply: &ModelReply,
    ) -> Vec<String> {
        let lines = match (request, reply) {
            (Request::Get { path }, ModelReply::Document(doc)) => {
                let doc = doc.as_ref().map(convert::document);
                vec![docsim_engine::script::format_get(path, read_ht, doc.as_ref())]
            }
            (_, reply) => model::reply_lines(reply),
        };
        let prefix = crate::exec::read_prefix(!self.alone, nodes);
        lines.into_iter().map(|l| format!("{prefix}{l}")).collect()
    }

    fn read_kind(&self, op: Option<&Op>) -> FailureKind {
        op.map_or(FailureKind::NoConvergence, model::mismatch_kind)
    }

    fn remember(&mut self, op: &Op, tablet: &TabletId, node: u64, read_ht: HybridTime) {
        let recheck = Recheck { op: op.clone(), tablet: tablet.clone(), node, read_ht };
        // A scan of a split table reads each tablet: one read to do again.
        let same = |r: &Recheck| r.op == recheck.op && r.node == node && r.read_ht == read_ht;
        if self.recent.iter().any(same) {
            return;
        }
        self.recent.push_back(recheck);
        if self.recent.len() > RECENT_READS {
            self.recent.pop_front();
        }
    }

    /// The recent reads of `node` at or above `cutoff`, to do again.
    fn rechecks(&self, node: u64, cutoff: HybridTime) -> Vec<Recheck> {
        self.recent.iter().filter(|r| r.node == node && r.read_ht >= cutoff).cloned().collect()
    }

    fn node_event(
        &mut self,
        event: Event,
        op: Option<&Op>,
        cluster: &Cluster,
        rechecks: &mut Vec<Recheck>,
    ) -> Result<(), Found> {
        let _ = op;
        match event {
            Event::Crashed { node, .. } => {
                self.read_points_lost(node, None);
                self.memstore.crashed(node);
                Ok(())
            }
            Event::Restarted { node, result } => {
                // A clean restart too reopens every replica: their registries are new.
                self.read_points_lost(node, None);
                // What bootstrap replayed into the memtables: unknown to the account.
                let replayed = result.as_deref().unwrap_or_default().iter();
                let replayed = replayed.filter(|(_, r)| r.replayed > 0).map(|(t, _)| t.clone());
                self.memstore.unknowable(node, replayed.collect::<Vec<_>>());
                // What a replica applied before the power went is gone past its frontier
                // and replay: it stands where bootstrap left it (its schema too).
                for (tablet, report) in result.as_deref().unwrap_or_default() {
                    let applied = report.last.unwrap_or(report.frontier.op_id);
                    self.models.restarted(tablet, node, applied.index);
                    if report.finished_install {
                        // A snapshot the power cut short: installed now, with its cutoff.
                        let highest = self.highest.get(tablet).copied().unwrap_or(HybridTime::MIN);
                        self.cutoffs.insert((tablet.clone(), node), (HybridTime::MIN, highest));
                    }
                }
                let (lo, _) =
                    self.cutoffs.get(&(TabletId::Docs, node)).copied().unwrap_or_default();
                rechecks.extend(self.rechecks(node, lo));
                self.snapshots_hold(cluster, node)?;
                if !self.alone {
                    return Ok(());
                }
                let (ids, files) = self.before_restart.take().unwrap_or_default();
                let ledger = cluster.slot(node).node.disk().ledger();
                match self.book.restarted(&ids, &result, &ledger, &files) {
                    Ok(ended) => {
                        self.ended = ended;
                        Ok(())
                    }
                    Err((want, got)) => Err(Found::new(FailureKind::Restart, want, got)),
                }
            }
            Event::Compacted { node, request, result, jobs } => {
                self.compacted(node, (&request, &result, &jobs), cluster, rechecks)
            }
            _ => unreachable!("a node's event"),
        }
    }

    /// A flush or compaction of `node` ended (done, or cut after it was durable).
    /// The memstore limit flushed `flush.tablet` of `node`: the tablet the account says
    /// holds the oldest write; the book's frontier moves (a group of one) and log GC
    /// followed it; no tablet of the node keeps more log than the limit, two segments
    /// (the one its frontier falls in, the active one) and one more for entries the
    /// memstore does not count (schema changes) allow.
    fn memory_flushed(
        &mut self,
        node: u64,
        flush: &docsim_engine::MemoryFlush,
        cluster: &Cluster,
    ) -> Result<(), Found> {
        let running: Vec<(TabletId, u64)> =
            flush.held.iter().map(|(t, _, upto)| (t.clone(), *upto)).collect();
        let choice = self.memstore.choice(node, &running);
        let printed_node = (!self.alone).then_some(node);
        let upto = |t: &TabletId| running.iter().find(|(r, _)| r == t).map_or(0, |(_, u)| *u);
        let line = |t: &TabletId| {
            let oldest = self.memstore.oldest(node, t, upto(t));
            docsim_engine::script::memory_flush_line(printed_node, t, oldest)
        };
        if let Ok(want) = &choice {
            if want.as_ref() != Some(&flush.tablet) {
                let want =
                    want.as_ref().map_or(vec!["(no memory flush)".into()], |t| vec![line(t)]);
                let got = docsim_engine::script::format_memory_flush(printed_node, flush);
                return Err(Found::new(FailureKind::MemoryFlush, want, vec![got]));
            }
        }
        self.memstore.flushed_upto(node, &flush.tablet, upto(&flush.tablet));
        let applied = self.last_applied.get(&(flush.tablet.clone(), node)).copied();
        if let (true, Some((op, ht))) = (self.alone, applied) {
            self.book.flushed_to(&flush.tablet, op, ht);
        }
        if !flush.log_gc {
            return Ok(()); // a fault stopped the log's roll or GC: the restart checks the rest
        }
        if self.alone {
            self.check_log_gc(cluster, std::slice::from_ref(&flush.tablet))?;
        }
        self.retained_log_bound(cluster, node)
    }

    /// No tablet of `node` keeps more log than its memstore limit allows (see
    /// [`Checker::memory_flushed`]).
    fn retained_log_bound(&self, cluster: &Cluster, node: u64) -> Result<(), Found> {
        let Some(limit) = cluster.memstore_limit() else { return Ok(()) };
        let bound = limit + 3 * cluster.segment_bytes();
        let Ok(logs) = cluster.slot(node).node.log_segments() else { return Ok(()) };
        for (tablet, segments) in logs {
            let retained: usize = segments.iter().map(|s| s.bytes).sum();
            if retained > bound {
                let want = vec![format!("{tablet} keeps at most {bound} bytes of log")];
                let got =
                    vec![format!("{tablet} keeps {retained} bytes in {} segments", segments.len())];
                return Err(Found::new(FailureKind::MemoryFlush, want, got));
            }
        }
        Ok(())
    }

    fn compacted(
        &mut self,
        node: u64,
        (request, result, jobs): (&Compaction, &Result<(), Error>, &[Job]),
        cluster: &Cluster,
        rechecks: &mut Vec<Recheck>,
    ) -> Result<(), Found> {
        let cut_after = matches!(result, Err(Error::Crashed(CrashPoint::AfterFlush)));
        if matches!(result, Err(Error::Down { cause: None })) {
            return Ok(()); // the node was down (a replayed step list may ask one)
        }
        let cut_inside = matches!(result, Err(Error::Crashed(point)) if point.op().is_some());
        // A tablet an injected fault stopped (earlier: its replica is down, or failed to
        // open; or now, in one of this command's jobs) fails the command; the other
        // tablets' jobs ran.
        let ledger_len = cluster.slot(node).node.disk().ledger_len();
        let (cause, since) = match result {
            Err(Error::Down { cause: Some(cause) }) => (Some(cause.as_ref()), 0),
            other => (other.as_ref().err(), jobs.first().map_or(ledger_len, |j| j.ledger_from)),
        };
        if cut_inside || cause.is_some_and(|e| injected(cluster, node, e, since)) {
            self.partly_durable(node, request, jobs, cluster);
            return Ok(()); // the node is down, or its tablet: the restart checks the rest
        }
        if result.is_err() && !cut_after {
            let got = vec![format!("error: {}", result.as_ref().unwrap_err())];
            return Err(Found::new(FailureKind::RefusedWrite, vec![], got));
        }
        let tablets: Vec<TabletId> = match &request.run {
            Some((tablet, ..)) => vec![tablet.clone()],
            None => cluster.slot(node).node.tablet_ids(),
        };
        tablets.iter().for_each(|t| self.memstore.flushed(node, Some(t)));
        if self.alone {
            let only = request.run.as_ref().map(|(t, ..)| t);
            self.book.flushed(only);
        }
        for tablet in &tablets {
            if let Some(cutoff) = request.cutoff_of(tablet) {
                if self.alone {
                    self.book.compacted(std::slice::from_ref(tablet), cutoff);
                }
                self.cut_to(node, std::slice::from_ref(tablet), cutoff);
            }
        }
        self.retention_holds(node, request)?;
        if cut_after {
            return Ok(()); // the node is down: its restart checks the rest
        }
        if self.alone {
            self.check_log_gc(cluster, &tablets)?;
        }
        if request.compacts() && !request.minor && request.run.is_none() {
            self.check_gc_complete(cluster, node, request)?;
        }
        if let Some(cutoff) = request.highest_cutoff() {
            rechecks.extend(self.rechecks(node, cutoff));
        }
        Ok(())
    }

    /// A flush or compaction of `node` a power cut or an injected disk fault stopped
    /// part-way: each tablet's job is durable exactly when the bytes of its first
    /// MANIFEST edit (a compaction's: its own flush's; its end read by `manifest.rs`)
    /// are synced on the disk now (what
    /// the crash that follows keeps: a power cut inside the job has fallen already; after
    /// a fault the node loses power without a tear). A rule from the disk's account
    /// alone: RocksDB makes a flush durable with that edit (`VersionSet::LogAndApply`
    /// syncs the MANIFEST after the SST file it names).
    fn partly_durable(&mut self, node: u64, request: &Compaction, jobs: &[Job], cluster: &Cluster) {
        let disk = cluster.slot(node).node.disk().clone();
        // In RocksDB's in-memory environment every job that ran is durable at once.
        let in_memory = cluster.medium() != docsim_engine::Medium::SimDisk;
        for job in jobs {
            let durable = in_memory
                || job.first_edit().is_some_and(|(file, start)| {
                    let bytes = disk.read(file).unwrap_or_default();
                    let end = manifest::edit_end(&bytes, start);
                    end.is_some_and(|end| disk.synced_len(file) >= Some(end))
                });
            let tablet = std::slice::from_ref(&job.tablet);
            docsim_engine::probe::hit(match (job.compaction, durable) {
                (false, true) => "rocksdb.flush_cut_durable",
                (false, false) => "rocksdb.flush_cut_lost",
                (true, true) => "rocksdb.compaction_cut_durable",
                (true, false) => "rocksdb.compaction_cut_lost",
            });
            if !durable {
                continue;
            }
            self.memstore.flushed(node, Some(&job.tablet));
            if self.alone {
                self.book.flushed(Some(&job.tablet));
                if let Some(cutoff) = request.cutoff_of(&job.tablet) {
                    self.book.compacted(tablet, cutoff);
                }
            }
            if let Some(cutoff) = request.cutoff_of(&job.tablet) {
                self.cut_to(node, tablet, cutoff);
            }
        }
    }

    fn cut_to(&mut self, node: u64, tablets: &[TabletId], cutoff: HybridTime) {
        for tablet in tablets {
            let (lo, hi) = self.cutoffs.entry((tablet.clone(), node)).or_default();
            (*lo, *hi) = ((*lo).max(cutoff), (*hi).max(cutoff));
            let highest = self.highest.entry(tablet.clone()).or_default();
            *highest = (*highest).max(cutoff);
        }
    }

    /// After log GC (a group of one): no segment the book's frontier frees is left.
    fn check_log_gc(&self, cluster: &Cluster, tablets: &[TabletId]) -> Result<(), Found> {
        let slot = cluster.slot(1);
        let files = log_files(&slot.node, tablets);
        let leftovers: Vec<String> = files
            .iter()
            .flat_map(|(id, segments)| self.book.log_gc_leftovers(id, segments))
            .collect();
        absent(FailureKind::LogGcIncomplete, "log", leftovers)
    }

    /// After a full compaction of `node`: every tablet's dump holds nothing at or below
    /// the cutoff that no read can need.
    fn check_gc_complete(
        &self,
        cluster: &Cluster,
        node: u64,
        request: &Compaction,
    ) -> Result<(), Found> {
        let slot = cluster.slot(node);
        let Ok(dumps) = slot.node.dump() else { return Ok(()) }; // down: the restart checks
        let mut leftovers = Vec::new();
        for (tablet, dump) in slot.node.tablet_ids().iter().zip(dumps) {
            let dropped = self.models.dropped_columns(tablet, node);
            let rules = gc_complete::TabletRules {
                table_ttl_ms: self.models.table_ttl_ms(tablet),
                table: dump.table,
                blind_writes: dump.table.is_some(),
                dropped: &dropped,
            };
            let entries: Vec<_> = dump.entries.into_iter().map(|(entry, ..)| entry).collect();
            let Some(cutoff) = request.cutoff_of(tablet) else { continue };
            leftovers.extend(gc_complete::leftovers(&entries, cutoff, &rules));
        }
        let dump = if cluster.replicas() > 1 { format!("dump node={node}") } else { "dump".into() };
        absent(FailureKind::GcIncomplete, &dump, leftovers)
    }
}

/// Lines a command prints that must not be there: a failure whose reproducer runs
/// `command` and expects each absent.
fn absent(kind: FailureKind, command: &str, leftovers: Vec<String>) -> Result<(), Found> {
    if leftovers.is_empty() {
        return Ok(());
    }
    let expected = leftovers.iter().map(|line| format!("absent {line}")).collect();
    let then_run = Some(command.to_owned());
    Err(Found { kind, expected, actual: leftovers, then_run, at_step: None })
}

/// Each tablet's log segments as `node`'s disk holds them now.
fn log_files(node: &Node, ids: &[TabletId]) -> LogFiles {
    let disk = node.disk();
    ids.iter()
        .map(|id| {
            let names = disk.list(&format!("{}/wal-", Node::log_dir(id)));
            let files = names.into_iter().map(|n| (n.clone(), disk.read(&n).unwrap_or_default()));
            (id.clone(), files.collect())
        })
        .collect()
}

/// Whether the op is a page of a paged read.
fn is_page(op: Option<&Op>) -> bool {
    matches!(op, Some(Op::Page { .. }))
}

/// Whether an error kind is the group's to decide (which replica serves what, when), not
/// the data's: no model says anything of it (`ErrorKind::is_routing`).
pub fn routing(kind: ErrorKind) -> bool {
    kind.is_routing()
}

fn shown(result: &Result<Reply, Error>) -> Vec<String> {
    match result {
        Ok(reply) => model::engine_reply_lines(reply),
        Err(e) => vec![format!("error: {e}")],
    }
}

/// One tablet's read checked: the model's answer, and whether the engine's agrees.
type PartCheck = (Result<ModelReply, ModelError>, bool);

/// The model's answers to a scan's parts as one: every tablet's rows in turn, or the
/// first error.
fn merged(wants: Vec<Result<ModelReply, ModelError>>) -> Result<ModelReply, ModelError> {
    let mut rows = Vec::new();
    for want in wants {
        match want? {
            ModelReply::Rows(part) => rows.extend(part),
            other => return Ok(other),
        }
    }
    Ok(ModelReply::Rows(rows))
}

/// Whether `error` (of a flush or compaction of `node`) is an injected fault the disk's
/// ledger holds from entry `since` on: an I/O error (an append's or a sync's) or a full
/// disk, of the error's own kind, on the file the error names.
fn injected(cluster: &Cluster, node: u64, error: &Error, since: usize) -> bool {
    use docsim_engine::disk::Fault;
    let kind = error.kind();
    let message = error.to_string();
    let ledger = cluster.slot(node).node.disk().ledger();
    ledger.get(since..).unwrap_or_default().iter().any(|fault| match (kind, fault) {
        (ErrorKind::Io, Fault::WriteError { file } | Fault::SyncError { file })
        | (ErrorKind::DiskFull, Fault::DiskFull { file }) => {
            message.contains(&docsim_engine::without_file_numbers(file))
        }
        _ => false,
    })
}
