use super::*;

use crate::tests::scratch_dir;

fn open(dir: &std::path::Path) -> rocksdb::DB {
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    rocksdb::DB::open(&opts, dir).expect("open")
}

/// An entity written in a batch with a plain value reads back column by column (name
/// order); a plain `get` or iterator sees its default column; a plain value reads as one
/// default column.
#[test]
fn entities_round_trip_beside_plain_values() {
    let dir = scratch_dir("entity-round-trip");
    let db = open(&dir);
    let mut batch = EntityBatch::new();
    batch.put(b"plain", b"v");
    let columns: [(&[u8], &[u8]); 3] =
        [(b"", b"row"), (b"\x00\x0b", b"eleven"), (b"\x00\x0a", b"ten")];
    batch.put_entity(&db, b"row", &columns).expect("put entity");
    batch.write(&db, false).expect("write");
    let got = get_entity(&db, b"row").expect("get").expect("present");
    let want: Vec<Column> =
        [(&b""[..], &b"row"[..]), (b"\x00\x0a", b"ten"), (b"\x00\x0b", b"eleven")]
            .iter()
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect();
    assert_eq!(got, want, "columns in name order");
    assert_eq!(db.get(b"row").expect("get"), Some(b"row".to_vec()), "the default column");
    let plain = get_entity(&db, b"plain").expect("get").expect("present");
    assert_eq!(plain, vec![(Vec::new(), b"v".to_vec())]);
    assert_eq!(get_entity(&db, b"absent").expect("get"), None);
    // The iterator shows the same, where it is.
    let mut it = Iter::new(&db, Some(b"rox".to_vec()), true);
    it.seek(b"");
    assert_eq!((it.key(), it.value()), (Some(&b"plain"[..]), Some(&b"v"[..])));
    assert_eq!(it.columns(), vec![(Vec::new(), b"v".to_vec())]);
    it.next();
    assert_eq!((it.key(), it.value()), (Some(&b"row"[..]), Some(&b"row"[..])));
    assert_eq!(it.columns(), want);
    it.next();
    assert_eq!((it.key(), it.columns()), (None, Vec::new()), "the upper bound ends it");
    assert_eq!(it.status(), Ok(()));
    drop(it);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}

/// An iterator that meets a damaged table file stops and says why: its status carries
/// RocksDB's corruption error (the scans turn it into a storage error, never a short
/// read that looks complete).
#[test]
fn an_iterator_over_a_damaged_file_reports_the_corruption() {
    let dir = scratch_dir("entity-damaged");
    let db = open(&dir);
    (0..100u32).for_each(|i| db.put(i.to_be_bytes(), [7u8; 64]).expect("put"));
    db.flush().expect("flush");
    drop(db);
    let sst = std::fs::read_dir(&dir).expect("dir").map(|e| e.expect("entry").path());
    let sst = sst.filter(|p| p.extension().is_some_and(|x| x == "sst")).collect::<Vec<_>>();
    assert_eq!(sst.len(), 1, "one table file");
    let mut bytes = std::fs::read(&sst[0]).expect("read");
    bytes[20] ^= 0xff; // inside the first data block
    std::fs::write(&sst[0], bytes).expect("write");
    let db = open(&dir);
    let mut it = Iter::new(&db, None, true);
    it.seek(b"");
    assert_eq!(it.key(), None, "nothing read from the damaged block");
    let status = it.status().expect_err("the damage is reported");
    assert!(status.starts_with("Corruption: "), "{status}");
    drop(it);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}

/// RocksDB refuses an entity naming a column twice; the error comes back as text, the
/// batch writes nothing of it.
#[test]
fn a_column_named_twice_is_refused() {
    let dir = scratch_dir("entity-twice");
    let db = open(&dir);
    let mut batch = EntityBatch::new();
    let columns: [(&[u8], &[u8]); 2] = [(b"a", b"1"), (b"a", b"2")];
    let err = batch.put_entity(&db, b"k", &columns).expect_err("duplicate column");
    assert_eq!(err, "Corruption: Wide columns out of order");
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Why the entity layout needs a `FilterV3` filter of its own: a compaction filter
/// written against the C API (as the engine's GC filter is) is never shown an entity.
/// This filter removes everything it sees; the plain value goes, the entity stays.
#[test]
fn a_c_api_compaction_filter_never_sees_entities() {
    use rocksdb::compaction_filter::Decision;
    let dir = scratch_dir("entity-filter");
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    opts.set_compaction_filter("remove_all", |_level, _key, _value| Decision::Remove);
    let db = rocksdb::DB::open(&opts, &dir).expect("open");
    let mut batch = EntityBatch::new();
    batch.put(b"plain", b"v");
    batch.put_entity(&db, b"row", &[(b"", b"row"), (b"c", b"1")]).expect("put entity");
    batch.write(&db, false).expect("write");
    db.flush().expect("flush");
    db.compact_range(None::<&[u8]>, None::<&[u8]>);
    assert_eq!(get_entity(&db, b"plain").expect("get"), None, "the filter removed it");
    assert!(get_entity(&db, b"row").expect("get").is_some(), "the filter never saw it");
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A filter that records what it is shown and decides by key (`boom` panics).
struct Rules(std::sync::Arc<std::sync::Mutex<Vec<String>>>);
impl EntityFilter for Rules {
    fn filter(&mut self, _level: u32, key: &[u8], entry: Entry<'_>) -> EntityDecision {
        let shown = match &entry {
            Entry::Value(v) => format!("{} = {}", show(key), show(v)),
            Entry::Entity(c) => format!("{} = entity of {}", show(key), c.len()),
        };
        self.0.lock().expect("not poisoned").push(shown);
        match key {
            b"gone" | b"x" => EntityDecision::Remove,
            b"boom" => panic!("boom"),
            b"plain" => EntityDecision::ChangeValue(b"changed".to_vec()),
            b"row" => EntityDecision::ChangeEntity(vec![(b"c".to_vec(), b"2".to_vec())]),
            _ => EntityDecision::Keep,
        }
    }

    fn panicked(&mut self, message: String) {
        self.0.lock().expect("not poisoned").push(format!("panicked: {message}"));
    }
}
fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A filter installed through the shim is shown entities and plain values alike, and its
/// decisions hold: remove, change a value, change an entity's columns, keep.
#[test]
fn a_filter_v3_sees_entities_and_its_decisions_hold() {
    let dir = scratch_dir("entity-filter-v3");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    let (shared, kinds) = (seen.clone(), std::sync::Arc::new(std::sync::Mutex::new(Vec::new())));
    let kinds_seen = kinds.clone();
    set_filter_factory(
        &mut opts,
        Box::new(move |full, manual| {
            kinds_seen.lock().expect("not poisoned").push((full, manual));
            Box::new(Rules(shared.clone()))
        }),
    );
    let db = rocksdb::DB::open(&opts, &dir).expect("open");
    let mut batch = EntityBatch::new();
    batch.put(b"plain", b"v");
    batch.put(b"x", b"v");
    batch.put(b"kept", b"v");
    batch.put(b"boom", b"v");
    batch.put_entity(&db, b"gone", &[(b"a", b"1")]).expect("put entity");
    batch.put_entity(&db, b"row", &[(b"", b"d"), (b"c", b"1")]).expect("put entity");
    batch.write(&db, false).expect("write");
    db.flush().expect("flush");
    db.compact_range(None::<&[u8]>, None::<&[u8]>);
    let get = |key: &[u8]| get_entity(&db, key).expect("get");
    let one = |name: &[u8], value: &[u8]| vec![(name.to_vec(), value.to_vec())];
    assert_eq!(get(b"gone"), None);
    assert_eq!(get(b"x"), None);
    assert_eq!(get(b"plain"), Some(one(b"", b"changed")));
    assert_eq!(get(b"row"), Some(one(b"c", b"2")));
    assert_eq!(get(b"kept"), Some(one(b"", b"v")));
    assert_eq!(get(b"boom"), Some(one(b"", b"v")), "a panic keeps the entry");
    let seen = seen.lock().expect("not poisoned").clone();
    let want = [
        "boom = v",
        "panicked: boom",
        "gone = entity of 1",
        "kept = v",
        "plain = v",
        "row = entity of 2",
        "x = v",
    ];
    assert_eq!(seen, want, "every entry, in key order");
    let kinds = kinds.lock().expect("not poisoned").clone();
    assert_eq!(kinds, [(true, true)], "one manual compaction of every file");
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}
