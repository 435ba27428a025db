use super::*;
use crate::document::Document;
use crate::encoding::{DocKey, DocPath, KeyEntry, Primitive};
use crate::hybrid_time::{DocHybridTime, HybridTime};

fn parse_path(s: &str) -> DocPath {
    let mut p = Parser::new(s, 1);
    let path = p.path().unwrap_or_else(|e| panic!("{s}: {e}"));
    p.finish().unwrap();
    path
}

#[test]
fn literals_print_as_the_contract_says() {
    let cases: [(Primitive, &str); 12] = [
        (Primitive::String("a\"b\\c\n\u{e9}\u{1}".into()), r#""a\"b\\c\né\u0001""#),
        (Primitive::Int64(-5), "-5"),
        (Primitive::Int32(123), "123i32"),
        (Primitive::Double(1.5), "1.5"),
        (Primitive::Double(-2e3), "-2000.0"),
        (Primitive::Double(f64::NEG_INFINITY), "-inf"),
        (Primitive::Double(f64::NAN), "nan"),
        (Primitive::Bool(true), "true"),
        (Primitive::Null, "null"),
        (Primitive::Timestamp(1_700_000_000_000_000), "ts(1700000000000000)"),
        (Primitive::ColumnId(11), "col(11)"),
        (Primitive::SystemColumnId(0), "sys(0)"),
    ];
    for (value, text) in cases {
        assert_eq!(value.to_string(), text);
        let mut p = Parser::new(text, 1);
        assert_eq!(p.literal().unwrap(), value, "{text}");
        p.finish().unwrap();
    }
    let mut p = Parser::new("-2e3 1e2i32", 1);
    assert_eq!(p.literal().unwrap(), Primitive::Double(-2000.0));
}

/// A `\u` escape outside the basic plane is a surrogate pair, as in JSON; a lone
/// surrogate, or a high one followed by anything but a low one, is refused at the escape.
#[test]
fn strings_take_surrogate_pairs_and_refuse_lone_surrogates() {
    let string = |text: &str| Parser::new(text, 1).string().map_err(|e| e.to_string());
    assert_eq!(string(r#""\ud83d\ude00""#), Ok("\u{1f600}".into()));
    assert_eq!(string(r#""a\uD834\uDD1Eb""#), Ok("a\u{1d11e}b".into()));
    assert_eq!(string(r#""\udbff\udfff""#), Ok("\u{10ffff}".into()));
    let refused = |column: usize, reason: &str| Err(format!("line 1, column {column}: {reason}"));
    assert_eq!(string(r#""x\ud83d\u0041""#), refused(3, "invalid surrogate pair"));
    assert_eq!(string(r#""x\ud83d\ud83d""#), refused(3, "invalid surrogate pair"));
    assert_eq!(string(r#""x\ud83d""#), refused(3, "invalid \\u escape"));
    assert_eq!(string(r#""x\ude00""#), refused(3, "invalid \\u escape"));
    assert_eq!(string(r#""x\ud83d\u12""#), refused(3, "\\u needs four hex digits"));
}

#[test]
fn keys_and_paths() {
    let path = parse_path(r#"doc(; "mydockey", 123456)."subkey_b"."subkey_c""#);
    assert_eq!(path.to_string(), r#"doc(; "mydockey", 123456)."subkey_b"."subkey_c""#);
    let key = parse_path(r#"doc("user1"; 10)"#).doc_key;
    let printed = key.to_string();
    assert!(printed.starts_with("doc(0x") && printed.ends_with(r#": "user1"; 10)"#), "{printed}");
    assert_eq!(parse_path(&printed).doc_key, key, "printed hash parses back");
    assert_eq!(parse_path(r#"doc("abc.com";)"#).doc_key.range.len(), 0);
    let table = parse_path("doc(coloc=5 | ;)").doc_key;
    assert!(table.is_table_key());
    assert_eq!(table.to_string(), "doc(coloc=5 | ;)");
    let desc = parse_path(r#"doc(; desc("z"), desc(1i32)).col(12)."from""#);
    assert_eq!(desc.doc_key.range[0], KeyEntry::desc(Primitive::String("z".into())));
    assert_eq!(desc.subkeys[0], KeyEntry::asc(Primitive::ColumnId(12)));
    // Integer subkeys separated by `.`; a double subkey prints without `.`.
    let ints = parse_path("doc(;).1.5");
    assert_eq!(ints.subkeys.len(), 2);
    let dbl = DocPath::new(DocKey::default(), vec![KeyEntry::asc(Primitive::Double(1.5))]);
    assert_eq!(dbl.to_string(), "doc(;).15e-1");
    assert_eq!(parse_path(&dbl.to_string()), dbl);
}

/// A path is a prefix of itself and of every path below it, and of nothing else: not of
/// a sibling, not of its parent, not of the same subkeys in another document.
#[test]
fn a_path_is_a_prefix_of_itself_and_its_descendants_only() {
    let a = parse_path(r#"doc("d";)."a""#);
    let cases = [
        (r#"doc("d";)."a""#, true),
        (r#"doc("d";)."a"."b".1"#, true),
        (r#"doc("d";)"#, false),
        (r#"doc("d";)."b""#, false),
        (r#"doc("e";)."a""#, false),
    ];
    for (other, prefix) in cases {
        assert_eq!(a.is_prefix_of(&parse_path(other)), prefix, "{a} of {other}");
    }
    assert!(parse_path(r#"doc("d";)"#).is_prefix_of(&a), "a document root");
}

#[test]
fn hybrid_times_and_durations() {
    let mut p = Parser::new("T1000.3w2 T7000 10ms 15s 2m 1h 500us 0", 1);
    assert_eq!(p.doc_hybrid_time().unwrap(), DocHybridTime::new(HybridTime::new(1000, 3), 2));
    assert_eq!(p.hybrid_time().unwrap(), HybridTime::from_micros(7000));
    let durations: Vec<u64> = (0..6).map(|_| p.duration_us().unwrap()).collect();
    assert_eq!(durations, [10_000, 15_000_000, 120_000_000, 3_600_000_000, 500, 0]);
    let printed: Vec<String> =
        [86_400_000_000u64, 10_000_000, 1_500_000, 0, 7].map(format_duration_us).into();
    assert_eq!(printed, ["24h", "10s", "1500ms", "0", "7us"]);
}

#[test]
fn documents() {
    let text = r#"{"b": {"y": 1, "x": null}, "a": "v"}"#;
    let doc = Parser::new(text, 1).document().unwrap();
    assert_eq!(doc.to_string(), r#"{"a": "v", "b": {"x": null, "y": 1}}"#);
    assert_eq!(Parser::new("{}", 1).document().unwrap(), Document::empty_object());
}

#[test]
fn errors_name_line_and_column() {
    let cases = [
        (r#"doc("a"; 1"#, 11, "expected `)`"),
        (r#"doc("a" 1)"#, 9, "expected `;`"),
        (r#"doc(0x0000: "a";)"#, 5, "does not match"),
        ("doc(; 99999999999999999999)", 7, "out of range"),
        ("doc(; 12abc)", 9, "after number"),
        (r#"doc(; "open)"#, 13, "unterminated string"),
        (r#"doc(; "\q")"#, 8, "unknown escape"),
        ("doc(; bogus)", 7, "expected a literal"),
        ("doc(; 1x2)", 8, "after number"),
    ];
    for (text, column, message) in cases {
        let err = Parser::new(text, 7).path().unwrap_err();
        assert_eq!((err.line, err.column), (7, column), "{text}: {err}");
        assert!(err.message.contains(message), "{text}: {err}");
    }
    let err = Parser::new("T1000.5000", 3).hybrid_time().unwrap_err();
    assert!(err.message.contains("exceeds 4095"), "{err}");
    let err = Parser::new("10 ", 1).duration_us().unwrap_err();
    assert!(err.message.contains("unit"), "{err}");
    let err = Parser::new("{1: 2, 1: 3}", 1).document().unwrap_err();
    assert!(err.message.contains("duplicate"), "{err}");
}
