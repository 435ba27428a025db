//! Tidy: the workspace's size and naming rules, checked as a test. Lines stay within 100
//! columns, no leftover `dbg!`/`FIXME`/`todo!`, and functions fit on a screen (a ratchet:
//! at most 70 lines, no exceptions).

use std::path::{Path, PathBuf};

const MAX_COLUMNS: usize = 100;
const MAX_FN_LINES: usize = 70;
const LONG_FN_ALLOWED: [(&str, &str); 0] = [];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if path.is_dir() && name != "target" && !name.starts_with('.') {
            rust_files(&path, out);
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

fn workspace_files() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_owned();
    let mut files = Vec::new();
    for krate in ["engine", "models", "workloads", "sim", "reports"] {
        rust_files(&root.join(krate), &mut files);
    }
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&root).expect("under root").display().to_string();
            (rel, std::fs::read_to_string(&p).expect("utf-8 source"))
        })
        .collect()
}

/// `(name, first line, line count)` of each `fn` whose body closes at its own indentation.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let after_fn = ["fn ", "pub fn ", "pub(crate) fn ", "async fn ", "pub async fn "]
            .iter()
            .find_map(|prefix| trimmed.strip_prefix(prefix));
        let Some(rest) = after_fn else { continue };
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        // A declaration without a body (a trait's required method) ends in `;` first.
        let signature_end =
            lines[i..].iter().find(|l| l.contains('{') || l.trim_end().ends_with(';'));
        if signature_end.is_some_and(|l| !l.contains('{')) {
            continue;
        }
        let close = format!("{}}}", " ".repeat(indent));
        if let Some(end) = lines[i..].iter().position(|l| *l == close) {
            out.push((name, i + 1, end + 1));
        }
    }
    out
}

#[test]
fn lines_fit_in_100_columns() {
    let long: Vec<String> = workspace_files()
        .iter()
        .flat_map(|(path, text)| {
            text.lines()
                .enumerate()
                .filter(|(_, l)| l.chars().count() > MAX_COLUMNS)
                .map(move |(i, l)| format!("{path}:{}: {} columns", i + 1, l.chars().count()))
        })
        .collect();
    assert!(long.is_empty(), "lines over {MAX_COLUMNS} columns:\n{}", long.join("\n"));
}

#[test]
fn no_leftover_debugging() {
    let banned = ["dbg!(", "FIXME", "todo!(", "unimplemented!("];
    let hits: Vec<String> = workspace_files()
        .iter()
        .filter(|(path, _)| !path.ends_with("tidy.rs"))
        .flat_map(|(path, text)| {
            text.lines()
                .enumerate()
                .filter(|(_, l)| banned.iter().any(|b| l.contains(b)))
                .map(move |(i, l)| format!("{path}:{}: {}", i + 1, l.trim()))
        })
        .collect();
    assert!(hits.is_empty(), "leftovers:\n{}", hits.join("\n"));
}

#[test]
fn functions_fit_on_a_screen() {
    let mut long = Vec::new();
    for (path, text) in workspace_files() {
        for (name, line, count) in functions(&text) {
            let allowed = LONG_FN_ALLOWED.iter().any(|(p, n)| path == *p && name == *n);
            if count > MAX_FN_LINES && !allowed {
                long.push(format!("{path}:{line}: fn {name} is {count} lines"));
            }
        }
    }
    assert!(long.is_empty(), "functions over {MAX_FN_LINES} lines:\n{}", long.join("\n"));
}
