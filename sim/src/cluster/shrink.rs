//! Shrinking a replicated reproducer: delta debugging (ddmin) over the command lines of a
//! failing replicated script, keeping its header, until no single line can go and the
//! script still fails the same way ([`failure_class`]); then each run of `wait` lines
//! becomes one wait where the failure survives that. Every candidate is a whole run
//! under madsim, so a shrunk script is exact: `docsim script shrunk.ds` fails alone.

use super::command::{parse_command, Command};
use super::run_cluster_script;
use docsim_engine::canary::Plants;
use std::time::Duration;

/// The duration of a `wait` line.
fn wait_us(line: &str) -> Option<u64> {
    match parse_command(line, 1) {
        Ok(Command::Wait(d)) => Some(d.as_micros() as u64),
        _ => None,
    }
}

/// The result of shrinking.
pub struct ShrunkScript {
    /// Command lines before and after.
    pub before: usize,
    pub after: usize,
    /// The shrunk script (header, then commands).
    pub text: String,
    /// Its failure (the first `check:` line).
    pub failure: String,
    /// Runs spent.
    pub runs: usize,
}

/// What kind of check failed, without the numbers that change as the script shrinks
/// (indexes, op ids, times, node ids): the failure's named phrase, or the message with
/// its digits masked up to its first `:`.
pub fn failure_class(failure: &str) -> String {
    const PHRASES: [&str; 14] = [
        "two histories",
        "hybrid time went back",
        "is no client's write",
        ", proposed at",
        "is not in the committed log",
        "the committed log says",
        "no convergence",
        "hold different data",
        "failed a read",
        "refused a write",
        "does not restart",
        "no replica applied index",
        "the model refuses",
        "two leaders in term",
    ];
    if let Some(phrase) = PHRASES.iter().find(|p| failure.contains(*p)) {
        return (*phrase).to_owned();
    }
    let head = failure.split(':').next().unwrap_or_default();
    head.chars().map(|c| if c.is_ascii_digit() { '#' } else { c }).collect()
}

/// The first failing `check:` line of a script's output.
fn failure_of(output: &str) -> Option<String> {
    output.lines().filter_map(|l| l.strip_prefix("check: ")).find(|l| *l != "ok").map(str::to_owned)
}

/// At most this many runs (a few minutes): then the shortest failing script so far.
const MAX_RUNS: usize = 3_000;

/// Shrink `script` (a failing replicated script); `None` if it does not fail.
pub fn shrink_script(script: &str, plants: Plants) -> Option<ShrunkScript> {
    let mut lines = script.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#'));
    let header = lines.next()?.to_owned();
    let commands: Vec<String> = lines.map(str::to_owned).collect();
    let runs = std::cell::Cell::new(0);
    let fails = |candidate: &[String]| -> Option<String> {
        runs.set(runs.get() + 1);
        let text = format!("{header}\n{}\n", candidate.join("\n"));
        // A panic is a failure too (class `panic`), and must not end the shrinking.
        match std::panic::catch_unwind(|| run_cluster_script(&text, plants)) {
            Ok(output) => failure_of(&output.ok()?),
            Err(panic) => Some(format!("panic: {}", super::panic_message(&*panic))),
        }
    };
    let before = commands.len();
    let mut failure = fails(&commands)?;
    let class = failure_class(&failure);
    let mut current = commands;
    let mut chunks = 2;
    while current.len() >= 2 && runs.get() < MAX_RUNS {
        let size = current.len().div_ceil(chunks);
        let mut reduced = false;
        for start in (0..current.len()).step_by(size) {
            let end = (start + size).min(current.len());
            let candidate: Vec<String> =
                current[..start].iter().chain(&current[end..]).cloned().collect();
            if let Some(f) = fails(&candidate).filter(|f| failure_class(f) == class) {
                (current, failure) = (candidate, f);
                chunks = (chunks - 1).max(2);
                reduced = true;
                break;
            }
        }
        if !reduced {
            if size == 1 {
                break;
            }
            chunks = (chunks * 2).min(current.len());
        }
    }
    // Then one `wait` for each run of waits, where the failure survives the merge.
    let mut i = 0;
    while i + 1 < current.len() && runs.get() < MAX_RUNS {
        if let (Some(a), Some(b)) = (wait_us(&current[i]), wait_us(&current[i + 1])) {
            let mut candidate = current.clone();
            candidate[i] = Command::Wait(Duration::from_micros(a + b)).to_string();
            candidate.remove(i + 1);
            if let Some(f) = fails(&candidate).filter(|f| failure_class(f) == class) {
                (current, failure) = (candidate, f);
                continue;
            }
        }
        i += 1;
    }
    let text = format!("{header}\n{}\n", current.join("\n"));
    Some(ShrunkScript { before, after: current.len(), text, failure, runs: runs.get() })
}
