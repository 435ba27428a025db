//! CQL tokens, each with its byte offset for error messages.

/// A CQL statement that does not parse: where (the 1-based column within the statement)
/// and why. The parser's own error: the node never sees statement text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("CQL: {message} at column {column} of the statement")]
pub struct SyntaxError {
    /// 1-based column (in characters) within the statement.
    pub column: usize,
    /// What is wrong there.
    pub message: String,
}

/// Parser result.
pub type Result<T, E = SyntaxError> = std::result::Result<T, E>;

/// One token.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// An identifier or keyword (compared case-insensitively; stored lower case).
    Ident(String),
    /// A `'single quoted'` string (`''` escapes a quote).
    Str(String),
    /// A number as written (`10`, `-2.5`, `1e3`).
    Num(String),
    /// Punctuation: `( ) , ; = < > <= >= { } [ ] : + - * . -> ->> || ?`.
    Sym(&'static str),
}

/// A token and where it starts.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Byte offset in the statement.
    pub pos: usize,
}

const SYMBOLS: [&str; 19] = [
    "->>", "->", "<=", ">=", "||", "!=", "(", ")", ",", ";", "=", "<", ">", "{", "}", "[", "]",
    ":", "+",
];
const MORE_SYMBOLS: [&str; 4] = ["-", "*", ".", "?"];

/// An error at byte `pos` of `src`.
pub fn cql_error(src: &str, pos: usize, message: impl std::fmt::Display) -> SyntaxError {
    let column = src[..pos.min(src.len())].chars().count() + 1;
    SyntaxError { column, message: message.to_string() }
}

/// Split a statement into tokens.
pub fn lex(src: &str) -> Result<Vec<Token>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < src.len() {
        let rest = &src[pos..];
        let c = rest.chars().next().expect("not at end");
        if c.is_whitespace() {
            pos += c.len_utf8();
            continue;
        }
        let start = pos;
        let tok = if c.is_ascii_alphabetic() || c == '_' {
            let len =
                rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            pos += len;
            Tok::Ident(rest[..len].to_ascii_lowercase())
        } else if c == '\'' {
            let (s, len) = lex_string(src, pos)?;
            pos += len;
            Tok::Str(s)
        } else if c.is_ascii_digit()
            || (c == '-' && rest[1..].starts_with(|d: char| d.is_ascii_digit()))
        {
            let len = number_len(rest);
            pos += len;
            Tok::Num(rest[..len].to_owned())
        } else if let Some(sym) =
            SYMBOLS.iter().chain(&MORE_SYMBOLS).find(|s| rest.starts_with(**s))
        {
            pos += sym.len();
            Tok::Sym(sym)
        } else {
            return Err(cql_error(src, pos, format!("unexpected character `{c}`")));
        };
        out.push(Token { tok, pos: start });
    }
    Ok(out)
}

fn lex_string(src: &str, start: usize) -> Result<(String, usize)> {
    let mut out = String::new();
    let mut chars = src[start + 1..].char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\'' {
            if chars.peek().map(|(_, c)| *c) == Some('\'') {
                chars.next();
                out.push('\'');
            } else {
                return Ok((out, i + 2));
            }
        } else {
            out.push(c);
        }
    }
    Err(cql_error(src, start, "unterminated string"))
}

fn number_len(rest: &str) -> usize {
    let bytes = rest.as_bytes();
    let mut i = usize::from(bytes[0] == b'-');
    let digits = |i: &mut usize| {
        while *i < bytes.len() && bytes[*i].is_ascii_digit() {
            *i += 1;
        }
    };
    digits(&mut i);
    if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
        i += 1;
        digits(&mut i);
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let mut j = i + 1;
        if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
            j += 1;
        }
        if j < bytes.len() && bytes[j].is_ascii_digit() {
            i = j;
            digits(&mut i);
        }
    }
    i
}

/// A cursor over tokens with CQL-flavoured helpers.
pub struct Cursor<'a> {
    src: &'a str,
    toks: Vec<Token>,
    i: usize,
}

impl<'a> Cursor<'a> {
    /// Tokenize `src`.
    pub fn new(src: &'a str) -> Result<Cursor<'a>> {
        Ok(Cursor { src, toks: lex(src)?, i: 0 })
    }

    /// An error at the current token.
    pub fn error(&self, message: impl std::fmt::Display) -> SyntaxError {
        let pos = self.toks.get(self.i).map_or(self.src.len(), |t| t.pos);
        cql_error(self.src, pos, message)
    }

    /// The next token, not consumed.
    pub fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.tok)
    }

    /// The next token, consumed.
    pub fn next_tok(&mut self) -> Option<Tok> {
        let tok = self.toks.get(self.i).map(|t| t.tok.clone());
        self.i += usize::from(tok.is_some());
        tok
    }

    /// Step back over the token just consumed.
    pub fn i_back(&mut self) {
        self.i = self.i.saturating_sub(1);
    }

    /// What comes next, for messages.
    pub fn found(&self) -> String {
        match self.peek() {
            None => "end of statement".into(),
            Some(Tok::Ident(s)) => format!("`{s}`"),
            Some(Tok::Str(s)) => format!("'{s}'"),
            Some(Tok::Num(s)) => s.clone(),
            Some(Tok::Sym(s)) => format!("`{s}`"),
        }
    }

    /// Consume keyword `kw` if next.
    pub fn eat_kw(&mut self, kw: &str) -> bool {
        let hit = matches!(self.peek(), Some(Tok::Ident(s)) if s == kw);
        self.i += usize::from(hit);
        hit
    }

    /// Consume keyword `kw` or fail.
    pub fn expect_kw(&mut self, kw: &str) -> Result<()> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            Err(self.error(format!("expected {}, found {}", kw.to_uppercase(), self.found())))
        }
    }

    /// Consume symbol `sym` if next.
    pub fn eat(&mut self, sym: &str) -> bool {
        let hit = matches!(self.peek(), Some(Tok::Sym(s)) if *s == sym);
        self.i += usize::from(hit);
        hit
    }

    /// Consume symbol `sym` or fail.
    pub fn expect(&mut self, sym: &str) -> Result<()> {
        if self.eat(sym) {
            Ok(())
        } else {
            Err(self.error(format!("expected `{sym}`, found {}", self.found())))
        }
    }

    /// An identifier.
    pub fn ident(&mut self) -> Result<String> {
        match self.peek() {
            Some(Tok::Ident(s)) => {
                let s = s.clone();
                self.i += 1;
                Ok(s)
            }
            _ => Err(self.error(format!("expected a name, found {}", self.found()))),
        }
    }

    /// An unsigned integer.
    pub fn unsigned(&mut self) -> Result<u64> {
        match self.peek() {
            Some(Tok::Num(n)) => {
                let v = n
                    .parse()
                    .map_err(|_| self.error(format!("expected a whole number, found {n}")))?;
                self.i += 1;
                Ok(v)
            }
            _ => Err(self.error(format!("expected a number, found {}", self.found()))),
        }
    }

    /// One or more items separated by `,`.
    pub fn comma_list<T>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut items = vec![item(self)?];
        while self.eat(",") {
            items.push(item(self)?);
        }
        Ok(items)
    }

    /// Fail unless everything was consumed (a trailing `;` is allowed).
    pub fn finish(&mut self) -> Result<()> {
        self.eat(";");
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.error(format!("unexpected {}", self.found()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<Tok> {
        lex(src).expect(src).into_iter().map(|t| t.tok).collect()
    }

    /// A number is an optional `-` and digits, then a fraction only if a digit follows the
    /// `.`, then an exponent (signed or not) only if a digit follows it.
    #[test]
    fn a_number_takes_a_fraction_or_an_exponent_only_when_whole() {
        let num = |s: &str| Tok::Num(s.into());
        let ident = |s: &str| Tok::Ident(s.into());
        assert_eq!(toks("1e+5 2.5E-3 -7 6e2"), [num("1e+5"), num("2.5E-3"), num("-7"), num("6e2")]);
        let cut = [num("1"), ident("e"), num("3"), Tok::Sym("."), ident("x")];
        assert_eq!(toks("1e 3.x"), cut);
        assert_eq!(toks("4e+"), [num("4"), ident("e"), Tok::Sym("+")]);
    }
}
