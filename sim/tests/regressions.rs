//! The regression corpus: every `tests/regressions/*.ds` — minimal reproducers written by
//! `docsim shrink` or by hand — must run clean (their `expect` lines hold). Adding one is
//! copying a file into the folder. A `canary_<plant>.ds` reproduces a planted bug: with
//! that bug planted it must fail, on one of its `expect` lines (else it tests nothing).
//! A replicated script (`cluster ...` header) passes when its run's check says `ok`; a
//! replicated canary fails with its bug planted on the check of the whole history.

use docsim_engine::canary::{Plant, Plants};
use std::path::Path;

#[test]
fn regression_corpus_runs_clean() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("regressions");
    let mut scripts: Vec<_> = std::fs::read_dir(&dir)
        .expect("regressions folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ds"))
        .collect();
    scripts.sort();
    assert!(scripts.len() >= 8, "the corpus holds {} scripts", scripts.len());
    let mut failures = Vec::new();
    for script in &scripts {
        let (passed, out) = run(script, Plants::NONE);
        if !passed {
            failures.push(format!("{}:\n{out}", script.display()));
        }
    }
    assert!(failures.is_empty(), "regressions fail:\n{}", failures.join("\n"));
}

/// Run `script` with `plants`: whether it passed, and its output.
fn run(script: &Path, plants: Plants) -> (bool, String) {
    let scratch = docsim::ScratchDir::new().expect("scratch");
    let text = std::fs::read_to_string(script).expect("script");
    if docsim::cluster::is_cluster_script(&text) {
        let out = docsim::cluster::run_cluster_script(&text, plants).expect("a valid script");
        let checks: Vec<&str> = out.lines().filter(|l| l.starts_with("check: ")).collect();
        return (checks == ["check: ok"], out);
    }
    let mut out = Vec::new();
    let outcome =
        docsim_engine::script::run_script(&text, scratch.path(), plants, &mut out).expect("run");
    (outcome.ok(), String::from_utf8_lossy(&out).into_owned())
}

#[test]
fn canary_reproducers_fail_with_their_bug_planted() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("regressions");
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("regressions folder") {
        let path = entry.expect("entry").path();
        let name = path.file_stem().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        let Some(plant_name) = name.strip_prefix("canary_") else { continue };
        let plant = Plant::from_name(&plant_name.replace('_', "-"))
            .unwrap_or_else(|| panic!("{name}: no plant named {plant_name}"));
        let (passed, out) = run(&path, Plants::of(Some(plant)));
        assert!(!passed, "{name} passes with {} planted:\n{out}", plant.name());
        let last = out.lines().last().unwrap_or_default();
        let text = std::fs::read_to_string(&path).expect("script");
        let replicated = docsim::cluster::is_cluster_script(&text);
        let on_check = last.starts_with("check: ") && last != "check: ok";
        assert!(
            if replicated { on_check } else { last.contains(": expected `") },
            "{name} fails on an expectation or the history check: {last}"
        );
        checked.push(plant);
    }
    assert!(checked.len() >= 12, "canary reproducers checked: {checked:?}");
}
