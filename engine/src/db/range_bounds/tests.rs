use super::*;
use crate::encoding::{DocPath, SubDocKey};
use crate::hybrid_time::{DocHybridTime, HybridTime};

fn int(v: i32) -> Primitive {
    Primitive::Int32(v)
}

fn text(v: &str) -> Primitive {
    Primitive::String(v.into())
}

/// A stored key of a row with hash key 7 and these range components (the second
/// descending, as a `CLUSTERING ORDER BY (.. DESC)` column is stored), column 10.
fn row_key(range: &[Primitive]) -> Vec<u8> {
    let range = range
        .iter()
        .enumerate()
        .map(|(i, v)| if i == 1 { KeyEntry::desc(v.clone()) } else { KeyEntry::asc(v.clone()) })
        .collect();
    let doc = DocKey::new(vec![KeyEntry::asc(Primitive::Int64(7))], range);
    let path = DocPath::new(doc, vec![KeyEntry::asc(Primitive::ColumnId(10))]);
    SubDocKey::new(path, DocHybridTime::new(HybridTime::new(1000, 0), 0)).encode()
}

fn collect(keys: &[Vec<u8>]) -> FileBounds {
    let mut collector = BoundsCollector::default();
    keys.iter().for_each(|k| collector.add(k));
    FileBounds::decode(&collector.finish()).expect("decodes")
}

fn cond(index: usize, op: CmpOp, value: Primitive) -> RangeCondition {
    RangeCondition { index, op, value }
}

/// Each component's smallest and largest value, whatever its stored order, over every
/// key; metadata keys do not count.
#[test]
fn a_file_bounds_each_range_component() {
    let keys = [
        row_key(&[int(5), text("m")]),
        vec![META_PREFIX, b'f'],
        row_key(&[int(1), text("z")]),
        row_key(&[int(9), text("a")]),
    ];
    let bounds = collect(&keys);
    assert_eq!(bounds.bounded, vec![(int(1), int(9)), (text("a"), text("z"))]);
}

/// A document key with fewer range components leaves the components past its own
/// unbounded; a key that is no document key leaves the file without bounds; a file of
/// metadata alone has none either.
#[test]
fn fewer_components_unbound_the_later_ones_and_a_foreign_key_all() {
    let short = collect(&[row_key(&[int(5), text("m")]), row_key(&[int(3)])]);
    assert_eq!(short.bounded, vec![(int(3), int(5))]);
    assert!(short.may_match(&[cond(1, CmpOp::Eq, text("q"))], Plants::NONE));
    let foreign = collect(&[row_key(&[int(5)]), vec![0xee, 0x00]]);
    assert_eq!(foreign.bounded, vec![]);
    assert_eq!(collect(&[vec![META_PREFIX, 1]]).bounded, vec![]);
}

/// A file is skipped exactly when no value within its bounds meets a condition: the
/// bounds themselves meet inclusive conditions and miss exclusive ones.
#[test]
fn a_file_is_skipped_only_when_its_bounds_cannot_meet_the_conditions() {
    let file = FileBounds { bounded: vec![(int(10), int(20))] };
    let meets = |op, v| file.may_match(&[cond(0, op, int(v))], Plants::NONE);
    let cases = [
        (CmpOp::Ge, 20, true),
        (CmpOp::Gt, 20, false),
        (CmpOp::Gt, 19, true),
        (CmpOp::Le, 10, true),
        (CmpOp::Lt, 10, false),
        (CmpOp::Lt, 11, true),
        (CmpOp::Eq, 10, true),
        (CmpOp::Eq, 20, true),
        (CmpOp::Eq, 9, false),
        (CmpOp::Eq, 21, false),
        (CmpOp::Ge, 21, false),
        (CmpOp::Le, 9, false),
    ];
    for (op, v, expected) in cases {
        assert_eq!(meets(op, v), expected, "{} {v} on 10..=20", op.symbol());
    }
    let between = |lo, hi| {
        file.may_match(&[cond(0, CmpOp::Gt, int(lo)), cond(0, CmpOp::Lt, int(hi))], Plants::NONE)
    };
    assert!(between(0, 11) && between(19, 30) && !between(0, 10) && !between(20, 30));
    // A condition on a component the file has no bound for matches.
    assert!(file.may_match(&[cond(1, CmpOp::Eq, int(0))], Plants::NONE));
}

/// YugabyteDB's older filter compared each bound with the other's inclusivity: with
/// `>= 20 AND < 30` it skipped a file whose largest value is 20.
#[test]
fn the_planted_filter_swaps_inclusivity() {
    let file = FileBounds { bounded: vec![(int(10), int(20))] };
    let conditions = [cond(0, CmpOp::Ge, int(20)), cond(0, CmpOp::Lt, int(30))];
    assert!(file.may_match(&conditions, Plants::NONE));
    let swapped = Plants::of(Some(Plant::YbPruneSwappedInclusivity));
    assert!(!file.may_match(&conditions, swapped));
    let conditions = [cond(0, CmpOp::Gt, int(0)), cond(0, CmpOp::Le, int(10))];
    assert!(file.may_match(&conditions, Plants::NONE));
    assert!(!file.may_match(&conditions, swapped));
}

/// A damaged property is an error naming the property, never a panic.
#[test]
fn a_damaged_property_is_an_error() {
    let mut collector = BoundsCollector::default();
    collector.add(&row_key(&[int(1)]));
    let good = collector.finish();
    for bad in [vec![], vec![2, 0], good[..good.len() - 1].to_vec(), [&good[..], &[0]].concat()] {
        let e = FileBounds::decode(&bad).expect_err("damaged");
        assert!(["range bounds property", "key component"].contains(&e.what), "{e}");
    }
}
