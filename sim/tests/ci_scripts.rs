//! The logic of the CI scripts that publish verdicts: `.ci/mutants-score` sums the shards of
//! a mutation run and tells survivors the README explains from new ones. (The scripts that
//! run cargo-mutants are exercised by running them; this one decides what the nightly says.)

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const README: &str = "\
# A readme

#### Survivors explained: the suite

Prose before the list: `engine/src/before.rs: replace k -> bool with true in k` is none.

- `engine/src/log.rs: replace > with >= in Log::gc` — a directory sync more.

#### Survivors explained: torture alone

- `engine/src/gc.rs: replace f -> bool with true in f` — the suite kills it.
- `engine/src/listed.rs: replace g -> bool
  with true in g` — wraps onto a second line; never seen here.

Prose after the list: `engine/src/after.rs: replace h -> bool with true in h` is none.

## Next section

- `engine/src/after.rs: replace h -> bool with true in h` — not in any list.
";

/// Two shards: 5 caught, 2 missed (one per list), 1 timed out (in no list), 1 unviable.
fn shards(root: &Path) {
    let a = root.join("a");
    let b = root.join("b");
    let files: [(&Path, &str, &str); 6] = [
        (
            &a,
            "caught",
            "engine/src/a.rs:1:1: one\nengine/src/a.rs:2:1: two\nengine/src/a.rs:3:1: three\n",
        ),
        (&a, "missed", "engine/src/log.rs:331:25: replace > with >= in Log::gc\n"),
        (&a, "unviable", "engine/src/a.rs:4:1: four\n"),
        (&b, "caught", "engine/src/b.rs:1:1: one\nengine/src/b.rs:2:1: two\n"),
        (&b, "missed", "engine/src/gc.rs:7:9: replace f -> bool with true in f\n"),
        (&b, "timeout", "engine/src/after.rs:3:4: replace h -> bool with true in h\n"),
    ];
    for (dir, kind, names) in files {
        fs::create_dir_all(dir).unwrap();
        fs::write(dir.join(format!("{kind}.txt")), names).unwrap();
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/mutants-score")
}

/// `.ci/mutants-score ARGS`: its exit code and output (it must print nothing on stderr).
fn run(args: &[OsString]) -> (i32, String) {
    let out = Command::new("python3")
        .arg(script())
        .args(args)
        .output()
        .expect("python3 runs .ci/mutants-score");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.is_empty(), "stderr: {stderr}");
    (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap())
}

/// A fresh directory holding the readme above and the two shards, and `--readme` naming it.
fn setup(name: &str) -> (PathBuf, Vec<OsString>) {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(&root).unwrap();
    fs::write(root.join("README.md"), README).unwrap();
    shards(&root);
    let readme = vec!["--readme".into(), root.join("README.md").into_os_string()];
    (root, readme)
}

/// The script run with `args` on both shards.
fn score(name: &str, args: &[&str]) -> (i32, String) {
    let (root, mut argv) = setup(name);
    argv.extend(args.iter().map(Into::into));
    argv.extend([root.join("a").into_os_string(), root.join("b").into_os_string()]);
    run(&argv)
}

#[test]
fn the_score_sums_every_shard_and_marks_each_survivor() {
    let (code, out) = score("score-suite", &["--measure", "suite"]);
    assert_eq!(code, 0, "no goal, no failure");
    let expected = "\
mutation score: 5 / 8 viable mutants caught (62.5%), 2 missed, 1 timed out, 1 unviable \
over 2 output directories

survivors (1 explained in the README, 2 new):
- NEW       timed out engine/src/after.rs:3:4: replace h -> bool with true in h
- NEW       missed    engine/src/gc.rs:7:9: replace f -> bool with true in f
- explained missed    engine/src/log.rs:331:25: replace > with >= in Log::gc
";
    assert_eq!(out, expected);
}

#[test]
fn torture_survivors_are_explained_by_either_list() {
    let (_, out) = score("score-torture", &["--measure", "torture"]);
    assert!(out.contains("survivors (2 explained in the README, 1 new):\n"), "{out}");
    assert!(out.contains("- explained missed    engine/src/gc.rs:7:9:"), "{out}");
}

/// The two shards with every survivor explained under torture (the timeout in no list
/// turned into a catch): 6 of 8 caught, 75%.
fn all_explained(name: &str, goal: &str) -> (i32, String) {
    let (root, mut argv) = setup(name);
    fs::remove_file(root.join("b/timeout.txt")).unwrap();
    let caught = "engine/src/b.rs:1:1: one\nengine/src/b.rs:2:1: two\nengine/src/b.rs:3:1: x\n";
    fs::write(root.join("b/caught.txt"), caught).unwrap();
    argv.extend(["--measure", "torture", "--goal", goal].map(Into::into));
    argv.extend([root.join("a").into_os_string(), root.join("b").into_os_string()]);
    run(&argv)
}

#[test]
fn a_goal_fails_on_a_new_survivor_or_below_it() {
    let (code, out) = score("goal-new", &["--goal", "60"]);
    let fail = "\nFAIL: the goal is 60% with every survivor explained\n";
    assert_eq!((code, out.ends_with(fail)), (1, true), "62.5% but new survivors: {out}");
    let (code, out) = all_explained("goal-low", "75.1");
    let fail = "\nFAIL: the goal is 75.1% with every survivor explained\n";
    assert_eq!((code, out.ends_with(fail)), (1, true), "all explained, but below: {out}");
}

#[test]
fn a_goal_is_met_at_exactly_the_score_with_every_survivor_explained() {
    let (code, out) = all_explained("goal-met", "75");
    assert!(out.starts_with("mutation score: 6 / 8 viable mutants caught (75.0%)"), "{out}");
    assert!(out.contains("survivors (2 explained in the README, 0 new):"), "{out}");
    assert_eq!(code, 0, "{out}");
}

/// A goal is met by a measure: no viable mutant at all fails it, and a directory that is
/// not there is an error, not an empty shard.
#[test]
fn nothing_measured_meets_no_goal() {
    let (root, mut argv) = setup("nothing");
    fs::create_dir_all(root.join("empty")).unwrap();
    argv.push(root.join("empty").into_os_string());
    let (code, out) = run(&argv);
    assert_eq!((code, out.as_str()), (0, "no viable mutants\n"), "no goal: a report");
    argv.extend(["--goal", "95"].map(Into::into));
    let (code, _) = run(&argv);
    assert_eq!(code, 1, "a goal");
    let missing = Command::new("python3").arg(script()).arg(root.join("gone")).output().unwrap();
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(1));
    assert!(stderr.ends_with("gone: no such output directory\n"), "{stderr}");
}

#[test]
fn the_recheck_regex_names_exactly_the_measures_own_list_at_any_position() {
    let regex = |measure: &str| {
        let (_, mut argv) = setup(&format!("explained-re-{measure}"));
        argv.extend(["--measure", measure, "--explained-re"].map(Into::into));
        let (code, out) = run(&argv);
        assert_eq!(code, 0);
        out
    };
    assert_eq!(regex("suite"), "^engine/src/log\\.rs:\\d+:\\d+: replace > with >= in Log::gc$\n");
    assert_eq!(
        regex("torture"),
        "^engine/src/gc\\.rs:\\d+:\\d+: replace f -> bool with true in f$|\
         ^engine/src/listed\\.rs:\\d+:\\d+: replace g -> bool with true in g$\n"
    );
}

#[test]
fn an_entry_with_a_fragment_explains_only_the_survivor_on_that_code() {
    let (root, mut argv) = setup("fragment");
    let readme = "#### Survivors explained: the suite\n\n\
        - `engine/src/peer.rs: replace && with || in Peer::receive` at `state == Leader\n  \
          && term` — the lease guard.\n\n#### Survivors explained: torture alone\n";
    fs::write(root.join("README.md"), readme).unwrap();
    fs::create_dir_all(root.join("engine/src")).unwrap();
    let source = "fn receive() {\n    if state == Leader    && term == t {}\n    \
                  if vote && now < quiet {}\n}\n";
    fs::write(root.join("engine/src/peer.rs"), source).unwrap();
    let shard = root.join("c");
    fs::create_dir_all(&shard).unwrap();
    let name =
        |line: u32| format!("engine/src/peer.rs:{line}:30: replace && with || in Peer::receive");
    let missed = [name(2), name(3), name(9)].join("\n");
    fs::write(shard.join("missed.txt"), missed).unwrap();
    argv.push(shard.into_os_string());
    let (code, out) = run(&argv);
    assert_eq!(code, 0);
    let expected = format!(
        "survivors (1 explained in the README, 2 new):\n\
         - explained missed    {}\n- NEW       missed    {}\n- NEW       missed    {}\n",
        name(2),
        name(3),
        name(9)
    );
    assert!(out.ends_with(&expected), "{out}");
}
