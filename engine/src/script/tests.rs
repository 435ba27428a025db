//! Every docscript command prints back as the text it was parsed from: reproducers and
//! traces are docscript, so a printed command must run again as itself.

use super::{format_writes, parse_line, parse_writes};
use crate::notation::Parser;

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
    r#"get doc(; "k") @T1000"#,
    r#"get doc(; "k") @T1000 table=t"#,
    "dump",
    "dump names",
    "dump raw",
    "flush",
    "files",
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
];

#[test]
fn every_command_prints_as_the_line_it_was_parsed_from() {
    for (i, line) in LINES.iter().enumerate() {
        let command = parse_line(line, i + 1).expect(line).expect("not blank");
        assert_eq!(command.to_string(), *line);
    }
}

/// The writes of a replicated command (no `@T`: the leader picks the time) print back as
/// themselves too, one write or a batch.
#[test]
fn replicated_writes_print_as_the_text_they_were_parsed_from() {
    let texts = [
        r#"set doc(; "k")."a" = 1 ttl=5s"#,
        r#"del doc(; "k")"#,
        r#"batch { set doc(; "k")."a" = 1 ttl=2s; obj doc(; "j"); del doc(; "i") }"#,
    ];
    for text in texts {
        let mut p = Parser::new(text, 1);
        let word = p.word().expect("a command word");
        let writes = parse_writes(&mut p, word).expect(text);
        p.finish().expect(text);
        assert_eq!(format_writes(&writes), text);
    }
}

/// A bit to flip is 0 to 7: 8 is refused where it stands; and a flip names its file.
#[test]
fn a_fault_flips_bits_0_to_7_only() {
    let error = |line: &str| parse_line(line, 1).unwrap_err().to_string();
    assert_eq!(error("fault flip wal-00000001 10 bit=8"), "line 1, column 32: a bit is 0 to 7");
    assert_eq!(
        error("fault flip"),
        "line 1, column 11: expected a log file name, found end of line"
    );
}
