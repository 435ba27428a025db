//! A short torture campaign as a test: the test the mutation job gives cargo-mutants to
//! measure what the simulator alone catches (without the unit and golden tests). Ignored
//! in the ordinary suite (the CI smoke runs torture already); run it with
//! `cargo test -p docsim --test torture -- --ignored`. `DOCSIM_TORTURE_S` sets its length
//! in seconds (default 60), `DOCSIM_TORTURE_JOBS` its worker threads (default 1).

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
