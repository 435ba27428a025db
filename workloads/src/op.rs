//! The operation type: one docscript line.

use docsim_engine::script::{parse_line, Command};
use docsim_engine::HybridTime;
use docsim_models::cql::{CqlOp, Schema};
use docsim_models::redis::RedisOp;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A CQL table as generated: the model's schema and each column's CQL type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CqlTableSpec {
    pub schema: Schema,
    /// `(column, CQL type)` in declaration order: key columns, then regular ones.
    pub types: Vec<(String, String)>,
}

/// One operation; `Display` is its docscript line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// A docscript document command (write, batch, get, markers, default_ttl...).
    Doc(#[serde(serialize_with = "command_text", deserialize_with = "command_parse")] Command),
    /// Declare a CQL table.
    Table(CqlTableSpec),
    /// A CQL statement on `table` at `ht`.
    Cql { ht: HybridTime, table: String, op: CqlOp, text: String },
    /// A Redis command at `ht`.
    Redis { ht: HybridTime, op: RedisOp },
}

impl Op {
    /// Whether the op reads (and so is checked against the model).
    pub fn is_read(&self) -> bool {
        match self {
            Op::Doc(Command::Get { .. }) => true,
            Op::Cql { op: CqlOp::Select { .. }, .. } => true,
            Op::Redis { op, .. } => matches!(
                op,
                RedisOp::Get { .. }
                    | RedisOp::HGet { .. }
                    | RedisOp::HGetAll { .. }
                    | RedisOp::SMembers { .. }
            ),
            _ => false,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Doc(command) => write!(f, "{command}"),
            Op::Table(spec) => write!(f, "table {}", crate::render::create_table(spec)),
            Op::Cql { ht, text, .. } => write!(f, "cql @{ht} {text}"),
            Op::Redis { ht, op } => write!(f, "redis @{ht} {}", crate::render::redis(op)),
        }
    }
}

fn command_text<S: Serializer>(command: &Command, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&command.to_string())
}

fn command_parse<'de, D: Deserializer<'de>>(d: D) -> Result<Command, D::Error> {
    let text = String::deserialize(d)?;
    match parse_line(&text, 1) {
        Ok(Some(command)) => Ok(command),
        Ok(None) => Err(serde::de::Error::custom("empty command")),
        Err(e) => Err(serde::de::Error::custom(e.to_string())),
    }
}
