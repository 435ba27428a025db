//! The simulator end to end: fixed seeds pass, every planted bug is caught within a
//! bounded number of seeds, and its written reproducer fails the same way when run alone.

use docsim::report::write_run_report;
use docsim::simulate::{run, FailureKind, RunConfig};
use docsim_engine::canary::Plant;
use docsim_workloads::Profile;
use std::path::PathBuf;
use std::process::Command;

fn config(seed: u64, ops: usize, profile: Option<Profile>, plant: Option<Plant>) -> RunConfig {
    RunConfig { profile, plant, ..RunConfig::new(seed, ops) }
}

#[test]
fn fixed_seeds_pass_in_every_profile() {
    let mut checked = 0;
    for profile in Profile::ALL {
        for seed in 0..6 {
            let outcome = run(&config(seed, 600, Some(profile), None));
            if let Some(f) = &outcome.failure {
                panic!(
                    "seed {seed} profile {}: {} expected {:?} got {:?}",
                    profile.name(),
                    f.op,
                    f.expected,
                    f.actual
                );
            }
            assert_eq!(outcome.ops, 600);
            checked += outcome.checked_reads;
        }
    }
    assert!(checked > 3_000, "the runs checked reads ({checked})");
}

/// A run whose last operation fires a crash still restarts and re-checks before it ends:
/// seed 20531 (2,000 ops) spends its last op on a write that an armed `after-apply` crash
/// cuts, and its 22nd restart is compared with the book like every other.
#[test]
fn a_run_ending_on_a_crash_restarts_before_it_ends() {
    let outcome = run(&config(20531, 2000, None, None));
    assert!(outcome.failure.is_none(), "seed 20531 passes");
    assert_eq!((outcome.ops, outcome.crashes, outcome.restarts), (2000, 22, 22));
}

/// The traces of a few seeds, pinned: a change of behaviour (of the engine, the model, the
/// generator or the schedule) must show here, on purpose, with the new hashes in its commit.
#[test]
fn traces_are_pinned() {
    let pinned =
        [(1, 0xea30_0d49_bcd8_6464), (2, 0x7e41_d478_c397_aa65), (0x2a, 0x3bac_073f_1581_046e)];
    for (seed, hash) in pinned {
        let outcome = run(&config(seed, 800, None, None));
        assert!(outcome.failure.is_none(), "seed {seed} passes");
        assert_eq!(outcome.trace_hash, hash, "seed {seed}: trace hash {:016x}", outcome.trace_hash);
    }
    // A CQL-profile seed: lists, jsonb, every key type.
    let cql = run(&config(3, 800, Some(Profile::Cql), None));
    assert!(cql.failure.is_none(), "CQL seed 3 passes");
    assert_eq!(cql.trace_hash, 0x8454_0be6_2223_08cd, "CQL seed 3: {:016x}", cql.trace_hash);
}

#[test]
fn same_seed_same_trace() {
    for seed in [3, 17] {
        let a = run(&RunConfig { keep_trace: true, ..config(seed, 400, None, None) });
        let b = run(&RunConfig { keep_trace: true, ..config(seed, 400, None, None) });
        assert_eq!(a.trace, b.trace, "seed {seed}");
        assert_eq!(a.trace_hash, b.trace_hash);
        let other = run(&config(seed + 1, 400, None, None));
        assert_ne!(a.trace_hash, other.trace_hash, "different seeds, different runs");
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("docsim-canary-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn docsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_docsim")).args(args).output().expect("docsim runs")
}

/// The profile a plant's path lives in, when only one has it: Redis EXPIRE for the seek
/// that stops at its TTL-only record (the default torture, which gives Redis one seed in
/// five, catches it in 12 of 300 seeds of 2,000 ops; README).
fn profile_for(plant: Plant) -> Option<Profile> {
    match plant {
        Plant::YbSeekStopsAtExpire => Some(Profile::Redis),
        p if p.needs_packed_rows() => Some(Profile::Cql),
        _ => None,
    }
}

/// A plant's run configuration: packed-row bugs run with every table packed.
fn plant_config(seed: u64, ops: usize, plant: Plant) -> RunConfig {
    let mut config = config(seed, ops, profile_for(plant), Some(plant));
    if plant.needs_packed_rows() {
        let layout = match plant.needs_entity_rows() {
            true => docsim_engine::Layout::Entity,
            false => docsim_engine::Layout::Packed,
        };
        let set = docsim_engine::StorageConfig::SET;
        config.storage = *set.iter().find(|s| s.layout == layout).expect("in the set");
    }
    config
}

/// Within this many seeds of 1,000 operations each planted bug must be caught.
const SEEDS_BOUND: u64 = 40;

#[test]
fn every_planted_bug_is_caught_and_its_reproducer_fails_alone() {
    // Rare plants: `rare_plants_are_caught_by_the_seeds_that_found_them` below.
    for plant in Plant::ALL.into_iter().filter(|p| !p.rare()) {
        let cfg = |seed| plant_config(seed, 1_000, plant);
        let caught = (0..SEEDS_BOUND).map(|seed| run(&cfg(seed))).find(|o| o.failure.is_some());
        let outcome =
            caught.unwrap_or_else(|| panic!("{} not caught in {SEEDS_BOUND} seeds", plant.name()));
        let dir = scratch(plant.name());
        let run_dir = write_run_report(&dir, &outcome, &cfg(outcome.seed)).expect("report written");
        let repro = run_dir.join("repro.ds");
        let repro = repro.to_str().expect("utf-8 path");
        // Alone, with the bug planted, the reproducer fails on its expectation...
        let with_bug = docsim(&["script", "--plant", plant.name(), repro]);
        let stdout = String::from_utf8_lossy(&with_bug.stdout);
        assert!(!with_bug.status.success(), "{}: reproducer passed", plant.name());
        // It fails on its expectation: an `expect` line, or for a write the engine refused
        // (which the reproducer expects to succeed), that write's error.
        let last = stdout.lines().last().unwrap_or_default();
        let kind = outcome.failure.as_ref().map(|f| f.kind);
        let refused = kind == Some(FailureKind::EngineRefusedWrite) && last.starts_with("error: ");
        assert!(
            last.contains("expected `") || refused,
            "{}: fails on the expectation, got {last}",
            plant.name()
        );
        // ...and without it, the same script passes: the failure is the bug's.
        let without = docsim(&["script", repro]);
        assert!(without.status.success(), "{}: clean engine fails the reproducer", plant.name());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn determinism_check_runs_two_processes() {
    for seed in ["7", "0x2a"] {
        let out = docsim(&["run", "--seed", seed, "--ops", "300", "--check-determinism"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "seed {seed}: {stdout}");
        assert!(stdout.contains("PASS"), "{stdout}");
    }
}

#[test]
fn run_prints_banner_and_pass() {
    let out = docsim(&["run", "--seed", "5", "--ops", "200"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(stdout.starts_with("docsim run seed=5 (0x0000000000000005) commit="), "{stdout}");
    assert!(stdout.contains("\nknobs: profile="), "{stdout}");
    assert!(stdout.contains("PASS seed=5"), "{stdout}");
}

#[test]
fn failure_block_names_seed_step_and_reproduce_command() {
    let plant = Plant::ExclusiveCutoff;
    let seed = (0..SEEDS_BOUND)
        .find(|&seed| run(&config(seed, 1_000, None, Some(plant))).failure.is_some())
        .expect("caught");
    let dir = scratch("block");
    let dir_arg = dir.to_str().expect("utf-8");
    let seed_arg = seed.to_string();
    let out = docsim(&[
        "run",
        "--seed",
        &seed_arg,
        "--ops",
        "1000",
        "--plant",
        plant.name(),
        "--reports",
        dir_arg,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    let reproduce =
        format!("  reproduce: docsim run --seed {seed} --ops 1000 --plant {}", plant.name());
    for needle in [
        &format!("FAIL seed={seed} commit="),
        "  op:",
        "  expected:",
        "  actual:",
        "  last operations:",
        &reproduce,
        "repro.ds",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in\n{stdout}");
    }
    assert!(dir.join(&seed_arg).join("repro.ds").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn shrinking_each_planted_bug_yields_a_short_reproducer() {
    // Rare plants' paths need more ops (README, "Planted bugs"); their hand-made
    // reproducers are in tests/regressions/.
    for plant in Plant::ALL.into_iter().filter(|p| !p.rare()) {
        let cfg = |seed| plant_config(seed, 1_000, plant);
        let failed = (0..SEEDS_BOUND).map(|seed| run(&cfg(seed))).find(|o| o.failure.is_some());
        let failed = failed.expect("caught");
        let (seed, failure) = (failed.seed, failed.failure.expect("a failure"));
        let storage = cfg(seed).storage;
        let shrunk =
            docsim::shrink::shrink(failure.ops.clone(), failure.kind, Some(plant), seed, storage)
                .unwrap_or_else(|| panic!("{}: the failure replays", plant.name()));
        assert_eq!(shrunk.failure.kind, failure.kind, "same fingerprint");
        // A log-GC bug needs writes enough to fill three log segments (1 KiB each).
        let bound = if plant == Plant::LogGcPastFrontier { 32 } else { 12 };
        let after = shrunk.after;
        assert!(after <= bound, "{}: {after} ops after shrinking", plant.name());
        assert!(shrunk.after < shrunk.before);
    }
}

/// Each rare plant is caught by the seed (of the default 2,000 ops) that first caught it
/// in the campaign the README reports: the rare path is still reached, and still checked.
#[test]
fn rare_plants_are_caught_by_the_seeds_that_found_them() {
    let found = [
        (Plant::TornHeaderIsCorruption, 298),
        (Plant::SkippedSegmentsUnchecked, 260),
        (Plant::GcTakesFirstNeededSegment, 4),
        (Plant::YbBatchCacheKeepsOverwritten, 600113),
    ];
    assert_eq!(found.len(), Plant::ALL.iter().filter(|p| p.rare()).count());
    for (plant, seed) in found {
        assert!(run(&config(seed, 2_000, None, None)).failure.is_none(), "seed {seed} is clean");
        let caught = run(&config(seed, 2_000, None, Some(plant)));
        assert!(caught.failure.is_some(), "{} not caught by seed {seed}", plant.name());
    }
}

/// Issue 16's metamorphic check: block size, bloom filters, snappy and the packed-row
/// layout never change a trace (CQL seeds included, where rows are packed). A run of a
/// shorter op stream stands in for a configuration that does, to show the comparison can
/// fail.
#[test]
fn storage_configurations_give_identical_traces() {
    use docsim::metamorphic::{divergences, run_set};
    let seeds = (0..6).map(|seed| (seed, None)).chain((0..6).map(|s| (s, Some(Profile::Cql))));
    for (seed, profile) in seeds {
        let runs = run_set(&config(seed, 300, profile, None));
        // Every configuration, and the default a second time without byte-placed faults.
        assert_eq!(runs.len(), docsim_engine::StorageConfig::SET.len() + 1);
        assert!(runs.iter().all(|r| r.outcome.failure.is_none()), "seed {seed} {profile:?}");
        assert_eq!(divergences(&runs), vec![], "seed {seed} {profile:?}");
    }
    let mut runs = run_set(&config(5, 300, None, None));
    let shorter = RunConfig { keep_trace: true, ..config(5, 290, None, None) };
    runs.last_mut().expect("a run").outcome = run(&shorter);
    let found = divergences(&runs);
    assert_eq!(found.len(), 1, "the shorter run differs: {found:?}");
    let set = docsim_engine::StorageConfig::SET;
    assert_eq!(found[0].config, set[set.len() - 1]);
}
