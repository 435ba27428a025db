//! Backups, checked: at a run's end a table's live snapshot is exported from the cluster
//! to a directory of real files, read back (every file's CRC-32C checked) and imported
//! into a fresh node of one (a cluster of another size when the run had three), as
//! `backup export` and `backup import` do (`exec/backup.rs`). What the import reads must
//! be what the model says a copy of the table restored to the snapshot reads
//! (`Models::imported_rows`).

use super::model::{self, ModelReply};
use super::{Checker, Found};
use crate::exec::backup::{imported_table, to_backup};
use crate::exec::Cluster;
use crate::failure::FailureKind;
use docsim_engine::backup::{self, Backup};
use docsim_engine::canary::Plants;
use docsim_engine::cql::{parse_statement, Outcome, Row};
use docsim_engine::disk::{FaultConfig, SimDisk};
use docsim_engine::{
    Error, ExportedSnapshot, HybridTime, Medium, Node, NodeOptions, Part, Reply, RestoreTarget,
    Schema, SnapshotInfo, TabletId,
};

/// The importing node's log segment size.
const SEGMENT_BYTES: usize = 64 * 1024;

impl Checker {
    /// Export snapshot `id` of `table` from the first node that holds it whole, import it
    /// into a fresh node, restoring and reading at `at`, and compare with the model.
    /// Whether a backup was checked (none: no node holds the snapshot, or the model
    /// noted none for some tablet).
    pub(crate) fn backup_holds(
        &mut self,
        cluster: &Cluster,
        (table, id): (&str, &str),
        at: HybridTime,
        plants: Plants,
    ) -> Result<bool, Found> {
        let tablets = self.models.tablets_of(table);
        // After the snapshot and every restore the model knows (a replayed run's clock
        // need not have moved as far as its steps' times).
        let floor = tablets.iter().filter_map(|t| self.models.latest_restore_or_snapshot(t, id));
        let at = floor.max().map_or(at, |floor| at.max(floor.add_micros(1_000_000)));
        let mut want = Vec::new();
        for tablet in &tablets {
            match self.models.imported_rows(tablet, id, at) {
                Some(Ok(ModelReply::Rows(rows))) => want.extend(rows),
                _ => return Ok(false),
            }
        }
        let Some(exported) = export(cluster, &tablets, id) else { return Ok(false) };
        let then_run = format!(
            "backup export bk {id} {table}\ncluster replicas=1 seed=0\nbackup import bk\n\
             cql SELECT * FROM {table}"
        );
        let found = |expected: Vec<String>, actual: Vec<String>| Found {
            kind: FailureKind::Backup,
            expected,
            actual,
            then_run: Some(then_run.clone()),
            at_step: None,
        };
        let written = to_backup(table, id, &exported);
        let read = match round_trip(&written) {
            Ok(read) if same_backup(&read, &written) => read,
            Ok(_) => return Err(found(vec!["the backup as written".into()], vec![])),
            Err(e) => return Err(found(vec!["the backup read back".into()], vec![e.to_string()])),
        };
        docsim_engine::probe::hit("backup.exported");
        let want = ModelReply::Rows(want);
        match import_and_read(&read, at, plants) {
            Ok(rows) if model::reply_agrees(&want, &Reply::Rows(rows.clone())) => {
                docsim_engine::probe::hit("backup.imported");
                Ok(true)
            }
            Ok(rows) => {
                let got = model::engine_reply_lines(&Reply::Rows(rows));
                Err(found(model::reply_lines(&want), got))
            }
            Err(e) => Err(found(model::reply_lines(&want), vec![format!("error: {e}")])),
        }
    }
}

/// Every tablet's snapshot `id` from the first running node that exports them all.
fn export(cluster: &Cluster, tablets: &[TabletId], id: &str) -> Option<Vec<ExportedSnapshot>> {
    cluster.ids().filter(|&node| cluster.running(node)).find_map(|node| {
        let slot = cluster.slot(node);
        tablets.iter().map(|t| slot.node.export_snapshot(t, id)).collect::<Result<_, _>>().ok()
    })
}

/// `backup` written to a scratch directory of real files and read back.
fn round_trip(backup: &Backup) -> Result<Backup, Error> {
    let store = crate::ScratchDir::new().map_err(|e| Error::Io(e.to_string()))?;
    backup::write(&store.path().join("bk"), backup)?;
    backup::read(&store.path().join("bk"), "bk")
}

/// Whether two backups hold the same, files in any order.
fn same_backup(a: &Backup, b: &Backup) -> bool {
    let sorted = |b: &Backup| {
        let mut b = b.clone();
        b.tablets.iter_mut().for_each(|t| t.files.sort());
        b
    };
    sorted(a) == sorted(b)
}

/// Import `backup` into a fresh node of one, restoring every tablet at `at`; the rows of
/// `SELECT *` at `at`.
fn import_and_read(backup: &Backup, at: HybridTime, plants: Plants) -> Result<Vec<Row>, Error> {
    let disk = SimDisk::new(0, FaultConfig::default());
    let options = NodeOptions::alone(disk, SEGMENT_BYTES, plants, Medium::SimDisk);
    let mut node = Node::new(std::path::Path::new("/import"), options)?;
    let created = imported_table("bk", backup, &backup.table)?;
    let parts = Part::all(created.tablets);
    for (part, tablet) in parts.into_iter().zip(&backup.tablets) {
        let id = TabletId::Table(created.name.clone(), part);
        node.create_tablet(id.clone(), Schema::table(created.clone()), at.physical_us())?;
        let info = SnapshotInfo {
            id: backup.snapshot.clone(),
            op_id: tablet.op_id,
            ht: tablet.ht,
            kept: None,
        };
        node.place_snapshot(&id, &info, &tablet.files)?;
    }
    node.restore(&created.name, RestoreTarget::Imported(backup.snapshot.clone()), at)?;
    let select = parse_statement(&format!("SELECT * FROM {}", created.name))
        .map_err(|e| Error::InvalidRequest(e.to_string()))?;
    match node.cql_at(Some(at), &select)? {
        Outcome::Rows(rows) => Ok(rows),
        Outcome::Written => Err(Error::InvalidRequest("a SELECT wrote".into())),
    }
}
