//! Redis on DocDB: each key is the document `doc("k";)`. A string is a primitive at the
//! document root; a hash or set is an object (an init marker at the root) whose subkeys are
//! the fields or members (set members map to null). Redis writes always use required
//! markers. A TTL (EX/PX/EXPIRE) is stored at the root and covers the whole document.

use crate::doc_write::{build_entries, Scanned};
use crate::document::Document;
use crate::encoding::{DocKey, DocPath, KeyEntry, Primitive};
use crate::error::{errinput, Error, Result};
use crate::hybrid_time::HybridTime;
use crate::script::{DocWrite, MarkerMode, WriteKind};
use crate::tablet::Tablet;
use std::collections::BTreeMap;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// A Redis reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A status reply (`OK`).
    Status(String),
    /// A bulk string, or `(nil)`.
    Bulk(Option<String>),
    /// An integer.
    Integer(i64),
    /// An array of bulk strings.
    Array(Vec<String>),
}

impl std::fmt::Display for Reply {
    /// As redis-cli prints it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let quoted = |s: &str| Primitive::String(s.to_owned()).to_string();
        match self {
            Reply::Status(s) => f.write_str(s),
            Reply::Bulk(None) => f.write_str("(nil)"),
            Reply::Bulk(Some(s)) => f.write_str(&quoted(s)),
            Reply::Integer(n) => write!(f, "(integer) {n}"),
            Reply::Array(items) if items.is_empty() => f.write_str("(empty array)"),
            Reply::Array(items) => {
                let lines: Vec<String> = items
                    .iter()
                    .enumerate()
                    .map(|(i, s)| format!("{}) {}", i + 1, quoted(s)))
                    .collect();
                f.write_str(&lines.join("\n"))
            }
        }
    }
}

fn text(p: &Primitive) -> String {
    match p {
        Primitive::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Run one Redis command at `ht`.
pub fn run(tablet: &mut Tablet, ht: HybridTime, command: &str) -> Result<Reply> {
    let args = split_args(command)?;
    let Some((name, args)) = args.split_first() else { return errinput!("empty Redis command") };
    let name = name.to_ascii_uppercase();
    let mut at = At { tablet, ht, scanned: Scanned::default() };
    let arity = |min: usize, pairs: bool| -> Result<()> {
        if args.len() < min || (pairs && (args.len() - 1) % 2 != 0) {
            return errinput!(
                "ERR wrong number of arguments for '{}' command",
                name.to_lowercase()
            );
        }
        Ok(())
    };
    let reply = match name.as_str() {
        "SET" => {
            arity(2, false)?;
            let ttl_us = parse_set_options(&args[2..])?;
            let write = DocWrite { path: root(&args[0]), kind: set_value(&args[1]), ttl_us };
            at.apply(vec![write])?;
            Reply::Status("OK".into())
        }
        "GET" => {
            arity(1, false)?;
            match at.get(&args[0])? {
                None => Reply::Bulk(None),
                Some(Document::Primitive(p)) => Reply::Bulk(Some(text(&p))),
                Some(Document::Object(_)) => return errinput!("{WRONGTYPE}"),
            }
        }
        "DEL" => {
            arity(1, false)?;
            let mut writes = Vec::new();
            for key in args {
                if at.get(key)?.is_some() {
                    writes.push(DocWrite { path: root(key), kind: WriteKind::Del, ttl_us: None });
                }
            }
            let n = writes.len();
            at.apply(writes)?;
            Reply::Integer(n as i64)
        }
        "EXPIRE" => {
            arity(2, false)?;
            expire(&mut at, &args[0], &args[1])?
        }
        "HSET" | "HMSET" => {
            arity(3, true)?;
            let fields: Vec<(&String, &String)> =
                args[1..].chunks(2).map(|pair| (&pair[0], &pair[1])).collect();
            let existing = at.object(&args[0])?;
            let added: std::collections::BTreeSet<&String> = fields
                .iter()
                .map(|(f, _)| *f)
                .filter(|f| !existing.contains_key(&member(f)))
                .collect();
            let added = added.len();
            let writes = fields
                .iter()
                .map(|(f, v)| DocWrite {
                    path: field(&args[0], f),
                    kind: set_value(v),
                    ttl_us: None,
                })
                .collect();
            at.apply(writes)?;
            if name == "HMSET" {
                Reply::Status("OK".into())
            } else {
                Reply::Integer(added as i64)
            }
        }
        "HGET" => {
            arity(2, false)?;
            match at.object(&args[0])?.get(&member(&args[1])) {
                Some(Document::Primitive(p)) => Reply::Bulk(Some(text(p))),
                _ => Reply::Bulk(None),
            }
        }
        "HDEL" | "SREM" => {
            arity(2, false)?;
            let existing = at.object(&args[0])?;
            let writes: Vec<DocWrite> = args[1..]
                .iter()
                .filter(|m| existing.contains_key(&member(m)))
                .map(|m| DocWrite { path: field(&args[0], m), kind: WriteKind::Del, ttl_us: None })
                .collect();
            let n = writes.len();
            at.apply(writes)?;
            Reply::Integer(n as i64)
        }
        "HGETALL" => {
            arity(1, false)?;
            let map = at.object(&args[0])?;
            Reply::Array(map.iter().flat_map(|(k, v)| [text(&k.value), document_text(v)]).collect())
        }
        "SADD" => {
            arity(2, false)?;
            let existing = at.object(&args[0])?;
            let fresh: std::collections::BTreeSet<&String> =
                args[1..].iter().filter(|m| !existing.contains_key(&member(m))).collect();
            let writes = args[1..]
                .iter()
                .map(|m| DocWrite {
                    path: field(&args[0], m),
                    kind: WriteKind::Set(Document::Primitive(Primitive::Null)),
                    ttl_us: None,
                })
                .collect();
            at.apply(writes)?;
            Reply::Integer(fresh.len() as i64)
        }
        "SMEMBERS" => {
            arity(1, false)?;
            let map = at.object(&args[0])?;
            Reply::Array(map.keys().map(|k| text(&k.value)).collect())
        }
        other => return errinput!("ERR unknown command '{}'", other.to_lowercase()),
    };
    Ok(reply)
}

fn document_text(doc: &Document) -> String {
    match doc {
        Document::Primitive(p) => text(p),
        other => other.to_string(),
    }
}

fn root(key: &str) -> DocPath {
    let doc = DocKey::new(vec![KeyEntry::asc(Primitive::String(key.to_owned()))], vec![]);
    DocPath::new(doc, vec![])
}

fn member(m: &str) -> KeyEntry {
    KeyEntry::asc(Primitive::String(m.to_owned()))
}

fn field(key: &str, f: &str) -> DocPath {
    root(key).child(member(f))
}

fn set_value(v: &str) -> WriteKind {
    WriteKind::Set(Document::Primitive(Primitive::String(v.to_owned())))
}

/// One command's view of the keyspace: its reads and the write that follows them are all
/// at `ht`, so each key is scanned once and the write's marker probes reuse the scan.
struct At<'a> {
    tablet: &'a mut Tablet,
    ht: HybridTime,
    scanned: Scanned,
}

impl At<'_> {
    /// The value of `key`.
    fn get(&mut self, key: &str) -> Result<Option<Document>> {
        self.tablet.get_scanned(&root(key), self.ht, &mut self.scanned)
    }

    /// The fields or members of a hash or set key (empty if the key does not exist).
    fn object(&mut self, key: &str) -> Result<BTreeMap<KeyEntry, Document>> {
        match self.get(key)? {
            None => Ok(BTreeMap::new()),
            Some(Document::Object(map)) => Ok(map),
            Some(Document::Primitive(_)) => errinput!("{WRONGTYPE}"),
        }
    }

    /// Write `writes` as one batch, with required markers.
    fn apply(&mut self, writes: Vec<DocWrite>) -> Result<()> {
        let (db, ttl_ms) = (self.tablet.db(), self.tablet.table_ttl_ms());
        let mode = MarkerMode::Required;
        let entries = build_entries(db, &writes, self.ht, mode, ttl_ms, &mut self.scanned)?;
        self.tablet.write(&entries.iter().collect(), self.ht)
    }
}

/// `EX s` / `PX ms` after `SET k v`: the TTL in microseconds.
fn parse_set_options(options: &[String]) -> Result<Option<u64>> {
    match options {
        [] => Ok(None),
        [unit, n] => {
            let n: u64 = match n.parse() {
                Ok(n) if n > 0 => n,
                _ => return errinput!("ERR invalid expire time in 'set' command"),
            };
            match unit.to_ascii_uppercase().as_str() {
                "EX" => Ok(Some(n.saturating_mul(1_000_000))),
                "PX" => Ok(Some(n.saturating_mul(1_000))),
                _ => errinput!("ERR syntax error"),
            }
        }
        _ => errinput!("ERR syntax error"),
    }
}

/// EXPIRE rewrites the key as of now with the TTL: the value (or the marker and every
/// field) again, so the TTL counts from now and covers the whole document.
fn expire(at: &mut At, key: &str, secs: &str) -> Result<Reply> {
    let Ok(secs) = secs.parse::<u64>() else {
        return errinput!("ERR value is not an integer or out of range");
    };
    let Some(doc) = at.get(key)? else { return Ok(Reply::Integer(0)) };
    let ttl_us = Some(secs.max(1).saturating_mul(1_000_000));
    let write = DocWrite { path: root(key), kind: WriteKind::Set(doc), ttl_us };
    at.apply(vec![write])?;
    Ok(Reply::Integer(1))
}

/// Split a command line into arguments; `"double quoted"` arguments may hold spaces and
/// JSON-style escapes.
fn split_args(command: &str) -> Result<Vec<String>> {
    let mut args = Vec::new();
    let mut rest = command.trim_start();
    while !rest.is_empty() {
        if rest.starts_with('"') {
            let mut p = crate::notation::Parser::new(rest, 1);
            args.push(p.string().map_err(|e| Error::InvalidInput(format!("Redis: {e}")))?);
            rest = &rest[p.pos()..];
        } else {
            let len = rest.find(char::is_whitespace).unwrap_or(rest.len());
            args.push(rest[..len].to_owned());
            rest = &rest[len..];
        }
        rest = rest.trim_start();
    }
    Ok(args)
}
