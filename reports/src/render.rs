//! Markdown and JUnit XML.

use crate::CampaignReport;
use std::fmt::Write as _;

/// A Markdown summary (for CI job summaries).
pub fn to_markdown(report: &CampaignReport) -> String {
    let t = report.totals();
    let mut out = format!("# {} — commit `{}`\n\n", report.title(), report.commit);
    if let Some(plant) = &report.plant {
        let _ = writeln!(out, "Planted bug: `{plant}` (this campaign must fail).\n");
    }
    let _ = writeln!(out, "| seeds | ops | checked reads | compactions | failures | ops/s |");
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {} | {:.0} |\n",
        t.seeds, t.ops, t.checked_reads, t.compactions, t.failures, t.ops_per_second
    );
    let _ = writeln!(
        out,
        "Crashes {}, restarts {}. Groups of one: log entries replayed {}, entries above the \
         flushed frontiers {} ({}).\n",
        t.crashes,
        t.restarts,
        t.replayed,
        t.expected_replayed,
        if t.replayed == t.expected_replayed { "equal" } else { "NOT EQUAL" }
    );
    counts(&mut out, "Runs by profile", report.profile_counts());
    counts(&mut out, "Faults by kind", report.fault_totals());
    counts(&mut out, "Replication", report.replication_totals());
    if !t.step_time.is_empty() {
        let _ = writeln!(out, "Time by kind of step: {}.\n", t.time_breakdown());
    }
    if !t.part_time.is_empty() {
        let _ = writeln!(out, "Time by part of the simulator: {}.\n", t.part_breakdown());
    }
    let failed: Vec<_> = report.runs.iter().filter(|r| r.failure.is_some()).collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "## Failures\n");
        for run in failed {
            let f = run.failure.as_ref().expect("filtered");
            let _ =
                writeln!(out, "- seed **{}** step {} ({}): `{}`", run.seed, f.step, f.kind, f.op);
            if let Some(path) = &f.reproducer {
                let _ = writeln!(out, "  reproducer: `{path}`");
            }
        }
        out.push('\n');
    }
    let never = report.probes_never_hit();
    let _ = writeln!(out, "## Coverage probes\n");
    for (probe, n) in report.probe_totals() {
        let _ = writeln!(out, "- `{probe}`: {n}");
    }
    if !never.is_empty() {
        let _ = writeln!(
            out,
            "\nNever hit: {}",
            never.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
        );
    }
    out
}

/// A line of named counts, `title: a 3, b 5.` (nothing when there are none).
fn counts(out: &mut String, title: &str, counts: std::collections::BTreeMap<String, u64>) {
    if counts.is_empty() {
        return;
    }
    let items: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let _ = writeln!(out, "{title}: {}.\n", items.join(", "));
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// JUnit XML: one test case per seed.
pub fn to_junit(report: &CampaignReport) -> String {
    let t = report.totals();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" time=\"{:.3}\">",
        report.title(),
        t.seeds,
        t.failures,
        report.seconds
    );
    for run in &report.runs {
        let _ = write!(
            out,
            "  <testcase classname=\"docsim.torture\" name=\"seed {}\" time=\"{:.3}\"",
            run.seed, run.seconds
        );
        match &run.failure {
            None => out.push_str("/>\n"),
            Some(f) => {
                let message = format!("{} at step {}: {}", f.kind, f.step, f.op);
                let body = format!(
                    "expected: {}\nactual: {}\nreproducer: {}",
                    f.expected.join(" | "),
                    f.actual.join(" | "),
                    f.reproducer.as_deref().unwrap_or("-")
                );
                let _ = writeln!(
                    out,
                    ">\n    <failure message=\"{}\">{}</failure>\n  </testcase>",
                    xml_escape(&message),
                    xml_escape(&body)
                );
            }
        }
    }
    out.push_str("</testsuite>\n");
    out
}
