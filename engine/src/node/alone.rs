//! The synchronous way into a node whose replicas are their groups' only voters: every
//! write is evaluated, proposed, synced, committed and applied in one call, and returns
//! once applied (or with the error that cut it). docscript's runner and the engine's tests
//! use it; the simulator drives groups of one through the replicated calls instead, and
//! both run the same replicas. The document tablet is created on first use.
//!
//! An armed power cut that fires takes the whole node down: the write that fired it
//! fails with `crashed <point>` and its entry is *in doubt* ([`Node::take_in_doubt`]).

use super::{Armed, Job, Node};
use crate::cql::{self, CqlTable, Statement};
use crate::crash::CrashPoint;
use crate::db::{Layout, RawEntry};
use crate::doc_write::{DocWrite, MarkerMode};
use crate::document::Document;
use crate::encoding::DocPath;
use crate::error::{Error, Result};
use crate::gc::CompactionKind;
use crate::hybrid_time::HybridTime;
use crate::ids::{OpId, Part, TabletId};
use crate::redis;
use crate::replica::{Replica, RestartReport};
use crate::retention::{Cutoff, CutoffBy};
use crate::tablet::{Reply, Request, Schema};
use std::collections::BTreeMap;

/// One tablet's entries, for `dump`: the CQL table (for column names) and the entries.
pub struct TabletDump<'a> {
    /// The CQL table of the tablet (`None`: the document tablet).
    pub table: Option<&'a CqlTable>,
    /// Every stored entry in key order, decoded, with its raw key and value.
    pub entries: Vec<RawEntry>,
}

impl Node {
    /// Write one batch of document writes at `ht` to the document tablet.
    pub fn write(
        &mut self,
        ht: HybridTime,
        writes: &[DocWrite],
        markers: MarkerMode,
    ) -> Result<()> {
        self.write_at(Some(ht), writes, markers)
    }

    /// [`Node::write`] at `ht`, or at a time from the tablet's clock (`None`).
    pub fn write_at(
        &mut self,
        ht: Option<HybridTime>,
        writes: &[DocWrite],
        markers: MarkerMode,
    ) -> Result<()> {
        let request = Request::Write { writes: writes.to_vec(), markers };
        self.alone_write(&TabletId::Docs, &request, ht).map(|_| ())
    }

    /// This node's hybrid time now, plus `ahead_us` (a group of one is always caught up:
    /// its safe time is now too).
    pub fn now_ht(&mut self, ahead_us: u64) -> HybridTime {
        let now_us = self.now_us;
        let clocks = self.replicas.values_mut().map(|r| r.now_ht(now_us));
        clocks.max().unwrap_or(HybridTime::from_micros(now_us)).add_micros(ahead_us)
    }

    /// The subdocument at `path` of the document tablet as of `ht`.
    pub fn get(&mut self, path: &DocPath, ht: HybridTime) -> Result<Option<Document>> {
        self.docs()?;
        self.alone_read(&TabletId::Docs, &Request::Get { path: path.clone() }, ht).map(|reply| {
            match reply {
                Reply::Document(doc) => doc,
                other => unreachable!("a get answers a document: {other:?}"),
            }
        })
    }

    /// The subdocument at `path` as of `ht`: of the document tablet, or (`table`) of a
    /// CQL table's tablet ([`Node::get_in_table`]).
    pub fn get_in(
        &mut self,
        table: Option<&str>,
        path: &DocPath,
        ht: HybridTime,
    ) -> Result<Option<Document>> {
        match table {
            None => self.get(path, ht),
            Some(table) => self.get_in_table(table, path, ht),
        }
    }

    /// The subdocument at `path` of CQL table `table`'s tablet as of `ht` (a row is the
    /// document `doc(<hash key>; <clustering key>)`).
    pub fn get_in_table(
        &mut self,
        table: &str,
        path: &DocPath,
        ht: HybridTime,
    ) -> Result<Option<Document>> {
        let id = super::route::path(&self.tablets_of(table)?, path);
        match self.alone_read(&id, &Request::Get { path: path.clone() }, ht)? {
            Reply::Document(doc) => Ok(doc),
            other => unreachable!("a get answers a document: {other:?}"),
        }
    }

    /// Set the document tablet's default TTL (a metadata change: a Raft entry).
    pub fn set_default_ttl(&mut self, ttl_ms: Option<u64>) -> Result<()> {
        self.set_default_ttl_at(None, ttl_ms)
    }

    /// [`Node::set_default_ttl`] as a metadata change at `ht` (`None`: the tablet's clock).
    pub fn set_default_ttl_at(
        &mut self,
        ht: Option<HybridTime>,
        ttl_ms: Option<u64>,
    ) -> Result<()> {
        self.docs()?;
        self.alone_write(&TabletId::Docs, &Request::DefaultTtl(ttl_ms), ht).map(|_| ())
    }

    /// The server-wide memstore limit from now on (`None`: none); the node enforces it
    /// after each write it applies.
    pub fn set_memstore_limit(&mut self, limit_bytes: Option<usize>) {
        self.options.memstore_limit_bytes = limit_bytes;
    }

    /// How the CQL tables created from now on store their rows.
    pub fn set_layout(&mut self, layout: Layout) {
        self.options.storage.layout = layout;
    }

    /// Create a CQL table's tablet, its rows stored as the node's layout says.
    pub fn create_table(&mut self, table: CqlTable) -> Result<()> {
        let mut table = table;
        table.packed_rows = match self.options.storage.layout {
            Layout::Declared => table.packed_rows,
            Layout::Packed | Layout::Entity => true,
            Layout::Unpacked => false,
        };
        table.entity_rows = self.options.storage.layout == Layout::Entity;
        table.tablets = self.options.storage.tablets.unwrap_or(table.tablets);
        self.check_on()?;
        if self.catalog.keys().any(|id| id.table_name() == Some(&table.name)) {
            return Err(Error::TableExists(table.name));
        }
        for part in Part::all(table.tablets) {
            let id = TabletId::Table(table.name.clone(), part);
            self.create_tablet(id, Schema::table(table.clone()), self.now_us)?;
        }
        Ok(())
    }

    /// The tablets of CQL table `name` (`t`), or one of them (`t/i`), in hash order.
    pub fn tablets_of(&self, name: &str) -> Result<Vec<TabletId>> {
        super::route::named(self.catalog.keys(), name)
    }

    /// Run a CQL statement on its table: a SELECT reads at `ht`, the others write at it.
    pub fn cql(&mut self, ht: HybridTime, statement: &Statement) -> Result<cql::Outcome> {
        self.cql_at(Some(ht), statement)
    }

    /// [`Node::cql`] at `ht`, or (`None`) at a time from the tablet's clock.
    pub fn cql_at(
        &mut self,
        ht: Option<HybridTime>,
        statement: &Statement,
    ) -> Result<cql::Outcome> {
        let tablets = self.tablets_of(statement.table())?;
        let table = self.catalog[&tablets[0]].cql().expect("a table's tablet");
        let targets = super::route::statement(&tablets, table, statement, self.options.plants);
        let request = Request::Cql(statement.clone());
        // A statement of the whole table goes to every tablet in hash order: a SELECT
        // reads each at one time and their rows follow each other in hash order.
        let mut rows = Vec::new();
        let ht = ht.or_else(|| request.is_read().then(|| self.now_ht(0)));
        for id in targets {
            match request.is_read() {
                true => match self.alone_read(&id, &request, ht.expect("set above"))? {
                    Reply::Rows(read) => rows.extend(read),
                    other => unreachable!("a SELECT answers rows: {other:?}"),
                },
                false => drop(self.alone_write(&id, &request, ht)?),
            }
        }
        Ok(match request.is_read() {
            true => cql::Outcome::Rows(rows),
            false => cql::Outcome::Written,
        })
    }

    /// Take (or delete) a snapshot of every tablet of table `name`, each by an entry at
    /// `ht`.
    pub fn snapshot(
        &mut self,
        name: &str,
        op: crate::tablet::SnapshotOp,
        ht: HybridTime,
    ) -> Result<()> {
        self.table_entries(name, &Request::Snapshot(op), ht)
    }

    /// Restore every tablet of table `name` to `target`, each by an entry at `ht`.
    pub fn restore(
        &mut self,
        name: &str,
        target: crate::tablet::RestoreTarget,
        ht: HybridTime,
    ) -> Result<()> {
        self.table_entries(name, &Request::Restore(target), ht)
    }

    /// `request` written to every tablet of table `name`, each as an entry at `ht`.
    fn table_entries(&mut self, name: &str, request: &Request, ht: HybridTime) -> Result<()> {
        for id in self.tablets_of(name)? {
            self.alone_write(&id, request, Some(ht))?;
        }
        Ok(())
    }

    /// Run a Redis command on the document tablet at `ht`.
    pub fn redis(&mut self, ht: HybridTime, command: &redis::Command) -> Result<redis::Reply> {
        self.redis_at(Some(ht), command)
    }

    /// [`Node::redis`] at `ht`, or (`None`) at a time from the tablet's clock.
    pub fn redis_at(
        &mut self,
        ht: Option<HybridTime>,
        command: &redis::Command,
    ) -> Result<redis::Reply> {
        self.docs()?;
        let request = Request::Redis(command.clone());
        let reply = match request.is_read() {
            true => {
                let ht = ht.unwrap_or_else(|| self.now_ht(0));
                self.alone_read(&TabletId::Docs, &request, ht)?
            }
            false => self.alone_write(&TabletId::Docs, &request, ht)?,
        };
        match reply {
            Reply::Redis(reply) => Ok(reply),
            other => unreachable!("a Redis command answers Redis: {other:?}"),
        }
    }

    /// The document tablet, created on first use.
    fn docs(&mut self) -> Result<()> {
        self.check_on()?;
        if !self.hosts(&TabletId::Docs) {
            let schema = Schema::Docs { default_ttl_ms: None };
            self.create_tablet(TabletId::Docs, schema, self.now_us)?;
        }
        Ok(())
    }

    /// Propose `request` at tablet `id` and see it through: once applied, acknowledged;
    /// an error after it was proposed leaves its entry in doubt, and a power cut that
    /// fired takes the node down.
    fn alone_write(
        &mut self,
        id: &TabletId,
        request: &Request,
        at: Option<HybridTime>,
    ) -> Result<Reply> {
        if *id == TabletId::Docs {
            self.docs()?;
        }
        let now_us = self.now_us;
        let proposed = self.replica_mut(id)?.propose(request, at, now_us)?;
        let Some(op_id) = proposed.op_id else { return Ok(proposed.reply) };
        match self.replica_mut(id)?.process() {
            Ok(sent) => {
                assert!(sent.is_empty(), "a group of one sends nothing: {sent:?}");
                let replica = self.replica(id)?;
                assert!(replica.is_applied(op_id), "a group of one applies what it proposes");
                self.acks.push((id.clone(), op_id));
                // The write is done; a memory flush it set off that fails takes the tablet
                // (or, cut after its flush, the node) down, as a failed flush does.
                if let Err((_, Error::Crashed(_))) = self.limit_memstore() {
                    if let Some(armed) = self.armed {
                        self.crash(armed.tear);
                    }
                }
                Ok(proposed.reply)
            }
            Err(e) => {
                self.in_doubt.push((id.clone(), op_id));
                if let (Error::Crashed(_), Some(armed)) = (&e, self.armed) {
                    self.crash(armed.tear);
                }
                Err(e)
            }
        }
    }

    fn alone_read(&mut self, id: &TabletId, request: &Request, ht: HybridTime) -> Result<Reply> {
        let now_us = self.now_us;
        self.replica_mut(id)?.read(request, ht, now_us)
    }

    /// The retention interval of compactions by policy from now on (every tablet).
    pub fn set_retention(&mut self, interval_us: u64) {
        self.retention_us = interval_us;
    }

    /// The tablet server's hybrid time at physical time `now_us`: the latest of its
    /// replicas' clocks (YugabyteDB's tablet server has one hybrid clock, which the
    /// retention policy reads: docsim keeps one per replica and reads the latest).
    fn clock(&mut self, now_us: u64) -> HybridTime {
        let clocks = self.replicas.values_mut().map(|r| r.now_ht(now_us));
        clocks.max().unwrap_or(HybridTime::from_micros(now_us))
    }

    /// The retention interval of compactions by policy.
    pub fn retention(&self) -> u64 {
        self.retention_us
    }

    /// The highest history cutoff of the document tablet.
    pub fn history_cutoff(&mut self) -> Result<HybridTime> {
        self.docs()?;
        Ok(self.replica(&TabletId::Docs)?.history_cutoff())
    }

    /// Flush every tablet, then GC their logs. A tablet whose flush fails (a disk fault)
    /// is down; the others flush all the same; the first error is returned.
    pub fn flush(&mut self) -> Result<()> {
        self.check_on()?;
        let ids = self.tablet_ids();
        self.jobs_on(&ids, false, |_, replica| replica.flush())?;
        self.gc_logs(None)
    }

    /// Flush and compact every tablet with history cutoff `cutoff`, then GC their logs.
    pub fn compact(&mut self, cutoff: HybridTime, kind: CompactionKind) -> Result<()> {
        self.compact_by(CutoffBy::Given(cutoff), kind, None).1
    }

    /// Flush and compact every tablet (or, `run`, a run of one tablet's SST files: oldest
    /// first, 0-based, as [`Node::files`] lists them; a minor compaction), each with the
    /// history cutoff `by` gives it (with [`Node::set_retention`]'s interval), then GC
    /// their logs: each tablet's cutoff by policy (whether its compaction ran or not;
    /// none for a given one), and the result.
    pub fn compact_by(
        &mut self,
        by: CutoffBy,
        kind: CompactionKind,
        run: Option<(&TabletId, std::ops::RangeInclusive<usize>)>,
    ) -> (BTreeMap<TabletId, Cutoff>, Result<()>) {
        let mut cutoffs = BTreeMap::new();
        let only = run.as_ref().map(|(id, _)| (*id).clone());
        // The document tablet's cutoff moves too, even while empty.
        if only.as_ref().is_none_or(|id| *id == TabletId::Docs) {
            if let Err(e) = self.docs() {
                return (cutoffs, Err(e));
            }
        }
        let ids = only.iter().cloned().collect::<Vec<_>>();
        let ids = if ids.is_empty() { self.tablet_ids() } else { ids };
        let files = run.map(|(_, files)| files);
        let policy = match by {
            CutoffBy::Given(_) => None,
            CutoffBy::Policy { now_us } => Some((self.clock(now_us), self.retention_us)),
        };
        let result = self.jobs_on(&ids, true, |id, replica| {
            let cutoff = match (by, policy) {
                (_, Some((now, interval_us))) => {
                    let cutoff = replica.retention_cutoff(now, interval_us);
                    cutoffs.insert(id.clone(), cutoff);
                    cutoff.ht
                }
                (CutoffBy::Given(cutoff), None) => cutoff,
                (CutoffBy::Policy { .. }, None) => unreachable!("a policy's clock is read"),
            };
            replica.compact(cutoff, kind, files.clone())
        });
        (cutoffs, result.and_then(|()| self.gc_logs(only.as_ref())))
    }

    /// Run `work` (a flush or, `compaction`, a compaction) on the replica of each tablet
    /// of `ids` in turn, each one job on the disk (`Job`: its operations journaled). A
    /// power cut armed inside this kind of job (`in-flush op=<k>`, `in-compaction
    /// op=<k>`) counts the operations of every job from the first: when it falls, the
    /// node goes down at once; when the jobs end first, it falls after them (before log
    /// GC). Otherwise the first job's error, after every job ran.
    fn jobs_on(
        &mut self,
        ids: &[TabletId],
        compaction: bool,
        mut work: impl FnMut(&TabletId, &mut Replica) -> Result<()>,
    ) -> Result<()> {
        let disk = self.options.disk.clone();
        let armed = self.armed.filter(|a| match a.at {
            CrashPoint::InFlush(_) => !compaction,
            CrashPoint::InCompaction(_) => compaction,
            _ => false,
        });
        if let Some(k) = armed.and_then(|a| a.at.op()) {
            disk.arm_cut(k);
        }
        let mut first_error = None;
        for id in ids {
            let ledger_from = disk.ledger_len();
            disk.begin_journal();
            let result = self.replica_mut(id).and_then(|replica| work(id, replica));
            let ops = disk.end_journal();
            self.jobs.push(Job { tablet: id.clone(), compaction, ops, ledger_from });
            if let Err(e) = result {
                first_error.get_or_insert(e);
            }
            if disk.cut_fired() {
                break;
            }
        }
        if let Some(Armed { at, tear }) = armed {
            disk.disarm_cut();
            self.crash(tear);
            return Err(Error::Crashed(at));
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The flushes and compactions run since the last call, as the disk saw them.
    pub fn take_jobs(&mut self) -> Vec<Job> {
        std::mem::take(&mut self.jobs)
    }

    /// A minor compaction of the run `files` of SST files (oldest first, 0-based, as
    /// [`Node::files`] lists them) of tablet `id` with history cutoff `cutoff`, then that
    /// tablet's log GC.
    pub fn compact_files(
        &mut self,
        id: &TabletId,
        files: std::ops::RangeInclusive<usize>,
        cutoff: HybridTime,
    ) -> Result<()> {
        let run = Some((id, files));
        self.compact_by(CutoffBy::Given(cutoff), CompactionKind::Minor, run).1
    }

    /// Log GC after a flush (of every tablet, or of `only`), unless a power cut was armed
    /// for this moment: then the node goes down, the flush durable, its log GC not done.
    pub fn gc_logs(&mut self, only: Option<&TabletId>) -> Result<()> {
        if let Some(Armed { at: CrashPoint::AfterFlush, tear }) = self.armed {
            self.crash(tear);
            return Err(Error::Crashed(CrashPoint::AfterFlush));
        }
        for id in self.tablet_ids().iter().filter(|id| only.is_none_or(|o| o == *id)) {
            self.replica_mut(id)?.gc_log()?;
        }
        Ok(())
    }

    /// Reopen every tablet (stopping them first if they run): [`Node::restart_at`].
    pub fn restart(&mut self) -> Result<Vec<(TabletId, RestartReport)>> {
        self.restart_at(self.now_us)
    }

    /// Writes acknowledged since the last call, by tablet.
    pub fn take_acks(&mut self) -> Vec<(TabletId, OpId)> {
        std::mem::take(&mut self.acks)
    }

    /// The in-doubt entry of a failed write, by tablet.
    pub fn take_in_doubt(&mut self) -> Vec<(TabletId, OpId)> {
        std::mem::take(&mut self.in_doubt)
    }

    /// Every stored entry of every tablet, document tablet first.
    pub fn dump(&self) -> Result<Vec<TabletDump<'_>>> {
        self.check_on()?;
        self.replicas()
            .map(|(_, replica)| {
                let table = replica.tablet().schema().cql();
                Ok(TabletDump { table, entries: replica.dump()? })
            })
            .collect()
    }
}
