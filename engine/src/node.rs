//! A node: the tablets of one process (the document tablet, one tablet per CQL table),
//! the table metadata, the simulated disk their Raft logs live on, and the power: crash
//! and restart. Every method takes a typed request and returns a typed result or a typed
//! [`Error`]; text (docscript, CQL, Redis) is parsed before it reaches the node.
//!
//! Table metadata (schemas, default TTLs) is kept here, durable across crashes, as a
//! tablet's metadata file would be. The document tablet opens on first use.

use crate::canary::Plants;
use crate::cql::{self, CqlTable, Statement};
use crate::crash::CrashPoint;
use crate::db::RawEntry;
use crate::disk::{SimDisk, Tear};
use crate::doc_write::{build_entries, DocWrite, MarkerMode, Scanned};
use crate::document::Document;
use crate::encoding::{DocPath, KeyEntry, Primitive};
use crate::error::{Error, Result};
use crate::gc::CompactionKind;
use crate::hybrid_time::HybridTime;
use crate::ids::{OpId, TabletId};
use crate::log::SegmentInfo;
use crate::redis;
use crate::replica::LogConfig;
use crate::tablet::{RestartReport, Tablet};
use std::path::{Path, PathBuf};

/// How a node stores its data.
pub struct NodeOptions {
    /// RocksDB in an in-memory environment (simulation: no disk I/O, no fsync), or in
    /// real files under the node's directory.
    pub in_memory: bool,
    /// The simulated disk the Raft logs live on.
    pub disk: SimDisk,
    /// Raft log segment size in bytes.
    pub segment_bytes: usize,
    /// Planted bugs (testing the tester).
    pub plants: Plants,
    /// RocksDB table options of every tablet (the metamorphic set varies them).
    pub storage: crate::db::StorageConfig,
}

/// Give a CQL table's tablet what its reads need of the table: the default TTL and the
/// packings of its packed rows.
fn attach(table: &CqlTable, tablet: &mut Tablet) {
    tablet.set_table_ttl_ms(table.default_ttl_ms);
    let (packings, entity_rows) = row_storage(table);
    tablet.set_packings(packings, entity_rows);
}

/// How a table stores its rows: the packings of its packed rows (none unless it packs:
/// only a table that packs has packed rows to read or repack) and whether as entities.
fn row_storage(table: &CqlTable) -> (crate::encoding::Packings, bool) {
    let packings = if table.packed_rows { table.packings().clone() } else { Default::default() };
    (packings, table.entity_rows)
}

/// One tablet's entries, for `dump`: the CQL table (for column names) and the entries.
pub struct TabletDump<'a> {
    /// The CQL table of the tablet (`None`: the document tablet).
    pub table: Option<&'a CqlTable>,
    /// Every stored entry in key order, decoded, with its raw key and value.
    pub entries: Vec<RawEntry>,
}

/// What survives a power loss besides the disks: which tablets exist.
struct Stopped {
    docs: bool,
    tables: Vec<CqlTable>,
}

/// A crash armed for a later moment, and how it tears unsynced data when it fires.
#[derive(Clone, Copy)]
struct Armed {
    at: CrashPoint,
    tear: Tear,
}

/// One node.
pub struct Node {
    dir: PathBuf,
    env: Option<rocksdb::Env>,
    options: NodeOptions,
    docs: Option<Tablet>,
    docs_ttl_ms: Option<u64>,
    tables: Vec<(CqlTable, Tablet)>,
    /// `Some` while the power is off.
    stopped: Option<Stopped>,
    armed: Option<Armed>,
    /// Acknowledgements and in-doubt entries of tablets stopped before they were taken.
    stopped_acks: Vec<(TabletId, OpId)>,
    stopped_in_doubt: Vec<(TabletId, OpId)>,
}

impl Node {
    /// A node keeping its tablets under `dir`.
    pub fn new(dir: &Path, options: NodeOptions) -> Result<Node> {
        let env = if options.in_memory { Some(rocksdb::Env::mem_env()?) } else { None };
        Ok(Node {
            dir: dir.to_owned(),
            env,
            options,
            docs: None,
            docs_ttl_ms: None,
            tables: Vec::new(),
            stopped: None,
            armed: None,
            stopped_acks: Vec::new(),
            stopped_in_doubt: Vec::new(),
        })
    }

    fn check_on(&self) -> Result<()> {
        match self.stopped {
            None => Ok(()),
            Some(_) => Err(Error::Down { cause: None }),
        }
    }

    /// The directory of tablet `id`'s Raft log on the node's simulated disk.
    pub fn log_dir(id: &TabletId) -> String {
        format!("{}/log", tablet_dir(id))
    }

    /// Open tablet `id`; a CQL table's with its `table` (its packed rows' packings and
    /// layout, which replay needs).
    fn open_tablet(
        &self,
        id: &TabletId,
        table: Option<&CqlTable>,
    ) -> Result<(Tablet, RestartReport)> {
        let sub = tablet_dir(id);
        let log = LogConfig {
            disk: self.options.disk.clone(),
            dir: Node::log_dir(id),
            segment_bytes: self.options.segment_bytes,
        };
        let dir = self.dir.join(&sub);
        let plants = self.options.plants;
        let rows = table.map_or((Default::default(), false), row_storage);
        let storage = (self.options.storage, rows);
        let (mut tablet, report) =
            Tablet::open_with_log(&dir, self.env.as_ref(), &log, plants, storage)?;
        if let Some(Armed { at: CrashPoint::Write(stage), .. }) = self.armed {
            tablet.arm_crash(stage);
        }
        Ok((tablet, report))
    }

    fn docs(&mut self) -> Result<&mut Tablet> {
        self.check_on()?;
        if self.docs.is_none() {
            let (mut tablet, _) = self.open_tablet(&TabletId::Docs, None)?;
            tablet.set_table_ttl_ms(self.docs_ttl_ms);
            self.docs = Some(tablet);
        }
        Ok(self.docs.as_mut().expect("just opened"))
    }

    fn table(&mut self, name: &str) -> Result<(&mut CqlTable, &mut Tablet)> {
        self.check_on()?;
        match self.tables.iter_mut().find(|(t, _)| t.name == name) {
            Some((table, tablet)) => Ok((table, tablet)),
            None => Err(Error::NoSuchTable(name.to_owned())),
        }
    }

    fn all_tablets(&mut self) -> impl Iterator<Item = &mut Tablet> {
        self.docs.iter_mut().chain(self.tables.iter_mut().map(|(_, t)| t))
    }

    fn named_tablets(&mut self) -> impl Iterator<Item = (TabletId, &mut Tablet)> {
        let docs = self.docs.iter_mut().map(|t| (TabletId::Docs, t));
        let tables =
            self.tables.iter_mut().map(|(t, tablet)| (TabletId::Table(t.name.clone()), tablet));
        docs.chain(tables)
    }

    /// Write one batch of document writes at `ht` to the document tablet.
    pub fn write(
        &mut self,
        ht: HybridTime,
        writes: &[DocWrite],
        markers: MarkerMode,
    ) -> Result<()> {
        let tablet = self.docs()?;
        let scanned = &mut Scanned::default();
        let entries = build_entries(tablet.db(), writes, ht, markers, scanned)?;
        let result = tablet.write(&entries.iter().collect(), ht);
        self.power_off_if_crashed(result)
    }

    /// The subdocument at `path` of the document tablet as of `ht`.
    pub fn get(&mut self, path: &DocPath, ht: HybridTime) -> Result<Option<Document>> {
        self.docs()?.get(path, ht)
    }

    /// The subdocument at `path` of CQL table `table`'s tablet as of `ht` (a row is the
    /// document `doc(<hash key>; <clustering key>)`).
    pub fn get_in_table(
        &mut self,
        table: &str,
        path: &DocPath,
        ht: HybridTime,
    ) -> Result<Option<Document>> {
        let (table, tablet) = self.table(table)?;
        let current = |key: &KeyEntry| match key.value {
            Primitive::ColumnId(id) => table.column_name(id).is_some(),
            _ => true,
        };
        // A dropped column's values stay stored until repacking or GC removes them; the
        // row's document does not show them (a rule of docsim's: no column has them).
        if path.subkeys.first().is_some_and(|key| !current(key)) {
            return Ok(None);
        }
        // Only a row's own keys are column ids: below a column, the filter keeps all.
        let doc = tablet.get(path, ht)?;
        Ok(match doc {
            Some(Document::Object(map)) => {
                Some(Document::Object(map.into_iter().filter(|(k, _)| current(k)).collect()))
            }
            other => other,
        })
    }

    /// Set the document tablet's default TTL.
    pub fn set_default_ttl(&mut self, ttl_ms: Option<u64>) -> Result<()> {
        self.docs()?.set_table_ttl_ms(ttl_ms);
        self.docs_ttl_ms = ttl_ms;
        Ok(())
    }

    /// How the CQL tables created from now on store their rows.
    pub fn set_layout(&mut self, layout: crate::db::Layout) {
        self.options.storage.layout = layout;
    }

    /// Create a CQL table and its tablet.
    pub fn create_table(&mut self, table: CqlTable) -> Result<()> {
        if self.tables.iter().any(|(t, _)| t.name == table.name) {
            return Err(Error::TableExists(table.name));
        }
        self.check_on()?;
        let mut table = table;
        table.packed_rows = match self.options.storage.layout {
            crate::db::Layout::Declared => table.packed_rows,
            crate::db::Layout::Packed | crate::db::Layout::Entity => true,
            crate::db::Layout::Unpacked => false,
        };
        table.entity_rows = self.options.storage.layout == crate::db::Layout::Entity;
        let (mut tablet, _) =
            self.open_tablet(&TabletId::Table(table.name.clone()), Some(&table))?;
        attach(&table, &mut tablet);
        self.tables.push((table, tablet));
        Ok(())
    }

    /// Run a CQL statement on its table. `ALTER TABLE` changes the table's metadata (a
    /// new schema version; durable as the table is) and writes nothing.
    pub fn cql(&mut self, ht: HybridTime, statement: &Statement) -> Result<cql::Outcome> {
        let (table, tablet) = self.table(statement.table())?;
        if let Statement::Alter { change, .. } = statement {
            table.alter(change)?; // changes nothing when it refuses
            attach(table, tablet);
            return Ok(cql::Outcome::Written);
        }
        let result = cql::execute(table, tablet, ht, statement);
        self.power_off_if_crashed(result)
    }

    /// Run a Redis command on the document tablet.
    pub fn redis(&mut self, ht: HybridTime, command: &redis::Command) -> Result<redis::Reply> {
        let result = redis::execute(self.docs()?, ht, command);
        self.power_off_if_crashed(result)
    }

    /// The highest history cutoff of the document tablet.
    pub fn history_cutoff(&mut self) -> Result<HybridTime> {
        Ok(self.docs()?.history_cutoff())
    }

    /// Flush every tablet, then GC their logs.
    pub fn flush(&mut self) -> Result<()> {
        self.check_on()?;
        self.all_tablets().try_for_each(|t| t.flush_data())?;
        self.gc_logs()
    }

    /// Flush and compact every tablet with history cutoff `cutoff`, then GC their logs.
    pub fn compact(&mut self, cutoff: HybridTime, kind: CompactionKind) -> Result<()> {
        self.docs()?; // the document tablet's cutoff moves too, even while empty
        self.all_tablets().try_for_each(|t| t.compact_data(cutoff, kind))?;
        self.gc_logs()
    }

    /// A minor compaction of the run `files` of SST files (oldest first, 0-based, as
    /// [`Node::files`] lists them) of one tablet — the document tablet, or CQL table
    /// `table`'s — with history cutoff `cutoff`, then log GC.
    pub fn compact_files(
        &mut self,
        table: Option<&str>,
        files: std::ops::RangeInclusive<usize>,
        cutoff: HybridTime,
    ) -> Result<()> {
        let tablet = match table {
            None => self.docs()?,
            Some(name) => self.table(name)?.1,
        };
        tablet.compact_some(cutoff, CompactionKind::Minor, Some(files))?;
        self.gc_logs()
    }

    /// Every tablet's live SST files, oldest first, document tablet first.
    pub fn files(&mut self) -> Result<Vec<(TabletId, Vec<crate::sst_files::SstFile>)>> {
        self.check_on()?;
        self.named_tablets().map(|(id, tablet)| Ok((id, tablet.files()?))).collect()
    }

    /// Log GC after a flush, unless a crash was armed for this moment.
    fn gc_logs(&mut self) -> Result<()> {
        if let Some(Armed { at: CrashPoint::AfterFlush, tear }) = self.armed {
            self.crash(tear);
            return Err(Error::Crashed(CrashPoint::AfterFlush));
        }
        self.all_tablets().try_for_each(|t| t.gc_log())
    }

    /// An armed crash that fired takes the whole node down.
    fn power_off_if_crashed<T>(&mut self, result: Result<T>) -> Result<T> {
        if let (Err(Error::Crashed(_)), Some(armed)) = (&result, self.armed) {
            self.crash(armed.tear);
        }
        result
    }

    /// Power loss now: every tablet stops (memtables lost), then the disk drops what was
    /// not durable, tearing as `tear` says.
    pub fn crash(&mut self, tear: Tear) {
        self.armed = None;
        self.stop();
        self.options.disk.crash(tear);
    }

    /// Arm a power loss at `at` (in the next write of any tablet, or after the next flush).
    pub fn arm_crash(&mut self, at: CrashPoint, tear: Tear) -> Result<()> {
        self.check_on()?;
        self.armed = Some(Armed { at, tear });
        if let CrashPoint::Write(stage) = at {
            self.all_tablets().for_each(|t| t.arm_crash(stage));
        }
        Ok(())
    }

    /// Stop every tablet (a clean stop: no flush; the logs are durable anyway).
    fn stop(&mut self) {
        if self.stopped.is_none() {
            let acks = self.take_acks();
            self.stopped_acks.extend(acks);
            let in_doubt = self.take_in_doubt();
            self.stopped_in_doubt.extend(in_doubt);
            let docs = self.docs.take().is_some();
            let tables = self.tables.drain(..).map(|(table, _)| table).collect();
            self.stopped = Some(Stopped { docs, tables });
        }
    }

    /// Reopen every tablet (stopping them first if they run), bootstrapping each from its
    /// flushed frontier and log. Reports come document tablet first, then tables. If a
    /// tablet fails to open, the node stays down.
    pub fn restart(&mut self) -> Result<Vec<(TabletId, RestartReport)>> {
        self.armed = None;
        self.stop();
        let stopped = self.stopped.take().expect("stopped above");
        let reports = self.reopen_all(&stopped);
        if reports.is_err() {
            self.docs = None;
            self.tables.clear();
            self.stopped = Some(stopped);
        }
        reports
    }

    fn reopen_all(&mut self, stopped: &Stopped) -> Result<Vec<(TabletId, RestartReport)>> {
        let mut reports = Vec::new();
        if stopped.docs {
            let (mut tablet, report) = self.open_tablet(&TabletId::Docs, None)?;
            tablet.set_table_ttl_ms(self.docs_ttl_ms);
            self.docs = Some(tablet);
            reports.push((TabletId::Docs, report));
        }
        for table in &stopped.tables {
            let id = TabletId::Table(table.name.clone());
            let (mut tablet, report) = self.open_tablet(&id, Some(table))?;
            attach(table, &mut tablet);
            self.tables.push((table.clone(), tablet));
            reports.push((id, report));
        }
        Ok(reports)
    }

    /// Writes acknowledged since the last call, by tablet.
    pub fn take_acks(&mut self) -> Vec<(TabletId, OpId)> {
        let mut acks = std::mem::take(&mut self.stopped_acks);
        for (id, tablet) in self.named_tablets() {
            acks.extend(tablet.take_acks().into_iter().map(|op| (id.clone(), op)));
        }
        acks
    }

    /// The in-doubt entry of a failed write, by tablet.
    pub fn take_in_doubt(&mut self) -> Vec<(TabletId, OpId)> {
        let mut in_doubt = std::mem::take(&mut self.stopped_in_doubt);
        for (id, tablet) in self.named_tablets() {
            in_doubt.extend(tablet.take_in_doubt().map(|op| (id.clone(), op)));
        }
        in_doubt
    }

    /// The tablets, running or stopped, document tablet first.
    pub fn tablet_ids(&self) -> Vec<TabletId> {
        let (docs, tables): (bool, Vec<&CqlTable>) = match &self.stopped {
            Some(stopped) => (stopped.docs, stopped.tables.iter().collect()),
            None => (self.docs.is_some(), self.tables.iter().map(|(t, _)| t).collect()),
        };
        let tables = tables.into_iter().map(|t| TabletId::Table(t.name.clone()));
        docs.then_some(TabletId::Docs).into_iter().chain(tables).collect()
    }

    /// The disk the logs live on.
    pub fn disk(&self) -> &SimDisk {
        &self.options.disk
    }

    /// Each running tablet's Raft log segments, oldest first.
    pub fn log_segments(&mut self) -> Result<Vec<(TabletId, Vec<SegmentInfo>)>> {
        self.check_on()?;
        Ok(self.named_tablets().map(|(id, t)| (id, t.log_segments().to_vec())).collect())
    }

    /// Every stored entry of every tablet, document tablet first.
    pub fn dump(&self) -> Result<Vec<TabletDump<'_>>> {
        self.check_on()?;
        let docs = self.docs.iter().map(|t| (None, t));
        let tables = self.tables.iter().map(|(table, t)| (Some(table), t));
        docs.chain(tables)
            .map(|(table, tablet)| Ok(TabletDump { table, entries: tablet.dump()? }))
            .collect()
    }
}

/// Tablet `id`'s directory (RocksDB's files under the node's directory; its log under
/// the same name on the simulated disk).
fn tablet_dir(id: &TabletId) -> String {
    match id {
        TabletId::Docs => "docs".to_owned(),
        TabletId::Table(table) => format!("table-{table}"),
    }
}
