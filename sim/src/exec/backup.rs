//! `backup export|import|damage`: a table's snapshot exported from the cluster to the
//! run's backup store (a directory of real files, outside every node: it outlives the
//! cluster, and a script's later `cluster` header starts a fresh one beside it), and
//! imported into a cluster as a new table (`docsim_engine::backup`).
//!
//! An import does what YugabyteDB's `yb_backup.py restore` does: it checks the backup, the
//! master creates the table from the backup's schema (`ImportSnapshotMeta`), every
//! tablet's checkpoint is copied onto each of its replicas as a snapshot, and a restore
//! of every tablet from it is a Raft entry, as `restore` is (`db/restore.rs`). The copy
//! needs every node up (docsim's rule: YugabyteDB's tool copies to each tablet server
//! too); a replica added later gets the data, snapshots included, by a Raft snapshot.
//! Everything the backup says is checked before the table is created; a node whose disk
//! fails while the files are copied leaves the table created and empty, with the import's
//! error (there is no DROP TABLE: import again under another name).

use super::client::CommandError;
use super::Cluster;
use docsim_engine::backup::{self, Backup, TabletBackup};
use docsim_engine::cql::CqlTable;
use docsim_engine::script::{BackupOp, Command};
use docsim_engine::{
    Error, ExportedSnapshot, Request, RestoreTarget, Schema, SnapshotInfo, TabletId,
};
use std::path::PathBuf;
use std::time::Duration;

/// How long an import waits for its new tablets' leaders.
const LEADER_WAIT: Duration = Duration::from_secs(3);

impl Cluster {
    /// Carry out a `backup` command.
    pub(super) async fn backup(
        &mut self,
        op: &BackupOp,
        command: &Command,
        printed: &mut Vec<String>,
    ) -> Option<CommandError> {
        let result = match op {
            BackupOp::Export { name, snapshot, table, node } => {
                self.export_backup(name, snapshot, table, *node, printed)
            }
            BackupOp::Import { name, table } => {
                self.import_backup(name, table.as_deref(), command, printed).await
            }
            BackupOp::Damage { name, file } => self.damage_backup(name, file),
        };
        result.err()
    }

    /// The run's backup store.
    fn backup_store(&self) -> Result<PathBuf, CommandError> {
        let none = || Error::InvalidRequest("this run has no backup store".into());
        self.setup.backups.clone().ok_or_else(none).map_err(CommandError::Node)
    }

    /// `backup export`: each tablet's snapshot from the node named, else from the first
    /// running node that holds it (a backup takes each tablet from a replica that has it).
    fn export_backup(
        &self,
        name: &str,
        snapshot: &str,
        table: &str,
        node: Option<u64>,
        printed: &mut Vec<String>,
    ) -> Result<(), CommandError> {
        let store = self.backup_store()?;
        let tablets = self.tablets_named(table).map_err(CommandError::Node)?;
        let ids: Vec<u64> = match node {
            Some(id) => vec![self.existing(id)?],
            None => self.ids().filter(|&id| self.running(id)).collect(),
        };
        let mut exported = Vec::new();
        for tablet in &tablets {
            let refused = |mut refusals: Vec<(u64, Error)>| match refusals.pop() {
                Some((id, e)) => CommandError::At(id, e),
                None => CommandError::Node(Error::Down { cause: None }),
            };
            exported.push(self.export_tablet(tablet, snapshot, &ids).map_err(refused)?);
        }
        let backup = to_backup(table, snapshot, &exported);
        backup::write(&store.join(name), name, &backup).map_err(CommandError::Node)?;
        let lines = tablets.iter().zip(&exported).map(|(t, e)| {
            let SnapshotInfo { op_id, ht, .. } = &e.info;
            format!("backup: {}{name} {snapshot} op={op_id} ht={ht}", t.line_prefix())
        });
        printed.extend(lines);
        Ok(())
    }

    /// Snapshot `snapshot` of `tablet` from the first of the nodes `ids` that exports it
    /// (a backup takes each tablet from a replica that holds it), or each node's refusal.
    pub(crate) fn export_tablet(
        &self,
        tablet: &TabletId,
        snapshot: &str,
        ids: &[u64],
    ) -> Result<ExportedSnapshot, Vec<(u64, Error)>> {
        let mut refusals = Vec::new();
        for &id in ids {
            match self.slot(id).node.export_snapshot(tablet, snapshot) {
                Ok(exported) => return Ok(exported),
                Err(e) => refusals.push((id, e)),
            }
        }
        Err(refusals)
    }

    /// `backup import`: the backup checked, its table created, its checkpoints placed on
    /// every replica, every tablet restored from them.
    async fn import_backup(
        &mut self,
        name: &str,
        table: Option<&str>,
        command: &Command,
        printed: &mut Vec<String>,
    ) -> Result<(), CommandError> {
        let node_error = CommandError::Node;
        let store = self.backup_store()?;
        let backup = backup::read(&store.join(name), name).map_err(node_error)?;
        let table = table.unwrap_or(&backup.table).to_owned();
        let created = imported_table(name, &backup, &table).map_err(node_error)?;
        if let Some(down) = self.ids().find(|&id| !self.running(id)) {
            let why = format!("backup import copies to every node: node {down} is down");
            return Err(node_error(Error::InvalidRequest(why)));
        }
        self.create_table_as(created)?;
        let tablets = self.tablets_named(&table).map_err(node_error)?;
        for (tablet, part) in tablets.iter().zip(&backup.tablets) {
            let info = SnapshotInfo {
                id: backup.snapshot.clone(),
                op_id: part.op_id,
                ht: part.ht,
                kept: None,
            };
            for id in self.ids().collect::<Vec<_>>() {
                let placed = self.slot(id).node.place_snapshot(tablet, &info, &part.files);
                placed.map_err(|e| CommandError::At(id, e))?;
            }
        }
        self.wait_for_leaders(&tablets).await;
        let restore = Request::Restore(RestoreTarget::Imported(backup.snapshot.clone()));
        if let Some(error) = self.table_request(&table, restore, command, printed).await {
            return Err(error);
        }
        let lines = tablets
            .iter()
            .zip(&backup.tablets)
            .map(|(t, part)| format!("backup: {}{name} imported ht={}", t.line_prefix(), part.ht));
        printed.extend(lines);
        Ok(())
    }

    /// Wait until every tablet of `tablets` has a leader that applied all it holds (its
    /// term's first entry: before that it takes no write), or [`LEADER_WAIT`] passed (the
    /// restore's proposal then says why not).
    async fn wait_for_leaders(&mut self, tablets: &[TabletId]) {
        let ticks = LEADER_WAIT.as_micros() / crate::world::TICK.as_micros();
        for _ in 0..ticks {
            if tablets.iter().all(|t| self.leader_ready(t)) {
                return;
            }
            madsim::time::sleep(crate::world::TICK).await;
            let _ = self.collect();
        }
    }

    fn leader_ready(&self, tablet: &TabletId) -> bool {
        let Some(id) = self.leader_guess(tablet) else { return false };
        let slot = self.slot(id);
        slot.node.replica(tablet).is_ok_and(|r| r.status().applied >= r.status().last_index)
    }

    /// `backup damage`: one byte of the backup's file `file` flipped, in the middle.
    fn damage_backup(&self, name: &str, file: &str) -> Result<(), CommandError> {
        let store = self.backup_store()?;
        let inside = !file.split('/').any(|part| part.is_empty() || part == "..");
        let path = store.join(name).join(file);
        let io = |e: std::io::Error| Error::Io(format!("backup {name}: {file}: {e}"));
        let mut bytes = match inside {
            true => std::fs::read(&path).map_err(io).map_err(CommandError::Node)?,
            false => {
                let why = format!("backup {name}: `{file}` is no file of the backup");
                return Err(CommandError::Node(Error::InvalidRequest(why)));
            }
        };
        let Some(middle) = bytes.len().checked_sub(1).map(|last| last / 2) else {
            let why = format!("backup {name}: {file} is empty");
            return Err(CommandError::Node(Error::InvalidRequest(why)));
        };
        bytes[middle] ^= 0x01;
        std::fs::write(&path, bytes).map_err(io).map_err(CommandError::Node)
    }
}

/// The backup of `table`'s snapshot `snapshot` from what each tablet exported.
pub(crate) fn to_backup(table: &str, snapshot: &str, exported: &[ExportedSnapshot]) -> Backup {
    let tablets = exported.iter().map(|e| TabletBackup {
        op_id: e.info.op_id,
        ht: e.info.ht,
        files: e.files.clone(),
    });
    Backup {
        table: table.to_owned(),
        snapshot: snapshot.to_owned(),
        schema: exported[0].schema.encode(),
        tablets: tablets.collect(),
    }
}

/// The table an import of `backup` creates, named `table`: the backup's table as it was
/// created (its column ids, layout and tablets), which the restore then brings to the
/// schema at the snapshot.
pub(crate) fn imported_table(name: &str, backup: &Backup, table: &str) -> Result<CqlTable, Error> {
    let damaged = |why: String| Error::FileCorruption(format!("backup {name}: schema: {why}"));
    let schema = Schema::decode(&backup.schema).map_err(damaged)?.renamed(table);
    let Some(created) = schema.as_created().cql().cloned() else {
        return Err(damaged("not a table's schema".into()));
    };
    if usize::from(created.tablets) != backup.tablets.len() {
        let why = format!("{} tablets, the manifest has {}", created.tablets, backup.tablets.len());
        return Err(damaged(why));
    }
    Ok(created)
}
