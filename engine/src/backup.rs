//! Backups: a table's snapshot exported to a directory of real files, outside every node,
//! and read back — checked file by file — to import it into another cluster.
//!
//! YugabyteDB's backups (`yb_backup.py`, `ImportSnapshotMeta` on the master) copy each
//! tablet's snapshot directory as it is, RocksDB checkpoint files and all, beside a
//! metadata file that names the table, its schema and its tablets; an import creates the
//! table anew and restores every tablet from the copied files. docsim does the same with
//! its own manifest (the format is docsim's):
//!
//! ```text
//! <backup>/BACKUP             the manifest; a backup exists exactly when it does
//! <backup>/schema             the table's schema at the snapshot (`Schema::encode`)
//! <backup>/tablet-<i>/sst-1   tablet i's checkpoint files, named by kind and order
//! ```
//!
//! The manifest's lines: `docsim-backup 1`, `table <name>`, `snapshot <id>`, one
//! `tablet <i> op=<op id> ht=<raw time>` per tablet, one `file <path> <length> <crc32c>
//! [<RocksDB name>]` per file (the schema has no RocksDB name), and last `end <crc32c>` of
//! every byte before that line. Files are written and synced first, the manifest last
//! (through a temporary name and a rename), so a backup cut short has no manifest.
//!
//! The files are named by the backup, not by RocksDB (`sst-1`, `manifest-1`, ...), so that
//! what an error names is the same in every run: RocksDB numbers its files itself
//! (`error::without_file_numbers`). The manifest keeps each file's RocksDB name, which an
//! import writes it under again (the checkpoint's MANIFEST names its SSTs).

use crate::error::{Error, Result};
use crate::hybrid_time::HybridTime;
use crate::ids::OpId;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The manifest's file name.
pub const MANIFEST: &str = "BACKUP";
const FORMAT: &str = "docsim-backup 1";
const SCHEMA: &str = "schema";

/// A table's snapshot as a backup holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backup {
    /// The table's name when it was exported.
    pub table: String,
    /// The snapshot's id.
    pub snapshot: String,
    /// The table's schema at the snapshot, as `Schema::encode` writes it.
    pub schema: Vec<u8>,
    /// Each tablet in hash order.
    pub tablets: Vec<TabletBackup>,
}

/// One tablet's snapshot: the entry that took it, its time, its checkpoint's files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TabletBackup {
    pub op_id: OpId,
    pub ht: HybridTime,
    /// Each file's RocksDB name and bytes, in name order.
    pub files: Vec<(String, Vec<u8>)>,
}

/// Whether `name` names a backup or a snapshot (each a directory): 1 to 64 letters,
/// digits, `_` or `-`.
pub fn valid_name(name: &str) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    (1..=64).contains(&name.len()) && name.chars().all(allowed)
}

/// Whether `name` is a table's name: a letter, then letters, digits and `_` (lower-case,
/// as CQL stores names).
pub fn valid_table_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 64
}

/// The name a backup gives a checkpoint file: its kind (`sst`, `manifest`, `current`,
/// `options`, else `file`) and its place among the tablet's files of that kind.
fn backup_name(rocksdb_name: &str, counts: &mut BTreeMap<&'static str, usize>) -> String {
    let kind = match rocksdb_name {
        n if n.ends_with(".sst") => "sst",
        n if n.starts_with("MANIFEST-") => "manifest",
        "CURRENT" => "current",
        n if n.starts_with("OPTIONS-") => "options",
        _ => "file",
    };
    let count = counts.entry(kind).or_default();
    *count += 1;
    format!("{kind}-{count}")
}

/// Tablet `i`'s files: (path in the backup, RocksDB name), in the order of their RocksDB
/// names with SSTs in number order.
fn tablet_paths(i: usize, tablet: &TabletBackup) -> Vec<(String, &str)> {
    let mut counts = BTreeMap::new();
    let mut names: Vec<&str> = tablet.files.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_by_key(|n| (n.len(), *n)); // numbers of one width compare as text
    names.into_iter().map(|n| (format!("tablet-{i}/{}", backup_name(n, &mut counts)), n)).collect()
}

/// Write `backup` as the directory `dir` (called `name` in errors; it must not exist):
/// everything into `<dir>.tmp` first (a leftover of an export cut short is replaced),
/// files and directories synced, the manifest last, then renamed `dir`.
pub fn write(dir: &Path, name: &str, backup: &Backup) -> Result<()> {
    let io = |what: &str, e: std::io::Error| Error::Io(format!("backup {name}: {what}: {e}"));
    if dir.exists() {
        return Err(Error::InvalidRequest(format!("backup {name}: exists already")));
    }
    let tmp = PathBuf::from(format!("{}.tmp", dir.display()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| io("a leftover", e))?;
    }
    std::fs::create_dir_all(&tmp).map_err(|e| io("its directory", e))?;
    let mut manifest = format!("{FORMAT}\ntable {}\nsnapshot {}\n", backup.table, backup.snapshot);
    let mut files = vec![(SCHEMA.to_owned(), None, backup.schema.as_slice())];
    for (i, tablet) in backup.tablets.iter().enumerate() {
        manifest += &format!("tablet {i} op={} ht={}\n", tablet.op_id, tablet.ht.raw());
        let sub = format!("tablet-{i}");
        std::fs::create_dir_all(tmp.join(&sub)).map_err(|e| io(&sub, e))?;
        let bytes: BTreeMap<&str, &[u8]> =
            tablet.files.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect();
        for (path, name) in tablet_paths(i, tablet) {
            files.push((path, Some(name), bytes[name]));
        }
    }
    for (path, name, bytes) in files {
        write_synced(&tmp.join(&path), bytes).map_err(|e| io(&path, e))?;
        let crc = crc32c::crc32c(bytes);
        let name = name.map(|n| format!(" {n}")).unwrap_or_default();
        manifest += &format!("file {path} {} {crc:08x}{name}\n", bytes.len());
    }
    manifest += &format!("end {:08x}\n", crc32c::crc32c(manifest.as_bytes()));
    write_synced(&tmp.join(MANIFEST), manifest.as_bytes()).map_err(|e| io(MANIFEST, e))?;
    for i in 0..backup.tablets.len() {
        sync_dir(&tmp.join(format!("tablet-{i}"))).map_err(|e| io(&format!("tablet-{i}"), e))?;
    }
    sync_dir(&tmp).map_err(|e| io("its directory", e))?;
    std::fs::rename(&tmp, dir).map_err(|e| io("its rename", e))?;
    sync_dir(dir.parent().unwrap_or(Path::new("."))).map_err(|e| io("the store", e))
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Read the backup `dir` (called `name` in errors), every file checked against the
/// manifest: a missing, short or changed file, or a manifest that does not check, is
/// refused as corruption naming the file.
pub fn read(dir: &Path, name: &str) -> Result<Backup> {
    let damaged =
        |file: &str, why: String| Error::FileCorruption(format!("backup {name}: {file}: {why}"));
    if !dir.join(MANIFEST).exists() {
        return Err(Error::InvalidRequest(format!("no backup {name}")));
    }
    let text = std::fs::read(dir.join(MANIFEST)).map_err(|e| damaged(MANIFEST, e.to_string()))?;
    let text = checked_manifest(&text).map_err(|why| damaged(MANIFEST, why))?;
    let manifest = parse_manifest(text).map_err(|why| damaged(MANIFEST, why))?;
    let mut backup = Backup {
        table: manifest.table,
        snapshot: manifest.snapshot,
        schema: Vec::new(),
        tablets: manifest.tablets,
    };
    for file in manifest.files {
        let bytes =
            std::fs::read(dir.join(&file.path)).map_err(|e| damaged(&file.path, e.to_string()))?;
        if bytes.len() != file.len {
            let why = format!("{} bytes, the manifest says {}", bytes.len(), file.len);
            return Err(damaged(&file.path, why));
        }
        if crc32c::crc32c(&bytes) != file.crc {
            return Err(damaged(&file.path, "its CRC-32C does not match the manifest's".into()));
        }
        match file.tablet {
            None => backup.schema = bytes,
            Some((i, rocksdb_name)) => backup.tablets[i].files.push((rocksdb_name, bytes)),
        }
    }
    Ok(backup)
}

/// The manifest's text before its `end` line, if that line's CRC-32C matches it.
fn checked_manifest(bytes: &[u8]) -> std::result::Result<&str, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_owned())?;
    let body_end = text.trim_end_matches('\n').rfind('\n').map_or(0, |i| i + 1);
    let (body, end) = text.split_at(body_end);
    let crc = end.trim_end().strip_prefix("end ").and_then(|c| u32::from_str_radix(c, 16).ok());
    match crc {
        None => Err("no `end <crc32c>` line".into()),
        Some(crc) if crc != crc32c::crc32c(body.as_bytes()) => {
            Err("its CRC-32C does not match its `end` line".into())
        }
        Some(_) => Ok(body),
    }
}

/// A manifest's contents; its tablets without files yet.
struct Manifest {
    table: String,
    snapshot: String,
    tablets: Vec<TabletBackup>,
    files: Vec<ManifestFile>,
}

/// A `file` line: the path, length and CRC-32C, and for a tablet's file its tablet and
/// RocksDB name.
struct ManifestFile {
    path: String,
    len: usize,
    crc: u32,
    tablet: Option<(usize, String)>,
}

fn parse_manifest(text: &str) -> std::result::Result<Manifest, String> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    match lines.next() {
        Some((_, FORMAT)) => {}
        _ => return Err(format!("its first line is not `{FORMAT}`")),
    }
    let mut field = |key: &str| match lines.next() {
        Some((n, line)) => line
            .strip_prefix(key)
            .and_then(|rest| rest.strip_prefix(' '))
            .map(str::to_owned)
            .ok_or_else(|| format!("line {n}: `{line}` is not `{key} ...`")),
        None => Err(format!("no `{key}` line")),
    };
    let (table, snapshot) = (field("table")?, field("snapshot")?);
    if !valid_table_name(&table) {
        return Err(format!("`{table}` is no table name"));
    }
    if !valid_name(&snapshot) {
        return Err(format!("`{snapshot}` is no snapshot name"));
    }
    let mut manifest = Manifest { table, snapshot, tablets: Vec::new(), files: Vec::new() };
    for (n, line) in lines {
        let bad = || format!("line {n}: `{line}` is no tablet or file line");
        match line.split_once(' ') {
            Some(("tablet", rest)) => {
                let tablet = parse_tablet(rest, manifest.tablets.len()).ok_or_else(bad)?;
                manifest.tablets.push(tablet);
            }
            Some(("file", rest)) => {
                let file = parse_file(rest, manifest.tablets.len()).ok_or_else(bad)?;
                manifest.files.push(file);
            }
            _ => return Err(bad()),
        }
    }
    match manifest.files.iter().filter(|f| f.tablet.is_none()).count() {
        1 => {}
        n => return Err(format!("{n} schema files, not 1")),
    }
    let mut names = std::collections::BTreeSet::new();
    for f in &manifest.files {
        let name = f.tablet.as_ref().map(|(i, n)| format!("{i}/{n}"));
        if !names.insert(f.path.clone()) || name.is_some_and(|n| !names.insert(n)) {
            return Err(format!("{} named twice", f.path));
        }
    }
    let empty = (0..manifest.tablets.len())
        .find(|i| !manifest.files.iter().any(|f| f.tablet.as_ref().is_some_and(|t| t.0 == *i)));
    match (manifest.tablets.is_empty(), empty) {
        (true, _) => Err("no tablet".into()),
        (_, Some(i)) => Err(format!("tablet {i} has no file")),
        _ => Ok(manifest),
    }
}

/// `<i> op=<op id> ht=<raw>`, the `i`th tablet.
fn parse_tablet(text: &str, i: usize) -> Option<TabletBackup> {
    let mut parts = text.split(' ');
    (parts.next()?.parse::<usize>().ok()? == i).then_some(())?;
    let op_id = parts.next()?.strip_prefix("op=")?;
    let (term, index) = op_id.split_once('.')?;
    let op_id = OpId::new(term.parse().ok()?, index.parse().ok()?);
    let ht = HybridTime::from_raw(parts.next()?.strip_prefix("ht=")?.parse().ok()?);
    // Room left for clocks that move past it (an import moves every replica's).
    let sane = ht.physical_us() < HybridTime::PHYSICAL_MAX_US / 2;
    (sane && parts.next().is_none()).then_some(TabletBackup { op_id, ht, files: Vec::new() })
}

/// `<path> <length> <crc32c> [<RocksDB name>]`, a tablet's file naming one of `tablets`.
fn parse_file(text: &str, tablets: usize) -> Option<ManifestFile> {
    let parts: Vec<&str> = text.split(' ').collect();
    let (path, len, crc) = (parts.first()?, parts.get(1)?.parse().ok()?, parts.get(2)?);
    let crc = u32::from_str_radix(crc, 16).ok()?;
    let tablet = match (&parts[3..], path.split_once('/')) {
        ([], None) if *path == SCHEMA => None,
        ([name], Some((dir, file))) if valid_file(file) && valid_rocksdb_name(name) => {
            let i: usize = dir.strip_prefix("tablet-")?.parse().ok()?;
            if i >= tablets {
                return None;
            }
            Some((i, (*name).to_owned()))
        }
        _ => return None,
    };
    Some(ManifestFile { path: (*path).to_owned(), len, crc, tablet })
}

/// A file name RocksDB gives a checkpoint's file: no path, nothing but letters, digits,
/// `-`, `_` and `.`.
pub fn valid_rocksdb_name(name: &str) -> bool {
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_';
    !name.is_empty() && !name.starts_with('.') && name.chars().all(plain)
}

/// A backup's own file name: `<kind>-<n>`.
fn valid_file(name: &str) -> bool {
    name.split_once('-').is_some_and(|(kind, n)| {
        kind.chars().all(|c| c.is_ascii_lowercase()) && n.parse::<usize>().is_ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Backup {
        let file = |name: &str, bytes: &[u8]| (name.to_owned(), bytes.to_vec());
        let tablet = |index, files| TabletBackup {
            op_id: OpId::new(1, index),
            ht: HybridTime::from_raw(4096 * index),
            files,
        };
        Backup {
            table: "t".into(),
            snapshot: "s1".into(),
            schema: b"table packed=0 entity=0\nCREATE TABLE t (k int, PRIMARY KEY ((k)))".to_vec(),
            tablets: vec![
                tablet(
                    3,
                    vec![
                        file("000010.sst", b"ten"),
                        file("000009.sst", b"nine"),
                        file("CURRENT", b"MANIFEST-000011\n"),
                        file("MANIFEST-000011", b"m"),
                    ],
                ),
                tablet(4, vec![file("CURRENT", b"c")]),
            ],
        }
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("docsim-backup-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// A backup reads back as written; its files carry the backup's own names, SSTs in
    /// number order.
    #[test]
    fn a_backup_reads_back_as_written() {
        let dir = scratch("round-trip");
        write(&dir, "b", &sample()).expect("written");
        let mut read = read(&dir, "b").expect("read back");
        read.tablets.iter_mut().for_each(|t| t.files.sort());
        let mut want = sample();
        want.tablets.iter_mut().for_each(|t| t.files.sort());
        assert_eq!(read, want);
        assert_eq!(std::fs::read(dir.join("tablet-0/sst-1")).expect("named"), b"nine");
        assert_eq!(std::fs::read(dir.join("tablet-0/manifest-1")).expect("named"), b"m");
        assert!(
            matches!(write(&dir, "b", &sample()), Err(Error::InvalidRequest(_))),
            "no overwrite"
        );
        std::fs::remove_dir_all(&dir).expect("removed");
    }

    /// Every kind of damage is refused, naming the file.
    #[test]
    fn a_damaged_backup_is_refused_naming_the_file() {
        let dir = scratch("damaged");
        let refused = |change: &dyn Fn(&Path)| {
            let _ = std::fs::remove_dir_all(&dir);
            write(&dir, "b", &sample()).expect("written");
            change(&dir);
            match read(&dir, "b") {
                Err(Error::FileCorruption(text)) => text,
                other => panic!("not refused as corruption: {other:?}"),
            }
        };
        let flip = |path: &'static str| {
            move |dir: &Path| {
                let mut bytes = std::fs::read(dir.join(path)).expect("read");
                bytes[0] ^= 1;
                std::fs::write(dir.join(path), bytes).expect("written");
            }
        };
        let sst = refused(&flip("tablet-0/sst-2"));
        assert_eq!(sst, "backup b: tablet-0/sst-2: its CRC-32C does not match the manifest's");
        let schema = refused(&flip("schema"));
        assert_eq!(schema, "backup b: schema: its CRC-32C does not match the manifest's");
        let manifest = refused(&flip(MANIFEST));
        assert!(manifest.starts_with("backup b: BACKUP: "), "{manifest}");
        let gone =
            refused(&|dir| std::fs::remove_file(dir.join("tablet-1/current-1")).expect("rm"));
        assert!(gone.starts_with("backup b: tablet-1/current-1: "), "{gone}");
        let short = refused(&|dir| std::fs::write(dir.join("tablet-0/sst-1"), b"ni").expect("w"));
        assert_eq!(short, "backup b: tablet-0/sst-1: 2 bytes, the manifest says 4");
        std::fs::remove_dir_all(&dir).expect("removed");
        assert!(matches!(read(&dir, "b"), Err(Error::InvalidRequest(_))), "no manifest: none");
    }

    /// A manifest that checks (its `end` CRC recomputed) but says what no backup says is
    /// refused, naming the manifest: names that leave their directory, a tablet index out
    /// of range, two schema files, a file named twice, a tablet without files, a time no
    /// clock can move past.
    #[test]
    fn a_manifest_that_checks_but_is_malformed_is_refused() {
        let dir = scratch("tampered");
        write(&dir, "b", &sample()).expect("written");
        let text = std::fs::read_to_string(dir.join(MANIFEST)).expect("read");
        let body = &text[..text.rfind("end ").expect("an end line")];
        let original = body.to_owned();
        let resealed =
            |body: String| format!("{body}end {:08x}\n", crc32c::crc32c(body.as_bytes()));
        let first_file = body.lines().find(|l| l.starts_with("file tablet-0/")).expect("a file");
        let tampered = [
            body.replace("table t\n", "table x/../../y\n"),
            body.replace("snapshot s1\n", "snapshot ..\n"),
            body.replace("file tablet-0/sst-1", "file tablet-0/../../sst-1"),
            body.replace("000009.sst", "../000009.sst"),
            body.replace("file tablet-1/", "file tablet-2/"),
            format!("{body}file schema 1 00000000\n"),
            format!("{body}{first_file}\n"),
            body.replace(&format!("tablet 1 op=1.4 ht={}\n", 4096 * 4), ""),
            body.replace("tablet 0 op=1.3 ht=12288", "tablet 0 op=1.3 ht=18446744073709551615"),
        ];
        for (i, body) in tampered.into_iter().enumerate() {
            assert_ne!(body, original, "case {i} changes the manifest");
            std::fs::write(dir.join(MANIFEST), resealed(body)).expect("written");
            match read(&dir, "b") {
                Err(Error::FileCorruption(why)) => {
                    assert!(why.starts_with("backup b: BACKUP: "), "case {i}: {why}")
                }
                other => panic!("case {i}: not refused: {other:?}"),
            }
        }
        std::fs::remove_dir_all(&dir).expect("removed");
    }
}
