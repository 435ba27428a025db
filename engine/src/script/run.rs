//! Executing docscript against tablets.

use super::command::{parse_line, strip_comment, Command, DocWrite, DumpStyle, MarkerMode};
use crate::cql::{self, CqlTable};
use crate::doc_write::build_entries;
use crate::encoding::{DocPath, Primitive, SubDocKey, Ttl, Value, ValueKind};
use crate::error::{errinput, Result};
use crate::gc::CompactionKind;
use crate::hybrid_time::HybridTime;
use crate::notation::{format_duration_us, Subkey};
use crate::redis;
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
    let mut runner = Runner::new(dir);
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
/// tablet per CQL table, and the marker mode.
pub struct Runner {
    dir: PathBuf,
    /// An in-memory RocksDB environment (simulation), or `None` for real files.
    env: Option<rocksdb::Env>,
    mode: MarkerMode,
    docs: Option<Tablet>,
    tables: Vec<(CqlTable, Tablet)>,
}

impl Runner {
    /// A runner keeping its tablets under `dir`.
    pub fn new(dir: &Path) -> Runner {
        Runner {
            dir: dir.to_owned(),
            env: None,
            mode: MarkerMode::Optional,
            docs: None,
            tables: Vec::new(),
        }
    }

    /// A runner whose tablets live in an in-memory RocksDB environment (no disk I/O, no
    /// fsync): same engine, same RocksDB, for fast simulation.
    pub fn in_memory(dir: &Path) -> Result<Runner> {
        let env = rocksdb::Env::mem_env()?;
        Ok(Runner { env: Some(env), ..Runner::new(dir) })
    }

    fn docs(&mut self) -> Result<&mut Tablet> {
        if self.docs.is_none() {
            self.docs = Some(Tablet::open_in(&self.dir.join("docs"), self.env.as_ref())?);
        }
        Ok(self.docs.as_mut().expect("just opened"))
    }

    fn all_tablets(&mut self) -> impl Iterator<Item = &mut Tablet> {
        self.docs.iter_mut().chain(self.tables.iter_mut().map(|(_, t)| t))
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
            }
            Command::Get { path, ht } => {
                let doc = self.get(path, *ht)?;
                writeln!(out, "{}", format_get(path, *ht, doc.as_ref())).expect("write to String");
            }
            Command::Dump(style) => self.dump(*style, out)?,
            Command::Flush => self.all_tablets().try_for_each(|t| t.flush())?,
            Command::Compact { cutoff, minor } => {
                let kind = if *minor { CompactionKind::Minor } else { CompactionKind::Full };
                self.docs()?; // the document tablet's cutoff moves too, even while empty
                self.all_tablets().try_for_each(|t| t.compact(*cutoff, kind))?;
            }
            Command::Expect(_) => {} // checked by the script loop
            Command::Crash | Command::Restart => {
                return errinput!("crash and restart need the tablet's Raft log, not built yet");
            }
            Command::Table(statement) => self.create_table(statement)?,
            Command::Cql { ht, statement } => self.cql(*ht, statement, out)?,
            Command::Redis { ht, command } => {
                writeln!(out, "{}", self.redis_run(*ht, command)?).expect("write to String")
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
        let Some((table, tablet)) = self.tables.iter_mut().find(|(t, _)| t.name == name) else {
            return errinput!("unknown table {name}");
        };
        cql::run(table, tablet, ht, statement)
    }

    /// Run a Redis command.
    pub fn redis_run(&mut self, ht: HybridTime, command: &str) -> Result<redis::Reply> {
        redis::run(self.docs()?, ht, command)
    }

    /// The highest history cutoff of the document tablet.
    pub fn history_cutoff(&mut self) -> Result<HybridTime> {
        Ok(self.docs()?.history_cutoff())
    }

    fn write(&mut self, writes: &[DocWrite], ht: HybridTime) -> Result<()> {
        let mode = self.mode;
        let tablet = self.docs()?;
        let entries = build_entries(tablet.db(), writes, ht, mode, tablet.table_ttl_ms())?;
        tablet.write(&entries.iter().collect(), ht)
    }

    fn create_table(&mut self, statement: &str) -> Result<()> {
        let table = CqlTable::parse(statement)?;
        if self.tables.iter().any(|(t, _)| t.name == table.name) {
            return errinput!("table {} already exists", table.name);
        }
        let dir = self.dir.join(format!("table-{}", table.name));
        let mut tablet = Tablet::open_in(&dir, self.env.as_ref())?;
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
