//! The reference models of a run, one per tablet's group, fed in log order: a committed
//! entry (the first time any replica applies its index) is its proposal's op, evaluated
//! by the model at the time the leader gave it; the model's reply must be the reply the
//! leader gave. A write the leader answered at once (it changed nothing) or refused is
//! evaluated on the model then: the same reply and nothing stored, or the same kind of
//! error. Reads are answered by the model at their read time, as the replica that served
//! them stands (the schema and default TTL it has applied).
//!
//! Why log order gives the leader's answers: a leader evaluates a write only with its
//! lease and its own term's first entry applied (so everything committed before it is
//! applied there), and a write that reads waits for the writes in flight to what it reads
//! (`engine/src/replica/requests.rs`); ht increases along the log. So the state a
//! leader evaluated against is the model's after the entries before it.

use crate::convert;
use crate::failure::{Broken, FailureKind};
use docsim_engine::cql::{Outcome as CqlOutcome, Row};
use docsim_engine::{Error, ErrorKind, HybridTime, OpId, Reply, TabletId};
use docsim_models::cql::{CqlOp, CqlResult, Schema};
use docsim_models::{DocId, Key, Markers, Model, ModelError};
use docsim_workloads::{DocWrite, Op, RestoreTo};
use std::collections::BTreeMap;

/// A proposal's op and what the leader answered, until its entry commits.
#[derive(Clone, Debug)]
pub struct Proposed {
    pub op: Op,
    pub markers: Markers,
    pub reply: Reply,
}

/// One table's model: its documents and its schema at each index a schema change
/// committed at (the first at index 0: as created).
#[derive(Clone, Debug)]
struct TableModel {
    model: Model,
    schemas: Vec<(u64, Schema)>,
    /// The columns dropped (each one's id and the hybrid time of its drop), from each
    /// index on: a drop adds one, a restore goes back to the set of its time.
    dropped: Vec<(u64, Vec<(i32, HybridTime)>)>,
    /// The time since which every replica keeps the history, from each index on (the
    /// engine's `Tablet::kept_since`, restated: a snapshot moves it to its time, a
    /// restore to its own, deleting the last snapshot clears it).
    kept: Vec<(u64, Option<HybridTime>)>,
    /// The snapshots the tablet holds: each one's time, and the time since which the
    /// history was kept when it was taken.
    live_snapshots: BTreeMap<String, (HybridTime, Option<HybridTime>)>,
    /// The hybrid time of each committed entry that had one, by index.
    entry_hts: BTreeMap<u64, HybridTime>,
}

/// What a snapshot must hold: the entry that takes it, its time, the tablet's rows then.
pub type SnapshotWant = (OpId, HybridTime, Result<ModelReply, ModelError>);

/// The models of every group.
#[derive(Default)]
pub struct Models {
    docs: Model,
    /// The document tablet's default TTL from each index on.
    docs_ttl: Vec<(u64, Option<u64>)>,
    /// Each table's models, one per tablet (a split table's rows are spread over them).
    tables: BTreeMap<TabletId, TableModel>,
    proposed: BTreeMap<(TabletId, OpId), Proposed>,
    /// The last index fed, by tablet.
    fed: BTreeMap<TabletId, u64>,
    /// The last index each replica applied, by (tablet, node).
    applied_at: BTreeMap<(TabletId, u64), u64>,
    /// What each snapshot must hold, noted when its entry committed (the model then holds
    /// exactly the entries before it): by (tablet, snapshot id), the entry and the
    /// tablet's rows read at the entry's time.
    pub snapshots: BTreeMap<(TabletId, String), SnapshotWant>,
    /// The snapshots whose deletion committed.
    pub deleted_snapshots: std::collections::BTreeSet<(TabletId, String)>,
}

/// What the model expected and what the engine gave, as output lines, with the kind.
pub type Mismatch = (FailureKind, Vec<String>, Vec<String>);

impl Models {
    /// A table created with `schema` as the catalog's `tablets` (no log entry).
    pub fn create_table(&mut self, schema: Schema, tablets: &[TabletId]) {
        for tablet in tablets {
            let mut model = Model::new();
            model.set_table_ttl_ms(schema.default_ttl_s.map(|s| s * 1000));
            let schemas = vec![(0, schema.clone())];
            let table = TableModel {
                model,
                schemas,
                dropped: vec![(0, Vec::new())],
                kept: vec![(0, None)],
                live_snapshots: BTreeMap::new(),
                entry_hts: BTreeMap::new(),
            };
            self.tables.insert(tablet.clone(), table);
        }
    }

    /// The key columns of `tablet`'s table, which no `ALTER TABLE` changes: the hash
    /// key's, and the clustering key's with whether each is descending.
    pub fn key_columns(&self, tablet: &TabletId) -> (Vec<String>, Vec<(String, bool)>) {
        let Some(table) = self.tables.get(tablet) else { return Default::default() };
        let schema = &table.schemas[0].1;
        (schema.hash.clone(), schema.range.clone())
    }

    /// The tablets of table `name` the models hold, in hash order.
    pub fn tablets_of(&self, name: &str) -> Vec<TabletId> {
        let of = |id: &&TabletId| id.table_name() == Some(name);
        self.tables.keys().filter(of).cloned().collect()
    }

    /// The tablets of table `name` a SELECT `op` reads, by the model's own partitioning:
    /// the one whose hash range holds its hash key, or (no hash key) every one.
    pub fn tablets_reading(&self, name: &str, op: &docsim_models::cql::CqlOp) -> Vec<TabletId> {
        let tablets = self.tablets_of(name);
        let Some(TabletId::Table(_, part)) = tablets.first() else { return tablets };
        let schema = &self.tables[&tablets[0]].schemas[0].1;
        match docsim_models::cql::partition_hash(schema, op) {
            Some(hash) => {
                let owner = docsim_models::partition::tablet_of(hash, part.count);
                let of = |t: &TabletId| matches!(t, TabletId::Table(_, p) if p.index == owner);
                tablets.into_iter().filter(of).collect()
            }
            None => tablets,
        }
    }

    /// Why `op` does not belong in `tablet` by the model's own partitioning, if it does
    /// not: a statement with a hash key goes to the tablet whose hash range holds it.
    pub fn misrouted(&self, tablet: &TabletId, op: &Op) -> Option<Mismatch> {
        let (TabletId::Table(_, part), Op::Cql { op, .. }) = (tablet, op) else { return None };
        let schema = &self.tables.get(tablet)?.schemas[0].1;
        let hash = docsim_models::cql::partition_hash(schema, op)?;
        let owner = docsim_models::partition::tablet_of(hash, part.count);
        (owner != part.index).then(|| {
            let want = format!("hash {hash:#06x}: tablet {owner} of {}", part.count);
            (FailureKind::Misrouted, vec![want], vec![format!("sent to {tablet}")])
        })
    }

    /// A leader proposed `proposed` as the entry `op_id` of `tablet`.
    pub fn proposed(&mut self, tablet: TabletId, op_id: OpId, proposed: Proposed) {
        self.proposed.insert((tablet, op_id), proposed);
    }

    /// Replica `node` applied index `index` of `tablet` (while it runs, what it applied
    /// only grows: events of one collection may come out of order).
    pub fn applied(&mut self, tablet: &TabletId, node: u64, index: u64) {
        let at = self.applied_at.entry((tablet.clone(), node)).or_default();
        *at = (*at).max(index);
    }

    /// Replica `node` of `tablet` restarted, bootstrap having applied up to `index`.
    pub fn restarted(&mut self, tablet: &TabletId, node: u64, index: u64) {
        self.applied_at.insert((tablet.clone(), node), index);
    }

    /// A snapshot installed at `node` brought it to `index`.
    pub fn installed(&mut self, tablet: &TabletId, node: u64, index: u64) {
        self.applied(tablet, node, index);
    }

    /// Feed `tablet`'s model the committed entries after the last one fed, in order, as
    /// `committed` (index → (term, time)) holds them.
    pub fn feed(
        &mut self,
        tablet: &TabletId,
        committed: &BTreeMap<u64, (u64, Option<HybridTime>)>,
    ) -> Result<(), Mismatch> {
        let mut next = self.fed.get(tablet).copied().unwrap_or(0) + 1;
        while let Some(&(term, ht)) = committed.get(&next) {
            if let Some(ht) = ht {
                let op_id = OpId::new(term, next);
                let Some(p) = self.proposed.remove(&(tablet.clone(), op_id)) else {
                    let why = format!("committed entry {op_id} at {ht} is no client's write");
                    return Err((FailureKind::UnknownEntry, vec![], vec![why]));
                };
                if let Some(t) = self.tables.get_mut(tablet) {
                    t.entry_hts.insert(next, ht);
                }
                self.commit(tablet, next, ht, &p)?;
                match &p.op {
                    Op::Snapshot { table, id, delete: false } => {
                        let rows = self.read_at(tablet, next, &select_all(table), ht);
                        self.snapshots.insert((tablet.clone(), id.clone()), (op_id, ht, rows));
                    }
                    Op::Snapshot { id, delete: true, .. } => {
                        self.deleted_snapshots.insert((tablet.clone(), id.clone()));
                    }
                    _ => {}
                }
            }
            self.fed.insert(tablet.clone(), next);
            next += 1;
        }
        Ok(())
    }

    /// Evaluate the committed write `p` (entry `index`) at `ht`: it must succeed with the
    /// leader's reply.
    fn commit(
        &mut self,
        tablet: &TabletId,
        index: u64,
        ht: HybridTime,
        p: &Proposed,
    ) -> Result<(), Mismatch> {
        let result = self.evaluate(tablet, (index, index), ht, p);
        match (result, &p.reply) {
            (Ok(want), got) if reply_agrees(&want, got) => Ok(()),
            (Ok(want), got) => {
                let mut got = engine_reply_lines(got);
                got.push(format!("(the leader's reply to {} entry {index})", tablet_label(tablet)));
                Err((FailureKind::Redis, reply_lines(&want), got))
            }
            (Err(e), _) => Err((
                FailureKind::AcceptedWrite,
                vec![format!("error: {}", expected_kind(&e))],
                vec![format!("committed as entry {index} of {}", tablet_label(tablet))],
            )),
        }
    }

    /// The model's evaluation of a write op at `ht`, as the entry at `index` (a schema or
    /// TTL change takes effect from it), against the schemas in effect at index `seen`.
    fn evaluate(
        &mut self,
        tablet: &TabletId,
        (index, seen): (u64, u64),
        ht: HybridTime,
        p: &Proposed,
    ) -> Result<ModelReply, ModelError> {
        let time = ht.raw();
        match &p.op {
            Op::Write { write, .. } => {
                self.write_docs(time, p.markers, std::slice::from_ref(write))
            }
            Op::Batch { writes, .. } => self.write_docs(time, p.markers, writes),
            Op::Redis { op, .. } => self.docs.redis(time, op).map(ModelReply::Redis),
            Op::DefaultTtl { ttl_ms } => {
                self.docs_ttl.push((index, *ttl_ms));
                self.docs.set_table_ttl_ms(*ttl_ms);
                Ok(ModelReply::Written)
            }
            Op::Cql { op: CqlOp::Alter(change), .. } => {
                let t = self.tables.get_mut(tablet).ok_or(ModelError::InvalidRequest)?;
                let mut schema = t.schemas.last().expect("as created").1.clone();
                let id = |s: &Schema, name: &str| {
                    s.regular.iter().find(|r| r.name == name).map(|r| r.id)
                };
                let dropped = match change {
                    docsim_models::cql::Alter::Drop { column } => id(&schema, column),
                    docsim_models::cql::Alter::Add { .. } => None,
                };
                schema.alter(change)?;
                t.schemas.push((index, schema));
                if index != u64::MAX {
                    if let Some(id) = dropped {
                        let mut set = t.dropped.last().expect("as created").1.clone();
                        set.push((id, ht));
                        t.dropped.push((index, set));
                    }
                }
                Ok(ModelReply::Written)
            }
            Op::Cql { op, .. } => {
                let t = self.tables.get_mut(tablet).ok_or(ModelError::InvalidRequest)?;
                let mut schema = in_effect(&t.schemas, seen).expect("as created");
                t.model.cql(time, &mut schema, op).map(|_| ModelReply::Written)
            }
            // A snapshot changes no data: what it must hold is noted when it commits.
            Op::Snapshot { id, delete, .. } => {
                if let (Some(t), true) = (self.tables.get_mut(tablet), index != u64::MAX) {
                    t.snapshot(index, ht, id, *delete);
                }
                Ok(ModelReply::Written)
            }
            Op::Restore { to, .. } => {
                let t = self.tables.get_mut(tablet).ok_or(ModelError::InvalidRequest)?;
                let to = t.restore_source(to, ht)?;
                if index != u64::MAX {
                    t.restore(index, ht, to);
                }
                Ok(ModelReply::Written)
            }
            other => unreachable!("not a write: {other:?}"),
        }
    }

    fn write_docs(
        &mut self,
        time: u64,
        markers: Markers,
        writes: &[DocWrite],
    ) -> Result<ModelReply, ModelError> {
        let writes: Vec<_> = writes.iter().map(DocWrite::to_model).collect();
        self.docs.write_batch(time, markers, &writes).map(|()| ModelReply::Written)
    }

    /// A write the leader answered at once (nothing to store: `reply`) or refused
    /// (`error`), evaluated at `ht` on the model as it stands: the same answer, and
    /// nothing stored.
    pub fn evaluated_now(
        &mut self,
        tablet: &TabletId,
        op: &Op,
        (markers, node): (Markers, u64),
        ht: HybridTime,
        outcome: Result<&Reply, &Error>,
    ) -> Result<(), Mismatch> {
        let (docs_before, tables_before) = self.stored();
        let p = Proposed { op: op.clone(), markers, reply: Reply::Written };
        // Against the schema the leader `node` had applied; a refused schema change takes
        // no effect.
        let applied = self.applied_at.get(&(tablet.clone(), node)).copied().unwrap_or(0);
        let result = self.evaluate_refusable(tablet, (u64::MAX, applied), ht, &p);
        let stored = self.stored() != (docs_before, tables_before);
        let kind = mismatch_kind(op);
        match (result, outcome) {
            (Ok(want), Ok(got)) if reply_agrees(&want, got) && !stored => Ok(()),
            (Ok(want), Ok(got)) => Err((kind, reply_lines(&want), engine_reply_lines(got))),
            (Err(m), Err(e)) if expected_kind(&m) == e.kind() => Ok(()),
            (Err(m), got) => Err((kind, vec![format!("error: {}", expected_kind(&m))], shown(got))),
            (Ok(want), Err(e)) => {
                Err((FailureKind::RefusedWrite, reply_lines(&want), vec![format!("error: {e}")]))
            }
        }
    }

    /// [`Models::evaluate`], where a refused schema or TTL change leaves no trace.
    fn evaluate_refusable(
        &mut self,
        tablet: &TabletId,
        index: (u64, u64),
        ht: HybridTime,
        p: &Proposed,
    ) -> Result<ModelReply, ModelError> {
        let (ttl, schemas) = (self.docs_ttl.len(), self.tables.values().map(|t| t.schemas.len()));
        let schemas: Vec<usize> = schemas.collect();
        let result = self.evaluate(tablet, index, ht, p);
        if result.is_err() {
            self.docs_ttl.truncate(ttl);
            for (t, len) in self.tables.values_mut().zip(schemas) {
                t.schemas.truncate(len);
            }
        }
        result
    }

    fn stored(&self) -> (u64, Vec<u64>) {
        (self.docs.batches(), self.tables.values().map(|t| t.model.batches()).collect())
    }

    /// The model's answer to the read `op` of `tablet` at `read_ht`, as replica `node`
    /// stands: a document, rows, or a Redis reply; or the model's error.
    pub fn read(
        &mut self,
        tablet: &TabletId,
        node: u64,
        op: &Op,
        read_ht: HybridTime,
    ) -> Result<ModelReply, ModelError> {
        let applied = self.applied_index(tablet, node);
        self.read_at(tablet, applied, op, read_ht)
    }

    /// The last index replica `node` of `tablet` applied, as the model knows it.
    pub fn applied_index(&self, tablet: &TabletId, node: u64) -> u64 {
        self.applied_at.get(&(tablet.clone(), node)).copied().unwrap_or(0)
    }

    /// The model's answer to the read `op` at `read_ht` by a replica that had applied up
    /// to index `applied` (its schema and default TTL).
    pub fn read_at(
        &mut self,
        tablet: &TabletId,
        applied: u64,
        op: &Op,
        read_ht: HybridTime,
    ) -> Result<ModelReply, ModelError> {
        let time = read_ht.raw();
        match op {
            Op::Get { doc, path, .. } => {
                let ttl = in_effect(&self.docs_ttl, applied).flatten();
                self.docs.set_table_ttl_ms(ttl);
                self.docs.read(doc, path, time).map(ModelReply::Document)
            }
            Op::Redis { op, .. } => {
                let ttl = in_effect(&self.docs_ttl, applied).flatten();
                self.docs.set_table_ttl_ms(ttl);
                self.docs.redis(time, op).map(ModelReply::Redis)
            }
            Op::Cql { op, .. } => {
                let t = self.tables.get_mut(tablet).ok_or(ModelError::InvalidRequest)?;
                let schema = in_effect(&t.schemas, applied).expect("as created");
                let mut schema = schema.clone();
                match t.model.cql(time, &mut schema, op)? {
                    CqlResult::Rows(rows) => Ok(ModelReply::Rows(rows)),
                    CqlResult::Written => Ok(ModelReply::Written),
                }
            }
            other => unreachable!("not a read: {other:?}"),
        }
    }

    /// The later of snapshot `id`'s time and `tablet`'s last restore, if the model noted
    /// the snapshot.
    pub fn latest_restore_or_snapshot(&self, tablet: &TabletId, id: &str) -> Option<HybridTime> {
        let (_, ht, _) = self.snapshots.get(&(tablet.clone(), id.to_owned()))?;
        let restored = self.tables.get(tablet)?.model.last_restore().map(HybridTime::from_raw);
        Some(restored.map_or(*ht, |r| r.max(*ht)))
    }

    /// What `SELECT *` reads at `at` from a copy of `tablet` restored at `at` to its
    /// snapshot `id` (an imported backup of it): by the model's restore, the rows a read
    /// at the snapshot's time found, under the schema its entry saw. `None` if the model
    /// noted no such snapshot, or `at` is not after every restore it knows.
    pub fn imported_rows(
        &self,
        tablet: &TabletId,
        id: &str,
        at: HybridTime,
    ) -> Option<Result<ModelReply, ModelError>> {
        let (op_id, ht, _) = self.snapshots.get(&(tablet.clone(), id.to_owned()))?;
        let t = self.tables.get(tablet)?;
        let mut model = t.model.clone();
        if at <= *ht || model.last_restore().is_some_and(|r| r >= at.raw()) {
            return None;
        }
        model.restore(at.raw(), ht.raw());
        let mut schema = in_effect(&t.schemas, op_id.index).expect("as created");
        let Op::Cql { op, .. } = select_all(&schema.name) else { unreachable!("a CQL read") };
        Some(match model.cql(at.raw(), &mut schema, &op) {
            Ok(CqlResult::Rows(rows)) => Ok(ModelReply::Rows(rows)),
            Ok(CqlResult::Written) => Ok(ModelReply::Written),
            Err(e) => Err(e),
        })
    }

    /// The model's whole document `doc` of `tablet` at `read_ht` as replica `node` stands
    /// (a convergence read): a table's row shows only the columns its schema has.
    pub fn document(
        &mut self,
        tablet: &TabletId,
        node: u64,
        doc: &DocId,
        read_ht: HybridTime,
    ) -> Result<Option<docsim_models::Doc>, ModelError> {
        let applied = self.applied_at.get(&(tablet.clone(), node)).copied().unwrap_or(0);
        match tablet {
            TabletId::Docs => {
                let ttl = in_effect(&self.docs_ttl, applied).flatten();
                self.docs.set_table_ttl_ms(ttl);
                self.docs.read(doc, &[], read_ht.raw())
            }
            TabletId::Table(..) => {
                let t = self.tables.get(tablet).ok_or(ModelError::InvalidRequest)?;
                let schema = in_effect(&t.schemas, applied).expect("as created");
                let row = t.model.read(doc, &[], read_ht.raw())?;
                Ok(row.and_then(|row| current_columns(row, &schema)))
            }
        }
    }

    /// The ids of table `tablet`'s list columns as replica `node` stands (none for the
    /// document tablet).
    pub fn list_columns(&self, tablet: &TabletId, node: u64) -> Vec<i32> {
        let applied = self.applied_at.get(&(tablet.clone(), node)).copied().unwrap_or(0);
        let Some(t) = self.tables.get(tablet) else { return Vec::new() };
        let schema = in_effect(&t.schemas, applied).expect("as created");
        let lists =
            schema.regular.iter().filter(|r| r.ty.kind() == docsim_models::cql::ColKind::List);
        lists.map(|r| r.id).collect()
    }

    /// The document tablet's default TTL, and each table's (for the GC check).
    pub fn table_ttl_ms(&self, tablet: &TabletId) -> Option<u64> {
        match tablet {
            TabletId::Docs => self.docs_ttl.last().and_then(|(_, ttl)| *ttl),
            TabletId::Table(..) => {
                self.tables.get(tablet).and_then(|t| t.schemas[0].1.default_ttl_s.map(|s| s * 1000))
            }
        }
    }

    /// Each column dropped from table `tablet` and when, as far as replica `node` applied
    /// (for the GC check).
    pub fn dropped_columns(&self, tablet: &TabletId, node: u64) -> Vec<(i32, HybridTime)> {
        let applied = self.applied_index(tablet, node);
        let Some(t) = self.tables.get(tablet) else { return Vec::new() };
        in_effect(&t.dropped, applied).unwrap_or_default()
    }

    /// The time since which replica `node` of `tablet` keeps the history for restores, as
    /// far as it applied (the engine's `Tablet::kept_since`, restated).
    pub fn kept_since(&self, tablet: &TabletId, node: u64) -> Option<HybridTime> {
        let t = self.tables.get(tablet)?;
        in_effect(&t.kept, self.applied_index(tablet, node)).flatten()
    }

    /// The document ids a table's model holds (for a SELECT's scan).
    pub fn doc_ids(&self, tablet: &TabletId) -> Vec<DocId> {
        match tablet {
            TabletId::Docs => self.docs.docs_where(|_| true),
            TabletId::Table(..) => {
                self.tables.get(tablet).map(|t| t.model.docs_where(|_| true)).unwrap_or_default()
            }
        }
    }
}

impl TableModel {
    /// The snapshot entry `index` at `ht`: snapshot `id` taken or deleted.
    fn snapshot(&mut self, index: u64, ht: HybridTime, id: &str, delete: bool) {
        let kept = self.kept.last().expect("as created").1;
        match delete {
            false => {
                self.live_snapshots.insert(id.to_owned(), (ht, kept));
                self.kept.push((index, Some(kept.map_or(ht, |at| at.max(ht)))));
            }
            true => {
                self.live_snapshots.remove(id);
                if self.live_snapshots.is_empty() {
                    self.kept.push((index, None));
                }
            }
        }
    }

    /// The time a restore at `ht` to `to` goes back to, or why the leader refuses it: a
    /// snapshot it holds; a time before `ht` whose history every replica still keeps
    /// (since `kept`), or that a snapshot taken after it kept.
    fn restore_source(&self, to: &RestoreTo, ht: HybridTime) -> Result<HybridTime, ModelError> {
        let time = match to {
            RestoreTo::Snapshot(id) => {
                return self.live_snapshots.get(id).map(|s| s.0).ok_or(ModelError::InvalidRequest)
            }
            RestoreTo::Time(time) => HybridTime::from_raw(*time),
        };
        let kept = self.kept.last().expect("as created").1;
        let by_snapshot = |(at, since): &(HybridTime, Option<HybridTime>)| {
            *at >= time && since.is_some_and(|since| since <= time)
        };
        let covered = kept.is_some_and(|since| since <= time)
            || self.live_snapshots.values().any(by_snapshot);
        match time < ht && covered {
            true => Ok(time),
            false => Err(ModelError::InvalidRequest),
        }
    }

    /// The restore entry `index` at `ht` to the time `to`: the rows, the schema and the
    /// dropped columns as they were then; the history kept since `ht`.
    fn restore(&mut self, index: u64, ht: HybridTime, to: HybridTime) {
        self.model.restore(ht.raw(), to.raw());
        let then = self.entry_hts.range(..index).rfind(|(_, at)| **at <= to);
        let schema = in_effect(&self.schemas, then.map_or(0, |(i, _)| *i)).expect("as created");
        self.schemas.push((index, schema));
        let then_dropped = in_effect(&self.dropped, then.map_or(0, |(i, _)| *i));
        self.dropped.push((index, then_dropped.expect("as created")));
        let kept = self.kept.last().expect("as created").1;
        self.kept.push((index, kept.map(|at| at.max(ht))));
    }
}

/// The newest value in effect at `index` of a list ordered by index.
fn in_effect<T: Clone>(list: &[(u64, T)], index: u64) -> Option<T> {
    list.iter().rev().find(|(at, _)| *at <= index).map(|(_, v)| v.clone())
}

/// A row's document with only the columns of `schema` (and the liveness column); none
/// when nothing is left (a dropped column's values do not make a row exist).
fn current_columns(row: docsim_models::Doc, schema: &Schema) -> Option<docsim_models::Doc> {
    use docsim_models::{Doc, Scalar};
    let Doc::Object(map) = row else { return Some(row) };
    let keep = |k: &Key| match &k.scalar {
        Scalar::Column(id) => schema.regular.iter().any(|r| r.id == *id),
        _ => true,
    };
    let kept: std::collections::BTreeMap<_, _> = map.into_iter().filter(|(k, _)| keep(k)).collect();
    (!kept.is_empty()).then_some(Doc::Object(kept))
}

/// `doc` (a row) with the elements of its list columns `lists` keyed by their positions:
/// the model keys a list's elements by write time, the engine by its tablet's counter
/// (`models/src/cql.rs`); only their order is the same, and only it is compared.
pub fn list_positions(doc: docsim_models::Doc, lists: &[i32]) -> docsim_models::Doc {
    use docsim_models::{Doc, Scalar};
    let Doc::Object(map) = doc else { return doc };
    let row = map.into_iter().map(|(k, v)| match (&k.scalar, v) {
        (Scalar::Column(id), Doc::Object(elements)) if lists.contains(id) => {
            let at = |(i, v): (usize, Doc)| (Key::of(Scalar::Int64(i as i64)), v);
            (k, Doc::Object(elements.into_values().enumerate().map(at).collect()))
        }
        (_, v) => (k, v),
    });
    Doc::Object(row.collect())
}

/// What the model answered a write or read.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelReply {
    Written,
    Document(Option<docsim_models::Doc>),
    Rows(Vec<Vec<(String, docsim_models::cql::Cell)>>),
    Redis(docsim_models::redis::Reply),
}

/// Whether the engine's reply is the model's.
pub fn reply_agrees(want: &ModelReply, got: &Reply) -> bool {
    match (want, got) {
        (ModelReply::Written, Reply::Written) => true,
        (ModelReply::Document(w), Reply::Document(g)) => *w == g.as_ref().map(convert::doc),
        (ModelReply::Rows(w), Reply::Rows(g)) => *w == rows(g),
        (ModelReply::Redis(w), Reply::Redis(g)) => *w == convert::reply(g),
        _ => false,
    }
}

fn rows(rows: &[Row]) -> Vec<Vec<(String, docsim_models::cql::Cell)>> {
    rows.iter().map(|r| r.iter().map(|(n, c)| (n.clone(), convert::cell(c))).collect()).collect()
}

/// A tablet as lines name it: `docs`, `table=<name>` or `table=<name>/<index>`.
fn tablet_label(tablet: &TabletId) -> String {
    tablet.to_string()
}

/// The model's reply as the engine prints it.
pub fn reply_lines(reply: &ModelReply) -> Vec<String> {
    match reply {
        ModelReply::Written => vec![],
        ModelReply::Document(Some(doc)) => vec![format!("=> {}", convert::document(doc))],
        ModelReply::Document(None) => vec!["=> <none>".into()],
        ModelReply::Rows(rows) => {
            let rows: Vec<Row> = rows
                .iter()
                .map(|r| r.iter().map(|(n, c)| (n.clone(), convert::engine_cell(c))).collect())
                .collect();
            docsim_engine::cql::format_rows(&rows)
        }
        ModelReply::Redis(r) => {
            convert::engine_reply(r).to_string().lines().map(str::to_owned).collect()
        }
    }
}

fn shown(outcome: Result<&Reply, &Error>) -> Vec<String> {
    match outcome {
        Ok(reply) => engine_reply_lines(reply),
        Err(e) => vec![format!("error: {e}")],
    }
}

/// The engine's reply as docscript prints replies (a document in its notation, without
/// the path a `get` line starts with; a write as `(written)`).
pub fn engine_reply_lines(reply: &Reply) -> Vec<String> {
    match reply {
        Reply::Written => vec!["(written)".into()],
        Reply::Document(Some(doc)) => vec![format!("=> {doc}")],
        Reply::Document(None) => vec!["=> <none>".into()],
        Reply::Rows(rows) => docsim_engine::cql::format_rows(rows),
        Reply::Redis(r) => r.to_string().lines().map(str::to_owned).collect(),
        Reply::Page { rows, last } => {
            let mut lines = docsim_engine::cql::format_rows(rows);
            lines.push(format!("last={}", last.as_ref().map_or("-".into(), |k| k.to_string())));
            lines
        }
    }
}

/// The kind of check an op's mismatch is.
pub fn mismatch_kind(op: &Op) -> FailureKind {
    match op {
        Op::Get { .. } => FailureKind::Get,
        Op::Cql { op: CqlOp::Select { .. }, .. } => FailureKind::Select,
        Op::Redis { .. } => FailureKind::Redis,
        _ => FailureKind::AcceptedWrite,
    }
}

/// The engine error kind that means what the model's error means.
pub fn expected_kind(e: &ModelError) -> ErrorKind {
    match e {
        ModelError::SnapshotTooOld => ErrorKind::SnapshotTooOld,
        ModelError::NotAnObject => ErrorKind::TypeConflict,
        ModelError::WrongType => ErrorKind::WrongType,
        ModelError::InvalidRequest => ErrorKind::InvalidRequest,
    }
}

/// A failed check, typed.
pub fn broken((kind, expected, actual): &Mismatch) -> Broken {
    Broken::new(*kind, format!("expected {expected:?}, got {actual:?}"))
}

/// A CQL outcome as the reply the tablet gives.
pub fn cql_reply(outcome: CqlOutcome) -> Reply {
    match outcome {
        CqlOutcome::Rows(rows) => Reply::Rows(rows),
        CqlOutcome::Written => Reply::Written,
    }
}

/// `SELECT * FROM <table>`, as the workload's op.
pub fn select_all(table: &str) -> Op {
    let op = CqlOp::Select { hash: Vec::new(), range: Vec::new(), columns: None };
    Op::Cql { ht: 0, table: table.to_owned(), op }
}
