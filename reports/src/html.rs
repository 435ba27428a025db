//! The self-contained HTML report: tables and inline SVG charts, no scripts, no fetches.

use crate::CampaignReport;
use std::fmt::Write as _;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A bar chart: one bar per item (colors cycle: one color per item marks each), labels
/// under the bars when there are few, the axes named by `(x, y)`; `empty` says why there
/// is nothing to draw.
fn bar_chart(
    (id, title): (&str, &str),
    items: &[(String, f64)],
    colors: &[&str],
    (x_axis, y_axis): (&str, &str),
    empty: &str,
) -> String {
    let (width, height, pad) = (720.0, 220.0, 30.0);
    let mut svg = format!(
        "<figure id=\"{id}\"><figcaption>{}</figcaption>\
         <svg class=\"chart\" viewBox=\"0 0 {width} {}\" width=\"{width}\" height=\"{}\" \
         xmlns=\"http://www.w3.org/2000/svg\" role=\"img\">",
        esc(title),
        height + 2.0 * pad,
        height + 2.0 * pad
    );
    if items.iter().all(|(_, v)| *v == 0.0) {
        let _ = write!(
            svg,
            "<text x=\"{pad}\" y=\"{}\">{}</text></svg></figure>",
            height / 2.0,
            esc(empty)
        );
        return svg;
    }
    let max = items.iter().map(|(_, v)| *v).fold(0.0_f64, f64::max).max(1e-9);
    let step = (width - 2.0 * pad) / items.len() as f64;
    let _ = write!(
        svg,
        "<line x1=\"{pad}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#555\"/>\
         <text x=\"{pad}\" y=\"{}\" font-size=\"11\">{max:.0} {}</text>\
         <text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
        pad + height,
        width - pad,
        pad + height,
        pad - 6.0,
        esc(y_axis),
        width - pad,
        pad + height + 26.0,
        esc(x_axis)
    );
    for (i, (label, value)) in items.iter().enumerate() {
        let color = colors[i % colors.len()];
        let h = value / max * height;
        let x = pad + i as f64 * step;
        let _ = write!(
            svg,
            "<rect class=\"bar\" x=\"{x:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{h:.2}\" \
             fill=\"{color}\"><title>{}: {value:.1}</title></rect>",
            pad + height - h,
            (step * 0.85).max(0.5),
            esc(label)
        );
        if items.len() <= 24 {
            let _ = write!(
                svg,
                "<text x=\"{:.2}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{}</text>",
                x + step * 0.42,
                pad + height + 14.0,
                esc(label)
            );
        }
    }
    svg.push_str("</svg></figure>");
    svg
}

/// A horizontal bar chart with the labels and counts written out (for named counters).
fn hbar_chart(id: &str, title: &str, items: &[(String, f64)], color: &str, empty: &str) -> String {
    let (label_w, bar_w, row) = (260.0, 380.0, 22.0);
    let height = row * items.len().max(1) as f64 + 10.0;
    let mut svg = format!(
        "<figure id=\"{id}\"><figcaption>{}</figcaption><svg class=\"chart\" \
         viewBox=\"0 0 720 {height}\" width=\"720\" height=\"{height}\" \
         xmlns=\"http://www.w3.org/2000/svg\" role=\"img\">",
        esc(title)
    );
    if items.is_empty() {
        let _ = write!(svg, "<text x=\"0\" y=\"16\">{}</text></svg></figure>", esc(empty));
        return svg;
    }
    let max = items.iter().map(|(_, v)| *v).fold(0.0_f64, f64::max).max(1.0);
    for (i, (label, value)) in items.iter().enumerate() {
        let y = i as f64 * row + 4.0;
        // A log scale, so rare probes stay visible beside common ones; zero draws nothing.
        let w = if *value > 0.0 { (1.0 + value).ln() / (1.0 + max).ln() * bar_w } else { 0.0 };
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\">{}</text>\
             <rect class=\"bar\" x=\"{label_w}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" \
             fill=\"{color}\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\">{value:.0}</text>",
            label_w - 6.0,
            y + 14.0,
            esc(label),
            row - 6.0,
            label_w + w + 6.0,
            y + 14.0
        );
    }
    svg.push_str("</svg></figure>");
    svg
}

/// The whole page.
pub fn to_html(report: &CampaignReport) -> String {
    // The first screen: pass or fail, then the failures grouped; the charts after them.
    let heading =
        format!("<h1>{} — commit <code>{}</code></h1>", esc(&report.title()), esc(&report.commit));
    let body =
        [heading, verdict(report), summary(report), charts(report), failures(report)].concat();
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\">\
         <title>{} {}</title><style>{STYLE}</style></head>\
         <body>{body}</body></html>\n",
        esc(&report.title()),
        esc(&report.commit)
    )
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:60em}\
    table{border-collapse:collapse;margin-bottom:1em}td,th{border:1px solid #ccc;padding:.3em .8em}\
    .bad{color:#b00}.good{color:#070}figure{margin:1.5em 0}figcaption{font-weight:bold}\
    .verdict{font-size:1.6em;font-weight:bold}";

/// PASS, or FAIL with one row per failure signature: its seeds, the command that
/// reproduces its first seed alone, the one that shrinks it, and a link to its reproducer.
fn verdict(report: &CampaignReport) -> String {
    let (seeds, signatures) = (report.runs.len(), crate::signatures(report));
    if signatures.is_empty() {
        return format!("<p class=\"good verdict\">PASS — {seeds} seeds, no failure</p>");
    }
    let failed: usize = signatures.values().map(Vec::len).sum();
    let kinds = match signatures.len() {
        1 => "1 failure signature".to_owned(),
        n => format!("{n} failure signatures"),
    };
    let mut out = format!(
        "<p class=\"bad verdict\">FAIL — {failed} of {seeds} seeds, {kinds}</p>\
         <table><tr><th>failure signature</th><th>seeds</th><th>reproduce</th><th>shrink</th>\
         </tr>"
    );
    let plant = report.plant.as_deref().map(|p| format!("--plant {p} ")).unwrap_or_default();
    for (signature, seeds) in &signatures {
        let first = report.runs.iter().find(|r| r.seed == seeds[0]);
        let repro = first.and_then(|r| r.failure.as_ref()?.reproducer.clone());
        let list: Vec<String> = seeds.iter().map(u64::to_string).collect();
        let (reproduce, shrink) = match &repro {
            Some(path) => {
                let dir = path.strip_suffix("/repro.ds").unwrap_or(path);
                let link = format!("<a href=\"{0}\">{0}</a>", esc(path));
                (
                    format!("<code>docsim script {plant}</code>{link}"),
                    format!("<code>docsim shrink {}</code>", esc(dir)),
                )
            }
            None => ("-".into(), "-".into()),
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{reproduce}</td><td>{shrink}</td></tr>",
            esc(signature),
            list.join(", ")
        );
    }
    out + "</table>"
}

fn summary(report: &CampaignReport) -> String {
    let t = report.totals();
    let mut out = format!(
        "<table><tr><th>seeds</th><th>ops</th><th>checked reads</th><th>compactions</th>\
         <th>failures</th><th>ops/s</th></tr><tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
         <td class=\"{}\">{}</td><td>{:.0}</td></tr></table>",
        t.seeds,
        t.ops,
        t.checked_reads,
        t.compactions,
        if t.failures > 0 { "bad" } else { "good" },
        t.failures,
        t.ops_per_second
    );
    if let Some(plant) = &report.plant {
        let plant = esc(plant);
        let _ = write!(out, "<p>Planted bug: <code>{plant}</code> (this campaign must fail).</p>");
    }
    if !t.step_time.is_empty() {
        let _ = write!(out, "<p>Where the time goes: {}.</p>", esc(&t.time_breakdown()));
    }
    if !t.part_time.is_empty() {
        let _ = write!(out, "<p>By part of the simulator: {}.</p>", esc(&t.part_breakdown()));
    }
    out
}

fn charts(report: &CampaignReport) -> String {
    let t = report.totals();
    let per_seed = |f: &dyn Fn(&crate::RunReport) -> f64| -> Vec<(String, f64)> {
        report.runs.iter().map(|r| (format!("seed {}", r.seed), f(r))).collect()
    };
    let counts = |m: std::collections::BTreeMap<String, u64>| -> Vec<(String, f64)> {
        m.into_iter().map(|(k, v)| (k, v as f64)).collect()
    };
    let throughput = per_seed(&|r| if r.seconds > 0.0 { r.ops as f64 / r.seconds } else { 0.0 });
    // Per-seed bars: a failed seed's in red.
    let marked = |color: &'static str| -> Vec<&'static str> {
        let failed = |r: &crate::RunReport| r.failure.is_some();
        report.runs.iter().map(|r| if failed(r) { OUTCOME_COLORS[1] } else { color }).collect()
    };
    let outcome = vec![
        ("passed".to_string(), (t.seeds - t.failures) as f64),
        ("failed".to_string(), t.failures as f64),
    ];
    let mut out = [
        bar_chart(
            ("ops", "Operations per second, by seed (failed seeds in red)"),
            &throughput,
            &marked("#4a7bd0"),
            ("seeds, in order", "ops/s"),
            "no runs",
        ),
        bar_chart(
            ("failures", "Seeds passed and failed"),
            &outcome,
            &OUTCOME_COLORS,
            ("outcome", "seeds"),
            "no runs",
        ),
        hbar_chart(
            "faults",
            "Faults injected, by kind",
            &counts(report.fault_totals()),
            "#4bacc6",
            "no faults injected",
        ),
        bar_chart(
            ("replays", "Log entries replayed at restarts, by seed (failed seeds in red)"),
            &per_seed(&|r| r.replayed as f64),
            &marked("#8064a2"),
            ("seeds, in order", "entries"),
            "no restarts in these runs",
        ),
        by_knob(report, "profile", "Seeds by profile (failed ones in brackets)"),
        by_knob(report, "storage", "Seeds by storage configuration (failed ones in brackets)"),
        hbar_chart(
            "probes",
            "Coverage probes hit (log scale)",
            &counts(report.probe_totals()),
            "#f79646",
            "no probes",
        ),
    ]
    .concat();
    if report.runs.iter().any(|r| !r.replication.is_empty()) {
        out += &replication_charts(report);
    }
    let never: Vec<String> =
        report.probes_never_hit().iter().map(|p| format!("<code>{}</code>", esc(p))).collect();
    if !never.is_empty() {
        let _ = write!(out, "<p class=\"bad\">Probes never hit: {}</p>", never.join(", "));
    }
    out
}

const OUTCOME_COLORS: [&str; 2] = ["#9bbb59", "#c0504d"];

/// A replicated campaign's charts: leader changes and lag by seed, and its events.
fn replication_charts(report: &CampaignReport) -> String {
    let per_seed = |key: &str| -> Vec<(String, f64)> {
        let count = |r: &crate::RunReport| r.replication.get(key).copied().unwrap_or(0) as f64;
        report.runs.iter().map(|r| (format!("seed {}", r.seed), count(r))).collect()
    };
    let mut events: std::collections::BTreeMap<String, u64> = Default::default();
    for run in &report.runs {
        for (k, v) in run.replication.iter().filter(|(k, _)| k.as_str() != "max_lag") {
            *events.entry(k.clone()).or_default() += v;
        }
    }
    let events: Vec<(String, f64)> = events.into_iter().map(|(k, v)| (k, v as f64)).collect();
    [
        bar_chart(
            ("leaders", "Leader changes, by seed"),
            &per_seed("leader_changes"),
            &["#7f6084"],
            ("seeds, in order", "leader changes"),
            "no leader changes",
        ),
        bar_chart(
            (
                "lag",
                "Largest lag, by seed (entries a member's applied index trailed the leader's \
                 commit)",
            ),
            &per_seed("max_lag"),
            &["#4bacc6"],
            ("seeds, in order", "entries"),
            "no lag",
        ),
        hbar_chart(
            "replication",
            "Replication events (log scale)",
            &events,
            "#9bbb59",
            "no events",
        ),
    ]
    .concat()
}

/// Seeds by one knob's value, each labelled with how many of them failed.
fn by_knob(report: &CampaignReport, knob: &str, title: &str) -> String {
    let items: Vec<(String, f64)> = report
        .by_knob(knob)
        .into_iter()
        .map(|(value, (runs, failed))| match failed {
            0 => (value, runs as f64),
            n => (format!("{value} [{n} failed]"), runs as f64),
        })
        .collect();
    hbar_chart(&format!("by-{knob}"), title, &items, "#4a7bd0", "no runs")
}

fn failures(report: &CampaignReport) -> String {
    let mut out = String::from("<h2>Failures</h2>");
    let failed: Vec<_> = report.runs.iter().filter(|r| r.failure.is_some()).collect();
    if failed.is_empty() {
        out += "<p class=\"good\">none</p>";
    }
    for run in failed {
        let f = run.failure.as_ref().expect("filtered");
        let _ = write!(
            out,
            "<details><summary>seed {} — {} at step {}</summary>\
             <pre>op:       {}\nexpected: {}\nactual:   {}\nreproducer: {}</pre></details>",
            run.seed,
            esc(&f.kind),
            f.step,
            esc(&f.op),
            esc(&f.expected.join(" | ")),
            esc(&f.actual.join(" | ")),
            esc(f.reproducer.as_deref().unwrap_or("-"))
        );
    }
    out
}
