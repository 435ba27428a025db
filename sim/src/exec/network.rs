//! The network's commands (partitions, cut links, healing), the nodes' clocks and disks
//! (skew, slow syncs), simulated time (`wait`), membership changes (`conf`) and what a
//! script prints of the groups (`leader`, `status`).
//!
//! Membership: a group of n replicas has one spare node, n + 1, started the first time a
//! change names it (a fresh node: empty disks, the tablets of the catalog, the initial
//! voters as its configuration, everything else from the leaders' logs or snapshots). A
//! replica that applies its own removal goes inert (`removed`; YB tombstones it).

use super::client::CommandError;
use super::{tablet_name, Cluster};
use docsim_engine::script::{Command, ConfChange};
use docsim_engine::{ErrorKind, TabletId};
use madsim::net::NetSim;
use std::time::Duration;

impl Cluster {
    /// A network, clock, membership or reporting command.
    pub(super) async fn network(
        &mut self,
        command: &Command,
        printed: &mut Vec<String>,
    ) -> Option<CommandError> {
        if let Err(why) = self.check_nodes(command) {
            return Some(CommandError::Check(why));
        }
        match command {
            Command::Partition(groups) => {
                self.partition(groups);
                None
            }
            Command::Cut(links) => {
                self.clog(links);
                self.counts.bridges += 1;
                self.note(command.to_string());
                None
            }
            Command::Heal => {
                self.heal();
                None
            }
            Command::Skew(id, skew_us) => {
                self.slot(*id).skew_us = *skew_us;
                self.note(format!("skew node={id} {skew_us}us"));
                None
            }
            Command::Slow(id, us) => {
                self.slot(*id).sync_latency = Duration::from_micros(*us);
                self.counts.slow_disks += usize::from(*us > 0);
                self.note(command.to_string());
                None
            }
            Command::Wait(us) => {
                madsim::time::sleep(Duration::from_micros(*us)).await;
                None
            }
            Command::Conf { change, to, table } => {
                let tablets = match table {
                    None => vec![TabletId::Docs],
                    Some(name) => match self.tablets_named(name) {
                        Ok(tablets) => tablets,
                        Err(e) => return Some(CommandError::Node(e)),
                    },
                };
                // A change of a split table's membership: each of its tablets' groups.
                tablets.iter().find_map(|t| self.change_membership(t, *change, *to))
            }
            Command::Leader => {
                printed.extend(self.tablets().iter().map(|t| self.leader_line(t)));
                None
            }
            Command::Status => {
                for tablet in self.tablets() {
                    printed.extend(self.ids().map(|id| self.status_line(&tablet, id)));
                }
                None
            }
            Command::Converge => self.converge().await.err(),
            other => unreachable!("not a network command: {other}"),
        }
    }

    /// The nodes a command names exist; a partition's groups split them all; a skew stays
    /// within the header's bound (a restarted replica's quiet time assumes it).
    fn check_nodes(&self, command: &Command) -> Result<(), String> {
        let started = self.slots.len() as u64;
        let max_skew_us = self.setup.header.max_skew_us;
        let named: Vec<u64> = match command {
            Command::Skew(id, skew_us) => {
                if skew_us.unsigned_abs() > max_skew_us {
                    return Err(format!("a skew of {skew_us}us is beyond the header's max-skew"));
                }
                vec![*id]
            }
            Command::Slow(id, _) => vec![*id],
            Command::Partition(groups) => groups.concat(),
            Command::Cut(links) => links.iter().flat_map(|&(a, b)| [a, b]).collect(),
            Command::Conf { change, to, .. } => {
                let spare = self.replicas() as u64 + 1;
                if let Some(i) = change.nodes().into_iter().find(|&i| i == 0 || i > spare) {
                    return Err(format!("no node {i} (1..={spare}, the last a spare)"));
                }
                to.iter().copied().collect()
            }
            _ => vec![],
        };
        if let Some(i) = named.iter().find(|&&i| i == 0 || i > started) {
            return Err(format!("no node {i} (1..={started})"));
        }
        if let Command::Cut(links) = command {
            if links.iter().any(|(a, b)| a == b) {
                return Err("a link joins two nodes".into());
            }
        }
        if let Command::Partition(groups) = command {
            let mut all: Vec<u64> = groups.concat();
            all.sort_unstable();
            if all != (1..=started).collect::<Vec<_>>() {
                return Err(format!("a partition names every node 1..={started} once"));
            }
        }
        Ok(())
    }

    /// Cut every link between two of `groups`, both ways.
    fn partition(&mut self, groups: &[Vec<u64>]) {
        let mut links = Vec::new();
        for (i, a) in groups.iter().enumerate() {
            for b in &groups[i + 1..] {
                links.extend(a.iter().flat_map(|&x| b.iter().map(move |&y| (x, y))));
            }
        }
        self.clog(&links);
        // No group holds a majority of the document tablet's voters in force.
        let voters = self.last_members.get(&TabletId::Docs).map(|m| m.voters.clone());
        let voters = voters.unwrap_or_else(|| (1..=self.replicas() as u64).collect());
        let held = |g: &Vec<u64>| g.iter().filter(|id| voters.contains(id)).count();
        if groups.iter().all(|g| held(g) * 2 <= voters.len()) {
            self.counts.no_majority_partitions += 1;
        }
        self.note(Command::Partition(groups.to_vec()).to_string());
    }

    fn clog(&mut self, links: &[(u64, u64)]) {
        let net = NetSim::current();
        for &(a, b) in links {
            let (na, nb) = (self.handles[a as usize - 1].id(), self.handles[b as usize - 1].id());
            net.clog_link(na, nb);
            net.clog_link(nb, na);
            self.cut.insert((a, b));
            self.cut.insert((b, a));
        }
        self.counts.partitions += 1;
    }

    pub(super) fn heal(&mut self) {
        let net = NetSim::current();
        for (a, b) in std::mem::take(&mut self.cut) {
            net.unclog_link(self.handles[a as usize - 1].id(), self.handles[b as usize - 1].id());
        }
        self.note("heal".into());
    }

    /// Propose `change` to `tablet`'s group at `to` (or the replica claiming to lead),
    /// starting the spare first if the change names it.
    fn change_membership(
        &mut self,
        tablet: &TabletId,
        change: ConfChange,
        to: Option<u64>,
    ) -> Option<CommandError> {
        for id in change.nodes() {
            self.named.insert((tablet.clone(), id));
            if id as usize == self.slots.len() + 1 {
                if let Err(e) = self.spawn(id) {
                    return Some(CommandError::Check(e));
                }
                self.note(format!("start node={id} (outside the groups)"));
            }
        }
        let Some(target) = to.or_else(|| self.leader_guess(tablet)) else {
            return Some(CommandError::NoLeader(tablet_name(tablet)));
        };
        let now_us = self.now_us(target);
        let result = {
            let mut slot = self.slot(target);
            let slot = &mut *slot;
            slot.node.replica_mut(tablet).and_then(|replica| {
                replica.propose_membership(&change.changes(), now_us)?;
                replica.process()
            })
        };
        match result {
            Ok(out) => {
                let out = out.into_iter().map(|e| (tablet.clone(), e));
                self.slot(target).outbox.extend(out);
                self.counts.membership_changes += 1;
                self.note(format!("conf node={target} {change} {}: proposed", tablet_name(tablet)));
                None
            }
            Err(e) if e.kind() == ErrorKind::Crashed => {
                self.slot(target).crashed = true;
                None
            }
            Err(e) => Some(CommandError::At(target, e)),
        }
    }

    /// Trace the configuration `tablet`'s newest leader reports, when it changed.
    pub(super) fn note_members(&mut self, tablet: &TabletId) {
        let Some(leader) = self.leader_guess(tablet) else { return };
        let Ok(members) = self.slot(leader).node.replica(tablet).map(|r| r.members()) else {
            return;
        };
        if self.last_members.get(tablet) == Some(&members) {
            return;
        }
        let show = |ids: &[u64]| ids.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
        let mut line = format!("members {} voters={}", tablet_name(tablet), show(&members.voters));
        if !members.outgoing.is_empty() {
            line += &format!(" outgoing={}", show(&members.outgoing));
        }
        line += &format!(" learners={}", show(&members.learners));
        if self.last_members.contains_key(tablet) {
            self.note(line); // the first configuration is the header's
        }
        self.last_members.insert(tablet.clone(), members);
    }

    fn status_line(&self, tablet: &TabletId, id: u64) -> String {
        let slot = self.slot(id);
        let name = tablet_name(tablet);
        let replica = match slot.node.replica(tablet) {
            Ok(replica) if slot.running() => replica,
            _ => return format!("node {id} {name}: down"),
        };
        let s = replica.status();
        let members = replica.members();
        let role = match () {
            _ if s.leader => "leader",
            _ if members.learners.contains(&id) => "learner",
            _ if members.voters.contains(&id) || members.outgoing.contains(&id) => "follower",
            _ => "outside", // not yet added, or removed
        };
        format!(
            "node {id} {name}: {role} term={} commit={} applied={} last={}",
            s.term,
            s.commit,
            s.applied,
            replica.last_op_id()
        )
    }

    fn leader_line(&self, tablet: &TabletId) -> String {
        let name = tablet_name(tablet);
        match self.leader_guess(tablet) {
            Some(id) => {
                let term = self.slot(id).node.replica(tablet).map_or(0, |r| r.status().term);
                format!("leader {name} node={id} term={term}")
            }
            None => format!("no leader {name}"),
        }
    }
}
