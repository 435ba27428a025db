//! A replicated run's clients and nemesis. Clients send writes to the replica they believe
//! leads (sometimes to any), without waiting when more than one client writes at once;
//! reads go to a leader at its clock's now (or ahead, inside the lease it may hold) or to
//! any replica at its safe time, a little before it, or now (refused unless it is caught
//! up). The nemesis keeps up to one or two faults in force — a partition (one node cut
//! off, the leader cut off, a split with no majority, a bridge), a power cut, a slow disk
//! — each for a drawn while (50 ms to 2 s) before the network heals or the node restarts;
//! it also skews clocks and changes the groups' membership.

use super::knobs::Nemesis;
use super::Step;
use crate::exec::Cluster;
use docsim_engine::script::{At, Command, ConfChange, Route};
use docsim_engine::{CrashPoint, HybridTime, TabletId};
use docsim_models::{DocId, Key};
use docsim_workloads::Op;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// A fault in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Active {
    Partition,
    /// A node down, restarted when the fault ends.
    Down(u64),
    /// A node's disk syncs slowly.
    Slow(u64),
}

/// The nemesis's and the clients' state.
pub struct NemesisState {
    pub rng: ChaCha8Rng,
    pub knobs: Nemesis,
    active: Vec<(madsim::time::Instant, Active)>,
    /// The paths of the latest writes (documents and subkeys).
    recent: VecDeque<(DocId, Vec<Key>)>,
    /// Each node's highest compaction cutoff (a node's cutoffs never move back).
    floors: BTreeMap<u64, HybridTime>,
    /// Faults injected, by kind.
    pub counts: BTreeMap<String, u64>,
}

impl NemesisState {
    pub fn new(rng: ChaCha8Rng, knobs: Nemesis) -> NemesisState {
        NemesisState {
            rng,
            knobs,
            active: Vec::new(),
            recent: VecDeque::new(),
            floors: BTreeMap::new(),
            counts: BTreeMap::new(),
        }
    }

    /// Node `id`'s highest compaction cutoff so far.
    pub fn cutoff(&self, id: u64) -> HybridTime {
        self.floors.get(&id).copied().unwrap_or(HybridTime::MIN)
    }

    /// Node `id` compacted to `cutoff`.
    pub fn compacted(&mut self, id: u64, cutoff: HybridTime) {
        let floor = self.floors.entry(id).or_insert(HybridTime::MIN);
        *floor = (*floor).max(cutoff);
    }

    fn count(&mut self, kind: &str) {
        *self.counts.entry(kind.to_owned()).or_default() += 1;
    }

    /// Node `id` went down by a power cut: it restarts after a drawn while.
    pub fn restart_later(&mut self, id: u64) {
        self.active.retain(|(_, a)| *a != Active::Down(id));
        let lasts_ms = [50, 200, 500, 1_000, 2_000][self.rng.random_range(0..5)];
        let until = crate::simulated_now() + Duration::from_millis(lasts_ms);
        self.active.push((until, Active::Down(id)));
    }

    /// Any node (the one whose clock a client's op reads).
    pub fn any_node(&mut self, cluster: &Cluster) -> u64 {
        let n = cluster.ids().count() as u64;
        self.rng.random_range(1..=n)
    }

    /// Route a client's op: a write to the replica believed to lead (sometimes any), a
    /// read to a leader or any replica at a time of the client's choosing.
    pub fn route(&mut self, op: Op, cluster: &Cluster) -> Step {
        let tablet = tablet_of(&op, cluster);
        let split = matches!(&tablet, TabletId::Table(_, part) if part.count > 1);
        let reads = is_read(&op);
        let write_turned_read = !reads
            && matches!(op, Op::Write { .. } | Op::Batch { .. })
            && self.rng.random_range(0..100) >= self.knobs.write_percent
            && !self.recent.is_empty();
        if write_turned_read {
            let (doc, path) = self.recent[self.rng.random_range(0..self.recent.len())].clone();
            return self.read(Op::Get { ht: 0, doc, path }, &tablet, cluster);
        }
        if reads {
            let op = match op {
                Op::Get { ht, .. } if !self.recent.is_empty() && self.rng.random_bool(0.5) => {
                    let (doc, path) =
                        self.recent[self.rng.random_range(0..self.recent.len())].clone();
                    Op::Get { ht, doc, path }
                }
                op => op,
            };
            return self.read(op, &tablet, cluster);
        }
        self.remember(&op);
        let n = cluster.ids().count() as u64;
        let leader = cluster.leader_guess(&tablet).filter(|_| self.rng.random_range(0..10) > 0);
        let target = match leader {
            Some(_) if split => None, // a split table's statement: each tablet's leader
            Some(id) => Some(id),
            None => Some(self.rng.random_range(1..=n)),
        };
        // Blind writes go on without waiting while clients are free; a Redis command (its
        // reply printed with it) and the others wait for their answer.
        let blind = matches!(op, Op::Write { .. } | Op::Batch { .. } | Op::Cql { .. });
        let nowait = blind && cluster.pending() < self.knobs.clients.saturating_sub(1);
        Step::Client { op, route: Route { node: target, nowait }, at: None }
    }

    fn remember(&mut self, op: &Op) {
        let writes = match op {
            Op::Write { write, .. } => std::slice::from_ref(write),
            Op::Batch { writes, .. } => writes.as_slice(),
            _ => return,
        };
        for w in writes {
            if self.recent.len() == 16 {
                self.recent.pop_front();
            }
            self.recent.push_back((w.doc.clone(), w.path.clone()));
        }
    }

    /// A read at a leader (now, or ahead inside its lease) or any replica (its safe time,
    /// a little before it, or now).
    fn read(&mut self, op: Op, tablet: &TabletId, cluster: &Cluster) -> Step {
        let n = cluster.ids().count() as u64;
        let claiming: Vec<u64> =
            cluster.ids().filter(|&id| cluster.running(id) && cluster.leads(id, tablet)).collect();
        let id = match self.rng.random_range(0..2) {
            0 if !claiming.is_empty() => claiming[self.rng.random_range(0..claiming.len())],
            _ => self.rng.random_range(1..=n),
        };
        let leader = claiming.contains(&id);
        // Half the reads keep the workload's time (a TTL's last visible moment, the
        // cutoff, a time in between): refused above the replica's safe time.
        if let Some(ht) = op.time().filter(|_| self.rng.random_bool(0.5)) {
            let at = Some(At::Ht(HybridTime::from_raw(ht)));
            return Step::Client { op, route: Route { node: Some(id), nowait: false }, at };
        }
        let at = match (leader, self.rng.random_range(0..4)) {
            (true, 0) => At::Now { ahead_us: self.rng.random_range(0..crate::exec::LEASE_US) },
            (true, _) | (false, 0) => At::Now { ahead_us: 0 },
            (false, 1) => {
                let safe = cluster.safe_time(id, tablet).unwrap_or(HybridTime::MIN);
                At::Ht(HybridTime::from_raw(
                    safe.raw().saturating_sub(self.rng.random_range(0..1 << 22)),
                ))
            }
            (false, _) => At::Safe,
        };
        Step::Client { op, route: Route { node: Some(id), nowait: false }, at: Some(at) }
    }

    /// The nemesis's steps now: ending faults whose while is over, maybe starting one.
    pub fn steps(&mut self, cluster: &Cluster) -> (Vec<Step>, Vec<u64>) {
        let now = crate::simulated_now();
        let mut steps = Vec::new();
        let mut restart = Vec::new();
        for (until, fault) in std::mem::take(&mut self.active) {
            match fault {
                _ if now < until => self.active.push((until, fault)),
                Active::Partition => steps.push(Step::Command(Command::Heal)),
                Active::Down(id) if cluster.running(id) => {
                    steps.push(Step::Command(Command::Disarm { node: Some(id) }))
                }
                Active::Down(id) => restart.push(id),
                Active::Slow(id) => steps.push(Step::Command(Command::Slow(id, 0))),
            }
        }
        // A node that went down by itself (a power cut that fired, a failed log write).
        for id in cluster.ids() {
            let scheduled = self.active.iter().any(|(_, f)| *f == Active::Down(id));
            if !cluster.running(id) && !scheduled && !restart.contains(&id) && cluster.hosts_any(id)
            {
                self.restart_later(id);
            }
        }
        if self.active.len() < self.knobs.max_faults
            && self.rng.random_range(0..100) < self.knobs.fault_percent
        {
            steps.extend(self.start_fault(cluster));
        }
        (steps, restart)
    }

    fn start_fault(&mut self, cluster: &Cluster) -> Vec<Step> {
        let n = cluster.ids().count() as u64;
        let victim = match cluster.leader_guess(&TabletId::Docs) {
            Some(leader) if self.rng.random_bool(0.5) => leader,
            _ => self.rng.random_range(1..=n),
        };
        let lasts_ms = [50, 200, 500, 1_000, 2_000][self.rng.random_range(0..5)];
        let until = crate::simulated_now() + Duration::from_millis(lasts_ms);
        let partitioned = self.active.iter().any(|(_, f)| *f == Active::Partition);
        let command = match self.rng.random_range(0..8) {
            0 | 1 if !partitioned => {
                let side = self.minority(cluster, victim);
                let rest: Vec<u64> = cluster.ids().filter(|id| !side.contains(id)).collect();
                if rest.is_empty() {
                    return vec![];
                }
                self.active.push((until, Active::Partition));
                self.count("partition");
                Command::Partition(vec![side, rest])
            }
            5 if !partitioned => {
                let Some(command) = self.split_or_bridge(cluster, victim) else { return vec![] };
                self.active.push((until, Active::Partition));
                self.count("partition.split_or_bridge");
                command
            }
            2 | 3 if cluster.running(victim) => {
                let at = match self.rng.random_bool(0.5) {
                    true => None,
                    false => Some(CrashPoint::ALL[self.rng.random_range(0..7)]),
                };
                self.active.push((until, Active::Down(victim)));
                self.count(&format!("power_cut.{}", at.map_or("now", |p| p.name())));
                Command::Crash { at, tear: None, node: Some(victim) }
            }
            6 if self.knobs.membership => match self.next_membership(cluster) {
                Some(command) => {
                    self.count("membership_change");
                    command
                }
                None => return vec![],
            },
            7 if cluster.running(victim) => {
                let sync_ms = [2, 10, 50, 200][self.rng.random_range(0..4)];
                self.active.push((until, Active::Slow(victim)));
                self.count("slow_disk");
                Command::Slow(victim, sync_ms * 1000)
            }
            4 => {
                let max = self.knobs.max_skew_us as i64;
                let skew = if max == 0 { 0 } else { self.rng.random_range(-max..=max) };
                self.count("skew");
                Command::Skew(victim, skew)
            }
            _ => return vec![],
        };
        vec![Step::Command(command)]
    }

    /// No majority anywhere (`split`: 1|1|1, or 2|2|1 of five), or a bridge: `victim`
    /// reaches both halves of the others, which do not reach each other.
    fn split_or_bridge(&mut self, cluster: &Cluster, victim: u64) -> Option<Command> {
        let mut others: Vec<u64> = cluster.ids().filter(|&id| id != victim).collect();
        if others.len() < 2 {
            return None;
        }
        for i in (1..others.len()).rev() {
            others.swap(i, self.rng.random_range(0..=i));
        }
        let half = others.len() / 2;
        let (left, right) = others.split_at(half);
        if self.rng.random_bool(0.5) {
            let links = left.iter().flat_map(|&a| right.iter().map(move |&b| (a, b))).collect();
            return Some(Command::Cut(links));
        }
        let mut groups = vec![vec![victim], left.to_vec(), right.to_vec()];
        groups.iter_mut().for_each(|g| g.sort_unstable());
        Some(Command::Partition(groups))
    }

    /// A minority holding `victim` (alone, or with followers up to just under half), with
    /// the document tablet's learners half the time (a leader cut off from its voters but
    /// not from the replicas that do not vote: where Jepsen lost YugaByte DB 1.1.9's
    /// writes).
    fn minority(&mut self, cluster: &Cluster, victim: u64) -> Vec<u64> {
        let n = cluster.replicas() as u64;
        let size = self.rng.random_range(1..=((n - 1) / 2).max(1));
        let mut side = vec![victim];
        let mut others: Vec<u64> = cluster.ids().filter(|&id| id != victim).collect();
        while (side.len() as u64) < size && !others.is_empty() {
            side.push(others.remove(self.rng.random_range(0..others.len())));
        }
        let learners = cluster.members(&TabletId::Docs).map(|m| m.learners).unwrap_or_default();
        if !learners.is_empty() && self.rng.random_bool(0.5) {
            side.extend(learners);
        }
        side.sort_unstable();
        side.dedup();
        side
    }

    /// The next membership change of a group drawn at random: promote a learner, shrink
    /// back to n voters, or bring in the spare (as a learner, or replacing a voter at
    /// once). `None` while a joint configuration is in force.
    fn next_membership(&mut self, cluster: &Cluster) -> Option<Command> {
        let tablets = cluster.tablets();
        let tablet = tablets[self.rng.random_range(0..tablets.len())].clone();
        let leader = cluster.leader_guess(&tablet)?;
        let members = cluster.members(&tablet)?;
        if !members.outgoing.is_empty() {
            return None;
        }
        // A leader does not remove itself: the victim is another voter.
        let others: Vec<u64> = members.voters.iter().copied().filter(|&v| v != leader).collect();
        if others.is_empty() {
            return None;
        }
        let n = cluster.replicas();
        let spare = n as u64 + 1;
        let pick = |rng: &mut ChaCha8Rng| others[rng.random_range(0..others.len())];
        let change = if let Some(&learner) = members.learners.first() {
            // A learner stays one a while (a third of the draws promote it).
            if self.rng.random_range(0..3) > 0 {
                return None;
            }
            ConfChange::AddVoter(learner)
        } else if members.voters.len() > n {
            ConfChange::Remove(pick(&mut self.rng))
        } else if !members.voters.contains(&spare) && !cluster.ever_member(spare, &tablet) {
            match self.rng.random_bool(0.5) {
                true => ConfChange::AddLearner(spare),
                false => ConfChange::Replace(pick(&mut self.rng), spare),
            }
        } else {
            return None;
        };
        let table = tablet.table_ref();
        Some(Command::Conf { change, to: Some(leader), table })
    }
}

/// The tablet an op goes to (of a split table, its first: the leader a client guesses
/// for such a table's statements is each tablet's own, `exec/client.rs`).
pub fn tablet_of(op: &Op, cluster: &Cluster) -> TabletId {
    match op {
        Op::Cql { table, .. }
        | Op::Page { table, .. }
        | Op::Snapshot { table, .. }
        | Op::Restore { table, .. } => {
            let tablets = cluster.tablets_named(table).unwrap_or_default();
            tablets.into_iter().next().unwrap_or_else(|| TabletId::table(table))
        }
        _ => TabletId::Docs,
    }
}

fn is_read(op: &Op) -> bool {
    match op {
        Op::Get { .. } | Op::Page { .. } => true,
        Op::Cql { op: docsim_models::cql::CqlOp::Select { .. }, .. } => true,
        Op::Redis { op, .. } => super::step::redis_reads(op),
        _ => false,
    }
}
