//! The generator: profiles, swarm knobs, and the next operation.

use crate::op::{CqlTableSpec, DocWrite, Op};
use docsim_models::cql::{Alter, Assign, Cmp, ColKind, CqlOp, CqlType, CqlValue, Json, Schema};
use docsim_models::redis::RedisOp;
use docsim_models::{Doc, DocId, Key, Markers, Scalar, Time, Ttl, Write};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::fmt;

/// What a run exercises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Profile {
    /// Nested documents, depth up to 6, hot and cold keys.
    Nested,
    /// CQL tables: `msgs`, `page_views` and a random schema.
    Cql,
    /// Redis strings, hashes and sets.
    Redis,
    /// Documents where most writes carry TTLs (and maybe a table default).
    TtlHeavy,
    /// Documents read at random times between the history cutoff and now.
    TimeTravel,
}

impl Profile {
    /// Every profile.
    pub const ALL: [Profile; 5] =
        [Profile::Nested, Profile::Cql, Profile::Redis, Profile::TtlHeavy, Profile::TimeTravel];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Nested => "nested",
            Profile::Cql => "cql",
            Profile::Redis => "redis",
            Profile::TtlHeavy => "ttl",
            Profile::TimeTravel => "time-travel",
        }
    }

    /// The profile with this name.
    pub fn from_name(name: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Kinds of operation a knob set weighs.
const KINDS: [&str; 9] =
    ["set", "object", "extend", "obj", "del", "batch", "get", "get-past", "markers"];

/// The knobs one seed draws (swarm testing).
#[derive(Clone, Debug, PartialEq)]
pub struct Knobs {
    /// The profile.
    pub profile: Profile,
    /// Weight per operation kind (0 switches a kind off).
    pub weights: BTreeMap<&'static str, u32>,
    /// Documents (or Redis keys, or CQL partition keys) in play.
    pub keys: u32,
    /// Percent of operations on the few hot keys.
    pub hot_percent: u32,
    /// Deepest subkey path.
    pub max_depth: usize,
    /// Distinct subkey names per level.
    pub fanout: u32,
    /// Percent of writes with a TTL.
    pub ttl_percent: u32,
    /// Longest TTL, in milliseconds.
    pub ttl_max_ms: u64,
    /// Table default TTL, in milliseconds.
    pub table_ttl_ms: Option<u64>,
}

impl fmt::Display for Knobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let weights: Vec<String> = self.weights.iter().map(|(k, w)| format!("{k}:{w}")).collect();
        let table_ttl = self.table_ttl_ms.map_or("none".into(), |ms| format!("{ms}ms"));
        write!(
            f,
            "profile={} keys={} hot={}% depth={} fanout={} ttl={}%/{}ms table_ttl={} weights=[{}]",
            self.profile.name(),
            self.keys,
            self.hot_percent,
            self.max_depth,
            self.fanout,
            self.ttl_percent,
            self.ttl_max_ms,
            table_ttl,
            weights.join(" ")
        )
    }
}

impl Knobs {
    /// Draw knobs for one seed; `profile` forces the profile.
    pub fn draw(rng: &mut ChaCha8Rng, profile: Option<Profile>) -> Knobs {
        let profile = profile.unwrap_or(Profile::ALL[rng.random_range(0..Profile::ALL.len())]);
        let mut weights: BTreeMap<&'static str, u32> = BTreeMap::new();
        for kind in KINDS {
            let off = rng.random_range(0..4) == 0;
            weights.insert(kind, if off { 0 } else { rng.random_range(1..10) });
        }
        // Every run writes and reads.
        if ["set", "object", "batch"].iter().all(|k| weights[k] == 0) {
            weights.insert("set", 5);
        }
        if weights["get"] == 0 && weights["get-past"] == 0 {
            weights.insert("get", 5);
        }
        match profile {
            Profile::TimeTravel => *weights.get_mut("get-past").expect("kind") += 10,
            Profile::Nested => *weights.get_mut("get").expect("kind") += 3,
            _ => {}
        }
        let ttl_heavy = profile == Profile::TtlHeavy;
        let mut knobs = Knobs {
            profile,
            weights,
            keys: rng.random_range(2..12),
            hot_percent: rng.random_range(50..95),
            max_depth: rng.random_range(1..=6),
            fanout: rng.random_range(2..5),
            ttl_percent: if ttl_heavy { rng.random_range(50..95) } else { rng.random_range(0..25) },
            ttl_max_ms: rng.random_range(1..30),
            table_ttl_ms: (ttl_heavy && rng.random_bool(0.5)).then(|| rng.random_range(5..60)),
        };
        if knobs.table_ttl_ms.is_some() {
            // No required markers under a table TTL: YugabyteDB's Redis tables have none,
            // and its required-marker seeks ignore it, so a compaction that drops what the
            // table TTL expired changes their answers (`docs/findings.md`).
            knobs.weights.insert("markers", 0);
        }
        knobs
    }
}

/// A seeded workload: knobs plus what it has generated so far.
pub struct Workload {
    knobs: Knobs,
    tables: Vec<CqlTableSpec>,
    /// Recent write times and TTLs (ms), for reads right at expiry boundaries.
    recent: Vec<(Time, Option<u64>)>,
    /// The init-marker mode of the writes that follow (the last `markers` op).
    markers: Markers,
}

impl Workload {
    /// A workload with knobs drawn from `rng`.
    pub fn new(rng: &mut ChaCha8Rng, profile: Option<Profile>) -> Workload {
        let knobs = Knobs::draw(rng, profile);
        let tables = if knobs.profile == Profile::Cql { tables(rng) } else { Vec::new() };
        Workload { knobs, tables, recent: Vec::new(), markers: Markers::Optional }
    }

    /// The knobs.
    pub fn knobs(&self) -> &Knobs {
        &self.knobs
    }

    /// How many times slower than others this workload's simulated clock runs. CQL's TTLs
    /// are whole seconds (`USING TTL 1`), so a CQL run spans seconds: long enough for its
    /// TTLs to run out and for compactions to meet expired rows.
    pub fn clock_scale(&self) -> u64 {
        match self.knobs.profile {
            Profile::Cql => 8,
            _ => 1,
        }
    }

    /// Ops that set the stage (tables, table TTL), stamped at `now`.
    pub fn setup_ops(&self, _now: Time) -> Vec<Op> {
        let mut ops: Vec<Op> = self.tables.iter().cloned().map(Op::Table).collect();
        if let Some(ms) = self.knobs.table_ttl_ms {
            ops.push(Op::DefaultTtl { ttl_ms: Some(ms) });
        }
        ops
    }

    /// The next operation, at hybrid time `now`; reads stay at or above `cutoff`.
    pub fn next_op(&mut self, rng: &mut ChaCha8Rng, now: Time, cutoff: Time) -> Op {
        match self.knobs.profile {
            Profile::Cql => self.cql_op(rng, now, cutoff),
            Profile::Redis => self.redis_op(rng, now),
            _ => self.doc_op(rng, now, cutoff),
        }
    }

    fn pick_kind(&self, rng: &mut ChaCha8Rng) -> &'static str {
        let total: u32 = self.knobs.weights.values().sum();
        let mut at = rng.random_range(0..total);
        for (kind, w) in &self.knobs.weights {
            if at < *w {
                return kind;
            }
            at -= w;
        }
        unreachable!("weights sum to total")
    }

    fn key_index(&self, rng: &mut ChaCha8Rng) -> u32 {
        if rng.random_range(0..100) < self.knobs.hot_percent {
            rng.random_range(0..2.min(self.knobs.keys))
        } else {
            rng.random_range(0..self.knobs.keys)
        }
    }

    fn ttl(&self, rng: &mut ChaCha8Rng) -> Ttl {
        if rng.random_range(0..100) >= self.knobs.ttl_percent {
            return Ttl::Inherit;
        }
        if rng.random_range(0..10) == 0 {
            return Ttl::Never;
        }
        Ttl::Ms(rng.random_range(1..=self.knobs.ttl_max_ms))
    }

    fn remember(&mut self, ht: Time, ttl_ms: Option<u64>) {
        self.recent.push((ht, ttl_ms));
        if self.recent.len() > 64 {
            self.recent.remove(0);
        }
    }

    /// The write the workload generated at `generated` was given the hybrid time `actual`
    /// (a replicated group's leader times its writes): TTL-boundary reads aim at it.
    pub fn retime(&mut self, generated: Time, actual: Time) {
        if let Some(entry) = self.recent.iter_mut().rev().find(|(ht, _)| *ht == generated) {
            entry.0 = actual;
        }
    }

    /// A read time: now, the cutoff, anywhere in between, or right at a TTL boundary.
    fn read_time(&self, rng: &mut ChaCha8Rng, now: Time, cutoff: Time, past: bool) -> Time {
        if !past || now <= cutoff {
            return now;
        }
        let span = now - cutoff;
        // Now and then a read just below the cutoff: both sides must refuse it.
        if cutoff > 0 && rng.random_range(0..40) == 0 {
            return cutoff - 1;
        }
        let t = match rng.random_range(0..4) {
            0 => cutoff,
            1 => cutoff + rng.random_range(0..=span),
            _ => match self.recent.get(rng.random_range(0..self.recent.len().max(1))) {
                Some((w, Some(ms))) if *ms > 0 => {
                    // At the last visible moment, one logical tick after it (same
                    // microsecond), or a microsecond after it.
                    let edge = add_micros(*w, ms * 1000);
                    edge + [0, 1, 1 << 12][rng.random_range(0..3)]
                }
                Some((w, _)) => *w,
                None => now,
            },
        };
        t.clamp(cutoff, now)
    }

    /// A document and a path below its root, for a write in `mode` or a read (`None`).
    ///
    /// Writes with required markers go to documents of their own (`r0`, `r1`, ...), never
    /// colocated: YugabyteDB fixes a table's init-marker behaviour (Redis tables required,
    /// CQL optional) and has no colocated Redis tables, and its required-marker seeks are
    /// not compaction-proof on documents that mix both kinds of write (`docs/findings.md`, "What
    /// docsim finds in DocDB's rules"). Reads go anywhere.
    fn doc_path(&self, rng: &mut ChaCha8Rng, mode: Option<Markers>) -> (DocId, Vec<Key>) {
        let required = match mode {
            Some(mode) => mode == Markers::Required,
            None => rng.random_range(0..3) == 0 && self.knobs.weights["markers"] > 0,
        };
        let prefix = if required { "r" } else { "d" };
        let name = Key::of(Scalar::Str(format!("{prefix}{}", self.key_index(rng))));
        let mut doc = DocId { colocation: None, hashed: vec![], range: vec![name] };
        // Some documents live in colocated tables 1 and 2, whose table tombstones hide them.
        if !required && rng.random_range(0..5) == 0 {
            doc.colocation = Some(rng.random_range(1..3));
            if rng.random_range(0..12) == 0 {
                doc.range.clear(); // the table's own key
            }
        }
        let depth = rng.random_range(0..=self.knobs.max_depth);
        let path = (0..depth).map(|_| self.subkey(rng)).collect();
        (doc, path)
    }

    fn subkey(&self, rng: &mut ChaCha8Rng) -> Key {
        let i = rng.random_range(0..self.knobs.fanout);
        if rng.random_range(0..5) == 0 {
            Key::of(Scalar::Int64(i64::from(i)))
        } else {
            Key::of(Scalar::Str(((b'a' + i as u8) as char).to_string()))
        }
    }

    fn leaf(rng: &mut ChaCha8Rng) -> Scalar {
        match rng.random_range(0..6) {
            0 => Scalar::Null,
            1 => Scalar::Bool(rng.random_bool(0.5)),
            2 => double(f64::from(rng.random_range(-8i32..8)) / 4.0),
            3 => Scalar::Str(format!("v{}", rng.random_range(0..10))),
            _ => Scalar::Int64(rng.random_range(-3..100)),
        }
    }

    /// An object literal's entries.
    fn object(&self, rng: &mut ChaCha8Rng, depth: usize) -> BTreeMap<Key, Doc> {
        let mut map = BTreeMap::new();
        for _ in 0..rng.random_range(0..4) {
            let value = if depth < 2 && rng.random_range(0..4) == 0 {
                Doc::Object(self.object(rng, depth + 1))
            } else {
                Doc::Leaf(Self::leaf(rng))
            };
            map.insert(self.subkey(rng), value);
        }
        map
    }

    fn doc_write(&self, rng: &mut ChaCha8Rng, kind: &str) -> DocWrite {
        let (doc, path) = self.doc_path(rng, Some(self.markers));
        let (write, ttl) = match kind {
            "object" => (Write::Set(Doc::Object(self.object(rng, 0))), self.ttl(rng)),
            "extend" => (Write::Extend(self.object(rng, 0)), self.ttl(rng)),
            "obj" => (Write::Obj, self.ttl(rng)),
            "del" => (Write::Del, Ttl::Inherit),
            _ => (Write::Set(Doc::Leaf(Self::leaf(rng))), self.ttl(rng)),
        };
        DocWrite { doc, path, write, ttl }
    }

    fn doc_op(&mut self, rng: &mut ChaCha8Rng, now: Time, cutoff: Time) -> Op {
        let kind = self.pick_kind(rng);
        match kind {
            "get" | "get-past" => {
                let ht = self.read_time(rng, now, cutoff, kind == "get-past");
                let (doc, mut path) = self.doc_path(rng, None);
                path.truncate(rng.random_range(0..=path.len().min(2)));
                Op::Get { ht, doc, path }
            }
            "markers" => {
                let required = rng.random_bool(0.5);
                self.markers = if required { Markers::Required } else { Markers::Optional };
                Op::Markers(self.markers)
            }
            "batch" => {
                let writes: Vec<DocWrite> = (0..rng.random_range(2..5))
                    .map(|_| {
                        let inner =
                            ["set", "object", "extend", "obj", "del"][rng.random_range(0..5)];
                        self.doc_write(rng, inner)
                    })
                    .collect();
                let ttl = writes.iter().filter_map(|w| ttl_ms(w.ttl)).max();
                self.remember(now, ttl);
                Op::Batch { ht: now, writes }
            }
            _ => {
                let write = self.doc_write(rng, kind);
                self.remember(now, ttl_ms(write.ttl));
                Op::Write { ht: now, write }
            }
        }
    }

    /// A Redis command. Commands of every type meet on the same keys (WRONGTYPE must be
    /// checked), but mostly a hash's commands go to even keys and a set's to odd ones, so
    /// most of them find a key of their type and do their work.
    fn redis_op(&mut self, rng: &mut ChaCha8Rng, now: Time) -> Op {
        let kind = rng.random_range(0..11);
        let index = self.key_index(rng);
        let index = match (kind, rng.random_bool(0.85)) {
            (5..=8, true) => index & !1,
            (9.., true) => index | 1,
            _ => index,
        };
        let key = format!("k{index}");
        let word = |rng: &mut ChaCha8Rng, p: &str, n: u32| format!("{p}{}", rng.random_range(0..n));
        let op = match kind {
            0 | 1 => {
                let ttl_ms = (rng.random_range(0..100) < self.knobs.ttl_percent.max(20))
                    .then(|| rng.random_range(1..=self.knobs.ttl_max_ms.max(2)));
                self.remember(now, ttl_ms);
                RedisOp::Set { key, value: word(rng, "v", 10), ttl_ms }
            }
            2 => RedisOp::Get { key },
            3 => RedisOp::Del { keys: vec![key, format!("k{}", self.key_index(rng))] },
            4 => RedisOp::Expire { key, secs: rng.random_range(-1..3) },
            5 => {
                let n = rng.random_range(1..4);
                let fields = (0..n).map(|_| (word(rng, "f", 4), word(rng, "v", 10))).collect();
                RedisOp::HSet { key, fields }
            }
            6 => RedisOp::HGet { key, field: word(rng, "f", 4) },
            7 => RedisOp::HDel { key, fields: vec![word(rng, "f", 4)] },
            8 => RedisOp::HGetAll { key },
            9 => {
                let n = rng.random_range(1..4);
                RedisOp::SAdd { key, members: (0..n).map(|_| word(rng, "m", 6)).collect() }
            }
            _ => match rng.random_range(0..2) {
                0 => RedisOp::SRem { key, members: vec![word(rng, "m", 6)] },
                _ => RedisOp::SMembers { key },
            },
        };
        Op::Redis { ht: now, op }
    }

    fn cql_op(&mut self, rng: &mut ChaCha8Rng, now: Time, cutoff: Time) -> Op {
        let at = rng.random_range(0..self.tables.len());
        if rng.random_range(0..100) == 0 {
            let change = alter(rng, &self.tables[at]);
            apply_alter(&mut self.tables[at], &change);
            let table = self.tables[at].schema.name.clone();
            return Op::Cql { ht: now, table, op: CqlOp::Alter(change) };
        }
        let spec = self.tables[at].clone();
        let s = &spec.schema;
        let key = self.cql_key(rng, &spec);
        let ttl_s =
            (rng.random_range(0..100) < self.knobs.ttl_percent / 2).then(|| rng.random_range(0..2));
        let mut ht = now;
        let op = match rng.random_range(0..10) {
            0..=2 => {
                let mut values = Vec::new();
                for col in &s.regular {
                    if rng.random_bool(0.7) {
                        values.push((col.name.clone(), cql_value(rng, &spec, &col.name, true)));
                    }
                }
                CqlOp::Insert { key, values, ttl_s }
            }
            3 | 4 => {
                let col = s.regular[rng.random_range(0..s.regular.len())].clone();
                let assign = update_assign(rng, &spec, col.name, col.ty.kind());
                CqlOp::Update { key, assigns: vec![assign], ttl_s }
            }
            5 => CqlOp::DeleteRow { key },
            6 => {
                let col = &s.regular[rng.random_range(0..s.regular.len())];
                CqlOp::DeleteColumns { key, columns: vec![col.name.clone()] }
            }
            _ => {
                let past = rng.random_bool(0.5);
                ht = self.read_time(rng, now, cutoff, past);
                // A fifth of the reads scan every partition (every tablet), in hash order.
                let hash = match rng.random_bool(0.2) {
                    true => Vec::new(),
                    false => key[..s.hash.len()].to_vec(),
                };
                let range = self.range_conditions(rng, &spec, &key[s.hash.len()..]);
                let columns = rng.random_bool(0.3).then(|| {
                    let mut cols: Vec<String> = s.regular.iter().map(|r| r.name.clone()).collect();
                    cols.truncate(rng.random_range(1..=cols.len()));
                    cols
                });
                CqlOp::Select { hash, range, columns }
            }
        };
        if matches!(op, CqlOp::Insert { .. } | CqlOp::Update { .. }) {
            self.remember(now, ttl_s.map(|s| s * 1000));
        }
        Op::Cql { ht, table: s.name.clone(), op }
    }

    /// A SELECT's conditions on the first clustering column, if the table has one: none
    /// (three in five), one comparison with a key's value, or a range between two key
    /// values with either bound inclusive or not (`c >= a AND c < b`: what range pruning
    /// decides files by, `db/range_bounds.rs`).
    fn range_conditions(
        &self,
        rng: &mut ChaCha8Rng,
        spec: &CqlTableSpec,
        range_key: &[Scalar],
    ) -> Vec<(Cmp, Scalar)> {
        let Some(first) = range_key.first() else { return Vec::new() };
        match rng.random_range(0..5) {
            0 => {
                let cmp = [Cmp::Eq, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge][rng.random_range(0..5)];
                vec![(cmp, first.clone())]
            }
            1 => {
                let ty = column_type(spec, &spec.schema.range[0].0);
                let other = key_scalar(ty, self.key_index(rng) as usize);
                let lower = if rng.random_bool(0.5) { Cmp::Ge } else { Cmp::Gt };
                let upper = if rng.random_bool(0.5) { Cmp::Le } else { Cmp::Lt };
                let (low, high) = match docsim_models::cql::compare(first, Cmp::Le, &other) {
                    true => (first.clone(), other),
                    false => (other, first.clone()),
                };
                vec![(lower, low), (upper, high)]
            }
            _ => Vec::new(),
        }
    }

    fn cql_key(&self, rng: &mut ChaCha8Rng, spec: &CqlTableSpec) -> Vec<Scalar> {
        let names = spec.schema.hash.iter().chain(spec.schema.range.iter().map(|(n, _)| n));
        names
            .map(|n| {
                let i = self.key_index(rng);
                key_scalar(column_type(spec, n), i as usize)
            })
            .collect()
    }
}

/// A schema change for `spec`: drop one of its regular columns (never the last), or add
/// one under a fresh name or a name it had before (a new column all the same).
fn alter(rng: &mut ChaCha8Rng, spec: &CqlTableSpec) -> Alter {
    let regular = &spec.schema.regular;
    let names = ["x0", "x1", "x2"].into_iter().map(str::to_owned);
    let mut free: Vec<String> =
        names.chain(spec.dropped.iter().cloned()).filter(|n| !spec.schema.is_column(n)).collect();
    free.sort();
    free.dedup();
    if (regular.len() > 1 && rng.random_bool(0.5)) || free.is_empty() {
        let column = regular[rng.random_range(0..regular.len())].name.clone();
        return Alter::Drop { column };
    }
    let column = free[rng.random_range(0..free.len())].clone();
    let types = ["int", "text", "bigint", "double", "boolean", "set<int>", "map<text, int>"];
    let ty = types[rng.random_range(0..types.len())].to_owned();
    Alter::Add { column, ty: CqlType::parse(&ty).expect("a type the generator declares") }
}

/// Apply a schema change to the generator's copy of a table.
fn apply_alter(spec: &mut CqlTableSpec, change: &Alter) {
    spec.schema.alter(change).expect("the generator's changes are valid");
    match change {
        Alter::Add { column, ty } => spec.types.push((column.clone(), ty.name())),
        Alter::Drop { column } => {
            spec.types.retain(|(n, _)| n != column);
            spec.dropped.push(column.clone());
        }
    }
}

/// `t` plus `us` microseconds, saturating (the engine's `HybridTime::add_micros`).
fn add_micros(t: Time, us: u64) -> Time {
    match us.checked_shl(12) {
        Some(shifted) if shifted >> 12 == us => t.saturating_add(shifted),
        _ => Time::MAX,
    }
}

/// A TTL in ms as the boundary reads remember it (`Never` is 0, `Inherit` none).
fn ttl_ms(ttl: Ttl) -> Option<u64> {
    match ttl {
        Ttl::Inherit => None,
        Ttl::Never => Some(0),
        Ttl::Ms(ms) => Some(ms),
    }
}

/// A double as a scalar: its bit pattern, NaN canonical.
fn double(value: f64) -> Scalar {
    Scalar::Double(if value.is_nan() { f64::NAN.to_bits() } else { value.to_bits() })
}

fn column_type<'a>(spec: &'a CqlTableSpec, name: &str) -> &'a str {
    spec.types.iter().find(|(n, _)| n == name).map(|(_, t)| t.as_str()).expect("declared")
}

fn map_value_type(spec: &CqlTableSpec, name: &str) -> String {
    let t = column_type(spec, name);
    t.trim_start_matches("map<text, ").trim_end_matches('>').to_string()
}

fn cql_scalar(rng: &mut ChaCha8Rng, ty: &str) -> Scalar {
    match ty {
        "text" => Scalar::Str(format!("t{}", rng.random_range(0..6))),
        "int" => Scalar::Int32(rng.random_range(-5..50)),
        "bigint" => Scalar::Int64(rng.random_range(-5..500)),
        "double" => double(f64::from(rng.random_range(-8i32..8)) / 4.0),
        "timestamp" => Scalar::Timestamp(rng.random_range(-5..500i64) * 1_000_000),
        _ => Scalar::Bool(rng.random_bool(0.5)),
    }
}

/// One assignment of an UPDATE of column `name` (of shape `kind`).
fn update_assign(rng: &mut ChaCha8Rng, spec: &CqlTableSpec, name: String, kind: ColKind) -> Assign {
    match (kind, rng.random_range(0..4)) {
        (ColKind::Map, 0) => {
            let k = Scalar::Str(format!("p{}", rng.random_range(0..3)));
            Assign::MapPut(name.clone(), k, cql_scalar(rng, &map_value_type(spec, &name)))
        }
        (ColKind::Map | ColKind::Set | ColKind::List, 1) => {
            Assign::Add(name.clone(), cql_value(rng, spec, &name, false))
        }
        (ColKind::Jsonb, 1) => Assign::Add(name.clone(), CqlValue::Json(json_object(rng, 0))),
        (ColKind::Set, 2) => {
            Assign::Remove(name.clone(), vec![Scalar::Int32(rng.random_range(0..4))])
        }
        (ColKind::Map, 2) => {
            Assign::Remove(name.clone(), vec![Scalar::Str(format!("p{}", rng.random_range(0..3)))])
        }
        _ => Assign::Whole(name.clone(), cql_value(rng, spec, &name, true)),
    }
}

/// Key values of each CQL type, by key index: small ones first (the hot keys), then
/// negative and boundary values (the extremes of the type, the empty string, quotes).
fn key_scalar(ty: &str, i: usize) -> Scalar {
    const INTS: [i64; 12] =
        [0, 1, -1, 2, -2, i32::MIN as i64, i32::MAX as i64, 7, -7, 100, -100, 3];
    const BIGS: [i64; 12] = [0, 1, -1, 2, -2, i64::MIN, i64::MAX, 7, -7, 1 << 40, -(1 << 40), 3];
    const TEXTS: [&str; 12] =
        ["u0", "u1", "", "u2", "é", "it's", "u3", "a b", "u4", "\"q\"", "u5", "Z"];
    const DOUBLES: [f64; 12] =
        [0.0, 1.5, -1.5, 2.25, -2.25, f64::MAX, f64::MIN, 1e-300, -1e-300, 0.5, -0.5, 3.0];
    // Timestamps in whole milliseconds (CQL's unit), as far as microseconds reach.
    const MILLIS: [i64; 6] = [0, 1, -1, 1_700_000_000_000, -(1 << 40), i64::MAX / 1000];
    match ty {
        "text" => Scalar::Str(TEXTS[i % TEXTS.len()].to_owned()),
        "int" => Scalar::Int32(INTS[i % INTS.len()] as i32),
        "bigint" => Scalar::Int64(BIGS[i % BIGS.len()]),
        "double" => double(DOUBLES[i % DOUBLES.len()]),
        "boolean" => Scalar::Bool(i % 2 == 1),
        "timestamp" => Scalar::Timestamp(MILLIS[i % MILLIS.len()] * 1000),
        other => unreachable!("{other} is not a key type the generator declares"),
    }
}

/// A JSON value for a jsonb column: scalars, and below `depth` 2 arrays and objects.
fn json_value(rng: &mut ChaCha8Rng, depth: usize) -> Json {
    match rng.random_range(0..if depth < 2 { 8 } else { 5 }) {
        0 => Json::Null,
        1 => Json::Bool(rng.random_bool(0.5)),
        2 => Json::Int(rng.random_range(-5..50)),
        // Always with a fraction: an integral number is an int64 in jsonb.
        3 => Json::Double((f64::from(rng.random_range(-8i32..8)) + 0.25).to_bits()),
        4 => Json::Str(format!("s{}", rng.random_range(0..4))),
        5 => Json::Array((0..rng.random_range(0..3)).map(|_| json_value(rng, depth + 1)).collect()),
        _ => json_object(rng, depth),
    }
}

/// A JSON object with up to three distinct keys.
fn json_object(rng: &mut ChaCha8Rng, depth: usize) -> Json {
    let mut items: BTreeMap<String, Json> = BTreeMap::new();
    for _ in 0..rng.random_range(0..4) {
        items.insert(format!("j{}", rng.random_range(0..4)), json_value(rng, depth + 1));
    }
    Json::Object(items.into_iter().collect())
}

fn cql_value(rng: &mut ChaCha8Rng, spec: &CqlTableSpec, name: &str, nullable: bool) -> CqlValue {
    let ty = column_type(spec, name);
    if nullable && rng.random_range(0..8) == 0 {
        return CqlValue::Null;
    }
    if ty.starts_with("map<") {
        let vt = map_value_type(spec, name);
        let mut items: BTreeMap<String, Scalar> = BTreeMap::new();
        for _ in 0..rng.random_range(0..3) {
            items.insert(format!("p{}", rng.random_range(0..3)), cql_scalar(rng, &vt));
        }
        return CqlValue::Map(items.into_iter().map(|(k, v)| (Scalar::Str(k), v)).collect());
    }
    if ty.starts_with("set<") {
        let mut items: Vec<i32> =
            (0..rng.random_range(0..3)).map(|_| rng.random_range(0..4)).collect();
        items.sort();
        items.dedup();
        return CqlValue::Set(items.into_iter().map(Scalar::Int32).collect());
    }
    if ty.starts_with("list<") {
        let items = (0..rng.random_range(0..4)).map(|_| Scalar::Int32(rng.random_range(-5..50)));
        return CqlValue::List(items.collect());
    }
    if ty == "jsonb" {
        return CqlValue::Json(json_value(rng, 0));
    }
    CqlValue::Scalar(cql_scalar(rng, ty))
}

/// A table: its key columns, every column's `(name, CQL type)`, its default TTL.
fn table_spec(
    name: &str,
    hash: &[&str],
    range: &[(&str, bool)],
    cols: &[(&str, &str)],
    default_ttl_s: Option<u64>,
) -> CqlTableSpec {
    let key_names: Vec<&str> = hash.iter().copied().chain(range.iter().map(|(n, _)| *n)).collect();
    let schema = Schema::new(
        name,
        hash.iter().map(|s| s.to_string()).collect(),
        range.iter().map(|(n, d)| (n.to_string(), *d)).collect(),
        cols.iter()
            .filter(|(n, _)| !key_names.contains(n))
            .map(|(n, t)| (n.to_string(), CqlType::parse(t).expect("a declared type")))
            .collect(),
        default_ttl_s,
    );
    let types = cols.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
    CqlTableSpec { schema, types, dropped: Vec::new(), tablets: 1 }
}

/// The seed's tables: `msgs`, `page_views` and a random schema.
fn tables(rng: &mut ChaCha8Rng) -> Vec<CqlTableSpec> {
    let msgs = table_spec(
        "msgs",
        &["user_id"],
        &[("msg_id", false)],
        &[
            ("user_id", "text"),
            ("msg_id", "int"),
            ("msg", "text"),
            ("msg_props", "map<text, text>"),
        ],
        None,
    );
    let page_views = table_spec(
        "page_views",
        &["page_id"],
        &[],
        &[("page_id", "text"), ("views", "int"), ("category", "text")],
        None,
    );
    // A random schema: one or two hash columns, up to two clustering columns (maybe DESC),
    // one to four regular columns.
    let key_types = ["text", "int", "bigint", "double", "boolean", "timestamp"];
    let regular_types = [
        "text",
        "bigint",
        "double",
        "boolean",
        "timestamp",
        "map<text, bigint>",
        "set<int>",
        "list<int>",
        "jsonb",
    ];
    let mut cols: Vec<(String, String)> = Vec::new();
    let hash: Vec<String> = (0..rng.random_range(1..3)).map(|i| format!("h{i}")).collect();
    for h in &hash {
        cols.push((h.clone(), key_types[rng.random_range(0..key_types.len())].into()));
    }
    let range: Vec<(String, bool)> =
        (0..rng.random_range(0..3)).map(|i| (format!("r{i}"), rng.random_bool(0.5))).collect();
    for (r, _) in &range {
        cols.push((r.clone(), key_types[rng.random_range(0..key_types.len())].into()));
    }
    for i in 0..rng.random_range(1..5) {
        cols.push((
            format!("c{i}"),
            regular_types[rng.random_range(0..regular_types.len())].into(),
        ));
    }
    let ttl = rng.random_bool(0.3).then_some(1);
    let hash_refs: Vec<&str> = hash.iter().map(String::as_str).collect();
    let range_refs: Vec<(&str, bool)> = range.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    let col_refs: Vec<(&str, &str)> = cols.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    let random = table_spec("random", &hash_refs, &range_refs, &col_refs, ttl);
    // Each table split into tablets by hash range as the seed draws (half stay whole).
    let mut tables = vec![msgs, page_views, random];
    for table in &mut tables {
        table.tablets = [1, 1, 1, 2, 3, 4][rng.random_range(0..6)];
    }
    tables
}
