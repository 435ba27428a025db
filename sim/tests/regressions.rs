//! The regression corpus: every `tests/regressions/*.ds` — minimal reproducers written by
//! `docsim shrink` or by hand — must run clean (their `expect` lines hold). Adding one is
//! copying a file into the folder.

use docsim_engine::canary::Plants;
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
        let scratch = docsim::ScratchDir::new().expect("scratch");
        let text = std::fs::read_to_string(script).expect("script");
        let mut out = Vec::new();
        let outcome =
            docsim_engine::script::run_script(&text, scratch.path(), Plants::NONE, &mut out)
                .expect("run");
        if !outcome.ok() {
            failures.push(format!("{}:\n{}", script.display(), String::from_utf8_lossy(&out)));
        }
    }
    assert!(failures.is_empty(), "regressions fail:\n{}", failures.join("\n"));
}
