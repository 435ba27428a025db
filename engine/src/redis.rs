//! Redis on DocDB: each key is the document `doc("k";)`. A string is a primitive at the
//! document root; a hash or set is an object (an init marker at the root) whose subkeys are
//! the fields or members (set members map to null). Redis writes always use required
//! markers. A TTL (EX/PX/EXPIRE) is stored at the root and covers the whole document.

use crate::db::DocDb;
use crate::doc_write::{build_entries, DocWrite, MarkerMode, Scanned, WriteKind};
use crate::document::Document;
use crate::encoding::{DocKey, DocPath, KeyEntry, Primitive, Value};
use crate::error::{Error, Result};
use crate::hybrid_time::HybridTime;
use std::collections::BTreeMap;

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

/// `SET`'s expiry option, as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// `EX s`: seconds.
    Ex(u64),
    /// `PX ms`: milliseconds.
    Px(u64),
}

impl Expiry {
    fn ttl_us(self) -> u64 {
        match self {
            Expiry::Ex(s) => s.saturating_mul(1_000_000),
            Expiry::Px(ms) => ms.saturating_mul(1_000),
        }
    }
}

/// One Redis command, typed. `Display` prints it as a command line that parses back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `SET k v [EX s | PX ms]`.
    Set { key: String, value: String, expiry: Option<Expiry> },
    /// `GET k`.
    Get { key: String },
    /// `DEL k ...`: the reply counts the keys that existed.
    Del { keys: Vec<String> },
    /// `EXPIRE k s`: a signed count of seconds; `s <= 0` deletes the key.
    Expire { key: String, secs: i64 },
    /// `HSET` (or `HMSET` when `multi`, which replies `OK`).
    HSet { key: String, fields: Vec<(String, String)>, multi: bool },
    /// `HGET k f`.
    HGet { key: String, field: String },
    /// `HDEL k f ...`.
    HDel { key: String, fields: Vec<String> },
    /// `HGETALL k`.
    HGetAll { key: String },
    /// `SADD k m ...`: the reply counts the new members.
    SAdd { key: String, members: Vec<String> },
    /// `SREM k m ...`.
    SRem { key: String, members: Vec<String> },
    /// `SMEMBERS k`.
    SMembers { key: String },
}

/// A Redis command line that does not parse (the reply text redis-server would give).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SyntaxError(pub String);

fn syntax<T>(message: impl Into<String>) -> Result<T, SyntaxError> {
    Err(SyntaxError(message.into()))
}

impl Command {
    /// Parse a command line; `"double quoted"` arguments may hold spaces and JSON-style
    /// escapes.
    pub fn parse(line: &str) -> Result<Command, SyntaxError> {
        let args = split_args(line)?;
        let Some((name, args)) = args.split_first() else { return syntax("empty Redis command") };
        let name = name.to_ascii_uppercase();
        let arity = |min: usize, pairs: bool| {
            // With `pairs`: a key, then field-value pairs, so an odd count.
            if args.len() < min || (pairs && args.len() % 2 == 0) {
                let name = name.to_lowercase();
                return syntax(format!("ERR wrong number of arguments for '{name}' command"));
            }
            Ok(())
        };
        let key = || args[0].clone();
        let rest = || args[1..].to_vec();
        Ok(match name.as_str() {
            "SET" => {
                arity(2, false)?;
                let expiry = parse_set_options(&args[2..])?;
                Command::Set { key: key(), value: args[1].clone(), expiry }
            }
            "GET" => arity(1, false).map(|_| Command::Get { key: key() })?,
            "DEL" => arity(1, false).map(|_| Command::Del { keys: args.to_vec() })?,
            "EXPIRE" => {
                arity(2, false)?;
                let Ok(secs) = args[1].parse::<i64>() else {
                    return syntax("ERR value is not an integer or out of range");
                };
                Command::Expire { key: key(), secs }
            }
            "HSET" | "HMSET" => {
                arity(3, true)?;
                let fields = args[1..].chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect();
                Command::HSet { key: key(), fields, multi: name == "HMSET" }
            }
            "HGET" => {
                arity(2, false).map(|_| Command::HGet { key: key(), field: args[1].clone() })?
            }
            "HDEL" => arity(2, false).map(|_| Command::HDel { key: key(), fields: rest() })?,
            "SREM" => arity(2, false).map(|_| Command::SRem { key: key(), members: rest() })?,
            "HGETALL" => arity(1, false).map(|_| Command::HGetAll { key: key() })?,
            "SADD" => arity(2, false).map(|_| Command::SAdd { key: key(), members: rest() })?,
            "SMEMBERS" => arity(1, false).map(|_| Command::SMembers { key: key() })?,
            other => return syntax(format!("ERR unknown command '{}'", other.to_lowercase())),
        })
    }
}

/// An argument as a command line carries it: bare if it can be, else double-quoted.
fn arg(text: &str) -> String {
    let special = |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '#');
    let bare = !text.is_empty() && !text.contains(special);
    if bare {
        text.to_owned()
    } else {
        Primitive::String(text.to_owned()).to_string()
    }
}

fn args(items: &[String]) -> String {
    items.iter().map(|a| arg(a)).collect::<Vec<_>>().join(" ")
}

impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Command::Set { key, value, expiry } => {
                write!(f, "SET {} {}", arg(key), arg(value))?;
                match expiry {
                    None => Ok(()),
                    Some(Expiry::Ex(s)) => write!(f, " EX {s}"),
                    Some(Expiry::Px(ms)) => write!(f, " PX {ms}"),
                }
            }
            Command::Get { key } => write!(f, "GET {}", arg(key)),
            Command::Del { keys } => write!(f, "DEL {}", args(keys)),
            Command::Expire { key, secs } => write!(f, "EXPIRE {} {secs}", arg(key)),
            Command::HSet { key, fields, multi } => {
                let pairs: Vec<String> =
                    fields.iter().map(|(k, v)| format!("{} {}", arg(k), arg(v))).collect();
                let name = if *multi { "HMSET" } else { "HSET" };
                write!(f, "{name} {} {}", arg(key), pairs.join(" "))
            }
            Command::HGet { key, field } => write!(f, "HGET {} {}", arg(key), arg(field)),
            Command::HDel { key, fields } => write!(f, "HDEL {} {}", arg(key), args(fields)),
            Command::HGetAll { key } => write!(f, "HGETALL {}", arg(key)),
            Command::SAdd { key, members } => write!(f, "SADD {} {}", arg(key), args(members)),
            Command::SRem { key, members } => write!(f, "SREM {} {}", arg(key), args(members)),
            Command::SMembers { key } => write!(f, "SMEMBERS {}", arg(key)),
        }
    }
}

impl Command {
    /// Whether the command only reads (`GET`, `HGET`, `HGETALL`, `SMEMBERS`).
    pub fn is_read(&self) -> bool {
        matches!(
            self,
            Command::Get { .. }
                | Command::HGet { .. }
                | Command::HGetAll { .. }
                | Command::SMembers { .. }
        )
    }

    /// The document keys the command reads and writes.
    pub fn doc_keys(&self) -> Vec<DocKey> {
        match self {
            Command::Del { keys } => keys.iter().map(|k| root(k).doc_key).collect(),
            Command::Set { key, .. }
            | Command::Get { key }
            | Command::Expire { key, .. }
            | Command::HSet { key, .. }
            | Command::HGet { key, .. }
            | Command::HDel { key, .. }
            | Command::HGetAll { key }
            | Command::SAdd { key, .. }
            | Command::SRem { key, .. }
            | Command::SMembers { key } => vec![root(key).doc_key],
        }
    }

    /// The command's name, lower case (as Redis errors name it).
    fn name(&self) -> &'static str {
        match self {
            Command::Set { .. } => "set",
            Command::Get { .. } => "get",
            Command::Del { .. } => "del",
            Command::Expire { .. } => "expire",
            Command::HSet { multi: false, .. } => "hset",
            Command::HSet { multi: true, .. } => "hmset",
            Command::HGet { .. } => "hget",
            Command::HDel { .. } => "hdel",
            Command::HGetAll { .. } => "hgetall",
            Command::SAdd { .. } => "sadd",
            Command::SRem { .. } => "srem",
            Command::SMembers { .. } => "smembers",
        }
    }

    /// Whether a list the command needs is empty (the parser never builds one; typed
    /// callers can).
    fn lacks_arguments(&self) -> bool {
        match self {
            Command::Del { keys } => keys.is_empty(),
            Command::HSet { fields, .. } => fields.is_empty(),
            Command::HDel { fields: items, .. }
            | Command::SAdd { members: items, .. }
            | Command::SRem { members: items, .. } => items.is_empty(),
            _ => false,
        }
    }
}

/// The entries a Redis command writes at `ht` (none for a read, or for a write that finds
/// nothing to change) and its reply, evaluated against the document tablet's `db` (whose
/// default TTL is `table_ttl_ms`). Every command reads before it writes: the caller makes
/// sure nothing it has not applied yet touches the same keys.
pub(crate) fn execute(
    db: &DocDb,
    table_ttl_ms: Option<u64>,
    ht: HybridTime,
    command: &Command,
) -> Result<(Vec<(DocPath, Value)>, Reply)> {
    let mut view =
        CommandView { db, table_ttl_ms, ht, scanned: Scanned::default(), entries: vec![] };
    let reply = evaluate(&mut view, command)?;
    Ok((view.entries, reply))
}

fn evaluate(view: &mut CommandView, command: &Command) -> Result<Reply> {
    if command.lacks_arguments() {
        let name = command.name();
        return Err(Error::InvalidRequest(format!(
            "ERR wrong number of arguments for '{name}' command"
        )));
    }
    match command {
        Command::Set { key, value, expiry } => {
            let ttl_us = expiry.map(Expiry::ttl_us);
            view.apply(vec![DocWrite { path: root(key), kind: set_value(value), ttl_us }])?;
            Ok(Reply::Status("OK".into()))
        }
        Command::Get { key } => match view.get(key)? {
            None => Ok(Reply::Bulk(None)),
            Some(Document::Primitive(p)) => Ok(Reply::Bulk(Some(text(&p)))),
            Some(Document::Object(_)) => Err(Error::WrongType),
        },
        Command::Del { keys } => {
            let mut writes = Vec::new();
            for key in keys {
                if view.get(key)?.is_some() {
                    writes.push(DocWrite { path: root(key), kind: WriteKind::Del, ttl_us: None });
                }
            }
            let n = writes.len();
            view.apply(writes)?;
            Ok(Reply::Integer(n as i64))
        }
        Command::Expire { key, secs } => expire(view, key, *secs),
        Command::HSet { key, fields, multi } => hset(view, key, fields, *multi),
        Command::HGet { key, field } => {
            match view.object(key, Aggregate::Hash)?.get(&member(field)) {
                Some(Document::Primitive(p)) => Ok(Reply::Bulk(Some(text(p)))),
                _ => Ok(Reply::Bulk(None)),
            }
        }
        Command::HDel { key, fields } => remove_members(view, key, fields, Aggregate::Hash),
        Command::SRem { key, members } => remove_members(view, key, members, Aggregate::Set),
        Command::HGetAll { key } => {
            let map = view.object(key, Aggregate::Hash)?;
            Ok(Reply::Array(
                map.iter().flat_map(|(k, v)| [text(&k.value), document_text(v)]).collect(),
            ))
        }
        Command::SAdd { key, members } => sadd(view, key, members),
        Command::SMembers { key } => {
            let map = view.object(key, Aggregate::Set)?;
            Ok(Reply::Array(map.keys().map(|k| text(&k.value)).collect()))
        }
    }
}

fn hset(
    view: &mut CommandView,
    key: &str,
    fields: &[(String, String)],
    multi: bool,
) -> Result<Reply> {
    let existing = view.object(key, Aggregate::Hash)?;
    let added: std::collections::BTreeSet<&String> =
        fields.iter().map(|(f, _)| f).filter(|f| !existing.contains_key(&member(f))).collect();
    let added = added.len();
    let writes = fields
        .iter()
        .map(|(f, v)| DocWrite { path: field(key, f), kind: set_value(v), ttl_us: None })
        .collect();
    view.apply(writes)?;
    Ok(if multi { Reply::Status("OK".into()) } else { Reply::Integer(added as i64) })
}

/// HDEL and SREM: a tombstone for each field or member that exists.
fn remove_members(
    view: &mut CommandView,
    key: &str,
    members: &[String],
    want: Aggregate,
) -> Result<Reply> {
    let existing = view.object(key, want)?;
    let writes: Vec<DocWrite> = members
        .iter()
        .filter(|m| existing.contains_key(&member(m)))
        .map(|m| DocWrite { path: field(key, m), kind: WriteKind::Del, ttl_us: None })
        .collect();
    let n = writes.len();
    view.apply(writes)?;
    Ok(Reply::Integer(n as i64))
}

fn sadd(view: &mut CommandView, key: &str, members: &[String]) -> Result<Reply> {
    let existing = view.object(key, Aggregate::Set)?;
    let fresh: std::collections::BTreeSet<&String> =
        members.iter().filter(|m| !existing.contains_key(&member(m))).collect();
    let writes = members
        .iter()
        .map(|m| DocWrite {
            path: field(key, m),
            kind: WriteKind::Set(Document::Primitive(Primitive::Null)),
            ttl_us: None,
        })
        .collect();
    view.apply(writes)?;
    Ok(Reply::Integer(fresh.len() as i64))
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

/// A Redis aggregate type. A rule of docsim's own: YugabyteDB keeps the type in the root's
/// value type (`kRedisSet` for a set, `kObject` for a hash; `RedisWriteOperation` checks
/// it, `docdb/redis_operation.cc`); docsim's root is an init marker for both, so the type
/// is what the visible members hold: a set's map to null, a hash's to strings. An emptied
/// one holds nothing and has no type (Redis deletes an emptied aggregate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Aggregate {
    Hash,
    Set,
}

impl Aggregate {
    /// The type of an aggregate's visible members (`None`: none visible).
    fn of(members: &BTreeMap<KeyEntry, Document>) -> Option<Aggregate> {
        let set = |d: &Document| *d == Document::Primitive(Primitive::Null);
        members.values().next().map(|d| if set(d) { Aggregate::Set } else { Aggregate::Hash })
    }
}

/// The keyspace as one command sees it: its reads and the write that follows them are
/// all at `ht`, so each key is scanned once and the write's marker lookups reuse the scan.
struct CommandView<'a> {
    db: &'a DocDb,
    table_ttl_ms: Option<u64>,
    ht: HybridTime,
    scanned: Scanned,
    /// The entries the command writes (one write: one batch).
    entries: Vec<(DocPath, Value)>,
}

impl CommandView<'_> {
    /// The value of `key`.
    fn get(&mut self, key: &str) -> Result<Option<Document>> {
        self.scanned.get(self.db, &root(key), self.ht, self.table_ttl_ms)
    }

    /// The fields or members of a hash or set key (empty if the key does not exist);
    /// `WRONGTYPE` if it holds a string or the other aggregate ([`Aggregate::of`]).
    fn object(&mut self, key: &str, want: Aggregate) -> Result<BTreeMap<KeyEntry, Document>> {
        match self.get(key)? {
            None => Ok(BTreeMap::new()),
            Some(Document::Object(map)) if Aggregate::of(&map).is_none_or(|a| a == want) => Ok(map),
            Some(_) => Err(Error::WrongType),
        }
    }

    /// Write `writes` as the command's one batch, with required markers.
    fn apply(&mut self, writes: Vec<DocWrite>) -> Result<()> {
        assert!(self.entries.is_empty(), "a Redis command writes one batch");
        let mode = MarkerMode::Required;
        self.entries = build_entries(self.db, &writes, self.ht, mode, &mut self.scanned)?;
        Ok(())
    }
}

/// `EX s` / `PX ms` after `SET k v`.
fn parse_set_options(options: &[String]) -> Result<Option<Expiry>, SyntaxError> {
    match options {
        [] => Ok(None),
        [unit, n] => {
            let n: u64 = match n.parse() {
                Ok(n) if n > 0 => n,
                _ => return syntax("ERR invalid expire time in 'set' command"),
            };
            match unit.to_ascii_uppercase().as_str() {
                "EX" => Ok(Some(Expiry::Ex(n))),
                "PX" => Ok(Some(Expiry::Px(n))),
                _ => syntax("ERR syntax error"),
            }
        }
        _ => syntax("ERR syntax error"),
    }
}

/// EXPIRE with a count of seconds `secs`, signed as YugabyteDB parses it (`ParseExpire`,
/// `src/yb/yql/redis/redisserver/redis_parser.cc`: `ParseInt64`). `secs <= 0` is a DEL of
/// the key, as YugabyteDB's parser turns it into one (a tombstone if the key exists; the
/// reply counts it). Otherwise, if the key exists, a TTL-only record at its root, with the
/// key's type as its value, as YugabyteDB's `RedisWriteOperation::ApplySetTtl`
/// (`src/yb/docdb/redis_operation.cc`) writes it: reads give the value (or hash, or set)
/// beneath it the TTL from now (`reader.rs`).
fn expire(view: &mut CommandView, key: &str, secs: i64) -> Result<Reply> {
    let Some(doc) = view.get(key)? else { return Ok(Reply::Integer(0)) };
    let write = match u64::try_from(secs) {
        Ok(secs) if secs > 0 => {
            let ttl_us = Some(secs.saturating_mul(1_000_000));
            let object = matches!(doc, Document::Object(_));
            DocWrite { path: root(key), kind: WriteKind::TtlOnly { object }, ttl_us }
        }
        _ => DocWrite { path: root(key), kind: WriteKind::Del, ttl_us: None },
    };
    view.apply(vec![write])?;
    Ok(Reply::Integer(1))
}

/// Split a command line into arguments; `"double quoted"` arguments may hold spaces and
/// JSON-style escapes.
fn split_args(command: &str) -> Result<Vec<String>, SyntaxError> {
    let mut args = Vec::new();
    let mut rest = command.trim_start();
    while !rest.is_empty() {
        if rest.starts_with('"') {
            let mut p = crate::notation::Parser::new(rest, 1);
            args.push(p.string().map_err(|e| SyntaxError(format!("Redis: {e}")))?);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command form prints as the text it was parsed from (arguments bare when they
    /// can be, else double-quoted), and that text parses back to the same command.
    #[test]
    fn commands_print_as_text_that_parses_back() {
        let texts = [
            "SET k v",
            "SET \"a key\" \"it's\" EX 5",
            "SET k \"\" PX 20",
            "GET \"#x\"",
            "DEL a b",
            "EXPIRE k -1",
            "HSET h f1 v1 f2 \"v 2\"",
            "HMSET h f v",
            "HGET h f",
            "HDEL h f g",
            "HGETALL h",
            "SADD s m \"n\\\"q\"",
            "SREM s m",
            "SMEMBERS s",
        ];
        for text in texts {
            let command = Command::parse(text).expect(text);
            assert_eq!(command.to_string(), text);
            assert_eq!(Command::parse(&command.to_string()), Ok(command));
        }
    }

    /// A typed caller can build a command with an empty list, which the parser never
    /// does: it is refused as Redis refuses such a line, naming the command.
    #[test]
    fn a_command_with_an_empty_list_is_refused_naming_it() {
        let disk = crate::disk::SimDisk::new(1, Default::default());
        let plants = crate::canary::Plants::NONE;
        let storage = Default::default();
        let options = crate::NodeOptions {
            storage,
            ..crate::NodeOptions::alone(disk, 4096, plants, crate::Medium::Memory)
        };
        let dir = crate::tests::scratch_dir("redis-empty");
        let mut node = crate::Node::new(&dir, options).expect("node");
        let key = || "k".to_string();
        let commands = [
            (Command::Del { keys: vec![] }, "del"),
            (Command::HSet { key: key(), fields: vec![], multi: false }, "hset"),
            (Command::HSet { key: key(), fields: vec![], multi: true }, "hmset"),
            (Command::HDel { key: key(), fields: vec![] }, "hdel"),
            (Command::SAdd { key: key(), members: vec![] }, "sadd"),
            (Command::SRem { key: key(), members: vec![] }, "srem"),
        ];
        for (command, name) in commands {
            let err = node.redis(HybridTime::from_micros(1_000), &command).expect_err(name);
            let said = format!("ERR wrong number of arguments for '{name}' command");
            assert_eq!(err, Error::InvalidRequest(said));
        }
        drop(node);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
