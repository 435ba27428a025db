use super::*;
use crate::encoding::Primitive;
use crate::hybrid_time::{DocHybridTime, HybridTime};
use proptest::prelude::*;

fn leaf(p: Primitive) -> Option<Value> {
    Some(Value::new(ValueKind::Primitive(p)))
}

fn packing() -> SchemaPacking {
    SchemaPacking::new(3, vec![10, 11, 12]).expect("distinct ids")
}

/// The worked example of YugabyteDB's V1 layout: c1 = 7 (int), c2 = 'ab' (text), c3 NULL.
#[test]
fn a_packed_row_is_z_version_end_offsets_then_columns() {
    let p = packing();
    let columns = [leaf(Primitive::Int32(7)), leaf(Primitive::String("ab".into())), None];
    let bytes = p.pack(Ttl::Inherit, &columns);
    let expected: &[u8] = &[
        0x7a, 0x03, // 'z', schema version 3
        5, 0, 0, 0, 8, 0, 0, 0, 8, 0, 0, 0, // end offsets from the column bytes' start
        b'H', 0, 0, 0, 7, // c1: int32, big-endian
        b'S', b'a', b'b', // c2: string to its end offset; c3: empty, NULL
    ];
    assert_eq!(bytes, expected);
    let row = decode_packed_row(&bytes, |v| (v == 3).then_some(&p)).expect("decodes");
    let ids_and_values: Vec<(u32, Slot)> =
        [10, 11, 12].into_iter().zip(columns.map(Slot::of)).collect();
    assert_eq!(row, PackedRow { ttl: Ttl::Inherit, version: 3, columns: ids_and_values });
}

/// A damaged column is reported at its byte in the whole value (a later column's offset
/// counts the columns before it), and so are bytes after the last column.
#[test]
fn a_damaged_column_is_reported_at_its_byte_in_the_value() {
    let p = packing();
    let columns = [leaf(Primitive::Int32(7)), leaf(Primitive::String("ab".into())), None];
    let mut bytes = p.pack(Ttl::Inherit, &columns);
    assert_eq!(&bytes[19..], b"Sab", "c2 starts 5 bytes into the column bytes, at 14");
    bytes[20] = 0xFF; // c2's text is no longer UTF-8
    let err = decode_packed_row(&bytes, |_| Some(&p)).expect_err("damaged");
    let got = (err.what, err.offset, err.reason.as_str());
    assert_eq!(got, ("packed column", 20, "invalid UTF-8 in string"));
    // A byte past the last column's end is reported where it is.
    bytes[20] = b'a';
    bytes.push(0);
    let err = decode_packed_row(&bytes, |_| Some(&p)).expect_err("a byte too many");
    let got = (err.what, err.offset, err.reason.as_str());
    assert_eq!(got, ("packed row", 22, "1 bytes after the last column"));
}

#[test]
fn row_and_column_ttls_travel_with_the_row() {
    let p = packing();
    let with_ttl =
        Some(Value { ttl: Ttl::Ms(5_000), kind: ValueKind::Primitive(Primitive::Int64(-1)) });
    let columns = [with_ttl, None, leaf(Primitive::Bool(true))];
    let bytes = p.pack(Ttl::Ms(60_000), &columns);
    assert_eq!(bytes[0], tag::VALUE_TTL, "row control fields come first");
    assert_eq!(packed_header(&bytes), Ok((Ttl::Ms(60_000), 3)));
    let row = decode_packed_row(&bytes, |_| Some(&p)).expect("decodes");
    assert_eq!(row.ttl, Ttl::Ms(60_000));
    assert_eq!(row.columns[0].1.value, columns[0]);
    assert_eq!(row.columns[2].1.value, columns[2]);
}

#[test]
fn a_tombstone_in_a_slot_reads_as_null_and_unknown_versions_are_refused() {
    let p = packing();
    let mut bytes = p.pack(Ttl::Inherit, &[None, None, None]);
    // Give c2 a one-byte slot holding a tombstone.
    bytes.truncate(2);
    for end in [0u32, 1, 1] {
        bytes.extend_from_slice(&end.to_le_bytes());
    }
    bytes.push(tag::VALUE_TOMBSTONE);
    let row = decode_packed_row(&bytes, |_| Some(&p)).expect("decodes");
    assert!(row.columns.iter().all(|(_, v)| v.value.is_none()));
    let err = decode_packed_row(&bytes, |_| None).expect_err("no packing for version 3");
    assert!(err.to_string().contains("no packing for schema version 3"), "{err}");
    let twice = SchemaPacking::new(1, vec![4, 5, 4]).unwrap_err();
    assert_eq!(twice, "schema version 1 packs column 4 twice");
}

/// A schema version that does not fit 32 bits, or whose varint is cut short, is refused
/// at the version's own byte (just past the `z`, after the row's TTL).
#[test]
fn a_bad_schema_version_is_refused_at_its_byte() {
    let mut header = Vec::new();
    value::encode_ttl(Ttl::Ms(60_000), &mut header);
    header.push(PACKED_ROW_V1);
    let at = header.len();
    let mut over = header.clone();
    varint::encode_unsigned(1 << 40, &mut over);
    let said = format!("malformed packed row at byte {at}: schema version over 32 bits");
    assert_eq!(packed_header(&over).map_err(|e| e.to_string()), Err(said));
    let mut cut = header.clone();
    cut.push(0xc0); // a three-byte varint's first byte, alone
    let said = format!("malformed unsigned varint at byte {at}: cut short");
    assert_eq!(packed_header(&cut).map_err(|e| e.to_string()), Err(said));
}

/// A column repacking folded in keeps its own write time, before its value.
#[test]
fn a_folded_column_keeps_its_write_time() {
    let p = packing();
    let written = DocHybridTime::new(HybridTime::new(2_000, 5), 3);
    let slot = Slot { value: leaf(Primitive::Int32(7)), written: Some(written) };
    let slots = [slot.clone(), Slot::of(None), Slot::of(leaf(Primitive::Bool(false)))];
    let bytes = Value { ttl: Ttl::Inherit, kind: ValueKind::PackedRow(p.body_of_slots(&slots)) };
    let bytes = bytes.encode();
    assert_eq!(bytes[14], tag::VALUE_WRITE_TIME, "the first column's bytes start with `u`");
    let row = decode_packed_row(&bytes, |_| Some(&p)).expect("decodes");
    assert_eq!(row.columns[0].1, slot);
    assert_eq!(row.columns[2].1.written, None);
    // The first column's slot made 4 bytes long (the others empty): `u`, then 3 bytes
    // of its 12-byte write time. (`z` 0, the schema version 1, the three columns' ends
    // 2..14 as u32le, their bytes from 14.)
    let four = 4u32.to_le_bytes();
    let cut = [&bytes[..2], &four, &four, &four, &bytes[14..18]].concat();
    let err = decode_packed_row(&cut, |_| Some(&p)).unwrap_err().to_string();
    assert_eq!(err, "malformed packed column at byte 15: write time cut short");
}

fn column() -> impl Strategy<Value = Slot> {
    let primitive = prop_oneof![
        Just(Primitive::Null),
        any::<bool>().prop_map(Primitive::Bool),
        any::<i32>().prop_map(Primitive::Int32),
        any::<i64>().prop_map(Primitive::Int64),
        "[a-z]{0,12}".prop_map(Primitive::String),
    ];
    let ttl = prop_oneof![Just(Ttl::Inherit), Just(Ttl::Never), (1u64..1 << 40).prop_map(Ttl::Ms)];
    let value = proptest::option::of(
        (ttl, primitive).prop_map(|(ttl, p)| Value { ttl, kind: ValueKind::Primitive(p) }),
    );
    let written = proptest::option::of(
        (any::<u64>(), any::<u32>())
            .prop_map(|(ht, id)| DocHybridTime::new(HybridTime::from_raw(ht), id)),
    );
    // A NULL slot holds no write time: it is empty.
    (value, written).prop_map(|(value, written)| {
        let written = written.filter(|_| value.is_some());
        Slot { value, written }
    })
}

proptest! {
    #[test]
    fn packed_rows_round_trip(
        version in 0u32..100_000,
        columns in prop::collection::vec(column(), 0..8),
    ) {
        let ids: Vec<u32> = (0..columns.len() as u32).map(|i| 10 + 3 * i).collect();
        let p = SchemaPacking::new(version, ids.clone()).expect("distinct");
        prop_assert_eq!((p.version(), p.column_ids()), (version, &ids[..]));
        let body = p.body_of_slots(&columns);
        let bytes = Value { ttl: Ttl::Inherit, kind: ValueKind::PackedRow(body) }.encode();
        let row = decode_packed_row(&bytes, |v| (v == version).then_some(&p)).expect("decodes");
        let expected: Vec<(u32, Slot)> = ids.into_iter().zip(columns).collect();
        prop_assert_eq!(row.columns, expected);
    }

    #[test]
    fn damaged_packed_rows_never_panic(
        columns in prop::collection::vec(column(), 1..5),
        cut in 0usize..64,
        flip in 0usize..64,
    ) {
        let ids: Vec<u32> = (0..columns.len() as u32).collect();
        let p = SchemaPacking::new(1, ids).expect("distinct");
        let body = p.body_of_slots(&columns);
        let bytes = Value { ttl: Ttl::Ms(9), kind: ValueKind::PackedRow(body) }.encode();
        let cut = cut % bytes.len();
        // Refused, naming a byte it was given (or the end it stopped at).
        let error = decode_packed_row(&bytes[..cut], |_| Some(&p)).unwrap_err();
        prop_assert!(error.offset <= cut, "cut at {}: {}", cut, error);
        let mut flipped = bytes.clone();
        let flip = flip % bytes.len();
        flipped[flip] ^= 0x5a;
        let _ = decode_packed_row(&flipped, |_| Some(&p)); // an error or a value, never a panic
    }
}
