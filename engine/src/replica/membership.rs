//! Membership (raft-rs's `ConfChangeV2`): add a learner, make a replica a voter, remove
//! one; several changes at once go through joint consensus, which raft-rs leaves on its
//! own (`auto_leave`). A change takes effect when it applies, and the configuration it made
//! is written to RocksDB with the frontier; bootstrap starts from the configuration stored
//! there (or the initial voters, `ReplicaOptions::voters`, when no change was ever
//! flushed) and re-applies the committed changes above the frontier. A leader's lease
//! counts only the voters of the active configuration (both halves of a joint one), as
//! raft-rs counts votes and acknowledgements.

use super::{raft_error, Replica, ReplicaOptions};
use crate::db::DocDb;
use crate::error::{Error, Result};
use crate::ids::OpId;
use protobuf::Message as _;
use raft::eraftpb::{ConfChangeSingle, ConfChangeType, ConfChangeV2, ConfState};
use raft::StateRole;

/// One change of the group's membership.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Membership {
    /// Add a replica that receives the log but does not vote.
    AddLearner(u64),
    /// Add a voter, or make a learner one.
    AddVoter(u64),
    Remove(u64),
}

/// The active configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Members {
    pub voters: Vec<u64>,
    /// The old voters while a joint configuration is in force (empty otherwise).
    pub outgoing: Vec<u64>,
    pub learners: Vec<u64>,
}

impl Replica {
    /// Propose one membership change (one `ConfChangeV2`; several changes at once go
    /// through joint consensus). raft-rs keeps one change pending at a time: a change
    /// proposed while another is unapplied is dropped (an empty entry takes its place).
    pub fn propose_membership(&mut self, changes: &[Membership], now_us: u64) -> Result<()> {
        self.check_up()?;
        self.check_writable()?;
        self.set_now(now_us);
        if self.raw.raft.state != StateRole::Leader {
            let leader = Some(self.raw.raft.leader_id).filter(|&id| id != raft::INVALID_ID);
            return Err(Error::NotLeader { leader });
        }
        self.check_membership(changes)?;
        let mut cc = ConfChangeV2::default();
        for change in changes {
            let (change_type, node_id) = match *change {
                Membership::AddLearner(id) => (ConfChangeType::AddLearnerNode, id),
                Membership::AddVoter(id) => (ConfChangeType::AddNode, id),
                Membership::Remove(id) => (ConfChangeType::RemoveNode, id),
            };
            let mut single = ConfChangeSingle::default();
            single.set_change_type(change_type);
            single.node_id = node_id;
            cc.mut_changes().push(single);
        }
        self.raw.propose_conf_change(vec![], cc).map_err(raft_error)
    }

    /// docsim's own rule: a leader does not remove itself (raft-rs 0.7 leaves a leader
    /// outside its configuration untested, and one that applied its own removal goes
    /// inert before its followers may learn the commit — in a group of two, for good: the
    /// other voter never gets the vote it needs); move leadership first. A change that
    /// leaves no voter, or names one replica twice, is refused as well.
    fn check_membership(&self, changes: &[Membership]) -> Result<()> {
        let id_of = |c: &Membership| match *c {
            Membership::AddLearner(id) | Membership::AddVoter(id) | Membership::Remove(id) => id,
        };
        let mut ids: Vec<u64> = changes.iter().map(id_of).collect();
        ids.sort_unstable();
        let invalid = |why: String| Err(Error::InvalidRequest(why));
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return invalid("a membership change names one replica twice".into());
        }
        let me = self.options.id;
        if changes.contains(&Membership::Remove(me))
            || changes.contains(&Membership::AddLearner(me))
        {
            return invalid(format!("leader {me} does not remove itself from the voters"));
        }
        let mut voters = self.members().voters;
        for change in changes {
            match *change {
                Membership::AddVoter(id) => voters.push(id),
                Membership::Remove(id) | Membership::AddLearner(id) => voters.retain(|&v| v != id),
            }
        }
        if voters.is_empty() {
            return invalid("a membership change would leave no voter".into());
        }
        Ok(())
    }

    /// The active configuration.
    pub fn members(&self) -> Members {
        let cs = self.raw.raft.prs().conf().to_conf_state();
        let sorted = |ids: &[u64]| {
            let mut ids = ids.to_vec();
            ids.sort_unstable();
            ids
        };
        let learners = [cs.learners.as_slice(), cs.learners_next.as_slice()].concat();
        Members {
            voters: sorted(&cs.voters),
            outgoing: sorted(&cs.voters_outgoing),
            learners: sorted(&learners),
        }
    }

    fn is_member(&self) -> bool {
        let members = self.members();
        let id = self.options.id;
        [members.voters, members.outgoing, members.learners].iter().any(|ids| ids.contains(&id))
    }

    /// Apply a committed configuration change (its encoded `ConfChangeV2`).
    pub(super) fn apply_conf_change(&mut self, encoded: &[u8], op_id: OpId) -> Result<()> {
        let cc = ConfChangeV2::parse_from_bytes(encoded)
            .map_err(|e| Error::Storage(format!("log entry {op_id}: configuration change: {e}")))?;
        let was_member = self.is_member();
        let conf_state = self.raw.apply_conf_change(&cc).map_err(raft_error)?;
        // Removed on leaving the group: a replica added later also applies the changes
        // made before it joined, which do not name it.
        self.removed = self.removed || (was_member && !self.is_member());
        let encoded = encode_conf(self.removed, &conf_state);
        self.raw.store().wl().set_conf_state(conf_state);
        self.tablet.db().write_conf(&encoded, op_id, self.applied_ht)?;
        self.written = op_id;
        Ok(())
    }
}

/// docsim's encoding of a replica's configuration in RocksDB: whether it was removed,
/// then raft-rs's `ConfState`.
pub(super) fn encode_conf(removed: bool, conf: &ConfState) -> Vec<u8> {
    let mut out = vec![u8::from(removed)];
    out.extend(conf.write_to_bytes().expect("a ConfState encodes"));
    out
}

/// The configuration as of the flushed frontier and whether this replica was removed;
/// the initial voters when no change was ever applied.
pub(super) fn durable_conf(db: &DocDb, options: &ReplicaOptions) -> Result<(ConfState, bool)> {
    let Some(bytes) = db.durable_conf()? else {
        return Ok((ConfState::from((options.voters.clone(), vec![])), false));
    };
    let bad = |why: String| Error::Storage(format!("the stored configuration: {why}"));
    let (&removed, conf) = bytes.split_first().ok_or_else(|| bad("empty".into()))?;
    let conf = ConfState::parse_from_bytes(conf).map_err(|e| bad(e.to_string()))?;
    Ok((conf, removed == 1))
}
