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
        let got = run_in(script, docsim_engine::StorageConfig::default(), "golden");
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

/// Run `script` with every CQL table stored as `storage` says; its output.
fn run_in(script: &Path, storage: docsim_engine::StorageConfig, tag: &str) -> String {
    let dir = std::env::temp_dir().join(format!(
        "docsim-layout-{}-{tag}-{}",
        std::process::id(),
        script.file_stem().and_then(|s| s.to_str()).unwrap_or("x")
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let text = std::fs::read_to_string(script).expect("script");
    let mut out = Vec::new();
    let plants = docsim_engine::canary::Plants::NONE;
    docsim_engine::script::run_script_in(&text, &dir, plants, storage, &mut out).expect("run");
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8(out).expect("utf-8 output")
}

/// Whether an output line shows how rows are stored rather than what a read sees: a
/// `dump` line (`<path> @<T> -> <value>`) or an SST file listing.
fn shows_layout(line: &str) -> bool {
    (line.starts_with("doc(") && line.contains(" -> ")) || line.starts_with("files: ")
}

/// Every CQL golden script reads alike with every table packed (as packed rows, and as
/// RocksDB entities) and with none packed: the same output, line for line, but for `dump`
/// and file listings (which show the layout itself). The model knows rows, not layouts;
/// neither may a reader.
#[test]
fn cql_scripts_read_alike_with_packed_rows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cql");
    let mut found = Vec::new();
    scripts(&root, false, &mut found);
    assert!(found.len() >= 9, "expected the CQL goldens, found {}", found.len());
    let packed = docsim_engine::StorageConfig {
        layout: docsim_engine::Layout::Packed,
        ..docsim_engine::StorageConfig::default()
    };
    let unpacked = docsim_engine::StorageConfig {
        layout: docsim_engine::Layout::Unpacked,
        ..docsim_engine::StorageConfig::default()
    };
    let entities = docsim_engine::StorageConfig {
        layout: docsim_engine::Layout::Entity,
        ..docsim_engine::StorageConfig::default()
    };
    let mut failures = Vec::new();
    let mut packed_rows = 0;
    let reads = |out: &str| -> Vec<String> {
        out.lines().filter(|l| !shows_layout(l)).map(str::to_owned).collect()
    };
    for script in &found {
        let declared = run_in(script, unpacked, "unpacked");
        for (name, storage) in [("packed", packed), ("entity", entities)] {
            let out = run_in(script, storage, name);
            packed_rows += out.lines().filter(|l| l.contains("-> packed(schema=")).count();
            if reads(&declared) != reads(&out) {
                failures.push(format!(
                    "{}:\n--- unpacked\n{declared}--- {name}\n{out}",
                    script.display()
                ));
            }
        }
    }
    assert!(packed_rows >= 10, "the scripts must write packed rows: {packed_rows}");
    assert!(
        failures.is_empty(),
        "{} scripts read differently:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every CQL golden script prints the same lines with every table split into 4 and into
/// 16 tablets by hash range as with each table as declared: `dump`, every read and every
/// error alike. Only lines that name a tablet or a file may differ (`restart`, `files`,
/// `log`, `stats`: a split table has a log, files and counts per tablet).
#[test]
fn cql_scripts_read_alike_split_into_tablets() {
    let mut found = Vec::new();
    for dir in ["src/cql", "src/node", "src/tablet", "src/db"] {
        scripts(&Path::new(env!("CARGO_MANIFEST_DIR")).join(dir), false, &mut found);
    }
    assert!(found.len() >= 14, "expected the CQL goldens, found {}", found.len());
    // `stats` counts per tablet: its lines (and its `expect`s' failures) name tablets too.
    let names_a_tablet = |l: &str| {
        ["restart:", "files:", "log:", "memstore:"].iter().any(|p| l.starts_with(p))
            || l.contains("stats: ")
    };
    let lines = |out: &str| -> Vec<String> {
        out.lines().filter(|l| !names_a_tablet(l)).map(str::to_owned).collect()
    };
    let mut failures = Vec::new();
    let mut split_reads = 0;
    for script in &found {
        let text = std::fs::read_to_string(script).expect("script");
        if text.lines().any(|l| !l.starts_with('#') && l.contains("table=") && l.contains('/')) {
            continue; // it names tablets by index: their count is its subject
        }
        let declared = run_in(script, docsim_engine::StorageConfig::default(), "declared");
        for tablets in [4, 16] {
            let storage = docsim_engine::StorageConfig {
                tablets: Some(tablets),
                ..docsim_engine::StorageConfig::default()
            };
            let out = run_in(script, storage, &format!("tablets{tablets}"));
            split_reads +=
                out.lines().filter(|l| l.starts_with("restart:") && l.contains('/')).count();
            if lines(&declared) != lines(&out) {
                failures.push(format!(
                    "{}:\n--- declared\n{declared}--- {tablets} tablets\n{out}",
                    script.display()
                ));
            }
        }
    }
    assert!(split_reads >= 8, "the scripts must restart split tables: {split_reads}");
    assert!(failures.is_empty(), "{} scripts differ:\n{}", failures.len(), failures.join("\n"));
}

/// Every CQL golden script prints the same lines without range pruning and without bloom
/// filters as with both: the optimisations skip files, never rows. Only `stats` lines
/// (what was skipped) may differ, and the failures of their `expect`s.
#[test]
fn cql_scripts_read_alike_without_pruning_or_bloom() {
    let mut found = Vec::new();
    for dir in ["src/cql", "src/node", "src/tablet", "src/db"] {
        scripts(&Path::new(env!("CARGO_MANIFEST_DIR")).join(dir), false, &mut found);
    }
    assert!(found.len() >= 14, "expected the CQL goldens, found {}", found.len());
    let lines = |out: &str| -> Vec<String> {
        // A `stats` line, or its `expect` failing.
        out.lines().filter(|l| !l.contains("stats: ")).map(str::to_owned).collect()
    };
    let default = docsim_engine::StorageConfig::default();
    let variants = [
        ("no-pruning", docsim_engine::StorageConfig { pruning: false, ..default }),
        ("no-bloom", docsim_engine::StorageConfig { bloom_filter: false, ..default }),
    ];
    let (mut failures, mut pruned) = (Vec::new(), 0);
    for script in &found {
        let with = run_in(script, default, "optimised");
        pruned +=
            with.lines().filter(|l| l.starts_with("stats:") && !l.contains(" pruned=0 ")).count();
        for (name, storage) in variants {
            let out = run_in(script, storage, name);
            if lines(&with) != lines(&out) {
                failures
                    .push(format!("{}:\n--- default\n{with}--- {name}\n{out}", script.display()));
            }
        }
    }
    assert!(pruned >= 3, "the scripts must prune files: {pruned} stats lines show pruning");
    assert!(failures.is_empty(), "{} scripts differ:\n{}", failures.len(), failures.join("\n"));
}
