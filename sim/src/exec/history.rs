//! What the executor records of one tablet's Raft group, and the checks that need no
//! model: every entry each replica applied, every proposal and its answer. Pure: no
//! replica is asked anything here.
//!
//! - **One history.** No two replicas apply different entries at one index (Raft's state
//!   machine safety); the committed log is what they applied, index by index.
//! - **Writes.** Every committed entry with a hybrid time is a client's proposal at the
//!   time the leader gave it; hybrid times increase along the log (in a run whose writes
//!   take their times from the leaders' clocks); every acknowledged write is in the
//!   committed log at its op id. A write that timed out or got no answer may be in it or
//!   not (the log decides).

use crate::failure::{Broken, FailureKind};
use docsim_engine::{HybridTime, OpId};
use std::collections::BTreeMap;

/// What a client heard back from a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    Acked,
    TimedOut,
    /// The node crashed before answering.
    Unanswered,
}

impl Answer {
    /// As a trace prints it.
    pub fn name(self) -> &'static str {
        match self {
            Answer::Acked => "acked",
            Answer::TimedOut => "timed out",
            Answer::Unanswered => "no answer",
        }
    }
}

/// One proposal a leader accepted: its time, and its answer once it has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proposal {
    pub ht: HybridTime,
    pub answer: Option<Answer>,
}

/// One tablet's group, as recorded.
#[derive(Default)]
pub struct History {
    /// Index → (term, hybrid time) of the entry applied there, from the first replica that
    /// applied it.
    pub applied: BTreeMap<u64, (u64, Option<HybridTime>)>,
    /// The last index each replica applied (by node id).
    pub applied_at: BTreeMap<u64, u64>,
    pub proposals: BTreeMap<OpId, Proposal>,
}

impl History {
    /// Record that `node` applied the entry `op_id`; fails if another replica applied a
    /// different entry at that index.
    pub fn applied(
        &mut self,
        node: u64,
        op_id: OpId,
        ht: Option<HybridTime>,
    ) -> Result<(), Broken> {
        let first = *self.applied.entry(op_id.index).or_insert((op_id.term, ht));
        self.applied_at.insert(node, op_id.index);
        if first != (op_id.term, ht) {
            return Err(Broken::new(
                FailureKind::TwoHistories,
                format!(
                    "node {node} applied {op_id} ({ht:?}) where another replica applied term {} \
                     ({:?}) at index {}",
                    first.0, first.1, op_id.index
                ),
            ));
        }
        Ok(())
    }

    /// A leader accepted a proposal at `op_id`; two leaders of one term can hand out one
    /// op id twice, and nothing else can.
    pub fn proposed(&mut self, op_id: OpId, ht: HybridTime) -> Result<(), Broken> {
        let proposal = Proposal { ht, answer: None };
        match self.proposals.insert(op_id, proposal) {
            None => Ok(()),
            Some(_) => Err(Broken::new(
                FailureKind::TwoLeaders,
                format!("two leaders in term {}: both proposed {op_id}", op_id.term),
            )),
        }
    }

    /// The committed log up to `last_index` (what the replicas applied), checked: every
    /// index applied somewhere; with `monotonic`, hybrid times increasing along it.
    pub fn committed_log(
        &self,
        last_index: u64,
        monotonic: bool,
    ) -> Result<Vec<(OpId, Option<HybridTime>)>, Broken> {
        let mut log = Vec::new();
        let mut last_ht = HybridTime::MIN;
        for index in 1..=last_index {
            let Some(&(term, ht)) = self.applied.get(&index) else {
                let why =
                    format!("no replica applied index {index} (committed up to {last_index})");
                return Err(Broken::new(FailureKind::NoConvergence, why));
            };
            if let Some(ht) = ht {
                if monotonic && ht <= last_ht {
                    let why = format!(
                        "hybrid time went back along the log: {term}.{index} at {ht} after \
                         {last_ht}"
                    );
                    return Err(Broken::new(FailureKind::TimeWentBack, why));
                }
                last_ht = last_ht.max(ht);
            }
            log.push((OpId::new(term, index), ht));
        }
        Ok(log)
    }

    /// Every committed entry with a time is a proposal at that time; every acknowledged
    /// proposal is committed.
    pub fn check_writes(&self, log: &[(OpId, Option<HybridTime>)]) -> Result<(), Broken> {
        for (op_id, ht) in log {
            let Some(ht) = ht else { continue };
            match self.proposals.get(op_id) {
                None => {
                    let why = format!("committed entry {op_id} at {ht} is no client's write");
                    return Err(Broken::new(FailureKind::UnknownEntry, why));
                }
                Some(p) if p.ht != *ht => {
                    let why = format!("committed entry {op_id} is at {ht}, proposed at {}", p.ht);
                    return Err(Broken::new(FailureKind::UnknownEntry, why));
                }
                Some(_) => {}
            }
        }
        let acked = self.proposals.iter().filter(|(_, p)| p.answer == Some(Answer::Acked));
        for (op_id, p) in acked {
            if !log.iter().any(|(op, _)| op == op_id) {
                let why =
                    format!("acknowledged write {op_id} at {} is not in the committed log", p.ht);
                return Err(Broken::new(FailureKind::AckedWriteLost, why));
            }
        }
        Ok(())
    }

    /// Proposals that never committed (timed out or unanswered, their tail overwritten).
    pub fn lost(&self, log: &[(OpId, Option<HybridTime>)]) -> usize {
        let committed = |op: &OpId| log.iter().any(|(o, _)| o == op);
        self.proposals.keys().filter(|op| !committed(op)).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ht(us: u64) -> Option<HybridTime> {
        Some(HybridTime::from_micros(us))
    }

    #[test]
    fn two_replicas_applying_different_entries_at_one_index_are_two_histories() {
        let mut h = History::default();
        h.applied(1, OpId::new(1, 1), ht(10)).expect("first");
        h.applied(2, OpId::new(1, 1), ht(10)).expect("the same entry");
        let broken = h.applied(3, OpId::new(2, 1), ht(11)).expect_err("another entry");
        assert_eq!(broken.kind, FailureKind::TwoHistories);
    }

    #[test]
    fn the_committed_log_is_whole_in_time_order_and_holds_every_acked_write() {
        let mut h = History::default();
        for (i, us) in [(1, 10), (2, 20), (3, 15)] {
            h.applied(1, OpId::new(1, i), ht(us)).expect("applied");
            h.proposed(OpId::new(1, i), HybridTime::from_micros(us)).expect("proposed");
        }
        let back = h.committed_log(3, true).expect_err("15 after 20");
        assert_eq!(back.kind, FailureKind::TimeWentBack);
        let log = h.committed_log(3, false).expect("times not checked");
        assert_eq!(h.committed_log(4, false).unwrap_err().kind, FailureKind::NoConvergence);
        h.check_writes(&log).expect("every entry a proposal");
        let lost = OpId::new(1, 4);
        h.proposed(lost, HybridTime::from_micros(30)).expect("proposed");
        h.proposals.get_mut(&lost).expect("there").answer = Some(Answer::Acked);
        assert_eq!(h.check_writes(&log).unwrap_err().kind, FailureKind::AckedWriteLost);
        assert_eq!(h.proposed(lost, HybridTime::MIN).unwrap_err().kind, FailureKind::TwoLeaders);
    }
}
