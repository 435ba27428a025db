//! The one executor of replicated commands. A random run and a script both call
//! [`Cluster::step`]: the command's text joins the run's script, what it prints joins the
//! trace, and then the controller takes what the replicas applied and answers the writes
//! that have an answer. A script's output is its trace, so a run's recorded script
//! printing the run's trace line for line is the proof that the reproducer is exact.

use super::check::{Answer, Proposal, Read};
use super::command::{Command, ReadAt};
use super::{simulated_now, Cluster, Pending, WRITE_TIMEOUT};
use crate::convert;
use docsim_engine::script::format_get;
use docsim_engine::{DocPath, DocWrite, ErrorKind, WriteKind};
use docsim_models::{Doc, Ttl, Write};
use std::time::Duration;

impl Cluster {
    /// Carry out `command`, record it, then collect and settle.
    pub(super) async fn step(&mut self, command: Command) {
        super::lock_script(&self.script).push(command.to_string());
        self.execute(command).await;
        let _ = self.collect(); // a failure is traced once, and sticks
        self.settle(false);
    }

    async fn execute(&mut self, command: Command) {
        match command {
            Command::Write { writes, to, wait } => self.write(writes, to, wait).await,
            Command::Get { path, from, at } => self.get(&path, from, at),
            Command::Partition(groups) => self.partition(&groups),
            Command::Cut(links) => self.cut_links(&links),
            Command::Heal => self.heal(),
            Command::Crash(id, _) | Command::Flush(id) | Command::Disarm(id)
                if self.slot(id).running().is_none() =>
            {
                self.trace(format!("error: node {id} is down"));
            }
            Command::Crash(id, None) => self.crash(id),
            Command::Crash(id, Some(at)) => self.arm_crash(id, at),
            Command::Disarm(id) => {
                self.slot(id).peer.as_mut().expect("running").arm_crash(None);
                self.trace(format!("disarm node={id}"));
            }
            Command::Restart(id) if self.slot(id).peer.is_some() => {
                self.trace(format!("error: node {id} is up"));
            }
            Command::Restart(id) => {
                if let Err(e) = self.restart(id) {
                    self.fail(e);
                }
            }
            Command::Flush(id) => {
                let mut slot = self.slot(id);
                let peer = slot.running().expect("running");
                let flushed = super::cost::timed(super::cost::Part::Replicas, || peer.flush());
                drop(slot);
                match flushed {
                    Ok(0) => {}
                    Ok(segments) => {
                        self.outcome.log_segments_collected += segments;
                        self.trace(format!("log gc node={id}: {segments} segments"));
                    }
                    Err(e) => self.fail(format!("node {id} failed to flush: {e}")),
                }
            }
            Command::Skew(id, skew_us) => {
                self.slot(id).skew_us = skew_us;
                self.trace(format!("skew node={id} {skew_us}us"));
            }
            Command::Slow(id, sync) => {
                self.slot(id).sync_latency = sync;
                self.outcome.slow_disks += usize::from(!sync.is_zero());
                self.trace(Command::Slow(id, sync).to_string());
            }
            Command::Wait(d) => madsim::time::sleep(d).await,
            Command::Conf { change, to } => self.change_membership(change, to),
            Command::Leader => self.trace(self.leader_line()),
            Command::Status => {
                let lines: Vec<String> = self.ids().map(|id| self.status_line(id)).collect();
                lines.into_iter().for_each(|l| self.trace(l));
            }
            Command::Converge => self.converge().await,
        }
    }

    /// Propose `writes` at `to` (or the replica that claims to lead); with `wait`, until
    /// the write is answered.
    async fn write(&mut self, writes: Vec<DocWrite>, to: Option<u64>, wait: bool) {
        let Some(target) = to.or_else(|| self.leader_guess()) else {
            return self.trace("write: error: no replica claims to lead".into());
        };
        let ((op_id, ht), incarnation) = match self.propose(target, &writes) {
            Ok(Some(p)) => p,
            Ok(None) => return self.trace(format!("write node={target}: error: node is down")),
            Err(e) if e.kind() == ErrorKind::NotLeader => {
                self.outcome.writes_not_leader += 1;
                return self.trace(format!("write node={target}: error: not_leader"));
            }
            Err(e) if e.kind() == ErrorKind::Removed => {
                return self.trace(format!("write node={target}: error: removed"));
            }
            Err(e) => return self.fail(format!("node {target} refused a write: {e}")),
        };
        let model_writes: Vec<_> = writes.iter().map(model_write).collect();
        for w in &model_writes {
            if self.recent.len() == 16 {
                self.recent.pop_front();
            }
            self.recent.push_back((w.doc.clone(), w.path.clone()));
        }
        let deadline = simulated_now() + WRITE_TIMEOUT;
        self.pending.push(Pending { target, incarnation, deadline, op_id });
        let proposal = Proposal { op_id, ht, writes: model_writes, answer: Answer::TimedOut };
        if self.history.proposals.insert(op_id, proposal).is_some() {
            // Only two leaders in one term can hand out one op id twice.
            return self.fail(format!("two leaders in term {}: both proposed {op_id}", op_id.term));
        }
        while wait && self.broken.is_none() && self.pending.iter().any(|p| p.op_id == op_id) {
            madsim::time::sleep(Duration::from_millis(1)).await;
            let _ = self.collect();
            self.settle(false);
        }
    }

    /// Read `path` at replica `from`: the answer joins the history (checked against the
    /// model at the end); a refusal is counted; any other error fails the run.
    fn get(&mut self, path: &DocPath, from: u64, at: ReadAt) {
        let now_us = self.now_us(from);
        let mut slot = self.slot(from);
        let Some(peer) = slot.running() else {
            drop(slot);
            return self.trace(format!("node {from}: error: node is down"));
        };
        let read_ht = match at {
            ReadAt::Now { ahead_us } => peer.now_ht(now_us).add_micros(ahead_us),
            ReadAt::Safe => peer.safe_time(),
            ReadAt::At(ht) => ht,
        };
        let result =
            super::cost::timed(super::cost::Part::ClientCalls, || peer.read(path, read_ht, now_us));
        drop(slot);
        match result {
            Ok(got) => {
                self.trace(format!("node {from}: {}", format_get(path, read_ht, got.as_ref())));
                self.outcome.reads_served += 1;
                let (doc, subkeys) = convert::doc_and_subkeys(path);
                self.history.reads.push(Read { node: from, doc, path: subkeys, read_ht, got });
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::LeaseExpired | ErrorKind::SafeTimeBehind | ErrorKind::Removed
                ) =>
            {
                self.trace(format!("node {from}: error: {}: {e}", e.kind()));
                *self.outcome.reads_refused.entry(e.kind().name()).or_default() += 1;
            }
            Err(e) => self.fail(format!("node {from} failed a read of {path}: {e}")),
        }
    }

    /// The liveness phase, then the whole-history check.
    async fn converge(&mut self) {
        let _ = self.collect();
        self.settle(true);
        if self.broken.is_some() {
            return;
        }
        match self.liveness().await {
            Ok(()) => self.trace("check: ok".into()),
            Err(e) => self.fail(e),
        }
    }

    fn status_line(&self, id: u64) -> String {
        let slot = self.slot(id);
        let Some(peer) = slot.peer.as_ref() else { return format!("node {id}: down") };
        let s = peer.status();
        let members = peer.members();
        let role = match () {
            _ if s.leader => "leader",
            _ if members.learners.contains(&id) => "learner",
            _ if members.voters.contains(&id) || members.outgoing.contains(&id) => "follower",
            _ => "outside", // not yet added, or removed
        };
        format!(
            "node {id}: {role} term={} commit={} applied={} last={}",
            s.term,
            s.commit,
            s.applied,
            peer.last_op_id()
        )
    }

    fn leader_line(&self) -> String {
        match self.leader_guess() {
            Some(id) => {
                let term = self.slot(id).peer.as_ref().map_or(0, |p| p.status().term);
                format!("leader node={id} term={term}")
            }
            None => "no leader".into(),
        }
    }
}

/// The model's form of an engine write (the proposal the history check replays).
fn model_write(write: &DocWrite) -> docsim_workloads::DocWrite {
    let (doc, path) = convert::doc_and_subkeys(&write.path);
    let write_kind = match &write.kind {
        WriteKind::Set(d) => Write::Set(convert::doc(d)),
        WriteKind::Extend(d) => match convert::doc(d) {
            Doc::Object(map) => Write::Extend(map),
            Doc::Leaf(_) => unreachable!("the parser admits only object literals to extend"),
        },
        WriteKind::Obj => Write::Obj,
        WriteKind::Del => Write::Del,
        WriteKind::TtlOnly { .. } => unreachable!("replicated scripts write no TTL-only records"),
    };
    let ttl = match write.ttl_us {
        None => Ttl::Inherit,
        Some(0) => Ttl::Never,
        Some(us) => Ttl::Ms(us / 1000),
    };
    docsim_workloads::DocWrite { doc, path, write: write_kind, ttl }
}
