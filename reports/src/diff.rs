//! `docsim report diff BASE.json NEW.json`: what a person reads the morning after a
//! nightly run — the failure signatures that are new and those that are gone, throughput,
//! and the probe and fault counts, each against the last campaign. A failure's signature
//! is its kind, the kind of step that failed (the op's command) and the run's profile and
//! plant: seeds failing the same way group under one signature.

use crate::{CampaignReport, RunReport};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// A failed run's signature: `kind · step · profile[ · plant]`; `None` if it passed.
pub fn signature(run: &RunReport, plant: Option<&str>) -> Option<String> {
    let failure = run.failure.as_ref()?;
    let mut words = failure.op.split_whitespace().filter(|w| !w.starts_with(['@', '#']));
    let step = match words.next() {
        Some(first @ ("cql" | "redis")) => {
            let verb = words.find(|w| !w.contains('=') && *w != "nowait").unwrap_or("");
            format!("{first} {}", verb.to_ascii_uppercase())
        }
        Some(first) => first.to_owned(),
        None => "?".to_owned(),
    };
    let profile = run.knobs.split_whitespace().find_map(|k| k.strip_prefix("profile="));
    let mut out = format!("{} · {step} · profile={}", failure.kind, profile.unwrap_or("?"));
    if let Some(p) = plant {
        write!(out, " · plant={p}").expect("to a string");
    }
    Some(out)
}

/// Each failure signature of `report` with its failed seeds, in order.
pub fn signatures(report: &CampaignReport) -> BTreeMap<String, Vec<u64>> {
    let mut out: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for run in &report.runs {
        if let Some(sig) = signature(run, report.plant.as_deref()) {
            out.entry(sig).or_default().push(run.seed);
        }
    }
    out
}

/// Whether `new` fails in a way `base` did not.
pub fn has_new_failures(base: &CampaignReport, new: &CampaignReport) -> bool {
    let before = signatures(base);
    signatures(new).keys().any(|s| !before.contains_key(s))
}

/// The diff as text.
pub fn diff(base: &CampaignReport, new: &CampaignReport) -> String {
    let (b, n) = (base.totals(), new.totals());
    let mut out = String::new();
    let w = &mut out;
    let head = |r: &CampaignReport| format!("{} ({} seeds)", r.commit, r.runs.len());
    writeln!(w, "docsim report diff: {} -> {}", head(base), head(new)).expect("to a string");
    writeln!(w, "failures: {} -> {}", b.failures, n.failures).expect("to a string");
    failure_changes(w, &signatures(base), &signatures(new));
    let change = |x: f64, y: f64| if x > 0.0 { (y / x - 1.0) * 100.0 } else { 0.0 };
    let (x, y) = (b.ops_per_second, n.ops_per_second);
    writeln!(w, "throughput: {x:.0} -> {y:.0} ops/s ({:+.1}%)", change(x, y)).expect("to a string");
    per_kops(w, "probes", (&base.probe_totals(), b.ops), (&new.probe_totals(), n.ops));
    per_kops(w, "faults", (&base.fault_totals(), b.ops), (&new.fault_totals(), n.ops));
    out
}

fn failure_changes(
    w: &mut String,
    base: &BTreeMap<String, Vec<u64>>,
    new: &BTreeMap<String, Vec<u64>>,
) {
    let seeds = |s: &[u64]| s.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    let added: Vec<_> = new.iter().filter(|(s, _)| !base.contains_key(*s)).collect();
    let gone: Vec<_> = base.iter().filter(|(s, _)| !new.contains_key(*s)).collect();
    let still: Vec<_> = new.iter().filter(|(s, _)| base.contains_key(*s)).collect();
    for (title, list) in [("new", &added), ("fixed", &gone), ("still failing", &still)] {
        writeln!(w, "{title} failure signatures: {}", list.len()).expect("to a string");
        for (sig, s) in list.iter() {
            writeln!(w, "  {sig}: seeds {}", seeds(s)).expect("to a string");
        }
    }
}

/// Counts per 1,000 ops that changed, and those that went to or from zero.
fn per_kops(
    w: &mut String,
    what: &str,
    (base, base_ops): (&BTreeMap<String, u64>, usize),
    (new, new_ops): (&BTreeMap<String, u64>, usize),
) {
    let rate = |n: u64, ops: usize| n as f64 * 1000.0 / ops.max(1) as f64;
    let names: BTreeSet<&String> = base.keys().chain(new.keys()).collect();
    let mut lines = Vec::new();
    for name in names {
        let (x, y) = (base.get(name).copied().unwrap_or(0), new.get(name).copied().unwrap_or(0));
        let (rx, ry) = (rate(x, base_ops), rate(y, new_ops));
        let moved = (x == 0) != (y == 0) || (ry - rx).abs() > 0.25 * rx.max(ry);
        if moved {
            lines.push(format!("  {name}: {rx:.3} -> {ry:.3}"));
        }
    }
    let header = format!("{what} per 1,000 ops, changed by more than a quarter or to/from 0:");
    writeln!(w, "{header} {}", lines.len()).expect("to a string");
    lines.iter().for_each(|l| writeln!(w, "{l}").expect("to a string"));
}
