//! Simpler variants of one op, for the shrinker: after delta debugging has removed every
//! op it can, the shrinker replaces each remaining op by the first of its variants that
//! still fails, until none does.
//!
//! A variant is strictly smaller than its op (fewer items, no TTL, a shorter path, a value
//! at its type's zero), so repeated simplification ends. Each stays valid for what the op
//! addresses: a CQL variant keeps its column names and value types (the table's schema is
//! not needed: values only lose elements or become their type's zero), and nothing is cut
//! down to a no-op that deleting the op would express better (an empty batch, an UPDATE
//! without assignments).

use crate::op::{DocWrite, Op};
use docsim_models::cql::Cmp;
use docsim_models::cql::{Assign, CqlOp, CqlValue, Json};
use docsim_models::redis::RedisOp;
use docsim_models::{Doc, Scalar, Time, Ttl, Write};

/// Candidate simpler variants of `op`, the boldest first; none equals `op`.
///
/// - A batch: without one of its writes (if it has more than one), that write on its own
///   (`Op::Write` at the same time), then each write simplified in place.
/// - A document write: without its TTL, its object literal without one entry, its path
///   without the last subkey, a leaf value as `0`.
/// - CQL: an INSERT without one of its columns or its TTL; an UPDATE without one of its
///   assignments (if it has more) or its TTL; a DELETE of columns without one (if it names
///   more); a SELECT without its range condition, with one column fewer, or `*`; one
///   value simplified (one collection element fewer, or a scalar at its type's zero).
/// - Redis: SET without its TTL; DEL, HSET, HDEL, SADD, SREM with one item fewer.
/// - Anything else (reads, markers, tables, node ops): none.
pub fn simpler(op: &Op) -> Vec<Op> {
    match op {
        Op::Batch { ht, writes } => batch_variants(*ht, writes),
        Op::Write { ht, write } => {
            write_variants(write).into_iter().map(|w| Op::Write { ht: *ht, write: w }).collect()
        }
        Op::Cql { ht, table, op } => cql_variants(op)
            .into_iter()
            .map(|op| Op::Cql { ht: *ht, table: table.clone(), op })
            .collect(),
        Op::Redis { ht, op } => {
            redis_variants(op).into_iter().map(|op| Op::Redis { ht: *ht, op }).collect()
        }
        _ => Vec::new(),
    }
}

fn batch_variants(ht: Time, writes: &[DocWrite]) -> Vec<Op> {
    let mut out = Vec::new();
    for i in 0..writes.len() {
        if writes.len() > 1 {
            out.push(Op::Batch { ht, writes: without(writes, i) });
        }
        out.push(Op::Write { ht, write: writes[i].clone() });
    }
    for (i, w) in writes.iter().enumerate() {
        for simpler in write_variants(w) {
            let mut changed = writes.to_vec();
            changed[i] = simpler;
            out.push(Op::Batch { ht, writes: changed });
        }
    }
    out
}

/// Without its TTL, without one object-literal entry, with a shorter path, the leaf `0`.
fn write_variants(w: &DocWrite) -> Vec<DocWrite> {
    let mut out = Vec::new();
    if w.ttl != Ttl::Inherit {
        out.push(DocWrite { ttl: Ttl::Inherit, ..w.clone() });
    }
    if let Write::Set(Doc::Object(map)) | Write::Extend(map) = &w.write {
        for key in map.keys() {
            let mut smaller = map.clone();
            smaller.remove(key);
            let write = match &w.write {
                Write::Set(_) => Write::Set(Doc::Object(smaller)),
                _ => Write::Extend(smaller),
            };
            out.push(DocWrite { write, ..w.clone() });
        }
    }
    if !w.path.is_empty() {
        let mut path = w.path.clone();
        path.pop();
        out.push(DocWrite { path, ..w.clone() });
    }
    // The simplest leaf value: 0.
    let zero = Doc::Leaf(Scalar::Int64(0));
    if matches!(&w.write, Write::Set(d @ Doc::Leaf(_)) if *d != zero) {
        out.push(DocWrite { write: Write::Set(zero), ..w.clone() });
    }
    out
}

/// Simpler CQL statements:
///
/// - INSERT: without one of its columns, without its TTL, one value simplified;
/// - UPDATE: without one assignment (if it has more than one), without its TTL, one
///   assignment simplified;
/// - DELETE of columns: one column fewer (if it names more than one);
/// - SELECT: without its range condition, without one column of its list (if it has more
///   than one), `*` for a column list.
///
/// A value is simplified by dropping one element of a collection (an `Add` or `Remove`
/// keeps at least one) or by setting one scalar, or one map value, to its type's zero
/// (`0`, `0.0`, `''`, `false`). Map keys and set elements are never rewritten (they could
/// collide), nor are primary keys.
fn cql_variants(op: &CqlOp) -> Vec<CqlOp> {
    let mut out = Vec::new();
    match op {
        CqlOp::Insert { key, values, ttl_s } => {
            let insert = |values: Vec<(String, CqlValue)>, ttl_s: Option<u64>| CqlOp::Insert {
                key: key.clone(),
                values,
                ttl_s,
            };
            out.extend((0..values.len()).map(|i| insert(without(values, i), *ttl_s)));
            if ttl_s.is_some() {
                out.push(insert(values.clone(), None));
            }
            for (i, (name, value)) in values.iter().enumerate() {
                for simpler in value_variants(value, 0) {
                    let mut changed = values.clone();
                    changed[i] = (name.clone(), simpler);
                    out.push(insert(changed, *ttl_s));
                }
            }
        }
        CqlOp::Update { key, assigns, ttl_s } => {
            let update = |assigns: Vec<Assign>, ttl_s: Option<u64>| CqlOp::Update {
                key: key.clone(),
                assigns,
                ttl_s,
            };
            if assigns.len() > 1 {
                out.extend((0..assigns.len()).map(|i| update(without(assigns, i), *ttl_s)));
            }
            if ttl_s.is_some() {
                out.push(update(assigns.clone(), None));
            }
            for (i, assign) in assigns.iter().enumerate() {
                for simpler in assign_variants(assign) {
                    let mut changed = assigns.clone();
                    changed[i] = simpler;
                    out.push(update(changed, *ttl_s));
                }
            }
        }
        CqlOp::DeleteRow { .. } => {}
        CqlOp::DeleteColumns { key, columns } if columns.len() > 1 => {
            out.extend(
                (0..columns.len()).map(|i| CqlOp::DeleteColumns {
                    key: key.clone(),
                    columns: without(columns, i),
                }),
            );
        }
        // A schema change stays as it is: the ops after it name its columns.
        CqlOp::DeleteColumns { .. } | CqlOp::Alter(_) => {}
        CqlOp::Select { hash, range, columns } => out.extend(select_variants(hash, range, columns)),
    }
    out
}

fn select_variants(
    hash: &[Scalar],
    range: &[(Cmp, Scalar)],
    columns: &Option<Vec<String>>,
) -> Vec<CqlOp> {
    let select = |range: &[(Cmp, Scalar)], columns: Option<Vec<String>>| CqlOp::Select {
        hash: hash.to_vec(),
        range: range.to_vec(),
        columns,
    };
    let mut out = Vec::new();
    if range.len() > 1 {
        out.extend((0..range.len()).map(|i| select(&without(range, i), columns.clone())));
    } else if !range.is_empty() {
        out.push(select(&[], columns.clone()));
    }
    if let Some(cols) = columns {
        if cols.len() > 1 {
            out.extend((0..cols.len()).map(|i| select(range, Some(without(cols, i)))));
        }
        out.push(select(range, None));
    }
    out
}

fn assign_variants(assign: &Assign) -> Vec<Assign> {
    match assign {
        Assign::Whole(name, v) => {
            value_variants(v, 0).into_iter().map(|v| Assign::Whole(name.clone(), v)).collect()
        }
        Assign::MapPut(name, k, v) => {
            zero(v).map(|v| Assign::MapPut(name.clone(), k.clone(), v)).into_iter().collect()
        }
        Assign::Add(name, v) => {
            value_variants(v, 1).into_iter().map(|v| Assign::Add(name.clone(), v)).collect()
        }
        Assign::Remove(name, keys) if keys.len() > 1 => {
            (0..keys.len()).map(|i| Assign::Remove(name.clone(), without(keys, i))).collect()
        }
        Assign::Remove(..) => Vec::new(),
    }
}

/// A collection with one element fewer (keeping at least `len_min`), one map value or the
/// scalar at its type's zero.
fn value_variants(value: &CqlValue, len_min: usize) -> Vec<CqlValue> {
    match value {
        CqlValue::Null => Vec::new(),
        CqlValue::Scalar(s) => zero(s).map(CqlValue::Scalar).into_iter().collect(),
        CqlValue::Map(items) => {
            let mut out = Vec::new();
            if items.len() > len_min {
                out.extend((0..items.len()).map(|i| CqlValue::Map(without(items, i))));
            }
            for (i, (k, v)) in items.iter().enumerate() {
                if let Some(v) = zero(v) {
                    let mut changed = items.clone();
                    changed[i] = (k.clone(), v);
                    out.push(CqlValue::Map(changed));
                }
            }
            out
        }
        CqlValue::Set(items) if items.len() > len_min => {
            (0..items.len()).map(|i| CqlValue::Set(without(items, i))).collect()
        }
        CqlValue::Set(_) => Vec::new(),
        CqlValue::List(items) if items.len() > len_min => {
            (0..items.len()).map(|i| CqlValue::List(without(items, i))).collect()
        }
        CqlValue::List(_) => Vec::new(),
        CqlValue::Json(Json::Object(items)) if items.len() > len_min => {
            (0..items.len()).map(|i| CqlValue::Json(Json::Object(without(items, i)))).collect()
        }
        CqlValue::Json(_) => Vec::new(),
    }
}

/// The zero of a scalar's type, if the scalar is not already it.
fn zero(s: &Scalar) -> Option<Scalar> {
    let zero = match s {
        Scalar::Bool(_) => Scalar::Bool(false),
        Scalar::Int32(_) => Scalar::Int32(0),
        Scalar::Int64(_) => Scalar::Int64(0),
        Scalar::Double(_) => Scalar::Double(0f64.to_bits()),
        Scalar::Str(_) => Scalar::Str(String::new()),
        _ => return None,
    };
    (zero != *s).then_some(zero)
}

/// Simpler Redis commands: SET without its TTL; DEL, HSET, HDEL, SADD and SREM with one
/// key, field or member fewer (keeping at least one).
fn redis_variants(op: &RedisOp) -> Vec<RedisOp> {
    let fewer = |items: usize| if items > 1 { 0..items } else { 0..0 };
    match op {
        RedisOp::Set { key, value, ttl_ms: Some(_) } => {
            vec![RedisOp::Set { key: key.clone(), value: value.clone(), ttl_ms: None }]
        }
        RedisOp::Del { keys } => {
            fewer(keys.len()).map(|i| RedisOp::Del { keys: without(keys, i) }).collect()
        }
        RedisOp::HSet { key, fields } => fewer(fields.len())
            .map(|i| RedisOp::HSet { key: key.clone(), fields: without(fields, i) })
            .collect(),
        RedisOp::HDel { key, fields } => fewer(fields.len())
            .map(|i| RedisOp::HDel { key: key.clone(), fields: without(fields, i) })
            .collect(),
        RedisOp::SAdd { key, members } => fewer(members.len())
            .map(|i| RedisOp::SAdd { key: key.clone(), members: without(members, i) })
            .collect(),
        RedisOp::SRem { key, members } => fewer(members.len())
            .map(|i| RedisOp::SRem { key: key.clone(), members: without(members, i) })
            .collect(),
        _ => Vec::new(),
    }
}

/// `items` without the one at `i`.
fn without<T: Clone>(items: &[T], i: usize) -> Vec<T> {
    let mut fewer = items.to_vec();
    fewer.remove(i);
    fewer
}

#[cfg(test)]
#[path = "simplify_tests.rs"]
mod tests;
