//! Property tests and byte-format snapshots of the encodings and the notation.

use crate::document::Document;
use crate::encoding::{
    hex, DocKey, DocPath, KeyEntry, Primitive, SortOrder, SubDocKey, Ttl, Value, ValueKind,
};
use crate::hybrid_time::{DocHybridTime, HybridTime};
use crate::notation::{format_duration_us, Parser};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// A fresh directory for one test's files: under the system's temp directory, named for
/// this process and `name` (unique per test), emptied first.
pub(crate) fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("docsim-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The document DocDb's unit tests write: one range component, the string "d".
pub(crate) fn doc_d() -> DocKey {
    DocKey::new(vec![], vec![KeyEntry::asc(Primitive::String("d".into()))])
}

/// Write [`doc_d`] as the number `n` at `us`, from log entry `op_id` if given.
pub(crate) fn write_int(db: &crate::db::DocDb, n: i32, us: u64, op_id: Option<crate::OpId>) {
    let mut batch = crate::write_batch::DocWriteBatch::new();
    let value = Value::new(ValueKind::Primitive(Primitive::Int32(n)));
    batch.push(&DocPath::new(doc_d(), vec![]), &value);
    db.write(&batch, HybridTime::from_micros(us), op_id, &[]).expect("write");
}

/// Run a docscript that must pass, in a scratch directory `name`: its output, and the
/// probes it hit.
fn run_with_probes(name: &str, script: &str) -> (String, std::collections::BTreeMap<String, u64>) {
    let dir = scratch_dir(name);
    let _ = crate::probe::take();
    let mut out = Vec::new();
    let outcome = crate::script::run_script(script, &dir, crate::canary::Plants::NONE, &mut out);
    let probes = crate::probe::take();
    let _ = std::fs::remove_dir_all(&dir);
    let out = String::from_utf8(out).expect("UTF-8");
    assert!(outcome.expect("run").ok(), "{out}");
    (out, probes)
}

fn primitive() -> impl Strategy<Value = Primitive> {
    prop_oneof![
        Just(Primitive::Null),
        any::<bool>().prop_map(Primitive::Bool),
        any::<i32>().prop_map(Primitive::Int32),
        any::<i64>().prop_map(Primitive::Int64),
        any::<f64>().prop_map(Primitive::Double),
        "(\\PC|\u{0}){0,6}".prop_map(Primitive::String),
        any::<i64>().prop_map(Primitive::Timestamp),
        any::<i32>().prop_map(Primitive::ColumnId),
        any::<i32>().prop_map(Primitive::SystemColumnId),
    ]
}

/// Two values of the same kind, so payload order is exercised, not just type bytes.
fn same_kind_pair() -> impl Strategy<Value = (Primitive, Primitive)> {
    prop_oneof![
        (any::<i32>(), any::<i32>()).prop_map(|(a, b)| (Primitive::Int32(a), Primitive::Int32(b))),
        (any::<i64>(), any::<i64>()).prop_map(|(a, b)| (Primitive::Int64(a), Primitive::Int64(b))),
        (any::<f64>(), any::<f64>())
            .prop_map(|(a, b)| (Primitive::Double(a), Primitive::Double(b))),
        ("[a\u{0}\u{1}\u{ff}é]{0,5}", "[a\u{0}\u{1}\u{ff}é]{0,5}")
            .prop_map(|(a, b)| (Primitive::String(a), Primitive::String(b))),
        (any::<i64>(), any::<i64>())
            .prop_map(|(a, b)| (Primitive::Timestamp(a), Primitive::Timestamp(b))),
        (any::<i32>(), any::<i32>())
            .prop_map(|(a, b)| (Primitive::ColumnId(a), Primitive::ColumnId(b))),
        (any::<i32>(), any::<i32>())
            .prop_map(|(a, b)| (Primitive::SystemColumnId(a), Primitive::SystemColumnId(b))),
        (any::<bool>(), any::<bool>()).prop_map(|(a, b)| (Primitive::Bool(a), Primitive::Bool(b))),
    ]
}

fn order() -> impl Strategy<Value = SortOrder> {
    prop_oneof![Just(SortOrder::Ascending), Just(SortOrder::Descending)]
}

fn key_entry() -> impl Strategy<Value = KeyEntry> {
    (primitive(), order()).prop_map(|(value, order)| KeyEntry { value, order })
}

fn small_entry() -> impl Strategy<Value = KeyEntry> {
    // A small domain, so generated keys share prefixes often.
    let value = prop_oneof![
        (0i64..3).prop_map(Primitive::Int64),
        "[ab]{0,2}".prop_map(Primitive::String),
        (0i32..2).prop_map(Primitive::ColumnId),
    ];
    (value, order()).prop_map(|(value, order)| KeyEntry { value, order })
}

fn doc_ht() -> impl Strategy<Value = DocHybridTime> {
    let ht = prop_oneof![
        (0u64..4, 0u16..3).prop_map(|(p, l)| HybridTime::new(p * 1000, l)),
        (0..=HybridTime::PHYSICAL_MAX_US, 0u16..=4095).prop_map(|(p, l)| HybridTime::new(p, l)),
    ];
    (ht, prop_oneof![0u32..3, any::<u32>()]).prop_map(|(ht, w)| DocHybridTime::new(ht, w))
}

fn doc_key() -> impl Strategy<Value = DocKey> {
    let coloc = prop_oneof![Just(None), (0u32..3).prop_map(Some)];
    let group = || prop::collection::vec(small_entry(), 0..3);
    (coloc, group(), group()).prop_map(|(colocation_id, hashed, range)| DocKey {
        colocation_id,
        hashed,
        range,
    })
}

fn sub_doc_key() -> impl Strategy<Value = SubDocKey> {
    (doc_key(), prop::collection::vec(small_entry(), 0..4), doc_ht())
        .prop_map(|(doc_key, subkeys, dht)| SubDocKey::new(DocPath::new(doc_key, subkeys), dht))
}

fn encode_entry(e: &KeyEntry) -> Vec<u8> {
    let mut out = Vec::new();
    e.encode_to(&mut out);
    out
}

fn value() -> impl Strategy<Value = Value> {
    let ttl = prop_oneof![
        Just(Ttl::Inherit),
        Just(Ttl::Never),
        (1u64..i64::MAX as u64).prop_map(Ttl::Ms)
    ];
    let kind = prop_oneof![
        Just(ValueKind::Object),
        Just(ValueKind::Tombstone),
        primitive().prop_map(ValueKind::Primitive),
        any::<bool>().prop_map(|object| ValueKind::TtlOnly { object })
    ];
    (ttl, kind).prop_map(|(ttl, kind)| {
        // A TTL-only record always has a TTL.
        let ttl = match (&kind, ttl) {
            (ValueKind::TtlOnly { .. }, Ttl::Inherit) => Ttl::Never,
            (_, ttl) => ttl,
        };
        Value { ttl, kind }
    })
}

/// TTL-only records that do not decode say why and where.
#[test]
fn malformed_ttl_only_records_are_named() {
    let error = |bytes: &[u8]| Value::decode(bytes).unwrap_err().to_string();
    let said = |at: usize, reason: &str| format!("malformed value at byte {at}: {reason}");
    assert_eq!(error(b"k\x02t\x81{"), said(1, "unknown merge flags byte 0x02"));
    assert_eq!(error(b"k\x01{"), said(2, "a TTL-only record without a TTL"));
    let holds = "a TTL-only record holds `{` or an empty string";
    assert_eq!(error(b"k\x01t\x81X"), said(4, holds));
    assert_eq!(error(b"k\x01t\x81Sx"), said(4, holds), "a string, but not empty");
    assert_eq!(error(b"k"), said(1, "missing merge flags"));
    let record = Value { ttl: Ttl::Ms(1), kind: ValueKind::TtlOnly { object: false } };
    assert_eq!(record.encode(), b"k\x01t\x81S");
}

/// A packed row and an entity row hide nothing beneath them, past a row TTL of any
/// length too; a plain value hides what is beneath it, with a TTL or without.
#[test]
fn packed_rows_hide_nothing_past_a_ttl() {
    for ttl in [Ttl::Inherit, Ttl::Ms(1), Ttl::Ms(1 << 20)] {
        let encoded = |kind| Value { ttl, kind }.encode();
        assert!(Value::hides_nothing(&encoded(ValueKind::PackedRow(vec![]))), "{ttl:?}");
        assert!(Value::hides_nothing(&encoded(ValueKind::EntityRow(3))), "{ttl:?}");
        let plain = encoded(ValueKind::Primitive(Primitive::Int32(7)));
        assert!(!Value::hides_nothing(&plain), "{ttl:?}");
    }
}

/// Values that do not decode name the offset where decoding fails, past a TTL.
#[test]
fn malformed_values_name_the_offset() {
    let error = |bytes: &[u8]| Value::decode(bytes).unwrap_err().to_string();
    // An entity row's schema version (5), then a stray byte at offset 4.
    assert_eq!(
        error(b"t\x81Z\x05\xff"),
        "malformed value at byte 4: trailing bytes after the schema version"
    );
    // A column id (3), then a stray byte at offset 4.
    assert_eq!(
        error(b"t\x81K\x83\xff"),
        "malformed value at byte 4: trailing bytes after column id"
    );
    // An int32 needs 4 bytes; an object marker none.
    assert_eq!(
        error(b"t\x81H\x00\x01"),
        "malformed value at byte 3: payload of 2 bytes, expected 4"
    );
    assert_eq!(error(b"t\x81{\x00"), "malformed value at byte 3: 1 unexpected trailing bytes");
    // A column id's varint missing, and one beyond 32 bits (2^33): at its own byte.
    assert_eq!(error(b"t\x81K"), "malformed signed varint at byte 3: unexpected end of input");
    let mut over = b"t\x81K".to_vec();
    crate::encoding::varint::encode_signed(1 << 33, &mut over);
    assert_eq!(error(&over), "malformed value at byte 3: column id 8589934592 out of range");
    // A TTL's varint missing, and a negative TTL: at the TTL's own byte.
    assert_eq!(error(b"t"), "malformed signed varint at byte 1: unexpected end of input");
    let mut negative = b"k\x01t".to_vec();
    crate::encoding::varint::encode_signed(-5, &mut negative);
    assert_eq!(error(&negative), "malformed value at byte 3: negative TTL -5 ms");
    // A TTL-only record holds no packed row, nor an entity row: their type bytes are
    // unknown there.
    assert_eq!(
        error(b"k\x01t\x81z\x80"),
        "malformed value at byte 4: unknown value type byte 0x7a"
    );
    assert_eq!(
        error(b"k\x01t\x81Z\x80"),
        "malformed value at byte 4: unknown value type byte 0x5a"
    );
}

/// Keys that do not decode name the offset where decoding fails: the stored hash's own
/// byte, past a colocation id too, and the hybrid time's first byte past its `#`.
#[test]
fn malformed_keys_name_the_offset() {
    let error = |bytes: &[u8]| DocKey::decode(bytes).unwrap_err().to_string();
    let said = |at: usize, reason: &str| format!("malformed doc key at byte {at}: {reason}");
    assert_eq!(error(b"G\x12"), said(1, "truncated hash"));
    assert_eq!(error(b"0\x00\x00\x00\x07G\x12"), said(6, "truncated hash"));
    // A hash that does not match its components, with and without a colocation id.
    for colocation_id in [None, Some(7)] {
        let int = KeyEntry { value: Primitive::Int32(1), order: SortOrder::Ascending };
        let key = DocKey { colocation_id, hashed: vec![int], range: vec![] };
        let mut bytes = key.encode();
        let hash_at = if colocation_id.is_some() { 6 } else { 1 };
        let computed = format!("0x{:02x}{:02x}", bytes[hash_at], bytes[hash_at + 1]);
        bytes[hash_at..hash_at + 2].copy_from_slice(&[0, 0]);
        let reason = format!("stored hash 0x0000 != computed {computed}");
        assert_eq!(error(&bytes), said(hash_at, &reason), "{colocation_id:?}");
    }
    // A key whose hybrid time is missing after its `#`, after a subkey or none.
    let key_error = |bytes: &[u8]| SubDocKey::decode(bytes).unwrap_err().to_string();
    assert_eq!(key_error(b"!#"), "malformed signed varint at byte 2: unexpected end of input");
    assert_eq!(
        key_error(b"!H\x80\x00\x00\x01#"),
        "malformed signed varint at byte 7: unexpected end of input"
    );
}

/// A double key holds one NaN, the canonical one, both orders: it decodes to itself, and
/// any other NaN's bits are refused at the payload.
#[test]
fn a_double_key_holds_only_the_canonical_nan() {
    for order in [SortOrder::Ascending, SortOrder::Descending] {
        let nan = KeyEntry { value: Primitive::Double(f64::NAN), order };
        let bytes = encode_entry(&nan);
        let (decoded, len) = KeyEntry::decode(&bytes, 0).unwrap();
        assert_eq!((encode_entry(&decoded), len), (bytes.clone(), 9), "{order:?}");
        let mut other = bytes;
        other[8] ^= 1; // the lowest mantissa bit: still a NaN, not the canonical one
        let bits = f64::NAN.to_bits() ^ 1;
        assert_eq!(
            KeyEntry::decode(&other, 0).unwrap_err().to_string(),
            format!(
                "malformed key component at byte 1: a NaN other than the canonical one \
                 ({bits:#018x})"
            ),
            "{order:?}"
        );
    }
}

fn document() -> impl Strategy<Value = Document> {
    let leaf = primitive().prop_map(Document::Primitive);
    leaf.prop_recursive(3, 12, 4, |inner| {
        prop::collection::btree_map(key_entry(), inner, 0..4).prop_map(Document::Object)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn key_entry_order_matches_bytes((a, b) in same_kind_pair(), o in order()) {
        let (a, b) = (KeyEntry { value: a, order: o }, KeyEntry { value: b, order: o });
        prop_assert_eq!(a.cmp(&b), encode_entry(&a).cmp(&encode_entry(&b)), "{} vs {}", a, b);
    }

    #[test]
    fn key_entries_of_any_kind_order_like_bytes(a in key_entry(), b in key_entry()) {
        prop_assert_eq!(a.cmp(&b), encode_entry(&a).cmp(&encode_entry(&b)), "{} vs {}", a, b);
        // `<` and friends agree with `cmp` (Rust's contract for `PartialOrd` beside `Ord`).
        prop_assert_eq!(a.partial_cmp(&b), Some(a.cmp(&b)), "{} vs {}", a, b);
    }

    #[test]
    fn key_entry_round_trip(a in key_entry()) {
        let bytes = encode_entry(&a);
        prop_assert_eq!(KeyEntry::decode(&bytes, 0).unwrap(), (a, bytes.len()));
    }

    /// Paths that differ in one subkey of one kind, all else shared: random pairs of keys
    /// almost always differ earlier (the hash), so this reaches the entries' own order.
    #[test]
    fn paths_differing_in_one_subkey_order_like_bytes(
        doc in doc_key(), (a, b) in same_kind_pair(), o in order(),
    ) {
        let (a, b) = (KeyEntry { value: a, order: o }, KeyEntry { value: b, order: o });
        let (pa, pb) = (DocPath::new(doc.clone(), vec![a]), DocPath::new(doc, vec![b]));
        prop_assert_eq!(pa.cmp(&pb), pa.encode().cmp(&pb.encode()), "{} vs {}", pa, pb);
    }

    #[test]
    fn sub_doc_key_order_matches_bytes(a in sub_doc_key(), b in sub_doc_key()) {
        let bytes = a.encode().cmp(&b.encode());
        prop_assert_eq!(a.cmp(&b), bytes, "{} vs {}", a, b);
        // `<` and friends go through `partial_cmp`, each type's own: all must agree.
        prop_assert_eq!(a.partial_cmp(&b), Some(bytes), "{} vs {}", a, b);
        let (pa, pb) = (&a.path, &b.path);
        prop_assert_eq!(pa.partial_cmp(pb), Some(pa.encode().cmp(&pb.encode())));
        let (da, db) = (&pa.doc_key, &pb.doc_key);
        prop_assert_eq!(da.partial_cmp(db), Some(da.encode().cmp(&db.encode())));
    }

    #[test]
    fn newer_first_and_parent_first(
        key in sub_doc_key(), other in doc_ht(), child in small_entry(),
    ) {
        let older = SubDocKey::new(key.path.clone(), other.min(key.doc_ht));
        let newer = SubDocKey::new(key.path.clone(), other.max(key.doc_ht));
        prop_assert!(older == newer || newer.encode() < older.encode());
        let child_key = SubDocKey::new(key.path.child(child), DocHybridTime::MAX);
        prop_assert!(key.encode() < child_key.encode());
        let child_key = SubDocKey::new(child_key.path, DocHybridTime::MIN);
        prop_assert!(key.encode() < child_key.encode());
    }

    #[test]
    fn sub_doc_key_round_trip(a in sub_doc_key()) {
        prop_assert_eq!(SubDocKey::decode(&a.encode()).unwrap(), a);
    }

    #[test]
    fn value_round_trip(v in value()) {
        prop_assert_eq!(Value::decode(&v.encode()).unwrap(), v);
    }

    #[test]
    fn decoding_garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = SubDocKey::decode(&bytes);
        let _ = Value::decode(&bytes);
        let _ = DocKey::decode(&bytes);
    }

    #[test]
    fn decoding_mutated_keys_never_panics(
        key in sub_doc_key(), v in value(), at in any::<prop::sample::Index>(), byte: u8, cut: bool,
    ) {
        for mut bytes in [key.encode(), v.encode()] {
            let i = at.index(bytes.len());
            if cut { bytes.truncate(i) } else { bytes[i] = byte }
            if let Ok(decoded) = SubDocKey::decode(&bytes) {
                // A decoded key re-encodes to itself.
                prop_assert_eq!(decoded.encode(), bytes.clone());
            }
            let _ = Value::decode(&bytes);
        }
    }

    #[test]
    fn print_parse_round_trip(key in sub_doc_key(), doc in document(), us: u64) {
        let text = key.to_string();
        let mut p = Parser::new(&text, 1);
        let path = p.path().unwrap();
        p.expect("@").unwrap();
        let dht = p.doc_hybrid_time().unwrap();
        p.finish().unwrap();
        prop_assert_eq!(SubDocKey::new(path, dht), key);
        let text = doc.to_string();
        prop_assert_eq!(Parser::new(&text, 1).document().unwrap(), doc);
        let text = format_duration_us(us);
        prop_assert_eq!(Parser::new(&text, 1).duration_us().unwrap(), us);
    }

    #[test]
    fn literal_print_parse_round_trip(e in key_entry()) {
        let text = e.to_string();
        let mut p = Parser::new(&text, 1);
        prop_assert_eq!(p.key_entry().unwrap(), e);
        p.finish().unwrap();
    }
}

fn key(text: &str) -> SubDocKey {
    let mut p = Parser::new(text, 1);
    let path = p.path().unwrap();
    p.expect("@").unwrap();
    SubDocKey::new(path, p.doc_hybrid_time().unwrap())
}

#[test]
fn hash_function_is_pinned() {
    // The 16-bit hash is part of the on-disk format: YugabyteDB's partition hash of the
    // values (src/yb/dockv/doc_key.h's example key: DocKey(0xfca0, [3], [])).
    let k = DocKey::new(vec![KeyEntry::asc(Primitive::Int32(3))], vec![]);
    assert_eq!(k.hash(), Some(0xfca0));
    assert_eq!(hex(&k.encode()), "47fca048800000032121"); // as YugabyteDB dumps it
    assert_eq!(k.to_string(), "doc(0xfca0: 3i32;)");
}

#[test]
fn yugabyte_test_vector() {
    // docdb-test BasicTest: DocKey(["mydockey", 123456]).
    let k = key(r#"doc(; "mydockey", 123456) @T1000"#);
    assert_eq!(hex(&k.path.doc_key.encode()), "536d79646f636b6579000049800000000001e24021");
}

#[test]
fn encodings_snapshot() {
    let keys = [
        r#"doc(; "mydockey", 123456) @T10"#,
        r#"doc(; "mydockey", 123456)."subkey_a" @T2000w1"#,
        r#"doc("user1"; 10i32).sys(0) @T1000"#,
        r#"doc("user1"; 10i32).col(11)."from" @T1000w3"#,
        r#"doc("abc.com";).col(10) @T1000.7"#,
        r#"doc(coloc=16385 | ; 5i32).sys(0) @T1"#,
        "doc(coloc=5 | ;) @T9000",
        r#"doc(; desc("a\u0000b"), desc(-1), desc(2i32), desc(1.5), desc(true), desc(null)) @T1"#,
        "doc(; null, false, true, -0.0, nan, -inf, ts(-1), col(-1), sys(64), \
         desc(col(3)), desc(sys(0))) @T1",
        r#"doc(1, 2i32; "x").1.2 @T4503599627370495.4095w4294967295"#,
    ];
    let values = [
        Value::new(ValueKind::Object),
        Value::tombstone(),
        Value::new(ValueKind::Primitive(Primitive::Null)),
        Value { ttl: Ttl::Ms(86_400_000), kind: ValueKind::Primitive(Primitive::Int32(10)) },
        Value { ttl: Ttl::Never, kind: ValueKind::Primitive(Primitive::String("news".into())) },
        Value::new(ValueKind::Primitive(Primitive::Int64(-2))),
        Value::new(ValueKind::Primitive(Primitive::Double(1.5))),
        Value::new(ValueKind::Primitive(Primitive::Bool(true))),
        Value::new(ValueKind::Primitive(Primitive::Timestamp(1_700_000_000_000_000))),
        Value::new(ValueKind::Primitive(Primitive::ColumnId(12))),
        Value {
            ttl: Ttl::Ms(15_000),
            kind: ValueKind::Primitive(Primitive::String("value1".into())),
        },
    ];
    let mut out = String::new();
    for text in keys {
        let k = key(text);
        assert_eq!(k.to_string(), key(&k.to_string()).to_string());
        out += &format!("{k}\n  {}\n", hex(&k.encode()));
    }
    for v in values {
        out += &format!("{v:?}\n  {}\n", hex(&v.encode()));
    }
    insta::assert_snapshot!(out);
}

#[test]
fn document_literal_orders_keys_like_storage() {
    let doc = Parser::new(r#"{2: "b", "a": 1, 1: "x", desc(5): 0}"#, 1).document().unwrap();
    let Document::Object(map) = &doc else { panic!("object") };
    let encoded: Vec<Vec<u8>> = map.keys().map(encode_entry).collect();
    let mut sorted = encoded.clone();
    sorted.sort();
    assert_eq!(encoded, sorted);
    let _: &BTreeMap<KeyEntry, Document> = map;
}

/// The probe `read.born_after_expiry` counts a version read with no TTL of its own under a
/// parent whose TTL had run out when it was written (it does not inherit that TTL:
/// `expiry.rs`), not one that carries its own TTL; such children read back.
#[test]
fn born_after_expiry_counts_children_without_a_ttl_of_their_own() {
    let script = r#"obj doc("d";) @T1000 ttl=1ms
set doc("d";)."a" = 1 @T5000
set doc("d";)."b" = 2 @T5000
set doc("d";)."c" = 3 @T5000 ttl=10s
get doc("d";) @T6000
"#;
    let (out, probes) = run_with_probes("born-after-expiry", script);
    assert_eq!(probes.get("read.born_after_expiry"), Some(&2), "{probes:?}");
    assert!(out.ends_with("=> {\"a\": 1, \"b\": 2, \"c\": 3}\n"), "{out}");
}

/// The seeks a required-marker write makes (the probe `write.marker_seek`), as
/// YugabyteDB's `DocWriteBatch::SetPrimitiveInternal` makes them: none to overwrite a whole
/// document, then one per level down to the entry's parent, none below a level that is
/// missing (markers are written there blind), and for a delete one at the path itself.
#[test]
fn required_marker_writes_seek_only_what_they_must() {
    let probes_of = |commands: &str| {
        run_with_probes("marker-seeks", &format!("markers required\n{commands}\n")).1
    };
    let seeks = |commands: &str| probes_of(commands).get("write.marker_seek").copied().unwrap_or(0);
    assert_eq!(seeks(r#"set doc("d";) = 1 @T1000"#), 0, "a whole document");
    assert_eq!(seeks(r#"obj doc("d";) @T1000"#), 0, "a whole document's marker");
    assert_eq!(seeks(r#"set doc("d";)."a"."b" = 1 @T1000"#), 1, "no document");
    let two_levels = "obj doc(\"d\";) @T1000\nset doc(\"d\";).\"a\".\"b\" = 1 @T2000";
    assert_eq!(seeks(two_levels), 2, "the document, then the missing \"a\"");
    assert_eq!(seeks(r#"del doc("d";) @T1000"#), 1, "a delete of a missing document");
    // Below an existing document: a set reads its parent, a delete the path itself too.
    let below = |command: &str| seeks(&format!("obj doc(\"d\";) @T1000\n{command}"));
    assert_eq!(below(r#"set doc("d";)."a" = 1 @T2000"#), 1, "the document");
    assert_eq!(below(r#"del doc("d";)."a" @T2000"#), 2, "the document, then \"a\"");
    // A level with no entry of its own, found through its first descendant (a marker:
    // a primitive there would count as the level's own), exists.
    let blind = "markers optional\nobj doc(\"d\";).\"a\".\"x\" @T1000\nmarkers required";
    let probes = probes_of(&format!("{blind}\nset doc(\"d\";).\"a\".\"y\" = 2 @T2000"));
    let count = |name: &str| probes.get(name).copied();
    assert_eq!(
        (count("write.marker_seek"), count("write.marker_seek_descendant")),
        (Some(2), Some(2))
    );
    assert_eq!(count("write.required_marker"), None, "no marker: both levels exist");
}

/// A restart counts what it replayed in the probes campaign reports sum
/// (`raft.entry_replayed`, and `raft.restart_nothing_to_replay` when an open replayed
/// nothing), agreeing with its own `restart:` line.
#[test]
fn restarts_count_their_replay_in_the_probes() {
    let script = "set doc(; \"a\") = 1 @T1000\nset doc(; \"b\") = 2 @T2000\ncrash\nrestart\n\
                  flush\ncrash\nrestart\n";
    let (out, probes) = run_with_probes("restart-probes", script);
    let lines =
        "restart: flushed=0.0 replayed=2 from=1.2 to=1.3\nrestart: flushed=1.3 replayed=0\n";
    assert_eq!(out, lines);
    let count = |name: &str| probes.get(name).copied();
    let restarts = (count("raft.entry_replayed"), count("raft.restart_nothing_to_replay"));
    // Nothing to replay: the script's first open, and the restart after the flush.
    assert_eq!(restarts, (Some(2), Some(2)), "{probes:?}");
}
