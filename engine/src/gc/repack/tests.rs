use super::*;
use crate::encoding::{decode_packed_row, SchemaPacking};
use crate::hybrid_time::DocHybridTime;

fn at(us: u64) -> DocHybridTime {
    DocHybridTime::new(HybridTime::new(us, 0), 0)
}

fn int(v: i32) -> Value {
    Value::new(ValueKind::Primitive(Primitive::Int32(v)))
}

/// Versions 0 (columns 10, 11) and 1 (10, 11, 12: `ALTER TABLE ADD`).
fn packings() -> Packings {
    let mut p = Packings::default();
    p.insert(SchemaPacking::new(0, vec![10, 11]).expect("distinct"));
    p.insert(SchemaPacking::new(1, vec![10, 11, 12]).expect("distinct"));
    p
}

fn packed(us: u64, ttl: Ttl, version: u32, columns: &[Option<Value>]) -> DocEntry {
    let body = packings().get(version).expect("known").body(columns);
    let value = Value { ttl, kind: ValueKind::PackedRow(body) };
    DocEntry { table_key: false, subkeys: vec![], doc_ht: at(us), value }
}

fn column(id: i32, us: u64, value: Value) -> DocEntry {
    let subkeys = vec![KeyEntry::asc(Primitive::ColumnId(id))];
    DocEntry { table_key: false, subkeys, doc_ht: at(us), value }
}

/// The slots of a planned packed row.
fn slots(plan: &RowRepack) -> Vec<(u32, Slot)> {
    let p = packings();
    decode_packed_row(plan.value.as_ref().expect("a new value"), |v| p.get(v))
        .expect("a packed row")
        .columns
}

#[test]
fn later_updates_fold_in_with_their_own_write_time_and_newer_ones_stay() {
    let entries = vec![
        packed(1000, Ttl::Inherit, 0, &[Some(int(1)), Some(int(2))]),
        column(10, 3000, int(30)),            // above the cutoff: stays
        column(10, 1500, int(15)),            // folded in
        column(10, 500, int(5)),              // older than the row: goes
        column(11, 1200, Value::tombstone()), // folded in as NULL
        column(12, 800, Value { ttl: Ttl::Ms(9), ..int(8) }), // a column v0 lacks
    ];
    let plan = plan_row(&entries, (HybridTime::new(2000, 0), None), &packings(), Plants::NONE)
        .expect("decodes")
        .expect("a repack");
    assert_eq!(plan.packed_row, 0);
    assert_eq!(plan.folded, BTreeSet::from([2, 3, 4, 5]));
    let got = slots(&plan);
    assert_eq!(got[0], (10, Slot { value: Some(int(15)), written: Some(at(1500)) }));
    assert_eq!(got[1], (11, Slot::of(None)));
    let own_ttl = Value { ttl: Ttl::Ms(9), ..int(8) };
    assert_eq!(got[2], (12, Slot { value: Some(own_ttl), written: Some(at(800)) }));
}

#[test]
fn a_row_tombstone_at_or_below_the_cutoff_or_an_inheriting_value_leaves_the_row_alone() {
    let row = packed(1000, Ttl::Ms(60_000), 1, &[Some(int(1)), None, None]);
    let tombstone =
        DocEntry { table_key: false, subkeys: vec![], doc_ht: at(1500), value: Value::tombstone() };
    let cutoff = HybridTime::new(2000, 0);
    let plan = |entries: &[DocEntry]| plan_row(entries, (cutoff, None), &packings(), Plants::NONE);
    assert_eq!(plan(&[tombstone, row.clone()]), Ok(None), "the tombstone hides the row");
    // In the packed row, the value would take the row's TTL instead of the table's.
    assert_eq!(plan(&[row.clone(), column(10, 1200, int(3))]), Ok(None));
    assert!(plan(&[row, column(10, 1200, Value { ttl: Ttl::Never, ..int(3) })])
        .expect("decodes")
        .is_some());
}

#[test]
fn older_packed_rows_and_dropped_columns_go() {
    let mut p = packings();
    p.insert(SchemaPacking::new(2, vec![10, 12]).expect("distinct")); // `DROP` column 11
    let entries = vec![
        packed(1000, Ttl::Inherit, 1, &[Some(int(1)), Some(int(2)), None]),
        packed(900, Ttl::Inherit, 0, &[Some(int(0)), Some(int(0))]),
        column(11, 1100, int(11)),
    ];
    let plan = plan_row(&entries, (HybridTime::new(2000, 0), None), &p, Plants::NONE)
        .expect("decodes")
        .expect("a repack");
    assert_eq!(plan.folded, BTreeSet::from([1, 2]));
    let row = decode_packed_row(plan.value.as_ref().expect("a new value"), |v| p.get(v))
        .expect("a packed row");
    assert_eq!(row.version, 2);
    assert_eq!(row.columns, vec![(10, Slot::of(Some(int(1)))), (12, Slot::of(None))]);
}

#[test]
fn planted_repacking_drops_updates_above_the_cutoff() {
    let entries =
        vec![packed(1000, Ttl::Inherit, 1, &[None, None, None]), column(10, 3000, int(30))];
    let plants = Plants::of(Some(Plant::RepackDropsNewerUpdate));
    let cutoff = HybridTime::new(2000, 0);
    let clean = plan_row(&entries, (cutoff, None), &packings(), Plants::NONE).expect("decodes");
    assert_eq!(clean, None, "nothing at or below the cutoff to fold");
    let planted = plan_row(&entries, (cutoff, None), &packings(), plants).expect("decodes");
    assert_eq!(planted.expect("a repack").folded, BTreeSet::from([1]));
}

/// Writes out of time order (a script's): an older packed row of a newer schema version
/// holds a column the newest lacks; the row is left as it is rather than lose it.
#[test]
fn an_older_packed_row_of_a_newer_schema_leaves_the_row_alone() {
    let entries = vec![
        packed(2000, Ttl::Inherit, 0, &[Some(int(1)), None]),
        packed(1000, Ttl::Inherit, 1, &[Some(int(0)), None, Some(int(7))]),
    ];
    let plan = plan_row(&entries, (HybridTime::new(4000, 0), None), &packings(), Plants::NONE);
    assert_eq!(plan, Ok(None));
}

/// The same row expired whole at the cutoff (the table's TTL ran out for both packed
/// rows, the newest hides the older): it goes, the older packed row with it. Before,
/// the newer schema left it stored for good (found by torture: seed 4, three replicas,
/// packed rows, a repack that had run between the two writes).
#[test]
fn an_expired_row_goes_even_over_an_older_packed_row_of_a_newer_schema() {
    let entries = vec![
        packed(2000, Ttl::Inherit, 0, &[Some(int(1)), None]),
        packed(1000, Ttl::Inherit, 1, &[Some(int(0)), None, Some(int(7))]),
    ];
    let plan = plan_row(&entries, (HybridTime::new(4000, 0), Some(1)), &packings(), Plants::NONE);
    let plan = plan.expect("decodes").expect("the row goes");
    assert_eq!((plan.packed_row, plan.value), (0, None));
    assert_eq!(plan.folded, BTreeSet::from([0, 1]));
}

/// A row that cannot be repacked (a column without a TTL under a row with one cannot be
/// folded in) still goes when it expired on its own and what was written after it ran
/// out inherits nothing from it; what it hid goes with it. Before, it stayed for good
/// (torture: seed 60755, three replicas, entities).
#[test]
fn an_expired_row_goes_beside_columns_written_after_it_ran_out() {
    let plan = |entries: &[DocEntry]| {
        plan_row(entries, (HybridTime::new(9000, 0), None), &packings(), Plants::NONE)
            .expect("decodes")
    };
    let entries = vec![
        packed(2000, Ttl::Ms(1), 0, &[Some(int(1)), None]), // expired at 3000
        packed(1000, Ttl::Inherit, 0, &[Some(int(0)), None]), // hidden by it
        column(10, 5000, Value { ttl: Ttl::Never, ..int(7) }), // folds, never expires
        column(11, 5000, int(3)),                           // cannot fold: no TTL
        column(11, 1500, int(5)),                           // hidden by the row
    ];
    let gone = plan(&entries).expect("the row goes");
    assert_eq!((gone.packed_row, gone.value, gone.folded), (0, None, BTreeSet::from([0, 1, 4])));
}

/// A row that cannot be repacked and expired on its own goes even if a column was
/// written inside its TTL without one of its own, once a newer version of that column at
/// or below the cutoff hides it: that version goes in the same compaction (ordinary GC),
/// and could inherit nothing any more. Before, the row stayed for good (torture: seed
/// 70738, three replicas, packed rows).
#[test]
fn an_expired_row_goes_when_a_column_written_inside_its_ttl_is_overwritten() {
    let plan = |entries: &[DocEntry]| {
        plan_row(entries, (HybridTime::new(9000, 0), None), &packings(), Plants::NONE)
            .expect("decodes")
    };
    let entries = vec![
        packed(2000, Ttl::Ms(1), 0, &[None, Some(int(1))]), // expired at 3000
        packed(1000, Ttl::Inherit, 0, &[Some(int(0)), None]), // hidden by it
        column(10, 5000, Value { ttl: Ttl::Never, ..int(7) }), // folds, never expires
        column(11, 5000, int(3)),                           // cannot fold: no TTL
        column(11, 2500, int(5)),                           // inside its TTL; hidden
    ];
    let gone = plan(&entries).expect("the row goes");
    assert_eq!((gone.packed_row, gone.value, gone.folded), (0, None, BTreeSet::from([0, 1])));
    // Without the newer version of column 11, the one inside the row's TTL holds it.
    assert_eq!(plan(&[&entries[..3], &entries[4..]].concat()), None);
}

/// An older packed row whose columns were all folded in before the newest row was written
/// goes; one holding a column folded in after the newest row (writes out of time order)
/// leaves the row alone rather than lose that column.
#[test]
fn an_older_packed_row_goes_unless_it_folded_in_a_column_after_the_newest_row() {
    let older_folded_at = |us: u64| {
        let slot = Slot { value: Some(int(7)), written: Some(at(us)) };
        let body = packings().get(0).expect("known").body_of_slots(&[slot, Slot::of(None)]);
        let value = Value { ttl: Ttl::Inherit, kind: ValueKind::PackedRow(body) };
        DocEntry { table_key: false, subkeys: vec![], doc_ht: at(900), value }
    };
    let row = packed(1000, Ttl::Inherit, 1, &[Some(int(1)), None, None]);
    let plan = |older: DocEntry| {
        let entries = [row.clone(), older];
        plan_row(&entries, (HybridTime::new(2000, 0), None), &packings(), Plants::NONE)
            .expect("decodes")
    };
    assert_eq!(plan(older_folded_at(950)).expect("a repack").folded, BTreeSet::from([1]));
    assert_eq!(plan(older_folded_at(1200)), None);
}

/// A row tombstone older than the packed row hides the column versions before it: they
/// go, and do not come back as the column's value.
#[test]
fn versions_below_an_older_row_tombstone_do_not_fold_in() {
    let tombstone =
        DocEntry { table_key: false, subkeys: vec![], doc_ht: at(900), value: Value::tombstone() };
    let entries = vec![
        packed(1000, Ttl::Inherit, 0, &[Some(int(1)), Some(int(2))]),
        tombstone,
        column(12, 800, int(8)), // a column v0 lacks, hidden by the tombstone
    ];
    let plan = plan_row(&entries, (HybridTime::new(2000, 0), None), &packings(), Plants::NONE)
        .expect("decodes")
        .expect("a repack");
    assert_eq!(plan.folded, BTreeSet::from([2]));
    assert_eq!(slots(&plan)[2], (12, Slot::of(None)));
}

/// A row already packed as it would be is not rewritten.
#[test]
fn a_row_with_nothing_to_fold_is_left_alone() {
    let p = packings();
    let newest = p.newest().expect("versions").version();
    let entries = vec![packed(1000, Ttl::Inherit, newest, &[Some(int(1)), None, None])];
    assert_eq!(plan_row(&entries, (HybridTime::new(2000, 0), None), &p, Plants::NONE), Ok(None));
}

/// A packed row expired whole at the cutoff goes with what it hid: its folded columns and
/// the liveness column's older versions (its expanded liveness hid them). A column with a
/// longer TTL of its own keeps it; the table's TTL counts too; a newer column repacking
/// cannot fold stays beside it while it goes.
#[test]
fn a_row_expired_whole_goes_with_what_it_hid() {
    let liveness = |us| DocEntry {
        subkeys: vec![KeyEntry::asc(Primitive::SystemColumnId(0))],
        ..column(10, us, Value::new(ValueKind::Primitive(Primitive::Null)))
    };
    let plan = |entries: &[DocEntry], table_ttl_ms| {
        plan_row(entries, (HybridTime::new(9000, 0), table_ttl_ms), &packings(), Plants::NONE)
            .expect("decodes")
    };
    let row = vec![
        packed(2000, Ttl::Ms(1), 0, &[Some(int(1)), None]), // expired at 3000
        liveness(1000),                                     // hidden by the row's
        column(10, 2500, Value { ttl: Ttl::Ms(2), ..int(7) }), // expired at 4500
    ];
    let gone = plan(&row, None).expect("a plan");
    assert_eq!((gone.value, gone.folded), (None, BTreeSet::from([0, 1, 2])));
    // A column whose own TTL runs past the cutoff keeps the row.
    let mut longer = row.clone();
    longer[2] = column(10, 2500, Value { ttl: Ttl::Ms(9), ..int(7) });
    assert!(plan(&longer, None).expect("a plan").value.is_some());
    // Without TTLs the table's decides, from each write time.
    let plain =
        vec![packed(2000, Ttl::Inherit, 0, &[Some(int(1)), None]), column(11, 4000, int(3))];
    assert!(plan(&plain, Some(5)).expect("a plan").value.is_some(), "11 lives until 9000");
    assert_eq!(plan(&plain, Some(4)).expect("a plan").value, None);
    assert_eq!(plan(&plain, None).expect("a plan").value.map(|_| ()), Some(()));
    // A value without a TTL cannot fold into a row with one; it stays, the row goes.
    let unfolded =
        vec![packed(2000, Ttl::Ms(1), 0, &[Some(int(1)), None]), column(10, 2500, int(4))];
    let plan = plan(&unfolded, None).expect("a plan");
    assert_eq!((plan.value, plan.folded), (None, BTreeSet::from([0])));
}
