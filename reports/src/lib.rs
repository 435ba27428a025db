//! # docsim-reports: what a run and a torture campaign report, and how it is rendered
//!
//! A [`RunReport`] is one seed: its knobs, how much it did, how many reads were checked,
//! which coverage probes fired, and its failure if it failed. A [`CampaignReport`] is many
//! runs — one shard of a nightly matrix, or all of them after [`CampaignReport::merge`].
//! Renderers turn a campaign into JSON (the interchange format: shards are merged from
//! it), Markdown (a CI summary), a self-contained HTML page with inline SVG charts, and
//! JUnit XML (one test case per seed) for CI dashboards; `diff` compares a campaign with the
//! last one (new and fixed failure signatures, throughput, probes, faults). Nothing here
//! knows the engine:
//! reports are plain data.

mod diff;
mod html;
mod render;

pub use diff::{diff, has_new_failures, signature, signatures};
pub use html::to_html;
pub use render::{to_junit, to_markdown};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A failed check.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FailureReport {
    /// The failing step.
    pub step: usize,
    /// The failure's fingerprint (which check failed).
    pub kind: String,
    /// The failing operation (docscript).
    pub op: String,
    /// What the model expected.
    pub expected: Vec<String>,
    /// What the engine did.
    pub actual: Vec<String>,
    /// Where the reproducer was written.
    pub reproducer: Option<String>,
}

/// Wall-clock time spent in one kind of step, summed over its steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepTime {
    pub steps: u64,
    pub seconds: f64,
}

impl StepTime {
    /// Add `other`'s steps and seconds.
    pub fn add(&mut self, other: StepTime) {
        self.steps += other.steps;
        self.seconds += other.seconds;
    }
}

/// One seed's run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub seed: u64,
    /// Every knob the seed chose.
    pub knobs: String,
    pub ops: usize,
    pub steps: usize,
    pub checked_reads: usize,
    pub compactions: usize,
    /// Wall-clock seconds the run took.
    pub seconds: f64,
    /// The trace hash (hex).
    pub trace_hash: String,
    /// Coverage probes that fired, with counts.
    pub probes: BTreeMap<String, u64>,
    /// Faults injected, by kind (the crash-injecting disk reports here).
    pub faults: BTreeMap<String, u64>,
    /// Log entries replayed at restarts.
    pub replayed: u64,
    /// Entries the simulator's book expected above the flushed frontiers (must equal
    /// `replayed` whenever the run passed).
    #[serde(default)]
    pub expected_replayed: u64,
    /// Crashes and restarts.
    #[serde(default)]
    pub crashes: u64,
    #[serde(default)]
    pub restarts: u64,
    /// Where the run's wall-clock time went, by kind of step (`read`, `write`, `flush`,
    /// `compaction` with its re-checks, `crash`, `restart`). Measured, never traced.
    #[serde(default)]
    pub step_time: BTreeMap<String, StepTime>,
    /// Wall-clock time by part of the simulator: `engine` (the node's calls), `model`
    /// (the reference model's), `harness` (the rest: rendering, trace, checks, schedule).
    #[serde(default)]
    pub part_time: BTreeMap<String, StepTime>,
    /// A replicated run's counts (`leader_changes`, `max_lag`, refused reads, ...); empty
    /// for one node.
    #[serde(default)]
    pub replication: BTreeMap<String, u64>,
    pub failure: Option<FailureReport>,
}

/// A torture campaign, or one shard of one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CampaignReport {
    /// The commit the binary was built from.
    pub commit: String,
    /// The planted bug, if the campaign tested the tester.
    pub plant: Option<String>,
    /// The shards merged into this report (`i/n`).
    pub shards: Vec<String>,
    /// Every probe the binary knows (to list those never hit).
    pub known_probes: Vec<String>,
    /// Wall-clock seconds, summed over shards.
    pub seconds: f64,
    /// Runs, by seed.
    pub runs: Vec<RunReport>,
}

/// The value of knob `name` in a run's knobs: `name=value`, or `name=[a b c]` whole.
fn knob<'a>(knobs: &'a str, name: &str) -> Option<&'a str> {
    let at = knobs
        .match_indices(&format!("{name}="))
        .find(|(i, _)| *i == 0 || knobs.as_bytes()[i - 1] == b' ')?
        .0
        + name.len()
        + 1;
    let rest = &knobs[at..];
    let end = match rest.starts_with('[') {
        true => rest.find(']').map_or(rest.len(), |e| e + 1),
        false => rest.find(' ').unwrap_or(rest.len()),
    };
    Some(&rest[..end])
}

/// Totals of a campaign.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    pub seeds: usize,
    pub ops: usize,
    pub steps: usize,
    pub checked_reads: usize,
    pub compactions: usize,
    pub failures: usize,
    pub ops_per_second: f64,
    pub crashes: u64,
    pub restarts: u64,
    pub replayed: u64,
    pub expected_replayed: u64,
    /// Wall-clock time by kind of step, summed over runs.
    pub step_time: BTreeMap<String, StepTime>,
    /// Wall-clock time by part of the simulator (engine, model, harness), summed.
    pub part_time: BTreeMap<String, StepTime>,
}

impl Totals {
    /// Where the time went, biggest share first: `read 23% (38 µs)  write 17% (22 µs) ...`
    /// (each kind's share of the time spent in steps, and its mean per step).
    pub fn time_breakdown(&self) -> String {
        breakdown(&self.step_time)
    }

    /// Where the time went by part of the simulator: `engine 71% (24 µs)  model ...`
    /// (each part's share, and its mean per step).
    pub fn part_breakdown(&self) -> String {
        breakdown(&self.part_time)
    }
}

/// Times by name, summed over runs.
fn sum_times<'a>(
    runs: impl Iterator<Item = &'a BTreeMap<String, StepTime>>,
) -> BTreeMap<String, StepTime> {
    let mut sum: BTreeMap<String, StepTime> = BTreeMap::new();
    for (name, t) in runs.flatten() {
        sum.entry(name.clone()).or_default().add(*t);
    }
    sum
}

/// Each entry's share of the total seconds, biggest first, with its mean per step.
fn breakdown(times: &BTreeMap<String, StepTime>) -> String {
    let total_s: f64 = times.values().map(|t| t.seconds).sum();
    let mut kinds: Vec<_> = times.iter().collect();
    kinds.sort_by(|a, b| b.1.seconds.total_cmp(&a.1.seconds).then(a.0.cmp(b.0)));
    let shown: Vec<String> = kinds
        .into_iter()
        .map(|(kind, t)| {
            let share = if total_s > 0.0 { 100.0 * t.seconds / total_s } else { 0.0 };
            let mean_us = t.seconds * 1e6 / t.steps.max(1) as f64;
            format!("{kind} {share:.0}% ({})", micros(mean_us))
        })
        .collect();
    shown.join("  ")
}

/// `38 µs`, or `2.7 ms` from a millisecond on.
fn micros(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

impl CampaignReport {
    /// Merge shard reports into one campaign (runs sorted by seed, probes unioned).
    pub fn merge(shards: Vec<CampaignReport>) -> Result<CampaignReport, String> {
        let mut merged = CampaignReport::default();
        for (i, shard) in shards.into_iter().enumerate() {
            if i > 0 && merged.commit != shard.commit {
                return Err(format!(
                    "shards of different commits: {} and {}",
                    merged.commit, shard.commit
                ));
            }
            if i > 0 && merged.plant != shard.plant {
                let name = |plant: &Option<String>| plant.clone().unwrap_or("no plant".into());
                let (a, b) = (name(&merged.plant), name(&shard.plant));
                return Err(format!("shards of different plants: {a} and {b}"));
            }
            merged.commit = shard.commit;
            merged.plant = shard.plant;
            merged.shards.extend(shard.shards);
            for probe in shard.known_probes {
                if !merged.known_probes.contains(&probe) {
                    merged.known_probes.push(probe);
                }
            }
            merged.seconds += shard.seconds;
            merged.runs.extend(shard.runs);
        }
        merged.runs.sort_by_key(|r| r.seed);
        if let Some(w) = merged.runs.windows(2).find(|w| w[0].seed == w[1].seed) {
            return Err(format!("seed {} appears in two shards", w[0].seed));
        }
        merged.known_probes.sort();
        Ok(merged)
    }

    /// Totals over all runs.
    pub fn totals(&self) -> Totals {
        let ops: usize = self.runs.iter().map(|r| r.ops).sum();
        let busy: f64 = self.runs.iter().map(|r| r.seconds).sum();
        Totals {
            seeds: self.runs.len(),
            ops,
            steps: self.runs.iter().map(|r| r.steps).sum(),
            checked_reads: self.runs.iter().map(|r| r.checked_reads).sum(),
            compactions: self.runs.iter().map(|r| r.compactions).sum(),
            failures: self.runs.iter().filter(|r| r.failure.is_some()).count(),
            ops_per_second: if busy > 0.0 { ops as f64 / busy } else { 0.0 },
            crashes: self.runs.iter().map(|r| r.crashes).sum(),
            restarts: self.runs.iter().map(|r| r.restarts).sum(),
            // The book predicts the replays of groups of one only (with replicas the
            // committed log and convergence judge them).
            replayed: self.alone().map(|r| r.replayed).sum(),
            expected_replayed: self.alone().map(|r| r.expected_replayed).sum(),
            step_time: sum_times(self.runs.iter().map(|r| &r.step_time)),
            part_time: sum_times(self.runs.iter().map(|r| &r.part_time)),
        }
    }

    /// Probe hits summed over runs.
    pub fn probe_totals(&self) -> BTreeMap<String, u64> {
        let mut totals: BTreeMap<String, u64> =
            self.known_probes.iter().map(|p| (p.clone(), 0)).collect();
        for run in &self.runs {
            for (probe, n) in &run.probes {
                *totals.entry(probe.clone()).or_default() += n;
            }
        }
        totals
    }

    /// Known probes that no run hit.
    pub fn probes_never_hit(&self) -> Vec<String> {
        self.probe_totals().into_iter().filter(|(_, n)| *n == 0).map(|(p, _)| p).collect()
    }

    /// The runs of groups of one (no replication counts).
    fn alone(&self) -> impl Iterator<Item = &RunReport> {
        self.runs.iter().filter(|r| r.replication.is_empty())
    }

    /// Replication counts (leader changes, snapshots installed, reads refused, ...), summed
    /// over the replicated runs.
    pub fn replication_totals(&self) -> BTreeMap<String, u64> {
        let mut totals = BTreeMap::new();
        for run in &self.runs {
            for (kind, n) in &run.replication {
                *totals.entry(kind.clone()).or_default() += n;
            }
        }
        totals
    }

    /// Runs and failed runs by the value of one of their knobs (`profile`, `storage`, ...;
    /// `?` when a run's knobs lack it).
    pub fn by_knob(&self, name: &str) -> BTreeMap<String, (u64, u64)> {
        let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for run in &self.runs {
            let value = knob(&run.knobs, name).unwrap_or("?").to_owned();
            let counts = out.entry(value).or_default();
            counts.0 += 1;
            counts.1 += u64::from(run.failure.is_some());
        }
        out
    }

    /// Runs by the profile their knobs name (`profile=<name>`).
    pub fn profile_counts(&self) -> BTreeMap<String, u64> {
        let mut counts = BTreeMap::new();
        for run in &self.runs {
            let profile = run.knobs.split_whitespace().find_map(|k| k.strip_prefix("profile="));
            *counts.entry(profile.unwrap_or("?").to_owned()).or_default() += 1;
        }
        counts
    }

    /// The campaign's name: `docsim torture`, with its runs' group sizes (from their
    /// knobs) — `docsim torture, 3 replicas`, or `1 and 3 replicas` after a merge.
    pub fn title(&self) -> String {
        let sizes: std::collections::BTreeSet<u64> = self
            .runs
            .iter()
            .filter_map(|r| r.knobs.split_whitespace().find_map(|k| k.strip_prefix("replicas=")))
            .filter_map(|n| n.parse().ok())
            .collect();
        let sizes: Vec<String> = sizes.iter().map(u64::to_string).collect();
        match sizes.as_slice() {
            [] => "docsim torture".into(),
            [one] if one == "1" => "docsim torture, 1 replica".into(),
            [one] => format!("docsim torture, {one} replicas"),
            [init @ .., last] => format!("docsim torture, {} and {last} replicas", init.join(", ")),
        }
    }

    /// Faults injected, summed by kind.
    pub fn fault_totals(&self) -> BTreeMap<String, u64> {
        let mut totals = BTreeMap::new();
        for run in &self.runs {
            for (kind, n) in &run.faults {
                *totals.entry(kind.clone()).or_default() += n;
            }
        }
        totals
    }

    /// JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("reports serialize")
    }

    /// Parse JSON written by [`CampaignReport::to_json`].
    pub fn from_json(text: &str) -> Result<CampaignReport, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests;
