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
    Error, HybridTime, Medium, Node, NodeOptions, Part, Reply, RestoreTarget, Schema, SnapshotInfo,
    TabletId,
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
        let running: Vec<u64> = cluster.ids().filter(|&node| cluster.running(node)).collect();
        let mut exported = Vec::new();
        for tablet in &tablets {
            match cluster.export_tablet(tablet, id, &running) {
                Ok(snapshot) => exported.push(snapshot),
                Err(refusals) => return self.refused_exports(cluster, (tablet, id), refusals),
            }
        }
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
            Ok(read) => {
                let files = |b: &Backup| b.tablets.iter().map(|t| t.files.len()).sum::<usize>();
                let want = format!("the backup as written: {} files", files(&written));
                let got = format!("read back: {} files, or other bytes", files(&read));
                return Err(found(vec![want], vec![got]));
            }
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

impl Checker {
    /// No running node exported snapshot `id` of `tablet`: fine (no backup to check) when
    /// every refusal is explained — the node has not applied the snapshot's entry yet (by
    /// the model's account), or its disk took damage in the tablet's files (a bit flipped,
    /// a tear, files lost: the export reads every entry and refuses a damaged
    /// checkpoint); anything else is a failure.
    fn refused_exports(
        &mut self,
        cluster: &Cluster,
        (tablet, id): (&TabletId, &str),
        refusals: Vec<(u64, Error)>,
    ) -> Result<bool, Found> {
        use docsim_engine::disk::Fault;
        let dir = docsim_engine::tablet_dir(tablet);
        let entry = self.models.snapshots.get(&(tablet.clone(), id.to_owned())).map(|s| s.0);
        let lags =
            |node: u64| entry.is_some_and(|op| self.models.applied_index(tablet, node) < op.index);
        let damaged = |node: u64| {
            let ledger = cluster.slot(node).node.disk().ledger();
            ledger.iter().any(|fault| {
                matches!(fault, Fault::BitFlip { .. } | Fault::Torn { .. } | Fault::Lost { .. })
                    && fault.file().starts_with(dir.as_str())
            })
        };
        let unexplained: Vec<String> = refusals
            .iter()
            .filter(|(node, _)| !lags(*node) && !damaged(*node))
            .map(|(node, e)| format!("node {node}: error: {e}"))
            .collect();
        if unexplained.is_empty() {
            let damage = refusals.iter().any(|(node, _)| damaged(*node));
            self.backups_refused_damage += u64::from(damage);
            return Ok(false);
        }
        let expected =
            vec![format!("snapshot {id} of {tablet} exported by a node that applied it")];
        Err(Found::new(FailureKind::Backup, expected, unexplained))
    }
}

/// `backup` written to a scratch directory of real files and read back.
fn round_trip(backup: &Backup) -> Result<Backup, Error> {
    let store = crate::ScratchDir::new().map_err(|e| Error::Io(e.to_string()))?;
    backup::write(&store.path().join("bk"), "bk", backup)?;
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
