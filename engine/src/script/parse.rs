//! Parsing docscript lines into [`Command`]s (the grammar is `command.rs`'s), and printing
//! the replicated commands.

use super::command::{
    At, Command, ConfChange, DumpStyle, FaultCommand, FileRun, Header, PageOptions, Route,
};
use crate::crash::CrashPoint;
use crate::disk::IoTarget;
use crate::doc_write::{DocWrite, MarkerMode, WriteKind};
use crate::document::Document;
use crate::notation::{format_duration_us, PResult, Parser};
use std::fmt;

/// The line without its `#` comment (a `#` inside a quoted string is text).
pub fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match quote {
            Some(_) if escaped => escaped = false,
            Some(q) if c == '\\' && q == '"' => escaped = true,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' => return &line[..i],
            None => {}
        }
    }
    line
}

/// `dump [names|raw] [node=<i>]`.
fn parse_dump(p: &mut Parser<'_>) -> PResult<Command> {
    if let Some(node) = node_option(p)? {
        return Ok(Command::Dump { style: DumpStyle::Plain, node: Some(node) });
    }
    let style = match p.word() {
        None => DumpStyle::Plain,
        Some("names") => DumpStyle::Names,
        Some("raw") => DumpStyle::Raw,
        Some("node") => return Err(p.error("write `dump node=<i>`")),
        Some(other) => return Err(p.error(format!("unknown dump style `{other}`"))),
    };
    Ok(Command::Dump { style, node: node_option(p)? })
}

/// Parse one line (comment already stripped); `None` for a blank line.
pub fn parse_line(text: &str, line: usize) -> PResult<Option<Command>> {
    let mut p = Parser::new(text, line);
    if p.at_end() {
        return Ok(None);
    }
    let start = p.pos();
    let Some(word) = p.word() else {
        return Err(p.error(format!("expected a command, found {}", p.found())));
    };
    let command = match word {
        "cluster" => Command::Header(parse_header(&mut p)?),
        "markers" => Command::Markers(match p.word() {
            Some("optional") => MarkerMode::Optional,
            Some("required") => MarkerMode::Required,
            _ => return Err(p.error("expected `optional` or `required`")),
        }),
        "memstore" => Command::Memstore(match p.eat_word("off") {
            true => None,
            false => Some(byte_count(&mut p)?),
        }),
        "layout" => Command::Layout(parse_layout(&mut p)?),
        "set" | "extend" | "obj" | "del" => {
            let write = parse_write(&mut p, word)?;
            let ht = optional_ht(&mut p)?;
            let write = parse_ttl(&mut p, write)?;
            Command::Write { write, ht, route: write_route(&mut p)? }
        }
        "batch" => {
            let ht = optional_ht(&mut p)?;
            let writes = parse_batch_body(&mut p)?;
            Command::Batch { ht, writes, route: write_route(&mut p)? }
        }
        "default_ttl" => {
            let ttl_us = if p.eat_word("none") { None } else { Some(p.duration_us()?) };
            Command::DefaultTtl { ttl_us, ht: optional_ht(&mut p)? }
        }
        "get" => parse_get(&mut p)?,
        "dump" => parse_dump(&mut p)?,
        "flush" => Command::Flush { node: node_option(&mut p)? },
        "files" => Command::Files { node: node_option(&mut p)? },
        "stats" => Command::Stats { node: node_option(&mut p)? },
        "log" => Command::Log { node: node_option(&mut p)? },
        "restart" => Command::Restart { node: node_option(&mut p)? },
        "disarm" => Command::Disarm { node: node_option(&mut p)? },
        "compact" => parse_compact(&mut p)?,
        "retention" => parse_retention(&mut p)?,
        "snapshot" => parse_snapshot(&mut p)?,
        "restore" => parse_restore(&mut p)?,
        "backup" => parse_backup(&mut p)?,
        "expect" => Command::Expect(p.take_rest()),
        "crash" => parse_crash(&mut p)?,
        "fault" => {
            let node = node_option(&mut p)?;
            Command::Fault { fault: parse_fault(&mut p)?, node }
        }
        "table" => Command::Table(p.take_rest()),
        "cql" | "redis" => parse_statement_line(&mut p, word)?,
        other => match parse_replicated(&mut p, other)? {
            Some(command) => command,
            None => return Err(p.error_at(start, format!("unknown command `{other}`"))),
        },
    };
    p.finish()?;
    Ok(Some(command))
}

/// `layout packed|entity|declared|unpacked`'s word.
fn parse_layout(p: &mut Parser<'_>) -> PResult<crate::db::Layout> {
    Ok(match p.word() {
        Some("packed") => crate::db::Layout::Packed,
        Some("declared") => crate::db::Layout::Declared,
        Some("unpacked") => crate::db::Layout::Unpacked,
        Some("entity") => crate::db::Layout::Entity,
        _ => return Err(p.error("expected `packed`, `entity`, `declared` or `unpacked`")),
    })
}

/// `@<T>`, if the line has it here.
fn optional_ht(p: &mut Parser<'_>) -> PResult<Option<crate::hybrid_time::HybridTime>> {
    if p.rest().trim_start().starts_with('@') {
        p.expect("@")?;
        return Ok(Some(p.hybrid_time()?));
    }
    Ok(None)
}

/// `@T`, `@now`, `@now+<dur>` or `@safe`.
fn parse_at(p: &mut Parser<'_>) -> PResult<At> {
    if p.eat("@now") {
        let ahead_us = if p.eat("+") { p.duration_us()? } else { 0 };
        return Ok(At::Now { ahead_us });
    }
    if p.eat("@safe") {
        return Ok(At::Safe);
    }
    p.expect("@")?;
    Ok(At::Ht(p.hybrid_time()?))
}

/// `<name>=<i>` (a replica's id), if next.
fn id_option(p: &mut Parser<'_>, name: &str) -> PResult<Option<u64>> {
    if !p.eat(&format!("{name}=")) {
        return Ok(None);
    }
    let at = p.pos();
    match p.unsigned()? {
        0 => Err(p.error_at(at, "replicas are numbered from 1")),
        id => Ok(Some(id)),
    }
}

fn node_option(p: &mut Parser<'_>) -> PResult<Option<u64>> {
    id_option(p, "node")
}

/// A write's ` to=<i>` and ` nowait`, in either order.
fn write_route(p: &mut Parser<'_>) -> PResult<Route> {
    let mut route = Route::default();
    loop {
        if let Some(id) = id_option(p, "to")? {
            route.node = Some(id);
        } else if p.eat_word("nowait") {
            route.nowait = true;
        } else {
            return Ok(route);
        }
    }
}

/// `get <path> [@T | @now[+<dur>] | @safe] [table=<name>] [from=<i>]`: options in any
/// order; without a time, `@now`.
fn parse_get(p: &mut Parser<'_>) -> PResult<Command> {
    let path = p.path()?;
    let (mut at, mut table, mut from) = (None, None, None);
    loop {
        if p.rest().trim_start().starts_with('@') && at.is_none() {
            at = Some(parse_at(p)?);
        } else if p.eat_word("table") {
            p.expect("=")?;
            table = Some(table_ref(p)?);
        } else if let Some(id) = id_option(p, "from")? {
            from = Some(id);
        } else {
            break;
        }
    }
    let at = at.unwrap_or(At::Now { ahead_us: 0 });
    Ok(Command::Get { path, at, table, from })
}

/// A byte count: a whole number, then `KiB` or `MiB` if not bytes; more than 0.
fn byte_count(p: &mut Parser<'_>) -> PResult<usize> {
    let start = p.pos();
    let n = p.unsigned()?;
    let shift = if p.eat("KiB") {
        10
    } else if p.eat("MiB") {
        20
    } else {
        0
    };
    let bytes = n.checked_mul(1 << shift).and_then(|b| usize::try_from(b).ok());
    match bytes {
        Some(b) if b > 0 => Ok(b),
        _ => Err(
            p.error_at(start, "expected a byte count above 0 (`64KiB`, `1MiB`, `4096`) or `off`")
        ),
    }
}

/// A `table=` value: a table's name, or `<name>/<i>`, its tablet i (from 0, in hash order).
fn table_ref(p: &mut Parser<'_>) -> PResult<String> {
    let Some(name) = p.word() else {
        return Err(p.error(format!("expected a table name, found {}", p.found())));
    };
    match p.peek() == Some('/') && p.eat("/") {
        true => Ok(format!("{name}/{}", p.unsigned()?)),
        false => Ok(name.to_owned()),
    }
}

/// `compact [minor] [files=<a>..<b>] cutoff=T [table=<name>] [node=<i>]`.
fn parse_compact(p: &mut Parser<'_>) -> PResult<Command> {
    let minor = p.eat_word("minor");
    let mut run = None;
    if minor && p.eat_word("files") {
        p.expect("=")?;
        let first = index(p)?;
        p.expect("..")?;
        let last = index(p)?;
        run = Some(FileRun { first, last, table: None });
    }
    let rest = p.rest().trim_start();
    if !rest.starts_with("cutoff") && !rest.starts_with("files") {
        // No cutoff: the retention policy's (docsim extension).
        if let Some(run) = run.as_mut().filter(|_| p.eat_word("table")) {
            p.expect("=")?;
            run.table = Some(table_ref(p)?);
        }
        let at = optional_ht(p)?;
        return Ok(Command::Retained { minor, run, at, node: node_option(p)? });
    }
    if !p.eat_word("cutoff") {
        let hint = match !minor && p.rest().trim_start().starts_with("files") {
            true => " (a run of files is a minor compaction: `compact minor files=...`)",
            false => "",
        };
        return Err(p.error(format!("expected `cutoff=`, found {}{hint}", p.found())));
    }
    p.expect("=")?;
    let cutoff = p.hybrid_time()?;
    if let Some(run) = run.as_mut().filter(|_| p.eat_word("table")) {
        p.expect("=")?;
        run.table = Some(table_ref(p)?);
    }
    Ok(Command::Compact { cutoff, minor, run, node: node_option(p)? })
}

/// A file index.
fn index(p: &mut Parser<'_>) -> PResult<usize> {
    let at = p.pos();
    let n = p.unsigned()?;
    usize::try_from(n).map_err(|_| p.error_at(at, format!("file index {n} is out of range")))
}

/// `cql [@T] [page=<n> [after=<key>] [hold]] [to=<i>|from=<i>] [nowait] <statement>` or
/// `redis ...`: the text is its own language's, parsed when it runs; the routing options
/// come before it (a Redis value may read `to=2`).
fn parse_statement_line(p: &mut Parser<'_>, word: &str) -> PResult<Command> {
    let at = if p.rest().trim_start().starts_with('@') { Some(parse_at(p)?) } else { None };
    let paging = match word == "cql" && p.eat_word("page") {
        true => Some(parse_page(p)?),
        false => None,
    };
    let mut route = Route::default();
    loop {
        let id = match id_option(p, "to")? {
            Some(id) => Some(id),
            None => id_option(p, "from")?,
        };
        if let Some(id) = id {
            route.node = Some(id);
        } else if p.eat_word("nowait") {
            route.nowait = true;
        } else {
            break;
        }
    }
    if p.rest().trim().is_empty() {
        return Err(p.error(format!("expected a {word} statement")));
    }
    let text = p.take_rest();
    if let Some(paging) = paging {
        if route.nowait {
            return Err(p.error("a page is a read: `nowait` is for writes"));
        }
        return Ok(Command::Page { at, paging, statement: text, route });
    }
    Ok(match word {
        "cql" => Command::Cql { at, statement: text, route },
        _ => Command::Redis { at, command: text, route },
    })
}

/// `snapshot create|delete <id> <table> [@T] [to=<i>]`, `snapshot list [node=<i>]`,
/// `snapshot select <id> [@T] [node=<i>] <SELECT>`.
fn parse_snapshot(p: &mut Parser<'_>) -> PResult<Command> {
    use crate::tablet::SnapshotOp;
    if p.eat_word("list") {
        return Ok(Command::SnapshotList { node: node_option(p)? });
    }
    let at = p.pos();
    let word = p.word().unwrap_or_default();
    if !matches!(word, "create" | "delete" | "select") {
        let found = if word.is_empty() { p.found() } else { format!("`{word}`") };
        let what = "`create`, `delete`, `list` or `select`";
        return Err(p.error_at(at, format!("expected {what} after `snapshot`, found {found}")));
    }
    let id = snapshot_id(p)?;
    if word == "select" {
        let at = optional_ht(p)?;
        let node = node_option(p)?;
        if p.rest().trim().is_empty() {
            return Err(p.error("expected a SELECT"));
        }
        return Ok(Command::SnapshotSelect { id, at, node, statement: p.take_rest() });
    }
    let table = table_ref(p)?;
    let ht = optional_ht(p)?;
    let route = Route { node: id_option(p, "to")?, nowait: false };
    let op = if word == "create" { SnapshotOp::Create(id) } else { SnapshotOp::Delete(id) };
    Ok(Command::SnapshotWrite { op, table, ht, route })
}

/// `restore <snapshot> <table> [@T] [to=<i>]`, `restore <table> to <T> [@T] [to=<i>]`.
fn parse_restore(p: &mut Parser<'_>) -> PResult<Command> {
    use crate::tablet::RestoreTarget;
    let first = snapshot_id(p)?;
    let (target, table) = match p.eat_word("to") {
        true => (RestoreTarget::Time(p.hybrid_time()?), first),
        false => (RestoreTarget::Snapshot(first), table_ref(p)?),
    };
    let ht = optional_ht(p)?;
    let route = Route { node: id_option(p, "to")?, nowait: false };
    Ok(Command::Restore { target, table, ht, route })
}

/// `backup export <name> <snapshot> <table> [node=<i>]`, `backup import <name> [as
/// <table>]`, `backup damage <name> <file>`.
fn parse_backup(p: &mut Parser<'_>) -> PResult<Command> {
    use super::BackupOp;
    let at = p.pos();
    let word = p.word().unwrap_or_default();
    let op = match word {
        "export" => {
            let (name, snapshot) = (backup_name(p)?, snapshot_id(p)?);
            let table = whole_table(p)?;
            BackupOp::Export { name, snapshot, table, node: node_option(p)? }
        }
        "import" => {
            let name = backup_name(p)?;
            let table = if p.eat_word("as") { Some(whole_table(p)?) } else { None };
            BackupOp::Import { name, table }
        }
        "damage" => {
            let name = backup_name(p)?;
            let Some(file) = p.token() else {
                return Err(p.error(format!("expected a backup's file, found {}", p.found())));
            };
            BackupOp::Damage { name, file: file.to_owned() }
        }
        _ => {
            let found = if word.is_empty() { p.found() } else { format!("`{word}`") };
            let what = "`export`, `import` or `damage`";
            return Err(p.error_at(at, format!("expected {what} after `backup`, found {found}")));
        }
    };
    Ok(Command::Backup(op))
}

/// A table's name, not one of its tablets (`t`, not `t/0`).
fn whole_table(p: &mut Parser<'_>) -> PResult<String> {
    let name = table_ref(p)?;
    match name.contains('/') {
        true => Err(p.error(format!("`{name}` names a tablet: a backup is of a whole table"))),
        false => Ok(name),
    }
}

/// A snapshot's name: letters, digits, `_` and `-` (it names a directory).
fn snapshot_id(p: &mut Parser<'_>) -> PResult<String> {
    directory_name(p, "snapshot")
}

/// A backup's name: as a snapshot's (it names a directory of the backup store).
fn backup_name(p: &mut Parser<'_>) -> PResult<String> {
    directory_name(p, "backup")
}

/// The name of a `what` that names a directory: 1 to 64 letters, digits, `_` or `-`.
fn directory_name(p: &mut Parser<'_>, what: &str) -> PResult<String> {
    p.skip_ws();
    let at = p.pos();
    let id = p.token().unwrap_or_default().to_owned();
    match crate::tablet::valid_snapshot_id(&id) {
        true => Ok(id),
        false => {
            let why = "1 to 64 letters, digits, `_` or `-`";
            Err(p.error_at(at, format!("`{id}` is no {what} name: {why}")))
        }
    }
}

/// `retention <dur> [node=<i>]`.
fn parse_retention(p: &mut Parser<'_>) -> PResult<Command> {
    let interval_us = p.duration_us()?;
    Ok(Command::Retention { interval_us, node: node_option(p)? })
}

/// A page's options after `page`: `=<n> [after=<key>] [hold]`.
fn parse_page(p: &mut Parser<'_>) -> PResult<PageOptions> {
    p.expect("=")?;
    let at = p.pos();
    let size = p.unsigned()?;
    let size = match usize::try_from(size) {
        Ok(size) if size >= 1 => size,
        _ => return Err(p.error_at(at, format!("a page holds 1 row or more, not {size}"))),
    };
    let after = match p.eat_word("after") {
        true => {
            p.expect("=")?;
            Some(p.doc_key()?)
        }
        false => None,
    };
    Ok(PageOptions { size, after, hold: p.eat_word("hold") })
}

fn parse_write(p: &mut Parser<'_>, word: &str) -> PResult<DocWrite> {
    let path = p.path()?;
    let kind = match word {
        "set" | "extend" => {
            p.expect("=")?;
            let at = p.pos();
            let doc = p.document()?;
            if word == "set" {
                WriteKind::Set(doc)
            } else if matches!(doc, Document::Object(_)) {
                WriteKind::Extend(doc)
            } else {
                return Err(p.error_at(at, "extend needs an object literal `{...}`"));
            }
        }
        "obj" => WriteKind::Obj,
        _ => WriteKind::Del,
    };
    Ok(DocWrite { path, kind, ttl_us: None })
}

fn parse_ttl(p: &mut Parser<'_>, mut write: DocWrite) -> PResult<DocWrite> {
    if p.eat_word("ttl") {
        let at = p.pos();
        p.expect("=")?;
        let ttl_us = p.duration_us()?;
        if ttl_us % 1000 != 0 {
            return Err(p.error_at(at, "a TTL is stored in whole milliseconds"));
        }
        if write.kind == WriteKind::Del {
            return Err(p.error_at(at, "a tombstone carries no TTL"));
        }
        write.ttl_us = Some(ttl_us);
    }
    Ok(write)
}

fn parse_batch_body(p: &mut Parser<'_>) -> PResult<Vec<DocWrite>> {
    p.expect("{")?;
    let mut writes = Vec::new();
    while !p.eat("}") {
        let at = p.pos();
        let word = p.word().unwrap_or_default();
        if !matches!(word, "set" | "extend" | "obj" | "del") {
            return Err(p.error_at(at, "expected set, extend, obj or del inside a batch"));
        }
        let write = parse_write(p, word)?;
        writes.push(parse_ttl(p, write)?);
        if !p.eat(";") {
            p.expect("}")?;
            break;
        }
    }
    Ok(writes)
}

/// `crash [node=<i>] [at <point> [op=<k>]] [torn[=<k>]]`.
fn parse_crash(p: &mut Parser<'_>) -> PResult<Command> {
    let node = node_option(p)?;
    let mut at = None;
    if p.eat_word("at") {
        p.skip_ws();
        let pos = p.pos();
        let name = hyphenated(p);
        let op = match p.eat_word("op") {
            true => {
                p.expect("=")?;
                let at = p.pos();
                let k = u32::try_from(p.unsigned()?).ok().filter(|k| *k > 0);
                Some(k.ok_or_else(|| p.error_at(at, "an operation count is 1 or more"))?)
            }
            false => None,
        };
        at = match CrashPoint::from_name(&name, op) {
            Some(point) => Some(point),
            None => {
                let known = CrashPoint::names().join(", ");
                return Err(p.error_at(pos, format!("expected a crash point ({known})")));
            }
        };
    }
    let tear =
        if p.eat_word("torn") { Some(if p.eat("=") { sector_count(p)? } else { 0 }) } else { None };
    Ok(Command::Crash { at, tear, node })
}

fn sector_count(p: &mut Parser<'_>) -> PResult<u32> {
    let at = p.pos();
    let k = p.unsigned()?;
    u32::try_from(k).map_err(|_| p.error_at(at, format!("sector {k} is out of range")))
}

/// A word that may hold hyphens (`next-append`).
fn hyphenated(p: &mut Parser<'_>) -> String {
    let mut name = p.word().unwrap_or_default().to_owned();
    while p.rest().starts_with('-') {
        p.eat("-");
        name = format!("{name}-{}", p.word().unwrap_or_default());
    }
    name
}

fn parse_fault(p: &mut Parser<'_>) -> PResult<FaultCommand> {
    p.skip_ws();
    let at = p.pos();
    match hyphenated(p).as_str() {
        "io-error" => {
            p.skip_ws();
            let at = p.pos();
            let name = hyphenated(p);
            match IoTarget::ALL.into_iter().find(|t| t.name() == name) {
                Some(target) => Ok(FaultCommand::IoError(target)),
                None => {
                    let known: Vec<&str> = IoTarget::ALL.iter().map(|t| t.name()).collect();
                    Err(p.error_at(at, format!("expected an I/O target ({})", known.join(", "))))
                }
            }
        }
        "lose-rocksdb" => {
            let Some(dir) = p.token() else {
                return Err(p.error(format!("expected a tablet directory, found {}", p.found())));
            };
            Ok(FaultCommand::LoseRocksDb { dir: dir.to_owned() })
        }
        "disk-full" => Ok(FaultCommand::DiskFull { free_bytes: p.unsigned()? }),
        "clear" => Ok(FaultCommand::Clear),
        "flip" => {
            let Some(file) = p.token() else {
                return Err(p.error(format!("expected a file name, found {}", p.found())));
            };
            let file = file.to_owned();
            let offset_at = p.pos();
            let offset = usize::try_from(p.unsigned()?)
                .map_err(|_| p.error_at(offset_at, "offset out of range"))?;
            p.expect("bit")?;
            p.expect("=")?;
            let bit_at = p.pos();
            let bit = p.unsigned()?;
            let bit = u8::try_from(bit).ok().filter(|b| *b < 8);
            let bit = bit.ok_or_else(|| p.error_at(bit_at, "a bit is 0 to 7"))?;
            Ok(FaultCommand::Flip { file, offset, bit })
        }
        _ => {
            Err(p
                .error_at(at, "expected a fault: io-error, disk-full, clear, flip or lose-rocksdb"))
        }
    }
}

/// `cluster replicas=<n> seed=<s> [loss=<p>%] [max-skew=<dur>]` (after its first word).
fn parse_header(p: &mut Parser<'_>) -> PResult<Header> {
    p.expect("replicas=")?;
    let at = p.pos();
    let replicas = p.unsigned()? as usize;
    if ![1, 3, 5].contains(&replicas) {
        return Err(p.error_at(at, format!("{replicas} replicas: a group here has 1, 3 or 5")));
    }
    p.expect("seed=")?;
    let seed = p.unsigned()?;
    let mut header = Header { replicas, seed, loss_percent: 0, max_skew_us: 0 };
    if p.eat("loss=") {
        let at = p.pos();
        header.loss_percent = p.unsigned()? as u32;
        p.expect("%")?;
        if header.loss_percent > 50 {
            return Err(p.error_at(at, "loss is at most 50%"));
        }
    }
    if p.eat("max-skew=") {
        header.max_skew_us = p.duration_us()?;
    }
    Ok(header)
}

/// The commands of a replicated script, after their word; `None` for another word.
fn parse_replicated(p: &mut Parser<'_>, word: &str) -> PResult<Option<Command>> {
    Ok(Some(match word {
        "partition" => {
            let mut groups = vec![node_list(p)?];
            p.expect("|")?;
            groups.push(node_list(p)?);
            while p.eat("|") {
                groups.push(node_list(p)?);
            }
            Command::Partition(groups)
        }
        "cut" => {
            let mut links = vec![link(p)?];
            while p.eat(",") {
                links.push(link(p)?);
            }
            Command::Cut(links)
        }
        "heal" => Command::Heal,
        "slow" => {
            let id = required_node(p)?;
            let at = p.pos();
            let us = p.duration_us()?;
            if us > 10_000_000 {
                return Err(p.error_at(at, "a slow disk's sync takes at most 10s"));
            }
            Command::Slow(id, us)
        }
        "skew" => {
            let id = required_node(p)?;
            let negative = p.eat("-");
            let at = p.pos();
            let us = p.duration_us()?;
            if us > 3_600_000_000 {
                return Err(p.error_at(at, "a clock skew is at most 1h"));
            }
            let us = us as i64;
            Command::Skew(id, if negative { -us } else { us })
        }
        "wait" => {
            let us = p.duration_us()?;
            if us > 600_000_000 {
                return Err(p.error("wait at most 10m (the simulated group ticks every 10 ms)"));
            }
            Command::Wait(us)
        }
        "conf" => {
            let change = parse_conf(p)?;
            let to = id_option(p, "to")?;
            let table = if p.eat_word("tablet") {
                p.expect("=")?;
                Some(table_ref(p)?)
            } else {
                None
            };
            Command::Conf { change, to, table }
        }
        "leader" => Command::Leader,
        "status" => Command::Status,
        "converge" => Command::Converge,
        _ => return Ok(None),
    }))
}

fn parse_conf(p: &mut Parser<'_>) -> PResult<ConfChange> {
    p.skip_ws();
    let at = p.pos();
    let word = hyphenated(p);
    Ok(match word.as_str() {
        "add-learner" => ConfChange::AddLearner(p.unsigned()?),
        "add-voter" => ConfChange::AddVoter(p.unsigned()?),
        "remove" => ConfChange::Remove(p.unsigned()?),
        "replace" => {
            let out = p.unsigned()?;
            if !p.eat_word("with") {
                return Err(p.error("expected `replace <i> with <j>`"));
            }
            ConfChange::Replace(out, p.unsigned()?)
        }
        other => {
            let known = "add-learner, add-voter, remove or replace";
            return Err(p.error_at(at, format!("unknown change `{other}` ({known})")));
        }
    })
}

fn node_list(p: &mut Parser<'_>) -> PResult<Vec<u64>> {
    let mut nodes = vec![p.unsigned()?];
    while p.eat(",") {
        nodes.push(p.unsigned()?);
    }
    Ok(nodes)
}

fn link(p: &mut Parser<'_>) -> PResult<(u64, u64)> {
    let a = p.unsigned()?;
    p.expect("-")?;
    Ok((a, p.unsigned()?))
}

fn required_node(p: &mut Parser<'_>) -> PResult<u64> {
    node_option(p)?.ok_or_else(|| p.error("needs node=<i>"))
}

fn show_nodes(ids: &[u64]) -> String {
    ids.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// Print a replicated command (the others print in `command.rs`).
pub(super) fn write_replicated(f: &mut fmt::Formatter<'_>, command: &Command) -> fmt::Result {
    match command {
        Command::Partition(groups) => {
            let groups: Vec<String> = groups.iter().map(|g| show_nodes(g)).collect();
            write!(f, "partition {}", groups.join(" | "))
        }
        Command::Cut(links) => {
            let links: Vec<String> = links.iter().map(|(a, b)| format!("{a}-{b}")).collect();
            write!(f, "cut {}", links.join(","))
        }
        Command::Heal => f.write_str("heal"),
        Command::Skew(id, us) => {
            let sign = if *us < 0 { "-" } else { "" };
            write!(f, "skew node={id} {sign}{}", format_duration_us(us.unsigned_abs()))
        }
        Command::Slow(id, us) => write!(f, "slow node={id} {}", format_duration_us(*us)),
        Command::Wait(us) => write!(f, "wait {}", format_duration_us(*us)),
        Command::Conf { change, to, table } => {
            write!(f, "conf {change}")?;
            if let Some(to) = to {
                write!(f, " to={to}")?;
            }
            match table {
                Some(table) => write!(f, " tablet={table}"),
                None => Ok(()),
            }
        }
        Command::Leader => f.write_str("leader"),
        Command::Status => f.write_str("status"),
        Command::Converge => f.write_str("converge"),
        other => unreachable!("not a replicated command: {other:?}"),
    }
}
