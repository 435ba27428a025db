//! Which reads (and writes) a replica may serve, and the hybrid-time lease that decides it
//! (docsim's rule, after YB's hybrid-time leader lease, `ReplicaState::
//! MajorityReplicatedHtLeaseExpiration`, and `MvccManager::SafeTime`):
//!
//! - A leader asks for a *hybrid-time lease* in every message it sends (its physical time
//!   plus `lease_us`, YB's `FLAGS_ht_lease_duration_ms`); a follower echoes the newest one
//!   it received from its leader, and the leader grants itself one at every moment. The
//!   lease a majority of the voters holds bounds the leader's reads: above it,
//!   `lease_expired`. Below it, a read must also be below the first entry not applied
//!   yet, and the leader must have applied its own term's first entry: otherwise
//!   `safe_time_behind`. With one voter the lease is unbounded: no other replica can be
//!   elected while it is the only voter (a configuration change goes through its log).
//! - Every replica remembers the highest lease it has seen and sends it with everything;
//!   a replica that wins an election moves its clock past the highest its voters sent, so
//!   a new leader never writes at or below a time an old leader may have served a read at.
//! - A follower serves reads at or below its *safe time*: the time of the last entry it
//!   applied, or the leader's safe time propagated with the leader's applied index once
//!   it has applied that far. Each read moves the clock past its time, so a leader never
//!   writes below a read it served.

use super::membership::Members;
use super::{Envelope, Replica};
use crate::canary::Plant;
use crate::error::{Error, Result};
use crate::hybrid_time::HybridTime;
use crate::tablet::{Reply, Request};
use raft::eraftpb::{Message, MessageType};
use raft::StateRole;

impl Replica {
    /// Take one envelope from a replica of the same tablet; returns the envelopes to send.
    pub fn receive(&mut self, envelope: Envelope, now_us: u64) -> Result<Vec<Envelope>> {
        if self.removed {
            return Ok(vec![]); // dropped, as by a replica that no longer exists
        }
        self.check_up()?;
        self.set_now(now_us);
        let Envelope { from, ht, ht_lease, echo, safe, msg, .. } = envelope;
        self.see(ht);
        self.max_lease_seen = self.max_lease_seen.max(ht_lease);
        let vote = msg.get_msg_type() == MessageType::MsgRequestVote;
        if vote && now_us < self.quiet_until_us {
            return self.process(); // a restarted replica does not vote yet
        }
        let term = msg.term;
        let raft = &self.raw.raft;
        if raft.state == StateRole::Leader && term == raft.term {
            if let Some(echo) = echo {
                let acked = self.lease_acks.entry(from).or_insert(HybridTime::MIN);
                *acked = (*acked).max(echo);
            }
        }
        match self.raw.step(msg) {
            // A response from a replica outside the configuration (removed, or not added
            // yet as far as this replica knows): raft-rs refuses it; it is dropped.
            Err(raft::Error::StepPeerNotFound) => return self.process(),
            result => result.map_err(super::raft_error)?,
        }
        let raft = &self.raw.raft;
        if raft.state != StateRole::Leader && raft.leader_id == from && term == raft.term {
            // One leader's leases in one term only grow. A new term, or a second leader in
            // this one (Raft elects at most one; the plant `vote-not-synced` makes two, and
            // the checker, not this code, must catch what follows), starts over.
            let newest = match self.echo {
                Some((t, l, lease)) if t == term && l == from => lease.max(ht_lease),
                _ => ht_lease,
            };
            self.echo = Some((term, from, newest));
            if let Some(safe) = safe {
                self.propagated = Some(safe);
            }
        }
        self.process()
    }

    /// Wrap raft-rs's messages in envelopes.
    pub(super) fn wrap(&mut self, messages: Vec<Message>, out: &mut Vec<Envelope>) {
        let leader = self.raw.raft.state == StateRole::Leader;
        for msg in messages {
            let ht = self.clock.now();
            let (ht_lease, safe) = if leader {
                let lease = self.own_lease();
                self.max_lease_seen = self.max_lease_seen.max(lease);
                let safe = self.leader_bound().ok().map(|bound| (self.applied, bound.min(ht)));
                (lease, safe)
            } else {
                (self.max_lease_seen, None)
            };
            let echo = match self.echo {
                Some((term, l, lease)) if l == msg.to && term == self.raw.raft.term => Some(lease),
                _ => None,
            };
            out.push(Envelope { from: self.options.id, to: msg.to, ht, ht_lease, echo, safe, msg });
        }
    }

    /// On becoming leader: move the clock past every lease the voters reported, and
    /// remember where this term's entries start.
    pub(super) fn note_leadership(&mut self) {
        let raft = &self.raw.raft;
        let term = raft.term;
        if raft.state != StateRole::Leader {
            return;
        }
        if self.led.is_none_or(|(t, _)| t != term) {
            let first = raft.raft_log.last_index();
            self.led = Some((term, first));
            self.lease_acks.clear();
            self.see(self.max_lease_seen);
        }
    }

    /// Move the clock past a time seen on another replica (the planted bug forgets it).
    pub(super) fn see(&mut self, ht: HybridTime) {
        if !self.plant(Plant::HtNotPropagated) {
            self.clock.update(ht);
        }
    }

    /// Whether this leader has applied its own term's first entry (a new leader must, before
    /// it serves anything: what came before its term is all applied then).
    pub(super) fn leader_ready(&self) -> bool {
        match self.led {
            Some((term, first)) => term == self.raw.raft.term && self.applied >= first,
            None => false,
        }
    }

    /// The highest time this leader may serve a read at, or why it may serve none.
    pub(super) fn leader_bound(&self) -> Result<HybridTime> {
        if !self.leader_ready() {
            return Err(Error::SafeTimeBehind { read_ht: None, safe_ht: None });
        }
        let lease = self.majority_lease();
        let pending = self.unapplied.values().next().map(|ht| HybridTime::from_raw(ht.raw() - 1));
        Ok(pending.map_or(lease, |p| p.min(lease)))
    }

    /// The read `request` at `read_ht`, if this replica can serve that time.
    pub fn read(&mut self, request: &Request, read_ht: HybridTime, now_us: u64) -> Result<Reply> {
        self.check_up()?;
        self.set_now(now_us);
        self.note_leadership();
        self.check_servable(read_ht)?;
        self.clock.update(read_ht);
        self.tablet.read(request, read_ht)
    }

    fn check_servable(&self, read_ht: HybridTime) -> Result<()> {
        if self.raw.raft.state == StateRole::Leader {
            let bound = self.leader_bound().map_err(|e| with_read_ht(e, read_ht))?;
            if read_ht <= bound {
                return Ok(());
            }
            let lease = self.majority_lease();
            if read_ht > lease {
                return Err(Error::LeaseExpired { read_ht, lease_ht: lease });
            }
            return Err(Error::SafeTimeBehind { read_ht: Some(read_ht), safe_ht: Some(bound) });
        }
        let safe = self.safe_time();
        if read_ht <= safe {
            return Ok(());
        }
        Err(Error::SafeTimeBehind { read_ht: Some(read_ht), safe_ht: Some(safe) })
    }

    /// Whether this replica is its group's only voter.
    pub(super) fn alone(&self) -> bool {
        let members = self.members();
        members.voters == [self.options.id] && members.outgoing.is_empty()
    }

    /// The lease a majority of the active voters holds (of both halves of a joint
    /// configuration, the lower); unbounded for the one voter of a group of one.
    pub(super) fn majority_lease(&self) -> HybridTime {
        if self.plant(Plant::ReadsPastLease) {
            return HybridTime::MAX;
        }
        if self.alone() {
            return HybridTime::MAX;
        }
        let members = self.members();
        let me = self.options.id;
        let own = self.own_lease();
        let lease_of = |v: u64| match v == me {
            true => own,
            false => self.lease_acks.get(&v).copied().unwrap_or(HybridTime::MIN),
        };
        if self.plant(Plant::NonVoterCounted) {
            return self.planted_lease_of_every_echo(&members, lease_of);
        }
        let majority = |voters: &[u64]| {
            let mut leases: Vec<HybridTime> = voters.iter().map(|&v| lease_of(v)).collect();
            leases.sort_unstable_by(|a, b| b.cmp(a));
            leases.get(voters.len() / 2).copied().unwrap_or(HybridTime::MAX)
        };
        majority(&members.voters).min(majority(&members.outgoing))
    }

    /// The plant `non-voter-counted`: every replica that echoed counts toward the voters'
    /// majority. (Code only a plant runs is named `planted_`: the mutation measures leave
    /// it out, `.cargo/mutants.toml`.)
    fn planted_lease_of_every_echo(
        &self,
        members: &Members,
        lease_of: impl Fn(u64) -> HybridTime,
    ) -> HybridTime {
        let mut counted: Vec<u64> = members.voters.clone();
        counted.extend(members.learners.iter().chain(self.lease_acks.keys()));
        counted.sort_unstable();
        counted.dedup();
        let mut leases: Vec<HybridTime> = counted.into_iter().map(lease_of).collect();
        leases.sort_unstable_by(|a, b| b.cmp(a));
        leases[members.voters.len() / 2]
    }

    /// The lease a leader asks for now (and grants itself): physical time + `lease_us`.
    /// From physical time, never from the hybrid clock: reads up to the lease move the
    /// clock there, and a lease from the clock would ratchet ahead of every physical
    /// clock, past what a restarted replica's quiet period covers.
    fn own_lease(&self) -> HybridTime {
        HybridTime::from_micros(self.now_us.saturating_add(self.options.lease_us))
    }

    /// The highest time this replica serves reads at now. A leader's: its bound (lease,
    /// first entry not applied), no later than its physical time as last set (nor below
    /// its last applied write's); `HybridTime::MIN` while it serves nothing. A follower's:
    /// its last applied write's, or the leader's propagated one once applied up to the
    /// leader's applied index then.
    pub fn safe_time(&self) -> HybridTime {
        if self.raw.raft.state == StateRole::Leader {
            let now = HybridTime::from_micros(self.now_us).max(self.applied_ht);
            return self.leader_bound().map_or(HybridTime::MIN, |bound| bound.min(now));
        }
        match self.propagated {
            Some((index, safe)) if self.applied >= index => safe.max(self.applied_ht),
            _ => self.applied_ht,
        }
    }

    /// This replica's hybrid time now (a client reading "now" here).
    pub fn now_ht(&mut self, now_us: u64) -> HybridTime {
        self.set_now(now_us);
        self.clock.now()
    }
}

fn with_read_ht(e: Error, read_ht: HybridTime) -> Error {
    match e {
        Error::SafeTimeBehind { safe_ht, .. } => {
            Error::SafeTimeBehind { read_ht: Some(read_ht), safe_ht }
        }
        other => other,
    }
}
