//! A small JSON reader for jsonb values: objects become subdocuments keyed by strings,
//! arrays become objects keyed by int64 indexes, numbers are int64 when integral.

use crate::document::Document;
use crate::encoding::{KeyEntry, Primitive};
use crate::notation::Parser;
use std::collections::BTreeMap;

/// Parse a JSON text; the error names the character offset.
pub fn parse_json(text: &str) -> Result<Document, String> {
    let mut r = Reader { text, rest: text };
    let doc = r.value(0)?;
    r.ws();
    if !r.rest.is_empty() {
        return Err(format!("trailing characters in JSON at offset {}", r.offset()));
    }
    Ok(doc)
}

/// A forward-only cursor: `rest` is what is left of `text`, and every step takes a prefix
/// off it, so no step can stand still or go back.
struct Reader<'a> {
    text: &'a str,
    rest: &'a str,
}

const MAX_DEPTH: usize = 64;

impl Reader<'_> {
    /// The byte offset of `rest` in `text`.
    fn offset(&self) -> usize {
        self.text.len() - self.rest.len()
    }

    fn ws(&mut self) {
        self.rest = self.rest.trim_start_matches(|c: char| c.is_ascii_whitespace());
    }

    fn peek(&self) -> Option<u8> {
        self.rest.bytes().next()
    }

    /// Takes `c` if it comes next.
    fn eat(&mut self, c: char) -> bool {
        match self.rest.strip_prefix(c) {
            Some(after) => {
                self.rest = after;
                true
            }
            None => false,
        }
    }

    fn err(&self, what: &str) -> String {
        format!("invalid JSON at offset {}: {what}", self.offset())
    }

    fn value(&mut self, depth: usize) -> Result<Document, String> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        self.ws();
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(|s| Document::Primitive(Primitive::String(s))),
            Some(_) => self.scalar(),
            None => Err(self.err("unexpected end")),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        // JSON strings are docscript strings: reuse the notation's escape rules.
        let mut p = Parser::new(self.rest, 1);
        let s = p.string().map_err(|e| self.err(&e.message))?;
        self.rest = &self.rest[p.pos()..];
        Ok(s)
    }

    fn scalar(&mut self) -> Result<Document, String> {
        let start = self.offset();
        let len = self.rest.find([',', ']', '}', ' ', '\t', '\r', '\n']);
        let (word, after) = self.rest.split_at(len.unwrap_or(self.rest.len()));
        if word.is_empty() {
            return Err(self.err("expected a value"));
        }
        self.rest = after;
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
        assert!(self.eat('{'), "object() is called at a `{{`");
        let mut map = BTreeMap::new();
        self.ws();
        if self.eat('}') {
            return Ok(Document::Object(map));
        }
        loop {
            self.ws();
            if self.peek() != Some(b'"') {
                return Err(self.err("expected a string key"));
            }
            let key = self.string()?;
            self.ws();
            if !self.eat(':') {
                return Err(self.err("expected `:`"));
            }
            let value = self.value(depth + 1)?;
            map.insert(KeyEntry::asc(Primitive::String(key)), value);
            self.ws();
            if self.eat('}') {
                return Ok(Document::Object(map));
            }
            if !self.eat(',') {
                return Err(self.err("expected `,` or `}`"));
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Document, String> {
        assert!(self.eat('['), "array() is called at a `[`");
        let mut map = BTreeMap::new();
        self.ws();
        if self.eat(']') {
            return Ok(Document::Object(map));
        }
        for index in 0i64.. {
            let value = self.value(depth + 1)?;
            map.insert(KeyEntry::asc(Primitive::Int64(index)), value);
            self.ws();
            if self.eat(']') {
                break;
            }
            if !self.eat(',') {
                return Err(self.err("expected `,` or `]`"));
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

    fn string(s: &str) -> Document {
        Document::Primitive(Primitive::String(s.to_string()))
    }

    /// Objects keep their keys, arrays become objects keyed by index, and whitespace is
    /// allowed between any two tokens.
    #[test]
    fn objects_and_arrays_become_subdocuments() {
        let doc =
            parse_json(" {\"a\" : [ 1 , \"x\\n\" ,{ } , [ ] ] , \"b\":{\"c\":null}} ").unwrap();
        let key = |k: &str| KeyEntry::asc(Primitive::String(k.into()));
        let index = |i: i64| KeyEntry::asc(Primitive::Int64(i));
        let empty = Document::Object(BTreeMap::new());
        let a = BTreeMap::from([
            (index(0), Document::Primitive(Primitive::Int64(1))),
            (index(1), string("x\n")),
            (index(2), empty.clone()),
            (index(3), empty),
        ]);
        let c = BTreeMap::from([(key("c"), Document::Primitive(Primitive::Null))]);
        let want =
            BTreeMap::from([(key("a"), Document::Object(a)), (key("b"), Document::Object(c))]);
        assert_eq!(doc, Document::Object(want));
        assert_eq!(parse_json("[true,false]").unwrap(), {
            let b = |v| Document::Primitive(Primitive::Bool(v));
            Document::Object(BTreeMap::from([(index(0), b(true)), (index(1), b(false))]))
        });
    }

    /// Each malformed text is refused with the offset where reading stopped.
    #[test]
    fn malformed_json_names_what_and_where() {
        let cases = [
            ("", "invalid JSON at offset 0: unexpected end"),
            ("  ", "invalid JSON at offset 2: unexpected end"),
            ("[1,", "invalid JSON at offset 3: unexpected end"),
            ("[1,]", "invalid JSON at offset 3: expected a value"),
            ("[,1]", "invalid JSON at offset 1: expected a value"),
            ("{\"a\": 1 :}", "invalid JSON at offset 8: expected `,` or `}`"),
            ("[1 2]", "invalid JSON at offset 3: expected `,` or `]`"),
            ("[1", "invalid JSON at offset 2: expected `,` or `]`"),
            ("{1: 2}", "invalid JSON at offset 1: expected a string key"),
            ("{\"a\", 2}", "invalid JSON at offset 4: expected `:`"),
            ("{\"a\": 1 \"b\"}", "invalid JSON at offset 8: expected `,` or `}`"),
            ("{\"a\": 1,}", "invalid JSON at offset 8: expected a string key"),
            ("{\"a", "invalid JSON at offset 1: unterminated string"),
            ("1 2", "trailing characters in JSON at offset 2"),
            ("{} }", "trailing characters in JSON at offset 3"),
            ("[tru]", "invalid JSON at offset 1: `tru`"),
        ];
        for (text, want) in cases {
            assert_eq!(parse_json(text), Err(want.to_string()), "{text:?}");
        }
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
