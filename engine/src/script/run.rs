//! Executing docscript against tablets.

use super::command::{
    parse_line, strip_comment, Command, CrashAt, DocWrite, DumpStyle, MarkerMode,
};
use crate::canary::Plants;
use crate::cql::{self, CqlTable};
use crate::disk::{FaultConfig, SimDisk, Tear};
use crate::doc_write::build_entries;
use crate::encoding::{DocPath, Primitive, SubDocKey, Ttl, Value, ValueKind};
use crate::error::{errinput, Result};
use crate::gc::CompactionKind;
use crate::hybrid_time::HybridTime;
use crate::log::OpId;
use crate::notation::{format_duration_us, Subkey};
use crate::redis;
use crate::replica::{CrashStage, LogConfig};
use crate::tablet::RestartReport;
use crate::tablet::Tablet;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

/// How a script run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptOutcome {
    /// Commands that printed `error:`.
    pub failed_commands: usize,
    /// Whether a line failed to parse (the run stopped there).
    pub parse_error: bool,
}

impl ScriptOutcome {
    /// Whether the run had no error at all.
    pub fn ok(&self) -> bool {
        self.failed_commands == 0 && !self.parse_error
    }
}

/// Run `text` with its tablets under `dir`, writing the output to `out`.
pub fn run_script(text: &str, dir: &Path, out: &mut dyn Write) -> std::io::Result<ScriptOutcome> {
    run_script_planted(text, dir, Plants::NONE, out)
}

/// [`run_script`] with the bugs in `plants` planted (`docsim script --plant NAME`).
pub fn run_script_planted(
    text: &str,
    dir: &Path,
    plants: Plants,
    out: &mut dyn Write,
) -> std::io::Result<ScriptOutcome> {
    let mut runner = Runner::new(dir).with_plants(plants);
    let mut outcome = ScriptOutcome { failed_commands: 0, parse_error: false };
    // The previous command's output lines, how many `expect` lines consumed, and whether
    // it failed (an expected error is not a failure of the script).
    let (mut last_lines, mut cursor, mut last_failed) = (Vec::<String>::new(), 0, false);
    for (i, line) in text.lines().enumerate() {
        match parse_line(strip_comment(line), i + 1) {
            Err(e) => {
                writeln!(out, "error: {e}")?;
                outcome.parse_error = true;
                break;
            }
            Ok(None) => {}
            Ok(Some(Command::Expect(want))) => {
                let got = last_lines.get(cursor).cloned();
                cursor += 1;
                let matched = got
                    .as_deref()
                    .is_some_and(|g| g == want || (want == "error" && g.starts_with("error:")));
                if matched && last_failed && got.as_deref().is_some_and(|g| g.starts_with("error:"))
                {
                    outcome.failed_commands -= 1;
                    last_failed = false;
                }
                if !matched {
                    let got = got.unwrap_or_else(|| "no more output".into());
                    writeln!(out, "error: line {}: expected `{want}`, got `{got}`", i + 1)?;
                    outcome.failed_commands += 1;
                }
            }
            Ok(Some(command)) => {
                let mut printed = String::new();
                last_failed = false;
                if let Err(e) = runner.execute(&command, &mut printed) {
                    writeln!(printed, "error: {e}").expect("write to String");
                    outcome.failed_commands += 1;
                    last_failed = true;
                }
                out.write_all(printed.as_bytes())?;
                last_lines = printed.lines().map(str::to_owned).collect();
                cursor = 0;
            }
        }
    }
    Ok(outcome)
}

/// The state of a script run: the document tablet (document commands and Redis), one
/// tablet per CQL table, the marker mode, and the simulated disk their Raft logs live on.
/// Table metadata (schemas, default TTLs) is kept here, durable across crashes, as a
/// tablet's metadata file would be.
pub struct Runner {
    dir: PathBuf,
    /// An in-memory RocksDB environment (simulation), or `None` for real files.
    env: Option<rocksdb::Env>,
    disk: SimDisk,
    segment_bytes: usize,
    mode: MarkerMode,
    docs: Option<Tablet>,
    docs_ttl_ms: Option<u64>,
    tables: Vec<(CqlTable, Tablet)>,
    /// Set while the power is off: whether the document tablet existed, and the tables.
    off: Option<(bool, Vec<CqlTable>)>,
    /// A crash armed for the next write (`Some(stage)`) or flush (`None`), also for
    /// tablets opened after arming; and how it tears unsynced data when it fires.
    armed: Option<Option<CrashStage>>,
    armed_tear: Tear,
    /// Acknowledgements and in-doubt entries of tablets stopped before they were taken.
    stopped_acks: Vec<(TabletName, OpId)>,
    stopped_in_doubt: Vec<(TabletName, OpId)>,
    /// The planted bugs every tablet is opened with.
    plants: Plants,
}

/// A tablet of a runner: `None` is the document tablet, `Some(name)` a CQL table's.
pub type TabletName = Option<String>;

/// Raft log segment size of script runs: small, so that scripts see several segments.
const SCRIPT_SEGMENT_BYTES: usize = 1024;

impl Runner {
    /// A runner keeping its tablets under `dir`, with logs on a fault-free simulated disk.
    pub fn new(dir: &Path) -> Runner {
        Runner::with_disk(dir, None, SimDisk::new(0, FaultConfig::default()), SCRIPT_SEGMENT_BYTES)
    }

    /// A runner whose tablets live in an in-memory RocksDB environment (no disk I/O, no
    /// fsync): same engine, same RocksDB, for fast simulation.
    pub fn in_memory(dir: &Path) -> Result<Runner> {
        let env = rocksdb::Env::mem_env()?;
        Ok(Runner { env: Some(env), ..Runner::new(dir) })
    }

    /// A runner with RocksDB in `env` (or real files) and its logs on `disk`.
    pub fn with_disk(
        dir: &Path,
        env: Option<rocksdb::Env>,
        disk: SimDisk,
        segment_bytes: usize,
    ) -> Runner {
        Runner {
            dir: dir.to_owned(),
            env,
            disk,
            segment_bytes,
            mode: MarkerMode::Optional,
            docs: None,
            docs_ttl_ms: None,
            tables: Vec::new(),
            off: None,
            armed: None,
            armed_tear: Tear::None,
            stopped_acks: Vec::new(),
            stopped_in_doubt: Vec::new(),
            plants: Plants::NONE,
        }
    }

    /// This runner with the bugs in `plants` planted in every tablet it opens (testing the
    /// tester; set before the first command).
    pub fn with_plants(self, plants: Plants) -> Runner {
        Runner { plants, ..self }
    }

    fn check_on(&self) -> Result<()> {
        match self.off {
            None => Ok(()),
            Some(_) => errinput!("the node is down after a crash; `restart` it"),
        }
    }

    fn open_tablet(&self, name: &TabletName) -> Result<(Tablet, RestartReport)> {
        let sub = match name {
            None => "docs".to_owned(),
            Some(table) => format!("table-{table}"),
        };
        let log = LogConfig {
            disk: self.disk.clone(),
            dir: format!("{sub}/log"),
            segment_bytes: self.segment_bytes,
        };
        let (mut tablet, report) =
            Tablet::open_with_log(&self.dir.join(&sub), self.env.as_ref(), &log, self.plants)?;
        if let Some(Some(stage)) = self.armed {
            tablet.arm_crash(stage);
        }
        Ok((tablet, report))
    }

    fn docs(&mut self) -> Result<&mut Tablet> {
        self.check_on()?;
        if self.docs.is_none() {
            let (mut tablet, _) = self.open_tablet(&None)?;
            tablet.set_table_ttl_ms(self.docs_ttl_ms);
            self.docs = Some(tablet);
        }
        Ok(self.docs.as_mut().expect("just opened"))
    }

    fn all_tablets(&mut self) -> impl Iterator<Item = &mut Tablet> {
        self.docs.iter_mut().chain(self.tables.iter_mut().map(|(_, t)| t))
    }

    fn named_tablets(&mut self) -> impl Iterator<Item = (TabletName, &mut Tablet)> {
        let docs = self.docs.iter_mut().map(|t| (None, t));
        docs.chain(self.tables.iter_mut().map(|(table, t)| (Some(table.name.clone()), t)))
    }

    /// Power loss: every tablet stops (memtables lost), then the disk drops what was not
    /// durable, tearing as `tear` says.
    pub fn crash(&mut self, tear: Tear) {
        self.armed = None;
        self.stop();
        self.disk.crash(tear);
    }

    /// Stop every tablet (a clean stop: no flush; the logs are durable anyway).
    fn stop(&mut self) {
        if self.off.is_none() {
            let acks = self.take_acks();
            self.stopped_acks.extend(acks);
            let in_doubt = self.take_in_doubt();
            self.stopped_in_doubt.extend(in_doubt);
            let docs = self.docs.take().is_some();
            let tables = self.tables.drain(..).map(|(table, _)| table).collect();
            self.off = Some((docs, tables));
        }
    }

    /// Reopen every tablet (stopping them first if they run), bootstrapping each from its
    /// flushed frontier and log. Reports come document tablet first, then tables.
    pub fn restart(&mut self) -> Result<Vec<(TabletName, RestartReport)>> {
        self.armed = None;
        self.stop();
        let (docs, tables) = self.off.take().expect("stopped above");
        let reports = self.reopen_all(docs, &tables);
        if reports.is_err() {
            // The node stays down; the tablets opened before the failure close again.
            self.docs = None;
            self.tables.clear();
            self.off = Some((docs, tables));
        }
        reports
    }

    fn reopen_all(
        &mut self,
        docs: bool,
        tables: &[CqlTable],
    ) -> Result<Vec<(TabletName, RestartReport)>> {
        let mut reports = Vec::new();
        if docs {
            let (mut tablet, report) = self.open_tablet(&None)?;
            tablet.set_table_ttl_ms(self.docs_ttl_ms);
            self.docs = Some(tablet);
            reports.push((None, report));
        }
        for table in tables {
            let name = Some(table.name.clone());
            let (mut tablet, report) = self.open_tablet(&name)?;
            tablet.set_table_ttl_ms(table.default_ttl_ms);
            self.tables.push((table.clone(), tablet));
            reports.push((name, report));
        }
        Ok(reports)
    }

    /// Arm a crash inside the next write (or after the next flush, `None`) of every tablet.
    pub fn arm_crash(&mut self, stage: Option<CrashStage>, tear: Tear) {
        self.armed = Some(stage);
        self.armed_tear = tear;
        if let Some(stage) = stage {
            self.all_tablets().for_each(|t| t.arm_crash(stage));
        }
    }

    /// Writes acknowledged since the last call, by tablet.
    pub fn take_acks(&mut self) -> Vec<(TabletName, OpId)> {
        let mut acks = std::mem::take(&mut self.stopped_acks);
        for (name, tablet) in self.named_tablets() {
            acks.extend(tablet.take_acks().into_iter().map(|op| (name.clone(), op)));
        }
        acks
    }

    /// The in-doubt entry of a failed write, by tablet.
    pub fn take_in_doubt(&mut self) -> Vec<(TabletName, OpId)> {
        let mut in_doubt = std::mem::take(&mut self.stopped_in_doubt);
        for (name, tablet) in self.named_tablets() {
            in_doubt.extend(tablet.take_in_doubt().map(|op| (name.clone(), op)));
        }
        in_doubt
    }

    /// The tablets, running or stopped, document tablet first.
    pub fn tablet_names(&self) -> Vec<TabletName> {
        let (docs, tables): (bool, Vec<&CqlTable>) = match &self.off {
            Some((docs, tables)) => (*docs, tables.iter().collect()),
            None => (self.docs.is_some(), self.tables.iter().map(|(t, _)| t).collect()),
        };
        let tables = tables.into_iter().map(|t| Some(t.name.clone()));
        docs.then_some(None).into_iter().chain(tables).collect()
    }

    /// The disk the logs live on.
    pub fn disk(&self) -> &SimDisk {
        &self.disk
    }

    /// Execute one command, appending its output lines to `out`.
    pub fn execute(&mut self, command: &Command, out: &mut String) -> Result<()> {
        match command {
            Command::Markers(mode) => self.mode = *mode,
            Command::Write { write, ht } => self.write(std::slice::from_ref(write), *ht)?,
            Command::Batch { ht, writes } => self.write(writes, *ht)?,
            Command::DefaultTtl(ttl_us) => {
                let ttl_ms = ttl_us.map(|us| us.div_ceil(1000));
                self.docs()?.set_table_ttl_ms(ttl_ms);
                self.docs_ttl_ms = ttl_ms;
            }
            Command::Get { path, ht } => {
                let doc = self.get(path, *ht)?;
                writeln!(out, "{}", format_get(path, *ht, doc.as_ref())).expect("write to String");
            }
            Command::Dump(style) => self.dump(*style, out)?,
            Command::Flush => self.flush()?,
            Command::Compact { cutoff, minor } => self.compact(*cutoff, *minor)?,
            Command::Expect(_) => {} // checked by the script loop
            Command::Crash { at: CrashAt::Now, torn } => self.crash(tear(*torn)),
            Command::Crash { at: CrashAt::Write(stage), torn } => {
                self.check_on()?;
                self.arm_crash(Some(*stage), tear(*torn))
            }
            Command::Crash { at: CrashAt::AfterFlush, torn } => {
                self.check_on()?;
                self.arm_crash(None, tear(*torn))
            }
            Command::Restart => {
                for (name, report) in self.restart()? {
                    writeln!(out, "{}", format_restart(&name, &report)).expect("write to String");
                }
            }
            Command::Log => self.print_log(out)?,
            Command::Table(statement) => self.create_table(statement)?,
            Command::Cql { ht, statement } => self.cql(*ht, statement, out)?,
            Command::Redis { ht, command } => {
                writeln!(out, "{}", self.redis_run(*ht, command)?).expect("write to String")
            }
        }
        Ok(())
    }

    /// Flush every tablet, then GC their logs.
    pub fn flush(&mut self) -> Result<()> {
        self.check_on()?;
        self.all_tablets().try_for_each(|t| t.flush_data())?;
        self.gc_logs()
    }

    /// Flush and compact every tablet with history cutoff `cutoff`, then GC their logs.
    pub fn compact(&mut self, cutoff: HybridTime, minor: bool) -> Result<()> {
        let kind = if minor { CompactionKind::Minor } else { CompactionKind::Full };
        self.docs()?; // the document tablet's cutoff moves too, even while empty
        self.all_tablets().try_for_each(|t| t.compact_data(cutoff, kind))?;
        self.gc_logs()
    }

    /// Log GC after a flush, unless a crash was armed for this moment.
    fn gc_logs(&mut self) -> Result<()> {
        if self.armed == Some(None) {
            let tear = self.armed_tear;
            self.crash(tear);
            return Err(crate::Error::Crashed("after-flush"));
        }
        self.all_tablets().try_for_each(|t| t.gc_log())
    }

    /// An armed crash that fired takes the whole node down.
    fn power_off_if_crashed<T>(&mut self, result: Result<T>) -> Result<T> {
        if let Err(crate::Error::Crashed(_)) = &result {
            let tear = self.armed_tear;
            self.crash(tear);
        }
        result
    }

    fn print_log(&mut self, out: &mut String) -> Result<()> {
        self.check_on()?;
        for (name, tablet) in self.named_tablets() {
            let tablet_name = name.map(|n| format!("table={n} ")).unwrap_or_default();
            for s in tablet.log_segments() {
                let (seq, prev, last, bytes) = (s.seq, s.prev, s.last, s.bytes);
                writeln!(
                    out,
                    "log: {tablet_name}segment={seq} after={prev} last={last} bytes={bytes}"
                )
                .expect("write to String");
            }
        }
        Ok(())
    }

    /// The subdocument at `path` of the document tablet as of `ht`.
    pub fn get(&mut self, path: &DocPath, ht: HybridTime) -> Result<Option<crate::Document>> {
        self.docs()?.get(path, ht)
    }

    /// Run a CQL statement, returning its rows or that it wrote.
    pub fn cql_run(&mut self, ht: HybridTime, statement: &str) -> Result<cql::Outcome> {
        let name = cql::target_table(statement)?;
        self.check_on()?;
        let Some((table, tablet)) = self.tables.iter_mut().find(|(t, _)| t.name == name) else {
            return errinput!("unknown table {name}");
        };
        let result = cql::run(table, tablet, ht, statement);
        self.power_off_if_crashed(result)
    }

    /// Run a Redis command.
    pub fn redis_run(&mut self, ht: HybridTime, command: &str) -> Result<redis::Reply> {
        let result = redis::run(self.docs()?, ht, command);
        self.power_off_if_crashed(result)
    }

    /// The highest history cutoff of the document tablet.
    pub fn history_cutoff(&mut self) -> Result<HybridTime> {
        Ok(self.docs()?.history_cutoff())
    }

    fn write(&mut self, writes: &[DocWrite], ht: HybridTime) -> Result<()> {
        let mode = self.mode;
        let tablet = self.docs()?;
        let scanned = &mut crate::doc_write::Scanned::default();
        let entries = build_entries(tablet.db(), writes, ht, mode, tablet.table_ttl_ms(), scanned)?;
        let result = tablet.write(&entries.iter().collect(), ht);
        self.power_off_if_crashed(result)
    }

    fn create_table(&mut self, statement: &str) -> Result<()> {
        let table = CqlTable::parse(statement)?;
        if self.tables.iter().any(|(t, _)| t.name == table.name) {
            return errinput!("table {} already exists", table.name);
        }
        self.check_on()?;
        let (mut tablet, _) = self.open_tablet(&Some(table.name.clone()))?;
        tablet.set_table_ttl_ms(table.default_ttl_ms);
        self.tables.push((table, tablet));
        Ok(())
    }

    fn cql(&mut self, ht: HybridTime, statement: &str, out: &mut String) -> Result<()> {
        if let cql::Outcome::Rows(rows) = self.cql_run(ht, statement)? {
            cql::format_rows(&rows).iter().for_each(|l| writeln!(out, "{l}").expect("write"));
        }
        Ok(())
    }

    fn dump(&mut self, style: DumpStyle, out: &mut String) -> Result<()> {
        self.check_on()?;
        let docs = self.docs.iter().map(|t| (None, t));
        let tables = self.tables.iter().map(|(table, t)| (Some(table), t));
        for (table, tablet) in docs.chain(tables) {
            for ((key, value), raw_key, raw_value) in tablet.dump()? {
                let names = if style == DumpStyle::Names { table } else { None };
                out.push_str(&format_entry(&key, &value, names));
                if style == DumpStyle::Raw {
                    let (k, v) = (crate::encoding::hex(&raw_key), crate::encoding::hex(&raw_value));
                    write!(out, " key={k} value={v}").expect("write to String");
                }
                out.push('\n');
            }
        }
        Ok(())
    }
}

/// A `restart` line: the contract's for the document tablet, ` table=<name>` appended for
/// a CQL table's tablet.
pub fn format_restart(name: &TabletName, report: &RestartReport) -> String {
    match name {
        None => report.to_string(),
        Some(table) => format!("{report} table={table}"),
    }
}

fn tear(torn: bool) -> Tear {
    if torn {
        Tear::FirstSector
    } else {
        Tear::None
    }
}

/// A `get` line: `<path> @<T> => <document>` or `=> <none>`.
pub fn format_get(path: &DocPath, ht: HybridTime, doc: Option<&crate::Document>) -> String {
    match doc {
        Some(doc) => format!("{path} @{ht} => {doc}"),
        None => format!("{path} @{ht} => <none>"),
    }
}

/// One `dump` line: `<path> @<T>[.<logical>][w<id>] -> <value>[ ttl=<dur>]`.
pub fn format_entry(key: &SubDocKey, value: &Value, names: Option<&CqlTable>) -> String {
    let mut line = format_path(&key.path, names);
    write!(line, " @{} -> ", key.doc_ht).expect("write to String");
    match &value.kind {
        ValueKind::Object => line.push_str("{}"),
        ValueKind::Tombstone => line.push_str("DEL"),
        ValueKind::Primitive(p) => write!(line, "{p}").expect("write to String"),
    }
    match value.ttl {
        Ttl::Inherit => {}
        Ttl::Never => line.push_str(" ttl=0"),
        Ttl::Ms(ms) => {
            write!(line, " ttl={}", format_duration_us(ms.saturating_mul(1000))).expect("write")
        }
    }
    line
}

fn format_path(path: &DocPath, names: Option<&CqlTable>) -> String {
    let mut text = path.doc_key.to_string();
    for (i, subkey) in path.subkeys.iter().enumerate() {
        let name = match (&subkey.value, names, i) {
            (Primitive::ColumnId(id), Some(table), 0) => table.column_name(*id),
            _ => None,
        };
        match name {
            Some(name) => write!(text, ".{name}"),
            None => write!(text, ".{}", Subkey(subkey)),
        }
        .expect("write to String");
    }
    text
}
