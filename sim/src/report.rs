//! Failure blocks and run reports on disk (`reports/runs/<seed>/`): the one reproducer
//! writer, for every replica count. A failed run's directory holds `repro.ds` (the run's
//! recorded script ending in what the check expected: it fails under `docsim script`
//! alone), `failure.txt` (the failure block) and `run.json` (what `docsim shrink` needs to
//! run the seed again).

use crate::failure::FailureKind;
use crate::run::{RunConfig, RunOutcome};
use docsim_workloads::Profile;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The commit this binary was built from.
pub const COMMIT: &str = env!("DOCSIM_COMMIT");

/// What `run.json` records of a failed run: its whole configuration and the failure's
/// fingerprint.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RunMeta {
    pub seed: u64,
    pub replicas: usize,
    pub ops: usize,
    pub profile: Option<String>,
    /// The planted bug, by name.
    pub plant: Option<String>,
    /// The storage configuration, by index in the metamorphic set (`--config`).
    pub storage: usize,
    pub byte_faults: bool,
    pub faults: bool,
    /// The failure's fingerprint.
    pub kind: FailureKind,
}

impl RunMeta {
    /// The run's configuration, or what in the file names none this docsim knows.
    pub fn config(&self) -> Result<RunConfig, String> {
        let plant = match &self.plant {
            None => None,
            Some(name) => Some(
                docsim_engine::canary::Plant::from_name(name)
                    .ok_or_else(|| format!("run.json names the planted bug `{name}`: none such"))?,
            ),
        };
        let profile = match &self.profile {
            None => None,
            Some(name) => Some(
                Profile::from_name(name)
                    .ok_or_else(|| format!("run.json names the profile `{name}`: none such"))?,
            ),
        };
        let storage =
            docsim_engine::StorageConfig::SET.get(self.storage).copied().ok_or_else(|| {
                format!("run.json names storage configuration {}: none such", self.storage)
            })?;
        Ok(RunConfig {
            profile,
            plant,
            storage,
            byte_faults: self.byte_faults,
            faults: self.faults,
            ..RunConfig::new(self.seed, self.replicas, self.ops)
        })
    }
}

/// Where `storage` is in the metamorphic set (`--config`).
pub fn storage_index(storage: docsim_engine::StorageConfig) -> usize {
    let set = docsim_engine::StorageConfig::SET;
    set.iter().position(|s| *s == storage).expect("runs use the set's configurations")
}

/// `--plant NAME ` for a command line, or nothing.
pub fn plant_arg(plant: Option<&str>) -> String {
    plant.map(|p| format!("--plant {p} ")).unwrap_or_default()
}

/// The one command that reproduces a run, every option included.
pub fn reproduce_command(config: &RunConfig, seed: u64) -> String {
    let mut cmd = format!("docsim run --seed {seed} --ops {}", config.ops);
    if config.replicas != 1 {
        cmd += &format!(" --replicas {}", config.replicas);
    }
    if let Some(p) = config.profile {
        cmd += &format!(" --profile {}", p.name());
    }
    if let Some(p) = config.plant {
        cmd += &format!(" --plant {}", p.name());
    }
    let storage = storage_index(config.storage);
    if storage > 0 {
        cmd += &format!(" --config {storage}");
    }
    if !config.byte_faults {
        cmd += " --no-byte-faults";
    }
    if !config.faults {
        cmd += " --no-faults";
    }
    cmd
}

/// The banner printed before a run: seed, commit, every knob.
pub fn banner(outcome: &RunOutcome, config: &RunConfig) -> String {
    format!(
        "docsim run seed={} (0x{:016x}) commit={COMMIT} replicas={} ops={}{}\nknobs: {}",
        outcome.seed,
        outcome.seed,
        config.replicas,
        config.ops,
        config.plant.map(|p| format!(" plant={}", p.name())).unwrap_or_default(),
        outcome.knobs
    )
}

/// The failure block.
pub fn failure_block(
    outcome: &RunOutcome,
    config: &RunConfig,
    report_dir: Option<&Path>,
) -> String {
    let Some(f) = &outcome.failure else { return String::new() };
    let mut out =
        format!("FAIL seed={} commit={COMMIT} step={} kind={}\n", outcome.seed, f.step, f.kind);
    let _ = writeln!(out, "  op:       {}", f.op);
    let none = |what: &str| format!("({what})");
    let expected = if f.expected.is_empty() { none("success") } else { f.expected.join(" | ") };
    let actual = if f.actual.is_empty() { none("no output") } else { f.actual.join(" | ") };
    let _ = writeln!(out, "  expected: {expected}");
    let _ = writeln!(out, "  actual:   {actual}");
    let _ = writeln!(out, "  last operations:");
    for op in &f.last_ops {
        let _ = writeln!(out, "    {op}");
    }
    let _ = writeln!(out, "  reproduce: {}", reproduce_command(config, outcome.seed));
    if let Some(dir) = report_dir {
        let plant = plant_arg(config.plant.map(|p| p.name()));
        let _ =
            writeln!(out, "  reproducer: docsim script {plant}{}", dir.join("repro.ds").display());
        let _ = writeln!(out, "  shrink: docsim shrink {}", dir.display());
    }
    out
}

/// Write `<dir>/<seed>/` with the reproducer, the failure block and `run.json`.
pub fn write_run_report(
    dir: &Path,
    outcome: &RunOutcome,
    config: &RunConfig,
) -> std::io::Result<PathBuf> {
    let Some(f) = &outcome.failure else { return Ok(dir.to_owned()) };
    let run_dir = dir.join(outcome.seed.to_string());
    std::fs::create_dir_all(&run_dir)?;
    let plant = plant_arg(config.plant.map(|p| p.name()));
    let header = format!(
        "# docsim reproducer: seed {} commit {COMMIT}\n# knobs: {}\n\
         # run alone: docsim script {plant}{}\n# failing step {} ({}): {}\n",
        outcome.seed,
        outcome.knobs,
        run_dir.join("repro.ds").display(),
        f.step,
        f.kind,
        f.op
    );
    std::fs::write(run_dir.join("repro.ds"), format!("{header}{}", f.reproducer))?;
    std::fs::write(run_dir.join("failure.txt"), failure_block(outcome, config, Some(&run_dir)))?;
    let meta = RunMeta {
        seed: outcome.seed,
        replicas: config.replicas,
        ops: config.ops,
        profile: config.profile.map(|p| p.name().to_owned()),
        plant: config.plant.map(|p| p.name().into()),
        storage: storage_index(config.storage),
        byte_faults: config.byte_faults,
        faults: config.faults,
        kind: f.kind,
    };
    let meta = serde_json::to_string_pretty(&meta).map_err(std::io::Error::other)?;
    std::fs::write(run_dir.join("run.json"), meta)?;
    Ok(run_dir)
}

/// Read a `run.json`, or say what is wrong with it.
pub fn read_run_meta(text: &str) -> Result<RunMeta, String> {
    serde_json::from_str(text).map_err(|e| format!("not a run.json of this docsim: {e}"))
}

/// A run as the reports crate sees it.
pub fn run_report(outcome: &RunOutcome, reports_dir: Option<&Path>) -> docsim_reports::RunReport {
    let failure = outcome.failure.as_ref().map(|f| docsim_reports::FailureReport {
        step: f.step,
        kind: f.kind.name().to_owned(),
        op: f.op.clone(),
        expected: f.expected.clone(),
        actual: f.actual.clone(),
        reproducer: reports_dir
            .map(|d| d.join(outcome.seed.to_string()).join("repro.ds").display().to_string()),
    });
    docsim_reports::RunReport {
        seed: outcome.seed,
        knobs: outcome.knobs.clone(),
        ops: outcome.ops,
        steps: outcome.steps,
        checked_reads: outcome.checked_reads,
        compactions: outcome.compactions,
        seconds: outcome.seconds,
        trace_hash: format!("{:016x}", outcome.trace_hash),
        probes: outcome.probes.clone(),
        faults: outcome.faults.clone(),
        replayed: outcome.replayed,
        expected_replayed: outcome.expected_replayed,
        crashes: outcome.crashes,
        restarts: outcome.restarts,
        step_time: outcome.step_time.iter().map(|(k, t)| (k.to_string(), *t)).collect(),
        part_time: outcome.part_time.iter().map(|(k, t)| (k.to_string(), *t)).collect(),
        replication: replication(outcome),
        failure,
    }
}

/// A replicated run's counts (empty for a group of one).
fn replication(outcome: &RunOutcome) -> std::collections::BTreeMap<String, u64> {
    if outcome.replicas == 1 {
        return Default::default();
    }
    let c = &outcome.counts;
    let count = |n: usize| n as u64;
    let mut out: std::collections::BTreeMap<String, u64> = [
        ("leader_changes", count(c.leader_changes)),
        ("two_leader_steps", count(c.two_leader_steps)),
        ("orphaned_entries", count(c.orphaned)),
        ("proposals_never_committed", count(c.proposals_lost)),
        ("writes_acked", count(c.writes_acked)),
        ("writes_timed_out", count(c.writes_timed_out)),
        ("writes_unanswered", count(c.writes_unanswered)),
        ("max_lag", c.max_lag),
        ("snapshots_installed", count(c.snapshots_installed)),
        ("snapshot_installs_finished_at_boot", count(c.installs_finished_at_boot)),
        ("partitions", count(c.partitions)),
        ("partitions_no_majority", count(c.no_majority_partitions)),
        ("bridges", count(c.bridges)),
        ("membership_changes", count(c.membership_changes)),
        ("slow_disks", count(c.slow_disks)),
        ("reads_served", count(c.reads_served)),
        ("liveness_ms", c.liveness_ms),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for (node, n) in &outcome.checked_by_node {
        out.insert(format!("reads_checked_node{node}"), count(*n));
    }
    for (kind, n) in &c.reads_refused {
        out.insert(format!("reads_refused_{kind}"), count(*n));
    }
    for (kind, n) in &c.writes_refused {
        out.insert(format!("writes_refused_{kind}"), count(*n));
    }
    out
}

/// Write a campaign report as `campaign.json`, `.md`, `.html` and `.xml` (JUnit) in `dir`.
pub fn write_campaign(dir: &Path, report: &docsim_reports::CampaignReport) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("campaign.json"), report.to_json())?;
    std::fs::write(dir.join("campaign.md"), docsim_reports::to_markdown(report))?;
    std::fs::write(dir.join("campaign.html"), docsim_reports::to_html(report))?;
    std::fs::write(dir.join("campaign.xml"), docsim_reports::to_junit(report))?;
    Ok(())
}
