//! docscript commands: one per line, parsed with line/column errors and printed back as
//! the same text (reproducers and traces are docscript).

use crate::doc_write::{DocWrite, MarkerMode, WriteKind};
use crate::document::Document;
use crate::encoding::DocPath;
use crate::hybrid_time::HybridTime;
use crate::notation::{format_duration_us, PResult, Parser};
use crate::replica::CrashPoint;
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
    /// A document write (`set`, `extend`, `obj`, `del`) at one hybrid time.
    Write { write: DocWrite, ht: HybridTime },
    /// `batch @T { ...; ... }`: one write batch.
    Batch { ht: HybridTime, writes: Vec<DocWrite> },
    /// `default_ttl <dur>` (microseconds) or `default_ttl none`.
    DefaultTtl(Option<u64>),
    /// `get <path> @T`.
    Get { path: DocPath, ht: HybridTime },
    /// `dump`, `dump names`, `dump raw`.
    Dump(DumpStyle),
    /// `flush`.
    Flush,
    /// `compact [minor] cutoff=T`.
    Compact { cutoff: HybridTime, minor: bool },
    /// `crash [torn]` (power loss now: `at` is `None`), or `crash at <point> [torn]` (a
    /// docsim extension: power loss at that stage of the next write, or after the next
    /// flush). `torn` keeps the first sector boundary of each file's unsynced tail,
    /// tearing the last append.
    Crash { at: Option<CrashPoint>, torn: bool },
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
            Command::Get { path, ht: p.hybrid_time()? }
        }
        "dump" => Command::Dump(match p.word() {
            None => DumpStyle::Plain,
            Some("names") => DumpStyle::Names,
            Some("raw") => DumpStyle::Raw,
            Some(other) => return Err(p.error(format!("unknown dump style `{other}`"))),
        }),
        "flush" => Command::Flush,
        "compact" => parse_compact(&mut p)?,
        "expect" => Command::Expect(p.take_rest()),
        "crash" => parse_crash(&mut p)?,
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
    if !p.eat_word("cutoff") {
        return Err(p.error(format!("expected `cutoff=`, found {}", p.found())));
    }
    p.expect("=")?;
    Ok(Command::Compact { cutoff: p.hybrid_time()?, minor })
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
    Ok(Command::Batch { ht, writes })
}

fn parse_crash(p: &mut Parser<'_>) -> PResult<Command> {
    let mut at = None;
    if p.eat_word("at") {
        p.skip_ws();
        let pos = p.pos();
        let mut name = p.word().unwrap_or_default().to_owned();
        while p.rest().starts_with('-') {
            p.expect("-")?;
            name = format!("{name}-{}", p.word().unwrap_or_default());
        }
        at = match CrashPoint::from_name(&name) {
            Some(point) => Some(point),
            None => {
                let known = "after-append, after-sync, after-apply or after-flush";
                return Err(p.error_at(pos, format!("expected a crash stage ({known})")));
            }
        };
    }
    let torn = p.eat_word("torn");
    Ok(Command::Crash { at, torn })
}

impl fmt::Display for DocWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            WriteKind::Set(doc) => write!(f, "set {} = {doc}", self.path),
            WriteKind::Extend(doc) => write!(f, "extend {} = {doc}", self.path),
            WriteKind::Obj => write!(f, "obj {}", self.path),
            WriteKind::Del => write!(f, "del {}", self.path),
        }
    }
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
            Command::Write { write, ht } => {
                write!(f, "{write} @{ht}")?;
                write_ttl(f, write.ttl_us)
            }
            Command::Batch { ht, writes } => {
                write!(f, "batch @{ht} {{ ")?;
                for (i, w) in writes.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{w}")?;
                    write_ttl(f, w.ttl_us)?;
                }
                f.write_str(" }")
            }
            Command::DefaultTtl(None) => f.write_str("default_ttl none"),
            Command::DefaultTtl(Some(us)) => write!(f, "default_ttl {}", format_duration_us(*us)),
            Command::Get { path, ht } => write!(f, "get {path} @{ht}"),
            Command::Dump(DumpStyle::Plain) => f.write_str("dump"),
            Command::Dump(DumpStyle::Names) => f.write_str("dump names"),
            Command::Dump(DumpStyle::Raw) => f.write_str("dump raw"),
            Command::Flush => f.write_str("flush"),
            Command::Compact { cutoff, minor: false } => write!(f, "compact cutoff={cutoff}"),
            Command::Compact { cutoff, minor: true } => write!(f, "compact minor cutoff={cutoff}"),
            Command::Crash { at, torn } => {
                f.write_str("crash")?;
                if let Some(point) = at {
                    write!(f, " at {point}")?;
                }
                if *torn {
                    f.write_str(" torn")?;
                }
                Ok(())
            }
            Command::Restart => f.write_str("restart"),
            Command::Log => f.write_str("log"),
            Command::Table(stmt) => write!(f, "table {stmt}"),
            Command::Cql { ht, statement } => write!(f, "cql @{ht} {statement}"),
            Command::Redis { ht, command } => write!(f, "redis @{ht} {command}"),
            Command::Expect(line) => write!(f, "expect {line}"),
        }
    }
}
