//! Parsing INSERT, UPDATE, DELETE, SELECT and ALTER TABLE into [`Statement`]s. Only
//! syntax is checked here; names and types are checked against the table when the
//! statement runs.

use super::ast::{AlterChange, Assignment, CmpOp, Condition, DeleteTarget, Literal, Statement};
use super::lexer::{Cursor, Result, Tok};
use super::schema::CqlType;

/// Parse one statement.
pub fn parse_statement(text: &str) -> Result<Statement> {
    let mut c = Cursor::new(text)?;
    let statement = if c.eat_kw("insert") {
        insert(&mut c)?
    } else if c.eat_kw("update") {
        update(&mut c)?
    } else if c.eat_kw("delete") {
        delete(&mut c)?
    } else if c.eat_kw("select") {
        select(&mut c)?
    } else if c.eat_kw("alter") {
        alter(&mut c)?
    } else if let Some(Tok::Ident(verb)) = c.peek() {
        return Err(c.error(format!("unsupported statement `{}`", verb.to_uppercase())));
    } else {
        return Err(c.error(format!("expected a statement, found {}", c.found())));
    };
    c.finish()?;
    Ok(statement)
}

/// `ALTER TABLE t ADD c <type>` or `ALTER TABLE t DROP c` (after `ALTER`).
fn alter(c: &mut Cursor<'_>) -> Result<Statement> {
    c.expect_kw("table")?;
    let table = c.ident()?;
    let change = if c.eat_kw("add") {
        let column = c.ident()?;
        AlterChange::Add { column, ty: CqlType::parse(c)? }
    } else {
        c.expect_kw("drop")?;
        AlterChange::Drop { column: c.ident()? }
    };
    Ok(Statement::Alter { table, change })
}

fn literal(c: &mut Cursor<'_>) -> Result<Literal> {
    let found = match c.peek() {
        Some(Tok::Str(s)) => Literal::Str(s.clone()),
        Some(Tok::Num(n)) => Literal::Num(n.clone()),
        Some(Tok::Ident(w)) if w == "true" || w == "false" => Literal::Bool(w == "true"),
        Some(Tok::Ident(w)) if w == "null" => Literal::Null,
        Some(Tok::Sym("{")) => Literal::Braces(vec![]),
        Some(Tok::Sym("[")) => Literal::List(vec![]),
        _ => return Err(c.error(format!("expected a value, found {}", c.found()))),
    };
    c.next_tok();
    Ok(match found {
        Literal::Braces(_) => Literal::Braces(items_until(c, "}", |c| {
            let k = literal(c)?;
            Ok((k, if c.eat(":") { Some(literal(c)?) } else { None }))
        })?),
        Literal::List(_) => Literal::List(items_until(c, "]", literal)?),
        scalar => scalar,
    })
}

/// Items separated by `,` up to the closing `close` (the opening one is taken): none, or
/// one or more.
fn items_until<T>(
    c: &mut Cursor<'_>,
    close: &str,
    item: impl FnMut(&mut Cursor<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    if c.eat(close) {
        return Ok(vec![]);
    }
    let items = c.comma_list(item)?;
    c.expect(close)?;
    Ok(items)
}

/// `USING TTL n` (seconds), if present.
fn using_ttl(c: &mut Cursor<'_>) -> Result<Option<u64>> {
    if !c.eat_kw("using") {
        return Ok(None);
    }
    c.expect_kw("ttl")?;
    c.unsigned().map(Some)
}

fn insert(c: &mut Cursor<'_>) -> Result<Statement> {
    c.expect_kw("into")?;
    let table = c.ident()?;
    c.expect("(")?;
    let columns = c.comma_list(Cursor::ident)?;
    c.expect(")")?;
    c.expect_kw("values")?;
    c.expect("(")?;
    let values = c.comma_list(literal)?;
    c.expect(")")?;
    let ttl_s = using_ttl(c)?;
    Ok(Statement::Insert { table, columns, values, ttl_s })
}

fn assignment(c: &mut Cursor<'_>) -> Result<Assignment> {
    let column = c.ident()?;
    if c.eat("[") {
        let key = literal(c)?;
        c.expect("]")?;
        c.expect("=")?;
        return Ok(Assignment::Element { column, key, value: literal(c)? });
    }
    if matches!(c.peek(), Some(Tok::Sym("->"))) {
        let mut keys = Vec::new();
        while c.eat("->") {
            match c.next_tok() {
                Some(Tok::Str(s)) => keys.push(s),
                _ => return Err(c.error("expected a quoted jsonb key after ->")),
            }
        }
        c.expect("=")?;
        return Ok(Assignment::JsonPath { column, keys, value: literal(c)? });
    }
    c.expect("=")?;
    if matches!(c.peek(), Some(Tok::Ident(n)) if *n == column) {
        c.next_tok();
        let op = c.next_tok();
        let value = literal(c)?;
        return match op {
            Some(Tok::Sym("+")) => Ok(Assignment::Append { column, value, concat: false }),
            Some(Tok::Sym("||")) => Ok(Assignment::Append { column, value, concat: true }),
            Some(Tok::Sym("-")) => Ok(Assignment::Remove { column, value }),
            _ => Err(c.error("expected `+`, `-` or `||` after the column name")),
        };
    }
    Ok(Assignment::Whole { column, value: literal(c)? })
}

fn update(c: &mut Cursor<'_>) -> Result<Statement> {
    let table = c.ident()?;
    let ttl_s = using_ttl(c)?;
    c.expect_kw("set")?;
    let assignments = c.comma_list(assignment)?;
    let key = where_clause(c)?;
    Ok(Statement::Update { table, ttl_s, assignments, key })
}

fn delete(c: &mut Cursor<'_>) -> Result<Statement> {
    let targets = if c.eat_kw("from") {
        vec![]
    } else {
        let targets = c.comma_list(delete_target)?;
        c.expect_kw("from")?;
        targets
    };
    let table = c.ident()?;
    let key = where_clause(c)?;
    Ok(Statement::Delete { targets, table, key })
}

/// A column, or one element of it (`m['k']`), that DELETE removes.
fn delete_target(c: &mut Cursor<'_>) -> Result<DeleteTarget> {
    let column = c.ident()?;
    let element = if c.eat("[") {
        let k = literal(c)?;
        c.expect("]")?;
        Some(k)
    } else {
        None
    };
    Ok(DeleteTarget { column, element })
}

fn where_clause(c: &mut Cursor<'_>) -> Result<Vec<Condition>> {
    c.expect_kw("where")?;
    let mut conditions = Vec::new();
    loop {
        let column = c.ident()?;
        let op = match c.next_tok() {
            Some(Tok::Sym("=")) => CmpOp::Eq,
            Some(Tok::Sym("<")) => CmpOp::Lt,
            Some(Tok::Sym("<=")) => CmpOp::Le,
            Some(Tok::Sym(">")) => CmpOp::Gt,
            Some(Tok::Sym(">=")) => CmpOp::Ge,
            _ => return Err(c.error("expected a comparison (=, <, <=, >, >=)")),
        };
        conditions.push(Condition { column, op, value: literal(c)? });
        if !(c.eat_kw("and") || c.eat(",")) {
            break;
        }
    }
    Ok(conditions)
}

fn select(c: &mut Cursor<'_>) -> Result<Statement> {
    let columns = if c.eat("*") { None } else { Some(c.comma_list(Cursor::ident)?) };
    c.expect_kw("from")?;
    let table = c.ident()?;
    // No WHERE: every row of the table (a scan across partitions, in hash order).
    let conditions = match c.peek() {
        None | Some(Tok::Sym(";")) => Vec::new(),
        Some(_) => where_clause(c)?,
    };
    Ok(Statement::Select { columns, table, conditions })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every statement form prints as text that parses back to the same statement.
    #[test]
    fn statements_print_as_text_that_parses_back() {
        let texts = [
            "INSERT INTO t (k, v, m) VALUES ('it''s', -2.5, {'a': 1, 'b': 2}) USING TTL 5",
            "INSERT INTO t (k, s, l) VALUES (1, {1, 2}, [3, 4])",
            "UPDATE t USING TTL 0 SET v = null, m = m + {'x': 1}, s = s - {3} WHERE k = 1",
            "UPDATE t SET m['p'] = true, j = j || '{\"a\": 1}', j->'a'->'b' = '2' WHERE k = 'x'",
            "DELETE FROM t WHERE k = 1 AND r = 2",
            "SELECT * FROM t",
            "SELECT v FROM t WHERE r > 2 AND r < 9",
            "DELETE v, m['a'] FROM t WHERE k = 1",
            "SELECT * FROM t WHERE k = 1 AND r <= 5",
            "SELECT a, b FROM t WHERE h = 'x' AND r > 1e3",
        ];
        for text in texts {
            let statement = parse_statement(text).expect(text);
            assert_eq!(statement.to_string(), text);
            assert_eq!(parse_statement(&statement.to_string()), Ok(statement));
        }
    }

    #[test]
    fn syntax_errors_name_the_column() {
        let e = parse_statement("INSERT INTO t (a, b VALUES (1, 2)").unwrap_err();
        assert_eq!(e.column, 21);
        assert_eq!(
            e.to_string(),
            "CQL: expected `)`, found `values` at column 21 of the statement"
        );
        let e = parse_statement("TRUNCATE t").unwrap_err();
        assert_eq!((e.column, e.message.as_str()), (1, "unsupported statement `TRUNCATE`"));
        // A statement ends where its grammar does: one `;` may follow, nothing else.
        let e = parse_statement("DELETE FROM t WHERE k = 1 LIMIT 1").unwrap_err();
        assert_eq!((e.column, e.message.as_str()), (27, "unexpected `limit`"));
        let e = parse_statement("SELECT * FROM t WHERE k = 1;;").unwrap_err();
        assert_eq!((e.column, e.message.as_str()), (29, "unexpected `;`"));
        assert!(parse_statement("SELECT * FROM t WHERE k = 1;").is_ok());
    }

    /// Lists of items take commas between items, none trailing; braces and brackets may be
    /// empty; a statement starts with its verb.
    #[test]
    fn commas_separate_items_and_nothing_trails() {
        let err = |text: &str| {
            let e = parse_statement(text).unwrap_err();
            (e.column, e.message)
        };
        let bad = [
            ("INSERT INTO t (k, l) VALUES (1, [2,])", 36, "expected a value, found `]`"),
            ("INSERT INTO t (k, s) VALUES (1, {2 3})", 36, "expected `}`, found 3"),
            ("INSERT INTO t (k, s) VALUES (1, {,})", 34, "expected a value, found `,`"),
            ("DELETE a b FROM t WHERE k = 1", 10, "expected FROM, found `b`"),
            ("DELETE a, FROM t WHERE k = 1", 16, "expected FROM, found `t`"),
            ("  (SELECT)", 3, "expected a statement, found `(`"),
            ("", 1, "expected a statement, found end of statement"),
        ];
        for (text, column, message) in bad {
            assert_eq!(err(text), (column, message.to_string()), "{text}");
        }
        let e = parse_statement("  TRUNCATE t").unwrap_err();
        assert_eq!((e.column, e.message.as_str()), (3, "unsupported statement `TRUNCATE`"));
        let empty = parse_statement("INSERT INTO t (k, s, l) VALUES (1, {}, [])").unwrap();
        let Statement::Insert { values, .. } = empty else { panic!("an insert: {empty:?}") };
        assert_eq!(values[1..], [Literal::Braces(vec![]), Literal::List(vec![])]);
        let delete = parse_statement("DELETE a, m['k'] FROM t WHERE k = 1").unwrap();
        let Statement::Delete { targets, .. } = delete else { panic!("a delete: {delete:?}") };
        let names: Vec<_> =
            targets.iter().map(|t| (t.column.as_str(), t.element.clone())).collect();
        assert_eq!(names, [("a", None), ("m", Some(Literal::Str("k".into())))]);
    }
}
