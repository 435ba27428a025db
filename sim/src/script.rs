//! `docsim script`: a docscript text run by the executor (`exec/`). A script whose first
//! command is a `cluster replicas=<n> seed=<s>` header runs that group under madsim with
//! that seed (message delays and order come from it); without a header it is a group of
//! one, seed 0. Every fault is an explicit command, so the output is a function of the
//! text. The output is the run's trace; `expect` lines check the previous command's
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

/// Run `text` with `plants` switched on, every node storing as `storage` says.
pub fn run_script(text: &str, plants: Plants, storage: StorageConfig) -> ScriptRun {
    let header = text
        .lines()
        .enumerate()
        .find_map(|(i, l)| parse_line(strip_comment(l), i + 1).ok().flatten())
        .and_then(|c| match c {
            Command::Header(h) => Some(h),
            _ => None,
        })
        .unwrap_or(Header { replicas: 1, seed: 0, loss_percent: 0, max_skew_us: 0 });
    let mut setup = Setup::scripted(header, plants, SEGMENT_BYTES);
    // RocksDB statistics for `stats` (torture runs keep none).
    setup.storage = vec![StorageConfig { statistics: true, ..storage }; header.replicas + 1];
    let mut runtime =
        madsim::runtime::Runtime::with_seed_and_config(header.seed, madsim::Config::default());
    runtime.set_allow_system_thread(true);
    let text = text.to_owned();
    runtime.block_on(async move { run(&text, setup).await })
}

async fn run(text: &str, setup: Setup) -> ScriptRun {
    let mut cluster = match Cluster::start(setup, ScriptSink::default()) {
        Ok(cluster) => cluster,
        Err(e) => {
            return ScriptRun { output: format!("error: {e}\n"), failures: 1, parse_error: false }
        }
    };
    let (mut extra, mut parse_error, mut first) = (Vec::new(), false, true);
    for (i, line) in text.lines().enumerate() {
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
            Command::Header(_) => {
                let line = i + 1;
                cluster_trace(&mut cluster, format!("error: line {line}: a header comes first"));
                extra.push(line);
            }
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
    ScriptRun { output, failures: cluster.failed_commands + extra.len() + broken, parse_error }
}

fn cluster_trace(cluster: &mut Cluster, line: String) {
    cluster.print(line);
}
