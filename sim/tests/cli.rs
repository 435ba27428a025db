//! The command line's edges (issue 44): each is a clear error naming what is wrong, with
//! exit code 2 (bad usage), or documented behaviour — never a panic, never a silent run of
//! nothing. Exit codes: 0 pass, 1 a failure found, 2 bad usage.

use std::process::{Command, Output, Stdio};

fn docsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_docsim")).args(args).output().expect("docsim runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Bad usage: exit 2, `needle` in the message, no panic.
fn refused(args: &[&str], needle: &str) {
    let out = docsim(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
}

#[test]
fn a_campaign_of_no_seed_is_refused() {
    let dir = std::env::temp_dir().join(format!("docsim-cli-empty-{}", std::process::id()));
    let reports = dir.to_str().expect("utf-8");
    refused(&["torture", "--seeds", "5..5", "--reports", reports], "--seeds 5..5 holds no seed");
    refused(
        &["torture", "--seeds", "0..1", "--shard", "1/2", "--reports", reports],
        "shard 1/2 of seeds 0..1 holds no seed",
    );
}

#[test]
fn worker_counts_outside_their_bound_are_refused() {
    refused(&["torture", "--seeds", "0..1", "--jobs", "0"], "--jobs 0: 1 to 256 worker threads");
    refused(
        &["torture", "--seeds", "0..1", "--jobs", "100000"],
        "--jobs 100000: 1 to 256 worker threads",
    );
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_docsim"))
        .args(["replay", "--seed", "42", "--ops", "200"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("docsim runs");
    drop(child.stdout.take()); // the reader goes away at once, as `| head -0` does
    let out = child.wait_with_output().expect("docsim ends");
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.status.code().is_none_or(|c| c == 0 || c == 141), "{:?}: {err}", out.status);
}

#[test]
fn metamorphic_runs_refuse_a_single_configuration() {
    refused(
        &["run", "--seed", "1", "--metamorphic", "--config", "3"],
        "--metamorphic runs every storage configuration",
    );
}

#[test]
fn a_seed_too_large_says_why() {
    refused(&["run", "--seed", "18446744073709551616"], "above 18446744073709551615");
    refused(&["run", "--seed", "0x10000000000000000"], "above 18446744073709551615");
}

/// `script --bless` writes a script's output beside it; `script --check` passes on it
/// and fails, naming the line, once the script's output changes.
#[test]
fn a_script_snapshot_is_blessed_then_checked() {
    let dir = std::env::temp_dir().join(format!("docsim-cli-bless-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let script = dir.join("mine.ds");
    std::fs::write(&script, "set doc(; \"k\").\"a\" = 1 @T10\nget doc(; \"k\") @T20\n").expect("w");
    let path = script.to_str().expect("utf-8");
    refused(&["script", "--check", path], "script --bless");
    let blessed = docsim(&["script", "--bless", path]);
    assert_eq!(blessed.status.code(), Some(0), "{}", stderr(&blessed));
    let out = std::fs::read_to_string(dir.join("mine.out")).expect("the snapshot");
    assert!(out.contains("\"a\": 1"), "the snapshot holds the read: {out}");
    assert_eq!(docsim(&["script", "--check", path]).status.code(), Some(0));
    std::fs::write(&script, "set doc(; \"k\").\"a\" = 2 @T10\nget doc(; \"k\") @T20\n").expect("w");
    let changed = docsim(&["script", "--check", path]);
    let said = String::from_utf8_lossy(&changed.stdout);
    assert_eq!(changed.status.code(), Some(1), "{said}");
    assert!(said.contains("mine.out:1: differs from its snapshot"), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Ctrl-C ends a campaign with its summary and the report of the seeds finished (exit
/// 130 when none of them failed).
#[test]
fn ctrl_c_ends_a_campaign_with_its_summary_and_report() {
    let dir = std::env::temp_dir().join(format!("docsim-cli-ctrl-c-{}", std::process::id()));
    let report = dir.join("report");
    let child = Command::new(env!("CARGO_BIN_EXE_docsim"))
        .args(["torture", "--duration", "1h", "--ops", "200", "--report"])
        .arg(&report)
        .arg("--reports")
        .arg(dir.join("runs"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("docsim runs");
    std::thread::sleep(std::time::Duration::from_secs(3));
    // SAFETY: sending a signal to our own child by its pid.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().expect("docsim ends");
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{said}{}", stderr(&out));
    assert!(said.contains("interrupted (Ctrl-C)") && said.contains("INTERRUPTED"), "{said}");
    assert!(said.contains("checked reads"), "the summary: {said}");
    let json = std::fs::read_to_string(report.join("campaign.json")).expect("the report");
    assert!(json.contains("\"seed\""), "seeds finished are in the report");
    let _ = std::fs::remove_dir_all(&dir);
}
