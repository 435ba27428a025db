//! Log GC while peers run, and the snapshots that replace collected entries.

use super::*;
use raft::{ProgressState, Storage};

/// Flush `peer` and collect its log: the segments removed.
fn flush(peer: &mut Replica) -> usize {
    peer.flush().expect("a flush");
    peer.gc_log().expect("log GC")
}

/// Three elected peers with logs of small segments, so a flush lets GC remove some.
fn small_segments() -> (Group, u64) {
    let (mut g, leader) = Group::elected(Plants::NONE);
    g.segment_bytes = 512;
    for id in 1..=3 {
        g.crash(id); // reopened with small segments (nothing written yet but the election)
        g.restart(id);
    }
    g.run_ms(600);
    let leader = if g.peer(leader).status().leader { leader } else { g.leader() };
    (g, leader)
}

/// Write `n` values to `doc(1).k<i>` through `leader`.
fn fill(g: &mut Group, leader: u64, n: i64) -> OpId {
    let mut last = OpId::default();
    for i in 0..n {
        last = g.write(leader, &[set(&format!("doc(1i32;).\"k{}\"", i % 7), i)]);
    }
    last
}

/// The leader and a follower cut off while the leader wrote and collected its log.
fn follower_behind_collected_log() -> (Group, u64, u64) {
    let (mut g, leader) = small_segments();
    let behind = follower_of(leader);
    g.write(leader, &[set("doc(1i32;).\"a\"", 1)]);
    g.isolate(behind);
    fill(&mut g, leader, 40);
    let removed = flush(g.peer(leader));
    assert!(removed > 0, "log GC removed segments");
    g.cut.clear();
    (g, leader, behind)
}

#[test]
fn a_follower_behind_the_collected_log_installs_a_snapshot_and_goes_on_from_it() {
    let (mut g, leader, behind) = follower_behind_collected_log();
    g.run_ms(500);
    let installed = g.peer(behind).take_installed();
    assert_eq!(installed.len(), 1, "one snapshot: {installed:?}");
    assert!(installed[0].index > 40, "at the leader's applied entry: {installed:?}");
    assert!(g.dumps_agree());
    let op = g.write(leader, &[set("doc(1i32;).\"b\"", 99)]);
    g.run_ms(50);
    assert!(g.peer(behind).is_applied(op), "it replicates on from the snapshot");
    let safe = g.peer(behind).safe_time();
    assert_eq!(g.get(behind, "doc(1i32;).\"b\"", safe).expect("served"), int(99));
    assert_eq!(g.get(behind, "doc(1i32;).\"k4\"", safe).expect("served"), int(39));
    // Restarted, it boots from the snapshot's documents and its restarted log.
    g.crash(behind);
    let report = g.restart(behind);
    assert!(!report.finished_install);
    g.run_ms(400);
    assert!(g.dumps_agree());
}

#[test]
fn a_snapshot_install_cut_short_by_a_crash_is_finished_at_boot() {
    let (mut g, leader, behind) = follower_behind_collected_log();
    let raft = &g.peer(behind).raw.raft;
    let (term, vote) = (raft.term, raft.vote);
    g.peer(behind).arm_crash(Some(CrashPoint::AfterSnapshot));
    g.run_ms(500);
    assert!(g.peers[behind as usize - 1].is_none(), "the power went after the documents");
    let report = g.restart(behind);
    assert!(report.finished_install, "{report:?}");
    assert_eq!(report.uncommitted, 0);
    // Finishing the install keeps the term and vote, and the restarted log's durable hard
    // state commits up to the snapshot.
    let raft = &g.peer(behind).raw.raft;
    assert_eq!((raft.term, raft.vote), (term, vote), "the hard state from before the cut");
    let disk = g.disks[behind as usize - 1].clone();
    let (_, recovery) = Log::open(&disk, "log", g.segment_bytes, 0, Plants::NONE).expect("reads");
    assert_eq!(recovery.hard_state.commit, recovery.prev.index, "committed to the snapshot");
    assert_eq!((recovery.hard_state.term, recovery.hard_state.vote), (term, vote));
    g.run_ms(600);
    assert!(g.peer(behind).take_installed().is_empty(), "no second snapshot was needed");
    let op = g.write(leader, &[set("doc(1i32;).\"b\"", 99)]);
    g.run_ms(50);
    assert!(g.peer(behind).is_applied(op));
    assert!(g.dumps_agree());
}

/// The entries that added a replica are collected from every log; a restarted replica
/// still knows the configuration (kept in RocksDB beside the frontier).
#[test]
fn membership_outlives_the_entries_that_made_it() {
    let (mut g, leader) = small_segments();
    let spare = g.add_spare();
    g.change_membership(leader, &[Membership::AddLearner(spare)]);
    g.run_ms(100);
    fill(&mut g, leader, 40);
    g.run_ms(100);
    for id in [1, 2, 3, spare] {
        assert!(flush(g.peer(id)) > 0, "replica {id} collected its log");
    }
    for id in [1, 2, 3, spare] {
        g.crash(id);
        g.restart(id);
        assert_eq!(g.peer(id).members(), members(&[1, 2, 3], &[spare]), "replica {id}");
    }
    g.run_ms(800);
    let leader = g.leader();
    let op = g.write(leader, &[set("doc(1i32;).\"b\"", 5)]);
    g.run_ms(50);
    assert!(g.peer(spare).is_applied(op), "the learner still receives the log");
}

/// A replica that applied its own removal and flushed restarts removed: the stored
/// configuration says so (bootstrap replays no change at or below the frontier).
#[test]
fn a_removed_replica_restarts_removed() {
    let (mut g, leader) = small_segments();
    let gone = follower_of(leader);
    g.write(leader, &[set("doc(1i32;).\"a\"", 1)]);
    g.change_membership(leader, &[Membership::Remove(gone)]);
    g.run_ms(100);
    let refused = g.get_now(gone, "doc(1i32;).\"a\"").expect_err("inert");
    assert_eq!(refused.kind(), ErrorKind::Removed);
    g.peer(gone).flush().expect("a removed replica still flushes");
    g.crash(gone);
    g.restart(gone);
    let refused = g.get_now(gone, "doc(1i32;).\"a\"").expect_err("still inert");
    assert_eq!(refused.kind(), ErrorKind::Removed, "{refused}");
}

/// A snapshot lost on the way is reported lost once the leader has waited
/// [`ready::SNAPSHOT_TIMEOUT_TICKS`] ticks past the one it was sent in (docsim's rule: raft-rs
/// waits for its caller's report), and sent again; once one arrives, the follower
/// installs it.
#[test]
fn a_lost_snapshot_is_sent_again_after_the_timeout() {
    let (mut g, leader, behind) = follower_behind_collected_log();
    g.lost = vec![MessageType::MsgSnapshot];
    let mut waiting = vec![]; // per tick: whether the leader waits on a snapshot
    for _ in 0..80 {
        g.run_ms(10);
        let progress = g.peer(leader).raw.raft.prs().get(behind).map(|p| p.state);
        waiting.push(progress == Some(ProgressState::Snapshot));
    }
    let runs: Vec<usize> = waiting.split(|w| !w).map(<[bool]>::len).filter(|&n| n > 0).collect();
    let whole = ready::SNAPSHOT_TIMEOUT_TICKS as usize + 1;
    assert_eq!(runs.get(..2), Some(&[whole, whole][..]), "ticks waited per snapshot: {runs:?}");
    g.lost.clear();
    g.run_ms(500);
    assert_eq!(g.peer(behind).take_installed().len(), 1);
    assert!(g.dumps_agree());
}

/// A replica builds a snapshot (exporting every document) only when Raft asks for one.
#[test]
fn no_snapshot_is_built_unless_raft_asks() {
    let (mut g, leader) = Group::elected(Plants::NONE);
    fill(&mut g, leader, 5);
    g.run_ms(100);
    for id in 1..=3 {
        assert!(g.peer(id).raw.store().cache().ready.is_none(), "replica {id} built one");
    }
}

/// After log GC, raft-rs's copy of the log starts where the disk's does (its first entry
/// the first one the disk still holds), and knows the term of the entry just before it.
#[test]
fn raft_rs_forgets_exactly_the_entries_log_gc_removed() {
    let (mut g, leader) = small_segments();
    fill(&mut g, leader, 40);
    g.run_ms(50);
    let peer = g.peer(leader);
    assert!(flush(peer) > 0, "log GC removed segments");
    let prev = peer.log.segments()[0].prev;
    let store = peer.raw.store();
    assert_eq!(store.first_index().expect("held"), prev.index + 1);
    assert_eq!(store.term(prev.index).expect("remembered"), prev.term);
}
