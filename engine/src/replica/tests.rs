//! Three peers over an in-process queue (the simulator uses madsim's network): elections,
//! replication, a leader change that overwrites an uncommitted tail, orphaned entries at
//! bootstrap, and which reads each replica may serve.

use super::*;
use crate::disk::{FaultConfig, Tear};
use crate::doc_write::{DocWrite, MarkerMode, WriteKind};
use crate::document::Document;
use crate::encoding::DocPath;
use crate::error::ErrorKind;
use crate::notation::Parser;
use crate::tablet::{Reply, Request, Schema};
use raft::eraftpb::MessageType;
use std::collections::{BTreeSet, VecDeque};
use std::path::PathBuf;

mod snapshots;

const TICK_US: u64 = 10_000;

struct Group {
    rocks: crate::db::Rocks,
    disks: Vec<SimDisk>,
    peers: Vec<Option<Replica>>,
    queue: VecDeque<Envelope>,
    /// Links (from, to) that drop everything.
    cut: BTreeSet<(u64, u64)>,
    /// The kinds of message lost on the way, every one sent.
    lost: Vec<MessageType>,
    /// Every envelope delivered: (from, to, kind, entries carried).
    delivered: Vec<(u64, u64, MessageType, usize)>,
    now_us: u64,
    plants: Plants,
    /// The replicas' log segment size.
    segment_bytes: usize,
}

fn options(id: u64, plants: Plants) -> ReplicaOptions {
    ReplicaOptions {
        id,
        voters: vec![1, 2, 3],
        election_tick: 10 + id as usize, // distinct timeouts: peer 1 campaigns first
        heartbeat_tick: 3,
        lease_us: 200_000,
        quiet_us: 300_000,
        segment_bytes: 1 << 20,
        plants,
    }
}

fn dir(id: u64) -> PathBuf {
    PathBuf::from(format!("/peer-tests/n{id}"))
}

fn path(text: &str) -> DocPath {
    let mut p = Parser::new(text, 1);
    let path = p.path().expect("a path");
    p.finish().expect("only a path");
    path
}

fn set(text: &str, value: i64) -> DocWrite {
    let kind = WriteKind::Set(Document::Primitive(crate::encoding::Primitive::Int64(value)));
    DocWrite { path: path(text), kind, ttl_us: None }
}

impl Group {
    fn new(plants: Plants) -> Group {
        let rocks = crate::db::Rocks::new(true, 8 << 20).expect("an in-memory env");
        let disks: Vec<SimDisk> = (0..3).map(|i| SimDisk::new(i, FaultConfig::default())).collect();
        let mut group = Group {
            rocks,
            disks,
            peers: vec![],
            queue: VecDeque::new(),
            cut: BTreeSet::new(),
            lost: vec![],
            delivered: vec![],
            now_us: 1_000_000,
            plants,
            segment_bytes: 1 << 20,
        };
        group.peers = vec![None, None, None];
        for id in 1..=3 {
            group.restart(id);
        }
        group
    }

    /// Three peers that elected a leader: the group and the leader.
    fn elected(plants: Plants) -> (Group, u64) {
        let mut group = Group::new(plants);
        group.run_ms(300);
        let leader = group.leader();
        (group, leader)
    }

    /// An elected group with one follower just cut and restarted (quiet for `quiet_us`
    /// from now): the group, the leader, the restarted follower and the other one.
    fn elected_then_restarted() -> (Group, u64, u64, u64) {
        let (mut g, leader) = Group::elected(Plants::NONE);
        let restarted = follower_of(leader);
        let other = (1..=3).find(|&id| id != leader && id != restarted).expect("another");
        g.crash(restarted);
        g.restart(restarted);
        (g, leader, restarted, other)
    }

    /// Three peers that elected a leader whose appends were all lost: the group, the
    /// leader, and a follower that voted for it but holds no entry.
    fn voted_without_entries(plants: Plants) -> (Group, u64, u64) {
        let mut g = Group::new(plants);
        g.lost = vec![MessageType::MsgAppend];
        g.run_ms(300);
        let leader = g.leader();
        let voter = (1..=3).find(|&id| id != leader && g.peer(id).raw.raft.vote == leader);
        let voter = voter.expect("a follower voted");
        assert_eq!(g.peer(voter).raw.raft.raft_log.last_index(), 0, "no entry");
        (g, leader, voter)
    }

    /// A fourth replica, outside the group until a membership change adds it: its id.
    fn add_spare(&mut self) -> u64 {
        self.disks.push(SimDisk::new(3, FaultConfig::default()));
        self.peers.push(None);
        self.restart(4);
        4
    }

    fn change_membership(&mut self, leader: u64, changes: &[Membership]) {
        let now = self.now_us;
        self.peer(leader).propose_membership(changes, now).expect("the leader proposes");
        let out = self.peer(leader).process().expect("the leader persists");
        self.queue.extend(out);
        self.deliver();
    }

    fn peer(&mut self, id: u64) -> &mut Replica {
        self.peers[id as usize - 1].as_mut().expect("the peer is up")
    }

    /// Deliver queued envelopes (and what they cause) until none is left; a conversation
    /// that never ends (100,000 envelopes) is a livelock, and fails.
    fn deliver(&mut self) {
        let mut count = 0;
        while let Some(envelope) = self.queue.pop_front() {
            count += 1;
            assert!(count <= 100_000, "a livelock: {:?} still in flight", envelope.msg);
            let (from, to) = (envelope.from, envelope.to);
            let lost = self.lost.contains(&envelope.msg.get_msg_type());
            if self.cut.contains(&(from, to)) || lost {
                continue;
            }
            let kind = envelope.msg.get_msg_type();
            self.delivered.push((from, to, kind, envelope.msg.entries.len()));
            let now = self.now_us;
            let Some(peer) = self.peers[to as usize - 1].as_mut() else { continue };
            match peer.receive(envelope, now) {
                Ok(out) => self.queue.extend(out),
                // An armed power cut fired: the power goes.
                Err(e) if e.kind() == ErrorKind::Crashed => self.crash(to),
                Err(e) => panic!("a healthy peer takes messages: {e}"),
            }
        }
    }

    /// Let `ms` of time pass, ticking every peer every 10 ms.
    fn run_ms(&mut self, ms: u64) {
        for _ in 0..ms * 1000 / TICK_US {
            self.now_us += TICK_US;
            let now = self.now_us;
            for peer in self.peers.iter_mut().flatten() {
                let out = peer.tick(now).expect("a healthy peer ticks");
                self.queue.extend(out);
            }
            self.deliver();
        }
    }

    fn leader(&self) -> u64 {
        let leaders: Vec<u64> = self
            .peers
            .iter()
            .flatten()
            .filter(|p| p.status().leader && !self.isolated(p.id()))
            .map(|p| p.id())
            .collect();
        assert_eq!(leaders.len(), 1, "one connected leader: {leaders:?}");
        leaders[0]
    }

    fn isolated(&self, id: u64) -> bool {
        (1..=3).filter(|&o| o != id).all(|o| self.cut.contains(&(id, o)))
    }

    fn write(&mut self, leader: u64, writes: &[DocWrite]) -> OpId {
        let now = self.now_us;
        let (op_id, _) = propose(self.peer(leader), writes, now).expect("the leader proposes");
        let out = self.peer(leader).process().expect("the leader persists");
        self.queue.extend(out);
        self.deliver();
        op_id
    }

    fn isolate(&mut self, id: u64) {
        for other in (1..=3).filter(|&o| o != id) {
            self.cut.insert((id, other));
            self.cut.insert((other, id));
        }
    }

    fn crash(&mut self, id: u64) {
        self.peers[id as usize - 1] = None;
        self.disks[id as usize - 1].crash(Tear::None);
    }

    /// Open (or reopen) peer `id` from its disk.
    fn restart(&mut self, id: u64) -> RestartReport {
        let disk = &self.disks[id as usize - 1];
        let options =
            ReplicaOptions { segment_bytes: self.segment_bytes, ..options(id, self.plants) };
        let (rocks, plants) = (&self.rocks, self.plants);
        let schema = Schema::Docs { default_ttl_ms: None };
        let tablet =
            crate::tablet::Tablet::open(&dir(id), rocks, plants, Default::default(), schema);
        let opened =
            Replica::open(tablet.expect("the tablet opens"), disk, "log", options, self.now_us);
        let (peer, report) = opened.expect("the peer opens");
        self.peers[id as usize - 1] = Some(peer);
        report
    }

    fn get(&mut self, id: u64, text: &str, read_ht: HybridTime) -> Result<Option<Document>> {
        let now = self.now_us;
        let request = Request::Get { path: path(text) };
        self.peer(id).read(&request, read_ht, now).map(|reply| match reply {
            Reply::Document(doc) => doc,
            other => panic!("a get answers a document: {other:?}"),
        })
    }

    /// A read at peer `id`'s clock's "now".
    fn get_now(&mut self, id: u64, text: &str) -> Result<Option<Document>> {
        let now = self.now_us;
        let read_ht = self.peer(id).now_ht(now);
        self.get(id, text, read_ht)
    }

    fn dumps_agree(&mut self) -> bool {
        let dumps: Vec<Vec<RawEntry>> =
            (1..=3).map(|id| self.peer(id).dump().expect("a dump")).collect();
        dumps.windows(2).all(|w| w[0] == w[1])
    }
}

/// A `kind` message of `term` from `from` to `to`, sent at `ht` (which is its lease too),
/// with no echo and no safe time.
fn envelope(kind: MessageType, (from, to): (u64, u64), term: u64, ht: HybridTime) -> Envelope {
    let mut msg = Message::default();
    msg.set_msg_type(kind);
    (msg.from, msg.to, msg.term) = (from, to, term);
    Envelope { from, to, ht, ht_lease: ht, echo: None, safe: None, msg }
}

/// Propose `writes` (optional markers) at `peer`, at a time from its clock: the entry and
/// its time.
fn propose(peer: &mut Replica, writes: &[DocWrite], now: u64) -> Result<(OpId, HybridTime)> {
    let request = Request::Write { writes: writes.to_vec(), markers: MarkerMode::Optional };
    let proposed = peer.propose(&request, None, now)?;
    Ok((proposed.op_id.expect("a write proposes an entry"), proposed.ht))
}

/// A follower of `leader` (the lowest other id).
fn follower_of(leader: u64) -> u64 {
    (1..=3).find(|&id| id != leader).expect("a follower")
}

fn int(v: i64) -> Option<Document> {
    Some(Document::Primitive(crate::encoding::Primitive::Int64(v)))
}

#[test]
fn three_peers_elect_replicate_and_agree() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let op = g.write(leader, &[set("doc(1i32;).\"a\"", 7)]);
    g.run_ms(50);
    for id in 1..=3 {
        assert!(g.peer(id).is_applied(op), "peer {id} applied {op}");
    }
    assert!(g.dumps_agree());
    let follower = follower_of(leader);
    let safe = g.peer(follower).safe_time();
    assert_eq!(g.get(follower, "doc(1i32;).\"a\"", safe).expect("at its safe time"), int(7));
    let above = HybridTime::from_raw(safe.raw() + (1 << 20));
    let refused = g.get(follower, "doc(1i32;).\"a\"", above).expect_err("above its safe time");
    assert_eq!(refused.kind(), ErrorKind::SafeTimeBehind, "{refused}");
    // The leader's safe time moves on with its clock, past its last write's (a leader
    // was once stuck there: it kept a follower's safe time).
    g.run_ms(50);
    let leader_safe = g.peer(leader).safe_time();
    assert!(leader_safe > g.peer(leader).applied_ht, "{leader_safe}");
    assert_eq!(g.get(leader, "doc(1i32;).\"a\"", leader_safe).expect("served"), int(7));
    assert_eq!(g.get_now(leader, "doc(1i32;).\"a\"").expect("a leased leader read"), int(7));
}

/// A write or a membership change sent to a follower is refused naming the leader, or
/// none while no leader is known.
#[test]
fn a_write_to_a_follower_names_the_leader() {
    let refusals = |g: &mut Group, id: u64| {
        let now = g.now_us;
        let write = propose(g.peer(id), &[set("doc(1i32;).\"a\"", 1)], now);
        let change = g.peer(id).propose_membership(&[Membership::AddLearner(4)], now);
        [write.map(|_| ()).expect_err("a follower"), change.expect_err("a follower")]
    };
    let mut g = Group::new(Plants::NONE);
    assert_eq!(refusals(&mut g, 1), [(), ()].map(|_| Error::NotLeader { leader: None }));
    g.run_ms(300);
    let leader = g.leader();
    let follower = follower_of(leader);
    let named = Error::NotLeader { leader: Some(leader) };
    assert_eq!(refusals(&mut g, follower), [named.clone(), named]);
}

#[test]
fn a_new_leader_overwrites_the_old_leaders_uncommitted_tail() {
    let (mut g, old) = Group::elected(Plants::NONE);
    g.write(old, &[set("doc(1i32;).\"a\"", 1)]);
    g.run_ms(50);
    g.isolate(old);
    let lost = g.write(old, &[set("doc(1i32;).\"a\"", 2)]); // appended on the old leader only
    g.run_ms(500);
    let new = g.leader();
    assert_ne!(new, old);
    let kept = g.write(new, &[set("doc(1i32;).\"a\"", 3)]);
    // The new leader's empty entry took the lost entry's index.
    assert_eq!((kept.index, kept.term > lost.term), (lost.index + 1, true), "{lost} {kept}");
    g.cut.clear();
    g.run_ms(500);
    assert!(!g.peer(old).is_applied(lost), "the overwritten entry never applies");
    assert!(g.peer(old).is_applied(kept));
    assert!(g.dumps_agree());
    assert_eq!(g.get_now(new, "doc(1i32;).\"a\"").expect("a leader read"), int(3));
}

#[test]
fn a_partitioned_leader_refuses_reads_once_its_lease_runs_out() {
    for plants in [Plants::NONE, Plants::of(Some(Plant::ReadsPastLease))] {
        let (mut g, old) = Group::elected(plants);
        g.write(old, &[set("doc(1i32;).\"a\"", 1)]);
        g.isolate(old);
        g.run_ms(60); // check_quorum has not deposed it yet
        let new_write_seen = |g: &mut Group| g.get_now(old, "doc(1i32;).\"a\"");
        let early = new_write_seen(&mut g).expect("inside its lease");
        assert_eq!(early, int(1));
        // Past the lease (200 ms of its clock), though it may still think it leads.
        g.now_us += 250_000;
        let late = new_write_seen(&mut g);
        if plants == Plants::NONE {
            let e = late.expect_err("past its lease");
            assert_eq!(e.kind(), ErrorKind::LeaseExpired, "{e}");
        } else {
            assert_eq!(late.expect("the planted bug serves it"), int(1));
        }
    }
}

/// The lease's boundary (a rule of docsim's, `Replica::check_servable`): a read at exactly
/// the lease is inside it, so behind a write still pending it waits for the safe time;
/// only a read above the lease is refused as past it.
#[test]
fn a_read_exactly_at_the_lease_is_inside_it() {
    let (mut g, old) = Group::elected(Plants::NONE);
    g.write(old, &[set("doc(1i32;).\"a\"", 1)]);
    g.isolate(old);
    g.write(old, &[set("doc(1i32;).\"a\"", 2)]); // never commits: the safe time stops below
    g.run_ms(60);
    g.now_us += 250_000;
    let lease_ht = match g.get_now(old, "doc(1i32;).\"a\"") {
        Err(Error::LeaseExpired { lease_ht, .. }) => lease_ht,
        other => panic!("past its lease: {other:?}"),
    };
    let at = g.get(old, "doc(1i32;).\"a\"", lease_ht).expect_err("above the safe time");
    assert_eq!(at.kind(), ErrorKind::SafeTimeBehind, "{at}");
}

#[test]
fn bootstrap_hands_orphaned_entries_to_raft_and_a_new_leader_overwrites_them() {
    for plants in [Plants::NONE, Plants::of(Some(Plant::OrphansCommitted))] {
        let (mut g, old) = Group::elected(plants);
        g.write(old, &[set("doc(1i32;).\"a\"", 1)]);
        g.run_ms(50);
        g.isolate(old);
        let orphan = g.write(old, &[set("doc(1i32;).\"a\"", 2)]); // durable on the old leader only
        g.crash(old);
        let report = g.restart(old);
        if plants == Plants::NONE {
            assert_eq!(report.uncommitted, 1, "{report}");
        } else {
            assert_eq!(report.uncommitted, 0, "{report}");
        }
        g.run_ms(500);
        let new = g.leader();
        assert_ne!(new, old);
        g.write(new, &[set("doc(1i32;).\"b\"", 3)]);
        g.cut.clear();
        g.run_ms(500);
        assert!(!g.peer(new).is_applied(orphan));
        assert_eq!(g.dumps_agree(), plants == Plants::NONE, "{plants:?}");
    }
}

#[test]
fn a_restarted_peer_replays_committed_entries_above_its_frontier() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let follower = follower_of(leader);
    g.write(leader, &[set("doc(1i32;).\"a\"", 1)]);
    g.run_ms(50);
    g.peer(follower).flush().expect("a flush");
    g.write(leader, &[set("doc(1i32;).\"b\"", 2)]);
    g.write(leader, &[set("doc(1i32;).\"c\"", 3)]);
    g.run_ms(50);
    g.crash(follower);
    let report = g.restart(follower);
    // b's commit index was synced with c's entry; c's own commit came alone, unsynced.
    assert_eq!((report.replayed, report.uncommitted), (1, 1), "{report}");
    g.run_ms(400);
    assert!(g.dumps_agree());
}

/// Every replica keeps its term and its vote across a power cut: a vote given in a term
/// is never given again in it, which Raft's one-leader-per-term rests on.
#[test]
fn a_restarted_peer_keeps_its_term_and_vote() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    g.write(leader, &[set("doc(1i32;).\"a\"", 1)]);
    g.run_ms(50);
    let vote_of = |g: &mut Group, id: u64| (g.peer(id).raw.raft.term, g.peer(id).raw.raft.vote);
    let term = g.peer(leader).raw.raft.term;
    for id in 1..=3 {
        assert_eq!(vote_of(&mut g, id), (term, leader), "replica {id} voted for the leader");
        g.crash(id);
        g.restart(id);
        assert_eq!(vote_of(&mut g, id), (term, leader), "replica {id}, restarted");
    }
}

/// A vote is durable before its answer leaves, even when no entry comes with it: a
/// follower that only voted (every append lost) and loses power keeps its term and vote.
/// The planted `vote-not-synced` syncs them only with entries, and the vote is lost.
#[test]
fn a_vote_alone_survives_a_power_cut() {
    for plants in [Plants::NONE, Plants::of(Some(Plant::VoteNotSynced))] {
        let (mut g, leader, voter) = Group::voted_without_entries(plants);
        let voted = (g.peer(voter).raw.raft.term, leader);
        g.crash(voter);
        g.restart(voter);
        let kept = (g.peer(voter).raw.raft.term, g.peer(voter).raw.raft.vote);
        if plants == Plants::NONE {
            assert_eq!(kept, voted);
        } else {
            assert_ne!(kept, voted, "the planted bug loses the vote");
        }
    }
}

/// A restarted replica neither votes nor campaigns for `quiet_us` (docsim's rule: any lease
/// it echoed before the power cut must pass every clock first), but takes its leader's
/// entries meanwhile.
#[test]
fn a_restarted_peer_takes_entries_but_gives_no_vote_while_quiet() {
    let (mut g, leader, quiet, other) = Group::elected_then_restarted(); // quiet for 300 ms
    let op = g.write(leader, &[set("doc(1i32;).\"a\"", 1)]);
    g.run_ms(50);
    assert!(g.peer(quiet).is_applied(op), "entries are taken while quiet");
    // Restarted again with the leader gone, it knows of no leader (Raft's own check would
    // refuse a vote while one is current): only the quiet rule keeps its vote back.
    g.crash(quiet);
    g.isolate(leader);
    g.restart(quiet);
    g.run_ms(200); // the other follower campaigns (110 to 130 ms timeouts), in vain
    let leads = |g: &mut Group| [quiet, other].map(|id| g.peer(id).status().leader);
    assert_eq!(leads(&mut g), [false, false], "no vote while quiet");
    g.run_ms(300);
    assert_eq!(leads(&mut g).iter().filter(|&&l| l).count(), 1, "a vote once quiet ends");
}

/// Only a follower takes a lease to echo and a safe time, and only from its leader in the
/// leader's term: a message from the other follower, or one to the leader, carrying both,
/// changes neither.
#[test]
fn echoes_and_safe_times_come_only_from_the_leader_in_its_term() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    g.run_ms(100); // heartbeats: the followers hold echoes and safe times
    let follower = follower_of(leader);
    let other = (1..=3).find(|&id| id != leader && id != follower).expect("another");
    let term = g.peer(leader).raw.raft.term;
    let far = HybridTime::from_micros(g.now_us + 3_600_000_000);
    let from_peer = |from: u64, to: u64| Envelope {
        safe: Some((1, far)),
        ..envelope(MessageType::MsgHeartbeatResponse, (from, to), term, far)
    };
    let held = |p: &Replica| (p.echo, p.propagated);
    for (from, to) in [(other, follower), (follower, leader)] {
        let before = held(g.peer(to));
        let now = g.now_us;
        g.peer(to).receive(from_peer(from, to), now).expect("a healthy peer");
        assert_eq!(held(g.peer(to)), before, "from {from} to {to}");
    }
}

/// A follower echoes a lease only to the leader that granted it, in that leader's term:
/// once it stops hearing from its leader and campaigns, what it sends the other follower
/// carries no echo.
#[test]
fn an_echo_goes_only_to_the_leader_that_granted_it() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    g.run_ms(100); // heartbeats: the followers hold echoes
    let follower = follower_of(leader);
    let mut now = g.now_us;
    let mut to_others = 0;
    for _ in 0..40 {
        // The follower alone ticks, and what it sends is looked at, not delivered.
        now += TICK_US;
        for envelope in g.peer(follower).tick(now).expect("a healthy peer ticks") {
            if envelope.to != leader {
                to_others += 1;
                assert_eq!(envelope.echo, None, "{:?}", envelope.msg.get_msg_type());
            }
        }
    }
    assert!(to_others > 0, "the follower campaigned");
}

/// A follower echoes the newest lease its leader granted it: a heartbeat that arrives
/// late, with an older lease, does not lower the echo.
#[test]
fn a_late_heartbeat_does_not_lower_the_echo() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let follower = follower_of(leader);
    let mut now = g.now_us;
    let mut heartbeats = vec![];
    while heartbeats.len() < 2 {
        // The leader alone ticks; its heartbeats to the follower are held back.
        now += TICK_US;
        let out = g.peer(leader).tick(now).expect("a healthy peer ticks");
        heartbeats.extend(
            out.into_iter()
                .filter(|e| e.to == follower && e.msg.get_msg_type() == MessageType::MsgHeartbeat),
        );
    }
    let (older, newer) = (heartbeats.remove(0), heartbeats.remove(0));
    assert!(older.ht_lease < newer.ht_lease, "leases grow");
    let newest = newer.ht_lease;
    for envelope in [newer, older] {
        g.peer(follower).receive(envelope, now).expect("taken");
    }
    assert_eq!(g.peer(follower).echo.map(|(.., lease)| lease), Some(newest));
}

/// A replica that voted but holds no entry ran all the same: restarted, it is quiet.
#[test]
fn a_replica_that_only_voted_is_quiet_after_a_restart() {
    let (mut g, _, voter) = Group::voted_without_entries(Plants::NONE);
    g.crash(voter);
    g.restart(voter);
    let quiet_until_us = g.now_us + options(voter, Plants::NONE).quiet_us;
    assert_eq!(g.peer(voter).quiet_until_us, quiet_until_us);
}

/// A replica whose disk holds an entry but no term ran all the same (a new replica's
/// first append, the hard state written after it torn away): restarted, it is quiet.
#[test]
fn a_replica_with_an_entry_but_no_term_is_quiet_after_a_restart() {
    let mut g = Group::new(Plants::NONE);
    g.crash(3);
    let (mut log, _) = Log::open(&g.disks[2], "log", g.segment_bytes, 0, Plants::NONE)
        .expect("an empty log opens");
    log.append(&[LogEntry { op_id: OpId::new(1, 1), data: vec![] }], None).expect("appended");
    log.sync().expect("synced");
    drop(log);
    g.restart(3);
    let quiet_until_us = g.now_us + options(3, Plants::NONE).quiet_us;
    assert_eq!(g.peer(3).quiet_until_us, quiet_until_us);
}

/// The quiet period ends exactly at `quiet_until_us`: a vote request that arrives a
/// microsecond before gets no answer; one that arrives then is answered (and granted, as
/// the restarted replica knows of no leader and the candidate's log is as new as its own).
#[test]
fn the_quiet_period_ends_exactly_at_its_deadline() {
    let (mut g, _, quiet, candidate) = Group::elected_then_restarted();
    let quiet_until_us = g.peer(quiet).quiet_until_us;
    let ht = HybridTime::from_micros(g.now_us);
    let raft = &g.peer(quiet).raw.raft;
    let mut request = envelope(MessageType::MsgRequestVote, (candidate, quiet), raft.term + 1, ht);
    let msg = &mut request.msg;
    (msg.log_term, msg.index) = (raft.raft_log.last_term(), raft.raft_log.last_index());
    let answers = |g: &mut Group, now_us: u64| -> Vec<bool> {
        let out = g.peer(quiet).receive(request.clone(), now_us).expect("a healthy peer");
        let votes =
            out.iter().filter(|e| e.msg.get_msg_type() == MessageType::MsgRequestVoteResponse);
        votes.map(|e| !e.msg.reject).collect()
    };
    assert_eq!(answers(&mut g, quiet_until_us - 1), Vec::<bool>::new(), "quiet: no answer");
    assert_eq!(answers(&mut g, quiet_until_us), [true], "the vote, granted");
}

/// A follower whose power goes once it knows an entry committed, before it applies it
/// (and before it persists the commit index): the entry is in its log, above its durable
/// commit index, so bootstrap hands it to Raft unapplied and the leader commits it again.
#[test]
fn a_power_cut_after_commit_leaves_the_entry_to_raft_on_restart() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let follower = follower_of(leader);
    g.peer(follower).arm_crash(Some(CrashPoint::AfterCommit));
    let op_id = g.write(leader, &[set("doc(1i32;).\"a\"", 1)]);
    g.run_ms(50);
    assert!(g.peers[follower as usize - 1].is_none(), "the cut fired");
    let report = g.restart(follower);
    assert_eq!(report.uncommitted, 1, "{report}");
    assert_eq!(g.peer(follower).last_op_id(), op_id, "the entry is in its log");
    assert!(g.peer(follower).status().applied < op_id.index);
    g.run_ms(400);
    assert!(g.peer(follower).is_applied(op_id));
    assert!(g.dumps_agree());
}

fn members(voters: &[u64], learners: &[u64]) -> Members {
    Members { voters: voters.to_vec(), outgoing: vec![], learners: learners.to_vec() }
}

/// A replica joins as a learner and catches up from the leader's log, then replaces a
/// voter in one joint change that raft-rs leaves on its own; every replica, restarted or
/// not, ends with the same configuration and the same data.
#[test]
fn a_learner_catches_up_then_replaces_a_voter_through_joint_consensus() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    g.write(leader, &[set("doc(1i32;).\"a\"", 1)]);
    let spare = g.add_spare();
    assert_eq!(g.peer(spare).members(), members(&[1, 2, 3], &[]), "it starts from the first");
    g.change_membership(leader, &[Membership::AddLearner(spare)]);
    g.run_ms(100);
    let applied = g.peer(leader).status().applied;
    for id in [1, 2, 3, spare] {
        assert_eq!(g.peer(id).members(), members(&[1, 2, 3], &[spare]), "replica {id}");
    }
    assert_eq!(g.peer(spare).status().applied, applied, "the learner caught up");
    let gone = follower_of(leader);
    g.change_membership(leader, &[Membership::AddVoter(spare), Membership::Remove(gone)]);
    g.run_ms(200);
    let mut voters: Vec<u64> = [1, 2, 3, spare].into_iter().filter(|&id| id != gone).collect();
    voters.sort_unstable();
    assert_eq!(g.peer(leader).members(), members(&voters, &[]), "joint, then left");
    g.write(leader, &[set("doc(1i32;).\"b\"", 2)]);
    g.run_ms(50);
    g.crash(spare);
    g.restart(spare);
    assert_eq!(g.peer(spare).members(), members(&voters, &[]), "bootstrap re-applies changes");
    g.run_ms(400);
    let dump = g.peer(leader).dump().expect("a dump");
    for &id in &voters {
        assert_eq!(g.peer(id).members(), members(&voters, &[]), "replica {id}");
        assert_eq!(g.peer(id).dump().expect("a dump"), dump, "replica {id}");
    }
}

/// A leader cut off from the other voters but not from a learner: the learner's echoes
/// must not extend its lease (the planted bug counts them, and serves a read past it).
#[test]
fn a_learners_echoes_do_not_make_a_lease() {
    for plants in [Plants::NONE, Plants::of(Some(Plant::NonVoterCounted))] {
        let (mut g, old) = Group::elected(plants);
        g.write(old, &[set("doc(1i32;).\"a\"", 1)]);
        let spare = g.add_spare();
        g.change_membership(old, &[Membership::AddLearner(spare)]);
        g.run_ms(100);
        g.isolate(old); // from the voters only: the learner still hears it
        g.run_ms(60);
        g.now_us += 250_000; // past every voter's echo of its lease
        g.run_ms(30); // a heartbeat to the learner, echoed
        let late = g.get_now(old, "doc(1i32;).\"a\"");
        if plants == Plants::NONE {
            let e = late.expect_err("past the voters' lease");
            assert_eq!(e.kind(), ErrorKind::LeaseExpired, "{e}");
        } else {
            assert_eq!(late.expect("the planted bug serves it"), int(1));
        }
    }
}

/// A leader refuses a change that removes or demotes itself, or names a replica twice;
/// nothing is proposed.
#[test]
fn a_leader_refuses_membership_changes_it_cannot_survive() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let last = g.peer(leader).status().last_index;
    let others: Vec<u64> = (1..=3).filter(|&id| id != leader).collect();
    let refused = [
        vec![Membership::Remove(leader)],
        vec![Membership::AddVoter(4), Membership::Remove(4)],
        vec![Membership::AddLearner(leader), Membership::Remove(others[0])],
    ];
    for changes in refused {
        let now = g.now_us;
        let e = g.peer(leader).propose_membership(&changes, now).expect_err("refused");
        assert_eq!(e.kind(), ErrorKind::InvalidRequest, "{changes:?}: {e}");
    }
    assert_eq!(g.peer(leader).status().last_index, last, "nothing was proposed");
}

/// A replica whose durable commit index covers the joint configuration's entry but not
/// the entry that leaves it boots inside the joint configuration (both halves' voters),
/// and leaves it with the group once the leader's commit reaches it again.
#[test]
fn a_replica_restarted_inside_a_joint_configuration_leaves_it_with_the_group() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let spare = g.add_spare();
    g.change_membership(leader, &[Membership::AddLearner(spare)]);
    g.run_ms(100);
    let followers: Vec<u64> = (1..=3).filter(|&id| id != leader).collect();
    let (gone, kept) = (followers[0], followers[1]);
    g.change_membership(leader, &[Membership::AddVoter(spare), Membership::Remove(gone)]);
    g.run_ms(100);
    let mut voters = vec![leader, kept, spare];
    voters.sort_unstable();
    assert_eq!(g.peer(leader).members(), members(&voters, &[]));
    // The leave entry's commit reached `kept` alone, unsynced: the power cut loses it.
    g.crash(kept);
    let report = g.restart(kept);
    let booted = g.peer(kept).members();
    assert_eq!(booted.voters, voters, "{report}");
    assert_eq!(booted.outgoing, vec![1, 2, 3], "boots inside the joint configuration");
    assert_eq!(report.uncommitted, 1, "the leave entry is handed to Raft: {report}");
    g.run_ms(300);
    assert_eq!(g.peer(kept).members(), members(&voters, &[]), "left with the group");
}

/// A follower's safe time is its last applied write's, or the leader's propagated safe
/// time once the follower has applied up to the leader's applied index sent with it (an
/// index it reached exactly counts).
#[test]
fn a_follower_takes_the_propagated_safe_time_once_applied_that_far() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    g.write(leader, &[set("doc(1i32;).\"a\"", 1)]);
    g.run_ms(50);
    let follower = follower_of(leader);
    let peer = g.peer(follower);
    let (applied, applied_ht) = (peer.applied, peer.applied_ht);
    let far = HybridTime::from_micros(applied_ht.physical_us() + 1_000_000);
    let safe_with = |peer: &mut Replica, index: u64| {
        peer.propagated = Some((index, far));
        peer.safe_time()
    };
    assert_eq!(safe_with(peer, applied + 1), applied_ht, "not applied that far");
    assert_eq!(safe_with(peer, applied), far, "applied exactly that far");
    assert_eq!(safe_with(peer, applied - 1), far);
    let near = HybridTime::from_raw(applied_ht.raw() - 1);
    peer.propagated = Some((applied, near));
    assert_eq!(peer.safe_time(), applied_ht, "never below its own applied write's");
}

/// A peer's clock moves past every hybrid time it sees in an envelope (YB's
/// `propagated_hybrid_time`); the planted `ht-not-propagated` forgets it.
#[test]
fn a_peers_clock_moves_past_the_time_an_envelope_carries() {
    for plants in [Plants::NONE, Plants::of(Some(Plant::HtNotPropagated))] {
        let (mut g, leader) = Group::elected(plants);
        let follower = follower_of(leader);
        let term = g.peer(leader).raw.raft.term;
        let far = HybridTime::from_micros(g.now_us + 3_600_000_000);
        let now = g.now_us;
        let heartbeat = envelope(MessageType::MsgHeartbeat, (leader, follower), term, far);
        g.peer(follower).receive(heartbeat, now).expect("a healthy peer");
        let past = g.peer(follower).now_ht(now) > far;
        assert_eq!(past, plants == Plants::NONE, "{plants:?}");
    }
}

/// A leader serves no read at or above the time of an entry it appended but has not
/// applied: its bound is just below that write's time until the entry applies.
#[test]
fn a_leader_reads_below_its_first_unapplied_write_only() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let now = g.now_us;
    let (op, ht) = propose(g.peer(leader), &[set("doc(1i32;).\"a\"", 1)], now).expect("proposed");
    let _held_back = g.peer(leader).process().expect("appended"); // never delivered
    let below = HybridTime::from_raw(ht.raw() - 1);
    let refused = g.get(leader, "doc(1i32;).\"a\"", ht).expect_err("not applied yet");
    let behind = Error::SafeTimeBehind { read_ht: Some(ht), safe_ht: Some(below) };
    assert_eq!(refused, behind);
    assert_eq!(g.get(leader, "doc(1i32;).\"a\"", below).expect("below it"), None);
    g.run_ms(50); // the heartbeats carry it on: it commits and applies
    assert!(g.peer(leader).is_applied(op));
    assert_eq!(g.get(leader, "doc(1i32;).\"a\"", ht).expect("applied"), int(1));
}

/// A write that reads before it writes waits (`try_again`) for the leader's write in
/// flight to its document, also once that write is in the leader's log: it stays in
/// flight until it applies (seen red when appending the leader's own entry ended it).
#[test]
fn a_write_in_the_leaders_log_stays_in_flight_until_it_applies() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let now = g.now_us;
    let (op, _) = propose(g.peer(leader), &[set("doc(1i32;).\"a\"", 1)], now).expect("proposed");
    let _held_back = g.peer(leader).process().expect("appended"); // never delivered
    let reads = |g: &mut Group| {
        let request = Request::Write {
            writes: vec![set("doc(1i32;).\"a\".\"b\"", 2)],
            markers: MarkerMode::Required,
        };
        g.peer(leader).propose(&request, None, now).map(|p| p.op_id)
    };
    let waits = reads(&mut g).expect_err("its document has a write in flight");
    assert_eq!(waits.kind(), ErrorKind::TryAgain, "{waits}");
    g.run_ms(50);
    assert!(g.peer(leader).is_applied(op));
    let conflict = reads(&mut g).expect_err("evaluated against the applied write");
    assert_eq!(conflict.kind(), ErrorKind::TypeConflict, "{conflict}");
}

/// A compaction's cutoff ahead of the replica's clock (drawn from a physical clock a skew
/// then moved back) moves the clock past it: the next write, which reads first, is not
/// refused as too old (seen red before `Replica::past_cutoff`: seed 100293, 3 replicas).
#[test]
fn a_write_after_a_compaction_ahead_of_the_clock_is_above_its_cutoff() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let ahead = HybridTime::from_micros(g.now_us + 100_000); // inside the lease
    g.peer(leader).compact(ahead, crate::gc::CompactionKind::Full, None).expect("compacted");
    let request = Request::Write {
        writes: vec![set("doc(1i32;).\"a\".\"b\"", 2)],
        markers: MarkerMode::Required,
    };
    let now = g.now_us;
    let proposed = g.peer(leader).propose(&request, None, now).expect("above the cutoff");
    assert!(proposed.ht > ahead, "{} after the cutoff {ahead}", proposed.ht);
}

/// The leader heartbeats every `heartbeat_tick` ticks (3 here; raft-rs's default is 2).
#[test]
fn a_leader_heartbeats_every_heartbeat_tick() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let follower = follower_of(leader);
    g.delivered.clear();
    g.run_ms(300); // 30 ticks
    let heartbeats = g
        .delivered
        .iter()
        .filter(|&&(from, to, kind, _)| {
            (from, to, kind) == (leader, follower, MessageType::MsgHeartbeat)
        })
        .count();
    assert_eq!(heartbeats, 10);
}

/// A follower cut off campaigns without raising its term (pre-vote): back, it does not
/// depose the leader, whose term stays.
#[test]
fn a_returning_follower_does_not_depose_the_leader() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let follower = follower_of(leader);
    let term = g.peer(leader).status().term;
    g.isolate(follower);
    g.run_ms(1_000); // many election timeouts
    assert_eq!(g.peer(follower).status().term, term, "no term raised while cut off");
    g.cut.clear();
    g.run_ms(300);
    assert_eq!(g.leader(), leader);
    assert_eq!(g.peer(leader).status().term, term);
}

/// A leader cut off from every follower steps down within an election timeout
/// (check-quorum), though no one told it.
#[test]
fn a_leader_cut_off_steps_down() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    g.isolate(leader);
    g.run_ms(500);
    assert!(!g.peer(leader).status().leader, "still leads, cut off for 500 ms");
}

/// A follower catching up takes many entries per append (up to 1 MiB of them), not one
/// round trip per entry.
#[test]
fn a_follower_catches_up_many_entries_per_append() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let follower = follower_of(leader);
    g.crash(follower);
    for i in 0..20 {
        g.write(leader, &[set("doc(1i32;).\"a\"", i)]);
    }
    g.restart(follower);
    g.delivered.clear();
    g.run_ms(300);
    let most = g
        .delivered
        .iter()
        .filter(|&&(from, to, kind, _)| {
            (from, to, kind) == (leader, follower, MessageType::MsgAppend)
        })
        .map(|&(.., entries)| entries)
        .max();
    assert!(most >= Some(20), "the most entries one append carried: {most:?}");
}

/// Each write costs every replica one log sync (the simulator holds a slow disk's output
/// back by the count); heartbeats cost none.
#[test]
fn a_write_costs_each_replica_one_sync() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let syncs = |g: &mut Group| (1..=3).map(|id| g.peer(id).syncs()).collect::<Vec<_>>();
    let before = syncs(&mut g);
    g.write(leader, &[set("doc(1i32;).\"a\"", 1)]);
    g.run_ms(100);
    let after = syncs(&mut g);
    let each: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    assert_eq!(each, [1, 1, 1], "{before:?} then {after:?}");
}

/// A power cut armed for after an append fires at the first entries the replica
/// appends, not at a ready that carries none (a heartbeat's).
#[test]
fn a_power_cut_after_append_waits_for_entries() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let follower = follower_of(leader);
    g.peer(follower).arm_crash(Some(CrashPoint::AfterAppend));
    g.run_ms(100);
    assert!(g.peers[follower as usize - 1].is_some(), "heartbeats append nothing");
    g.write(leader, &[set("doc(1i32;).\"a\"", 1)]);
    assert!(g.peers[follower as usize - 1].is_none(), "the cut fired at the entry");
}

/// A follower's clock moves past every entry it appends, even one carried by an
/// envelope stamped earlier than the entry.
#[test]
fn a_followers_clock_moves_past_the_entries_it_appends() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let follower = follower_of(leader);
    // Ahead of the follower's clock, within the leader's lease (200 ms here).
    let (now, ahead) = (g.now_us, g.now_us + 50_000);
    let writes = [set("doc(1i32;).\"a\"", 1)];
    let (_, entry_ht) = propose(g.peer(leader), &writes, ahead).expect("the leader proposes");
    let out = g.peer(leader).process().expect("the leader persists");
    let is_append =
        |e: &Envelope| e.to == follower && e.msg.get_msg_type() == MessageType::MsgAppend;
    let mut append = out.into_iter().find(is_append).expect("an append to the follower");
    append.ht = HybridTime::from_micros(now);
    append.ht_lease = append.ht;
    g.peer(follower).receive(append, now).expect("a healthy peer");
    assert!(g.peer(follower).now_ht(now) > entry_ht);
}

/// A power cut armed after a send fires once something was sent; one armed after a vote,
/// once a granted vote was (a refused one does not count); an unarmed peer never cuts.
/// Fired, the peer is powered off.
#[test]
fn a_power_cut_after_a_send_or_a_vote_fires_only_then() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let follower = follower_of(leader);
    let ht = HybridTime::from_micros(g.now_us);
    let vote = |granted: bool| {
        let mut e = envelope(MessageType::MsgRequestVoteResponse, (follower, leader), 9, ht);
        e.msg.reject = !granted;
        e
    };
    let heartbeat = envelope(MessageType::MsgHeartbeat, (follower, leader), 9, ht);
    let peer = g.peer(follower);
    assert!(!peer.crash_after_send(&[vote(true)]), "not armed");
    peer.arm_crash(Some(CrashPoint::AfterSend));
    assert!(!peer.crash_after_send(&[]), "nothing sent");
    assert!(!peer.powered_off());
    assert!(peer.crash_after_send(std::slice::from_ref(&heartbeat)));
    assert!(peer.powered_off());
    let now = g.now_us;
    let peer = g.peer(follower);
    let refusals = [peer.tick(now).map(|_| ()), peer.flush().map(|_| ()), peer.dump().map(|_| ())];
    let down = Error::Down { cause: Some(Box::new(Error::Down { cause: None })) };
    assert_eq!(refusals, [(), (), ()].map(|_| Err(down.clone())), "powered off, it refuses all");
    g.crash(follower);
    g.restart(follower);
    let peer = g.peer(follower);
    peer.arm_crash(Some(CrashPoint::AfterVote));
    assert!(!peer.crash_after_send(&[heartbeat, vote(false)]), "no vote granted");
    assert!(peer.crash_after_send(&[vote(true)]));
    assert!(peer.powered_off());
}

/// With two voters a lease needs both: the leader cut off from the other voter refuses
/// reads once its lease runs out, its own lease alone being no majority.
#[test]
fn a_two_voter_leader_needs_the_other_voter_for_its_lease() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let others: Vec<u64> = (1..=3).filter(|&id| id != leader).collect();
    g.change_membership(leader, &[Membership::Remove(others[1])]);
    g.write(leader, &[set("doc(1i32;).\"a\"", 1)]);
    g.run_ms(100);
    assert_eq!(g.peer(leader).members().voters.len(), 2);
    g.isolate(leader);
    assert_eq!(g.get_now(leader, "doc(1i32;).\"a\"").expect("inside its lease"), int(1));
    g.now_us += 250_000; // past the lease, no tick: it still leads
    let refused = g.get_now(leader, "doc(1i32;).\"a\"").expect_err("past its lease");
    assert_eq!(refused.kind(), ErrorKind::LeaseExpired, "{refused}");
}

/// A leader's progress report (for a liveness failure's message) names each replica's
/// replication state, matched index and next index.
#[test]
fn a_leaders_progress_names_each_replica() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    let op = g.write(leader, &[set("doc(1i32;).\"a\"", 1)]);
    g.run_ms(50);
    let (last, next) = (op.index, op.index + 1);
    let each = (1..=3).map(|id| format!("{id}: Replicate matched={last} next={next}"));
    assert_eq!(g.peer(leader).progress(), each.collect::<Vec<_>>().join(", "));
}

/// A follower that hears from a new leader in a new term echoes that leader's lease,
/// even when the old leader's (from a clock further ahead) was later: a lease is one
/// leader's, in one term.
#[test]
fn a_new_leaders_echo_does_not_inherit_the_old_leaders_lease() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    g.run_ms(100); // heartbeats: the followers echo the leader's lease
    let follower = follower_of(leader);
    let other = (1..=3).find(|&id| id != leader && id != follower).expect("another");
    let term = g.peer(follower).raw.raft.term;
    let (echoed_term, echoed_leader, old_lease) = g.peer(follower).echo.expect("an echo");
    assert_eq!((echoed_term, echoed_leader), (term, leader));
    let low = HybridTime::from_micros(g.now_us);
    assert!(low < old_lease);
    let heartbeat = envelope(MessageType::MsgHeartbeat, (other, follower), term + 1, low);
    let now = g.now_us;
    g.peer(follower).receive(heartbeat, now).expect("a healthy peer");
    assert_eq!(g.peer(follower).echo, Some((term + 1, other, low)));
}
