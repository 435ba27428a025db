//! Redis on the document model: a key is the document `(hash: [key])`; a string is a leaf
//! at the root; a hash or a set is an object of fields (set members hold null). Writes use
//! required markers; a TTL written with a value covers every entry written with it.

use crate::doc::{Doc, DocId, Key, Markers, Model, ModelError, Scalar, Time, Ttl, Write};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A Redis command, structured.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RedisOp {
    Set {
        key: String,
        value: String,
        ttl_ms: Option<u64>,
    },
    Get {
        key: String,
    },
    Del {
        keys: Vec<String>,
    },
    /// EXPIRE: a signed count of seconds; `secs <= 0` deletes the key.
    Expire {
        key: String,
        secs: i64,
    },
    HSet {
        key: String,
        fields: Vec<(String, String)>,
    },
    HGet {
        key: String,
        field: String,
    },
    HDel {
        key: String,
        fields: Vec<String>,
    },
    HGetAll {
        key: String,
    },
    SAdd {
        key: String,
        members: Vec<String>,
    },
    SRem {
        key: String,
        members: Vec<String>,
    },
    SMembers {
        key: String,
    },
}

/// A reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Status(String),
    Bulk(Option<String>),
    Integer(i64),
    Array(Vec<String>),
}

impl RedisOp {
    /// The document of the first key the command names (a key is the document
    /// `doc(<hash>: "key";)`).
    pub fn first_doc(&self) -> DocId {
        match self {
            RedisOp::Del { keys } => doc_id(keys.first().map_or("", String::as_str)),
            RedisOp::Set { key, .. }
            | RedisOp::Get { key }
            | RedisOp::Expire { key, .. }
            | RedisOp::HSet { key, .. }
            | RedisOp::HGet { key, .. }
            | RedisOp::HDel { key, .. }
            | RedisOp::HGetAll { key }
            | RedisOp::SAdd { key, .. }
            | RedisOp::SRem { key, .. }
            | RedisOp::SMembers { key } => doc_id(key),
        }
    }
}

fn doc_id(key: &str) -> DocId {
    DocId { colocation: None, hashed: vec![Key::of(Scalar::Str(key.to_owned()))], range: vec![] }
}

fn field(name: &str) -> Key {
    Key::of(Scalar::Str(name.to_owned()))
}

fn text(s: &Scalar) -> String {
    match s {
        Scalar::Str(s) => s.clone(),
        Scalar::Null => "null".into(),
        other => format!("{other:?}"),
    }
}

impl Model {
    /// Run one Redis command at `time`.
    pub fn redis(&mut self, time: Time, op: &RedisOp) -> Result<Reply, ModelError> {
        match op {
            RedisOp::Set { key, value, ttl_ms } => {
                let ttl = ttl_ms.map_or(Ttl::Inherit, Ttl::Ms);
                let write = Write::Set(Doc::Leaf(Scalar::Str(value.clone())));
                self.write_batch(time, Markers::Required, &[(doc_id(key), vec![], write, ttl)])?;
                Ok(Reply::Status("OK".into()))
            }
            RedisOp::Get { key } => match self.read(&doc_id(key), &[], time)? {
                None => Ok(Reply::Bulk(None)),
                Some(Doc::Leaf(s)) => Ok(Reply::Bulk(Some(text(&s)))),
                Some(Doc::Object(_)) => Err(ModelError::WrongType),
            },
            RedisOp::Del { keys } => self.del(time, keys),
            RedisOp::Expire { key, secs } => self.expire(time, key, *secs),
            RedisOp::HSet { key, fields } => self.hset(time, key, fields),
            RedisOp::HGet { key, field: f } => {
                match self.object(key, time, Kind::Hash)?.get(&field(f)) {
                    Some(Doc::Leaf(s)) => Ok(Reply::Bulk(Some(text(s)))),
                    _ => Ok(Reply::Bulk(None)),
                }
            }
            RedisOp::HDel { key, fields } => self.remove_members(time, key, fields, Kind::Hash),
            RedisOp::SRem { key, members } => self.remove_members(time, key, members, Kind::Set),
            RedisOp::HGetAll { key } => {
                let map = self.object(key, time, Kind::Hash)?;
                let mut items = Vec::new();
                for (k, v) in map {
                    items.push(text(&k.scalar));
                    items.push(match v {
                        Doc::Leaf(s) => text(&s),
                        Doc::Object(_) => "<object>".into(),
                    });
                }
                Ok(Reply::Array(items))
            }
            RedisOp::SAdd { key, members } => self.sadd(time, key, members),
            RedisOp::SMembers { key } => {
                let map = self.object(key, time, Kind::Set)?;
                Ok(Reply::Array(map.keys().map(|k| text(&k.scalar)).collect()))
            }
        }
    }

    /// DEL: a tombstone for each key that exists.
    fn del(&mut self, time: Time, keys: &[String]) -> Result<Reply, ModelError> {
        let mut writes = Vec::new();
        for key in keys {
            if self.read(&doc_id(key), &[], time)?.is_some() {
                writes.push((doc_id(key), vec![], Write::Del, Ttl::Inherit));
            }
        }
        self.write_batch(time, Markers::Required, &writes)?;
        Ok(Reply::Integer(writes.len() as i64))
    }

    /// EXPIRE: the key written again as of now with the TTL; a count of seconds at or
    /// below zero deletes it (YugabyteDB's parser, `ParseExpire` in `redis_parser.cc`,
    /// turns such an EXPIRE into a DEL). Replies 1 if the key existed, else 0.
    fn expire(&mut self, time: Time, key: &str, secs: i64) -> Result<Reply, ModelError> {
        let Some(doc) = self.read(&doc_id(key), &[], time)? else {
            return Ok(Reply::Integer(0));
        };
        let (write, ttl) = match u64::try_from(secs) {
            Ok(secs) if secs > 0 => (Write::Set(doc), Ttl::Ms(secs.saturating_mul(1000))),
            _ => (Write::Del, Ttl::Inherit),
        };
        self.write_batch(time, Markers::Required, &[(doc_id(key), vec![], write, ttl)])?;
        Ok(Reply::Integer(1))
    }

    /// HSET: each field set; the reply counts the fields that did not exist.
    fn hset(
        &mut self,
        time: Time,
        key: &str,
        fields: &[(String, String)],
    ) -> Result<Reply, ModelError> {
        let existing = self.object(key, time, Kind::Hash)?;
        let added: std::collections::BTreeSet<&String> =
            fields.iter().map(|(f, _)| f).filter(|f| !existing.contains_key(&field(f))).collect();
        let added = added.len();
        let writes: Vec<_> = fields
            .iter()
            .map(|(f, v)| {
                let write = Write::Set(Doc::Leaf(Scalar::Str(v.clone())));
                (doc_id(key), vec![field(f)], write, Ttl::Inherit)
            })
            .collect();
        self.write_batch(time, Markers::Required, &writes)?;
        Ok(Reply::Integer(added as i64))
    }

    /// HDEL and SREM: a tombstone for each field or member that exists.
    fn remove_members(
        &mut self,
        time: Time,
        key: &str,
        members: &[String],
        kind: Kind,
    ) -> Result<Reply, ModelError> {
        let existing = self.object(key, time, kind)?;
        let writes: Vec<_> = members
            .iter()
            .filter(|m| existing.contains_key(&field(m)))
            .map(|m| (doc_id(key), vec![field(m)], Write::Del, Ttl::Inherit))
            .collect();
        self.write_batch(time, Markers::Required, &writes)?;
        Ok(Reply::Integer(writes.len() as i64))
    }

    /// SADD: each member set (to null); the reply counts the new members.
    fn sadd(&mut self, time: Time, key: &str, members: &[String]) -> Result<Reply, ModelError> {
        let existing = self.object(key, time, Kind::Set)?;
        let mut fresh: Vec<&String> =
            members.iter().filter(|m| !existing.contains_key(&field(m))).collect();
        fresh.sort();
        fresh.dedup();
        let writes: Vec<_> = members
            .iter()
            .map(|m| {
                (doc_id(key), vec![field(m)], Write::Set(Doc::Leaf(Scalar::Null)), Ttl::Inherit)
            })
            .collect();
        self.write_batch(time, Markers::Required, &writes)?;
        Ok(Reply::Integer(fresh.len() as i64))
    }

    /// A hash's or set's members at `time` (none if the key does not exist); WRONGTYPE if
    /// it holds a string or the other kind. docsim's rule (YugabyteDB keeps the kind in
    /// the root's value type, `kRedisSet` or `kObject`): the kind is what the visible
    /// members hold — a set's are null, a hash's strings; with none visible, no kind.
    fn object(&self, key: &str, time: Time, kind: Kind) -> Result<BTreeMap<Key, Doc>, ModelError> {
        let map = match self.read(&doc_id(key), &[], time)? {
            None => return Ok(BTreeMap::new()),
            Some(Doc::Object(map)) => map,
            Some(Doc::Leaf(_)) => return Err(ModelError::WrongType),
        };
        let held = map.values().next().map(|v| match v {
            Doc::Leaf(Scalar::Null) => Kind::Set,
            _ => Kind::Hash,
        });
        match held {
            Some(held) if held != kind => Err(ModelError::WrongType),
            _ => Ok(map),
        }
    }
}

/// The kind of a Redis aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Hash,
    Set,
}
