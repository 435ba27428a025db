//! Replicated docscript: a script whose first command is `cluster replicas=<n> seed=<s>`
//! runs under madsim with that seed (message delays and order come from it); every fault
//! is an explicit command, so the output is a function of the text. Commands (README,
//! "Replicated docscript"):
//!
//! ```text
//! cluster replicas=3 seed=7
//! set <path> = <document> [to=<i>]     # through the leader (or replica i); waits 600 ms
//! del <path> [to=<i>]
//! get <path> from=<i> [@now | @safe | @<T>]
//! partition 1,2 | 3                    # (every replica once); heal
//! crash node=<i> [at <stage>]          # after-append|sync|apply|send|vote; restart node=<i>
//! flush node=<i>
//! wait <duration>                      # simulated time passes (ticks, messages)
//! leader                               # who leads now
//! status                               # each replica: role, term, commit, applied, last
//! converge                             # the liveness phase, then the whole-history check
//! ```

use super::check::{Answer, Proposal};
use super::{simulated_now, Cluster, ClusterConfig, Pending, WRITE_TIMEOUT};
use crate::convert;
use docsim_engine::canary::Plants;
use docsim_engine::notation::{ParseError, Parser};
use docsim_engine::script::{format_get, strip_comment};
use docsim_engine::{DocPath, DocWrite, HybridTime, PeerCrash, WriteKind};
use docsim_models::{Ttl, Write};
use std::time::Duration;

/// One parsed command.
enum Command {
    Write {
        write: DocWrite,
        to: Option<u64>,
    },
    Get {
        path: DocPath,
        from: u64,
        at: ReadAt,
    },
    /// The two sides, as written.
    Partition(Vec<u64>, Vec<u64>),
    Heal,
    Crash(u64, Option<PeerCrash>),
    Restart(u64),
    Flush(u64),
    Wait(Duration),
    Leader,
    Status,
    Converge,
}

enum ReadAt {
    Now,
    Safe,
    At(HybridTime),
}

/// Run a replicated script; returns its output, or the first line that does not parse.
pub fn run_cluster_script(text: &str, plants: Plants) -> Result<String, ParseError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, strip_comment(l).trim()));
    let (line, header) = lines.find(|(_, l)| !l.is_empty()).unwrap_or((1, ""));
    let (replicas, seed) = parse_header(header, line)?;
    let commands: Vec<(usize, Command)> = lines
        .filter(|(_, l)| !l.is_empty())
        .map(|(n, l)| parse_command(l, n).map(|c| (n, c)))
        .collect::<Result<_, _>>()?;
    let config = ClusterConfig { seed, replicas, ops: 0, faults: false, plants };
    let mut runtime =
        madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
    runtime.set_allow_system_thread(true);
    Ok(runtime.block_on(run(config, commands)))
}

/// Whether a script is a replicated one (its first command is `cluster`).
pub fn is_cluster_script(text: &str) -> bool {
    let first = text.lines().map(|l| strip_comment(l).trim()).find(|l| !l.is_empty());
    first.is_some_and(|l| l.starts_with("cluster ") || l == "cluster")
}

fn parse_header(text: &str, line: usize) -> Result<(usize, u64), ParseError> {
    let mut p = Parser::new(text, line);
    if !p.eat_word("cluster") {
        return Err(p.error("a replicated script starts with `cluster replicas=<n> seed=<s>`"));
    }
    p.expect("replicas=")?;
    let replicas = p.unsigned()? as usize;
    if ![1, 3, 5].contains(&replicas) {
        return Err(p.error(format!("{replicas} replicas: a group here has 1, 3 or 5")));
    }
    p.expect("seed=")?;
    let seed = p.unsigned()?;
    p.finish()?;
    Ok((replicas, seed))
}

fn parse_command(text: &str, line: usize) -> Result<Command, ParseError> {
    let mut p = Parser::new(text, line);
    let command = match p.word() {
        Some("set") => {
            let path = p.path()?;
            p.expect("=")?;
            let doc = p.document()?;
            let to = node_option(&mut p, "to=")?;
            Command::Write { write: DocWrite { path, kind: WriteKind::Set(doc), ttl_us: None }, to }
        }
        Some("del") => {
            let path = p.path()?;
            let to = node_option(&mut p, "to=")?;
            Command::Write { write: DocWrite { path, kind: WriteKind::Del, ttl_us: None }, to }
        }
        Some("get") => parse_get(&mut p)?,
        Some("partition") => {
            let side = node_list(&mut p)?;
            p.expect("|")?;
            Command::Partition(side, node_list(&mut p)?)
        }
        Some("heal") => Command::Heal,
        Some("crash") => parse_crash(&mut p)?,
        Some("restart") => Command::Restart(required_node(&mut p)?),
        Some("flush") => Command::Flush(required_node(&mut p)?),
        Some("wait") => {
            let us = p.duration_us()?;
            if us > 600_000_000 {
                return Err(p.error("wait at most 10m (the simulated group ticks every 10 ms)"));
            }
            Command::Wait(Duration::from_micros(us))
        }
        Some("leader") => Command::Leader,
        Some("status") => Command::Status,
        Some("converge") => Command::Converge,
        _ => return Err(p.error(format!("unknown replicated command `{text}`"))),
    };
    p.finish()?;
    Ok(command)
}

fn parse_get(p: &mut Parser<'_>) -> Result<Command, ParseError> {
    let path = p.path()?;
    let (mut from, mut at) = (None, ReadAt::Now);
    while !p.at_end() {
        if p.eat("from=") {
            from = Some(p.unsigned()?);
        } else if p.eat("@now") {
            at = ReadAt::Now;
        } else if p.eat("@safe") {
            at = ReadAt::Safe;
        } else if p.eat("@") {
            at = ReadAt::At(p.hybrid_time()?);
        } else {
            return Err(p.error(format!("unexpected {}", p.found())));
        }
    }
    let from = from.ok_or_else(|| p.error("`get` needs from=<i>"))?;
    Ok(Command::Get { path, from, at })
}

fn parse_crash(p: &mut Parser<'_>) -> Result<Command, ParseError> {
    let id = required_node(p)?;
    if !p.eat_word("at") {
        return Ok(Command::Crash(id, None));
    }
    let word = p.token().unwrap_or_default();
    let names: Vec<&str> = PeerCrash::ALL.iter().map(|c| c.name()).collect();
    let at = PeerCrash::from_name(word)
        .ok_or_else(|| p.error(format!("unknown stage `{word}` (known: {})", names.join(", "))))?;
    Ok(Command::Crash(id, Some(at)))
}

fn node_list(p: &mut Parser<'_>) -> Result<Vec<u64>, ParseError> {
    let mut nodes = vec![p.unsigned()?];
    while p.eat(",") {
        nodes.push(p.unsigned()?);
    }
    Ok(nodes)
}

fn node_option(p: &mut Parser<'_>, name: &str) -> Result<Option<u64>, ParseError> {
    if p.eat(name) {
        return p.unsigned().map(Some);
    }
    Ok(None)
}

fn required_node(p: &mut Parser<'_>) -> Result<u64, ParseError> {
    node_option(p, "node=")?.ok_or_else(|| p.error("needs node=<i>"))
}

async fn run(config: ClusterConfig, commands: Vec<(usize, Command)>) -> String {
    let replicas = config.replicas as u64;
    let mut cluster = match Cluster::start(config, super::Knobs::quiet()) {
        Ok(cluster) => cluster,
        Err(e) => return format!("error: {e}\n"),
    };
    let mut out = String::new();
    let mut broken = false;
    for (line, command) in commands {
        if let Err(e) = check_nodes(&command, replicas) {
            out.push_str(&format!("error: line {line}: {e}\n"));
            continue;
        }
        let lines = execute(&mut cluster, command).await;
        lines.iter().for_each(|l| {
            out.push_str(l);
            out.push('\n');
        });
        if let (Err(e), false) = (cluster.collect(), broken) {
            out.push_str(&format!("check: {e}\n")); // sticky: said once
            broken = true;
        }
    }
    out
}

/// The replicas a command names exist; a partition's two sides split the group.
fn check_nodes(command: &Command, replicas: u64) -> Result<(), String> {
    let named: Vec<u64> = match command {
        Command::Write { to: Some(i), .. } | Command::Get { from: i, .. } => vec![*i],
        Command::Crash(i, _) | Command::Restart(i) | Command::Flush(i) => vec![*i],
        Command::Partition(a, b) => a.iter().chain(b).copied().collect(),
        _ => vec![],
    };
    if let Some(i) = named.iter().find(|&&i| i == 0 || i > replicas) {
        return Err(format!("no replica {i} (1..={replicas})"));
    }
    if let Command::Partition(a, b) = command {
        let mut all: Vec<u64> = a.iter().chain(b).copied().collect();
        all.sort_unstable();
        if all != (1..=replicas).collect::<Vec<_>>() {
            return Err(format!("a partition names every replica 1..={replicas} once"));
        }
    }
    Ok(())
}

async fn execute(cluster: &mut Cluster, command: Command) -> Vec<String> {
    match command {
        Command::Write { write, to } => vec![write_line(cluster, write, to).await],
        Command::Get { path, from, at } => vec![get_line(cluster, &path, from, at)],
        Command::Partition(side, _) => {
            cluster.partition(&side);
            vec![]
        }
        Command::Heal => {
            cluster.heal();
            vec![]
        }
        Command::Crash(id, _) if cluster.slot(id).peer.is_none() => {
            vec![format!("error: node {id} is down")]
        }
        Command::Crash(id, None) => {
            cluster.crash(id);
            vec![]
        }
        Command::Crash(id, Some(at)) => {
            cluster.arm_crash(id, at);
            vec![]
        }
        Command::Restart(id) if cluster.slot(id).peer.is_some() => {
            vec![format!("error: node {id} is up")]
        }
        Command::Restart(id) => match cluster.restart(id) {
            Ok(()) => vec![cluster.outcome.trace.last().cloned().unwrap_or_default()],
            Err(e) => vec![format!("error: {e}")],
        },
        Command::Flush(id) => match cluster.slot(id).peer.as_mut().map(|p| p.flush()) {
            Some(Err(e)) => vec![format!("error: {}: {e}", e.kind())],
            None => vec![format!("error: node {id} is down")],
            Some(Ok(())) => vec![],
        },
        Command::Wait(d) => {
            madsim::time::sleep(d).await;
            vec![]
        }
        Command::Leader => vec![leader_line(cluster)],
        Command::Status => cluster.ids().map(|id| status_line(cluster, id)).collect(),
        Command::Converge => match cluster.liveness().await {
            Ok(()) => {
                vec![cluster.outcome.trace.last().cloned().unwrap_or_default(), "check: ok".into()]
            }
            Err(e) => vec![format!("check: {e}")],
        },
    }
}

fn status_line(cluster: &Cluster, id: u64) -> String {
    let slot = cluster.slot(id);
    let Some(peer) = slot.peer.as_ref() else { return format!("node {id}: down") };
    let s = peer.status();
    let role = if s.leader { "leader" } else { "follower" };
    format!(
        "node {id}: {role} term={} commit={} applied={} last={}",
        s.term,
        s.commit,
        s.applied,
        peer.last_op_id()
    )
}

fn leader_line(cluster: &Cluster) -> String {
    match cluster.leader_guess() {
        Some(id) => {
            let term = cluster.slot(id).peer.as_ref().map_or(0, |p| p.status().term);
            format!("leader node={id} term={term}")
        }
        None => "no leader".into(),
    }
}

async fn write_line(cluster: &mut Cluster, write: DocWrite, to: Option<u64>) -> String {
    let Some(target) = to.or_else(|| cluster.leader_guess()) else {
        return "error: no replica claims to lead".into();
    };
    let model = model_write(&write);
    let ((op_id, ht), incarnation) = match cluster.propose(target, std::slice::from_ref(&write)) {
        Ok(Some(p)) => p,
        Ok(None) => return format!("error: node {target} is down"),
        Err(e) => return format!("error: {}: {e}", e.kind()),
    };
    let deadline = simulated_now() + WRITE_TIMEOUT;
    cluster.pending.push(Pending { target, incarnation, deadline, op_id });
    let proposal = Proposal { op_id, ht, writes: vec![model], answer: Answer::TimedOut };
    cluster.history.proposals.insert(op_id, proposal);
    while !cluster.pending.is_empty() {
        madsim::time::sleep(Duration::from_millis(1)).await;
        let _ = cluster.collect();
        cluster.settle(false);
    }
    let answer = cluster.history.proposals[&op_id].answer;
    let answer = match answer {
        Answer::Acked => "acked",
        Answer::TimedOut => "timed out",
        Answer::Unanswered => "no answer",
    };
    format!("write node={target} {op_id} @{ht}: {answer}")
}

fn get_line(cluster: &mut Cluster, path: &DocPath, from: u64, at: ReadAt) -> String {
    let now_us = cluster.now_us(from);
    let mut slot = cluster.slot(from);
    let Some(peer) = slot.peer.as_mut() else { return format!("error: node {from} is down") };
    let read_ht = match at {
        ReadAt::Now => peer.now_ht(now_us),
        ReadAt::Safe => peer.safe_time(),
        ReadAt::At(ht) => ht,
    };
    let result = peer.read(path, read_ht, now_us);
    drop(slot);
    match result {
        Ok(got) => {
            let (doc, subkeys) = convert::doc_and_subkeys(path);
            let read =
                super::check::Read { node: from, doc, path: subkeys, read_ht, got: got.clone() };
            cluster.history.reads.push(read);
            format!("node {from}: {}", format_get(path, read_ht, got.as_ref()))
        }
        Err(e) => format!("node {from}: error: {}: {e}", e.kind()),
    }
}

/// The model's form of a script write (for the whole-history check at `converge`).
fn model_write(write: &DocWrite) -> docsim_workloads::DocWrite {
    let (doc, path) = convert::doc_and_subkeys(&write.path);
    let write_kind = match &write.kind {
        WriteKind::Set(d) => Write::Set(convert::doc(d)),
        _ => Write::Del,
    };
    docsim_workloads::DocWrite { doc, path, write: write_kind, ttl: Ttl::Inherit }
}
