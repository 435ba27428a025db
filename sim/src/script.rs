//! `docsim script`: a docscript text run by the executor (`exec/`). A script whose first
//! command is a `cluster replicas=<n> seed=<s>` header runs that group under madsim with
//! that seed (message delays and order come from it); without a header it is a group of
//! one, seed 0. Every fault is an explicit command, so the output is a function of the
//! text. A later header ends the cluster and starts a fresh one (the backup store
//! outlives it). The output is the run's trace; `expect` lines check the previous command's
//! output; a line that does not parse stops the run there (what ran before it printed).

use crate::exec::{Cluster, ScriptSink, Setup};
use docsim_engine::canary::Plants;
use docsim_engine::script::{parse_line, strip_comment, Command, Header};
use docsim_engine::StorageConfig;

/// Raft log segment size of script runs: small, so that scripts see segment rolls, log
/// GC and (with replicas) snapshots.
pub const SEGMENT_BYTES: usize = 1024;

/// How a script run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptRun {
    /// What it printed.
    pub output: String,
    /// Commands that failed (printed `error:` no `expect` took back), `expect` lines that
    /// did not hold, and `check:` failures.
    pub failures: usize,
    /// A line did not parse (the run stopped there).
    pub parse_error: bool,
}

impl ScriptRun {
    /// Whether the run had no error at all.
    pub fn ok(&self) -> bool {
        self.failures == 0 && !self.parse_error
    }
}

/// Run `text` with `plants` switched on, every node storing as `storage` says, its
/// backups in a scratch directory removed after the run.
pub fn run_script(text: &str, plants: Plants, storage: StorageConfig) -> ScriptRun {
    match crate::ScratchDir::new() {
        Ok(store) => run_script_with_store(text, plants, storage, Some(store.path())),
        Err(_) => run_script_with_store(text, plants, storage, None),
    }
}

/// [`run_script`] with the backup store `backups` (none: backups are refused). A header
/// after the first command ends the cluster and starts a fresh one as it says (docsim's
/// extension): every node, disk and table gone, the backup store kept.
pub fn run_script_with_store(
    text: &str,
    plants: Plants,
    storage: StorageConfig,
    backups: Option<&std::path::Path>,
) -> ScriptRun {
    let mut whole = ScriptRun { output: String::new(), failures: 0, parse_error: false };
    for (first_line, lines) in clusters(text) {
        let header = lines
            .iter()
            .find_map(|l| parse_line(strip_comment(l), 1).ok().flatten())
            .and_then(|c| match c {
                Command::Header(h) => Some(h),
                _ => None,
            })
            .unwrap_or(Header { replicas: 1, seed: 0, loss_percent: 0, max_skew_us: 0 });
        let mut setup = Setup::scripted(header, plants, SEGMENT_BYTES);
        // RocksDB statistics for `stats` (torture runs keep none).
        setup.storage = vec![StorageConfig { statistics: true, ..storage }; header.replicas + 1];
        setup.backups = backups.map(|b| b.to_owned());
        let mut runtime =
            madsim::runtime::Runtime::with_seed_and_config(header.seed, madsim::Config::default());
        runtime.set_allow_system_thread(true);
        let lines: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
        let run = runtime.block_on(async move { run(&lines, first_line, setup).await });
        whole.output += &run.output;
        whole.failures += run.failures;
        if run.parse_error {
            whole.parse_error = true;
            break;
        }
    }
    whole
}

/// The script's clusters: runs of lines, each after the first starting at a header, with
/// the index of its first line.
fn clusters(text: &str) -> Vec<(usize, Vec<&str>)> {
    let mut out: Vec<(usize, Vec<&str>)> = vec![(0, Vec::new())];
    let mut commands = 0;
    for (i, line) in text.lines().enumerate() {
        let command = parse_line(strip_comment(line), i + 1).ok().flatten();
        if matches!(command, Some(Command::Header(_))) && commands > 0 {
            out.push((i, Vec::new()));
            commands = 0;
        }
        commands += usize::from(command.is_some());
        out.last_mut().expect("one cluster at least").1.push(line);
    }
    out
}

async fn run(lines: &[String], first_line: usize, setup: Setup) -> ScriptRun {
    let mut cluster = match Cluster::start(setup, ScriptSink::default()) {
        Ok(cluster) => cluster,
        Err(e) => {
            return ScriptRun { output: format!("error: {e}\n"), failures: 1, parse_error: false }
        }
    };
    let (mut parse_error, mut first) = (false, true);
    for (i, line) in lines.iter().enumerate() {
        let i = i + first_line;
        let command = match parse_line(strip_comment(line), i + 1) {
            Ok(None) => continue,
            Ok(Some(command)) => command,
            Err(e) => {
                cluster_trace(&mut cluster, format!("error: {e}"));
                parse_error = true;
                break;
            }
        };
        let is_first = std::mem::replace(&mut first, false);
        match command {
            Command::Header(_) if is_first => {}
            Command::Header(_) => unreachable!("a later header starts another cluster"),
            Command::Expect(want) => {
                if let Err(complaint) = cluster.expect(&want) {
                    cluster_trace(&mut cluster, format!("error: line {}: {complaint}", i + 1));
                }
            }
            command => cluster.step(command).await,
        }
    }
    let output: String = cluster.trace_lines().iter().map(|l| format!("{l}\n")).collect();
    let broken = usize::from(cluster.broken().is_some());
    ScriptRun { output, failures: cluster.failed_commands + broken, parse_error }
}

fn cluster_trace(cluster: &mut Cluster, line: String) {
    cluster.print(line);
}
