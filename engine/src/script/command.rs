//! docscript commands: one per line, parsed with line/column errors and printed back as
//! the same text (reproducers and traces are docscript).

use crate::crash::CrashPoint;
use crate::disk::{IoTarget, SimDisk};
use crate::doc_write::{DocWrite, MarkerMode, WriteKind};
use crate::document::Document;
use crate::encoding::DocPath;
use crate::error::Error;
use crate::hybrid_time::HybridTime;
use crate::notation::{format_duration_us, PResult, Parser};
use std::fmt;

/// Which `dump`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpStyle {
    /// Column ids as `col(N)`.
    Plain,
    /// Declared column names.
    Names,
    /// With the hex of each key and value.
    Raw,
}

/// One docscript command.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// `markers optional|required`.
    Markers(MarkerMode),
    /// `layout packed|declared` (docsim extension): how the CQL tables declared after it
    /// store their rows (`packed`: every one packs, as `WITH packed_rows = true`).
    Layout(crate::db::Layout),
    /// A document write (`set`, `extend`, `obj`, `del`) at one hybrid time.
    Write { write: DocWrite, ht: HybridTime },
    /// `batch @T { ...; ... }`: one write batch.
    Batch { ht: HybridTime, writes: Vec<DocWrite> },
    /// `default_ttl <dur>` (microseconds) or `default_ttl none`.
    DefaultTtl(Option<u64>),
    /// `get <path> @T [table=<name>]`: from the document tablet, or from a CQL table's.
    Get { path: DocPath, ht: HybridTime, table: Option<String> },
    /// `dump`, `dump names`, `dump raw`.
    Dump(DumpStyle),
    /// `flush`.
    Flush,
    /// `compact [minor] cutoff=T`, or (docsim extension) `compact minor
    /// files=<first>..<last> cutoff=T [table=<name>]`: a minor compaction of that run of one
    /// tablet's SST files, numbered oldest first from 0 as `files` prints them.
    Compact { cutoff: HybridTime, minor: bool, run: Option<FileRun> },
    /// `files` (docsim extension): one line per SST file of each tablet.
    Files,
    /// `crash [torn[=<k>]]` (power loss now: `at` is `None`), or `crash at <point>
    /// [torn[=<k>]]` (a docsim extension: power loss at that stage of the next write, or
    /// after the next flush). `torn=k` keeps each file's unsynced tail up to its `k`-th
    /// sector boundary (`torn` is `torn=0`, the first), tearing the last append.
    Crash { at: Option<CrashPoint>, tear: Option<u32> },
    /// `fault ...` (docsim extension): a disk fault, injected exactly.
    Fault(FaultCommand),
    /// `restart`.
    Restart,
    /// `log` (a docsim extension): one line per Raft log segment of each tablet.
    Log,
    /// `table <CREATE TABLE ...>`.
    Table(String),
    /// `cql @T <statement>`.
    Cql { ht: HybridTime, statement: String },
    /// `redis @T <command>`.
    Redis { ht: HybridTime, command: String },
    /// `expect <line>` (docsim extension): the next output line of the command before it
    /// must be exactly `<line>`; `expect error: <kind>` requires the command to have failed
    /// with that kind of error (`snapshot_too_old`, ...), `expect error` with any.
    /// Reproducers use it to fail by themselves.
    Expect(String),
}

/// A run of SST files by age, `files=<first>..<last>`, of one tablet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRun {
    /// The oldest and the newest file of the run (inclusive).
    pub first: usize,
    pub last: usize,
    /// The CQL table whose tablet it is (`None`: the document tablet).
    pub table: Option<String>,
}

/// A docscript `fault` command: one disk fault, exact so that reproducers replay it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultCommand {
    /// `fault io-error next-append|next-sync`: the next append (or sync) of any log file
    /// fails with an I/O error, once.
    IoError(IoTarget),
    /// `fault disk-full <bytes>`: the disk holds only `bytes` more than it holds now.
    DiskFull { free_bytes: u64 },
    /// `fault clear`: disarm an I/O error not yet fired and lift the disk's capacity.
    Clear,
    /// `fault flip <file> <offset> bit=<b>`: flip one bit of a log file's synced data.
    Flip { file: String, offset: usize, bit: u8 },
}

/// The line without its `#` comment (a `#` inside a quoted string is text).
pub fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match quote {
            Some(_) if escaped => escaped = false,
            Some(q) if c == '\\' && q == '"' => escaped = true,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' => return &line[..i],
            None => {}
        }
    }
    line
}

/// Parse one line (comment already stripped); `None` for a blank line.
pub fn parse_line(text: &str, line: usize) -> PResult<Option<Command>> {
    let mut p = Parser::new(text, line);
    if p.at_end() {
        return Ok(None);
    }
    let start = p.pos();
    let Some(word) = p.word() else {
        return Err(p.error(format!("expected a command, found {}", p.found())));
    };
    let command = match word {
        "markers" => Command::Markers(match p.word() {
            Some("optional") => MarkerMode::Optional,
            Some("required") => MarkerMode::Required,
            _ => return Err(p.error("expected `optional` or `required`")),
        }),
        "layout" => Command::Layout(match p.word() {
            Some("packed") => crate::db::Layout::Packed,
            Some("declared") => crate::db::Layout::Declared,
            Some("unpacked") => crate::db::Layout::Unpacked,
            Some("entity") => crate::db::Layout::Entity,
            _ => return Err(p.error("expected `packed`, `entity`, `declared` or `unpacked`")),
        }),
        "set" | "extend" | "obj" | "del" => {
            let write = parse_write(&mut p, word, true)?;
            p.expect("@")?;
            let ht = p.hybrid_time()?;
            let write = parse_ttl(&mut p, write)?;
            Command::Write { write, ht }
        }
        "batch" => parse_batch(&mut p)?,
        "default_ttl" => {
            Command::DefaultTtl(if p.eat_word("none") { None } else { Some(p.duration_us()?) })
        }
        "get" => {
            let path = p.path()?;
            p.expect("@")?;
            let ht = p.hybrid_time()?;
            let table = if p.eat_word("table") {
                p.expect("=")?;
                let Some(name) = p.word() else {
                    return Err(p.error(format!("expected a table name, found {}", p.found())));
                };
                Some(name.to_owned())
            } else {
                None
            };
            Command::Get { path, ht, table }
        }
        "dump" => Command::Dump(match p.word() {
            None => DumpStyle::Plain,
            Some("names") => DumpStyle::Names,
            Some("raw") => DumpStyle::Raw,
            Some(other) => return Err(p.error(format!("unknown dump style `{other}`"))),
        }),
        "flush" => Command::Flush,
        "files" => Command::Files,
        "compact" => parse_compact(&mut p)?,
        "expect" => Command::Expect(p.take_rest()),
        "crash" => parse_crash(&mut p)?,
        "fault" => Command::Fault(parse_fault(&mut p)?),
        "restart" => Command::Restart,
        "log" => Command::Log,
        "table" => Command::Table(p.take_rest()),
        "cql" | "redis" => parse_statement_line(&mut p, word)?,
        other => return Err(p.error_at(start, format!("unknown command `{other}`"))),
    };
    p.finish()?;
    Ok(Some(command))
}

/// `compact [minor] cutoff=T`.
fn parse_compact(p: &mut Parser<'_>) -> PResult<Command> {
    let minor = p.eat_word("minor");
    let mut run = None;
    if minor && p.eat_word("files") {
        p.expect("=")?;
        let first = index(p)?;
        p.expect("..")?;
        let last = index(p)?;
        run = Some(FileRun { first, last, table: None });
    }
    if !p.eat_word("cutoff") {
        return Err(p.error(format!("expected `cutoff=`, found {}", p.found())));
    }
    p.expect("=")?;
    let cutoff = p.hybrid_time()?;
    if let Some(run) = run.as_mut().filter(|_| p.eat_word("table")) {
        p.expect("=")?;
        let name = p.word().ok_or_else(|| p.error("expected a table name"))?;
        run.table = Some(name.to_owned());
    }
    Ok(Command::Compact { cutoff, minor, run })
}

/// A file index.
fn index(p: &mut Parser<'_>) -> PResult<usize> {
    let at = p.pos();
    let n = p.unsigned()?;
    usize::try_from(n).map_err(|_| p.error_at(at, format!("file index {n} is out of range")))
}

/// `cql @T <statement>` or `redis @T <command>`: the text is its own language's, parsed
/// when it runs.
fn parse_statement_line(p: &mut Parser<'_>, word: &str) -> PResult<Command> {
    p.expect("@")?;
    let ht = p.hybrid_time()?;
    if p.rest().trim().is_empty() {
        return Err(p.error(format!("expected a {word} statement")));
    }
    let rest = p.take_rest();
    Ok(match word {
        "cql" => Command::Cql { ht, statement: rest },
        _ => Command::Redis { ht, command: rest },
    })
}

fn parse_write(p: &mut Parser<'_>, word: &str, _top: bool) -> PResult<DocWrite> {
    let path = p.path()?;
    let kind = match word {
        "set" | "extend" => {
            p.expect("=")?;
            let at = p.pos();
            let doc = p.document()?;
            if word == "set" {
                WriteKind::Set(doc)
            } else if matches!(doc, Document::Object(_)) {
                WriteKind::Extend(doc)
            } else {
                return Err(p.error_at(at, "extend needs an object literal `{...}`"));
            }
        }
        "obj" => WriteKind::Obj,
        _ => WriteKind::Del,
    };
    Ok(DocWrite { path, kind, ttl_us: None })
}

fn parse_ttl(p: &mut Parser<'_>, mut write: DocWrite) -> PResult<DocWrite> {
    if p.eat_word("ttl") {
        let at = p.pos();
        p.expect("=")?;
        let ttl_us = p.duration_us()?;
        if ttl_us % 1000 != 0 {
            return Err(p.error_at(at, "a TTL is stored in whole milliseconds"));
        }
        if write.kind == WriteKind::Del {
            return Err(p.error_at(at, "a tombstone carries no TTL"));
        }
        write.ttl_us = Some(ttl_us);
    }
    Ok(write)
}

fn parse_batch(p: &mut Parser<'_>) -> PResult<Command> {
    p.expect("@")?;
    let ht = p.hybrid_time()?;
    let writes = parse_batch_body(p)?;
    Ok(Command::Batch { ht, writes })
}

/// The writes of a command without its `@T` (replicated docscript, where the leader picks
/// the time): `set|extend|obj|del <path> ... [ttl=<dur>]`, or `batch { ...; ... }`, the
/// command word already read as `word`.
pub fn parse_writes(p: &mut Parser<'_>, word: &str) -> PResult<Vec<DocWrite>> {
    match word {
        "batch" => parse_batch_body(p),
        _ => {
            let write = parse_write(p, word, true)?;
            Ok(vec![parse_ttl(p, write)?])
        }
    }
}

/// `writes` as [`parse_writes`] reads them back.
pub fn format_writes(writes: &[DocWrite]) -> String {
    struct Writes<'a>(&'a [DocWrite]);
    impl fmt::Display for Writes<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self.0 {
                [one] => {
                    write!(f, "{one}")?;
                    write_ttl(f, one.ttl_us)
                }
                writes => {
                    f.write_str("batch ")?;
                    write_batch_body(f, writes)
                }
            }
        }
    }
    Writes(writes).to_string()
}

fn parse_batch_body(p: &mut Parser<'_>) -> PResult<Vec<DocWrite>> {
    p.expect("{")?;
    let mut writes = Vec::new();
    while !p.eat("}") {
        let at = p.pos();
        let word = p.word().unwrap_or_default();
        if !matches!(word, "set" | "extend" | "obj" | "del") {
            return Err(p.error_at(at, "expected set, extend, obj or del inside a batch"));
        }
        let write = parse_write(p, word, false)?;
        writes.push(parse_ttl(p, write)?);
        if !p.eat(";") {
            p.expect("}")?;
            break;
        }
    }
    Ok(writes)
}

fn parse_crash(p: &mut Parser<'_>) -> PResult<Command> {
    let mut at = None;
    if p.eat_word("at") {
        p.skip_ws();
        let pos = p.pos();
        let name = hyphenated(p);
        at = match CrashPoint::from_name(&name) {
            Some(point) => Some(point),
            None => {
                let known = "after-append, after-sync, after-apply or after-flush";
                return Err(p.error_at(pos, format!("expected a crash stage ({known})")));
            }
        };
    }
    let tear =
        if p.eat_word("torn") { Some(if p.eat("=") { sector_count(p)? } else { 0 }) } else { None };
    Ok(Command::Crash { at, tear })
}

fn sector_count(p: &mut Parser<'_>) -> PResult<u32> {
    let at = p.pos();
    let k = p.unsigned()?;
    u32::try_from(k).map_err(|_| p.error_at(at, format!("sector {k} is out of range")))
}

/// A word that may hold hyphens (`next-append`).
fn hyphenated(p: &mut Parser<'_>) -> String {
    let mut name = p.word().unwrap_or_default().to_owned();
    while p.rest().starts_with('-') {
        p.eat("-");
        name = format!("{name}-{}", p.word().unwrap_or_default());
    }
    name
}

fn parse_fault(p: &mut Parser<'_>) -> PResult<FaultCommand> {
    p.skip_ws();
    let at = p.pos();
    match hyphenated(p).as_str() {
        "io-error" => {
            p.skip_ws();
            let at = p.pos();
            match hyphenated(p).as_str() {
                "next-append" => Ok(FaultCommand::IoError(IoTarget::NextAppend)),
                "next-sync" => Ok(FaultCommand::IoError(IoTarget::NextSync)),
                _ => Err(p.error_at(at, "expected `next-append` or `next-sync`")),
            }
        }
        "disk-full" => Ok(FaultCommand::DiskFull { free_bytes: p.unsigned()? }),
        "clear" => Ok(FaultCommand::Clear),
        "flip" => {
            let Some(file) = p.token() else {
                return Err(p.error(format!("expected a log file name, found {}", p.found())));
            };
            let file = file.to_owned();
            let offset_at = p.pos();
            let offset = usize::try_from(p.unsigned()?)
                .map_err(|_| p.error_at(offset_at, "offset out of range"))?;
            p.expect("bit")?;
            p.expect("=")?;
            let bit_at = p.pos();
            let bit = p.unsigned()?;
            let bit = u8::try_from(bit).ok().filter(|b| *b < 8);
            let bit = bit.ok_or_else(|| p.error_at(bit_at, "a bit is 0 to 7"))?;
            Ok(FaultCommand::Flip { file, offset, bit })
        }
        _ => Err(p.error_at(at, "expected a fault: io-error, disk-full, clear or flip")),
    }
}

impl FaultCommand {
    /// Inject the fault into `disk`.
    pub fn inject(&self, disk: &SimDisk) -> Result<(), Error> {
        match self {
            FaultCommand::IoError(target) => disk.arm_io_error(*target),
            FaultCommand::DiskFull { free_bytes } => disk.set_free_bytes(Some(*free_bytes)),
            FaultCommand::Clear => disk.clear_faults(),
            FaultCommand::Flip { file, offset, bit } => disk.flip(file, *offset, *bit)?,
        }
        Ok(())
    }
}

impl fmt::Display for FaultCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultCommand::IoError(IoTarget::NextAppend) => f.write_str("io-error next-append"),
            FaultCommand::IoError(IoTarget::NextSync) => f.write_str("io-error next-sync"),
            FaultCommand::DiskFull { free_bytes } => write!(f, "disk-full {free_bytes}"),
            FaultCommand::Clear => f.write_str("clear"),
            FaultCommand::Flip { file, offset, bit } => write!(f, "flip {file} {offset} bit={bit}"),
        }
    }
}

impl fmt::Display for DocWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            WriteKind::Set(doc) => write!(f, "set {} = {doc}", self.path),
            WriteKind::Extend(doc) => write!(f, "extend {} = {doc}", self.path),
            WriteKind::Obj => write!(f, "obj {}", self.path),
            WriteKind::Del => write!(f, "del {}", self.path),
            // Only Redis EXPIRE writes one; docscript has no command for it.
            WriteKind::TtlOnly { .. } => write!(f, "ttl-only {}", self.path),
        }
    }
}

/// `{ <write>; <write> }`.
fn write_batch_body(f: &mut fmt::Formatter<'_>, writes: &[DocWrite]) -> fmt::Result {
    f.write_str("{ ")?;
    for (i, w) in writes.iter().enumerate() {
        if i > 0 {
            f.write_str("; ")?;
        }
        write!(f, "{w}")?;
        write_ttl(f, w.ttl_us)?;
    }
    f.write_str(" }")
}

fn write_ttl(f: &mut fmt::Formatter<'_>, ttl_us: Option<u64>) -> fmt::Result {
    match ttl_us {
        Some(us) => write!(f, " ttl={}", format_duration_us(us)),
        None => Ok(()),
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::Markers(MarkerMode::Optional) => f.write_str("markers optional"),
            Command::Markers(MarkerMode::Required) => f.write_str("markers required"),
            Command::Layout(crate::db::Layout::Packed) => f.write_str("layout packed"),
            Command::Layout(crate::db::Layout::Declared) => f.write_str("layout declared"),
            Command::Layout(crate::db::Layout::Unpacked) => f.write_str("layout unpacked"),
            Command::Layout(crate::db::Layout::Entity) => f.write_str("layout entity"),
            Command::Write { write, ht } => {
                write!(f, "{write} @{ht}")?;
                write_ttl(f, write.ttl_us)
            }
            Command::Batch { ht, writes } => {
                write!(f, "batch @{ht} ")?;
                write_batch_body(f, writes)
            }
            Command::DefaultTtl(None) => f.write_str("default_ttl none"),
            Command::DefaultTtl(Some(us)) => write!(f, "default_ttl {}", format_duration_us(*us)),
            Command::Get { path, ht, table: None } => write!(f, "get {path} @{ht}"),
            Command::Get { path, ht, table: Some(t) } => write!(f, "get {path} @{ht} table={t}"),
            Command::Dump(DumpStyle::Plain) => f.write_str("dump"),
            Command::Dump(DumpStyle::Names) => f.write_str("dump names"),
            Command::Dump(DumpStyle::Raw) => f.write_str("dump raw"),
            Command::Flush => f.write_str("flush"),
            Command::Compact { cutoff, minor: false, .. } => write!(f, "compact cutoff={cutoff}"),
            Command::Compact { cutoff, minor: true, run: None } => {
                write!(f, "compact minor cutoff={cutoff}")
            }
            Command::Compact { cutoff, minor: true, run: Some(run) } => {
                write!(f, "compact minor files={}..{} cutoff={cutoff}", run.first, run.last)?;
                match &run.table {
                    Some(table) => write!(f, " table={table}"),
                    None => Ok(()),
                }
            }
            Command::Files => f.write_str("files"),
            Command::Crash { at, tear } => {
                f.write_str("crash")?;
                if let Some(point) = at {
                    write!(f, " at {point}")?;
                }
                match tear {
                    None => Ok(()),
                    Some(0) => f.write_str(" torn"),
                    Some(k) => write!(f, " torn={k}"),
                }
            }
            Command::Fault(fault) => write!(f, "fault {fault}"),
            Command::Restart => f.write_str("restart"),
            Command::Log => f.write_str("log"),
            Command::Table(stmt) => write!(f, "table {stmt}"),
            Command::Cql { ht, statement } => write!(f, "cql @{ht} {statement}"),
            Command::Redis { ht, command } => write!(f, "redis @{ht} {command}"),
            Command::Expect(line) => write!(f, "expect {line}"),
        }
    }
}
