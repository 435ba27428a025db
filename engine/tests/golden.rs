//! Golden docscript tests: every `testscripts/**/*.ds` under `src/` runs against fresh
//! tablets and its output must equal the `.out` file beside it, byte for byte.
//! `UPDATE_GOLDENFILES=1 cargo test` rewrites the `.out` files; review the diff.

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

#[test]
fn golden_scripts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    scripts(&root, false, &mut found);
    assert!(found.len() >= 10, "expected golden scripts, found {}", found.len());
    let update = std::env::var_os("UPDATE_GOLDENFILES").is_some();
    let mut failures = Vec::new();
    for script in &found {
        let dir = std::env::temp_dir().join(format!(
            "docsim-golden-{}-{}",
            std::process::id(),
            script.file_stem().and_then(|s| s.to_str()).unwrap_or("x")
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let text = std::fs::read_to_string(script).expect("script");
        let mut out = Vec::new();
        docsim_engine::script::run_script(
            &text,
            &dir,
            docsim_engine::canary::Plants::NONE,
            &mut out,
        )
        .expect("run");
        let _ = std::fs::remove_dir_all(&dir);
        let got = String::from_utf8(out).expect("utf-8 output");
        let golden = script.with_extension("out");
        if update {
            std::fs::write(&golden, &got).expect("write golden");
            continue;
        }
        let Ok(want) = std::fs::read_to_string(&golden) else {
            failures.push(format!(
                "{}: no golden file (UPDATE_GOLDENFILES=1 writes it)",
                golden.display()
            ));
            continue;
        };
        if got != want {
            failures.push(format!("{}:\n--- want\n{want}--- got\n{got}", script.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden scripts differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
