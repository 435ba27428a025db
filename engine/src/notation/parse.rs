//! docscript parsing of literals, keys, paths, hybrid times, durations and documents.
//!
//! A [`Parser`] walks one line of text; every error names the line and column.

use crate::document::Document;
use crate::encoding::{DocKey, DocPath, KeyEntry, Primitive};
use crate::hybrid_time::{DocHybridTime, HybridTime, LOGICAL_MAX};
use std::collections::BTreeMap;
use std::fmt;

/// A parse error with its 1-based line and column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
    /// What was expected or what is wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Parse result.
pub type PResult<T> = Result<T, ParseError>;

/// A cursor over one line of docscript.
pub struct Parser<'a> {
    src: &'a str,
    pos: usize,
    line: usize,
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl<'a> Parser<'a> {
    /// A parser over `src`, which is line `line` (1-based) of its file.
    pub fn new(src: &'a str, line: usize) -> Parser<'a> {
        Parser { src, pos: 0, line }
    }

    /// An error at the current position.
    pub fn error(&self, message: impl Into<String>) -> ParseError {
        self.error_at(self.pos, message)
    }

    /// An error at byte offset `pos` of the line.
    pub fn error_at(&self, pos: usize, message: impl Into<String>) -> ParseError {
        let column = self.src[..pos.min(self.src.len())].chars().count() + 1;
        ParseError { line: self.line, column, message: message.into() }
    }

    /// The byte offset of the cursor.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The unparsed rest of the line.
    pub fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    /// The rest of the line, trimmed; the cursor moves to its end.
    pub fn take_rest(&mut self) -> String {
        let rest = self.rest().trim().to_owned();
        self.skip_to_end();
        rest
    }

    /// Move the cursor to the end of the line.
    pub fn skip_to_end(&mut self) {
        self.pos = self.src.len();
    }

    /// Skip spaces and tabs.
    pub fn skip_ws(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    /// The next character, after white space.
    pub fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.rest().chars().next()
    }

    /// Whether only white space remains.
    pub fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// Consume `token` if it comes next (after white space).
    pub fn eat(&mut self, token: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    /// Consume the keyword `word` if it comes next as a whole word.
    pub fn eat_word(&mut self, word: &str) -> bool {
        self.skip_ws();
        let rest = self.rest();
        let whole = rest.starts_with(word) && !rest[word.len()..].starts_with(is_word_char);
        if whole {
            self.pos += word.len();
        }
        whole
    }

    /// Consume `token` or fail naming it.
    pub fn expect(&mut self, token: &str) -> PResult<()> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.error(format!("expected `{token}`, found {}", self.found())))
        }
    }

    /// A description of what comes next, for error messages.
    pub fn found(&self) -> String {
        let rest = self.rest().trim_start();
        match rest.chars().next() {
            None => "end of line".into(),
            Some(_) => {
                let word: String =
                    rest.chars().take_while(|c| !c.is_whitespace()).take(20).collect();
                format!("`{word}`")
            }
        }
    }

    /// Fail unless only white space remains.
    pub fn finish(&mut self) -> PResult<()> {
        if self.at_end() {
            Ok(())
        } else {
            Err(self.error(format!("unexpected {}", self.found())))
        }
    }

    /// The next word (`[A-Za-z0-9_]+`), consumed.
    pub fn word(&mut self) -> Option<&'a str> {
        self.skip_ws();
        let rest = self.rest();
        let len = rest.find(|c: char| !is_word_char(c)).unwrap_or(rest.len());
        (len > 0).then(|| {
            self.pos += len;
            &rest[..len]
        })
    }

    /// The next run of non-blank characters (a file name), consumed.
    pub fn token(&mut self) -> Option<&'a str> {
        self.skip_ws();
        let rest = self.rest();
        let len = rest.find(char::is_whitespace).unwrap_or(rest.len());
        (len > 0).then(|| {
            self.pos += len;
            &rest[..len]
        })
    }

    fn digits(&mut self) -> &'a str {
        let rest = self.rest();
        let len = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        self.pos += len;
        &rest[..len]
    }

    /// An unsigned integer.
    pub fn unsigned(&mut self) -> PResult<u64> {
        self.skip_ws();
        let start = self.pos;
        let digits = self.digits();
        if digits.is_empty() {
            return Err(self.error(format!("expected a number, found {}", self.found())));
        }
        digits.parse().map_err(|_| self.error_at(start, format!("number {digits} is too large")))
    }

    fn signed_in_parens(&mut self, what: &str) -> PResult<i64> {
        self.expect("(")?;
        self.skip_ws();
        let start = self.pos;
        let negative = self.eat("-");
        let magnitude = self.unsigned()?;
        let value = if negative {
            0i64.checked_sub_unsigned(magnitude)
        } else {
            i64::try_from(magnitude).ok()
        };
        let value = value.ok_or_else(|| self.error_at(start, format!("{what} out of range")))?;
        self.expect(")")?;
        Ok(value)
    }

    /// A literal: string, number, bool, null, `ts(..)`, `col(..)`, `sys(..)`.
    pub fn literal(&mut self) -> PResult<Primitive> {
        self.literal_in(false)
    }

    fn literal_in(&mut self, in_path: bool) -> PResult<Primitive> {
        self.skip_ws();
        let start = self.pos;
        match self.rest().chars().next() {
            Some('"') => return self.string().map(Primitive::String),
            Some(c) if c == '-' || c.is_ascii_digit() => return self.number(in_path),
            _ => {}
        }
        let Some(word) = self.word() else {
            return Err(self.error(format!("expected a literal, found {}", self.found())));
        };
        let narrow = |p: &Self, v: i64, what: &str| {
            i32::try_from(v).map_err(|_| p.error_at(start, format!("{what} {v} out of range")))
        };
        Ok(match word {
            "null" => Primitive::Null,
            "true" => Primitive::Bool(true),
            "false" => Primitive::Bool(false),
            "inf" => Primitive::Double(f64::INFINITY),
            "nan" => Primitive::Double(f64::NAN),
            "ts" => Primitive::Timestamp(self.signed_in_parens("timestamp")?),
            "col" => {
                let v = self.signed_in_parens("column id")?;
                Primitive::ColumnId(narrow(self, v, "column id")?)
            }
            "sys" => {
                let v = self.signed_in_parens("column id")?;
                Primitive::SystemColumnId(narrow(self, v, "system column id")?)
            }
            other => {
                return Err(self.error_at(start, format!("expected a literal, found `{other}`")))
            }
        })
    }

    fn number(&mut self, in_path: bool) -> PResult<Primitive> {
        let start = self.pos;
        let negative = self.eat("-");
        if self.eat_word("inf") {
            return Ok(Primitive::Double(if negative { f64::NEG_INFINITY } else { f64::INFINITY }));
        }
        if self.digits().is_empty() {
            return Err(self.error("expected digits"));
        }
        let mut is_double = false;
        let rest = self.rest();
        if !in_path && rest.starts_with('.') && rest[1..].starts_with(|c: char| c.is_ascii_digit())
        {
            self.pos += 1;
            self.digits();
            is_double = true;
        }
        let rest = self.rest();
        if rest.starts_with(['e', 'E']) {
            let sign = usize::from(rest[1..].starts_with(['+', '-']));
            if rest[1 + sign..].starts_with(|c: char| c.is_ascii_digit()) {
                self.pos += 1 + sign;
                self.digits();
                is_double = true;
            }
        }
        let text = &self.src[start..self.pos];
        let int32 = !is_double && self.rest().starts_with("i32");
        if int32 {
            self.pos += 3;
        }
        if self.rest().starts_with(is_word_char) {
            return Err(self.error(format!("unexpected {} after number", self.found())));
        }
        let bad = |p: &Self, what: &str| p.error_at(start, format!("{what} {text} out of range"));
        if is_double {
            text.parse().map(Primitive::Double).map_err(|_| bad(self, "double"))
        } else if int32 {
            text.parse().map(Primitive::Int32).map_err(|_| bad(self, "int32"))
        } else {
            text.parse().map(Primitive::Int64).map_err(|_| bad(self, "int64"))
        }
    }

    /// A JSON-escaped string in double quotes.
    pub fn string(&mut self) -> PResult<String> {
        self.expect("\"")?;
        let mut out = String::new();
        loop {
            let at = self.pos;
            let Some(c) = self.rest().chars().next() else {
                return Err(self.error("unterminated string"));
            };
            self.pos += c.len_utf8();
            match c {
                '"' => return Ok(out),
                '\\' => {
                    out.push(self.escape(at)?);
                    assert!(self.pos > at + 1, "an escape at {at} did not move forward");
                }
                c => out.push(c),
            }
        }
    }

    fn escape(&mut self, at: usize) -> PResult<char> {
        let Some(c) = self.rest().chars().next() else {
            return Err(self.error("unterminated string"));
        };
        self.pos += c.len_utf8();
        Ok(match c {
            '"' => '"',
            '\\' => '\\',
            '/' => '/',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'u' => {
                // JSON's escape: a character outside the basic plane is a high surrogate
                // and a low one, each `\uXXXX`; a lone surrogate is no character.
                let high = self.hex4(at)?;
                let code = if (0xD800..0xDC00).contains(&high) && self.rest().starts_with("\\u") {
                    self.pos += 2;
                    let low = self.hex4(at)?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return Err(self.error_at(at, "invalid surrogate pair"));
                    }
                    0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                } else {
                    high
                };
                char::from_u32(code).ok_or_else(|| self.error_at(at, "invalid \\u escape"))?
            }
            other => return Err(self.error_at(at, format!("unknown escape `\\{other}`"))),
        })
    }

    fn hex4(&mut self, at: usize) -> PResult<u32> {
        let hex = self.rest().get(..4).filter(|h| h.chars().all(|c| c.is_ascii_hexdigit()));
        let hex = hex.ok_or_else(|| self.error_at(at, "\\u needs four hex digits"))?;
        self.pos += 4;
        Ok(u32::from_str_radix(hex, 16).expect("hex digits"))
    }

    /// A key component: a literal or `desc(<literal>)`.
    pub fn key_entry(&mut self) -> PResult<KeyEntry> {
        self.key_entry_in(false)
    }

    fn key_entry_in(&mut self, in_path: bool) -> PResult<KeyEntry> {
        if self.eat_word("desc") {
            self.expect("(")?;
            let value = self.literal()?;
            self.expect(")")?;
            return Ok(KeyEntry::desc(value));
        }
        // A subkey double is written without `.`, so `.` can separate subkeys.
        self.literal_in(in_path).map(KeyEntry::asc)
    }

    fn entry_list(&mut self, end: char) -> PResult<Vec<KeyEntry>> {
        let mut entries = Vec::new();
        if self.peek() == Some(end) {
            return Ok(entries);
        }
        loop {
            entries.push(self.key_entry()?);
            if !self.eat(",") {
                return Ok(entries);
            }
        }
    }

    /// `doc(<hashed>; <range>)`, optionally `coloc=N |` and the printed `0x1a2b:` hash
    /// (checked against the components).
    pub fn doc_key(&mut self) -> PResult<DocKey> {
        if !self.eat_word("doc") {
            return Err(self.error(format!("expected `doc(`, found {}", self.found())));
        }
        self.expect("(")?;
        let mut key = DocKey::default();
        if self.eat_word("coloc") {
            self.expect("=")?;
            let start = self.pos;
            let id = self.unsigned()?;
            key.colocation_id = Some(
                u32::try_from(id)
                    .map_err(|_| self.error_at(start, "colocation id out of range"))?,
            );
            self.expect("|")?;
        }
        let mut given_hash = None;
        self.skip_ws();
        if self.rest().starts_with("0x") {
            let at = self.pos;
            self.pos += 2;
            let hex = self.rest().get(..4).filter(|h| h.chars().all(|c| c.is_ascii_hexdigit()));
            let hex = hex.ok_or_else(|| self.error_at(at, "a hash is `0x` and four hex digits"))?;
            self.pos += 4;
            given_hash = Some((at, u16::from_str_radix(hex, 16).expect("hex")));
            self.expect(":")?;
        }
        key.hashed = self.entry_list(';')?;
        self.expect(";")?;
        key.range = self.entry_list(')')?;
        self.expect(")")?;
        if let Some((at, given)) = given_hash {
            match key.hash() {
                Some(h) if h == given => {}
                Some(h) => {
                    return Err(self.error_at(
                        at,
                        format!(
                            "hash 0x{given:04x} does not match the hashed components (0x{h:04x})"
                        ),
                    ))
                }
                None => return Err(self.error_at(at, "a hash needs hashed components")),
            }
        }
        Ok(key)
    }

    /// A document key followed by `.<subkey>`s.
    pub fn path(&mut self) -> PResult<DocPath> {
        let doc_key = self.doc_key()?;
        let mut subkeys = Vec::new();
        while self.rest().starts_with('.') {
            self.pos += 1;
            subkeys.push(self.key_entry_in(true)?);
        }
        Ok(DocPath { doc_key, subkeys })
    }

    /// A hybrid time: `T1000` or `T1000.3`.
    pub fn hybrid_time(&mut self) -> PResult<HybridTime> {
        self.skip_ws();
        let start = self.pos;
        if !self.rest().starts_with('T') {
            return Err(
                self.error(format!("expected a hybrid time like `T1000`, found {}", self.found()))
            );
        }
        self.pos += 1;
        let physical = self.unsigned()?;
        if physical > HybridTime::PHYSICAL_MAX_US {
            return Err(self.error_at(start, format!("physical time {physical} is too large")));
        }
        let mut logical = 0;
        if self.rest().starts_with('.')
            && self.rest()[1..].starts_with(|c: char| c.is_ascii_digit())
        {
            self.pos += 1;
            let at = self.pos;
            logical = self.unsigned()?;
            if logical > u64::from(LOGICAL_MAX) {
                return Err(
                    self.error_at(at, format!("logical part {logical} exceeds {LOGICAL_MAX}"))
                );
            }
        }
        Ok(HybridTime::new(physical, logical as u16))
    }

    /// A stored version: a hybrid time and an optional `w<id>`.
    pub fn doc_hybrid_time(&mut self) -> PResult<DocHybridTime> {
        let ht = self.hybrid_time()?;
        let mut write_id = 0;
        if self.rest().starts_with('w') {
            self.pos += 1;
            let at = self.pos;
            let id = self.unsigned()?;
            write_id = u32::try_from(id).map_err(|_| self.error_at(at, "write id out of range"))?;
        }
        Ok(DocHybridTime::new(ht, write_id))
    }

    /// A duration in microseconds: `10ms`, `15s`, `2m`, `1h`, `500us`, or `0`.
    pub fn duration_us(&mut self) -> PResult<u64> {
        self.skip_ws();
        let start = self.pos;
        let n = self.unsigned()?;
        let unit_us: u64 = match self.word_suffix() {
            "" if n == 0 => 1,
            "h" => 3_600_000_000,
            "m" => 60_000_000,
            "s" => 1_000_000,
            "ms" => 1_000,
            "us" => 1,
            "" => return Err(self.error("a duration needs a unit: h, m, s, ms or us")),
            other => return Err(self.error_at(start, format!("unknown duration unit `{other}`"))),
        };
        n.checked_mul(unit_us).ok_or_else(|| self.error_at(start, "duration is too large"))
    }

    fn word_suffix(&mut self) -> &'a str {
        let rest = self.rest();
        let len = rest.find(|c: char| !is_word_char(c)).unwrap_or(rest.len());
        self.pos += len;
        &rest[..len]
    }

    /// A document literal: a literal or `{<key>: <document>, ...}`.
    pub fn document(&mut self) -> PResult<Document> {
        if !self.eat("{") {
            return self.literal().map(Document::Primitive);
        }
        let mut map = BTreeMap::new();
        if self.eat("}") {
            return Ok(Document::Object(map));
        }
        loop {
            self.skip_ws();
            let at = self.pos;
            let key = self.key_entry()?;
            self.expect(":")?;
            let value = self.document()?;
            if map.insert(key.clone(), value).is_some() {
                return Err(self.error_at(at, format!("duplicate key {key}")));
            }
            if self.eat("}") {
                return Ok(Document::Object(map));
            }
            self.expect(",")?;
        }
    }
}
