//! A node's own commands: flush, compact, crash (now or armed), disarm, disk faults,
//! restart, and what a node prints of itself (dump, files, log). `node=<i>` names the
//! node; without it `flush` and `compact` run on every node that runs (a group of one:
//! node 1), the others on node 1.

use super::client::CommandError;
use super::{tablet_name, Cluster, Compaction, Event};
use docsim_engine::disk::Tear;
use docsim_engine::gc::CompactionKind;
use docsim_engine::retention::{Cutoff, CutoffBy, HeldBy};
use docsim_engine::script::{self, Command, FileRun};
use docsim_engine::{Error, SnapshotInfo, TabletId};
use std::collections::BTreeMap;

impl Cluster {
    /// A node's command, or a network one (`network.rs`).
    pub(super) async fn node_or_network(
        &mut self,
        command: &Command,
        printed: &mut Vec<String>,
    ) -> Option<CommandError> {
        let every = |node: &Option<u64>| node.is_none();
        let result = match command {
            Command::Flush { node }
            | Command::Compact { node, .. }
            | Command::Retained { node, .. }
                if every(node) =>
            {
                let ids: Vec<u64> = self.ids().filter(|&id| self.running(id)).collect();
                let ids = if ids.is_empty() { vec![1] } else { ids }; // refused: down
                let mut first_error = None;
                for id in ids {
                    if let Err(e) = self.flush_or_compact(id, command, printed) {
                        first_error.get_or_insert(e);
                    }
                }
                first_error.map_or(Ok(()), Err)
            }
            Command::Flush { node: Some(id) }
            | Command::Compact { node: Some(id), .. }
            | Command::Retained { node: Some(id), .. } => {
                self.existing(*id).and_then(|id| self.flush_or_compact(id, command, printed))
            }
            Command::Retention { interval_us, node } => {
                let ids = match node {
                    Some(id) => self.existing(*id).map(|id| vec![id]),
                    None => Ok(self.ids().collect()),
                };
                ids.map(|ids| {
                    ids.iter().for_each(|&id| self.slot(id).node.set_retention(*interval_us));
                    if node.is_none() {
                        self.retention_us = Some(*interval_us);
                    }
                })
            }
            Command::Crash { node, at, tear } => {
                let id = node.unwrap_or(1);
                self.existing(id).and_then(|id| self.crash(id, *at, *tear))
            }
            Command::Disarm { node } => self.existing(node.unwrap_or(1)).map(|id| {
                self.slot(id).node.disarm();
            }),
            Command::Fault { fault, node } => {
                let id = node.unwrap_or(1);
                self.existing(id).and_then(|id| {
                    let disk = self.slot(id).node.disk().clone();
                    fault.inject(&disk).map_err(CommandError::Node)
                })
            }
            Command::Restart { node } => {
                let id = node.unwrap_or(1);
                self.existing(id).and_then(|id| self.restart(id, printed))
            }
            Command::Dump { style, node } => self.existing(node.unwrap_or(1)).and_then(|id| {
                let mut out = String::new();
                script::dump(&self.slot(id).node, *style, &mut out).map_err(CommandError::Node)?;
                printed.extend(out.lines().map(str::to_owned));
                Ok(())
            }),
            Command::SnapshotList { node } => self.existing(node.unwrap_or(1)).and_then(|id| {
                let snapshots = self.slot(id).node.snapshots().map_err(CommandError::Node)?;
                for (tablet, snapshots) in snapshots {
                    printed.extend(snapshots.iter().map(|s| format_snapshot(&tablet, s)));
                }
                Ok(())
            }),
            Command::SnapshotSelect { id, at, node, statement } => {
                let node = self.existing(node.unwrap_or(1));
                node.and_then(|node| self.snapshot_select(node, id, *at, statement, printed))
            }
            Command::Files { node } => self.existing(node.unwrap_or(1)).and_then(|id| {
                let files = self.slot(id).node.files().map_err(CommandError::Node)?;
                for (tablet, files) in files {
                    let lines = files.iter().enumerate();
                    printed.extend(lines.map(|(i, f)| script::format_file(&tablet, i, f)));
                }
                Ok(())
            }),
            Command::Stats { node } => self.existing(node.unwrap_or(1)).and_then(|id| {
                let stats = self.slot(id).node.read_stats().map_err(CommandError::Node)?;
                printed.extend(stats.iter().map(|(tablet, s)| script::format_stats(tablet, s)));
                Ok(())
            }),
            Command::Log { node } => self.existing(node.unwrap_or(1)).and_then(|id| {
                let segments = self.slot(id).node.log_segments().map_err(CommandError::Node)?;
                for (tablet, segments) in segments {
                    printed.extend(segments.iter().map(|s| script::format_segment(&tablet, s)));
                }
                Ok(())
            }),
            other => return self.network(other, printed).await,
        };
        result.err()
    }

    /// `id`, if the group has such a node.
    pub(super) fn existing(&self, id: u64) -> Result<u64, CommandError> {
        match id >= 1 && (id as usize) <= self.slots.len() {
            true => Ok(id),
            false => Err(CommandError::NoNode(id)),
        }
    }

    /// `snapshot select`: the SELECT of each of its table's tablets read from snapshot
    /// `id` on `node`, at the snapshot's own hybrid time (or `at`): the rows as a SELECT
    /// prints them.
    fn snapshot_select(
        &mut self,
        node: u64,
        id: &str,
        at: Option<docsim_engine::HybridTime>,
        statement: &str,
        printed: &mut Vec<String>,
    ) -> Result<(), CommandError> {
        let parsed = docsim_engine::cql::parse_statement(statement);
        let parsed = parsed.map_err(|e| CommandError::Syntax(e.to_string()))?;
        let tablets = self.tablets_named(parsed.table()).map_err(CommandError::Node)?;
        let request = docsim_engine::Request::Cql(parsed);
        let mut rows = Vec::new();
        for tablet in &tablets {
            let read = self.slot(node).node.read_snapshot(tablet, id, &request, at);
            match read.map_err(|e| self.node_error(node, e))?.1 {
                docsim_engine::Reply::Rows(part) => rows.extend(part),
                other => unreachable!("a SELECT answers rows: {other:?}"),
            }
        }
        printed.extend(docsim_engine::cql::format_rows(&rows));
        Ok(())
    }

    /// A flush or compaction of node `id`, then its log GC (which a power cut armed
    /// after the flush cuts short: the node goes down). A compaction's cutoff is the
    /// command's, or each tablet's retention policy's (printed when the compaction ran to
    /// the end: a failure prints its error alone, what a reproducer's `expect error:`
    /// takes).
    fn flush_or_compact(
        &mut self,
        id: u64,
        command: &Command,
        printed: &mut Vec<String>,
    ) -> Result<(), CommandError> {
        let now_us = self.now_us(id);
        let (by, minor, run) = match command {
            Command::Compact { cutoff, minor, run, .. } => (CutoffBy::Given(*cutoff), *minor, run),
            Command::Retained { minor, run, at, .. } => {
                let now_us = at.map_or(now_us, |at| at.physical_us());
                (CutoffBy::Policy { now_us }, *minor, run)
            }
            Command::Flush { .. } => {
                let result =
                    crate::cost::timed(crate::cost::Part::Replicas, || self.slot(id).node.flush());
                return self.compacted(id, Compaction::default(), result);
            }
            other => unreachable!("not a flush or compaction: {other}"),
        };
        let kind = if minor { CompactionKind::Minor } else { CompactionKind::Full };
        // A run of files names one tablet's files: each tablet the name names in turn.
        let tablets = match run {
            None => {
                if self.running(id) {
                    self.docs_tablet(); // the document tablet's cutoff moves too
                }
                vec![None]
            }
            Some(FileRun { table: None, .. }) => vec![Some(TabletId::Docs)],
            Some(FileRun { table: Some(name), .. }) => {
                let named = self.tablets_named(name).map_err(CommandError::Node)?;
                named.into_iter().map(Some).collect()
            }
        };
        let prefix = super::read_prefix(self.replicated(), &[id]);
        for tablet in tablets {
            let files = run.as_ref().map(|r| r.first..=r.last);
            let run = tablet.as_ref().zip(files);
            let (retained, result) = crate::cost::timed(crate::cost::Part::Replicas, || {
                self.slot(id).node.compact_by(by, kind, run.clone())
            });
            if result.is_ok() {
                let lines = cutoff_lines(&retained).into_iter();
                printed.extend(lines.map(|l| format!("{prefix}{l}")));
            }
            let request = Compaction {
                cutoff: match by {
                    CutoffBy::Given(cutoff) => Some(cutoff),
                    CutoffBy::Policy { .. } => None,
                },
                retained,
                retention_us: self.slot(id).node.retention(),
                minor,
                run: run.map(|(tablet, files)| (tablet.clone(), *files.start(), *files.end())),
            };
            self.compacted(id, request, result)?;
        }
        Ok(())
    }

    /// What node `id` did of a flush or compaction: an event, and its power cut if one
    /// fired after the flush.
    fn compacted(
        &mut self,
        id: u64,
        request: Compaction,
        result: Result<(), Error>,
    ) -> Result<(), CommandError> {
        if matches!(result, Err(Error::Crashed(_))) {
            self.power_off(id, true); // the node cut its power after the flush
        }
        let jobs = self.slot(id).node.take_jobs();
        self.events.push(Event::Compacted { node: id, request, result: result.clone(), jobs });
        result.map_err(|e| self.node_error(id, e))
    }

    /// An error of node `id` as printed (a replicated group names the node).
    fn node_error(&self, id: u64, error: Error) -> CommandError {
        match self.replicated() {
            true => CommandError::At(id, error),
            false => CommandError::Node(error),
        }
    }

    /// `crash`: cut node `id`'s power now, tearing as `tear` says, or arm a cut at a
    /// point of its work.
    fn crash(
        &mut self,
        id: u64,
        at: Option<docsim_engine::CrashPoint>,
        tear: Option<u32>,
    ) -> Result<(), CommandError> {
        let tear = tear.map_or(Tear::None, Tear::Sector);
        match at {
            Some(point) => {
                let armed = self.slot(id).node.arm_crash(point, tear);
                armed.map_err(|e| self.node_error(id, e))
            }
            None if !self.slot(id).node.powered() => {
                self.slot(id).node.crash(tear); // the disk drops what is left unsynced
                Ok(())
            }
            None => {
                let _ = self.collect(); // what the replicas did before the power went
                self.slot(id).node.crash(tear);
                self.note(format!("crash node={id}"));
                self.power_off(id, false);
                Ok(())
            }
        }
    }

    /// `restart`: stop node `id` (if it runs) and reopen every tablet it hosts, each
    /// bootstrapping from its flushed frontier and log.
    pub(super) fn restart(
        &mut self,
        id: u64,
        printed: &mut Vec<String>,
    ) -> Result<(), CommandError> {
        let _ = self.collect();
        // A node that runs stops cleanly (its tasks end, nothing is lost: the logs are
        // durable), as the contract's `restart` of a running node does.
        madsim::runtime::Handle::current().kill(self.handles[id as usize - 1].id());
        let now_us = self.now_us(id);
        let opened = {
            let mut slot = self.slot(id);
            crate::cost::timed(crate::cost::Part::Replicas, || slot.node.restart_at(now_us))
        };
        self.events.push(Event::Restarted { node: id, result: opened.clone() });
        let reports = opened.map_err(|e| self.node_error(id, e))?;
        self.counts.restarts += 1;
        for (tablet, report) in &reports {
            self.counts.orphaned += report.uncommitted;
            self.counts.replayed += report.replayed;
            let line = script::format_restart(tablet, report);
            printed.push(if self.replicated() { format!("node {id}: {line}") } else { line });
            if report.finished_install {
                self.counts.installs_finished_at_boot += 1;
                let op = report.frontier.op_id;
                self.note(format!(
                    "node {id}: {} log restarted after snapshot {op}",
                    tablet_name(tablet)
                ));
            }
        }
        self.restarts_full =
            reports.iter().map(|(t, r)| script::format_restart_full(t, r)).collect();
        {
            let mut slot = self.slot(id);
            slot.syncs_sent = 0;
            slot.incarnation += 1;
            slot.refused.clear();
        }
        madsim::runtime::Handle::current().restart(self.handles[id as usize - 1].id());
        if let Err(broken) = self.collect() {
            return Err(CommandError::Check(broken.to_string()));
        }
        Ok(())
    }
}

/// The cutoffs a compaction by retention policy took, as `compact` prints them: the
/// document tablet's (`cutoff=<T> held_by=retention|read`), then each table whose lowest
/// cutoff differs from it (`table=<name> cutoff=<T> held_by=...`: a read holds it back). A
/// table's tablets are not named one by one, so a split changes no line; a run of one
/// table's files prints that table's.
pub(crate) fn cutoff_lines(retained: &BTreeMap<TabletId, Cutoff>) -> Vec<String> {
    let docs = retained.get(&TabletId::Docs);
    let mut tables: BTreeMap<&str, Cutoff> = BTreeMap::new();
    for (tablet, cutoff) in retained {
        if let Some(name) = tablet.table_name() {
            let lowest = tables.entry(name).or_insert(*cutoff);
            if cutoff.ht < lowest.ht {
                *lowest = *cutoff;
            }
        }
    }
    let line = |cutoff: &Cutoff| {
        let by = match cutoff.held_by {
            HeldBy::Retention => "retention",
            HeldBy::Read => "read",
            HeldBy::SafeTime => "safe_time",
            HeldBy::Snapshot => "snapshot",
        };
        format!("cutoff={} held_by={by}", cutoff.ht)
    };
    let mut lines: Vec<String> = docs.map(line).into_iter().collect();
    for (name, cutoff) in tables {
        if docs.is_none_or(|d| d.ht != cutoff.ht) {
            lines.push(format!("table={name} {}", line(&cutoff)));
        }
    }
    lines
}

/// `snapshot: [table=<name>[/<i>] ]<id> op=<term.index> ht=<T>[ kept=<T>]`.
fn format_snapshot(tablet: &TabletId, snapshot: &docsim_engine::SnapshotInfo) -> String {
    let SnapshotInfo { id, op_id, ht, kept } = snapshot;
    let kept = kept.map(|at| format!(" kept={at}")).unwrap_or_default();
    format!("snapshot: {}{id} op={op_id} ht={ht}{kept}", tablet.line_prefix())
}
