//! A tablet's metadata: what every replica must hold to read the tablet's data — the CQL
//! table's schema with every packing version its packed rows name, or the document
//! tablet's default TTL. It changes only by a metadata change applied from the Raft log
//! (YugabyteDB's `ChangeMetadataOperation`, `tablet/operations/change_metadata_operation.cc`,
//! applied by `Tablet::AlterSchema` at the same op id on every replica), and it is stored
//! in RocksDB beside the flushed frontier, so a replica that restarts or installs a
//! snapshot has exactly the metadata its data was written under.
//!
//! Stored form (docsim's own, text, one item a line): `docs` then `default_ttl=<ms|none>`;
//! or `table packed=<0|1> entity=<0|1>`, the `CREATE TABLE` statement, then each `ALTER
//! TABLE` in the order applied, after the hybrid time of its entry (`T<raw> ALTER ...`).
//! Re-applying the ALTERs rebuilds every schema version; their times say when a dropped
//! column went, which compaction needs (`Schema::gc`).

use crate::cql::{AlterChange, ColumnKind, CqlTable, CqlType, Statement};
use crate::encoding::{KeyEntry, Primitive};
use crate::error::{Error, Result};
use crate::gc::SchemaGc;
use crate::hybrid_time::HybridTime;

/// A tablet's metadata.
#[derive(Clone, Debug, PartialEq)]
pub enum Schema {
    /// The document tablet (documents and Redis keys) and its default TTL.
    Docs { default_ttl_ms: Option<u64> },
    /// A CQL table's tablet.
    Table(Box<TableSchema>),
}

/// A CQL table's schema: as created, the changes applied since, and the result.
#[derive(Clone, Debug, PartialEq)]
pub struct TableSchema {
    created: CqlTable,
    /// Each change applied, with the hybrid time of its entry.
    changes: Vec<(Change, HybridTime)>,
    current: CqlTable,
}

/// A change of a table's schema: an `ALTER TABLE`, or a restore back to the schema the
/// table had at a time (a new schema version with that time's columns).
#[derive(Clone, Debug, PartialEq)]
enum Change {
    Alter(AlterChange),
    Restore(HybridTime),
}

/// The table after a change, and the columns dropped so far with their drops' times.
#[derive(Clone)]
struct State {
    at: HybridTime,
    table: CqlTable,
    dropped: Vec<(i32, HybridTime)>,
}

/// One metadata change, carried by a Raft entry.
#[derive(Clone, Debug, PartialEq)]
pub enum MetaChange {
    /// The document tablet's default TTL (`default_ttl`).
    DefaultTtl(Option<u64>),
    /// `ALTER TABLE`.
    Alter(AlterChange),
    /// A snapshot of the tablet taken at this entry, or one deleted (`snapshot create`,
    /// `snapshot delete`; YugabyteDB's `TabletSnapshotOp`): no schema change, but an
    /// entry every replica applies at one op id.
    Snapshot(SnapshotOp),
    /// A restore of the tablet (`restore`; YugabyteDB's `TabletSnapshots::Restore`): its
    /// data and schema as they were at a time, every entry since hidden (`db/restore.rs`).
    Restore(RestoreOp),
}

/// What a client asks to restore: a snapshot (to its own time), or a point in time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RestoreTarget {
    Snapshot(String),
    Time(HybridTime),
    /// A snapshot a backup's import placed on every replica (`backup import`): restored
    /// with the schema its checkpoint holds, not the tablet's history's.
    Imported(String),
}

/// What a restore's entry restores: from snapshot `from`'s checkpoint, or (none) from the
/// live data, everything as it was at `to` (a snapshot's own time, or a time between).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreOp {
    pub from: Option<String>,
    pub to: HybridTime,
    /// The snapshot is a backup's: the tablet takes its checkpoint's schema (and list
    /// counter) as its own before restoring (YugabyteDB's import recreates the table
    /// with the backup's schema).
    pub imported: bool,
}

/// What a snapshot entry does, to the snapshot named by its id (docsim's names: letters,
/// digits, `_` and `-`, used as a directory name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SnapshotOp {
    Create(String),
    Delete(String),
}

/// Whether `id` is a snapshot's name: 1 to 64 letters, digits, `_` or `-`.
pub fn valid_snapshot_id(id: &str) -> bool {
    crate::backup::valid_name(id) // one rule for every name that is a directory's
}

impl TableSchema {
    /// The table after each change, from its creation on (each change applied once
    /// already applies again).
    fn history(&self) -> Vec<State> {
        let created = State { at: HybridTime::MIN, table: self.created.clone(), dropped: vec![] };
        let mut states = vec![created];
        for (change, ht) in &self.changes {
            let mut state = states.last().expect("as created").clone();
            match change {
                Change::Alter(alter) => {
                    if let AlterChange::Drop { column } = alter {
                        if let Some(ColumnKind::Regular(id)) =
                            state.table.column(column).map(|c| c.kind)
                        {
                            state.dropped.push((id, *ht));
                        }
                    }
                    state.table.alter(alter).expect("applied once already");
                }
                Change::Restore(to) => {
                    let then = state_at(&states, *to);
                    state.dropped = then.dropped.clone();
                    state.table.restore_columns(&then.table);
                }
            }
            state.at = *ht;
            states.push(state);
        }
        states
    }

    /// A restore at `ht` to the schema as it was at `to`.
    fn restore_to(&mut self, to: HybridTime, ht: HybridTime) {
        let then = state_at(&self.history(), to).table.clone();
        self.current.restore_columns(&then);
        self.changes.push((Change::Restore(to), ht));
    }
}

/// The last of `states` at or before `to`.
fn state_at(states: &[State], to: HybridTime) -> &State {
    states.iter().rev().find(|s| s.at <= to).unwrap_or(&states[0])
}

impl Schema {
    /// A new table's schema (its layout flags as created).
    pub fn table(created: CqlTable) -> Schema {
        let current = created.clone();
        Schema::Table(Box::new(TableSchema { created, changes: Vec::new(), current }))
    }

    /// The metadata as the tablet was created with it (no change applied).
    pub fn as_created(&self) -> Schema {
        match self {
            Schema::Docs { .. } => Schema::Docs { default_ttl_ms: None },
            Schema::Table(t) => Schema::table(t.created.clone()),
        }
    }

    /// This schema under the table name `name` (a backup imported as another table).
    pub fn renamed(&self, name: &str) -> Schema {
        let mut schema = self.clone();
        if let Schema::Table(t) = &mut schema {
            (t.created.name, t.current.name) = (name.to_owned(), name.to_owned());
        }
        schema
    }

    /// The CQL table, if this is a table's tablet.
    pub fn cql(&self) -> Option<&CqlTable> {
        match self {
            Schema::Docs { .. } => None,
            Schema::Table(t) => Some(&t.current),
        }
    }

    /// The default TTL reads apply to values stored without one.
    pub fn default_ttl_ms(&self) -> Option<u64> {
        match self {
            Schema::Docs { default_ttl_ms } => *default_ttl_ms,
            Schema::Table(t) => t.current.default_ttl_ms,
        }
    }

    /// Check `change` against this metadata without applying it (a leader does, before it
    /// proposes the change): the error it would give.
    pub fn check(&self, change: &MetaChange) -> Result<()> {
        self.clone().apply(change, HybridTime::MIN)
    }

    /// Apply `change`, carried by an entry at `ht`; nothing changes when it is refused.
    pub fn apply(&mut self, change: &MetaChange, ht: HybridTime) -> Result<()> {
        match (self, change) {
            (_, MetaChange::Snapshot(_)) => Ok(()), // the tablet's files, not its schema
            (Schema::Table(t), MetaChange::Restore(restore)) => {
                t.restore_to(restore.to, ht);
                Ok(())
            }
            (Schema::Docs { .. }, MetaChange::Restore(_)) => Err(Error::InvalidRequest(
                "restore names the document tablet: only a table's tablets restore".into(),
            )),
            (Schema::Docs { default_ttl_ms }, MetaChange::DefaultTtl(ttl)) => {
                *default_ttl_ms = *ttl;
                Ok(())
            }
            (Schema::Table(t), MetaChange::Alter(alter)) => {
                t.current.alter(alter)?;
                t.changes.push((Change::Alter(alter.clone()), ht));
                Ok(())
            }
            (Schema::Docs { .. }, MetaChange::Alter(_)) => {
                Err(Error::InvalidRequest("ALTER TABLE names the document tablet".into()))
            }
            (Schema::Table(t), MetaChange::DefaultTtl(_)) => Err(Error::InvalidRequest(format!(
                "default_ttl is the document tablet's; table {} has its own",
                t.current.name
            ))),
        }
    }

    /// What compaction needs of the schema (`gc.rs`): the paths below a row that can have
    /// no descendants (the liveness column and every scalar column: a CQL statement
    /// writes nothing below them), and each dropped column with the time its drop's entry
    /// was written (YugabyteDB's `CompactionSchemaInfo::deleted_cols`); its writes are
    /// blind (CQL). The document tablet has none of these: a document can get children
    /// anywhere, and a required-marker write seeks what is stored.
    pub fn gc(&self) -> SchemaGc {
        let Schema::Table(t) = self else { return SchemaGc::default() };
        let encoded = |entry: KeyEntry| {
            let mut bytes = Vec::new();
            entry.encode_to(&mut bytes);
            bytes
        };
        let subkey = |id| encoded(KeyEntry::asc(Primitive::ColumnId(id)));
        let mut leaves = vec![encoded(KeyEntry::asc(Primitive::SystemColumnId(0)))];
        let mut collections = Vec::new();
        for c in &t.current.columns {
            let ColumnKind::Regular(id) = c.kind else { continue };
            match &c.ty {
                ty if !ty.is_nested() => leaves.push(subkey(id)),
                CqlType::Map(_, element) | CqlType::List(element) if !element.is_nested() => {
                    collections.push(subkey(id))
                }
                CqlType::Set(_) => collections.push(subkey(id)),
                _ => {} // jsonb: a subdocument
            }
        }
        let history = t.history();
        let now = history.last().expect("as created");
        let dropped = now.dropped.iter().map(|(id, ht)| (subkey(*id), *ht)).collect();
        SchemaGc { leaves, collections, dropped, blind_writes: true }
    }

    /// The stored form.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Schema::Docs { default_ttl_ms } => {
                let ttl = default_ttl_ms.map_or("none".to_owned(), |ms| ms.to_string());
                format!("docs\ndefault_ttl={ttl}\n").into_bytes()
            }
            Schema::Table(t) => {
                let c = &t.created;
                let mut out = format!(
                    "table packed={} entity={}\n{c}\n",
                    u8::from(c.packed_rows),
                    u8::from(c.entity_rows)
                );
                for (change, ht) in &t.changes {
                    match change {
                        Change::Alter(change) => {
                            let table = c.name.clone();
                            let alter = Statement::Alter { table, change: change.clone() };
                            out.push_str(&format!("T{} {alter}\n", ht.raw()));
                        }
                        Change::Restore(to) => {
                            out.push_str(&format!("T{} RESTORE TO {}\n", ht.raw(), to.raw()))
                        }
                    }
                }
                out.into_bytes()
            }
        }
    }

    /// The metadata a stored form holds, or what is wrong with it.
    pub fn decode(bytes: &[u8]) -> std::result::Result<Schema, String> {
        let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
        let mut lines = text.lines();
        match lines.next() {
            Some("docs") => {
                let ttl = lines.next().and_then(|l| l.strip_prefix("default_ttl="));
                let ttl = ttl.ok_or("no default_ttl line")?;
                let default_ttl_ms = match ttl {
                    "none" => None,
                    ms => Some(ms.parse().map_err(|_| format!("default_ttl={ms}"))?),
                };
                Ok(Schema::Docs { default_ttl_ms })
            }
            Some(flags) => decode_table(flags, lines),
            None => Err("empty".into()),
        }
    }
}

fn decode_table<'a>(
    flags: &str,
    mut lines: impl Iterator<Item = &'a str>,
) -> std::result::Result<Schema, String> {
    let flag = |name: &str| match flags.split(' ').find_map(|f| f.strip_prefix(name)) {
        Some("1") => Ok(true),
        Some("0") => Ok(false),
        _ => Err(format!("`{flags}` lacks {name}<0|1>")),
    };
    if !flags.starts_with("table ") {
        return Err(format!("`{flags}` is neither `docs` nor `table ...`"));
    }
    let (packed, entity) = (flag("packed=")?, flag("entity=")?);
    let create = lines.next().ok_or("no CREATE TABLE line")?;
    let mut created = CqlTable::parse(create).map_err(|e| format!("{create}: {e}"))?;
    (created.packed_rows, created.entity_rows) = (packed, entity);
    let mut schema = Schema::table(created);
    for line in lines {
        let (ht, alter) = line
            .strip_prefix('T')
            .and_then(|rest| rest.split_once(' '))
            .and_then(|(raw, alter)| Some((HybridTime::from_raw(raw.parse().ok()?), alter)))
            .ok_or_else(|| format!("`{line}`: no `T<time> ` before the change"))?;
        if let Some(to) = alter.strip_prefix("RESTORE TO ") {
            let to = to.parse().map_err(|_| format!("`{line}`: RESTORE TO <raw time>"))?;
            let restore = MetaChange::Restore(RestoreOp {
                from: None,
                to: HybridTime::from_raw(to),
                imported: false,
            });
            schema.apply(&restore, ht).map_err(|e| format!("{line}: {e}"))?;
            continue;
        }
        let statement = crate::cql::parse_statement(alter).map_err(|e| format!("{line}: {e}"))?;
        let Statement::Alter { change, .. } = statement else {
            return Err(format!("`{line}` is no ALTER TABLE"));
        };
        schema.apply(&MetaChange::Alter(change), ht).map_err(|e| format!("{line}: {e}"))?;
    }
    Ok(schema)
}

impl std::fmt::Display for MetaChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetaChange::DefaultTtl(None) => f.write_str("default_ttl none"),
            MetaChange::DefaultTtl(Some(ms)) => write!(f, "default_ttl {ms}"),
            MetaChange::Alter(AlterChange::Add { column, ty }) => {
                write!(f, "ADD {column} {}", ty.name())
            }
            MetaChange::Alter(AlterChange::Drop { column }) => write!(f, "DROP {column}"),
            MetaChange::Snapshot(SnapshotOp::Create(id)) => write!(f, "snapshot create {id}"),
            MetaChange::Snapshot(SnapshotOp::Delete(id)) => write!(f, "snapshot delete {id}"),
            MetaChange::Restore(RestoreOp { from, to, imported }) => {
                f.write_str("restore")?;
                match (from, imported) {
                    (Some(id), false) => write!(f, " from={id}")?,
                    (Some(id), true) => write!(f, " import={id}")?,
                    (None, _) => {}
                }
                write!(f, " to={}", to.raw())
            }
        }
    }
}

impl MetaChange {
    /// The change a [`MetaChange`]'s `Display` text names, or why it names none.
    pub fn parse(text: &str) -> std::result::Result<MetaChange, String> {
        if let Some(rest) = text.strip_prefix("restore ") {
            return parse_restore(rest).ok_or_else(|| format!("`{text}`: not a restore"));
        }
        if let Some(rest) = text.strip_prefix("snapshot ") {
            let op = match rest.split_once(' ') {
                Some(("create", id)) => SnapshotOp::Create(id.to_owned()),
                Some(("delete", id)) => SnapshotOp::Delete(id.to_owned()),
                _ => return Err(format!("`{text}`: a snapshot entry creates or deletes one")),
            };
            let (SnapshotOp::Create(id) | SnapshotOp::Delete(id)) = &op;
            if !valid_snapshot_id(id) {
                return Err(format!("`{text}`: `{id}` is no snapshot name"));
            }
            return Ok(MetaChange::Snapshot(op));
        }
        if let Some(ttl) = text.strip_prefix("default_ttl ") {
            return match ttl {
                "none" => Ok(MetaChange::DefaultTtl(None)),
                ms => ms
                    .parse()
                    .map(|ms| MetaChange::DefaultTtl(Some(ms)))
                    .map_err(|_| format!("`{text}`: a default TTL is `none` or milliseconds")),
            };
        }
        let statement = crate::cql::parse_statement(&format!("ALTER TABLE t {text}"))
            .map_err(|e| format!("`{text}`: {e}"))?;
        match statement {
            Statement::Alter { change, .. } => Ok(MetaChange::Alter(change)),
            _ => Err(format!("`{text}` is no metadata change")),
        }
    }
}

/// `[from=<id> |import=<id> ]to=<raw hybrid time>`.
fn parse_restore(text: &str) -> Option<MetaChange> {
    let (from, imported, to) = match text.split_once(' ') {
        Some((source, to)) => {
            let (imported, id) = match source.split_once('=')? {
                ("from", id) => (false, id),
                ("import", id) => (true, id),
                _ => return None,
            };
            (Some(valid_snapshot_id(id).then(|| id.to_owned())?), imported, to)
        }
        None => (None, false, text),
    };
    let to = HybridTime::from_raw(to.strip_prefix("to=")?.parse().ok()?);
    Some(MetaChange::Restore(RestoreOp { from, to, imported }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(statement: &str) -> CqlTable {
        CqlTable::parse(statement).expect("a table")
    }

    /// The stored form brings back every schema version: a packed row written under
    /// version 0 decodes after two ALTERs on a replica that restarted.
    #[test]
    fn a_schema_round_trips_with_its_history_and_flags() {
        let mut created = table("CREATE TABLE t (k int, a int, PRIMARY KEY (k))");
        created.packed_rows = true;
        created.entity_rows = true;
        let mut schema = Schema::table(created);
        let add = AlterChange::Add { column: "b".into(), ty: crate::cql::CqlType::Text };
        schema.apply(&MetaChange::Alter(add), HybridTime::MIN).expect("add");
        schema
            .apply(&MetaChange::Alter(AlterChange::Drop { column: "a".into() }), HybridTime::MIN)
            .expect("drop");
        let back = Schema::decode(&schema.encode()).expect("decodes");
        assert_eq!(back, schema);
        let cql = back.cql().expect("a table");
        assert_eq!((cql.schema_version, cql.packings().get(0).is_some()), (2, true));
        assert!(cql.packed_rows && cql.entity_rows);
        let docs = Schema::Docs { default_ttl_ms: Some(1500) };
        assert_eq!(Schema::decode(&docs.encode()), Ok(docs));
    }

    /// A restore goes back to the columns of a time as a new schema version, every
    /// earlier version's packing kept; a later restore to a time before it finds the
    /// history as it was then; the stored form brings it all back.
    #[test]
    fn a_restore_is_a_new_version_with_the_columns_of_its_time() {
        let mut created = table("CREATE TABLE t (k int PRIMARY KEY, a int, b int)");
        created.packed_rows = true;
        let mut schema = Schema::table(created);
        let at = |us| HybridTime::from_micros(us);
        let add = AlterChange::Add { column: "c".into(), ty: crate::cql::CqlType::Int };
        schema.apply(&MetaChange::Alter(add), at(10)).expect("add");
        let drop_b = MetaChange::Alter(AlterChange::Drop { column: "b".into() });
        schema.apply(&drop_b, at(20)).expect("drop");
        let restore =
            |to| MetaChange::Restore(RestoreOp { from: None, to: at(to), imported: false });
        schema.apply(&restore(15), at(30)).expect("restore");
        let names = |s: &Schema| {
            let cql = s.cql().expect("a table");
            (cql.columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>(), cql.schema_version)
        };
        assert_eq!(names(&schema), (vec!["k".into(), "a".into(), "b".into(), "c".into()], 3));
        assert!(schema.gc().dropped.is_empty(), "b is back");
        assert!((0..=3).all(|v| schema.cql().expect("a table").packings().get(v).is_some()));
        schema.apply(&restore(25), at(40)).expect("restore again");
        assert_eq!(names(&schema), (vec!["k".into(), "a".into(), "c".into()], 4));
        assert_eq!(schema.gc().dropped.len(), 1, "b dropped again, at its drop's time");
        assert_eq!(Schema::decode(&schema.encode()), Ok(schema));
    }

    #[test]
    fn a_refused_change_changes_nothing_and_damaged_forms_are_named() {
        let mut schema = Schema::table(table("CREATE TABLE t (k int PRIMARY KEY, a int)"));
        let before = schema.clone();
        let drop_key = MetaChange::Alter(AlterChange::Drop { column: "k".into() });
        assert!(schema.apply(&drop_key, HybridTime::MIN).is_err());
        assert_eq!(schema, before);
        assert!(schema.apply(&MetaChange::DefaultTtl(None), HybridTime::MIN).is_err());
        assert_eq!(Schema::decode(b""), Err("empty".into()));
        assert!(MetaChange::parse("restore from=a/b to=5").is_err());
        assert!(MetaChange::parse("restore to=x").is_err());
        assert_eq!(Schema::decode(b"docs\n"), Err("no default_ttl line".into()));
        assert!(Schema::decode(b"table packed=1\nCREATE TABLE").unwrap_err().contains("entity="));
        let snapshot = MetaChange::Snapshot(SnapshotOp::Create("s-1".into()));
        let to = HybridTime::new(1000, 2);
        let restore =
            MetaChange::Restore(RestoreOp { from: Some("s-1".into()), to, imported: false });
        let pitr = MetaChange::Restore(RestoreOp { from: None, to, imported: false });
        let import = MetaChange::Restore(RestoreOp { from: Some("b".into()), to, imported: true });
        assert!(MetaChange::parse("restore into=b to=5").is_err());
        for change in [MetaChange::DefaultTtl(Some(5)), drop_key, snapshot, restore, pitr, import] {
            assert_eq!(MetaChange::parse(&change.to_string()), Ok(change));
        }
    }
}
