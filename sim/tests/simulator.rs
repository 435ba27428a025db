//! The simulator end to end, for every replica count: fixed seeds pass, traces are pinned
//! and the same in two runs, the recorded script prints the run's trace, every planted
//! bug is caught with the replica counts it allows and its written reproducer fails the
//! same way when run alone.

use docsim::failure::FailureKind;
use docsim::report::write_run_report;
use docsim::run::{run, RunConfig};
use docsim_engine::canary::{Plant, Plants};
use docsim_workloads::Profile;
use std::path::PathBuf;
use std::process::Command;

fn config(seed: u64, replicas: usize, ops: usize) -> RunConfig {
    RunConfig::new(seed, replicas, ops)
}

#[test]
fn fixed_seeds_pass_in_every_profile_with_one_and_three_replicas() {
    for replicas in [1, 3] {
        let mut checked = 0;
        for profile in Profile::ALL {
            for seed in 0..3 {
                let outcome =
                    run(&RunConfig { profile: Some(profile), ..config(seed, replicas, 500) });
                if let Some(f) = &outcome.failure {
                    panic!(
                        "seed {seed} replicas {replicas} profile {}: {} expected {:?} got {:?}",
                        profile.name(),
                        f.op,
                        f.expected,
                        f.actual
                    );
                }
                // A run ends early only where the book expected it to: a restart refused
                // damage, or a read met a damaged SST block.
                let ended = outcome.faults.contains_key("ended-by-detected-damage");
                assert!(outcome.ops == 500 || ended, "seed {seed}: {} ops", outcome.ops);
                checked += outcome.checked_reads;
            }
        }
        assert!(checked > 2_000, "{replicas} replicas: the runs checked reads ({checked})");
    }
}

/// The traces of a few seeds, pinned: a change of behaviour (of the engine, the model, the
/// generator, the schedule or the nemesis) must show here, on purpose, with the new hashes
/// in its commit.
#[test]
fn traces_are_pinned() {
    let pinned = [
        (1, 1, None, 0x9aa3_5f7b_c715_f1ac),
        (2, 1, None, 0x8d66_090c_717c_ed92),
        (0x2a, 1, None, 0x706e_9d6c_fed0_8a38),
        (3, 1, Some(Profile::Cql), 0x2caa_dc21_f748_5245),
        (1, 3, None, 0x6e6e_f29a_abd2_4315),
        (3, 3, Some(Profile::Cql), 0xadda_9a9b_415e_1ed3),
        (5, 5, None, 0x0456_360e_c91d_0e37),
    ];
    let mut got = Vec::new();
    for (seed, replicas, profile, _) in pinned {
        let outcome = run(&RunConfig { profile, ..config(seed, replicas, 800) });
        assert!(outcome.failure.is_none(), "seed {seed} with {replicas} replicas passes");
        got.push((seed, replicas, profile, outcome.trace_hash));
    }
    let want: Vec<_> = pinned.to_vec();
    assert_eq!(got, want, "trace hashes (seed, replicas, profile, hash)");
}

#[test]
fn same_seed_same_trace() {
    for (seed, replicas) in [(3, 1), (17, 1), (3, 3), (4, 5)] {
        let kept = |seed| RunConfig { keep_trace: true, ..config(seed, replicas, 400) };
        let (a, b) = (run(&kept(seed)), run(&kept(seed)));
        assert_eq!(a.trace, b.trace, "seed {seed}, {replicas} replicas");
        assert_eq!(a.trace_hash, b.trace_hash);
        let other = run(&config(seed + 1, replicas, 400));
        assert_ne!(a.trace_hash, other.trace_hash, "different seeds, different runs");
    }
}

/// The run's script, run alone by `docsim script`, prints what the run printed: one
/// executor, and a header that sets the group up as the run did.
#[test]
fn the_recorded_script_prints_the_runs_trace() {
    for (seed, replicas) in [(6, 1), (6, 3), (7, 5)] {
        let outcome = run(&RunConfig { keep_trace: true, ..config(seed, replicas, 300) });
        assert!(outcome.failure.is_none(), "seed {seed}");
        // Each trace line: `#<step> <command> => <printed lines joined by " | ">`.
        let printed: Vec<&str> = outcome
            .trace
            .iter()
            .filter_map(|line| line.split_once(" => ").map(|(_, out)| out))
            .filter(|out| !out.is_empty())
            .collect();
        let header = docsim::run::header(&config(seed, replicas, 300));
        let text = header.iter().chain(&outcome.script).cloned().collect::<Vec<_>>().join("\n");
        let script = docsim::script::run_script(&text, Plants::NONE, Default::default());
        let lines: Vec<&str> = script.output.lines().collect();
        assert_eq!(lines.join(" | "), printed.join(" | "), "seed {seed} with {replicas} replicas");
        assert!(lines.len() > 100, "seed {seed}: {} lines", lines.len());
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
/// that stops at its TTL-only record; CQL for packed rows.
fn profile_for(plant: Plant) -> Option<Profile> {
    match plant {
        Plant::YbSeekStopsAtExpire => Some(Profile::Redis),
        // Raft's bug: a run of plain documents (one group per node) shrinks in seconds; a
        // CQL run's groups (a split table's tablets, three replicas each) in minutes.
        Plant::OrphansCommitted => Some(Profile::Nested),
        // Only CQL tables are split into tablets: many tablets hold writes at once.
        Plant::RouteFirstHashColumn | Plant::MemstoreFlushesNewest => Some(Profile::Cql),
        // Only CQL SELECTs have conditions on clustering columns, and only they are read
        // in pages (long scans among them).
        Plant::YbPruneSwappedInclusivity | Plant::CutoffIgnoresReads | Plant::PageFreshReadTime => {
            Some(Profile::Cql)
        }
        // Only CQL tables have snapshots to restore.
        Plant::RestoreLeavesFrontier => Some(Profile::Cql),
        // Since full compactions reclaim expired entries, a minor compaction meets one
        // only between its expiry and the next full compaction: TTL-heavy runs.
        Plant::YbMinorGcDropsTtl | Plant::GcKeepsExpired => Some(Profile::TtlHeavy),
        p if p.needs_packed_rows() => Some(Profile::Cql),
        _ => None,
    }
}

/// A plant's run configuration: packed-row bugs run with every table packed.
fn plant_config(seed: u64, replicas: usize, ops: usize, plant: Plant) -> RunConfig {
    let mut config = RunConfig {
        profile: profile_for(plant),
        plant: Some(plant),
        ..config(seed, replicas, ops)
    };
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

/// The first seed (2,000 ops, one replica) that catches `torn-header-is-corruption`.
const TORN_HEADER_SEED: u64 = 692;

/// The first seeds (2,000 ops, three replicas) that catch two rare replicated plants.
const HT_NOT_PROPAGATED_SEED: u64 = 13;
const VOTE_NOT_SYNCED_SEED: u64 = 454;

/// The first seed of `cfg` that fails, within the bound.
fn caught(plant: Plant, cfg: impl Fn(u64) -> RunConfig) -> docsim::run::RunOutcome {
    (0..SEEDS_BOUND)
        .map(|seed| run(&cfg(seed)))
        .find(|o| o.failure.is_some())
        .unwrap_or_else(|| panic!("{} not caught in {SEEDS_BOUND} seeds", plant.name()))
}

/// Every plant that is not rare, with the fewest replicas it allows; its reproducer,
/// written as a failing run writes it, fails alone with the bug (and for a group of one,
/// passes without).
#[test]
fn every_planted_bug_is_caught_and_its_reproducer_fails_alone() {
    for plant in Plant::ALL.into_iter().filter(|p| !p.rare()) {
        let replicas = plant.replicas()[0];
        let cfg = |seed| plant_config(seed, replicas, 1_000, plant);
        let outcome = caught(plant, cfg);
        let dir = scratch(plant.name());
        let run_dir = write_run_report(&dir, &outcome, &cfg(outcome.seed)).expect("report written");
        let repro = run_dir.join("repro.ds");
        let repro = repro.to_str().expect("utf-8 path");
        let with_bug = docsim(&["script", "--plant", plant.name(), repro]);
        let stdout = String::from_utf8_lossy(&with_bug.stdout);
        assert!(!with_bug.status.success(), "{}: reproducer passed", plant.name());
        // It fails on its expectation: an `expect` line, a check, or (for a write the
        // engine refused, which the reproducer expects to succeed) that write's error.
        let kind = outcome.failure.as_ref().map(|f| f.kind);
        let on_expectation = stdout.lines().any(|l| {
            l.contains(": expected `")
                || (l.starts_with("check: ") && l != "check: ok")
                || (kind == Some(FailureKind::RefusedWrite) && l.starts_with("error: "))
        });
        assert!(on_expectation, "{}: fails on the expectation:\n{stdout}", plant.name());
        // Without the bug, a group of one's reproducer passes: its script is a function of
        // its text. A replicated one's need not: the bug changed when replicas answered,
        // and the same script without it is another run.
        if replicas == 1 {
            let without = docsim(&["script", repro]);
            let out = String::from_utf8_lossy(&without.stdout);
            assert!(
                without.status.success(),
                "{}: clean engine fails the reproducer:\n{out}",
                plant.name()
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The single-node bugs are caught with three replicas too: the seed (of 1,000 ops) that
/// first caught each with three replicas in the campaign `docs/findings.md` reports.
#[test]
fn single_node_plants_are_caught_with_three_replicas() {
    let found = [
        (Plant::TtlOffByOne, 6),
        (Plant::GcIgnoresCutoff, 9),
        (Plant::ReplayOneLate, 0),
        (Plant::MissingInitMarker, 1),
        (Plant::GcKeepsTombstones, 0),
        (Plant::RepackDropsNewerUpdate, 55),
    ];
    for (plant, seed) in found {
        let clean = RunConfig { plant: None, ..plant_config(seed, 3, 1_000, plant) };
        assert!(run(&clean).failure.is_none(), "seed {seed} is clean");
        let outcome = run(&plant_config(seed, 3, 1_000, plant));
        assert!(outcome.failure.is_some(), "{} not caught by seed {seed}", plant.name());
    }
}

#[test]
fn a_plant_the_replica_count_cannot_show_is_refused() {
    let out = docsim(&["run", "--seed", "1", "--plant", "vote-not-synced"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--plant vote-not-synced needs --replicas 3 or 5 (it cannot show with 1)"),
        "{stderr}"
    );
    let out =
        docsim(&["run", "--seed", "1", "--replicas", "3", "--plant", "skipped-segments-unchecked"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn determinism_check_runs_two_processes() {
    for (seed, replicas) in [("7", "1"), ("0x2a", "1"), ("7", "3"), ("7", "5")] {
        let out = docsim(&[
            "run",
            "--seed",
            seed,
            "--replicas",
            replicas,
            "--ops",
            "300",
            "--check-determinism",
        ]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "seed {seed}: {stdout}");
        assert!(stdout.contains(&format!("replicas={replicas} ops=300")), "{stdout}");
        assert!(stdout.contains("PASS"), "{stdout}");
    }
}

#[test]
fn run_prints_banner_and_pass() {
    let out = docsim(&["run", "--seed", "5", "--ops", "200", "--replicas", "3"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.starts_with("docsim run seed=5 (0x0000000000000005) commit="), "{stdout}");
    assert!(stdout.contains("replicas=3 ops=200\n"), "{stdout}");
    assert!(stdout.contains("\nknobs: replicas=3 profile="), "{stdout}");
    assert!(stdout.contains("PASS seed=5 replicas=3"), "{stdout}");
}

#[test]
fn failure_block_names_seed_step_and_reproduce_command() {
    let plant = Plant::ExclusiveCutoff;
    let seed = caught(plant, |seed| plant_config(seed, 1, 1_000, plant)).seed;
    let dir = scratch("block");
    let dir_arg = dir.to_str().expect("utf-8");
    let seed_arg = seed.to_string();
    let args = ["run", "--seed", &seed_arg, "--ops", "1000", "--plant", plant.name()];
    let out = docsim(&[&args[..], &["--reports", dir_arg]].concat());
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
        "  shrink: docsim shrink ",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in\n{stdout}");
    }
    assert!(dir.join(&seed_arg).join("repro.ds").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn shrinking_each_planted_bug_yields_a_short_reproducer() {
    // Rare plants' paths need more ops; their hand-made reproducers are in
    // tests/regressions/. The replicated ones shrink with three replicas.
    for plant in Plant::ALL.into_iter().filter(|p| !p.rare()) {
        let replicas = plant.replicas()[0];
        let cfg = |seed| plant_config(seed, replicas, 1_000, plant);
        // A replicated run's shrink can spend its budget on timing (waits, and reads that
        // move clocks) before it gets short: the shortest of the first three catches.
        let tries = if replicas > 1 { 3 } else { 1 };
        let failures = (0..SEEDS_BOUND).map(|seed| run(&cfg(seed))).filter(|o| o.failure.is_some());
        let mut shortest: Option<docsim::shrink::Shrunk> = None;
        for failed in failures.take(tries) {
            let failure = failed.failure.expect("a failure");
            let steps = failure.steps.clone();
            let shrunk = docsim::shrink::shrink(steps, failure.kind, &cfg(failed.seed))
                .unwrap_or_else(|| panic!("{}: the failure replays", plant.name()));
            assert_eq!(shrunk.failure.kind, failure.kind, "same fingerprint");
            if shortest.as_ref().is_none_or(|s| shrunk.after < s.after) {
                shortest = Some(shrunk);
            }
        }
        let shrunk = shortest
            .unwrap_or_else(|| panic!("{} not caught in {SEEDS_BOUND} seeds", plant.name()));
        // A log-GC bug needs writes enough to fill three log segments (1 KiB each) or a
        // memstore limit; a replicated bug its elections and waits.
        let bound = match plant {
            // Its first seed draws a 16 KiB memstore limit: the failure follows a memory
            // flush, after the writes that fill it.
            Plant::LogGcPastFrontier => 80,
            // The memstore limit flushes once a few KiB of writes wait in several tablets.
            Plant::MemstoreFlushesNewest => 100,
            // Lost RocksDB files are refused only once log GC ran: writes enough to fill
            // a log segment, a flush, then the loss.
            Plant::FrontierZeroTrusted => 40,
            p if p.replicas()[0] > 1 => 100,
            _ => 14,
        };
        let after = shrunk.after;
        assert!(after <= bound, "{}: {after} steps after shrinking", plant.name());
        assert!(shrunk.after < shrunk.before);
    }
}

/// Each rare plant is caught by the seed (of the default 2,000 ops) that first caught it
/// in the campaign `docs/findings.md` reports, with the fewest replicas it allows: the
/// rare path is still reached, and still checked. A plant rarer than a campaign finds
/// again in minutes has its hand-made reproducer in `tests/regressions/` instead
/// (`canary_<plant>.ds`).
#[test]
fn rare_plants_are_caught_by_the_seeds_that_found_them() {
    let found = [
        (Plant::TornHeaderIsCorruption, TORN_HEADER_SEED),
        (Plant::SkippedSegmentsUnchecked, 83),
        (Plant::GcTakesFirstNeededSegment, 1),
        (Plant::FrontierWrittenApart, 1),
        (Plant::YbMinorGcDropsTtl, 23),
        (Plant::CutoffIgnoresSafeTime, 90889),
        (Plant::ReadsPastLease, 302),
        (Plant::HtNotPropagated, HT_NOT_PROPAGATED_SEED),
        (Plant::VoteNotSynced, VOTE_NOT_SYNCED_SEED),
    ];
    let regressions = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions");
    for plant in Plant::ALL.into_iter().filter(|p| p.rare()) {
        let canary = regressions.join(format!("canary_{}.ds", plant.name().replace('-', "_")));
        assert!(
            found.iter().any(|(p, _)| *p == plant) || canary.exists(),
            "{}: no seed and no canary reproducer",
            plant.name()
        );
    }
    for (plant, seed) in found {
        let replicas = plant.replicas()[0];
        assert!(run(&config(seed, replicas, 2_000)).failure.is_none(), "seed {seed} is clean");
        let caught = run(&RunConfig { plant: Some(plant), ..config(seed, replicas, 2_000) });
        assert!(caught.failure.is_some(), "{} not caught by seed {seed}", plant.name());
    }
}

/// Issue 16's metamorphic check: block size, bloom filters, snappy and the packed-row
/// layout never change a trace (CQL seeds included, where rows are packed), with one
/// replica or three. A run of a shorter op stream stands in for a configuration that does,
/// to show the comparison can fail.
#[test]
fn storage_configurations_give_identical_traces() {
    use docsim::metamorphic::{divergences, run_set};
    let seeds = (0..4).flat_map(|seed| [(seed, None), (seed, Some(Profile::Cql))]);
    for replicas in [1, 3] {
        for (seed, profile) in seeds.clone() {
            let runs = run_set(&RunConfig { profile, ..config(seed, replicas, 300) });
            // Every configuration, and the default a second time without byte-placed faults.
            assert_eq!(runs.len(), docsim_engine::StorageConfig::SET.len() + 1);
            let failed = runs.iter().find_map(|r| r.outcome.failure.as_ref());
            assert!(failed.is_none(), "seed {seed} {profile:?} {replicas}: {failed:?}");
            assert_eq!(divergences(&runs), vec![], "seed {seed} {profile:?} {replicas} replicas");
        }
    }
    let mut runs = run_set(&config(5, 1, 300));
    let shorter = RunConfig { keep_trace: true, ..config(5, 1, 290) };
    runs.last_mut().expect("a run").outcome = run(&shorter);
    let found = divergences(&runs);
    assert_eq!(found.len(), 1, "the shorter run differs: {found:?}");
    let set = docsim_engine::StorageConfig::SET;
    assert_eq!(found[0].config, set[set.len() - 1]);
}

/// A run with a table ends with its last snapshot exported as a backup and imported into
/// a fresh node, read against the model (`check/backup.rs`): with one replica and three,
/// the check runs, and every tablet is restored from the backup.
#[test]
fn runs_with_tables_check_a_backup_at_their_end() {
    for replicas in [1, 3] {
        let config = RunConfig { profile: Some(Profile::Cql), ..config(3, replicas, 400) };
        let outcome = run(&config);
        assert!(outcome.failure.is_none(), "{replicas} replicas: {:?}", outcome.failure);
        let probe = |name: &str| outcome.probes.get(name).copied().unwrap_or(0);
        assert_eq!(probe("backup.imported"), 1, "{replicas} replicas: {:?}", outcome.probes);
        assert!(probe("restore.from_backup") >= 1, "{replicas} replicas");
        // RocksDB's in-memory environment keeps no snapshot: no final one, no backup.
        let in_memory = run(&RunConfig { rocks_in_memory: true, ..config.clone() });
        assert!(in_memory.failure.is_none(), "{replicas}: {:?}", in_memory.failure);
        assert_eq!(in_memory.probes.get("backup.imported"), None);
    }
}

/// A snapshot whose checkpoint a bit flip damaged is refused at export (every entry is
/// read from the files, past the node's block cache, which held the blocks of the live
/// copies), not carried into a backup whose checksums would vouch for it; the check then
/// takes an earlier snapshot. Seed 98546 (one replica, `--config 1`) found it: the import
/// met a block checksum mismatch.
#[test]
fn a_damaged_snapshot_is_refused_at_export_and_an_earlier_one_checked() {
    let storage = docsim_engine::StorageConfig::SET[1];
    let outcome = run(&RunConfig { storage, ..config(98546, 1, 1000) });
    assert!(outcome.failure.is_none(), "{:?}", outcome.failure);
    let probe = |name: &str| outcome.probes.get(name).copied().unwrap_or(0);
    assert_eq!(
        outcome.faults.get("backup-export-refused-damage"),
        Some(&1),
        "{:?}",
        outcome.faults
    );
    assert_eq!(probe("backup.imported"), 1, "{:?}", outcome.probes);
}

/// A snapshot cut by a full disk in its own files (its record, after the checkpoint) had
/// made its flush durable first: the durability book counts that flush, and the restart
/// replays nothing it flushed. Seed 108588 (one replica, `--config 2`) failed `restart`
/// before the book knew.
#[test]
fn a_snapshot_cut_in_its_own_files_made_its_flush_durable() {
    let storage = docsim_engine::StorageConfig::SET[2];
    let outcome = run(&RunConfig { storage, ..config(108588, 1, 1000) });
    assert!(outcome.failure.is_none(), "{:?}", outcome.failure);
}
