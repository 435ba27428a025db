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
    let watch = Stopwatch::start();
    let (mut seeds, mut committed, mut snapshots, mut finished) = (0, 0, 0, 0);
    while seeds == 0 || watch.seconds() < duration_s {
        let outcome = campaign(seeds, seeds + 1, 1, &template).remove(0);
        assert!(outcome.failure.is_none(), "seed {seeds} failed: {:?}", outcome.failure);
        committed += outcome.committed;
        snapshots += outcome.snapshots_installed;
        finished += outcome.installs_finished_at_boot;
        seeds += 1;
    }
    assert!(committed > 0, "the replicated seeds committed writes");
    eprintln!(
        "{seeds} replicated seeds: {committed} committed, {snapshots} snapshots installed, \
         {finished} installs finished at boot"
    );
}
