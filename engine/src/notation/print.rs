//! docscript printing of literals, keys, paths, durations and documents.

use crate::document::Document;
use crate::encoding::{DocKey, DocPath, KeyEntry, Primitive, SortOrder, SubDocKey};
use std::fmt::{self, Display, Formatter, Write};

impl Display for Primitive {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Primitive::Null => f.write_str("null"),
            Primitive::Bool(b) => write!(f, "{b}"),
            Primitive::Int32(v) => write!(f, "{v}i32"),
            Primitive::Int64(v) => write!(f, "{v}"),
            Primitive::Double(d) => f.write_str(&format_double(*d)),
            Primitive::String(s) => write_json_string(f, s),
            Primitive::Timestamp(v) => write!(f, "ts({v})"),
            Primitive::ColumnId(v) => write!(f, "col({v})"),
            Primitive::SystemColumnId(v) => write!(f, "sys({v})"),
        }
    }
}

/// A double as docscript writes it: always with `.` or `e`, or `inf`, `-inf`, `nan`.
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        "nan".into()
    } else {
        format!("{d:?}") // shortest round-trip form: `1.0`, `1e300`, `inf`, `-inf`
    }
}

/// A double as a path subkey: without `.` (which separates subkeys), as `15e-1`.
fn format_double_in_path(d: f64) -> String {
    if !d.is_finite() {
        return format_double(d);
    }
    let sci = format!("{d:e}"); // `1.5e0`, `-2e3`
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("integer exponent");
    match mantissa.split_once('.') {
        None => format!("{mantissa}e{exp}"),
        Some((int, frac)) => format!("{int}{frac}e{}", exp - frac.len() as i32),
    }
}

fn write_json_string(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            c if (c as u32) < 0x20 || c == '\u{7f}' => write!(f, "\\u{:04x}", c as u32)?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

impl Display for KeyEntry {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self.order {
            SortOrder::Ascending => write!(f, "{}", self.value),
            SortOrder::Descending => write!(f, "desc({})", self.value),
        }
    }
}

fn write_list(f: &mut Formatter<'_>, entries: &[KeyEntry]) -> fmt::Result {
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{e}")?;
    }
    Ok(())
}

impl Display for DocKey {
    /// `doc(coloc=5 | 0x1a2b: "user1"; 10)`.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("doc(")?;
        if let Some(id) = self.colocation_id {
            write!(f, "coloc={id} | ")?;
        }
        if let Some(hash) = self.hash() {
            write!(f, "0x{hash:04x}: ")?;
        }
        write_list(f, &self.hashed)?;
        f.write_char(';')?;
        if !self.range.is_empty() {
            f.write_char(' ')?;
            write_list(f, &self.range)?;
        }
        f.write_char(')')
    }
}

/// A subkey as it follows `.` in a path.
pub struct Subkey<'a>(pub &'a KeyEntry);

impl Display for Subkey<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let entry = self.0;
        let text = match &entry.value {
            Primitive::Double(d) => format_double_in_path(*d),
            other => other.to_string(),
        };
        match entry.order {
            SortOrder::Ascending => f.write_str(&text),
            SortOrder::Descending => write!(f, "desc({text})"),
        }
    }
}

impl Display for DocPath {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.doc_key)?;
        self.subkeys.iter().try_for_each(|s| write!(f, ".{}", Subkey(s)))
    }
}

impl Display for SubDocKey {
    /// `<path> @<T>[.<logical>][w<id>]`, as in `dump`.
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{} @{}", self.path, self.doc_ht)
    }
}

impl Display for Document {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Document::Primitive(p) => write!(f, "{p}"),
            Document::Object(map) => {
                f.write_char('{')?;
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_char('}')
            }
        }
    }
}

/// A duration in the largest of `h`, `m`, `s`, `ms`, `us` that represents it exactly;
/// `0` for zero.
pub fn format_duration_us(us: u64) -> String {
    const UNITS: [(u64, &str); 5] =
        [(3_600_000_000, "h"), (60_000_000, "m"), (1_000_000, "s"), (1_000, "ms"), (1, "us")];
    if us == 0 {
        return "0".into();
    }
    let (size, unit) =
        UNITS.iter().find(|(size, _)| us.is_multiple_of(*size)).expect("us divides all");
    format!("{}{unit}", us / size)
}
