//! Executing docscript: each line is parsed into a typed request, run on a [`Node`], and
//! its typed result printed as the contract says. The adapter keeps only what is
//! docscript's own: the `markers` setting and the `expect` checks.

use super::command::{At, Command, DumpStyle, FileRun};
use super::parse::{parse_line, strip_comment};
use crate::canary::Plants;
use crate::cql::{self, CqlTable};
use crate::db::StorageConfig;
use crate::disk::{FaultConfig, SimDisk, Tear};
use crate::doc_write::MarkerMode;
use crate::encoding::{DocPath, Primitive, SubDocKey, Ttl, Value, ValueKind};
use crate::error::{Error, ErrorKind};
use crate::gc::CompactionKind;
use crate::hybrid_time::HybridTime;
use crate::ids::TabletId;
use crate::log::SegmentInfo;
use crate::node::{Node, NodeOptions};
use crate::notation::{format_duration_us, Subkey};
use crate::redis;
use crate::replica::RestartReport;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

/// How a script run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptOutcome {
    /// Commands that printed `error:` (and were not expected to).
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

/// Why a command failed: the node refused it, or its CQL or Redis text does not parse.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CommandError {
    /// The node refused the request.
    #[error("{0}")]
    Node(#[from] Error),
    /// The CQL text does not parse.
    #[error("{0}")]
    Cql(#[from] cql::SyntaxError),
    /// The Redis command line does not parse.
    #[error("{0}")]
    Redis(#[from] redis::SyntaxError),
    /// A command of a replicated script, or one only the simulator's executor runs, in
    /// this runner's group of one.
    #[error("`{0}` needs the simulator's executor: run the script with `docsim script`")]
    Replicated(String),
}

impl CommandError {
    /// The kind `expect error: <kind>` names: the node's error kind, or `syntax_error`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            CommandError::Node(e) => e.kind().name(),
            CommandError::Cql(_) | CommandError::Redis(_) => "syntax_error",
            CommandError::Replicated(_) => "invalid_request",
        }
    }
}

/// Every name `expect error: <kind>` accepts.
pub fn error_kind_names() -> impl Iterator<Item = &'static str> {
    ErrorKind::ALL.into_iter().map(ErrorKind::name).chain(["syntax_error"])
}

/// Whether `expect error: <text>` names a kind (else it is a whole `error: ...` line).
fn is_kind_name(text: &str) -> bool {
    error_kind_names().any(|k| k == text)
}

/// The previous command's output, as `expect` lines check it (one for each runner of
/// docscript: this one, and the simulator's).
#[derive(Default)]
pub struct Last {
    lines: Vec<String>,
    /// How many lines `expect` consumed so far.
    cursor: usize,
    /// The kind of error the command failed with, if it failed.
    error: Option<&'static str>,
    /// A `restart`'s reports in full, one per tablet; `expect restart` takes them in turn.
    restarts: VecDeque<String>,
}

impl Last {
    /// A command printed `lines`, failed with an error of kind `error` (if it did), and
    /// restarted tablets reporting `restarts` in full (if it was a restart).
    pub fn new(lines: Vec<String>, error: Option<&'static str>, restarts: Vec<String>) -> Last {
        Last { lines, cursor: 0, error, restarts: restarts.into() }
    }

    /// Check one `expect` line (its text after `expect `): `Ok(true)` when it expected
    /// the error the command failed with (which then no longer fails the script), or the
    /// complaint.
    pub fn check(&mut self, want: &str) -> Result<bool, String> {
        if want.starts_with("restart ") {
            return self.check_restart(want).map(|()| false);
        }
        if let Some(line) = want.strip_prefix("absent ") {
            return self.check_absent(line).map(|()| false);
        }
        self.check_line(want)
    }

    /// `expect restart <report>`: the previous restart's next tablet report, every field
    /// of it ([`format_restart_full`]).
    fn check_restart(&mut self, want: &str) -> Result<(), String> {
        match self.restarts.pop_front() {
            Some(got) if got == want => Ok(()),
            Some(got) => Err(format!("expected `{want}`, got `{got}`")),
            None => Err(format!("expected `{want}`, but no restart report is left to check")),
        }
    }

    /// `expect absent <line>`: no output line of the previous command is `line`.
    fn check_absent(&self, line: &str) -> Result<(), String> {
        match self.lines.iter().position(|got| got == line) {
            None => Ok(()),
            Some(at) => Err(format!("expected `absent {line}`, got it as output line {}", at + 1)),
        }
    }

    /// One `expect` line against the previous command's next output line.
    fn check_line(&mut self, want: &str) -> Result<bool, String> {
        let got = self.lines.get(self.cursor).cloned();
        self.cursor += 1;
        let got_error = got.as_deref().is_some_and(|g| g.starts_with("error:"));
        let kind = want.strip_prefix("error:").map(str::trim).filter(|k| is_kind_name(k));
        let matched = match kind {
            Some(kind) => got_error && self.error == Some(kind),
            None if want == "error" => got_error,
            None => got.as_deref() == Some(want),
        };
        if matched {
            return Ok(got_error && self.error.take().is_some());
        }
        let got = got.unwrap_or_else(|| "no more output".into());
        match (kind, self.error) {
            (Some(_), Some(kind)) => Err(format!("expected `{want}`, got `{got}` (kind {kind})")),
            _ => Err(format!("expected `{want}`, got `{got}`")),
        }
    }
}

/// Run `text` with its tablets under `dir`, writing the output to `out`.
pub fn run_script(
    text: &str,
    dir: &Path,
    plants: Plants,
    out: &mut dyn Write,
) -> std::io::Result<ScriptOutcome> {
    run_script_in(text, dir, plants, StorageConfig::default(), out)
}

/// [`run_script`] with the tablets stored as `storage` says (the goldens run the CQL
/// scripts again with every table packed).
pub fn run_script_in(
    text: &str,
    dir: &Path,
    plants: Plants,
    storage: StorageConfig,
    out: &mut dyn Write,
) -> std::io::Result<ScriptOutcome> {
    let mut outcome = ScriptOutcome { failed_commands: 0, parse_error: false };
    let mut runner = Runner::in_storage(dir, plants, storage);
    let mut last = Last::default();
    for (i, line) in text.lines().enumerate() {
        match parse_line(strip_comment(line), i + 1) {
            Err(e) => {
                writeln!(out, "error: {e}")?;
                outcome.parse_error = true;
                break;
            }
            Ok(None) => {}
            Ok(Some(Command::Expect(want))) => match last.check(&want) {
                Ok(true) => outcome.failed_commands -= 1,
                Ok(false) => {}
                Err(complaint) => {
                    writeln!(out, "error: line {}: {complaint}", i + 1)?;
                    outcome.failed_commands += 1;
                }
            },
            Ok(Some(command)) => {
                let mut printed = String::new();
                let mut error = None;
                let result = runner.execute(&command, &mut printed);
                for flush in runner.node.take_memory_flushes() {
                    printed.push_str(&format_memory_flush(None, &flush));
                    printed.push('\n');
                }
                if let Err(e) = result {
                    writeln!(printed, "error: {e}").expect("write to String");
                    outcome.failed_commands += 1;
                    error = Some(e.kind_name());
                }
                out.write_all(printed.as_bytes())?;
                let lines = printed.lines().map(str::to_owned).collect();
                last = Last::new(lines, error, std::mem::take(&mut runner.restarts));
            }
        }
    }
    Ok(outcome)
}

/// A script's node and its one setting of its own, the marker mode.
pub struct Runner {
    node: Node,
    markers: MarkerMode,
    /// The last restart's reports in full, for `expect restart`.
    restarts: Vec<String>,
}

/// Raft log segment size of script runs: small, so that scripts see several segments.
const SCRIPT_SEGMENT_BYTES: usize = 1024;

impl Runner {
    /// A runner keeping its tablets in real files under `dir`, with logs on a fault-free
    /// simulated disk.
    pub fn new(dir: &Path, plants: Plants) -> Runner {
        Runner::in_storage(dir, plants, StorageConfig::default())
    }

    /// [`Runner::new`] with its tablets stored as `storage` says.
    pub fn in_storage(dir: &Path, plants: Plants, storage: StorageConfig) -> Runner {
        let disk = SimDisk::new(0, FaultConfig::default());
        let options = NodeOptions {
            storage: StorageConfig { statistics: true, ..storage }, // for `stats`
            ..NodeOptions::alone(disk, SCRIPT_SEGMENT_BYTES, plants, crate::Medium::SimDisk)
        };
        // Making the node allocates only its simulated disk's RocksDB Env; it opens its
        // tablets' stores as they are created or used.
        let node = Node::new(dir, options).expect("a node on disk is made without I/O");
        Runner { node, markers: MarkerMode::Optional, restarts: Vec::new() }
    }

    /// `restart`: each tablet's report line, and the full reports for `expect restart`.
    fn restart(&mut self, out: &mut String) -> Result<(), CommandError> {
        let reports = self.node.restart()?;
        for (id, report) in &reports {
            out.push_str(&format_restart(id, report));
            out.push('\n');
        }
        self.restarts = reports.iter().map(|(id, r)| format_restart_full(id, r)).collect();
        Ok(())
    }

    /// Execute one command, appending its output lines to `out`. A group of one: routing
    /// options may name node 1 only, and the replicated commands need the simulator.
    pub fn execute(&mut self, command: &Command, out: &mut String) -> Result<(), CommandError> {
        if command.is_replicated() || command.needs_simulator() {
            return Err(CommandError::Replicated(command.to_string()));
        }
        let node = &mut self.node;
        let line = |out: &mut String, text: String| {
            out.push_str(&text);
            out.push('\n');
        };
        match command {
            Command::Header(_) => {} // a group of one: `is_replicated` refused the others
            Command::Markers(mode) => self.markers = *mode,
            Command::Layout(layout) => self.node.set_layout(*layout),
            Command::Memstore(limit) => self.node.set_memstore_limit(*limit),
            Command::Write { write, ht, .. } => {
                node.write_at(*ht, std::slice::from_ref(write), self.markers)?
            }
            Command::Batch { ht, writes, .. } => node.write_at(*ht, writes, self.markers)?,
            Command::DefaultTtl { ttl_us, ht } => {
                node.set_default_ttl_at(*ht, ttl_us.map(|us| us.div_ceil(1000)))?
            }
            Command::Get { path, at, table, .. } => {
                let ht = read_time(node, *at);
                let doc = node.get_in(table.as_deref(), path, ht)?;
                line(out, format_get(path, ht, doc.as_ref()))
            }
            Command::Dump { style, .. } => dump(node, *style, out)?,
            Command::Flush { .. } => node.flush()?,
            Command::Compact { cutoff, minor: _, run: Some(run), .. } => {
                compact_run(node, run, *cutoff)?
            }
            Command::Compact { cutoff, minor, run: None, .. } => {
                let kind = if *minor { CompactionKind::Minor } else { CompactionKind::Full };
                node.compact(*cutoff, kind)?
            }
            Command::Files { .. } | Command::Stats { .. } => listing(node, command, out)?,
            Command::Expect(_) => {} // checked by the script loop
            Command::Crash { at: None, tear: k, .. } => node.crash(tear(*k)),
            Command::Crash { at: Some(point), tear: k, .. } => node.arm_crash(*point, tear(*k))?,
            Command::Disarm { .. } => node.disarm(),
            Command::Fault { fault, .. } => fault.inject(node.disk())?,
            Command::Restart { .. } => self.restart(out)?,
            Command::Log { .. } => {
                for (id, segments) in node.log_segments()? {
                    segments.iter().for_each(|s| line(out, format_segment(&id, s)));
                }
            }
            Command::Table(statement) => node.create_table(CqlTable::parse(statement)?)?,
            Command::Cql { at, statement, .. } => {
                let ht = at.map(|at| read_time(node, at));
                let outcome = node.cql_at(ht, &cql::parse_statement(statement)?)?;
                if let cql::Outcome::Rows(rows) = outcome {
                    cql::format_rows(&rows).into_iter().for_each(|l| line(out, l));
                }
            }
            Command::Redis { at, command, .. } => {
                let ht = at.map(|at| read_time(node, at));
                let reply = node.redis_at(ht, &redis::Command::parse(command)?)?;
                line(out, reply.to_string())
            }
            other => unreachable!("a replicated command: {other}"),
        }
        Ok(())
    }
}

/// `files` and `stats`: one line per SST file of each tablet, or per tablet.
fn listing(node: &Node, command: &Command, out: &mut String) -> Result<(), CommandError> {
    let mut lines = Vec::new();
    match command {
        Command::Stats { .. } => {
            lines.extend(node.read_stats()?.iter().map(|(id, s)| format_stats(id, s)))
        }
        Command::Files { .. } => {
            for (id, files) in node.files()? {
                lines.extend(files.iter().enumerate().map(|(i, f)| format_file(&id, i, f)));
            }
        }
        other => unreachable!("not a listing: {other}"),
    }
    lines.iter().for_each(|l| {
        out.push_str(l);
        out.push('\n');
    });
    Ok(())
}

/// `crash ... torn=k` keeps each file's unsynced tail up to its `k`-th sector boundary.
fn tear(k: Option<u32>) -> Tear {
    k.map_or(Tear::None, Tear::Sector)
}

/// `compact minor files=<a>..<b>`: the run of each tablet the command names (the
/// document tablet's, a table's every tablet's, or one tablet's).
fn compact_run(node: &mut Node, run: &FileRun, cutoff: HybridTime) -> Result<(), Error> {
    let tablets = match &run.table {
        None => vec![TabletId::Docs],
        Some(name) => node.tablets_of(name)?,
    };
    for id in tablets {
        node.compact_files(&id, run.first..=run.last, cutoff)?;
    }
    Ok(())
}

/// What `dump` prints of `node`'s tablets (document tablet first), in `style`.
pub fn dump(node: &Node, style: DumpStyle, out: &mut String) -> Result<(), Error> {
    for tablet in node.dump()? {
        for ((key, value), raw_key, raw_value) in tablet.entries {
            let names = style == DumpStyle::Names;
            out.push_str(&format_entry(&key, &value, tablet.table, names));
            if style == DumpStyle::Raw {
                let (k, v) = (crate::encoding::hex(&raw_key), crate::encoding::hex(&raw_value));
                write!(out, " key={k} value={v}").expect("write to String");
            }
            out.push('\n');
        }
    }
    Ok(())
}

/// A `restart` line: the contract's for the document tablet, ` table=<name>` appended for
/// a CQL table's tablet.
pub fn format_restart(id: &TabletId, report: &RestartReport) -> String {
    with_table(id, report.to_string())
}

/// A restart report with every field ([`RestartReport::full`]), as `expect restart`
/// states it, ` table=<name>` appended for a CQL table's tablet.
pub fn format_restart_full(id: &TabletId, report: &RestartReport) -> String {
    with_table(id, report.full())
}

/// `line`, with ` table=<name>` appended for a CQL table's tablet.
fn with_table(id: &TabletId, line: String) -> String {
    match id {
        TabletId::Docs => line,
        TabletId::Table(..) => format!("{line} {id}"),
    }
}

/// A memory flush's line: `memstore: flushed [node=<i> ]<tablet> (oldest write @<T>)`,
/// the node named in a replicated group.
pub fn format_memory_flush(node: Option<u64>, flush: &crate::node::MemoryFlush) -> String {
    let chosen = flush.held.iter().find(|(id, ..)| *id == flush.tablet).map(|(_, m, _)| m);
    let oldest = chosen.and_then(|m| m.oldest_write);
    memory_flush_line(node, &flush.tablet, oldest)
}

/// [`format_memory_flush`]'s line of node `node` flushing `tablet` whose oldest write was
/// at `oldest`.
pub fn memory_flush_line(
    node: Option<u64>,
    tablet: &TabletId,
    oldest: Option<HybridTime>,
) -> String {
    let node = node.map_or(String::new(), |id| format!("node={id} "));
    let oldest = oldest.map_or("none".into(), |ht| format!("@{ht}"));
    format!("memstore: flushed {node}{tablet} (oldest write {oldest})")
}

/// A `files` line for SST file `index` (oldest first) of a tablet: its entry count and
/// its smallest and largest key in notation.
pub fn format_file(id: &TabletId, index: usize, file: &crate::SstFile) -> String {
    let tablet = id.line_prefix();
    let (smallest, largest) = (format_raw_key(&file.smallest), format_raw_key(&file.largest));
    let durable = match file.durable {
        None => "",
        Some(true) => " durable",
        Some(false) => " volatile",
    };
    format!("files: {tablet}{index} entries={} {smallest} .. {largest}{durable}", file.entries)
}

/// A page of a paged read as printed: its rows, then `paging: @<T> after=<key>` (the
/// paging state: the next page's command reads at `<T>` after `<key>`) or `paging: done`.
pub fn format_page(
    rows: &[crate::cql::Row],
    read_ht: HybridTime,
    last: Option<&crate::DocKey>,
) -> Vec<String> {
    let mut lines = crate::cql::format_rows(rows);
    lines.push(match last {
        Some(key) => format!("paging: @{read_ht} after={key}"),
        None => "paging: done".to_owned(),
    });
    lines
}

/// `stats: [<tablet> ]bloom_filtered=<n> bloom_passed=<n> pruned=<n> pruning_read=<n>`
/// (`-` for the bloom counts without RocksDB statistics).
pub fn format_stats(id: &TabletId, stats: &crate::ReadStats) -> String {
    let tablet = id.line_prefix();
    let crate::ReadStats { bloom, pruned, pruning_read } = stats;
    let (bloom_filtered, bloom_passed) = match bloom {
        Some((filtered, passed)) => (filtered.to_string(), passed.to_string()),
        None => ("-".into(), "-".into()),
    };
    format!(
        "stats: {tablet}bloom_filtered={bloom_filtered} bloom_passed={bloom_passed} \
         pruned={pruned} pruning_read={pruning_read}"
    )
}

/// A stored key in notation (`<path> @<T>`), or, for the engine's own metadata (the
/// flushed frontier, the history cutoff), `meta:<name>`.
fn format_raw_key(key: &[u8]) -> String {
    match SubDocKey::decode(key) {
        Ok(key) => format!("{} @{}", format_path(&key.path, None), key.doc_ht),
        Err(_) => match key.split_first() {
            Some((1, name)) if name.iter().all(u8::is_ascii_graphic) => {
                format!("meta:{}", String::from_utf8_lossy(name))
            }
            _ => format!("meta:{}", crate::encoding::hex(key)),
        },
    }
}

/// A `log` line for one segment of a tablet.
pub fn format_segment(id: &TabletId, s: &SegmentInfo) -> String {
    let tablet = id.line_prefix();
    format!("log: {tablet}segment={} after={} last={} bytes={}", s.seq, s.prev, s.last, s.bytes)
}

/// A `get` line: `<path> @<T> => <document>` or `=> <none>`.
pub fn format_get(path: &DocPath, ht: HybridTime, doc: Option<&crate::Document>) -> String {
    match doc {
        Some(doc) => format!("{path} @{ht} => {doc}"),
        None => format!("{path} @{ht} => <none>"),
    }
}

/// One `dump` line: `<path> @<T>[.<logical>][w<id>] -> <value>[ ttl=<dur>]`. `table`: the
/// CQL table the entry belongs to (its packed rows decode with its packings); `names`:
/// print its column names instead of `col(N)`.
pub fn format_entry(
    key: &SubDocKey,
    value: &Value,
    table: Option<&CqlTable>,
    names: bool,
) -> String {
    let names = table.filter(|_| names);
    let mut line = format_path(&key.path, names);
    write!(line, " @{} -> ", key.doc_ht).expect("write to String");
    match &value.kind {
        ValueKind::Object => line.push_str("{}"),
        ValueKind::Tombstone => line.push_str("DEL"),
        ValueKind::Primitive(p) => write!(line, "{p}").expect("write to String"),
        ValueKind::TtlOnly { object: true } => line.push_str("TTL {}"),
        ValueKind::TtlOnly { object: false } => line.push_str("TTL \"\""),
        ValueKind::PackedRow(body) => line.push_str(&format_packed(body, value.ttl, table, names)),
        // `DocDb::dump` hands entity rows over with their columns, as packed rows.
        ValueKind::EntityRow(version) => write!(line, "entity(schema={version})").expect("write"),
    }
    line.push_str(&format_ttl(value.ttl));
    line
}

/// ` ttl=<dur>` for a stored TTL, `""` for none.
fn format_ttl(ttl: Ttl) -> String {
    match ttl {
        Ttl::Inherit => String::new(),
        Ttl::Never => " ttl=0".into(),
        Ttl::Ms(ms) => format!(" ttl={}", format_duration_us(ms.saturating_mul(1000))),
    }
}

/// A packed row as `dump` prints it: `packed(schema=<v>) {col(10): <value>, ...}`, a
/// column's TTL after its value where it differs from the row's `row_ttl`.
fn format_packed(
    body: &[u8],
    row_ttl: Ttl,
    table: Option<&CqlTable>,
    names: Option<&CqlTable>,
) -> String {
    let packings = table.map(CqlTable::packings);
    let unpacked = crate::encoding::unpack(body, 0, |v| packings.and_then(|p| p.get(v)));
    let (version, columns) = match unpacked {
        Ok(row) => row,
        Err(e) => return format!("packed(?) <{e}>"),
    };
    let cells: Vec<String> = columns
        .iter()
        .map(|(id, slot)| {
            let id = *id as i32;
            let name = names.and_then(|t| t.column_name(id)).map(str::to_owned);
            let name = name.unwrap_or_else(|| format!("col({id})"));
            let written = slot.written.map(|at| format!(" @{at}")).unwrap_or_default();
            match &slot.value {
                None => format!("{name}: null"),
                Some(v) => {
                    let ttl = if v.ttl == row_ttl { String::new() } else { format_ttl(v.ttl) };
                    let ValueKind::Primitive(p) = &v.kind else { unreachable!("unpacked") };
                    format!("{name}: {p}{written}{ttl}")
                }
            }
        })
        .collect();
    format!("packed(schema={version}) {{{}}}", cells.join(", "))
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

/// The hybrid time `at` names on a group of one: itself, or the node's clock now (plus
/// `ahead_us`; `@safe` is now: a group of one is always caught up).
fn read_time(node: &mut Node, at: At) -> HybridTime {
    match at {
        At::Ht(ht) => ht,
        At::Now { ahead_us } => node.now_ht(ahead_us),
        At::Safe => node.now_ht(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run `text` in a fresh scratch directory named for `test`: the failed commands and
    /// the output.
    fn run_in_scratch(test: &str, text: &str) -> (usize, String) {
        let dir = crate::tests::scratch_dir(test);
        let mut out = Vec::new();
        let outcome = run_script(text, &dir, Plants::NONE, &mut out).expect("run");
        let _ = std::fs::remove_dir_all(&dir);
        (outcome.failed_commands, String::from_utf8(out).expect("UTF-8"))
    }

    /// An error the script expects (`expect error: <kind>`) is not a failure; one it does
    /// not, or of another kind, is.
    #[test]
    fn an_expected_error_does_not_fail_the_script() {
        let run = |text: &str| run_in_scratch("script-expect", text).0;
        let bad_read = "get doc(\"k\";) @T1000 table=nope\n";
        assert_eq!(run(&format!("{bad_read}expect error: no_such_table\n")), 0);
        assert_eq!(run(bad_read), 1);
        // The wrong kind: the command failed, and so did the expectation.
        assert_eq!(run(&format!("{bad_read}expect error: io\n")), 2);
    }

    /// `expect restart` compares the restart's report whole, one report a tablet, and
    /// `expect absent` fails when its line is there: each failure says why and counts.
    #[test]
    fn restart_and_absent_expectations_that_do_not_hold_fail_the_script() {
        let run = |text: &str| run_in_scratch("script-expect-restart", text);
        let restarted = "set doc(\"k\";) = 1 @T1000\nrestart\n";
        let printed = "restart: flushed=0.0 replayed=1 from=1.2 to=1.2\n";
        let report = "restart flushed=0.0 replayed=1 from=1.2 to=1.2 truncated=none skipped=0 \
                      flushed_ht=T0 cutoff=T0";
        assert_eq!(run(&format!("{restarted}expect {report}\n")), (0, printed.into()));
        let other = report.replace("to=1.2", "to=1.3");
        let complaint = format!("error: line 3: expected `{other}`, got `{report}`\n");
        assert_eq!(
            run(&format!("{restarted}expect {other}\n")),
            (1, printed.to_owned() + &complaint)
        );
        let none_left =
            format!("error: line 4: expected `{report}`, but no restart report is left to check\n");
        let twice = format!("{restarted}expect {report}\nexpect {report}\n");
        assert_eq!(run(&twice), (1, printed.to_owned() + &none_left));

        let read = "set doc(\"k\";) = 1 @T1000\nget doc(\"k\";) @T2000\n";
        let got = "doc(0x559d: \"k\";) @T2000 => 1";
        let elsewhere = got.replace("=> 1", "=> 2");
        assert_eq!(run(&format!("{read}expect absent {elsewhere}\n")), (0, format!("{got}\n")));
        let complaint =
            format!("error: line 3: expected `absent {got}`, got it as output line 1\n");
        assert_eq!(
            run(&format!("{read}expect absent {got}\n")),
            (1, format!("{got}\n{complaint}"))
        );
    }

    /// `expect` lines take the previous command's output lines in turn: the same lines
    /// out of order fail, each saying which it got.
    #[test]
    fn expect_lines_take_the_output_in_turn() {
        let run = |expects: [&str; 2]| {
            let text = format!(
                "set doc(\"k\";) = 1 @T1000\nset doc(\"j\";) = 2 @T1000\ndump\n\
                 expect {}\nexpect {}\n",
                expects[0], expects[1]
            );
            run_in_scratch("script-expect-turn", &text)
        };
        let j = "doc(0x071f: \"j\";) @T1000 -> 2";
        let k = "doc(0x559d: \"k\";) @T1000 -> 1";
        let dumped = format!("{j}\n{k}\n");
        assert_eq!(run([j, k]), (0, dumped.clone()));
        let complaints = format!(
            "error: line 4: expected `{k}`, got `{j}`\nerror: line 5: expected `{j}`, got `{k}`\n"
        );
        assert_eq!(run([k, j]), (2, dumped + &complaints));
    }

    /// `dump raw` names the engine's metadata keys by name, and shows any other key that
    /// is no document key (a damaged one) as hex, control bytes and all.
    #[test]
    fn a_raw_key_that_is_no_document_key_prints_as_a_name_or_hex() {
        assert_eq!(format_raw_key(b"\x01flushed"), "meta:flushed");
        assert_eq!(format_raw_key(b"\x01a\nb"), "meta:01610a62");
        assert_eq!(format_raw_key(b"\x01\xff"), "meta:01ff");
        assert_eq!(format_raw_key(b"\x09x"), "meta:0978");
    }

    /// A `#` starts a comment outside quotes only; an escaped `"` does not end a string.
    #[test]
    fn a_comment_starts_at_a_hash_outside_quotes() {
        let cases = [
            (r#"set doc("a#b";) = 1 @T1 # note"#, r#"set doc("a#b";) = 1 @T1 "#),
            ("get doc('x#y';) # c", "get doc('x#y';) "),
            (r##"set doc("a\"#b";) = 1 # c"##, r##"set doc("a\"#b";) = 1 "##),
            (r#"dump # "quoted""#, "dump "),
            ("# all comment", ""),
        ];
        for (line, kept) in cases {
            assert_eq!(strip_comment(line), kept, "{line}");
        }
    }

    /// A script whose tablet cannot be created (its directory is under a file) fails: the
    /// command that needed it prints one error naming the path, and the outcome counts it.
    #[test]
    fn a_tablet_that_cannot_be_created_fails_the_script() {
        let name = format!("docsim-script-{}-a-file", std::process::id());
        let file = std::env::temp_dir().join(name);
        std::fs::write(&file, b"a file where a directory should be").expect("write");
        let mut out = Vec::new();
        let text = "set doc(\"k\";) = 1 @T1000\n";
        let outcome = run_script(text, &file.join("db"), Plants::NONE, &mut out).expect("run");
        let _ = std::fs::remove_file(&file);
        let out = String::from_utf8(out).expect("UTF-8");
        assert_eq!((outcome.failed_commands, outcome.ok()), (1, false), "{out}");
        let expected = format!("error: cannot create {}/db/docs: Not a directory", file.display());
        assert!(out.starts_with(&expected) && out.lines().count() == 1, "{out}");
    }
}
