//! CQL column types, and which statement values fit them.
//!
//! A write's value must fit its column's type, or the statement is refused as an invalid
//! request: YugabyteDB's semantic analysis checks every assignment's right-hand side
//! against the column's type before anything is written (`PTExpr::CheckRhsExpr`,
//! `yql/cql/ql/ptree/pt_expr.cc`: "Datatype Mismatch"). A value fits by the literal a
//! statement writes for it, as CQL reads literals:
//!
//! - an integer (`Int32`, `Int64`, and a timestamp, written as its milliseconds) fits
//!   `int` when in 32 bits, `bigint`, `double`, and `timestamp` when its milliseconds fit
//!   in microseconds;
//! - a double (written with a fraction or exponent) fits `double` only;
//! - a string fits `text`, and `jsonb` when it is a JSON text;
//! - a boolean fits `boolean` only;
//! - `{k: v, ...}` fits a map whose key and value types its items fit; `{e, ...}` a set,
//!   and `{}` either; `[e, ...]` a list; a JSON document (written as its text) fits
//!   `jsonb` and `text`; `null` fits every column (it deletes the value), never an
//!   element.
//!
//! Which statements a workload sends follows its own view of the schema, which a schema
//! change that did not commit leaves wrong: the model must refuse what the tablet refuses.

use super::{ColKind, CqlValue, Json};
use crate::doc::Scalar;
use serde::{Deserialize, Serialize};

/// A column's CQL type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CqlType {
    Int,
    Bigint,
    Double,
    Text,
    Boolean,
    Timestamp,
    Jsonb,
    Map(Box<CqlType>, Box<CqlType>),
    Set(Box<CqlType>),
    List(Box<CqlType>),
}

impl CqlType {
    /// The type a declaration names (`int`, `map<text, bigint>`, ...), if any.
    pub fn parse(name: &str) -> Option<CqlType> {
        let name = name.trim();
        let inner = |prefix: &str| name.strip_prefix(prefix)?.strip_suffix('>');
        if let Some(args) = inner("map<") {
            let (k, v) = args.split_once(',')?;
            return Some(CqlType::Map(Box::new(Self::parse(k)?), Box::new(Self::parse(v)?)));
        }
        if let Some(e) = inner("set<") {
            return Some(CqlType::Set(Box::new(Self::parse(e)?)));
        }
        if let Some(e) = inner("list<") {
            return Some(CqlType::List(Box::new(Self::parse(e)?)));
        }
        Some(match name {
            "int" => CqlType::Int,
            "bigint" => CqlType::Bigint,
            "double" => CqlType::Double,
            "text" => CqlType::Text,
            "boolean" => CqlType::Boolean,
            "timestamp" => CqlType::Timestamp,
            "jsonb" => CqlType::Jsonb,
            _ => return None,
        })
    }

    /// The type's name, as a declaration writes it.
    pub fn name(&self) -> String {
        match self {
            CqlType::Int => "int".into(),
            CqlType::Bigint => "bigint".into(),
            CqlType::Double => "double".into(),
            CqlType::Text => "text".into(),
            CqlType::Boolean => "boolean".into(),
            CqlType::Timestamp => "timestamp".into(),
            CqlType::Jsonb => "jsonb".into(),
            CqlType::Map(k, v) => format!("map<{}, {}>", k.name(), v.name()),
            CqlType::Set(e) => format!("set<{}>", e.name()),
            CqlType::List(e) => format!("list<{}>", e.name()),
        }
    }

    /// The shape of a column of this type.
    pub fn kind(&self) -> ColKind {
        match self {
            CqlType::Map(..) => ColKind::Map,
            CqlType::Set(_) => ColKind::Set,
            CqlType::List(_) => ColKind::List,
            CqlType::Jsonb => ColKind::Jsonb,
            _ => ColKind::Scalar,
        }
    }

    /// Whether the scalar `s`, as its literal, fits this type (module rules).
    pub fn fits_scalar(&self, s: &Scalar) -> bool {
        let integer = match s {
            Scalar::Int32(v) => Some(i64::from(*v)),
            Scalar::Int64(v) => Some(*v),
            Scalar::Timestamp(us) => Some(us / 1000),
            _ => None,
        };
        match (self, s, integer) {
            (CqlType::Int, _, Some(v)) => i32::try_from(v).is_ok(),
            (CqlType::Bigint | CqlType::Double, _, Some(_)) => true,
            (CqlType::Timestamp, _, Some(ms)) => ms.checked_mul(1000).is_some(),
            (CqlType::Double, Scalar::Double(_), _) => true,
            (CqlType::Text, Scalar::Str(_), _) => true,
            (CqlType::Jsonb, Scalar::Str(text), _) => parse_json(text).is_some(),
            (CqlType::Boolean, Scalar::Bool(_), _) => true,
            _ => false,
        }
    }

    /// Whether the statement value `v` fits a column of this type (module rules).
    pub fn fits(&self, v: &CqlValue) -> bool {
        match (self, v) {
            (_, CqlValue::Null) => true,
            (_, CqlValue::Scalar(s)) => self.fits_scalar(s),
            (CqlType::Map(k, v), CqlValue::Map(items)) => {
                items.iter().all(|(a, b)| k.fits_scalar(a) && v.fits_scalar(b))
            }
            (CqlType::Map(..), CqlValue::Set(items)) => items.is_empty(),
            (CqlType::Set(e), CqlValue::Set(items)) => items.iter().all(|i| e.fits_scalar(i)),
            (CqlType::Set(_), CqlValue::Map(items)) => items.is_empty(),
            (CqlType::List(e), CqlValue::List(items)) => items.iter().all(|i| e.fits_scalar(i)),
            (CqlType::Jsonb | CqlType::Text, CqlValue::Json(_)) => true,
            _ => false,
        }
    }

    /// The scalar `s` (which fits) as this type stores it: an integer literal as the
    /// type's number (a timestamp's milliseconds in microseconds).
    pub fn coerce_scalar(&self, s: &Scalar) -> Scalar {
        let integer = match s {
            Scalar::Int32(v) => Some(i64::from(*v)),
            Scalar::Int64(v) => Some(*v),
            Scalar::Timestamp(us) => Some(us / 1000),
            _ => None,
        };
        match (self, integer) {
            (CqlType::Int, Some(v)) => Scalar::Int32(v as i32),
            (CqlType::Bigint, Some(v)) => Scalar::Int64(v),
            (CqlType::Double, Some(v)) => Scalar::Double((v as f64).to_bits()),
            (CqlType::Timestamp, Some(ms)) => Scalar::Timestamp(ms * 1000),
            _ => s.clone(),
        }
    }

    /// The value `v` (which fits) as this type stores it: scalars and elements coerced,
    /// a string in a jsonb column its JSON document, a JSON document in a text column
    /// its text.
    pub fn coerce(&self, v: &CqlValue) -> CqlValue {
        let each =
            |t: &CqlType, items: &[Scalar]| items.iter().map(|i| t.coerce_scalar(i)).collect();
        match (self, v) {
            (CqlType::Jsonb, CqlValue::Scalar(Scalar::Str(text))) => {
                CqlValue::Json(parse_json(text).expect("it fits"))
            }
            (CqlType::Text, CqlValue::Json(json)) => CqlValue::Scalar(Scalar::Str(json.text())),
            (_, CqlValue::Scalar(s)) => CqlValue::Scalar(self.coerce_scalar(s)),
            (CqlType::Map(k, v), CqlValue::Map(items)) => CqlValue::Map(
                items.iter().map(|(a, b)| (k.coerce_scalar(a), v.coerce_scalar(b))).collect(),
            ),
            (CqlType::Set(e), CqlValue::Set(items)) => CqlValue::Set(each(e, items)),
            (CqlType::List(e), CqlValue::List(items)) => CqlValue::List(each(e, items)),
            _ => v.clone(),
        }
    }

    /// Whether `v` may be added to a column of this type (`c = c + v`, a jsonb `j = j ||
    /// v`): a collection's items, or a JSON document.
    pub fn fits_added(&self, v: &CqlValue) -> bool {
        match (self, v) {
            (CqlType::Jsonb, CqlValue::Json(_)) => true,
            (_, CqlValue::Map(_) | CqlValue::Set(_) | CqlValue::List(_)) => self.fits(v),
            _ => false,
        }
    }

    /// Whether the keys `keys` of a `c = c - {...}` fit: a set's elements, a map's keys.
    pub fn fits_removed(&self, keys: &[Scalar]) -> bool {
        match self {
            CqlType::Set(e) | CqlType::Map(e, _) => keys.iter().all(|k| e.fits_scalar(k)),
            _ => false,
        }
    }
}

/// `text` as a JSON document (RFC 8259: one value, whitespace around it), if it is one:
/// an integer that fits 64 bits is an int, any other number a finite double; containers
/// nest at most 64 deep (docsim's bound, the engine's too).
pub fn parse_json(text: &str) -> Option<Json> {
    let mut rest = text.trim_start_matches(JSON_SPACE);
    let json = value(&mut rest, 0)?;
    rest.trim_start_matches(JSON_SPACE).is_empty().then_some(json)
}

const JSON_SPACE: [char; 4] = [' ', '\t', '\n', '\r'];

/// Take one JSON value off the front of `rest`, inside `depth` containers.
fn value(rest: &mut &str, depth: usize) -> Option<Json> {
    *rest = rest.trim_start_matches(JSON_SPACE);
    let word = |rest: &mut &str, word: &str, json: Json| {
        *rest = rest.strip_prefix(word)?;
        Some(json)
    };
    match rest.chars().next()? {
        '{' if depth < 64 => items(rest, '}', depth).map(Json::Object),
        '[' if depth < 64 => {
            let items = items(rest, ']', depth)?;
            Some(Json::Array(items.into_iter().map(|(_, v)| v).collect()))
        }
        '"' => string(rest).map(Json::Str),
        't' => word(rest, "true", Json::Bool(true)),
        'f' => word(rest, "false", Json::Bool(false)),
        'n' => word(rest, "null", Json::Null),
        c if c == '-' || c.is_ascii_digit() => number(rest),
        _ => None,
    }
}

/// The items of an object or (keys left empty) an array, `rest` at its opening bracket.
fn items(rest: &mut &str, close: char, depth: usize) -> Option<Vec<(String, Json)>> {
    let keyed = close == '}';
    *rest = rest[1..].trim_start_matches(JSON_SPACE);
    let mut items = Vec::new();
    if let Some(after) = rest.strip_prefix(close) {
        *rest = after;
        return Some(items);
    }
    loop {
        let mut key = String::new();
        if keyed {
            *rest = rest.trim_start_matches(JSON_SPACE);
            key = if rest.starts_with('"') { string(rest)? } else { return None };
            *rest = rest.trim_start_matches(JSON_SPACE).strip_prefix(':')?;
        }
        items.push((key, value(rest, depth + 1)?));
        *rest = rest.trim_start_matches(JSON_SPACE);
        let next = rest.chars().next()?;
        *rest = &rest[1..];
        match next {
            ',' => {}
            c if c == close => return Some(items),
            _ => return None,
        }
    }
}

/// A string, `rest` at its opening quote.
fn string(rest: &mut &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = rest.char_indices().skip(1);
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => {
                *rest = &rest[at + 1..];
                return Some(out);
            }
            '\\' => out.push(match chars.next()?.1 {
                'u' => {
                    let hex: String = chars.by_ref().take(4).map(|(_, h)| h).collect();
                    let code = u32::from_str_radix(&hex, 16).ok().filter(|_| hex.len() == 4)?;
                    char::from_u32(code)?
                }
                'b' => '\u{8}',
                'f' => '\u{c}',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                c @ ('"' | '\\' | '/') => c,
                _ => return None,
            }),
            c if (c as u32) < 0x20 => return None,
            c => out.push(c),
        }
    }
    None
}

/// A number: `-`? int frac? exp?; an int when it has neither and fits 64 bits.
fn number(rest: &mut &str) -> Option<Json> {
    let bytes = rest.as_bytes();
    let mut at = usize::from(bytes.first() == Some(&b'-'));
    let digits = |at: &mut usize| {
        let start = *at;
        while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
            *at += 1;
        }
        *at > start
    };
    match bytes.get(at)? {
        b'0' => at += 1,
        b'1'..=b'9' => _ = digits(&mut at),
        _ => return None,
    }
    let mut integral = true;
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        integral = false;
        digits(&mut at).then_some(())?;
    }
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        at += 1;
        integral = false;
        at += usize::from(matches!(bytes.get(at), Some(b'+' | b'-')));
        digits(&mut at).then_some(())?;
    }
    let (text, after) = rest.split_at(at);
    *rest = after;
    if let Some(int) = text.parse::<i64>().ok().filter(|_| integral) {
        return Some(Json::Int(int));
    }
    let double: f64 = text.parse().ok().filter(|d: &f64| d.is_finite())?;
    Some(Json::Double(double.to_bits()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(name: &str) -> CqlType {
        CqlType::parse(name).expect("a type")
    }

    #[test]
    fn types_parse_and_print_back() {
        for name in ["int", "text", "map<text, bigint>", "set<int>", "list<int>", "jsonb"] {
            assert_eq!(ty(name).name(), name);
        }
        assert_eq!(CqlType::parse("map<text>"), None);
        assert_eq!(CqlType::parse("varchar"), None);
    }

    #[test]
    fn literals_fit_by_their_form() {
        let int = Scalar::Int64(1 << 40);
        assert!(!ty("int").fits_scalar(&int), "over 32 bits");
        assert!(ty("bigint").fits_scalar(&int) && ty("double").fits_scalar(&int));
        assert!(ty("timestamp").fits_scalar(&int));
        assert!(!ty("timestamp").fits_scalar(&Scalar::Int64(i64::MAX)), "ms overflow us");
        let double = Scalar::Double(1.5f64.to_bits());
        assert!(ty("double").fits_scalar(&double) && !ty("bigint").fits_scalar(&double));
        assert!(!ty("text").fits_scalar(&Scalar::Bool(true)));
        assert!(ty("jsonb").fits_scalar(&Scalar::Str("39".into())), "a JSON number");
        assert!(!ty("jsonb").fits_scalar(&Scalar::Str("t0".into())));
        let empty = CqlValue::Set(vec![]);
        assert!(ty("map<text, int>").fits(&empty) && ty("set<int>").fits(&empty));
        let map = CqlValue::Map(vec![(Scalar::Str("p".into()), Scalar::Str("v".into()))]);
        assert!(ty("map<text, text>").fits(&map) && !ty("map<text, bigint>").fits(&map));
        assert!(!ty("list<int>").fits(&CqlValue::Scalar(Scalar::Str("t0".into()))));
        assert!(ty("text").fits(&CqlValue::Null));
    }

    #[test]
    fn json_texts_parse() {
        assert_eq!(parse_json("7"), Some(Json::Int(7)));
        assert_eq!(parse_json("-1.5e3"), Some(Json::Double((-1500.0f64).to_bits())));
        assert_eq!(parse_json("\"a\\u00e9\""), Some(Json::Str("a\u{e9}".into())));
        let nested = Json::Array(vec![Json::Int(1), Json::Object(vec![("a".into(), Json::Null)])]);
        assert_eq!(parse_json(" [1, {\"a\": null}] "), Some(nested));
        for good in ["{}", "true", "[]", "0"] {
            assert!(parse_json(good).is_some(), "{good}");
        }
        for bad in ["", "t0", "01", "1.", "[1,]", "{\"a\" 1}", "\"\\x\"", "[1] 2", "it's", "1e999"]
        {
            assert_eq!(parse_json(bad), None, "{bad}");
        }
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(parse_json(&deep(64)).is_some() && parse_json(&deep(65)).is_none());
    }
}
