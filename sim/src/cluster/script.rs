//! Replicated docscript: a script whose first command is `cluster replicas=<n> seed=<s>`
//! runs under madsim with that seed (message delays and order come from it); every fault
//! is an explicit command (`command.rs` lists them), so the output is a function of the
//! text. The output is the run's trace: what each command printed, the leaders the
//! controller saw, each write's answer, and `check:` lines (the first failure, or `check:
//! ok` after `converge`).

use super::command::{parse_command, parse_header, Command};
use super::{Cluster, ClusterConfig, Knobs};
use docsim_engine::canary::Plants;
use docsim_engine::notation::ParseError;
use docsim_engine::script::strip_comment;

/// Run a replicated script; returns its output, or the first line that does not parse.
pub fn run_cluster_script(text: &str, plants: Plants) -> Result<String, ParseError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, strip_comment(l).trim()));
    let (line, header) = lines.find(|(_, l)| !l.is_empty()).unwrap_or((1, ""));
    let header = parse_header(header, line)?;
    let commands: Vec<(usize, Command)> = lines
        .filter(|(_, l)| !l.is_empty())
        .map(|(n, l)| parse_command(l, n).map(|c| (n, c)))
        .collect::<Result<_, _>>()?;
    let config = ClusterConfig {
        seed: header.seed,
        replicas: header.replicas,
        ops: 0,
        faults: false,
        plants,
    };
    let knobs = Knobs::scripted(header.loss_percent, header.max_skew_us as i64);
    let mut runtime =
        madsim::runtime::Runtime::with_seed_and_config(header.seed, madsim::Config::default());
    runtime.set_allow_system_thread(true);
    Ok(runtime.block_on(run(config, knobs, commands)))
}

/// Whether a script is a replicated one (its first command is `cluster`).
pub fn is_cluster_script(text: &str) -> bool {
    let first = text.lines().map(|l| strip_comment(l).trim()).find(|l| !l.is_empty());
    first.is_some_and(|l| l.starts_with("cluster ") || l == "cluster")
}

async fn run(config: ClusterConfig, knobs: Knobs, commands: Vec<(usize, Command)>) -> String {
    let max_skew_us = knobs.max_skew_us as u64;
    let group = config.replicas as u64;
    let mut cluster = match Cluster::start(config, knobs) {
        Ok(cluster) => cluster,
        Err(e) => return format!("error: {e}\n"),
    };
    for (line, command) in commands {
        match check_nodes(&command, cluster.ids().count() as u64, group, max_skew_us) {
            Err(e) => cluster.trace(format!("error: line {line}: {e}")),
            Ok(()) => cluster.step(command).await,
        }
    }
    cluster.outcome.trace.iter().map(|l| format!("{l}\n")).collect()
}

/// The replicas a command names exist; a partition's two sides split the group.
/// The replicas a command names were started (`replicas` of them; a `conf` change may
/// name the spare, `group` + 1, which it starts); a partition's groups split them all; a
/// skew stays within the header's bound (a restarted replica's quiet time assumes it).
fn check_nodes(
    command: &Command,
    replicas: u64,
    group: u64,
    max_skew_us: u64,
) -> Result<(), String> {
    if let Command::Skew(_, skew_us) = command {
        if skew_us.unsigned_abs() > max_skew_us {
            return Err(format!("a skew of {skew_us}us is beyond the header's max-skew"));
        }
    }
    if let Command::Conf { change, to } = command {
        if let Some(i) = change.nodes().into_iter().find(|&i| i == 0 || i > group + 1) {
            return Err(format!("no replica {i} (1..={}, the last a spare)", group + 1));
        }
        if let Some(i) = to.filter(|&i| i == 0 || i > replicas) {
            return Err(format!("no replica {i} (1..={replicas})"));
        }
        return Ok(());
    }
    let named: Vec<u64> = match command {
        Command::Write { to: Some(i), .. } | Command::Get { from: i, .. } => vec![*i],
        Command::Crash(i, _) | Command::Restart(i) | Command::Flush(i) => vec![*i],
        Command::Disarm(i) | Command::Skew(i, _) | Command::Slow(i, _) => vec![*i],
        Command::Partition(groups) => groups.concat(),
        Command::Cut(links) => links.iter().flat_map(|&(a, b)| [a, b]).collect(),
        _ => vec![],
    };
    if let Some(i) = named.iter().find(|&&i| i == 0 || i > replicas) {
        return Err(format!("no replica {i} (1..={replicas})"));
    }
    if let Command::Cut(links) = command {
        if links.iter().any(|(a, b)| a == b) {
            return Err("a link joins two replicas".into());
        }
    }
    if let Command::Partition(groups) = command {
        let mut all: Vec<u64> = groups.concat();
        all.sort_unstable();
        if all != (1..=replicas).collect::<Vec<_>>() {
            return Err(format!("a partition names every replica 1..={replicas} once"));
        }
    }
    Ok(())
}
