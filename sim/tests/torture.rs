//! A short torture campaign as tests: the tests the mutation job gives cargo-mutants to
//! measure what the simulator alone catches (without the unit and golden tests). Ignored
//! in the ordinary suite (the CI smoke runs torture already); run them with
//! `cargo test -p docsim --test torture -- --ignored`. Two tests, which the test harness
//! runs side by side:
//!
//! - one-node seeds (`docsim torture`): `DOCSIM_TORTURE_S` sets their length in seconds
//!   (default 60), `DOCSIM_TORTURE_JOBS` their worker threads (default 1);
//! - replicated seeds, three replicas with faults (`docsim cluster`), one after another
//!   until `DOCSIM_CLUSTER_S` seconds have passed (default 60): only they reach what only
//!   replicas do (snapshot installs, a leader overwriting a follower's log tail).

use docsim::bench::Stopwatch;
use docsim::cluster::{campaign, ClusterConfig};
use docsim::simulate::RunConfig;
use docsim::torture::{torture, Campaign};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
#[ignore = "the mutation job's test: cargo test -p docsim --test torture -- --ignored"]
fn a_short_torture_finds_no_failure() {
    let reports = std::env::temp_dir().join(format!("docsim-mutants-{}", std::process::id()));
    let campaign = Campaign {
        first: 0,
        end: None,
        duration_s: Some(env_number("DOCSIM_TORTURE_S", 60) as f64),
        jobs: env_number("DOCSIM_TORTURE_JOBS", 1) as usize,
        shard: (0, 1),
        template: RunConfig::new(0, 1_000),
        draw_storage: true,
        reports_dir: reports.clone(),
    };
    let report = torture(&campaign);
    let _ = std::fs::remove_dir_all(&reports);
    let totals = report.totals();
    assert!(totals.seeds > 0 && totals.checked_reads > 0, "the campaign ran");
    let failed: Vec<u64> =
        report.runs.iter().filter(|r| r.failure.is_some()).map(|r| r.seed).collect();
    assert!(failed.is_empty(), "{} of {} seeds failed: {failed:?}", failed.len(), totals.seeds);
}

#[test]
#[ignore = "the mutation job's test: cargo test -p docsim --test torture -- --ignored"]
fn a_short_replicated_torture_finds_no_failure() {
    let duration_s = env_number("DOCSIM_CLUSTER_S", 60) as f64;
    let template = ClusterConfig {
        seed: 0,
        replicas: 3,
        ops: 1_000,
        faults: true,
        plants: docsim_engine::canary::Plants::NONE,
    };
    // The seeds run on a worker thread, so that a seed that hangs (a loop that never ends
    // inside a replica) fails the test instead of stalling it: a seed takes tens of
    // milliseconds.
    // The worker stops at its next seed once the test is done with `outcomes`.
    let (send, outcomes) = mpsc::channel();
    std::thread::spawn(move || {
        for seed in 0.. {
            let outcome = campaign(seed, seed + 1, 1, &template).remove(0);
            if send.send(outcome).is_err() {
                return;
            }
        }
    });
    let watch = Stopwatch::start();
    let (mut seeds, mut committed, mut snapshots, mut finished) = (0, 0, 0, 0);
    while seeds == 0 || watch.seconds() < duration_s {
        let outcome = match outcomes.recv_timeout(Duration::from_secs(SEED_LIMIT_S)) {
            Ok(outcome) => outcome,
            Err(RecvTimeoutError::Timeout) => {
                panic!("replicated seed {seeds} still running after {SEED_LIMIT_S} s")
            }
            Err(RecvTimeoutError::Disconnected) => panic!("the worker died on seed {seeds}"),
        };
        assert!(outcome.failure.is_none(), "seed {seeds} failed: {:?}", outcome.failure);
        committed += outcome.committed;
        snapshots += outcome.snapshots_installed;
        finished += outcome.installs_finished_at_boot;
        seeds += 1;
    }
    drop(outcomes);
    assert!(committed > 0, "the replicated seeds committed writes");
    assert!(snapshots > 0, "no replica installed a snapshot in {seeds} seeds");
    eprintln!(
        "{seeds} replicated seeds: {committed} committed, {snapshots} snapshots installed, \
         {finished} installs finished at boot"
    );
}

/// A replicated seed takes tens of milliseconds; one still running after this long hangs.
const SEED_LIMIT_S: u64 = 30;
