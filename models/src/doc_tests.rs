//! The model against hand-written expectations (never against the engine).

use crate::*;

fn d(name: &str) -> DocId {
    DocId { colocation: None, hashed: vec![], range: vec![Key::of(Scalar::Str(name.into()))] }
}

fn k(name: &str) -> Key {
    Key::of(Scalar::Str(name.into()))
}

fn t(us: u64) -> Time {
    us << 12
}

/// Table `t` with hash key `k`, these clustering columns (descending?) and regular columns.
fn table_t(range: &[(&str, bool)], regular: &[(&str, &str)]) -> cql::Schema {
    cql::Schema::new(
        "t",
        vec!["k".into()],
        range.iter().map(|(n, desc)| (n.to_string(), *desc)).collect(),
        regular
            .iter()
            .map(|(n, ty)| (n.to_string(), cql::CqlType::parse(ty).expect("a type")))
            .collect(),
        None,
    )
}

fn leaf(v: i64) -> Doc {
    Doc::Leaf(Scalar::Int64(v))
}

fn obj(items: &[(&str, Doc)]) -> Doc {
    Doc::Object(items.iter().map(|(n, v)| (k(n), v.clone())).collect())
}

#[test]
fn contract_example_in_required_mode() {
    let mut m = Model::new();
    let doc = d("mydockey");
    m.write_batch(
        t(2000),
        Markers::Required,
        &[(doc.clone(), vec![k("a")], Write::Set(leaf(1)), Ttl::Inherit)],
    )
    .unwrap();
    let bc = vec![k("b"), k("c")];
    m.write_batch(
        t(3000),
        Markers::Required,
        &[(doc.clone(), bc, Write::Set(leaf(2)), Ttl::Inherit)],
    )
    .unwrap();
    m.write_batch(
        t(6000),
        Markers::Required,
        &[(doc.clone(), vec![k("b")], Write::Del, Ttl::Inherit)],
    )
    .unwrap();
    let full = obj(&[("a", leaf(1)), ("b", obj(&[("c", leaf(2))]))]);
    assert_eq!(m.read(&doc, &[], t(3500)).unwrap(), Some(full));
    assert_eq!(m.read(&doc, &[], t(6500)).unwrap(), Some(obj(&[("a", leaf(1))])));
    // Deleting a missing path in required mode writes nothing.
    m.write_batch(
        t(7000),
        Markers::Required,
        &[(doc.clone(), vec![k("zz")], Write::Del, Ttl::Inherit)],
    )
    .unwrap();
    assert_eq!(m.docs_where(|_| true).len(), 1);
}

#[test]
fn write_id_ties_and_older_children() {
    let mut m = Model::new();
    let doc = d("x");
    // Child w0, marker w1: the marker hides the child.
    m.write_entries(
        t(1000),
        vec![
            (doc.clone(), vec![k("a")], Entry::Value(Scalar::Int64(1)), Ttl::Inherit),
            (doc.clone(), vec![], Entry::Marker, Ttl::Inherit),
        ],
    );
    assert_eq!(m.read(&doc, &[], t(1000)).unwrap(), Some(obj(&[])));
    // A tombstone at the parent hides a child written later at an older time.
    m.write_entries(t(5000), vec![(doc.clone(), vec![], Entry::Tombstone, Ttl::Inherit)]);
    m.write_entries(
        t(3000),
        vec![(doc.clone(), vec![k("b")], Entry::Value(Scalar::Int64(2)), Ttl::Inherit)],
    );
    assert_eq!(m.read(&doc, &[], t(4000)).unwrap(), Some(obj(&[("b", leaf(2))])));
    assert_eq!(m.read(&doc, &[], t(5000)).unwrap(), None);
}

#[test]
fn ttl_rules() {
    let mut m = Model::new();
    let doc = d("t");
    m.write_entries(t(0), vec![(doc.clone(), vec![k("m")], Entry::Marker, Ttl::Ms(10))]);
    m.write_entries(
        t(5000),
        vec![
            (doc.clone(), vec![k("m"), k("a")], Entry::Value(Scalar::Int64(1)), Ttl::Inherit),
            (doc.clone(), vec![k("m"), k("b")], Entry::Value(Scalar::Int64(2)), Ttl::Ms(20)),
        ],
    );
    assert_eq!(
        m.read(&doc, &[], t(10_000)).unwrap(),
        Some(obj(&[("m", obj(&[("a", leaf(1)), ("b", leaf(2))]))]))
    );
    assert_eq!(m.read(&doc, &[], t(10_001)).unwrap(), Some(obj(&[("m", obj(&[("b", leaf(2))]))])));
    assert_eq!(m.read(&doc, &[], t(25_001)).unwrap(), None);
    // Table default: counted from each value; Never overrides it.
    let mut m = Model::new();
    m.set_table_ttl_ms(Some(1));
    m.write_entries(
        t(1000),
        vec![
            (doc.clone(), vec![k("p")], Entry::Value(Scalar::Int64(1)), Ttl::Inherit),
            (doc.clone(), vec![k("n")], Entry::Value(Scalar::Int64(2)), Ttl::Never),
        ],
    );
    assert_eq!(m.read(&doc, &[], t(2000)).unwrap(), Some(obj(&[("n", leaf(2)), ("p", leaf(1))])));
    assert_eq!(m.read(&doc, &[], t(2001)).unwrap(), Some(obj(&[("n", leaf(2))])));
}

#[test]
fn snapshot_too_old_below_the_highest_cutoff() {
    let mut m = Model::new();
    m.compacted(t(5000));
    m.compacted(t(3000));
    assert_eq!(m.read(&d("a"), &[], t(4999)), Err(ModelError::SnapshotTooOld));
    assert_eq!(m.read(&d("a"), &[], t(5000)), Ok(None));
}

#[test]
fn required_markers_refuse_writing_under_a_primitive() {
    let mut m = Model::new();
    let doc = d("p");
    m.write_batch(
        t(1),
        Markers::Required,
        &[(doc.clone(), vec![], Write::Set(leaf(5)), Ttl::Inherit)],
    )
    .unwrap();
    let err = m.write_batch(
        t(2),
        Markers::Required,
        &[(doc.clone(), vec![k("c")], Write::Set(leaf(1)), Ttl::Inherit)],
    );
    assert_eq!(err, Err(ModelError::NotAnObject));
    assert_eq!(m.read(&doc, &[], t(3)).unwrap(), Some(leaf(5)));
}

/// A level written at its parent's own time (two batches at one time) reads as gone, so a
/// required-marker write below it finds it missing and writes a marker there.
#[test]
fn required_markers_see_a_level_as_old_as_its_parent_as_missing() {
    let mut m = Model::new();
    let doc = d("p");
    let blind = |write: Write, path: Vec<Key>| [(doc.clone(), path, write, Ttl::Inherit)];
    m.write_batch(t(1), Markers::Optional, &blind(Write::Obj, vec![])).unwrap();
    m.write_batch(t(1), Markers::Optional, &blind(Write::Set(leaf(5)), vec![k("a")])).unwrap();
    assert_eq!(m.read(&doc, &[], t(1)).unwrap(), Some(obj(&[])));
    let below = blind(Write::Set(leaf(1)), vec![k("a"), k("b")]);
    m.write_batch(t(2), Markers::Required, &below).unwrap();
    let read = m.read(&doc, &[], t(2)).unwrap();
    assert_eq!(read, Some(obj(&[("a", obj(&[("b", leaf(1))]))])));
}

/// Doubles as clustering keys order numerically: negative ones first (ascending), and a
/// range condition compares numbers, not bit patterns.
#[test]
fn cql_double_clustering_keys_order_numerically() {
    use cql::*;
    let mut schema = table_t(&[("r", false)], &[]);
    let mut m = Model::new();
    let key = |r: f64| vec![Scalar::Int32(1), Scalar::Double(r.to_bits())];
    for r in [2.0, -1.5, 0.5, -0.0, f64::NEG_INFINITY] {
        let insert = CqlOp::Insert { key: key(r), values: vec![], ttl_s: None };
        m.cql(t(1), &mut schema, &insert).unwrap();
    }
    let select = |m: &mut Model, range| {
        let op = CqlOp::Select { hash: vec![Scalar::Int32(1)], range, columns: None };
        let CqlResult::Rows(rows) = m.cql(t(2), &mut schema.clone(), &op).unwrap() else {
            panic!("rows")
        };
        rows.iter()
            .map(|row| match &row[1].1 {
                Cell::Scalar(Scalar::Double(bits)) => f64::from_bits(*bits),
                other => panic!("{other:?}"),
            })
            .collect::<Vec<f64>>()
    };
    assert_eq!(select(&mut m, vec![]), [f64::NEG_INFINITY, -1.5, -0.0, 0.5, 2.0]);
    let double = |v: f64| Scalar::Double(v.to_bits());
    let below_zero = vec![(Cmp::Lt, double(0.0))];
    assert_eq!(select(&mut m, below_zero), [f64::NEG_INFINITY, -1.5, -0.0]);
    // Every condition holds: an exclusive lower and an inclusive upper bound.
    let between = vec![(Cmp::Gt, double(-1.5)), (Cmp::Le, double(0.5))];
    assert_eq!(select(&mut m, between), [-0.0, 0.5]);
}

#[test]
fn cql_row_existence() {
    use cql::*;
    let mut schema = table_t(&[], &[("v", "text")]);
    let mut m = Model::new();
    let key = |s: &str| vec![Scalar::Str(s.into())];
    let v = |s: &str| CqlValue::Scalar(Scalar::Str(s.into()));
    m.cql(
        t(1),
        &mut schema,
        &CqlOp::Insert { key: key("ins"), values: vec![("v".into(), v("x"))], ttl_s: None },
    )
    .unwrap();
    m.cql(
        t(1),
        &mut schema,
        &CqlOp::Update {
            key: key("upd"),
            assigns: vec![Assign::Whole("v".into(), v("y"))],
            ttl_s: None,
        },
    )
    .unwrap();
    for name in ["ins", "upd"] {
        let null = vec![Assign::Whole("v".into(), CqlValue::Null)];
        m.cql(t(2), &mut schema, &CqlOp::Update { key: key(name), assigns: null, ttl_s: None })
            .unwrap();
    }
    let select = |m: &mut Model, name: &str| {
        m.cql(
            t(3),
            &mut schema.clone(),
            &CqlOp::Select { hash: key(name), range: vec![], columns: None },
        )
        .unwrap()
    };
    let ins_row = vec![
        ("k".to_string(), Cell::Scalar(Scalar::Str("ins".into()))),
        ("v".to_string(), Cell::Null),
    ];
    assert_eq!(select(&mut m, "ins"), CqlResult::Rows(vec![ins_row]));
    assert_eq!(select(&mut m, "upd"), CqlResult::Rows(vec![]));
}

#[test]
fn redis_hashes_and_sets() {
    use redis::*;
    let mut m = Model::new();
    let hset = RedisOp::HSet {
        key: "h".into(),
        fields: vec![("f".into(), "1".into()), ("g".into(), "2".into())],
    };
    assert_eq!(m.redis(t(1), &hset).unwrap(), Reply::Integer(2));
    assert_eq!(
        m.redis(t(2), &RedisOp::Del { keys: vec!["h".into(), "nope".into()] }).unwrap(),
        Reply::Integer(1)
    );
    let hset = RedisOp::HSet { key: "h".into(), fields: vec![("z".into(), "3".into())] };
    assert_eq!(m.redis(t(3), &hset).unwrap(), Reply::Integer(1));
    assert_eq!(
        m.redis(t(3), &RedisOp::HGetAll { key: "h".into() }).unwrap(),
        Reply::Array(vec!["z".into(), "3".into()])
    );
    assert_eq!(m.redis(t(3), &RedisOp::Get { key: "h".into() }), Err(ModelError::WrongType));
    let set = RedisOp::Set { key: "s".into(), value: "v".into(), ttl_ms: Some(1) };
    m.redis(t(10), &set).unwrap();
    assert_eq!(
        m.redis(t(1010), &RedisOp::Get { key: "s".into() }).unwrap(),
        Reply::Bulk(Some("v".into()))
    );
    assert_eq!(m.redis(t(1011), &RedisOp::Get { key: "s".into() }).unwrap(), Reply::Bulk(None));
}

/// A list reads back in write order: an append goes after the elements written before it,
/// even within one microsecond (two hybrid times with the same physical part); a whole
/// write replaces the list.
#[test]
fn cql_list_appends_keep_write_order() {
    use cql::*;
    let mut schema = table_t(&[], &[("l", "list<int>")]);
    let mut m = Model::new();
    let key = vec![Scalar::Int32(1)];
    let list = |items: &[i32]| CqlValue::List(items.iter().map(|&i| Scalar::Int32(i)).collect());
    let insert =
        CqlOp::Insert { key: key.clone(), values: vec![("l".into(), list(&[1, 2]))], ttl_s: None };
    m.cql(t(1000), &mut schema, &insert).unwrap();
    let append = |items| CqlOp::Update {
        key: key.clone(),
        assigns: vec![Assign::Add("l".into(), list(items))],
        ttl_s: None,
    };
    m.cql(t(1000) + 1, &mut schema, &append(&[3])).unwrap();
    m.cql(t(1000) + 2, &mut schema, &append(&[4, 5])).unwrap();
    let read_only = schema.clone();
    let select = |m: &mut Model| {
        let op =
            CqlOp::Select { hash: key.clone(), range: vec![], columns: Some(vec!["l".into()]) };
        m.cql(t(2000), &mut read_only.clone(), &op).unwrap()
    };
    let ints = |items: &[i32]| items.iter().map(|&i| Scalar::Int32(i)).collect();
    let row =
        |items: &[i32]| CqlResult::Rows(vec![vec![("l".to_string(), Cell::List(ints(items)))]]);
    assert_eq!(select(&mut m), row(&[1, 2, 3, 4, 5]));
    let whole = CqlOp::Update {
        key: key.clone(),
        assigns: vec![Assign::Whole("l".into(), list(&[9]))],
        ttl_s: None,
    };
    m.cql(t(1500), &mut schema, &whole).unwrap();
    assert_eq!(select(&mut m), row(&[9]));
}

/// One write of `write` at `path` of `doc` at `us`, in `markers` mode.
fn put(m: &mut Model, us: u64, markers: Markers, doc: &DocId, path: &[&str], write: Write) {
    let path = path.iter().map(|p| k(p)).collect();
    m.write_batch(t(us), markers, &[(doc.clone(), path, write, Ttl::Inherit)]).unwrap();
}

/// Required markers look at the first entry below a level: a deleted first child makes
/// the level missing, and the marker written for it hides the live second child.
#[test]
fn required_markers_see_a_deleted_first_child_as_a_missing_level() {
    let mut m = Model::new();
    let doc = d("a");
    put(&mut m, 1, Markers::Optional, &doc, &["x", "b"], Write::Set(leaf(1)));
    put(&mut m, 1, Markers::Optional, &doc, &["x", "c"], Write::Set(leaf(2)));
    put(&mut m, 2, Markers::Optional, &doc, &["x", "b"], Write::Del);
    put(&mut m, 3, Markers::Required, &doc, &["x", "d"], Write::Set(leaf(3)));
    assert_eq!(m.read(&doc, &[], t(4)).unwrap(), Some(obj(&[("x", obj(&[("d", leaf(3))]))])));
}

/// A primitive as the first entry below a level refuses writes below that level, though
/// the level reads as an object; DocDB's key order puts integer subkeys before strings.
#[test]
fn required_markers_refuse_a_level_whose_first_entry_is_a_primitive() {
    let doc = d("b");
    let below_y = vec![k("x"), k("y"), k("w")];
    let write = [(doc.clone(), below_y, Write::Obj, Ttl::Inherit)];
    let mut m = Model::new();
    put(&mut m, 1, Markers::Optional, &doc, &["x", "y"], Write::Obj);
    put(&mut m, 1, Markers::Optional, &doc, &["x", "y", "z"], Write::Set(leaf(2)));
    // The marker at "x"."y" is the first entry: every level above it exists.
    let mut without = m.clone();
    assert_eq!(without.write_batch(t(2), Markers::Required, &write), Ok(()));
    // An integer subkey of "x" sorts before "y": a primitive comes first.
    let int_key = vec![k("x"), Key::of(Scalar::Int64(7))];
    let seven = [(doc.clone(), int_key, Write::Set(leaf(1)), Ttl::Inherit)];
    m.write_batch(t(1), Markers::Optional, &seven).unwrap();
    assert_eq!(m.write_batch(t(2), Markers::Required, &write), Err(ModelError::NotAnObject));
}

/// The seek ignores a table tombstone: the document's entries, older than the table
/// tombstone and hidden by it, still count, so a write below the primitive there is
/// refused although no read sees the document.
#[test]
fn required_markers_ignore_the_table_tombstone() {
    let mut m = Model::new();
    let doc = DocId { colocation: Some(4), ..d("e") };
    let table = DocId { colocation: Some(4), hashed: vec![], range: vec![] };
    put(&mut m, 1, Markers::Required, &doc, &["x"], Write::Set(leaf(1)));
    put(&mut m, 2, Markers::Optional, &table, &[], Write::Del);
    assert_eq!(m.read(&doc, &[], t(3)).unwrap(), None);
    let below_x = vec![k("x"), k("y")];
    let write = [(doc.clone(), below_x, Write::Set(leaf(2)), Ttl::Inherit)];
    assert_eq!(m.write_batch(t(3), Markers::Required, &write), Err(ModelError::NotAnObject));
}

/// Schema changes: an added column reads null in older rows; a dropped column's values
/// neither show nor keep a row; a column added again under an old name is a new column.
#[test]
fn cql_schema_changes_hide_dropped_columns_and_never_reuse_ids() {
    use cql::*;
    let mut schema = table_t(&[], &[("a", "text"), ("b", "text")]);
    let mut m = Model::new();
    let key = |k: i32| vec![Scalar::Int32(k)];
    let v = |s: &str| CqlValue::Scalar(Scalar::Str(s.into()));
    let insert = CqlOp::Insert { key: key(1), values: vec![("b".into(), v("b1"))], ttl_s: None };
    m.cql(t(1), &mut schema, &insert).unwrap();
    let update = CqlOp::Update {
        key: key(2),
        assigns: vec![Assign::Whole("b".into(), v("b2"))],
        ttl_s: None,
    };
    m.cql(t(1), &mut schema, &update).unwrap();
    let add = |ty| Alter::Add { column: "b".into(), ty };
    assert_eq!(
        m.cql(t(2), &mut schema, &CqlOp::Alter(add(CqlType::Text))),
        Err(ModelError::InvalidRequest)
    );
    m.cql(t(2), &mut schema, &CqlOp::Alter(Alter::Drop { column: "b".into() })).unwrap();
    m.cql(t(3), &mut schema, &CqlOp::Alter(add(CqlType::Text))).unwrap();
    assert_eq!(
        schema.regular.iter().map(|r| (r.name.as_str(), r.id)).collect::<Vec<_>>(),
        [("a", 10), ("b", 12)]
    );
    let select = |m: &mut Model, k: i32| {
        let op = CqlOp::Select { hash: key(k), range: vec![], columns: None };
        m.cql(t(4), &mut schema.clone(), &op).unwrap()
    };
    let null_row = vec![
        ("k".to_string(), Cell::Scalar(Scalar::Int32(1))),
        ("a".to_string(), Cell::Null),
        ("b".to_string(), Cell::Null),
    ];
    // Row 1 lives on through its liveness column, its old `b` hidden; row 2 existed only
    // through the dropped column.
    assert_eq!(select(&mut m, 1), CqlResult::Rows(vec![null_row]));
    assert_eq!(select(&mut m, 2), CqlResult::Rows(vec![]));
    let drop_key = CqlOp::Alter(Alter::Drop { column: "k".into() });
    assert_eq!(m.cql(t(5), &mut schema, &drop_key), Err(ModelError::InvalidRequest));
}

/// A value that does not fit its column's type is refused, whatever the workload thought
/// the column was (a schema change it sent may not have committed).
#[test]
fn cql_values_must_fit_their_columns_type() {
    use cql::*;
    let mut schema = table_t(&[], &[("a", "text"), ("l", "list<int>")]);
    let mut m = Model::new();
    let key = vec![Scalar::Int32(1)];
    let insert = |name: &str, v: CqlValue| CqlOp::Insert {
        key: key.clone(),
        values: vec![(name.into(), v)],
        ttl_s: None,
    };
    let refused = Err(ModelError::InvalidRequest);
    assert_eq!(
        m.cql(t(1), &mut schema, &insert("a", CqlValue::Scalar(Scalar::Bool(true)))),
        refused
    );
    let text = CqlValue::Scalar(Scalar::Str("t0".into()));
    assert_eq!(m.cql(t(1), &mut schema, &insert("l", text.clone())), refused);
    assert_eq!(m.cql(t(1), &mut schema, &insert("a", text)), Ok(CqlResult::Written));
    let put = CqlOp::Update {
        key: key.clone(),
        assigns: vec![Assign::MapPut("l".into(), Scalar::Str("k".into()), Scalar::Int32(1))],
        ttl_s: None,
    };
    assert_eq!(m.cql(t(2), &mut schema, &put), refused, "a map put into a list");
}

/// A restore at R to T: reads at or after R find what a read at T found and what was
/// written after R; reads before R are unchanged; a second restore to a time after the
/// first keeps the first one's view of the time it goes back to.
#[test]
fn a_restore_hides_what_was_written_between_its_time_and_now() {
    let mut m = Model::new();
    let (a, b) = (d("a"), d("b"));
    let set = |doc: &DocId, v: i64| {
        (doc.clone(), vec![k("x")], Entry::Value(Scalar::Int64(v)), Ttl::Inherit)
    };
    m.write_entries(t(100), vec![set(&a, 1)]);
    m.write_entries(t(200), vec![set(&a, 2), set(&b, 20)]);
    m.write_entries(t(300), vec![(a.clone(), vec![], Entry::Tombstone, Ttl::Inherit)]);
    m.restore(t(400), t(150));
    let read = |m: &Model, doc: &DocId, at| m.read(doc, &[], t(at)).expect("readable");
    assert_eq!(read(&m, &a, 450), Some(obj(&[("x", leaf(1))])));
    assert_eq!(read(&m, &b, 450), None, "written after the time restored to");
    assert_eq!(read(&m, &a, 350), None, "before the restore: the tombstone stands");
    assert_eq!(read(&m, &b, 250), Some(obj(&[("x", leaf(20))])));
    m.write_entries(t(500), vec![set(&b, 30)]);
    assert_eq!(read(&m, &b, 550), Some(obj(&[("x", leaf(30))])));
    m.restore(t(600), t(450));
    assert_eq!(read(&m, &a, 650), Some(obj(&[("x", leaf(1))])), "the first restore's view");
    assert_eq!(read(&m, &b, 650), None);
}
