//! Table tests of the pure GC decision: paths are `/`-separated component names, times are
//! microseconds, and each row is fed in key order.

use super::*;

fn t(us: u64) -> DocHybridTime {
    DocHybridTime::new(HybridTime::from_micros(us), 0)
}

/// Feed `(path, time_us, tombstone?, ttl_ms)` rows; return the verdicts.
fn run(
    kind: CompactionKind,
    cutoff_us: u64,
    rows: &[(&str, u64, bool, Option<u64>)],
) -> Vec<Verdict> {
    let params =
        GcParams { cutoff_ht: HybridTime::from_micros(cutoff_us), kind, table_ttl_ms: None };
    let mut feed = GcFeed::new(params);
    rows.iter()
        .map(|(path, us, tombstone, ttl)| {
            let comps: Vec<&[u8]> = path.split('/').map(str::as_bytes).collect();
            let ttl = ttl.map_or(Ttl::Inherit, Ttl::from_ms);
            feed.decide(&comps, t(*us), *tombstone, ttl).expect("in key order")
        })
        .collect()
}

use CompactionKind::{Full, Minor};
use Verdict::{Drop, Keep, KeepExpired, KeepInherited};

#[test]
fn overwritten_versions_at_or_below_cutoff_are_dropped() {
    let rows = [("d/a", 3000, false, None), ("d/a", 2000, false, None), ("d/a", 1000, false, None)];
    // Cutoff 2000 (inclusive): 2000 is the version in effect at H; 1000 is hidden for R >= H.
    assert_eq!(run(Full, 2000, &rows), [Keep, Keep, Drop]);
    // Cutoff 1999: 2000 is above it, so 1000 is still visible to reads at R in [1999, 2000).
    assert_eq!(run(Full, 1999, &rows), [Keep, Keep, Keep]);
}

#[test]
fn tombstones_full_versus_minor() {
    let rows = [("d", 5000, true, None), ("d/a", 1000, false, None), ("d/b", 6000, false, None)];
    assert_eq!(run(Full, 5000, &rows), [Drop, Drop, Keep]);
    assert_eq!(run(Minor, 5000, &rows), [Keep, Drop, Keep]);
    // Above the cutoff the tombstone and what it hides stay.
    assert_eq!(run(Full, 4999, &rows), [Keep, Keep, Keep]);
}

#[test]
fn expired_values_full_versus_minor() {
    // A 2 ms TTL written at 1000 µs is visible up to 3000 µs inclusive.
    let rows = [("d/k", 1000, false, Some(2))];
    assert_eq!(run(Full, 3000, &rows), [Keep]);
    // Expired with a TTL of its own: kept as it is by both kinds (every child of the path,
    // present or future, inherits that TTL). Expired through an inherited TTL: a full
    // compaction drops it; a minor one keeps it (an ancestor outside it may give another).
    assert_eq!(run(Full, 3001, &rows), [KeepExpired]);
    assert_eq!(run(Minor, 3001, &rows), [KeepExpired]);
    let rows = [("d/m", 1000, false, Some(2)), ("d/m/k", 1500, false, None)];
    assert_eq!(run(Full, 3001, &rows), [KeepExpired, Drop]);
    assert_eq!(run(Minor, 3001, &rows), [KeepExpired, KeepInherited]);
}

#[test]
fn expired_newer_version_still_hides_older() {
    let rows = [("d/k", 6000, false, Some(1)), ("d/k", 4000, false, None)];
    assert_eq!(run(Full, 11_000, &rows), [KeepExpired, Drop]);
    assert_eq!(run(Minor, 11_000, &rows), [KeepExpired, Drop]);
}

#[test]
fn children_inherit_parent_ttl() {
    // Parent marker with a 10 ms TTL at 0; a child without TTL at 5 ms expires with it
    // (dropped), a child with its own 20 ms TTL outlives it. The parent stays: its TTL is
    // what children of its path inherit, now or later.
    let rows = [
        ("d/m", 0, false, Some(10)),
        ("d/m/a", 5000, false, None),
        ("d/m/b", 5000, false, Some(20)),
    ];
    assert_eq!(run(Full, 12_000, &rows), [KeepExpired, Drop, Keep]);
}

#[test]
fn child_written_after_parent_expired_inherits_its_ttl() {
    // The parent expired at 1001 µs; a child written at 5000 without TTL inherits the dead
    // TTL (invisible from birth). Above the cutoff it is kept, and so is the parent whose
    // TTL hides it: dropping the parent would bring the child back.
    let rows = [("d/m", 1, false, Some(1)), ("d/m/a", 5000, false, None)];
    assert_eq!(run(Full, 3000, &rows), [KeepExpired, Keep]);
}

#[test]
fn write_id_breaks_ties() {
    let params =
        GcParams { cutoff_ht: HybridTime::from_micros(10), kind: Full, table_ttl_ms: None };
    let mut feed = GcFeed::new(params);
    let ht = HybridTime::from_micros(5);
    // Marker w0 and child w1 in one batch: the child is newer than the marker and stays.
    assert_eq!(feed.decide(&[b"d"], DocHybridTime::new(ht, 0), false, Ttl::Inherit), Ok(Keep));
    let child = feed.decide(&[b"d", b"a"], DocHybridTime::new(ht, 1), false, Ttl::Inherit);
    assert_eq!(child, Ok(Keep));
}

#[test]
fn table_ttl_counts_from_each_entry() {
    let params =
        GcParams { cutoff_ht: HybridTime::from_micros(2500), kind: Full, table_ttl_ms: Some(1) };
    let mut feed = GcFeed::new(params);
    assert_eq!(feed.decide(&[b"d", b"a"], t(1000), false, Ttl::Inherit), Ok(Drop));
    assert_eq!(feed.decide(&[b"d", b"b"], t(2000), false, Ttl::Inherit), Ok(Keep));
    assert_eq!(feed.decide(&[b"d", b"c"], t(1000), false, Ttl::Never), Ok(Keep));
}

#[test]
fn out_of_order_versions_are_an_error_not_a_panic() {
    let params =
        GcParams { cutoff_ht: HybridTime::from_micros(10), kind: Full, table_ttl_ms: None };
    let mut feed = GcFeed::new(params);
    assert_eq!(feed.decide(&[b"d", b"a"], t(5), false, Ttl::Inherit), Ok(Keep));
    // An older version first, then a newer one of the same path: not key order.
    let err = feed.decide(&[b"d", b"a"], t(7), false, Ttl::Inherit).unwrap_err();
    assert_eq!(err, FeedError::OutOfOrder { previous: t(5), next: t(7) });
    // The same version twice is out of order too.
    let again = feed.decide(&[b"d", b"a"], t(5), false, Ttl::Inherit);
    assert_eq!(again, Err(FeedError::OutOfOrder { previous: t(5), next: t(5) }));
    assert_eq!(feed.decide(&[], t(1), false, Ttl::Inherit), Err(FeedError::NoComponents));
    // The feed goes on: an older version in order is decided (hidden by the one at 5).
    assert_eq!(feed.decide(&[b"d", b"a"], t(3), false, Ttl::Inherit), Ok(Drop));
    let said = "versions of one path out of order: T7 after T5 (newest first)";
    assert_eq!(err.to_string(), said);
}

/// A TTL-only record (Redis EXPIRE) hides nothing: the version beneath it and the fields
/// written before it stay; a newer version of its path at or below the cutoff drops it
/// and what it covered; expired, it is kept (it is the key's TTL).
#[test]
fn a_ttl_only_record_shadows_nothing() {
    let params =
        GcParams { cutoff_ht: HybridTime::from_micros(10_000), kind: Full, table_ttl_ms: None };
    let mut feed = GcFeed::new(params);
    let ttl_1ms = Ttl::from_ms(1);
    assert_eq!(feed.decide_ttl_only(&[b"h"], t(2000), ttl_1ms, false), Ok(Keep));
    assert_eq!(feed.decide(&[b"h"], t(1000), false, Ttl::Inherit), Ok(Keep));
    let field = DocHybridTime::new(HybridTime::from_micros(1000), 1); // HSET: marker w0
    assert_eq!(feed.decide(&[b"h", b"f"], field, false, Ttl::Inherit), Ok(Keep));
    let mut feed = GcFeed::new(params);
    assert_eq!(feed.decide(&[b"s"], t(3000), false, Ttl::Inherit), Ok(Keep));
    assert_eq!(feed.decide_ttl_only(&[b"s"], t(2000), ttl_1ms, false), Ok(Drop));
    assert_eq!(feed.decide(&[b"s"], t(1000), false, Ttl::Inherit), Ok(Drop));
}

/// What a TTL-only record covers is never dropped for an expiry the feed would judge
/// without the record: a field written after it (which inherits the record's TTL, not
/// the table's), the version beneath it even if a tombstone, and nothing under a record
/// above the cutoff either.
#[test]
fn a_ttl_only_record_keeps_what_it_covers() {
    let params =
        GcParams { cutoff_ht: HybridTime::from_micros(10_000), kind: Full, table_ttl_ms: Some(1) };
    let mut feed = GcFeed::new(params);
    let ttl_100ms = Ttl::from_ms(100);
    assert_eq!(feed.decide_ttl_only(&[b"h"], t(2000), ttl_100ms, false), Ok(Keep));
    // The marker beneath: expired by the table TTL on its own, but the record's is in effect.
    assert_eq!(feed.decide(&[b"h"], t(1000), false, Ttl::Inherit), Ok(Keep));
    // A field after the record: the table TTL alone would expire it.
    assert_eq!(feed.decide(&[b"h", b"f"], t(3000), false, Ttl::Inherit), Ok(KeepInherited));
    // A tombstone beneath a record stays in a full compaction: without it the record
    // would read as a tombstone at its own, later time.
    let params = GcParams { table_ttl_ms: None, ..params };
    let mut feed = GcFeed::new(params);
    assert_eq!(feed.decide(&[b"s"], t(20_000), false, Ttl::Inherit), Ok(Keep));
    assert_eq!(feed.decide_ttl_only(&[b"s"], t(2000), ttl_100ms, false), Ok(Keep));
    assert_eq!(feed.decide(&[b"s"], t(1000), true, Ttl::Inherit), Ok(Keep));
    assert_eq!(feed.decide(&[b"s"], t(500), false, Ttl::Inherit), Ok(Drop));
}

/// A column tombstone newer than a packed row may hide a value inside it: a full
/// compaction keeps it while the packed row stays, and drops it once repacking folds the
/// packed row away (or a row tombstone hides it). One newer than the tombstone does not
/// count.
#[test]
fn column_tombstones_over_a_kept_packed_row_stay() {
    let params =
        GcParams { cutoff_ht: HybridTime::from_micros(9000), kind: Full, table_ttl_ms: None };
    let verdicts = |packed_us: u64, folded: bool| {
        let mut feed = GcFeed::new(params);
        let row = feed.decide_packed_row(&[b"d"], t(packed_us), Ttl::Inherit, folded);
        let tombstone = feed.decide(&[b"d", b"c"], t(2000), true, Ttl::Inherit);
        (row.expect("in order"), tombstone.expect("in order"))
    };
    assert_eq!(verdicts(1000, false), (Keep, Keep));
    assert_eq!(verdicts(1000, true), (Drop, Drop));
    assert_eq!(verdicts(3000, false), (Keep, Drop), "the packed row is newer");
}
