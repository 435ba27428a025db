use super::*;

fn run(seed: u64, failed: bool) -> RunReport {
    RunReport {
        seed,
        ops: 100,
        steps: 104,
        checked_reads: 30,
        seconds: 0.5,
        probes: [("gc.dropped".to_string(), seed)].into(),
        step_time: [
            ("read".to_string(), StepTime { steps: 10, seconds: 0.000_3 }),
            ("flush".to_string(), StepTime { steps: 1, seconds: 0.002 }),
        ]
        .into(),
        failure: failed.then(|| FailureReport {
            kind: "Get".into(),
            op: "get <x>".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn shard(i: u64, seeds: &[u64]) -> CampaignReport {
    CampaignReport {
        commit: "abc".into(),
        shards: vec![format!("{i}/2")],
        known_probes: vec!["gc.dropped".into(), "read.snapshot_too_old".into()],
        seconds: 1.0,
        runs: seeds.iter().map(|s| run(*s, *s == 3)).collect(),
        ..Default::default()
    }
}

#[test]
fn merge_sums_and_sorts() {
    let merged = CampaignReport::merge(vec![shard(1, &[3, 1]), shard(0, &[2, 0])]).unwrap();
    let seeds: Vec<u64> = merged.runs.iter().map(|r| r.seed).collect();
    assert_eq!(seeds, [0, 1, 2, 3]);
    let t = merged.totals();
    assert_eq!((t.seeds, t.ops, t.failures), (4, 400, 1));
    assert_eq!(merged.probes_never_hit(), ["read.snapshot_too_old"]);
    assert_eq!(merged.probe_totals()["gc.dropped"], 6);
    let twice = CampaignReport::merge(vec![shard(0, &[1]), shard(1, &[1])]).unwrap_err();
    assert_eq!(twice, "seed 1 appears in two shards");
    assert_eq!(t.step_time["read"].steps, 40);
    assert!((t.step_time["flush"].seconds - 0.008).abs() < 1e-12);
    let json = merged.to_json();
    assert_eq!(CampaignReport::from_json(&json).unwrap(), merged);
}

#[test]
fn renderers_show_the_essentials() {
    let report = CampaignReport::merge(vec![shard(0, &[1, 3])]).unwrap();
    let junit = to_junit(&report);
    assert!(junit.contains("tests=\"2\" failures=\"1\""), "{junit}");
    assert_eq!(junit.matches("<testcase").count(), 2);
    let md = to_markdown(&report);
    assert!(md.contains("| 2 | 200 | 60 |") && md.contains("seed **3**"), "{md}");
    assert!(md.contains("Time by kind of step: flush 87% (2.0 ms)  read 13% (30 µs)."), "{md}");
    let html = to_html(&report);
    assert_eq!(html.matches("<svg").count(), 7);
    assert!(html.contains("no faults injected") && html.contains("no restarts"), "{html}");
    assert!(html.contains("Probes never hit") && html.contains("class=\"bar\""));
    assert!(html.contains("Where the time goes: flush 87% (2.0 ms)"), "{html}");
}

#[test]
fn time_breakdown_lists_the_biggest_share_first_with_means() {
    let t = shard(0, &[1, 2]).totals();
    // flush: 4 ms of 4.6 ms (87%), 2 ms a step; read: 0.6 ms (13%), 30 µs a step.
    assert_eq!(t.time_breakdown(), "flush 87% (2.0 ms)  read 13% (30 µs)");
    assert_eq!(Totals::default().time_breakdown(), "");
}

/// A replicated campaign's page charts leader changes, lag and replication events; a
/// one-node campaign's page has none of them.
#[test]
fn replication_charts_appear_only_for_replicated_runs() {
    let mut replicated = run(1, false);
    replicated.replication = [("leader_changes".to_string(), 3), ("max_lag".to_string(), 7)].into();
    let page = |runs: Vec<RunReport>| to_html(&CampaignReport { runs, ..Default::default() });
    let with = page(vec![replicated, run(2, false)]);
    for id in ["id=\"leaders\"", "id=\"lag\"", "id=\"replication\""] {
        assert!(with.contains(id), "{id} missing");
    }
    assert!(with.contains(">leader_changes<"), "the events chart lists leader changes");
    assert!(!with.contains(">max_lag<"), "lag is charted by seed, not summed as an event");
    let without = page(vec![run(2, false)]);
    assert!(!without.contains("id=\"leaders\""));
}

/// Shards merge only into the campaign they belong to: one commit, one plant (or none).
#[test]
fn merge_refuses_shards_of_different_campaigns() {
    let planted = |plant: &str| CampaignReport { plant: Some(plant.into()), ..shard(1, &[1]) };
    let other_commit = CampaignReport { commit: "def".into(), ..shard(1, &[1]) };
    let refused = |b| CampaignReport::merge(vec![shard(0, &[0]), b]).unwrap_err();
    assert_eq!(refused(other_commit), "shards of different commits: abc and def");
    assert_eq!(
        refused(planted("gc-ignores-cutoff")),
        "shards of different plants: no plant and gc-ignores-cutoff"
    );
    let both = vec![planted("a"), CampaignReport { plant: Some("a".into()), ..shard(0, &[0]) }];
    assert_eq!(CampaignReport::merge(both).unwrap().plant.as_deref(), Some("a"));
    let mixed = CampaignReport::merge(vec![planted("a"), planted("b")]);
    assert_eq!(mixed.unwrap_err(), "shards of different plants: a and b");
}

/// The summary counts runs by profile and sums the replicated runs' counts; the book's
/// replay comparison covers groups of one only.
#[test]
fn the_summary_counts_profiles_and_replication_and_compares_only_lone_replays() {
    let mut report = shard(0, &[0, 1, 2]);
    report.runs[0].knobs = "replicas=1 profile=cql keys=2".into();
    report.runs[1].knobs = "replicas=3 profile=cql".into();
    report.runs[2].knobs = "replicas=3 profile=redis".into();
    report.runs[0].replayed = 4;
    report.runs[0].expected_replayed = 4;
    report.runs[1].replayed = 9; // replicated: judged by convergence, not the book
    for run in &mut report.runs[1..] {
        run.replication = [("snapshots_installed".to_string(), 2)].into();
    }
    assert_eq!(report.profile_counts(), [("cql".to_string(), 2), ("redis".to_string(), 1)].into());
    assert_eq!(report.replication_totals(), [("snapshots_installed".to_string(), 4)].into());
    let md = to_markdown(&report);
    assert!(md.contains("replayed 4, entries above the flushed frontiers 4 (equal)"), "{md}");
    assert!(md.contains("Runs by profile: cql 2, redis 1."), "{md}");
    assert!(md.contains("Replication: snapshots_installed 4."), "{md}");
}

/// The morning-after diff: a failure signature only the new campaign has is new, one only
/// the old had is fixed; probes that went to zero show.
#[test]
fn a_diff_names_new_and_fixed_failure_signatures() {
    let mut base = shard(0, &[1, 3]);
    base.runs[1].knobs = "profile=cql".into();
    let mut new = shard(0, &[1, 3, 5]);
    new.commit = "def".into();
    new.runs[1].failure = None; // seed 3 fixed
    new.runs[2].failure = Some(FailureReport {
        kind: "select".into(),
        op: "cql @T5 SELECT * FROM t".into(),
        ..Default::default()
    });
    new.runs[2].knobs = "replicas=3 profile=cql".into();
    new.runs.iter_mut().for_each(|r| r.probes.clear());
    let text = diff(&base, &new);
    assert!(text.starts_with("docsim report diff: abc (2 seeds) -> def (3 seeds)"), "{text}");
    assert!(
        text.contains("new failure signatures: 1\n  select · cql SELECT · profile=cql: seeds 5"),
        "{text}"
    );
    assert!(
        text.contains("fixed failure signatures: 1\n  Get · get · profile=cql: seeds 3"),
        "{text}"
    );
    assert!(text.contains("still failing failure signatures: 0"), "{text}");
    assert!(text.contains("  gc.dropped: "), "a probe gone to zero shows: {text}");
    assert!(has_new_failures(&base, &new) && !has_new_failures(&new, &new));
}

/// A campaign names its group sizes, so a replicated report and a merged one say what
/// they hold (they were all "docsim torture").
#[test]
fn a_campaign_is_titled_by_its_group_sizes() {
    let mut report = shard(0, &[1, 2]);
    assert_eq!(report.title(), "docsim torture");
    report.runs[0].knobs = "replicas=3 profile=cql".into();
    report.runs[1].knobs = "replicas=3 profile=nested".into();
    assert_eq!(report.title(), "docsim torture, 3 replicas");
    report.runs[1].knobs = "replicas=1 profile=nested".into();
    assert_eq!(report.title(), "docsim torture, 1 and 3 replicas");
    assert!(to_junit(&report).contains("<testsuite name=\"docsim torture, 1 and 3 replicas\""));
    assert!(to_markdown(&report).starts_with("# docsim torture, 1 and 3 replicas — commit"));
    assert!(to_html(&report).contains("<h1>docsim torture, 1 and 3 replicas — commit"));
}

/// The HTML report's first screen says pass or fail, then the failures grouped by
/// signature with their seeds, the reproduce and shrink commands and a link to the
/// reproducer, before any chart.
#[test]
fn the_html_report_leads_with_its_failures_grouped() {
    let mut report = shard(0, &[1, 3, 4]);
    for run in report.runs.iter_mut().filter(|r| r.seed != 1) {
        run.failure = Some(FailureReport {
            kind: "select".into(),
            op: "cql SELECT * FROM t".into(),
            reproducer: Some(format!("runs/{}/repro.ds", run.seed)),
            ..Default::default()
        });
    }
    report.plant = Some("ttl-off-by-one".into());
    let html = to_html(&report);
    let verdict = html.find("FAIL — 2 of 3 seeds, 1 failure signature<").expect("a verdict");
    let first_chart = html.find("<svg").expect("charts");
    assert!(verdict < first_chart, "the verdict comes before the charts");
    let row = "<tr><td>select · cql SELECT · profile=? · plant=ttl-off-by-one</td><td>3, 4</td>";
    assert!(html.contains(row), "{html}");
    assert!(
        html.contains("docsim script --plant ttl-off-by-one </code><a href=\"runs/3/repro.ds\">")
    );
    assert!(html.contains("<code>docsim shrink runs/3</code>"));
    let passing = to_html(&shard(0, &[1, 2]));
    assert!(passing.contains("PASS — 2 seeds, no failure"));
}

/// Per-seed bars mark failed seeds in red, and every bar chart names its axes.
#[test]
fn per_seed_bars_mark_failed_seeds_and_axes_are_named() {
    let html = to_html(&shard(0, &[1, 3])); // seed 3 fails
    let ops = &html[html.find("<figure id=\"ops\"").expect("ops chart")..];
    let ops = &ops[..ops.find("</figure>").expect("its end")];
    assert!(ops.contains("fill=\"#c0504d\"><title>seed 3:"), "{ops}");
    assert!(ops.contains("fill=\"#4a7bd0\"><title>seed 1:"), "{ops}");
    assert!(ops.contains(">seeds, in order</text>") && ops.contains(" ops/s</text>"), "{ops}");
}

/// Seeds by profile and by storage configuration, with their failures, in the HTML.
#[test]
fn seeds_are_counted_by_profile_and_storage_configuration() {
    let mut report = shard(0, &[1, 2, 3]); // seed 3 fails
    report.runs[0].knobs = "replicas=1 profile=cql memstore=off storage=[block=32KiB bloom]".into();
    report.runs[1].knobs = "replicas=1 profile=cql storage=[block=4KiB no-bloom] x=1".into();
    report.runs[2].knobs = "replicas=1 profile=redis storage=[block=32KiB bloom]".into();
    let storage = report.by_knob("storage");
    assert_eq!(storage["[block=32KiB bloom]"], (2, 1));
    assert_eq!(storage["[block=4KiB no-bloom]"], (1, 0));
    assert_eq!(report.by_knob("profile")["redis"], (1, 1));
    assert_eq!(report.by_knob("nothing")["?"], (3, 1));
    let html = to_html(&report);
    assert!(html.contains(">redis [1 failed]</text>"), "{html}");
    assert!(html.contains(">[block=32KiB bloom] [1 failed]</text>"), "{html}");
}
