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
    let mut rest = src.trim_start();
    while !rest.is_empty() {
        let pos = src.len() - rest.len();
        let (tok, len) = token(src, pos)?;
        assert!(len > 0, "the token at byte {pos} of {src:?} is empty");
        out.push(Token { tok, pos });
        rest = rest[len..].trim_start();
    }
    Ok(out)
}

/// The token at byte `pos` of `src`, and its length in bytes.
fn token(src: &str, pos: usize) -> Result<(Tok, usize)> {
    let rest = &src[pos..];
    let c = rest.chars().next().expect("not at end");
    if c.is_ascii_alphabetic() || c == '_' {
        let len =
            rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        Ok((Tok::Ident(rest[..len].to_ascii_lowercase()), len))
    } else if c == '\'' {
        match lex_string(rest) {
            Some((s, len)) => Ok((Tok::Str(s), len)),
            None => Err(cql_error(src, pos, "unterminated string")),
        }
    } else if c.is_ascii_digit()
        || (c == '-' && rest[1..].starts_with(|d: char| d.is_ascii_digit()))
    {
        let len = number_len(rest);
        Ok((Tok::Num(rest[..len].to_owned()), len))
    } else if let Some(sym) = SYMBOLS.iter().chain(&MORE_SYMBOLS).find(|s| rest.starts_with(**s)) {
        Ok((Tok::Sym(sym), sym.len()))
    } else {
        Err(cql_error(src, pos, format!("unexpected character `{c}`")))
    }
}

/// The string `rest` starts with (at its opening quote) and its length with both quotes,
/// or `None` if it is not closed.
fn lex_string(rest: &str) -> Option<(String, usize)> {
    let mut out = String::new();
    let mut chars = rest.char_indices().skip(1).peekable();
    while let Some((i, c)) = chars.next() {
        if c != '\'' {
            out.push(c);
        } else if chars.next_if(|(_, c)| *c == '\'').is_some() {
            out.push('\'');
        } else {
            return Some((out, i + 1));
        }
    }
    None
}

/// The length of the number `rest` starts with: an optional `-` and digits, a fraction
/// only if a digit follows the `.`, an exponent only if a digit follows it (and its sign).
fn number_len(rest: &str) -> usize {
    let bytes = rest.as_bytes();
    let digits =
        |from: usize| from + bytes[from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let digit_at = |at: usize| bytes.get(at).is_some_and(u8::is_ascii_digit);
    let mut len = digits(usize::from(bytes[0] == b'-'));
    if bytes.get(len) == Some(&b'.') && digit_at(len + 1) {
        len = digits(len + 1);
    }
    if matches!(bytes.get(len), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(bytes.get(len + 1), Some(b'+' | b'-')));
        if digit_at(len + 1 + sign) {
            len = digits(len + 1 + sign);
        }
    }
    len
}

/// A cursor over tokens with CQL-flavoured helpers. It only moves forward: the tokens
/// not yet consumed are kept next-last, and consuming one pops it.
pub struct Cursor<'a> {
    src: &'a str,
    rest: Vec<Token>,
}

impl<'a> Cursor<'a> {
    /// Tokenize `src`.
    pub fn new(src: &'a str) -> Result<Cursor<'a>> {
        let mut rest = lex(src)?;
        rest.reverse();
        Ok(Cursor { src, rest })
    }

    /// An error at the current token.
    pub fn error(&self, message: impl std::fmt::Display) -> SyntaxError {
        let pos = self.rest.last().map_or(self.src.len(), |t| t.pos);
        cql_error(self.src, pos, message)
    }

    /// The next token, not consumed.
    pub fn peek(&self) -> Option<&Tok> {
        self.rest.last().map(|t| &t.tok)
    }

    /// The next token, consumed.
    pub fn next_tok(&mut self) -> Option<Tok> {
        self.rest.pop().map(|t| t.tok)
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
        self.consume_if(hit)
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
        self.consume_if(hit)
    }

    /// Consume the next token if `hit`; returns `hit`.
    fn consume_if(&mut self, hit: bool) -> bool {
        if hit {
            self.next_tok();
        }
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
                self.next_tok();
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
                self.next_tok();
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

    /// Each token knows the byte where it starts; any whitespace (Unicode's too) separates
    /// tokens; a string's `''` is one quote; symbols take their longest spelling.
    #[test]
    fn tokens_and_where_they_start() {
        let src = "\u{2003}Ab_1 'é''s' '',->> -> <= -3\t?\n";
        let found: Vec<(Tok, usize)> =
            lex(src).unwrap().into_iter().map(|t| (t.tok, t.pos)).collect();
        let want = [
            (Tok::Ident("ab_1".into()), 3),
            (Tok::Str("é's".into()), 8),
            (Tok::Str(String::new()), 16),
            (Tok::Sym(","), 18),
            (Tok::Sym("->>"), 19),
            (Tok::Sym("->"), 23),
            (Tok::Sym("<="), 26),
            (Tok::Num("-3".into()), 29),
            (Tok::Sym("?"), 32),
        ];
        assert_eq!(found, want);
        assert_eq!(lex(" \t\n"), Ok(vec![]));
    }

    /// A lexing error names the column in characters, not bytes.
    #[test]
    fn lexing_errors_name_the_character_column() {
        let e = lex("'é' @").unwrap_err();
        assert_eq!((e.column, e.message.as_str()), (5, "unexpected character `@`"));
        let e = lex("x = 'é''").unwrap_err();
        assert_eq!((e.column, e.message.as_str()), (5, "unterminated string"));
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
