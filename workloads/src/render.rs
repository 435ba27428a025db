//! Rendering structured CQL and Redis ops as statement text.

use crate::op::CqlTableSpec;
use docsim_models::cql::{Assign, Cmp, CqlOp, CqlValue, Schema};
use docsim_models::redis::RedisOp;
use docsim_models::Scalar;

/// `CREATE TABLE ...` for a spec.
pub fn create_table(spec: &CqlTableSpec) -> String {
    let s = &spec.schema;
    let cols: Vec<String> = spec.types.iter().map(|(n, t)| format!("{n} {t}")).collect();
    let range: Vec<&str> = s.range.iter().map(|(n, _)| n.as_str()).collect();
    let mut key = format!("({})", s.hash.join(", "));
    if !range.is_empty() {
        key = format!("{key}, {}", range.join(", "));
    }
    let mut text = format!("CREATE TABLE {} ({}, PRIMARY KEY ({key}))", s.name, cols.join(", "));
    let mut with = Vec::new();
    if let Some(ttl) = s.default_ttl_s {
        with.push(format!("default_time_to_live = {ttl}"));
    }
    if s.range.iter().any(|(_, desc)| *desc) {
        let order: Vec<String> = s
            .range
            .iter()
            .map(|(n, d)| format!("{n} {}", if *d { "DESC" } else { "ASC" }))
            .collect();
        with.push(format!("CLUSTERING ORDER BY ({})", order.join(", ")));
    }
    if !with.is_empty() {
        text = format!("{text} WITH {}", with.join(" AND "));
    }
    text
}

/// A scalar as a CQL literal.
pub fn literal(s: &Scalar) -> String {
    match s {
        Scalar::Null => "null".into(),
        Scalar::Bool(b) => b.to_string(),
        Scalar::Int32(v) => v.to_string(),
        Scalar::Int64(v) => v.to_string(),
        Scalar::Double(bits) => format!("{:?}", f64::from_bits(*bits)),
        Scalar::Str(text) => format!("'{}'", text.replace('\'', "''")),
        Scalar::Timestamp(us) => (us / 1000).to_string(),
        Scalar::Column(_) | Scalar::SystemColumn(_) => unreachable!("not a CQL value"),
    }
}

fn value(v: &CqlValue) -> String {
    match v {
        CqlValue::Null => "null".into(),
        CqlValue::Scalar(s) => literal(s),
        CqlValue::Map(items) => {
            let items: Vec<String> =
                items.iter().map(|(k, v)| format!("{}: {}", literal(k), literal(v))).collect();
            format!("{{{}}}", items.join(", "))
        }
        CqlValue::Set(items) => {
            let items: Vec<String> = items.iter().map(literal).collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

fn key_names(s: &Schema) -> Vec<&str> {
    s.hash.iter().map(String::as_str).chain(s.range.iter().map(|(n, _)| n.as_str())).collect()
}

fn where_key(s: &Schema, key: &[Scalar]) -> String {
    let conds: Vec<String> =
        key_names(s).iter().zip(key).map(|(n, v)| format!("{n} = {}", literal(v))).collect();
    format!("WHERE {}", conds.join(" AND "))
}

fn using(ttl_s: &Option<u64>) -> String {
    ttl_s.map(|s| format!(" USING TTL {s}")).unwrap_or_default()
}

/// A CQL op as statement text.
pub fn cql(s: &Schema, op: &CqlOp) -> String {
    match op {
        CqlOp::Insert { key, values, ttl_s } => {
            let mut names: Vec<&str> = key_names(s);
            let mut lits: Vec<String> = key.iter().map(literal).collect();
            for (n, v) in values {
                names.push(n);
                lits.push(value(v));
            }
            format!(
                "INSERT INTO {} ({}) VALUES ({}){}",
                s.name,
                names.join(", "),
                lits.join(", "),
                using(ttl_s)
            )
        }
        CqlOp::Update { key, assigns, ttl_s } => {
            let sets: Vec<String> = assigns
                .iter()
                .map(|a| match a {
                    Assign::Whole(n, v) => format!("{n} = {}", value(v)),
                    Assign::MapPut(n, k, v) => format!("{n}[{}] = {}", literal(k), literal(v)),
                    Assign::Add(n, v) => format!("{n} = {n} + {}", value(v)),
                    Assign::Remove(n, keys) => {
                        let keys: Vec<String> = keys.iter().map(literal).collect();
                        format!("{n} = {n} - {{{}}}", keys.join(", "))
                    }
                })
                .collect();
            format!(
                "UPDATE {}{} SET {} {}",
                s.name,
                using(ttl_s),
                sets.join(", "),
                where_key(s, key)
            )
        }
        CqlOp::DeleteRow { key } => format!("DELETE FROM {} {}", s.name, where_key(s, key)),
        CqlOp::DeleteColumns { key, columns } => {
            format!("DELETE {} FROM {} {}", columns.join(", "), s.name, where_key(s, key))
        }
        CqlOp::Select { hash, range, columns } => {
            let cols = columns.as_ref().map_or("*".to_string(), |c| c.join(", "));
            let mut conds: Vec<String> =
                s.hash.iter().zip(hash).map(|(n, v)| format!("{n} = {}", literal(v))).collect();
            if let Some((cmp, v)) = range {
                let op = match cmp {
                    Cmp::Eq => "=",
                    Cmp::Lt => "<",
                    Cmp::Le => "<=",
                    Cmp::Gt => ">",
                    Cmp::Ge => ">=",
                };
                conds.push(format!("{} {op} {}", s.range[0].0, literal(v)));
            }
            format!("SELECT {cols} FROM {} WHERE {}", s.name, conds.join(" AND "))
        }
    }
}

/// A Redis op as command text.
pub fn redis(op: &RedisOp) -> String {
    let pairs = |items: &[(String, String)]| {
        items.iter().map(|(a, b)| format!("{a} {b}")).collect::<Vec<_>>().join(" ")
    };
    match op {
        RedisOp::Set { key, value, ttl_ms: None } => format!("SET {key} {value}"),
        RedisOp::Set { key, value, ttl_ms: Some(ms) } if ms % 1000 == 0 => {
            format!("SET {key} {value} EX {}", ms / 1000)
        }
        RedisOp::Set { key, value, ttl_ms: Some(ms) } => format!("SET {key} {value} PX {ms}"),
        RedisOp::Get { key } => format!("GET {key}"),
        RedisOp::Del { keys } => format!("DEL {}", keys.join(" ")),
        RedisOp::Expire { key, secs } => format!("EXPIRE {key} {secs}"),
        RedisOp::HSet { key, fields } => format!("HSET {key} {}", pairs(fields)),
        RedisOp::HGet { key, field } => format!("HGET {key} {field}"),
        RedisOp::HDel { key, fields } => format!("HDEL {key} {}", fields.join(" ")),
        RedisOp::HGetAll { key } => format!("HGETALL {key}"),
        RedisOp::SAdd { key, members } => format!("SADD {key} {}", members.join(" ")),
        RedisOp::SRem { key, members } => format!("SREM {key} {}", members.join(" ")),
        RedisOp::SMembers { key } => format!("SMEMBERS {key}"),
    }
}
