//! Failure blocks and run reports on disk (`reports/runs/<seed>/`).

use crate::simulate::{RunConfig, RunOutcome};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The commit this binary was built from.
pub const COMMIT: &str = env!("DOCSIM_COMMIT");

/// What `run.json` records of a failed run.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct RunMeta {
    /// The seed.
    pub seed: u64,
    /// The planted bug, by name.
    pub plant: Option<String>,
    /// The failure's fingerprint.
    pub kind: crate::simulate::FailureKind,
    /// The storage configuration, by index in the metamorphic set (`--config`).
    #[serde(default)]
    pub storage: usize,
}

/// `--plant NAME ` for a command line, or nothing.
pub fn plant_arg(plant: Option<&str>) -> String {
    plant.map(|p| format!("--plant {p} ")).unwrap_or_default()
}

/// Where `storage` is in the metamorphic set (`--config`).
pub fn storage_index(storage: docsim_engine::StorageConfig) -> usize {
    let set = docsim_engine::StorageConfig::SET;
    set.iter().position(|s| *s == storage).expect("runs use the set's configurations")
}

/// The one command that reproduces a run.
pub fn reproduce_command(config: &RunConfig, seed: u64) -> String {
    let mut cmd = format!("docsim run --seed {seed} --ops {}", config.ops);
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
    cmd
}

/// The banner printed before a run: seed, commit, every knob.
pub fn banner(outcome: &RunOutcome, config: &RunConfig) -> String {
    format!(
        "docsim run seed={} (0x{:016x}) commit={COMMIT} ops={}{}\nknobs: {}",
        outcome.seed,
        outcome.seed,
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
    let mut out = format!("FAIL seed={} commit={COMMIT} step={}\n", outcome.seed, f.step);
    let _ = writeln!(out, "  op:       {}", f.op);
    let _ = writeln!(
        out,
        "  expected: {}",
        if f.expected.is_empty() { "(success, no output)".into() } else { f.expected.join(" | ") }
    );
    let _ = writeln!(
        out,
        "  actual:   {}",
        if f.actual.is_empty() { "(no output)".into() } else { f.actual.join(" | ") }
    );
    let _ = writeln!(out, "  last operations:");
    for op in &f.last_ops {
        let _ = writeln!(out, "    {op}");
    }
    let _ = writeln!(out, "  reproduce: {}", reproduce_command(config, outcome.seed));
    if let Some(dir) = report_dir {
        let plant = plant_arg(config.plant.map(|p| p.name()));
        let _ =
            writeln!(out, "  reproducer: docsim script {plant}{}", dir.join("repro.ds").display());
    }
    out
}

/// Write `<dir>/<seed>/` with the reproducer, the failure block and the knobs.
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
         # run alone: docsim script {plant}{}\n# failing step {}: {}\n",
        outcome.seed,
        outcome.knobs,
        run_dir.join("repro.ds").display(),
        f.step,
        f.op
    );
    std::fs::write(run_dir.join("repro.ds"), format!("{header}{}", f.reproducer))?;
    std::fs::write(run_dir.join("failure.txt"), failure_block(outcome, config, Some(&run_dir)))?;
    // For `docsim shrink`: the op log and what failed.
    let log = OpLog { format: OP_LOG_FORMAT, ops: f.ops.clone() };
    let ops = serde_json::to_string(&log).map_err(std::io::Error::other)?;
    std::fs::write(run_dir.join("ops.json"), ops)?;
    let meta = RunMeta {
        seed: outcome.seed,
        plant: config.plant.map(|p| p.name().into()),
        kind: f.kind,
        storage: storage_index(config.storage),
    };
    std::fs::write(
        run_dir.join("run.json"),
        serde_json::to_string(&meta).map_err(std::io::Error::other)?,
    )?;
    Ok(run_dir)
}

/// A run as the reports crate sees it.
pub fn run_report(outcome: &RunOutcome, reports_dir: Option<&Path>) -> docsim_reports::RunReport {
    let failure = outcome.failure.as_ref().map(|f| docsim_reports::FailureReport {
        step: f.step,
        kind: format!("{:?}", f.kind),
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
        replication: Default::default(),
        failure,
    }
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

/// The form of `ops.json`. 2: typed ops in the model's vocabulary, wrapped with this number
/// (1, until the typed node: a bare list whose document ops were docscript lines).
pub const OP_LOG_FORMAT: u32 = 3;

/// `ops.json`: a failed run's ops, for `docsim shrink`.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct OpLog {
    pub format: u32,
    pub ops: Vec<docsim_workloads::Op>,
}

/// Read an `ops.json`; an older form is named as such (rerun the seed to write it anew).
pub fn read_op_log(text: &str) -> Result<Vec<docsim_workloads::Op>, String> {
    #[derive(serde::Deserialize)]
    struct Format {
        format: Option<u32>,
    }
    let format = serde_json::from_str::<Format>(text).ok().and_then(|f| f.format).unwrap_or(1);
    if format != OP_LOG_FORMAT {
        return Err(format!(
            "op log format {format}; this docsim reads format {OP_LOG_FORMAT}: rerun the seed \
             (its reproduce command) to write it anew"
        ));
    }
    serde_json::from_str::<OpLog>(text).map(|log| log.ops).map_err(|e| e.to_string())
}
