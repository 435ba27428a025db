//! One step of a random run: a client's op in the model's vocabulary (so the checker and
//! the shrinker can work with it), where it goes and when it reads; or any other command
//! of the language. A step prints through the engine's printer as the command the
//! executor runs.

use crate::convert;
use docsim_engine::script::{At, Command, PageOptions, Route};
use docsim_models::cql::{CqlOp, Schema};
use docsim_models::redis::RedisOp;
use docsim_workloads::{Op, RestoreTo};
use std::collections::BTreeMap;

/// One step.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// A client's op and where it goes; `at`: when a read reads (`None`: at the op's own
    /// time) or a write writes (`None`: at a time from its leader's clock).
    Client { op: Op, route: Route, at: Option<At> },
    /// Any other command (a node's, the network's, membership, waits, convergence).
    Command(Command),
}

impl Step {
    /// A client op sent to whichever replica claims to lead.
    pub fn client(op: Op) -> Step {
        Step::Client { op, route: Route::default(), at: None }
    }

    /// The client op, if it is one.
    pub fn op(&self) -> Option<&Op> {
        match self {
            Step::Client { op, .. } => Some(op),
            Step::Command(_) => None,
        }
    }

    /// The command the executor runs; `schemas`: the tables' schemas as created (a CQL
    /// statement names its key columns by them).
    pub fn command(&self, schemas: &BTreeMap<String, Schema>) -> Command {
        let (op, route, at) = match self {
            Step::Command(command) => return command.clone(),
            Step::Client { op, route, at } => (op, *route, *at),
        };
        let write_at = at.and_then(|at| match at {
            At::Ht(ht) => Some(ht),
            _ => None,
        });
        let read_at = |ht: u64| at.unwrap_or(At::Ht(convert::ht(ht)));
        match op {
            Op::Markers(m) => Command::Markers(convert::marker_mode(*m)),
            Op::DefaultTtl { ttl_ms } => {
                Command::DefaultTtl { ttl_us: ttl_ms.map(|ms| ms * 1000), ht: write_at }
            }
            Op::Write { write, .. } => {
                Command::Write { write: convert::write(write), ht: write_at, route }
            }
            Op::Batch { writes, .. } => {
                let writes = writes.iter().map(convert::write).collect();
                Command::Batch { ht: write_at, writes, route }
            }
            Op::Get { ht, doc, path } => Command::Get {
                path: convert::path(doc, path),
                at: read_at(*ht),
                table: None,
                from: route.node,
            },
            Op::Table(spec) => {
                let table = convert::table(spec).expect("generated tables are valid");
                Command::Table(table.to_string())
            }
            Op::Cql { ht, table, op: cql } => {
                let schema = schemas.get(table).expect("a declared table");
                let statement = convert::statement(schema, cql).to_string();
                let at = match cql {
                    CqlOp::Select { .. } => Some(read_at(*ht)),
                    _ => write_at.map(At::Ht),
                };
                Command::Cql { at, statement, route }
            }
            Op::Redis { ht, op: redis } => {
                let at = match redis_reads(redis) {
                    true => Some(read_at(*ht)),
                    false => write_at.map(At::Ht),
                };
                Command::Redis { at, command: convert::redis(redis).to_string(), route }
            }
            Op::Snapshot { table, id, delete } => {
                let op = match delete {
                    false => docsim_engine::SnapshotOp::Create(id.clone()),
                    true => docsim_engine::SnapshotOp::Delete(id.clone()),
                };
                Command::SnapshotWrite { op, table: table.clone(), ht: write_at, route }
            }
            Op::Restore { table, to } => {
                let target = restore_target(to);
                Command::Restore { target, table: table.clone(), ht: write_at, route }
            }
            Op::Page { ht, table, op: select, size, after, hold } => {
                let schema = schemas.get(table).expect("a declared table");
                let statement = convert::statement(schema, select).to_string();
                let after = after.as_ref().map(convert::doc_key);
                let paging = PageOptions { size: *size, after, hold: *hold };
                Command::Page { at: Some(read_at(*ht)), paging, statement, route }
            }
        }
    }
}

/// What a restore op goes back to, as the engine's request names it.
fn restore_target(to: &RestoreTo) -> docsim_engine::RestoreTarget {
    match to {
        RestoreTo::Snapshot(id) => docsim_engine::RestoreTarget::Snapshot(id.clone()),
        RestoreTo::Time(t) => {
            docsim_engine::RestoreTarget::Time(docsim_engine::HybridTime::from_raw(*t))
        }
    }
}

/// Whether a Redis op only reads.
pub fn redis_reads(op: &RedisOp) -> bool {
    matches!(
        op,
        RedisOp::Get { .. }
            | RedisOp::HGet { .. }
            | RedisOp::HGetAll { .. }
            | RedisOp::SMembers { .. }
    )
}
