//! The liveness phase (`converge`): faults stop, the network heals, every node runs, and
//! within [`LIVENESS`] of simulated time every tablet's group must have one leader that
//! every member follows, every member applied up to the leader's last index, and every
//! member reading every document alike at one hybrid time (their files, compactions and
//! cutoffs may differ; what they read may not). Then each group's history is checked
//! (`history.rs`).

use super::client::CommandError;
use super::Cluster;
use crate::failure::{Broken, FailureKind};
use docsim_engine::{DocKey, DocPath, HybridTime, Reply, Request, TabletId};
use madsim::net::NetSim;
use std::collections::BTreeSet;
use std::time::Duration;

/// How long the liveness phase may take, in simulated time.
pub const LIVENESS: Duration = Duration::from_secs(10);

impl Cluster {
    /// The liveness phase, then the history checks.
    pub(super) async fn converge(&mut self) -> Result<(), CommandError> {
        let _ = self.collect();
        self.settle(true);
        if let Some(broken) = &self.broken {
            return Err(CommandError::Check(broken.to_string()));
        }
        match self.liveness().await {
            Ok(()) => {
                self.trace("check: ok".into());
                Ok(())
            }
            Err(broken) => {
                self.fail(broken.clone());
                Err(CommandError::Check(broken.to_string()))
            }
        }
    }

    async fn liveness(&mut self) -> Result<(), Broken> {
        self.calm();
        self.collect()?; // a cut that fired is carried out before the restarts
        for id in self.ids().collect::<Vec<_>>() {
            if !self.running(id) {
                let mut printed = Vec::new();
                if let Err(e) = self.restart(id, &mut printed) {
                    return Err(Broken::new(FailureKind::ReplicaFailed, e.to_string()));
                }
                self.trace.extend(printed);
            }
        }
        let start = crate::simulated_now();
        loop {
            madsim::time::sleep(Duration::from_millis(50)).await;
            self.collect()?;
            if let Some(members) = self.converged() {
                self.members = members;
                if self.read_everywhere()? {
                    self.counts.liveness_ms = start.elapsed().as_millis() as u64;
                    return self.check_histories();
                }
            }
            if start.elapsed() > LIVENESS {
                let why = format!("no convergence within {LIVENESS:?}: {}", self.statuses());
                return Err(Broken::new(FailureKind::NoConvergence, why));
            }
        }
    }

    /// Faults stop: the network heals, loses nothing, every disk is fast and faultless,
    /// no power cut armed earlier fires now.
    fn calm(&mut self) {
        if !self.cut.is_empty() {
            self.heal();
        }
        NetSim::current().update_config(|c| c.packet_loss_rate = 0.0);
        for id in self.ids().collect::<Vec<_>>() {
            let mut slot = self.slot(id);
            slot.sync_latency = Duration::ZERO;
            slot.node.disarm();
            slot.node.disk().clear_faults();
        }
    }

    /// Every tablet's members, once every group converged: one leader every member
    /// follows (not in a joint configuration), everything applied.
    fn converged(&self) -> Option<std::collections::BTreeMap<TabletId, Vec<u64>>> {
        let mut all = std::collections::BTreeMap::new();
        for tablet in self.tablets() {
            let leader = self.leader_guess(&tablet)?;
            let (status, members) = {
                let slot = self.slot(leader);
                let replica = slot.node.replica(&tablet).ok()?;
                (replica.status(), replica.members())
            };
            if !members.outgoing.is_empty() {
                return None;
            }
            let mut ids = [members.voters, members.learners].concat();
            ids.sort_unstable();
            let caught_up = ids.iter().all(|&id| {
                let slot = self.slot(id);
                slot.running()
                    && slot.node.replica(&tablet).is_ok_and(|r| {
                        let s = r.status();
                        s.term == status.term
                            && s.leader_id == status.leader_id
                            && s.applied == status.last_index
                            && s.last_index == status.last_index
                    })
            });
            if !caught_up {
                return None;
            }
            all.insert(tablet, ids);
        }
        Some(all)
    }

    /// Every member of every group reads every document it stores, at one hybrid time at
    /// or above every member's history cutoff: the reads must be equal (and the run's
    /// checker compares them with its model). `false` while some member cannot serve that
    /// time yet.
    fn read_everywhere(&mut self) -> Result<bool, Broken> {
        for (tablet, members) in self.members.clone() {
            let Some(read_ht) = self.common_read_time(&tablet, &members) else {
                return Ok(false);
            };
            for doc in self.documents(&tablet, &members)? {
                let path = DocPath::new(doc, vec![]);
                let request = Request::Get { path: path.clone() };
                let mut first: Option<(u64, Reply)> = None;
                for &id in &members {
                    let now_us = self.now_us(id);
                    let result = {
                        let mut slot = self.slot(id);
                        let replica = slot.node.replica_mut(&tablet).expect("members run");
                        replica.read(&request, read_ht, now_us)
                    };
                    self.events.push(super::Event::Read {
                        tablet: tablet.clone(),
                        node: id,
                        request: request.clone(),
                        read_ht,
                        result: result.clone(),
                    });
                    let reply = result.map_err(|e| {
                        let why = format!("node {id} refused {path} at {read_ht}: {e}");
                        Broken::new(FailureKind::ReplicaFailed, why)
                    })?;
                    match &first {
                        None => first = Some((id, reply)),
                        Some((a, want)) if *want != reply => {
                            let shown = |r: &docsim_engine::Reply| {
                                super::reply_lines(&request, read_ht, r).join(" | ")
                            };
                            let why = format!(
                                "node {id} and node {a} read {path} at {read_ht} differently \
                                 after convergence: {} and {}",
                                shown(&reply),
                                shown(want)
                            );
                            return Err(Broken::new(FailureKind::NoConvergence, why));
                        }
                        Some(_) => {}
                    }
                }
            }
        }
        Ok(true)
    }

    /// A time every member can serve reads of `tablet` at and none has collected below:
    /// the lowest safe time, if it is at or above every member's history cutoff.
    fn common_read_time(&self, tablet: &TabletId, members: &[u64]) -> Option<HybridTime> {
        let mut safe = HybridTime::MAX;
        let mut cutoff = HybridTime::MIN;
        for &id in members {
            let slot = self.slot(id);
            let replica = slot.node.replica(tablet).ok()?;
            safe = safe.min(replica.safe_time());
            cutoff = cutoff.max(replica.history_cutoff());
        }
        (safe >= cutoff).then_some(safe)
    }

    /// The documents any member of `tablet`'s group stores.
    fn documents(&self, tablet: &TabletId, members: &[u64]) -> Result<BTreeSet<DocKey>, Broken> {
        let mut docs = BTreeSet::new();
        for &id in members {
            let slot = self.slot(id);
            let replica = slot.node.replica(tablet).expect("members run");
            let dump = replica.dump().map_err(|e| {
                Broken::new(FailureKind::ReplicaFailed, format!("node {id} cannot dump: {e}"))
            })?;
            docs.extend(dump.into_iter().map(|((key, _), ..)| key.path.doc_key));
        }
        Ok(docs)
    }

    /// Each group's history, checked: one history, times increasing (unless a script gave
    /// times), every committed entry a proposal, every acknowledged write committed.
    fn check_histories(&mut self) -> Result<(), Broken> {
        let (mut committed, mut lost) = (0, 0);
        for tablet in self.tablets() {
            let leader = self.leader_guess(&tablet).expect("converged");
            let last_index = {
                let slot = self.slot(leader);
                slot.node.replica(&tablet).expect("runs").status().last_index
            };
            let history = self.histories.entry(tablet).or_default();
            let log = history.committed_log(last_index, !self.explicit_times)?;
            history.check_writes(&log)?;
            committed += log.iter().filter(|(_, ht)| ht.is_some()).count();
            lost += history.lost(&log);
        }
        (self.counts.committed, self.counts.proposals_lost) = (committed, lost);
        Ok(())
    }

    /// Every node's status per tablet (a failed convergence's diagnostics).
    fn statuses(&self) -> String {
        let mut out = Vec::new();
        for tablet in self.tablets() {
            for id in self.ids() {
                let slot = self.slot(id);
                let status = slot.node.replica(&tablet).ok().map(|r| {
                    let times = format!("safe={} cutoff={}", r.safe_time(), r.history_cutoff());
                    (r.status(), times, r.progress())
                });
                out.push(format!("{id} {}: {status:?}", super::tablet_name(&tablet)));
            }
        }
        out.join("; ")
    }
}
