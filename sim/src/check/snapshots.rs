//! Snapshots, checked: each replica's snapshot is taken by its entry, at the entry's op id,
//! and holds exactly what the model held when that entry committed (the tablet's rows
//! read at the entry's hybrid time); after a restart every snapshot a replica lists is
//! whole and still holds it. A snapshot's flush makes the tablet's frontier durable as
//! any flush does (the durability book and the memstore account take it).

use super::model;
use super::{Checker, Found};
use crate::exec::Cluster;
use crate::failure::FailureKind;
use docsim_engine::{HybridTime, OpId, Request, SnapshotTaken, TabletId};

impl Checker {
    /// Replica (`tablet`, `node`) applied the entry `op_id`, which took snapshot `taken`.
    pub(super) fn snapshot_taken(
        &mut self,
        cluster: &Cluster,
        (tablet, node): (&TabletId, u64),
        (taken, op_id): (SnapshotTaken, OpId),
    ) -> Result<(), Found> {
        docsim_engine::probe::hit("snapshot.taken");
        if let Some((flushed, ht)) = taken.flushed {
            self.memstore.flushed(node, Some(tablet));
            if self.alone {
                self.book.flushed_to(tablet, flushed, ht);
            }
        }
        self.snapshot_holds(cluster, (tablet, node), &taken.id, Some(op_id))
    }

    /// Replica (`tablet`, `node`) applied the restore `op_id` at `ht`: its flushed
    /// frontier is that entry, its memtables hold nothing, and reads below `ht` are
    /// refused there from now on (its history cutoff).
    pub(super) fn restored(&mut self, tablet: &TabletId, node: u64, op_id: OpId, ht: HybridTime) {
        docsim_engine::probe::hit("restore.applied");
        self.read_points_lost(node, Some(tablet));
        self.memstore.flushed(node, Some(tablet));
        if self.alone {
            self.book.flushed_to(tablet, op_id, ht);
            self.book.compacted(std::slice::from_ref(tablet), ht);
        }
        self.cut_to(node, std::slice::from_ref(tablet), ht);
    }

    /// Every snapshot `node` lists still holds what it must (after a restart: a power cut
    /// while one was taken left it whole or absent).
    pub(super) fn snapshots_hold(&mut self, cluster: &Cluster, node: u64) -> Result<(), Found> {
        let Ok(listed) = cluster.slot(node).node.snapshots() else { return Ok(()) };
        for (tablet, snapshots) in listed {
            for snapshot in snapshots {
                self.snapshot_holds(cluster, (&tablet, node), &snapshot.id, None)?;
            }
        }
        Ok(())
    }

    /// Snapshot `id` of replica (`tablet`, `node`) names its entry (`entry`, when the
    /// caller knows it) and holds the rows the model noted for it.
    fn snapshot_holds(
        &mut self,
        cluster: &Cluster,
        (tablet, node): (&TabletId, u64),
        id: &str,
        entry: Option<OpId>,
    ) -> Result<(), Found> {
        let key = (tablet.clone(), id.to_owned());
        let Some((want_op, ht, want)) = self.models.snapshots.get(&key) else {
            return Ok(()); // its entry did not commit as the model knows it (a script's)
        };
        let (want_op, ht, want) = (*want_op, *ht, want.clone());
        let slot = cluster.slot(node);
        let Ok(listed) = slot.node.snapshots() else {
            return Ok(()); // the node went down: its restart checks what it lists
        };
        let info = listed
            .iter()
            .find(|(t, _)| t == tablet)
            .and_then(|(_, s)| s.iter().find(|s| s.id == id).cloned());
        let tablet_prefix = tablet.line_prefix();
        let line = |op: OpId, ht| format!("snapshot: {tablet_prefix}{id} op={op} ht={ht}");
        let Some(info) = info else {
            if self.models.deleted_snapshots.contains(&key) {
                return Ok(()); // a later entry deleted it, and this replica applied it
            }
            let got = vec![format!("no snapshot {id} of {tablet} on node {node}")];
            return Err(Found::new(FailureKind::Snapshot, vec![line(want_op, ht)], got));
        };
        if info.op_id != want_op || entry.is_some_and(|e| e != want_op) || info.ht != ht {
            let (want, got) = (line(want_op, ht), line(info.op_id, info.ht));
            return Err(Found::new(FailureKind::Snapshot, vec![want], vec![got]));
        }
        let table = tablet.table_name().unwrap_or_default();
        let statement = format!("SELECT * FROM {table}");
        let parsed = docsim_engine::cql::parse_statement(&statement).expect("a SELECT");
        let got = slot.node.read_snapshot(tablet, id, &Request::Cql(parsed), Some(ht));
        let got = got.map(|(_, reply)| reply);
        let agrees = match (&want, &got) {
            (Ok(w), Ok(g)) => model::reply_agrees(w, g),
            (Err(m), Err(e)) => model::expected_kind(m) == e.kind(),
            // A follower that applied the entry later than the retention interval after
            // its time had collected that history first: its snapshot holds the entry's
            // data but refuses reads at the entry's time (each replica computes its own
            // cutoff; see `docs/findings.md`). Never rows of another time.
            (Ok(_), Err(docsim_engine::Error::SnapshotTooOld { .. }))
                if !self.alone && self.compacted_past(tablet, node, ht) =>
            {
                self.snapshots_unreadable += 1;
                true
            }
            _ => false,
        };
        if agrees {
            return Ok(());
        }
        let want = match self.table_snapshot(table, id).unwrap_or(want) {
            Ok(reply) => model::reply_lines(&reply),
            Err(m) => vec![format!("error: {}", model::expected_kind(&m))],
        };
        let got = match got {
            Ok(reply) => model::engine_reply_lines(&reply),
            Err(e) => vec![format!("error: {e}")],
        };
        let on = if self.alone { String::new() } else { format!(" node={node}") };
        let then_run = Some(format!("snapshot select {id} @{ht}{on} {statement}"));
        let kind = FailureKind::Snapshot;
        Err(Found { kind, expected: want, actual: got, then_run, at_step: None })
    }

    /// Whether replica (`tablet`, `node`) compacted (or installed a snapshot) past `ht`,
    /// by the run's account: then its snapshot taken after may refuse reads at `ht`.
    fn compacted_past(&self, tablet: &TabletId, node: u64, ht: docsim_engine::HybridTime) -> bool {
        let (_, highest) = self.cutoffs.get(&(tablet.clone(), node)).copied().unwrap_or_default();
        highest > ht
    }

    /// What snapshot `id` must hold of every tablet of `table`, in hash order (what
    /// `snapshot select` prints), if the model noted each tablet's.
    fn table_snapshot(
        &self,
        table: &str,
        id: &str,
    ) -> Option<Result<model::ModelReply, docsim_models::ModelError>> {
        let mut rows = Vec::new();
        for tablet in self.models.tablets_of(table) {
            match &self.models.snapshots.get(&(tablet, id.to_owned()))?.2 {
                Ok(model::ModelReply::Rows(part)) => rows.extend(part.iter().cloned()),
                other => return Some(other.clone()),
            }
        }
        Some(Ok(model::ModelReply::Rows(rows)))
    }
}
