//! The tablet's state machine apart from Raft: evaluation, apply and metadata.

use super::*;
use crate::cql::parse_statement;
use crate::doc_write::{DocWrite, MarkerMode, WriteKind};

/// A fresh directory (emptied).
fn scratch(name: &str) -> std::path::PathBuf {
    crate::tests::scratch_dir(&format!("tablet-{name}"))
}

fn table_tablet(dir: &Path, create: &str) -> Tablet {
    let table = crate::cql::CqlTable::parse(create).expect("a table");
    let schema = Schema::table(table);
    Tablet::open(dir, &Rocks::on_disk(), Plants::NONE, StorageConfig::default(), schema)
        .expect("opens")
}

fn cql(text: &str) -> Request {
    Request::Cql(parse_statement(text).expect("a statement"))
}

/// A list index handed out by the leader's evaluation, and one applied from the log,
/// both move the counter: a statement in the same microsecond continues past them, and so
/// does the tablet reopened from its files (the counter is stored with the data).
#[test]
fn list_indexes_continue_past_every_index_evaluated_or_applied() {
    let dir = scratch("lists");
    let create = "CREATE TABLE t (k int PRIMARY KEY, l list<int>)";
    let mut tablet = table_tablet(&dir, create);
    let ht = HybridTime::from_micros(5);
    let append = cql("UPDATE t SET l = l + [1, 2] WHERE k = 1");
    let first = tablet.evaluate(&append, ht).expect("evaluated");
    assert_eq!(tablet.list_next, 5_002, "the leader's counter moved");
    // Another replica applies the same entry: its counter moves too.
    let Some(payload) = first.payload else { panic!("a write") };
    let follower_dir = scratch("lists-follower");
    let mut follower = table_tablet(&follower_dir, create);
    follower.apply(OpId::new(1, 1), &payload).expect("applied");
    assert_eq!(follower.list_next, 5_002);
    follower.flush().expect("flushed");
    drop(follower);
    let reopened = Tablet::open(
        &follower_dir,
        &Rocks::on_disk(),
        Plants::NONE,
        StorageConfig::default(),
        Schema::Docs { default_ttl_ms: None },
    )
    .expect("reopens");
    assert_eq!(reopened.list_next, 5_002, "stored with the data");
    assert!(reopened.schema.cql().is_none(), "no change stored: the initial schema");
    for dir in [dir, follower_dir] {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// An ALTER TABLE is a metadata change: checked by the leader against its schema, applied
/// by every replica at its op id, stored with the frontier; a refused one proposes nothing.
#[test]
fn a_schema_change_is_an_entry_every_replica_applies() {
    let dir = scratch("alter");
    let mut tablet = table_tablet(&dir, "CREATE TABLE t (k int PRIMARY KEY, a int)");
    let ht = HybridTime::from_micros(7);
    let refused = tablet.evaluate(&cql("ALTER TABLE t DROP k"), ht).expect_err("a key column");
    assert_eq!(refused.kind(), crate::ErrorKind::InvalidRequest);
    let added = tablet.evaluate(&cql("ALTER TABLE t ADD b text"), ht).expect("checked");
    assert_eq!(tablet.schema.cql().expect("a table").schema_version, 0, "not applied yet");
    let payload = added.payload.expect("a metadata change");
    assert!(matches!(payload, Payload::Meta { .. }), "{payload:?}");
    let applied = tablet.apply(OpId::new(1, 2), &payload).expect("applied");
    assert_eq!(applied, Applied { ht: Some(ht), writes: false, snapshot: None, restored: None });
    assert_eq!(tablet.schema.cql().expect("a table").schema_version, 1);
    let stored = tablet.db.metadata(SCHEMA_KEY).expect("read").expect("stored");
    assert_eq!(Schema::decode(&stored).as_ref(), Ok(&tablet.schema));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A document write on a table's tablet, or a CQL statement naming another table, is
/// refused by the tablet itself.
#[test]
fn a_tablet_serves_only_its_own_requests() {
    let dir = scratch("own");
    let mut tablet = table_tablet(&dir, "CREATE TABLE t (k int PRIMARY KEY, a int)");
    let path = crate::encoding::DocPath::new(crate::encoding::DocKey::default(), vec![]);
    let write = DocWrite { path, kind: WriteKind::Obj, ttl_us: None };
    let request = Request::Write { writes: vec![write], markers: MarkerMode::Optional };
    let ht = HybridTime::from_micros(1);
    assert_eq!(tablet.evaluate(&request, ht).unwrap_err().kind(), crate::ErrorKind::InvalidRequest);
    let other = cql("INSERT INTO u (k, a) VALUES (1, 2)");
    assert_eq!(tablet.evaluate(&other, ht).unwrap_err().kind(), crate::ErrorKind::NoSuchTable);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The history kept for restores follows the entries applied, not the snapshot
/// directories on disk: a deletion applied before a power cut removed its directory for
/// good while the entries before it are applied again, and replaying an older deletion
/// must not find "no snapshot left" (seed 104395, three replicas).
#[test]
fn the_history_kept_follows_the_entries_not_the_snapshot_directories() {
    use super::schema::SnapshotOp::{Create, Delete};
    let dir = scratch("kept");
    let mut tablet = table_tablet(&dir, "CREATE TABLE t (k int PRIMARY KEY, v int)");
    let at = HybridTime::from_micros;
    let snapshot = |op, us| Payload::Meta { ht: at(us), change: MetaChange::Snapshot(op) };
    tablet.apply(OpId::new(1, 1), &snapshot(Create("s1".into()), 100)).expect("s1");
    tablet.apply(OpId::new(1, 2), &snapshot(Create("s2".into()), 200)).expect("s2");
    assert_eq!(tablet.kept_since(), Some(at(200)));
    // What the deletion of s2 (a later entry) did to the disk before the power cut.
    tablet.db.delete_snapshot("s2").expect("deleted");
    tablet.apply(OpId::new(1, 3), &snapshot(Delete("s1".into()), 300)).expect("s1 deleted");
    assert_eq!(tablet.kept_since(), Some(at(200)), "s2's entry has not been undone");
    tablet.apply(OpId::new(1, 4), &snapshot(Delete("s2".into()), 400)).expect("s2 deleted");
    assert_eq!(tablet.kept_since(), None, "the last snapshot's deletion releases it");
    // The term is stored with the frontier: reopened, the tablet holds what it applied.
    tablet.apply(OpId::new(1, 5), &snapshot(Create("s3".into()), 500)).expect("s3");
    tablet.db.flush().expect("flushed");
    drop(tablet);
    let reopened = table_tablet(&dir, "CREATE TABLE t (k int PRIMARY KEY, v int)");
    assert_eq!(reopened.kept, Kept { since: Some(at(500)), snapshots: ["s3".into()].into() });
}
