//! The commands of a replicated run, as replicated docscript text. A random run decides
//! its commands from the seed and the state it sees, and records each one as it carries it
//! out; a script parses them. Both go through one executor (`execute.rs`), so the
//! recorded script of a run is an exact reproducer of it: same commands at the same
//! simulated times, same madsim seed, same output.
//!
//! ```text
//! cluster replicas=3 seed=7 [loss=5%] [max-skew=500ms]
//! set <path> = <document> [ttl=<dur>] [to=<i>] [nowait]   # also extend, obj, del, batch {..}
//! get <path> from=<i> [@now | @now+<dur> | @safe | @<T>]
//! partition 1,2 | 3 [| 4,5]      cut 1-3,2-3      heal
//! crash node=<i> [at <stage>]    disarm node=<i>    restart node=<i>
//! flush node=<i>         skew node=<i> [-]<dur>
//! slow node=<i> <dur>
//! wait <dur>             leader    status    converge
//! conf add-learner <i> | add-voter <i> | remove <i> | replace <i> with <j>  [to=<i>]
//! ```

use super::membership::ConfChange;
use docsim_engine::notation::{format_duration_us, ParseError, Parser};
use docsim_engine::script::{format_writes, parse_writes};
use docsim_engine::{DocPath, DocWrite, HybridTime, PeerCrash};
use std::fmt;
use std::time::Duration;

/// The first line: the group and what the seed may not decide alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub replicas: usize,
    pub seed: u64,
    /// Percent of messages madsim drops.
    pub loss_percent: u32,
    /// The clock-skew bound (it sets how long a restarted replica stays quiet).
    pub max_skew_us: u64,
}

/// One command.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// One proposal (one write batch) through the leader, or replica `to`; `wait`: until
    /// it is answered (acknowledged, timed out, or its replica crashed).
    Write {
        writes: Vec<DocWrite>,
        to: Option<u64>,
        wait: bool,
    },
    Get {
        path: DocPath,
        from: u64,
        at: ReadAt,
    },
    /// Groups (two or more, every replica in one): every link between two groups cut.
    Partition(Vec<Vec<u64>>),
    /// These links cut, both ways (a bridge: a replica that still reaches both sides).
    Cut(Vec<(u64, u64)>),
    Heal,
    Crash(u64, Option<PeerCrash>),
    /// Cancel a power cut armed at a stage and not reached.
    Disarm(u64),
    Restart(u64),
    Flush(u64),
    /// Set a replica's clock offset from true simulated time.
    Skew(u64, i64),
    /// Make a replica's log syncs take this long (zero: as fast as the rest).
    Slow(u64, Duration),
    Wait(Duration),
    /// A membership change, proposed at the leader (or replica `to`).
    Conf {
        change: ConfChange,
        to: Option<u64>,
    },
    Leader,
    Status,
    Converge,
}

/// The hybrid time a `get` reads at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadAt {
    /// The replica's clock now, plus `ahead_us` (a leader reads inside its lease).
    Now {
        ahead_us: u64,
    },
    /// The replica's safe time.
    Safe,
    At(HybridTime),
}

pub fn parse_header(text: &str, line: usize) -> Result<Header, ParseError> {
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
    let mut header = Header { replicas, seed, loss_percent: 0, max_skew_us: 0 };
    if p.eat("loss=") {
        let at = p.pos();
        header.loss_percent = p.unsigned()? as u32;
        p.expect("%")?;
        if header.loss_percent > 50 {
            return Err(p.error_at(at, "loss is at most 50%"));
        }
    }
    if p.eat("max-skew=") {
        header.max_skew_us = p.duration_us()?;
    }
    p.finish()?;
    Ok(header)
}

impl fmt::Display for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cluster replicas={} seed={}", self.replicas, self.seed)?;
        if self.loss_percent > 0 {
            write!(f, " loss={}%", self.loss_percent)?;
        }
        if self.max_skew_us > 0 {
            write!(f, " max-skew={}", format_duration_us(self.max_skew_us))?;
        }
        Ok(())
    }
}

pub fn parse_command(text: &str, line: usize) -> Result<Command, ParseError> {
    let mut p = Parser::new(text, line);
    let command = match p.word() {
        Some(word @ ("set" | "extend" | "obj" | "del" | "batch")) => {
            let writes = parse_writes(&mut p, word)?;
            let to = node_option(&mut p, "to=")?;
            let wait = !p.eat_word("nowait");
            Command::Write { writes, to, wait }
        }
        Some("get") => parse_get(&mut p)?,
        Some("partition") => {
            let mut groups = vec![node_list(&mut p)?];
            p.expect("|")?;
            groups.push(node_list(&mut p)?);
            while p.eat("|") {
                groups.push(node_list(&mut p)?);
            }
            Command::Partition(groups)
        }
        Some("cut") => {
            let mut links = vec![link(&mut p)?];
            while p.eat(",") {
                links.push(link(&mut p)?);
            }
            Command::Cut(links)
        }
        Some("heal") => Command::Heal,
        Some("crash") => parse_crash(&mut p)?,
        Some("disarm") => Command::Disarm(required_node(&mut p)?),
        Some("restart") => Command::Restart(required_node(&mut p)?),
        Some("flush") => Command::Flush(required_node(&mut p)?),
        Some("slow") => {
            let id = required_node(&mut p)?;
            let at = p.pos();
            let us = p.duration_us()?;
            if us > 10_000_000 {
                return Err(p.error_at(at, "a slow disk's sync takes at most 10s"));
            }
            Command::Slow(id, Duration::from_micros(us))
        }
        Some("skew") => {
            let id = required_node(&mut p)?;
            let negative = p.eat("-");
            let at = p.pos();
            let us = p.duration_us()?;
            if us > 3_600_000_000 {
                return Err(p.error_at(at, "a clock skew is at most 1h"));
            }
            let us = us as i64;
            Command::Skew(id, if negative { -us } else { us })
        }
        Some("wait") => {
            let us = p.duration_us()?;
            if us > 600_000_000 {
                return Err(p.error("wait at most 10m (the simulated group ticks every 10 ms)"));
            }
            Command::Wait(Duration::from_micros(us))
        }
        Some("conf") => {
            let change = parse_conf(&mut p)?;
            Command::Conf { change, to: node_option(&mut p, "to=")? }
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
    let (mut from, mut at) = (None, ReadAt::Now { ahead_us: 0 });
    while !p.at_end() {
        if p.eat("from=") {
            from = Some(p.unsigned()?);
        } else if p.eat("@now") {
            let ahead_us = if p.eat("+") { p.duration_us()? } else { 0 };
            at = ReadAt::Now { ahead_us };
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

fn parse_conf(p: &mut Parser<'_>) -> Result<ConfChange, ParseError> {
    let word = p.token().unwrap_or_default();
    Ok(match word {
        "add-learner" => ConfChange::AddLearner(p.unsigned()?),
        "add-voter" => ConfChange::AddVoter(p.unsigned()?),
        "remove" => ConfChange::Remove(p.unsigned()?),
        "replace" => {
            let out = p.unsigned()?;
            if !p.eat_word("with") {
                return Err(p.error("expected `replace <i> with <j>`"));
            }
            ConfChange::Replace(out, p.unsigned()?)
        }
        other => {
            let known = "add-learner, add-voter, remove or replace";
            return Err(p.error(format!("unknown change `{other}` ({known})")));
        }
    })
}

fn link(p: &mut Parser<'_>) -> Result<(u64, u64), ParseError> {
    let a = p.unsigned()?;
    p.expect("-")?;
    Ok((a, p.unsigned()?))
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

fn show_nodes(ids: &[u64]) -> String {
    ids.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::Write { writes, to, wait } => {
                f.write_str(&format_writes(writes))?;
                if let Some(to) = to {
                    write!(f, " to={to}")?;
                }
                if !wait {
                    f.write_str(" nowait")?;
                }
                Ok(())
            }
            Command::Get { path, from, at } => {
                write!(f, "get {path} from={from}")?;
                match at {
                    ReadAt::Now { ahead_us: 0 } => f.write_str(" @now"),
                    ReadAt::Now { ahead_us } => {
                        write!(f, " @now+{}", format_duration_us(*ahead_us))
                    }
                    ReadAt::Safe => f.write_str(" @safe"),
                    ReadAt::At(ht) => write!(f, " @{ht}"),
                }
            }
            Command::Partition(groups) => {
                let groups: Vec<String> = groups.iter().map(|g| show_nodes(g)).collect();
                write!(f, "partition {}", groups.join(" | "))
            }
            Command::Cut(links) => {
                let links: Vec<String> = links.iter().map(|(a, b)| format!("{a}-{b}")).collect();
                write!(f, "cut {}", links.join(","))
            }
            Command::Heal => f.write_str("heal"),
            Command::Crash(id, None) => write!(f, "crash node={id}"),
            Command::Crash(id, Some(at)) => write!(f, "crash node={id} at {}", at.name()),
            Command::Disarm(id) => write!(f, "disarm node={id}"),
            Command::Restart(id) => write!(f, "restart node={id}"),
            Command::Flush(id) => write!(f, "flush node={id}"),
            Command::Skew(id, us) => {
                let sign = if *us < 0 { "-" } else { "" };
                write!(f, "skew node={id} {sign}{}", format_duration_us(us.unsigned_abs()))
            }
            Command::Slow(id, d) => {
                write!(f, "slow node={id} {}", format_duration_us(d.as_micros() as u64))
            }
            Command::Wait(d) => write!(f, "wait {}", format_duration_us(d.as_micros() as u64)),
            Command::Conf { change, to } => {
                write!(f, "conf {change}")?;
                match to {
                    Some(to) => write!(f, " to={to}"),
                    None => Ok(()),
                }
            }
            Command::Leader => f.write_str("leader"),
            Command::Status => f.write_str("status"),
            Command::Converge => f.write_str("converge"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command prints as text that parses back to it.
    #[test]
    fn commands_print_as_they_parse() {
        let lines = [
            "set doc(\"k\";).\"a\" = {\"x\": 1, \"y\": \"s\"} ttl=5s to=2 nowait",
            "batch { del doc(\"k\";); obj doc(\"k\";).\"b\"; extend doc(\"k\";) = {1: 2} } to=1",
            "get doc(\"k\";).\"x\" from=3 @now+50ms",
            "get doc(\"k\";) from=1 @safe",
            "get doc(\"k\";) from=2 @T1000.3",
            "partition 1,3 | 2",
            "partition 1,2 | 3 | 4,5",
            "cut 1-3,2-3",
            "crash node=2 at after-sync",
            "disarm node=2",
            "skew node=3 -5ms",
            "skew node=3 0",
            "slow node=2 200ms",
            "slow node=2 0",
            "wait 250ms",
            "conf add-learner 4",
            "conf replace 2 with 4 to=1",
        ];
        for line in lines {
            let command = parse_command(line, 1).unwrap_or_else(|e| panic!("{line}: {e}"));
            // Paths print with their key hash (the parser takes either form).
            assert_eq!(command.to_string().replace("doc(0x559d: ", "doc("), line);
            assert_eq!(parse_command(&command.to_string(), 1).expect("reparse"), command);
        }
        let header = "cluster replicas=5 seed=9 loss=5% max-skew=500ms";
        assert_eq!(parse_header(header, 1).expect("header").to_string(), header);
    }
}
