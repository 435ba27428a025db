//! A short torture campaign as tests: the tests the mutation job gives cargo-mutants to
//! measure what the simulator alone catches (without the unit and golden tests). Ignored
//! in the ordinary suite (the CI smoke runs torture already); run them with
//! `cargo test -p docsim --test torture -- --ignored`. Two tests, one campaign runner,
//! which the test harness runs side by side:
//!
//! - groups of one: `DOCSIM_TORTURE_S` sets their length in seconds (default 60),
//!   `DOCSIM_TORTURE_JOBS` their worker threads (default 1);
//! - groups of three with the nemesis: `DOCSIM_CLUSTER_S` seconds (default 60): only they
//!   reach what only replicas do (snapshot installs, a leader overwriting a follower's
//!   log tail, reads at followers' safe times).

use docsim::campaign::{torture, Campaign};
use docsim::run::RunConfig;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn campaign(replicas: usize, seconds_var: &str) -> docsim_reports::CampaignReport {
    let reports =
        std::env::temp_dir().join(format!("docsim-mutants-{replicas}-{}", std::process::id()));
    let campaign = Campaign {
        first: 0,
        end: None,
        duration_s: Some(env_number(seconds_var, 60) as f64),
        jobs: env_number("DOCSIM_TORTURE_JOBS", 1) as usize,
        shard: (0, 1),
        template: RunConfig::new(0, replicas, 1_000),
        draw_storage: true,
        reports_dir: reports.clone(),
    };
    let report = torture(&campaign);
    let _ = std::fs::remove_dir_all(&reports);
    report
}

fn no_failure(report: &docsim_reports::CampaignReport) {
    let totals = report.totals();
    assert!(totals.seeds > 0 && totals.checked_reads > 0, "the campaign ran");
    let failed: Vec<u64> =
        report.runs.iter().filter(|r| r.failure.is_some()).map(|r| r.seed).collect();
    assert!(failed.is_empty(), "{} of {} seeds failed: {failed:?}", failed.len(), totals.seeds);
}

#[test]
#[ignore = "the mutation job's test: cargo test -p docsim --test torture -- --ignored"]
fn a_short_torture_finds_no_failure() {
    no_failure(&campaign(1, "DOCSIM_TORTURE_S"));
}

#[test]
#[ignore = "the mutation job's test: cargo test -p docsim --test torture -- --ignored"]
fn a_short_replicated_torture_finds_no_failure() {
    let report = campaign(3, "DOCSIM_CLUSTER_S");
    no_failure(&report);
    let installed: u64 =
        report.runs.iter().filter_map(|r| r.replication.get("snapshots_installed")).sum();
    assert!(installed > 0, "no replica installed a snapshot in {} seeds", report.runs.len());
}
