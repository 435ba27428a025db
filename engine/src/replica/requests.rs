//! A leader takes a write: it checks it may, evaluates the request at a hybrid time into a
//! payload ([`Tablet::evaluate`](crate::tablet::Tablet::evaluate)), and proposes it.
//!
//! Which writes a leader takes (what keeps the leader's evaluation equal to an
//! evaluation in log order, the order every replica applies in):
//! - only as leader, once it has applied its own term's first entry (everything before
//!   its term is applied then), and only at a time its lease covers: a leader without a
//!   majority's lease may have been deposed and evaluate against stale data (YugabyteDB
//!   refuses writes unless `LEADER_AND_READY`, which needs the lease);
//! - a write that reads before it writes (a Redis command, a required-marker document
//!   write) waits for this leader's writes in flight to the documents it reads (YugabyteDB
//!   holds a key's in-memory lock from evaluation to apply, `SharedLockManager`); docsim
//!   answers `try_again` instead of queueing it (a rule of docsim's own: the client
//!   retries);
//! - no write while a metadata change of the tablet is in flight (its schema is about to
//!   change; YugabyteDB's writes carry a schema version and a mismatch sends the client
//!   back): `try_again`.

use super::{InFlight, Replica};
use crate::error::{Error, Result};
use crate::hybrid_time::HybridTime;
use crate::ids::OpId;
use crate::tablet::{Reply, Request};
use raft::StateRole;

/// A write a leader took.
#[derive(Clone, Debug, PartialEq)]
pub struct Proposed {
    /// The entry proposed, or `None` when the write changes nothing (a Redis `DEL` of a
    /// missing key): it is answered at once.
    pub op_id: Option<OpId>,
    /// The hybrid time it was evaluated at.
    pub ht: HybridTime,
    /// The client's reply, once the entry is applied.
    pub reply: Reply,
}

impl Replica {
    /// Evaluate the write `request` at `at` (a script's explicit time) or at a time from
    /// this leader's clock, and propose it. The write is done once [`Replica::is_applied`]
    /// says so; call [`Replica::process`] to persist and replicate it.
    pub fn propose(
        &mut self,
        request: &Request,
        at: Option<HybridTime>,
        now_us: u64,
    ) -> Result<Proposed> {
        self.check_up()?;
        self.check_writable()?;
        self.set_now(now_us);
        self.note_leadership();
        if self.raw.raft.state != StateRole::Leader {
            let leader = Some(self.raw.raft.leader_id).filter(|&id| id != raft::INVALID_ID);
            return Err(Error::NotLeader { leader });
        }
        if !self.leader_ready() {
            return Err(Error::TryAgain("the new leader's first entry is not applied yet".into()));
        }
        let ht = match at {
            Some(ht) => {
                self.clock.update(ht);
                ht
            }
            None => self.clock.now(),
        };
        let lease = self.majority_lease();
        if ht > lease {
            return Err(Error::LeaseExpired { read_ht: ht, lease_ht: lease });
        }
        self.check_in_flight(request)?;
        let evaluated = self.tablet.evaluate(request, ht)?;
        let Some(payload) = evaluated.payload else {
            return Ok(Proposed { op_id: None, ht, reply: evaluated.reply });
        };
        match self.raw.propose(vec![], payload.encode()) {
            // raft-rs drops proposals while its leadership is being handed over.
            Err(raft::Error::ProposalDropped) => return Err(Error::NotLeader { leader: None }),
            result => result.map_err(super::raft_error)?,
        }
        let op_id = OpId::new(self.raw.raft.term, self.raw.raft.raft_log.last_index());
        // Pending from now on: the messages that carry it also carry the leader's safe
        // time, which must stay below it.
        self.unapplied.insert(op_id.index, ht);
        let in_flight = InFlight {
            term: op_id.term,
            writes_to: request.writes_to(),
            metadata: request.is_metadata(),
        };
        self.in_flight.insert(op_id.index, in_flight);
        Ok(Proposed { op_id: Some(op_id), ht, reply: evaluated.reply })
    }

    /// The write waits (`try_again`) for a metadata change in flight, or for a write in
    /// flight to a document it reads.
    fn check_in_flight(&self, request: &Request) -> Result<()> {
        if self.in_flight.values().any(|w| w.metadata) {
            return Err(Error::TryAgain("a metadata change of the tablet is in flight".into()));
        }
        let reads = request.reads_before_writing();
        let busy = self.in_flight.values().flat_map(|w| &w.writes_to).find(|d| reads.contains(d));
        match busy {
            Some(doc) => Err(Error::TryAgain(format!("a write to {doc} is in flight"))),
            None => Ok(()),
        }
    }
}
