//! A small JSON reader for jsonb values: objects become subdocuments keyed by strings,
//! arrays become objects keyed by int64 indexes, numbers are int64 when integral.

use crate::document::Document;
use crate::encoding::{KeyEntry, Primitive};
use crate::notation::Parser;
use std::collections::BTreeMap;

/// Parse a JSON text; the error names the character offset.
pub fn parse_json(text: &str) -> Result<Document, String> {
    let mut r = Reader { s: text.as_bytes(), i: 0, text };
    let doc = r.value(0)?;
    r.ws();
    if r.i != r.s.len() {
        return Err(format!("trailing characters in JSON at offset {}", r.i));
    }
    Ok(doc)
}

struct Reader<'a> {
    s: &'a [u8],
    i: usize,
    text: &'a str,
}

const MAX_DEPTH: usize = 64;

impl Reader<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn err(&self, what: &str) -> String {
        format!("invalid JSON at offset {}: {what}", self.i)
    }

    fn value(&mut self, depth: usize) -> Result<Document, String> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        self.ws();
        match self.s.get(self.i) {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(|s| Document::Primitive(Primitive::String(s))),
            Some(_) => self.scalar(),
            None => Err(self.err("unexpected end")),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        // JSON strings are docscript strings: reuse the notation's escape rules.
        let mut p = Parser::new(&self.text[self.i..], 1);
        let s = p.string().map_err(|e| self.err(&e.message))?;
        self.i += p.pos();
        Ok(s)
    }

    fn scalar(&mut self) -> Result<Document, String> {
        let start = self.i;
        while self.i < self.s.len() && !b",]} \t\r\n".contains(&self.s[self.i]) {
            self.i += 1;
        }
        let word = &self.text[start..self.i];
        if word.is_empty() {
            return Err(self.err("expected a value")); // at `start`: nothing was taken
        }
        let p = match word {
            "true" => Primitive::Bool(true),
            "false" => Primitive::Bool(false),
            "null" => Primitive::Null,
            w => match w.parse::<i64>() {
                Ok(v) => Primitive::Int64(v),
                Err(_) => match w.parse::<f64>() {
                    Ok(d)
                        if d.is_finite() && w.bytes().all(|b| b"+-.eE0123456789".contains(&b)) =>
                    {
                        Primitive::Double(d)
                    }
                    _ => return Err(format!("invalid JSON at offset {start}: `{w}`")),
                },
            },
        };
        Ok(Document::Primitive(p))
    }

    fn object(&mut self, depth: usize) -> Result<Document, String> {
        self.i += 1;
        let mut map = BTreeMap::new();
        self.ws();
        if self.s.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(Document::Object(map));
        }
        loop {
            self.ws();
            if self.s.get(self.i) != Some(&b'"') {
                return Err(self.err("expected a string key"));
            }
            let key = self.string()?;
            self.ws();
            if self.s.get(self.i) != Some(&b':') {
                return Err(self.err("expected `:`"));
            }
            self.i += 1;
            let value = self.value(depth + 1)?;
            map.insert(KeyEntry::asc(Primitive::String(key)), value);
            self.ws();
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Document::Object(map));
                }
                _ => return Err(self.err("expected `,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Document, String> {
        self.i += 1;
        let mut map = BTreeMap::new();
        self.ws();
        if self.s.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(Document::Object(map));
        }
        for index in 0i64.. {
            let value = self.value(depth + 1)?;
            map.insert(KeyEntry::asc(Primitive::Int64(index)), value);
            self.ws();
            match self.s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    break;
                }
                _ => return Err(self.err("expected `,` or `]`")),
            }
        }
        Ok(Document::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` arrays (or objects) nested around `1`: its value sits at depth `n`.
    fn nested(n: usize, object: bool) -> String {
        let (open, close) = if object { ("{\"k\": ", "}") } else { ("[", "]") };
        format!("{}1{}", open.repeat(n), close.repeat(n))
    }

    /// Numbers are JSON's: integral ones int64, others finite doubles; no infinities (an
    /// overflowing exponent), no `NaN` or `inf` words, which Rust's float parser takes.
    #[test]
    fn numbers_are_json_numbers_and_finite() {
        let double = |d: f64| Ok(Document::Primitive(Primitive::Double(d)));
        assert_eq!(parse_json("-1.5e3"), double(-1500.0));
        assert_eq!(parse_json("7"), Ok(Document::Primitive(Primitive::Int64(7))));
        for bad in ["1e999", "-1e999", "inf", "NaN", "infinity"] {
            let err = parse_json(bad).unwrap_err();
            assert_eq!(err, format!("invalid JSON at offset 0: `{bad}`"));
        }
    }

    /// Nesting is bounded (a rule of docsim's own: JSON nested past it is refused with an
    /// error, never a deep recursion), at exactly `MAX_DEPTH` containers, in arrays and
    /// objects alike.
    #[test]
    fn nesting_is_allowed_to_the_bound_and_refused_past_it() {
        for object in [false, true] {
            assert!(parse_json(&nested(MAX_DEPTH, object)).is_ok(), "object: {object}");
            let deeper = parse_json(&nested(MAX_DEPTH + 1, object)).unwrap_err();
            // Where the innermost value begins (an object's value right after its `:`).
            let at = if object { 6 * (MAX_DEPTH + 1) - 1 } else { MAX_DEPTH + 1 };
            assert_eq!(deeper, format!("invalid JSON at offset {at}: nested too deeply"));
        }
    }
}
