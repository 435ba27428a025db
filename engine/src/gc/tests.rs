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
    let params = GcParams::new(HybridTime::from_micros(cutoff_us), kind, None);
    let mut feed = GcFeed::new(params.clone());
    rows.iter()
        .map(|(path, us, tombstone, ttl)| {
            let comps: Vec<&[u8]> = path.split('/').map(str::as_bytes).collect();
            let ttl = ttl.map_or(Ttl::Inherit, Ttl::from_ms);
            feed.decide(&comps, t(*us), *tombstone, ttl).expect("in key order")
        })
        .collect()
}

use CompactionKind::{Full, Minor};
use Verdict::{Drop, Keep, KeepExpired, KeepInherited, Tombstone};

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
    // Expired with a TTL of its own: a full compaction drops it (nothing can still inherit
    // it); a minor one keeps it where something may be written beneath it (a document's
    // path: an entry outside the compaction may inherit its TTL). Expired through an
    // inherited TTL: full drops, minor keeps (an ancestor outside may give another).
    assert_eq!(run(Full, 3001, &rows), [Drop]);
    assert_eq!(run(Minor, 3001, &rows), [KeepExpired]);
    let rows = [("d/m", 1000, false, Some(2)), ("d/m/k", 1500, false, None)];
    assert_eq!(run(Full, 3001, &rows), [Drop, Drop]);
    assert_eq!(run(Minor, 3001, &rows), [KeepExpired, KeepInherited]);
}

/// Per data model, what a minor compaction does with an expired entry of its own TTL: a
/// row's liveness column and its scalar columns can have nothing beneath them (the schema
/// says so), so a tombstone stands for them (YugabyteDB's rule); a collection column, like
/// a document's path, keeps it.
#[test]
fn expired_leaves_become_tombstones_in_minor_compactions() {
    let schema = SchemaGc {
        leaves: vec![b"live".to_vec(), b"v".to_vec()],
        collections: vec![b"map".to_vec()],
        dropped: vec![],
        blind_writes: true,
    };
    let params = GcParams {
        schema: std::sync::Arc::new(schema),
        ..GcParams::new(HybridTime::from_micros(3001), Minor, None)
    };
    let mut feed = GcFeed::new(params);
    let mut decide = |path: &[&[u8]]| feed.decide(path, t(1000), false, Ttl::from_ms(2));
    assert_eq!(decide(&[b"row", b"live"]), Ok(Tombstone), "the liveness column");
    assert_eq!(decide(&[b"row", b"map"]), Ok(KeepExpired), "a collection column");
    assert_eq!(decide(&[b"row3", b"map", b"k"]), Ok(Tombstone), "a collection's element");
    assert_eq!(decide(&[b"row", b"v"]), Ok(Tombstone), "a scalar column");
    assert_eq!(decide(&[b"row2", b"v", b"x"]), Ok(KeepExpired), "below a column: no leaf");
}

/// Every compaction drops the entries of a column dropped at or before its cutoff, above
/// the cutoff too (nothing reads them), and none of a column dropped after it.
#[test]
fn dropped_columns_go_when_dropped_at_or_before_the_cutoff() {
    let dropped = vec![(b"old".to_vec(), t(2000).ht), (b"late".to_vec(), t(9000).ht)];
    let schema =
        std::sync::Arc::new(SchemaGc { dropped, blind_writes: true, ..SchemaGc::default() });
    for kind in [Full, Minor] {
        let params = GcParams { schema: schema.clone(), ..GcParams::new(t(5000).ht, kind, None) };
        let mut feed = GcFeed::new(params);
        assert_eq!(feed.decide(&[b"r", b"late"], t(1000), false, Ttl::Inherit), Ok(Keep));
        assert_eq!(feed.decide(&[b"r", b"old"], t(1500), false, Ttl::Inherit), Ok(Drop));
        assert_eq!(feed.decide(&[b"r", b"old", b"k"], t(1600), false, Ttl::Inherit), Ok(Drop));
        assert_eq!(feed.decide(&[b"r", b"other"], t(1500), false, Ttl::Inherit), Ok(Keep));
    }
}

#[test]
fn expired_newer_version_still_hides_older() {
    let rows = [("d/k", 6000, false, Some(1)), ("d/k", 4000, false, None)];
    assert_eq!(run(Full, 11_000, &rows), [Drop, Drop]);
    assert_eq!(run(Minor, 11_000, &rows), [KeepExpired, Drop]);
}

#[test]
fn children_inherit_parent_ttl() {
    // Parent marker with a 10 ms TTL at 0; a child without TTL at 5 ms expires with it
    // (dropped), a child with its own 20 ms TTL outlives it. The parent goes too: what was
    // written beneath it while it lived expired with it.
    let rows = [
        ("d/m", 0, false, Some(10)),
        ("d/m/a", 5000, false, None),
        ("d/m/b", 5000, false, Some(20)),
    ];
    assert_eq!(run(Full, 12_000, &rows), [Drop, Drop, Keep]);
}

#[test]
fn child_written_after_parent_expired_does_not_inherit_its_ttl() {
    // The parent expired at 1001 µs; a child written at 5000 without TTL does not inherit
    // the dead TTL (`expiry.rs`): it lives, and the parent can go without changing it.
    let rows = [("d/m", 1, false, Some(1)), ("d/m/a", 5000, false, None)];
    assert_eq!(run(Full, 3000, &rows), [Drop, Keep]);
    assert_eq!(run(Minor, 3000, &rows), [KeepExpired, Keep]);
}

#[test]
fn write_id_breaks_ties() {
    let params = GcParams::new(HybridTime::from_micros(10), Full, None);
    let mut feed = GcFeed::new(params.clone());
    let ht = HybridTime::from_micros(5);
    // Marker w0 and child w1 in one batch: the child is newer than the marker and stays.
    assert_eq!(feed.decide(&[b"d"], DocHybridTime::new(ht, 0), false, Ttl::Inherit), Ok(Keep));
    let child = feed.decide(&[b"d", b"a"], DocHybridTime::new(ht, 1), false, Ttl::Inherit);
    assert_eq!(child, Ok(Keep));
}

#[test]
fn table_ttl_counts_from_each_entry() {
    let params = GcParams::new(HybridTime::from_micros(2500), Full, Some(1));
    let mut feed = GcFeed::new(params.clone());
    assert_eq!(feed.decide(&[b"d", b"a"], t(1000), false, Ttl::Inherit), Ok(Drop));
    assert_eq!(feed.decide(&[b"d", b"b"], t(2000), false, Ttl::Inherit), Ok(Keep));
    assert_eq!(feed.decide(&[b"d", b"c"], t(1000), false, Ttl::Never), Ok(Keep));
}

#[test]
fn out_of_order_versions_are_an_error_not_a_panic() {
    let params = GcParams::new(HybridTime::from_micros(10), Full, None);
    let mut feed = GcFeed::new(params.clone());
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
    let params = GcParams::new(HybridTime::from_micros(10_000), Full, None);
    let mut feed = GcFeed::new(params.clone());
    let ttl_1ms = Ttl::from_ms(1);
    assert_eq!(feed.decide_ttl_only(&[b"h"], t(2000), ttl_1ms, false), Ok(Keep));
    assert_eq!(feed.decide(&[b"h"], t(1000), false, Ttl::Inherit), Ok(Keep));
    let field = DocHybridTime::new(HybridTime::from_micros(1000), 1); // HSET: marker w0
    assert_eq!(feed.decide(&[b"h", b"f"], field, false, Ttl::Inherit), Ok(Keep));
    let mut feed = GcFeed::new(params.clone());
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
    let params = GcParams::new(HybridTime::from_micros(10_000), Full, Some(1));
    let mut feed = GcFeed::new(params.clone());
    let ttl_100ms = Ttl::from_ms(100);
    assert_eq!(feed.decide_ttl_only(&[b"h"], t(2000), ttl_100ms, false), Ok(Keep));
    // The marker beneath: expired by the table TTL on its own, but the record's is in effect.
    assert_eq!(feed.decide(&[b"h"], t(1000), false, Ttl::Inherit), Ok(Keep));
    // A field after the record: the table TTL alone would expire it.
    assert_eq!(feed.decide(&[b"h", b"f"], t(3000), false, Ttl::Inherit), Ok(KeepInherited));
    // A tombstone beneath a record stays in a full compaction: without it the record
    // would read as a tombstone at its own, later time.
    let params = GcParams { table_ttl_ms: None, ..params };
    let mut feed = GcFeed::new(params.clone());
    assert_eq!(feed.decide(&[b"s"], t(20_000), false, Ttl::Inherit), Ok(Keep));
    assert_eq!(feed.decide_ttl_only(&[b"s"], t(2000), ttl_100ms, false), Ok(Keep));
    assert_eq!(feed.decide(&[b"s"], t(1000), true, Ttl::Inherit), Ok(Keep));
    assert_eq!(feed.decide(&[b"s"], t(500), false, Ttl::Inherit), Ok(Drop));
}

/// A column tombstone newer than a packed row may hide a value inside it: a full
/// compaction keeps it while the packed row stays, and drops it once repacking folds the
/// packed row away (or a row tombstone hides it). One newer than the tombstone does not
/// count, nor does it for a column no packed row holds (a collection's element).
#[test]
fn column_tombstones_over_a_kept_packed_row_stay() {
    let schema = SchemaGc {
        leaves: vec![b"c".to_vec()],
        collections: vec![b"m".to_vec()],
        ..SchemaGc::default()
    };
    let params = GcParams {
        schema: std::sync::Arc::new(schema),
        ..GcParams::new(HybridTime::from_micros(9000), Full, None)
    };
    let verdicts = |packed_us: u64, folded: bool, path: Path| {
        let mut feed = GcFeed::new(params.clone());
        let row = feed.decide_packed_row(&[b"d"], t(packed_us), Ttl::Inherit, folded);
        let tombstone = feed.decide(path, t(2000), true, Ttl::Inherit);
        (row.expect("in order"), tombstone.expect("in order"))
    };
    let column: Path = &[b"d", b"c"];
    assert_eq!(verdicts(1000, false, column), (Keep, Keep));
    assert_eq!(verdicts(1000, true, column), (Drop, Drop));
    assert_eq!(verdicts(3000, false, column), (Keep, Drop), "the packed row is newer");
    assert_eq!(verdicts(1000, false, &[b"d", b"m", b"k"]), (Keep, Drop), "not packable");
}

/// An entry's path components (document, subkeys).
type Path<'a> = &'a [&'a [u8]];

/// A full compaction keeps an expired entry beneath which it keeps a newer entry: in a
/// document tablet any (a required-marker write would find it in its place), in a CQL
/// table (blind writes) only one that inherits the expired TTL. Without one, or with one
/// the compaction does not keep as a value, it goes.
#[test]
fn an_expired_entry_with_a_newer_descendant_kept_stays() {
    let cutoff = HybridTime::from_micros(20_000);
    // Path, write time, TTL, whether the compaction keeps it as a value.
    let rows: [(Path, u64, Option<u64>, bool); 10] = [
        (&[b"d", b"m"], 1000, Some(2), true),        // expired at 3000
        (&[b"d", b"m", b"w"], 1500, None, false),    // inherits it: dropped with it
        (&[b"d", b"m", b"x"], 2000, Some(50), true), // its own TTL: alive
        (&[b"d", b"n"], 1000, Some(2), true),        // expired
        (&[b"d", b"n", b"y"], 5000, None, true),     // written after it ran out: alive
        (&[b"d", b"o"], 1000, Some(2), true),        // expired
        (&[b"d", b"o", b"z"], 5000, None, false),    // dropped (or a tombstone)
        (&[b"d", b"p"], 1000, Some(2), true),        // expired
        (&[b"d", b"p", b"q"], 1500, None, true),     // inherits it, kept (say, under a record)
        (&[b"d", b"r"], 1000, Some(2), true),        // expired, nothing beneath
    ];
    let kept = |blind_writes: bool| {
        let schema = std::sync::Arc::new(SchemaGc { blind_writes, ..SchemaGc::default() });
        let mut keeps =
            ExpiredKeeps::new(&GcParams { schema, ..GcParams::new(cutoff, Full, None) });
        for (path, us, ttl, stays) in rows {
            keeps.see(path, (t(us), ttl.map_or(Ttl::Inherit, Ttl::from_ms)), (stays, false));
        }
        let keep = keeps.finish();
        let kept: Vec<&[u8]> = keep.iter().map(|(path, _)| path[1].as_slice()).collect();
        assert!(keep.iter().all(|(_, at)| *at == t(1000)), "{keep:?}");
        kept.iter().map(|k| String::from_utf8_lossy(k).into_owned()).collect::<Vec<_>>()
    };
    assert_eq!(kept(false), ["m", "n", "p"]);
    assert_eq!(kept(true), ["p"]);
    // A colocated table key's own document is no ancestor of the table's documents: they
    // keep none of its expired entries.
    let mut keeps = ExpiredKeeps::new(&GcParams::new(cutoff, Full, None));
    keeps.see(&[b"t"], (t(1000), Ttl::from_ms(2)), (true, true));
    keeps.see(&[b"t", b"doc"], (t(5000), Ttl::Never), (true, false));
    assert!(keeps.finish().is_empty());
}

/// The feed keeps what the planner says, and drops the other expired entries.
#[test]
fn the_feed_keeps_the_planned_expired_entries() {
    let cutoff = HybridTime::from_micros(20_000);
    let rows: [(Path, u64, Option<u64>); 4] = [
        (&[b"d", b"m"], 1000, Some(2)),
        (&[b"d", b"m", b"x"], 2000, Some(50)),
        (&[b"d", b"n"], 1000, Some(2)),
        (&[b"d", b"n", b"w"], 1500, None),
    ];
    let keep = [(vec![b"d".to_vec(), b"m".to_vec()], t(1000))];
    let keep_expired = std::sync::Arc::new(keep.into_iter().collect());
    let mut feed = GcFeed::new(GcParams { keep_expired, ..GcParams::new(cutoff, Full, None) });
    let verdicts: Vec<Verdict> = rows
        .iter()
        .map(|(p, us, ttl)| feed.decide(p, t(*us), false, ttl.map_or(Ttl::Inherit, Ttl::from_ms)))
        .map(|v| v.expect("in key order"))
        .collect();
    assert_eq!(verdicts, [KeepExpired, Keep, Drop, Drop]);
}

/// The rule per data model, one expired entry each (TTL 2 ms from T1000; cutoff T5000):
/// what a full and a minor compaction do with it, with the tablet's schema. CQL scalar
/// and liveness columns and a collection's elements can have no descendants (the
/// schema's leaves); a CQL collection column, a document path and a Redis key can. Full
/// compactions drop them all (nothing kept beneath); minor ones tombstone the leaves and
/// keep the rest, whose TTL an entry in a file outside may inherit.
#[test]
fn expired_entries_per_data_model() {
    let cql = SchemaGc {
        leaves: vec![b"sys0".to_vec(), b"v".to_vec()],
        collections: vec![b"map".to_vec()],
        blind_writes: true,
        ..SchemaGc::default()
    };
    let models: [(&str, Path, SchemaGc, [Verdict; 2]); 6] = [
        ("CQL scalar column", &[b"row", b"v"], cql.clone(), [Drop, Tombstone]),
        ("CQL liveness column", &[b"row", b"sys0"], cql.clone(), [Drop, Tombstone]),
        ("CQL collection's element", &[b"row", b"map", b"k"], cql.clone(), [Drop, Tombstone]),
        ("CQL collection column", &[b"row", b"map"], cql, [Drop, KeepExpired]),
        ("document value", &[b"doc", b"a"], SchemaGc::default(), [Drop, KeepExpired]),
        ("Redis key", &[b"key"], SchemaGc::default(), [Drop, KeepExpired]),
    ];
    for (model, path, schema, want) in models {
        let schema = std::sync::Arc::new(schema);
        for (kind, want) in [Full, Minor].into_iter().zip(want) {
            let params =
                GcParams { schema: schema.clone(), ..GcParams::new(t(5000).ht, kind, None) };
            let verdict = GcFeed::new(params).decide(path, t(1000), false, Ttl::from_ms(2));
            assert_eq!(verdict, Ok(want), "{model}, {kind:?}");
        }
    }
}
