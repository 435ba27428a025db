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

/// The layers a crate's `lib.rs` writes down (`//! N. `a`, `b``, bottom up): module to
/// layer number.
fn layers(lib: &str) -> std::collections::BTreeMap<String, usize> {
    let mut layers = std::collections::BTreeMap::new();
    for line in lib.lines().filter_map(|l| l.strip_prefix("//! ")) {
        let Some((number, modules)) = line.split_once(". `") else { continue };
        let Ok(number) = number.parse::<usize>() else { continue };
        for module in format!("`{modules}").split(", ") {
            layers.insert(module.trim_matches('`').to_owned(), number);
        }
    }
    layers
}

/// `text` without its test code: a `#[cfg(test)]` module to the end of the file.
fn without_tests(text: &str) -> String {
    let mut kept = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let next = lines.peek().map(|l| l.trim_start()).unwrap_or_default();
        if line.trim() == "#[cfg(test)]" && next.starts_with("mod ") {
            break;
        }
        kept.push(line);
    }
    kept.join("\n")
}

/// The top-level modules `text` (code, comments stripped) names through `crate::`, in
/// `use` lines, groups (`crate::{a, b::C}`) and inline paths alike.
fn crate_references(text: &str) -> Vec<String> {
    let code: String =
        text.lines().map(|l| l.split("//").next().unwrap_or(l)).collect::<Vec<_>>().join("\n");
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            // Each item's first segment, at the group's top level.
            for item in group.split(',') {
                let name = item.trim().split("::").next().unwrap_or_default();
                found.push(name.trim_start_matches('{').trim().to_owned());
            }
        } else {
            let name: String =
                rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            found.push(name);
        }
    }
    found
}

/// The top-level module a source file of crate `src` belongs to (`None`: the crate root
/// or a test file).
fn module_of(relative: &str) -> Option<String> {
    let first = relative.split('/').next()?;
    let is_test = relative.ends_with("tests.rs") || relative.contains("/tests/");
    if is_test || first == "lib.rs" || first == "main.rs" {
        return None;
    }
    Some(first.trim_end_matches(".rs").to_owned())
}

/// Every reference from a module to one of its own layer or above, in `krate`.
fn back_edges(krate: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root");
    let src = root.join(krate).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let layers = layers(&lib);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut bad = Vec::new();
    for path in files {
        let relative = path.strip_prefix(&src).expect("under src").display().to_string();
        let Some(module) = module_of(&relative) else { continue };
        let Some(&layer) = layers.get(&module) else {
            bad.push(format!("{krate}: module `{module}` is in no layer of lib.rs"));
            continue;
        };
        let text = without_tests(&std::fs::read_to_string(&path).expect("source"));
        for used in crate_references(&text) {
            match layers.get(&used) {
                Some(&to) if used != module && to >= layer => bad.push(format!(
                    "{krate}/src/{relative}: `{module}` (layer {layer}) uses `{used}` (layer {to})"
                )),
                _ => {}
            }
        }
    }
    bad
}

#[test]
fn modules_use_only_lower_layers() {
    let bad: Vec<String> = ["engine", "sim"].into_iter().flat_map(back_edges).collect();
    assert!(bad.is_empty(), "references that climb back up:\n{}", bad.join("\n"));
    // The check sees both forms of a reference.
    let text = "use crate::{db::DocDb, log};\nfn f() { crate::node::Node::new(); }";
    assert_eq!(crate_references(text), ["db", "log", "node"]);
}

/// The docscript contract travels with the code: `docs/docscript.md` is a copy of the
/// workplace's `../shared/docscript.md`, kept equal wherever the workplace's copy exists
/// (a fresh clone elsewhere has only the repository's).
#[test]
fn the_docscript_contract_copy_is_the_contract() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let copy = std::fs::read_to_string(root.join("docs/docscript.md")).expect("the copy");
    let Ok(contract) = std::fs::read_to_string(root.join("../shared/docscript.md")) else {
        return; // no workplace here: the copy is the contract
    };
    assert!(copy == contract, "docs/docscript.md differs from ../shared/docscript.md: copy it");
}
