//! The one dialect, two runners: every golden docscript of the engine
//! (`engine/src/**/testscripts/*.ds`, checked by the engine's own runner against the
//! `.out` beside it) prints the same through the simulator's executor as a group of one
//! — the path `docsim script` and every random run take. And the replicated goldens
//! (`sim/src/exec/testscripts/*.ds`, scripts with a `cluster` header) print their `.out`
//! and end with the history check passing. `UPDATE_GOLDENFILES=1 cargo test` rewrites
//! the replicated `.out` files (the engine's are the engine test's to rewrite).

use docsim_engine::canary::Plants;
use docsim_engine::StorageConfig;
use std::path::{Path, PathBuf};

fn scripts(dir: &Path, inside: bool, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).expect("readable").map(|e| e.expect("entry").path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if path.is_dir() {
            scripts(&path, inside || name == "testscripts", out);
        } else if inside && name.ends_with(".ds") {
            out.push(path);
        }
    }
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_owned()
}

#[test]
fn the_engines_goldens_print_alike_through_the_executor() {
    let mut found = Vec::new();
    scripts(&workspace().join("engine/src"), false, &mut found);
    assert!(found.len() >= 60, "{} golden scripts", found.len());
    let mut differ = Vec::new();
    for script in &found {
        let text = std::fs::read_to_string(script).expect("a script");
        let got = docsim::script::run_script(&text, Plants::NONE, StorageConfig::default());
        let want = std::fs::read_to_string(script.with_extension("out")).expect("its golden");
        if got.output != want {
            differ.push(format!("{}:\n--- want\n{want}--- got\n{}", script.display(), got.output));
        }
    }
    assert!(differ.is_empty(), "{} scripts differ:\n{}", differ.len(), differ.join("\n"));
}

#[test]
fn replicated_golden_scripts() {
    let mut found = Vec::new();
    scripts(&workspace().join("sim/src"), false, &mut found);
    assert!(found.len() >= 5, "{found:?}");
    let update = std::env::var_os("UPDATE_GOLDENFILES").is_some();
    for script in found {
        let text = std::fs::read_to_string(&script).expect("a script");
        let run = docsim::script::run_script(&text, Plants::NONE, StorageConfig::default());
        assert!(run.ok(), "{}: {run:?}", script.display());
        // A replicated script ends with its history check (`converge`).
        let replicated = text.lines().any(|l| l.starts_with("cluster replicas="));
        assert!(
            !replicated || run.output.ends_with("check: ok\n"),
            "{}:\n{}",
            script.display(),
            run.output
        );
        let golden = script.with_extension("out");
        if update {
            std::fs::write(&golden, &run.output).expect("write the golden file");
        }
        let want = std::fs::read_to_string(&golden).unwrap_or_else(|e| {
            panic!("{}: {e} (UPDATE_GOLDENFILES=1 writes it)", golden.display())
        });
        assert_eq!(run.output, want, "{}", script.display());
    }
}

/// The README's docscript tour runs clean (every `expect` in it holds).
#[test]
fn the_quickstart_runs_clean() {
    let path = workspace().join("sim/examples/quickstart.ds");
    let text = std::fs::read_to_string(&path).expect("the quickstart");
    let run = docsim::script::run_script(&text, Plants::NONE, StorageConfig::default());
    assert!(run.ok(), "{}:\n{}", path.display(), run.output);
    assert!(run.output.lines().count() >= 16, "{}", run.output);
}
