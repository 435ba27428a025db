//! Membership changes in a replicated run: the `conf` command (add a learner, make it a
//! voter, remove a voter, or replace one in a single joint change), the nemesis's choice
//! of the next change, and the trace of each configuration the leader reports.
//!
//! A group of n replicas has one spare, replica n + 1, started the first time a change
//! names it (a fresh node: empty disk, the initial voters as its configuration, and
//! everything else from the leader's log). A replica that applies its own removal goes
//! inert (`removed`; YB tombstones it) and is never added again; convergence and the
//! final reads concern the members.

use super::command::Command;
use super::Cluster;
use docsim_engine::{ErrorKind, Members, Membership};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::fmt;

/// One `conf` command's change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfChange {
    AddLearner(u64),
    AddVoter(u64),
    Remove(u64),
    /// Remove the first, add the second as a voter: one joint change.
    Replace(u64, u64),
}

impl ConfChange {
    pub fn nodes(self) -> Vec<u64> {
        match self {
            ConfChange::AddLearner(id) | ConfChange::AddVoter(id) | ConfChange::Remove(id) => {
                vec![id]
            }
            ConfChange::Replace(out, into) => vec![out, into],
        }
    }

    fn changes(self) -> Vec<Membership> {
        match self {
            ConfChange::AddLearner(id) => vec![Membership::AddLearner(id)],
            ConfChange::AddVoter(id) => vec![Membership::AddVoter(id)],
            ConfChange::Remove(id) => vec![Membership::Remove(id)],
            ConfChange::Replace(out, into) => {
                vec![Membership::AddVoter(into), Membership::Remove(out)]
            }
        }
    }
}

impl fmt::Display for ConfChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfChange::AddLearner(id) => write!(f, "add-learner {id}"),
            ConfChange::AddVoter(id) => write!(f, "add-voter {id}"),
            ConfChange::Remove(id) => write!(f, "remove {id}"),
            ConfChange::Replace(out, into) => write!(f, "replace {out} with {into}"),
        }
    }
}

impl Cluster {
    /// Propose `change` at `to` (or the replica claiming to lead), starting the spare
    /// first if the change names it.
    pub(super) fn change_membership(&mut self, change: ConfChange, to: Option<u64>) {
        for id in change.nodes() {
            if id as usize == self.slots.len() + 1 {
                if let Err(e) = self.spawn(id) {
                    return self.fail(e);
                }
                self.trace(format!("start node={id} (outside the group)"));
            }
        }
        let Some(target) = to.or_else(|| self.leader_guess()) else {
            return self.trace("conf: error: no replica claims to lead".into());
        };
        let now_us = self.now_us(target);
        let result = {
            let mut slot = self.slot(target);
            let slot = &mut *slot;
            slot.running().map(|peer| {
                peer.propose_membership(&change.changes(), now_us).and_then(|()| peer.process())
            })
        };
        match result {
            None => self.trace(format!("conf node={target}: error: node is down")),
            Some(Ok(out)) => {
                self.slot(target).outbox.extend(out);
                self.outcome.membership_changes += 1;
                self.trace(format!("conf node={target} {change}: proposed"));
            }
            Some(Err(e)) if e.kind() == ErrorKind::InvalidRequest => {
                self.trace(format!("conf node={target}: error: invalid_request: {e}"));
            }
            Some(Err(e)) if matches!(e.kind(), ErrorKind::NotLeader | ErrorKind::Removed) => {
                self.trace(format!("conf node={target}: error: {}", e.kind()));
            }
            Some(Err(e)) if e.kind() == ErrorKind::Crashed => self.slot(target).crashed = true,
            Some(Err(e)) => self.fail(format!("node {target} refused a membership change: {e}")),
        }
    }

    /// Trace the configuration the newest leader reports, when it changed.
    pub(super) fn note_members(&mut self) {
        let Some(leader) = self.leader_guess() else { return };
        let Some(members) = self.slot(leader).peer.as_ref().map(|p| p.members()) else { return };
        if self.last_members.as_ref() == Some(&members) {
            return;
        }
        let show = |ids: &[u64]| ids.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
        let mut line = format!("members voters={}", show(&members.voters));
        if !members.outgoing.is_empty() {
            line += &format!(" outgoing={}", show(&members.outgoing));
        }
        line += &format!(" learners={}", show(&members.learners));
        if self.last_members.is_some() {
            self.trace(line); // the first configuration is the header's
        }
        self.last_members = Some(members);
    }

    /// The nemesis's next membership change, from the leader's configuration: promote a
    /// learner; shrink back to n voters; or bring in the replica outside (as a learner,
    /// or replacing a voter at once). `None` while a joint configuration is in force.
    pub(super) fn next_membership(&self, schedule: &mut ChaCha8Rng) -> Option<Command> {
        let leader = self.leader_guess()?;
        let members: Members = self.slot(leader).peer.as_ref()?.members();
        if !members.outgoing.is_empty() {
            return None;
        }
        // A leader does not remove itself (`Peer::check_membership`): the victim is another.
        let others: Vec<u64> = members.voters.iter().copied().filter(|&v| v != leader).collect();
        if others.is_empty() || self.config.replicas == 1 {
            return None; // and a group of one grows to two voters at most: not changed
        }
        let voters = &members.voters;
        let pick = |schedule: &mut ChaCha8Rng| others[schedule.random_range(0..others.len())];
        let change = if let Some(&learner) = members.learners.first() {
            // A learner stays one a while (a third of the draws promote it): the time a
            // non-voter can be counted by mistake.
            if schedule.random_range(0..3) > 0 {
                return None;
            }
            ConfChange::AddVoter(learner)
        } else if voters.len() > self.config.replicas {
            ConfChange::Remove(pick(schedule))
        } else {
            // Only the spare, never a member yet (a removed replica stays out: it is inert).
            let outside = self.config.replicas as u64 + 1;
            if self.slots.len() > self.config.replicas {
                return None;
            }
            match schedule.random_bool(0.5) {
                true => ConfChange::AddLearner(outside),
                false => ConfChange::Replace(pick(schedule), outside),
            }
        };
        Some(Command::Conf { change, to: Some(leader) })
    }
}
