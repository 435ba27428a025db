//! The regression corpus: every `tests/regressions/*.ds` — minimal reproducers written by
//! `docsim shrink` or by hand — must run clean through the simulator's executor (their
//! `expect` lines hold; a replicated script's history check says `ok`). Adding one is
//! copying a file into the folder. A `canary_<plant>.ds` reproduces a planted bug: with
//! that bug planted it must fail on one of its `expect` lines or on the history check
//! (else it tests nothing).

use docsim_engine::canary::{Plant, Plants};
use docsim_engine::StorageConfig;
use std::path::{Path, PathBuf};

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("regressions");
    let mut scripts: Vec<_> = std::fs::read_dir(&dir)
        .expect("regressions folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ds"))
        .collect();
    scripts.sort();
    scripts
}

fn run(script: &Path, plants: Plants) -> docsim::script::ScriptRun {
    let text = std::fs::read_to_string(script).expect("script");
    docsim::script::run_script(&text, plants, StorageConfig::default())
}

#[test]
fn regression_corpus_runs_clean() {
    let scripts = corpus();
    assert!(scripts.len() >= 8, "the corpus holds {} scripts", scripts.len());
    let failures: Vec<String> = scripts
        .iter()
        .map(|script| (script, run(script, Plants::NONE)))
        .filter(|(_, run)| !run.ok())
        .map(|(script, run)| format!("{}:\n{}", script.display(), run.output))
        .collect();
    assert!(failures.is_empty(), "regressions fail:\n{}", failures.join("\n"));
}

#[test]
fn canary_reproducers_fail_with_their_bug_planted() {
    let mut checked = Vec::new();
    for path in corpus() {
        let name = path.file_stem().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        let Some(plant_name) = name.strip_prefix("canary_") else { continue };
        let plant = Plant::from_name(&plant_name.replace('_', "-"))
            .unwrap_or_else(|| panic!("{name}: no plant named {plant_name}"));
        let run = run(&path, Plants::of(Some(plant)));
        assert!(!run.ok(), "{name} passes with {} planted:\n{}", plant.name(), run.output);
        let failed_on = run.output.lines().find(|l| {
            l.contains(": expected `") || (l.starts_with("check: ") && *l != "check: ok")
        });
        assert!(failed_on.is_some(), "{name} fails on an expectation or a check:\n{}", run.output);
        checked.push(plant);
    }
    assert!(checked.len() >= 12, "canary reproducers checked: {checked:?}");
}

/// A power cut after each disk operation of a restore, in turn, then a restart: the
/// tablet opens (its old instance, or the restored one with the swap finished), replay
/// applies what the flushed frontier does not hold, and the table reads as restored, the
/// writes after the restore included. For a restore to a snapshot and to a time (from the
/// live data); past the restore's last operation the cut falls after it.
#[test]
fn a_power_cut_anywhere_in_a_restore_leaves_the_old_state_or_the_restored_one() {
    let rows = ["(k: 1i32, v: \"a\")", "(k: 4i32, v: \"d\")", "(2 rows)"];
    for target in ["s1 t", "t to T250"] {
        let mut restored_by_replay = 0;
        for k in 1..=80 {
            let text = format!(
                "table CREATE TABLE t (k int, v text, PRIMARY KEY ((k)))\n\
                 cql @T100 INSERT INTO t (k, v) VALUES (1, 'a')\n\
                 snapshot create s1 t @T200\n\
                 cql @T300 UPDATE t SET v = 'A' WHERE k = 1\n\
                 cql @T300 INSERT INTO t (k, v) VALUES (3, 'c')\n\
                 crash at in-restore op={k}\n\
                 restore {target} @T400\n\
                 expect error: crashed\n\
                 restart\n\
                 cql @T500 INSERT INTO t (k, v) VALUES (4, 'd')\n\
                 cql @T600 SELECT * FROM t\n"
            );
            let run = docsim::script::run_script(&text, Plants::NONE, StorageConfig::default());
            let lines: Vec<&str> = run.output.lines().collect();
            assert!(run.ok(), "op={k}, restore {target}:\n{}", run.output);
            assert_eq!(lines[lines.len() - 3..], rows, "op={k}, restore {target}:\n{}", run.output);
            let restart = lines.iter().find(|l| l.starts_with("restart: ")).expect("restarted");
            restored_by_replay += usize::from(!restart.starts_with("restart: flushed=1.6"));
        }
        // The early cuts leave the old instance (replay restores again), the late ones
        // the restored one (its entry is the flushed frontier).
        assert!((1..80).contains(&restored_by_replay), "{target}: {restored_by_replay}");
    }
}
