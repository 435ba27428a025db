//! The replicated run's verdict, from what the controller recorded: every entry each
//! replica applied, every proposal and its answer, every read. Pure: no peer is asked
//! anything here.
//!
//! - **One history.** No two replicas apply different entries at one index (Raft's state
//!   machine safety); the committed log is what they applied, index by index, and after
//!   the liveness phase every replica applied all of it.
//! - **Writes.** Every acknowledged write is in the committed log at its op id; every
//!   committed entry carrying data is a client's proposal, at the hybrid time the leader
//!   gave it; a write that timed out or got no answer may be in it or not (the log
//!   decides). Hybrid times increase along the log.
//! - **Reads.** The model is fed the committed writes in log order; every read any
//!   replica served must equal the model's answer at its hybrid time.

use crate::convert;
use docsim_engine::{Document, HybridTime, OpId};
use docsim_models::{DocId, Key, Markers, Model};
use docsim_workloads::DocWrite;
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

/// One proposal a leader accepted.
pub struct Proposal {
    pub op_id: OpId,
    pub ht: HybridTime,
    pub writes: Vec<DocWrite>,
    pub answer: Answer,
}

/// One read a replica served.
pub struct Read {
    pub node: u64,
    pub doc: DocId,
    pub path: Vec<Key>,
    pub read_ht: HybridTime,
    pub got: Option<Document>,
}

/// What the run recorded.
#[derive(Default)]
pub struct History {
    /// Index → (term, hybrid time) of the entry applied there, from the first replica that
    /// applied it.
    pub applied: BTreeMap<u64, (u64, Option<HybridTime>)>,
    pub proposals: BTreeMap<OpId, Proposal>,
    pub reads: Vec<Read>,
}

impl History {
    /// Record that `node` applied the entry `op_id`; fails if another replica applied a
    /// different entry at that index.
    pub fn applied(
        &mut self,
        node: u64,
        op_id: OpId,
        ht: Option<HybridTime>,
    ) -> Result<(), String> {
        let first = *self.applied.entry(op_id.index).or_insert((op_id.term, ht));
        if first != (op_id.term, ht) {
            return Err(format!(
                "node {node} applied {op_id} ({ht:?}) where another replica applied term {} ({:?}) \
                 at index {}: two histories",
                first.0, first.1, op_id.index
            ));
        }
        Ok(())
    }

    /// The verdict once every replica applied up to `last_index`.
    pub fn check(&self, last_index: u64) -> Result<CheckCounts, String> {
        let log = self.committed_log(last_index)?;
        self.check_writes(&log)?;
        let model = self.model(&log)?;
        self.check_reads(&model)?;
        let committed = log.iter().filter(|(_, ht)| ht.is_some()).count();
        let lost =
            self.proposals.values().filter(|p| !log.contains(&(p.op_id, Some(p.ht)))).count();
        Ok(CheckCounts { committed, proposals_lost: lost })
    }

    fn committed_log(&self, last_index: u64) -> Result<Vec<(OpId, Option<HybridTime>)>, String> {
        let mut log = Vec::new();
        let mut last_ht = HybridTime::MIN;
        for index in 1..=last_index {
            let Some(&(term, ht)) = self.applied.get(&index) else {
                return Err(format!(
                    "no replica applied index {index} (committed up to {last_index})"
                ));
            };
            if let Some(ht) = ht {
                if ht <= last_ht {
                    return Err(format!(
                        "hybrid time went back along the log: {term}.{index} at {ht} \
                         after {last_ht}"
                    ));
                }
                last_ht = ht;
            }
            log.push((OpId::new(term, index), ht));
        }
        Ok(log)
    }

    fn check_writes(&self, log: &[(OpId, Option<HybridTime>)]) -> Result<(), String> {
        for (op_id, ht) in log {
            let Some(ht) = ht else { continue };
            match self.proposals.get(op_id) {
                None => {
                    return Err(format!("committed entry {op_id} at {ht} is no client's write"))
                }
                Some(p) if p.ht != *ht => {
                    return Err(format!("committed entry {op_id} is at {ht}, proposed at {}", p.ht))
                }
                Some(_) => {}
            }
        }
        for p in self.proposals.values().filter(|p| p.answer == Answer::Acked) {
            if !log.iter().any(|(op_id, _)| *op_id == p.op_id) {
                return Err(format!(
                    "acknowledged write {} at {} is not in the committed log",
                    p.op_id, p.ht
                ));
            }
        }
        Ok(())
    }

    fn model(&self, log: &[(OpId, Option<HybridTime>)]) -> Result<Model, String> {
        let mut model = Model::new();
        for (op_id, ht) in log.iter().filter(|(_, ht)| ht.is_some()) {
            let p = &self.proposals[op_id];
            let writes: Vec<_> = p.writes.iter().map(DocWrite::to_model).collect();
            let time = ht.expect("filtered").raw();
            model
                .write_batch(time, Markers::Optional, &writes)
                .map_err(|e| format!("the model refuses committed entry {op_id}: {e:?}"))?;
        }
        Ok(model)
    }

    fn check_reads(&self, model: &Model) -> Result<(), String> {
        for read in &self.reads {
            let want = model
                .read(&read.doc, &read.path, read.read_ht.raw())
                .map_err(|e| format!("the model refuses a read at {}: {e:?}", read.read_ht))?;
            let got = read.got.as_ref().map(convert::doc);
            if want != got {
                let path = convert::path(&read.doc, &read.path);
                return Err(format!(
                    "node {} read {path} at {}: got {}, the committed log says {}",
                    read.node,
                    read.read_ht,
                    show(read.got.as_ref()),
                    show(want.as_ref().map(convert::document).as_ref()),
                ));
            }
        }
        Ok(())
    }
}

fn show(doc: Option<&Document>) -> String {
    doc.map_or("(absent)".to_owned(), |d| d.to_string())
}

/// What the check counted.
pub struct CheckCounts {
    /// Committed entries carrying writes.
    pub committed: usize,
    /// Proposals that never committed (timed out or unanswered, their tail overwritten).
    pub proposals_lost: usize,
}
