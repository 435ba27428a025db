use super::*;
use docsim_models::cql::Cmp;
use docsim_models::{DocId, Key, Markers};
use std::collections::BTreeMap;

const HT: Time = 7 << 12;

fn s(text: &str) -> Scalar {
    Scalar::Str(text.into())
}

fn key(text: &str) -> Key {
    Key::of(s(text))
}

fn doc() -> DocId {
    DocId { colocation: None, hashed: vec![], range: vec![key("d0")] }
}

fn write(path: &[&str], write: Write, ttl: Ttl) -> DocWrite {
    DocWrite { doc: doc(), path: path.iter().map(|p| key(p)).collect(), write, ttl }
}

fn leaf(path: &[&str], value: Scalar) -> DocWrite {
    write(path, Write::Set(Doc::Leaf(value)), Ttl::Inherit)
}

fn object(entries: &[(&str, i64)]) -> BTreeMap<Key, Doc> {
    entries.iter().map(|(k, v)| (key(k), Doc::Leaf(Scalar::Int64(*v)))).collect()
}

/// `simpler(op)`, checking that no variant equals `op`.
fn variants(op: &Op) -> Vec<Op> {
    let out = simpler(op);
    assert!(out.iter().all(|v| v != op), "{op:?} is its own variant");
    out
}

fn cql(op: CqlOp) -> Op {
    Op::Cql { ht: HT, table: "t".into(), op }
}

fn cql_variants_of(op: CqlOp) -> Vec<CqlOp> {
    variants(&cql(op))
        .into_iter()
        .map(|v| match v {
            Op::Cql { ht: HT, table, op } if table == "t" => op,
            other => panic!("not the same statement's variant: {other:?}"),
        })
        .collect()
}

#[test]
fn a_write_loses_its_ttl_an_entry_a_subkey_or_its_value() {
    let w = write(&["a", "b"], Write::Set(Doc::Object(object(&[("x", 1), ("y", 2)]))), Ttl::Ms(5));
    let got = variants(&Op::Write { ht: HT, write: w.clone() });
    let want = [
        DocWrite { ttl: Ttl::Inherit, ..w.clone() },
        DocWrite { write: Write::Set(Doc::Object(object(&[("y", 2)]))), ..w.clone() },
        DocWrite { write: Write::Set(Doc::Object(object(&[("x", 1)]))), ..w.clone() },
        DocWrite { path: vec![key("a")], ..w.clone() },
    ];
    let want: Vec<Op> = want.into_iter().map(|write| Op::Write { ht: HT, write }).collect();
    assert_eq!(got, want);

    let extend = write(&[], Write::Extend(object(&[("x", 1)])), Ttl::Never);
    let got = variants(&Op::Write { ht: HT, write: extend.clone() });
    let want = [
        DocWrite { ttl: Ttl::Inherit, ..extend.clone() },
        DocWrite { write: Write::Extend(BTreeMap::new()), ..extend.clone() },
    ];
    assert_eq!(got, want.map(|write| Op::Write { ht: HT, write }));

    let value = leaf(&["a"], s("v1"));
    let got = variants(&Op::Write { ht: HT, write: value.clone() });
    let want = [leaf(&[], s("v1")), leaf(&["a"], Scalar::Int64(0))];
    assert_eq!(got, want.map(|write| Op::Write { ht: HT, write }));
}

#[test]
fn simplest_writes_have_no_variants() {
    for w in [
        leaf(&[], Scalar::Int64(0)),
        write(&[], Write::Del, Ttl::Inherit),
        write(&[], Write::Obj, Ttl::Inherit),
        write(&[], Write::Set(Doc::Object(BTreeMap::new())), Ttl::Inherit),
    ] {
        assert_eq!(variants(&Op::Write { ht: HT, write: w }), vec![]);
    }
}

#[test]
fn a_batch_loses_a_write_splits_one_out_or_simplifies_one() {
    let (a, b) = (leaf(&[], Scalar::Int64(0)), write(&["x"], Write::Del, Ttl::Inherit));
    let got = variants(&Op::Batch { ht: HT, writes: vec![a.clone(), b.clone()] });
    let want = vec![
        Op::Batch { ht: HT, writes: vec![b.clone()] },
        Op::Write { ht: HT, write: a.clone() },
        Op::Batch { ht: HT, writes: vec![a.clone()] },
        Op::Write { ht: HT, write: b.clone() },
        Op::Batch { ht: HT, writes: vec![a.clone(), write(&[], Write::Del, Ttl::Inherit)] },
    ];
    assert_eq!(got, want);
    // A batch of one write is never emptied.
    let got = variants(&Op::Batch { ht: HT, writes: vec![b.clone()] });
    let want = vec![
        Op::Write { ht: HT, write: b },
        Op::Batch { ht: HT, writes: vec![write(&[], Write::Del, Ttl::Inherit)] },
    ];
    assert_eq!(got, want);
}

#[test]
fn an_insert_loses_a_column_its_ttl_or_simplifies_a_value() {
    let key = vec![s("u1"), Scalar::Int32(3)];
    let map = CqlValue::Map(vec![(s("p0"), s("t1")), (s("p1"), s(""))]);
    let values = vec![("msg".to_string(), CqlValue::Scalar(s("t2"))), ("props".into(), map)];
    let insert =
        |values: Vec<(String, CqlValue)>, ttl_s| CqlOp::Insert { key: key.clone(), values, ttl_s };
    let got = cql_variants_of(insert(values.clone(), Some(1)));
    let with = |i: usize, v: CqlValue| {
        let mut changed = values.clone();
        changed[i].1 = v;
        insert(changed, Some(1))
    };
    let want = vec![
        insert(vec![values[1].clone()], Some(1)),
        insert(vec![values[0].clone()], Some(1)),
        insert(values.clone(), None),
        with(0, CqlValue::Scalar(s(""))),
        with(1, CqlValue::Map(vec![(s("p1"), s(""))])),
        with(1, CqlValue::Map(vec![(s("p0"), s("t1"))])),
        with(1, CqlValue::Map(vec![(s("p0"), s("")), (s("p1"), s(""))])),
    ];
    assert_eq!(got, want);
    // Nothing to take away: the row's liveness alone, no TTL.
    assert_eq!(cql_variants_of(insert(vec![], None)), vec![]);
}

#[test]
fn an_update_loses_an_assignment_its_ttl_or_simplifies_one() {
    let key = vec![Scalar::Int64(1)];
    let update = |assigns: Vec<Assign>, ttl_s| CqlOp::Update { key: key.clone(), assigns, ttl_s };
    let set = CqlValue::Set(vec![Scalar::Int32(1), Scalar::Int32(2)]);
    let assigns = vec![
        Assign::Whole("c0".into(), CqlValue::Scalar(Scalar::Double(2.5f64.to_bits()))),
        Assign::Add("c1".into(), set),
    ];
    let got = cql_variants_of(update(assigns.clone(), Some(0)));
    let with = |i: usize, a: Assign| {
        let mut changed = assigns.clone();
        changed[i] = a;
        update(changed, Some(0))
    };
    let want = vec![
        update(vec![assigns[1].clone()], Some(0)),
        update(vec![assigns[0].clone()], Some(0)),
        update(assigns.clone(), None),
        with(0, Assign::Whole("c0".into(), CqlValue::Scalar(Scalar::Double(0)))),
        with(1, Assign::Add("c1".into(), CqlValue::Set(vec![Scalar::Int32(2)]))),
        with(1, Assign::Add("c1".into(), CqlValue::Set(vec![Scalar::Int32(1)]))),
    ];
    assert_eq!(got, want);

    // One assignment stays; an addition or removal keeps one element.
    let one = |a: Assign| update(vec![a], None);
    let add = Assign::Add("c1".into(), CqlValue::Set(vec![Scalar::Int32(1)]));
    assert_eq!(cql_variants_of(one(add)), vec![]);
    let remove = Assign::Remove("c1".into(), vec![Scalar::Int32(1), Scalar::Int32(2)]);
    let fewer = |k: i32| one(Assign::Remove("c1".into(), vec![Scalar::Int32(k)]));
    assert_eq!(cql_variants_of(one(remove)), vec![fewer(2), fewer(1)]);
    assert_eq!(cql_variants_of(fewer(1)), vec![]);
    let put = |v: Scalar| one(Assign::MapPut("m".into(), s("p1"), v));
    assert_eq!(cql_variants_of(put(Scalar::Int64(9))), vec![put(Scalar::Int64(0))]);
    assert_eq!(cql_variants_of(put(Scalar::Int64(0))), vec![]);
    // A whole collection may become empty; a null stays.
    let whole = |v: CqlValue| one(Assign::Whole("c1".into(), v));
    let single = CqlValue::Set(vec![Scalar::Int32(1)]);
    assert_eq!(cql_variants_of(whole(single)), vec![whole(CqlValue::Set(vec![]))]);
    assert_eq!(cql_variants_of(whole(CqlValue::Null)), vec![]);
    let flag = |b: bool| whole(CqlValue::Scalar(Scalar::Bool(b)));
    assert_eq!(cql_variants_of(flag(true)), vec![flag(false)]);
}

#[test]
fn deletes_lose_a_column() {
    let key = vec![s("u0")];
    let delete = |columns: &[&str]| CqlOp::DeleteColumns {
        key: key.clone(),
        columns: columns.iter().map(|c| c.to_string()).collect(),
    };
    assert_eq!(cql_variants_of(delete(&["a", "b"])), vec![delete(&["b"]), delete(&["a"])]);
    assert_eq!(cql_variants_of(delete(&["a"])), vec![]);
    assert_eq!(cql_variants_of(CqlOp::DeleteRow { key }), vec![]);
}

#[test]
fn a_select_loses_its_range_a_column_or_its_column_list() {
    let hash = vec![s("u0")];
    let select = |range: Vec<(Cmp, Scalar)>, columns: Option<&[&str]>| CqlOp::Select {
        hash: hash.clone(),
        range,
        columns: columns.map(|c| c.iter().map(|c| c.to_string()).collect()),
    };
    let range = vec![(Cmp::Le, Scalar::Int32(2))];
    let got = cql_variants_of(select(range.clone(), Some(&["a", "b"])));
    let want = vec![
        select(vec![], Some(&["a", "b"])),
        select(range.clone(), Some(&["b"])),
        select(range.clone(), Some(&["a"])),
        select(range.clone(), None),
    ];
    assert_eq!(got, want);
    assert_eq!(cql_variants_of(select(vec![], Some(&["a"]))), vec![select(vec![], None)]);
    assert_eq!(cql_variants_of(select(vec![], None)), vec![]);
    // A range of two conditions loses one of them at a time.
    let (low, high) = ((Cmp::Gt, Scalar::Int32(1)), (Cmp::Lt, Scalar::Int32(5)));
    let got = cql_variants_of(select(vec![low.clone(), high.clone()], None));
    assert_eq!(got, vec![select(vec![high], None), select(vec![low], None)]);
}

#[test]
fn redis_commands_lose_an_item_or_their_ttl() {
    let redis = |op: RedisOp| Op::Redis { ht: HT, op };
    let k = || "k0".to_string();
    let set = |ttl_ms| RedisOp::Set { key: k(), value: "v1".into(), ttl_ms };
    assert_eq!(variants(&redis(set(Some(5)))), vec![redis(set(None))]);
    assert_eq!(variants(&redis(set(None))), vec![]);
    let pairs = |fs: &[&str]| fs.iter().map(|f| (f.to_string(), "v".to_string())).collect();
    let hset = |fs: &[&str]| RedisOp::HSet { key: k(), fields: pairs(fs) };
    let got = variants(&redis(hset(&["f0", "f1"])));
    assert_eq!(got, vec![redis(hset(&["f1"])), redis(hset(&["f0"]))]);
    assert_eq!(variants(&redis(hset(&["f0"]))), vec![]);
    let names = |ms: &[&str]| ms.iter().map(|m| m.to_string()).collect::<Vec<_>>();
    let sadd = |ms: &[&str]| RedisOp::SAdd { key: k(), members: names(ms) };
    assert_eq!(variants(&redis(sadd(&["m0", "m1"]))).len(), 2);
    let srem = |ms: &[&str]| RedisOp::SRem { key: k(), members: names(ms) };
    assert_eq!(variants(&redis(srem(&["m0", "m1", "m2"]))).len(), 3);
    let hdel = |fs: &[&str]| RedisOp::HDel { key: k(), fields: names(fs) };
    assert_eq!(
        variants(&redis(hdel(&["f0", "f1"]))),
        vec![redis(hdel(&["f1"])), redis(hdel(&["f0"]))]
    );
    let del = |ks: &[&str]| RedisOp::Del { keys: names(ks) };
    assert_eq!(
        variants(&redis(del(&["k0", "k1"]))),
        vec![redis(del(&["k1"])), redis(del(&["k0"]))]
    );
    assert_eq!(variants(&redis(RedisOp::Get { key: k() })), vec![]);
}

#[test]
fn reads_and_settings_have_no_variants() {
    let ops = [
        Op::Get { ht: HT, doc: doc(), path: vec![key("a")] },
        Op::Markers(Markers::Required),
        Op::DefaultTtl { ttl_ms: Some(5) },
    ];
    for op in ops {
        assert_eq!(variants(&op), vec![]);
    }
}
