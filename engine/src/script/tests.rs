//! Every docscript command prints back as the text it was parsed from: reproducers and
//! traces are docscript, so a printed command must run again as itself.

use super::parse_line;

/// One line of each command and each of its forms, in the form it prints.
const LINES: &[&str] = &[
    "markers optional",
    "markers required",
    "layout packed",
    "layout declared",
    "layout unpacked",
    "layout entity",
    r#"set doc(; "k")."a" = 1 @T1000 ttl=5s"#,
    r#"extend doc(; "k") = {"a": 1} @T1000"#,
    r#"obj doc(; "k")."b" @T1000"#,
    r#"del doc(; "k") @T1000"#,
    r#"batch @T1000 { set doc(; "k")."a" = 1 ttl=2s; obj doc(; "j"); del doc(; "i") }"#,
    "default_ttl none",
    "default_ttl 10s",
    "default_ttl 1500ms @T7000",
    r#"get doc(; "k") @T1000"#,
    r#"get doc(; "k") @T1000 table=t"#,
    "dump",
    "dump names",
    "dump raw",
    "flush",
    "files",
    "stats",
    "stats node=2",
    "compact cutoff=T10",
    "compact minor cutoff=T10",
    "compact minor files=0..2 cutoff=T10",
    "compact minor files=0..2 cutoff=T10 table=t",
    "crash",
    "crash torn",
    "crash torn=3",
    "crash at after-sync",
    "crash at after-apply torn=1",
    "fault io-error next-append",
    "fault io-error next-sync",
    "fault disk-full 100",
    "fault clear",
    "fault flip wal-00000001 10 bit=7",
    "restart",
    "log",
    "table CREATE TABLE t (k int PRIMARY KEY)",
    "cql @T1000 INSERT INTO t (k) VALUES (1)",
    "redis @T1000 SET k v",
    "expect error: io",
    // Routing options and replicated commands (a script with a `cluster` header).
    "cluster replicas=5 seed=9 loss=5% max-skew=500ms",
    "cluster replicas=3 seed=7",
    r#"set doc(; "k")."a" = {"x": 1, "y": "s"} ttl=5s to=2 nowait"#,
    r#"batch { del doc(; "k"); obj doc(; "k")."b"; extend doc(; "k") = {1: 2} } to=1"#,
    r#"get doc(; "k")."x" @now+50ms from=3"#,
    r#"get doc(; "k") @safe from=1"#,
    r#"get doc(; "k") @T1000.3 table=t from=2"#,
    "cql to=2 nowait INSERT INTO t (k) VALUES (1)",
    "cql @now from=3 SELECT * FROM t WHERE k = 1",
    "redis @T1000 to=1 SET k to=2",
    "redis from=2 GET k",
    "dump names node=2",
    "dump node=3",
    "flush node=3",
    "files node=1",
    "log node=2",
    "restart node=2",
    "disarm node=2",
    "compact minor files=0..2 cutoff=T10 table=t node=2",
    "crash node=2 at after-sync",
    "crash node=1 at after-commit torn=2",
    "fault node=3 disk-full 7",
    "partition 1,3 | 2",
    "partition 1,2 | 3 | 4,5",
    "cut 1-3,2-3",
    "heal",
    "skew node=3 -5ms",
    "skew node=3 0",
    "slow node=2 200ms",
    "slow node=2 0",
    "wait 250ms",
    "conf add-learner 4",
    "conf replace 2 with 4 to=1 tablet=t",
    "leader",
    "status",
    "converge",
    "backup export b1 s1 t",
    "backup export b-2 s1 t node=3",
    "backup import b1",
    "backup import b1 as t2",
    "backup damage b1 tablet-0/sst-1",
];

/// A bad `backup` line is refused naming what is wrong, where.
#[test]
fn bad_backup_lines_are_refused_naming_the_part() {
    let error = |line: &str| parse_line(line, 7).expect_err(line).to_string();
    assert!(error("backup").contains("expected `export`, `import` or `damage`"));
    assert!(error("backup list").contains("found `list`"));
    assert!(error("backup export b/1 s1 t").contains("`b/1` is no backup name"));
    assert!(error("backup export b1 s.1 t").contains("`s.1` is no snapshot name"));
    assert!(error("backup export b1 s1").contains("expected a table name"));
    assert!(error("backup import b1 as").contains("expected a table name"));
    assert!(error("backup damage b1").contains("expected a backup's file"));
    assert!(error("backup import b1 t2").contains("line 7"));
    assert!(error("backup import b1 as t/0").contains("`t/0` names a tablet"));
    assert!(error("backup export b1 s1 t/1").contains("`t/1` names a tablet"));
}

#[test]
fn every_command_prints_as_the_line_it_was_parsed_from() {
    for (i, line) in LINES.iter().enumerate() {
        let command = parse_line(line, i + 1).expect(line).expect("not blank");
        assert_eq!(command.to_string(), *line);
    }
}

/// A write without its `@T` (a replicated script: the leader's clock gives the time) and
/// a read without one (`@now`) parse; the write prints as written, the read with `@now`.
#[test]
fn times_may_be_left_to_the_replica() {
    let command = |line: &str| parse_line(line, 1).expect(line).expect("not blank");
    let write = r#"set doc(; "k")."a" = 1 ttl=5s"#;
    assert_eq!(command(write).to_string(), write);
    let read = command(r#"get doc(; "k") from=2"#);
    assert_eq!(read.to_string(), r#"get doc(; "k") @now from=2"#);
    assert!(read.is_replicated() && !command(write).is_replicated());
    assert!(!command(r#"get doc(; "k") @T5 from=1"#).is_replicated(), "node 1 of a group of one");
    let error = |line: &str| parse_line(line, 1).unwrap_err().to_string();
    assert!(error("cluster replicas=4 seed=1").contains("1, 3 or 5"), "a group's size");
    assert_eq!(error("flush node=0"), "line 1, column 12: replicas are numbered from 1");
}

/// A bit to flip is 0 to 7: 8 is refused where it stands; and a flip names its file.
#[test]
fn a_fault_flips_bits_0_to_7_only() {
    let error = |line: &str| parse_line(line, 1).unwrap_err().to_string();
    assert_eq!(error("fault flip wal-00000001 10 bit=8"), "line 1, column 32: a bit is 0 to 7");
    assert_eq!(error("fault flip"), "line 1, column 11: expected a file name, found end of line");
}
