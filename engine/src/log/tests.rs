use super::*;
use crate::canary::Plants;
use crate::disk::{FaultConfig, Tear};
use sync_mark::SyncMark;

fn entry(term: u64, index: u64, data: &[u8]) -> LogEntry {
    LogEntry { op_id: OpId::new(term, index), data: data.to_vec() }
}

fn disk() -> SimDisk {
    SimDisk::new(1, FaultConfig::default())
}

/// A log with entries 1.1..=1.n, synced, in segments of about `segment_bytes`.
fn filled(disk: &SimDisk, n: u64, segment_bytes: usize) -> Log {
    let (mut log, _) = Log::open(disk, "t", segment_bytes, 0, Plants::NONE).unwrap();
    for i in 1..=n {
        let hs = HardState { term: 1, vote: 1, commit: i };
        log.append(&[entry(1, i, &[i as u8; 40])], Some(hs)).unwrap();
        log.sync().unwrap();
    }
    log
}

fn indexes(recovery: &Recovery) -> Vec<u64> {
    recovery.entries.iter().map(|e| e.op_id.index).collect()
}

#[test]
fn synced_entries_and_the_hard_state_survive_a_crash() {
    let d = disk();
    let mut log = filled(&d, 5, 1 << 20);
    log.append(&[entry(1, 6, b"unsynced")], None).unwrap();
    d.crash(Tear::None);
    let (log, recovery) = Log::open(&d, "t", 1 << 20, 0, Plants::NONE).unwrap();
    assert_eq!(indexes(&recovery), [1, 2, 3, 4, 5]);
    assert_eq!(recovery.hard_state, HardState { term: 1, vote: 1, commit: 5 });
    assert_eq!(log.segments().last().expect("a segment").last, OpId::new(1, 5));
    assert_eq!(recovery.truncated, None);
}

#[test]
fn a_torn_tail_is_truncated_durably_and_reported() {
    let d = disk();
    let mut log = filled(&d, 2, 1 << 20);
    log.append(&[entry(1, 3, &[7; 3000])], None).unwrap();
    d.crash(Tear::Sector(0));
    let (_, recovery) = Log::open(&d, "t", 1 << 20, 0, Plants::NONE).unwrap();
    assert_eq!(indexes(&recovery), [1, 2]);
    let cut = recovery.truncated.expect("a torn tail");
    assert_eq!(cut.offset + cut.dropped_bytes, crate::disk::SECTOR_BYTES);
    d.crash(Tear::None); // the truncation itself was made durable
    let (_, again) = Log::open(&d, "t", 1 << 20, 0, Plants::NONE).unwrap();
    assert_eq!((indexes(&again), again.truncated), (vec![1, 2], None));
}

#[test]
fn a_bad_checksum_in_the_synced_log_is_an_error_naming_segment_and_offset() {
    let d = disk();
    filled(&d, 3, 1 << 20);
    let name = d.list("t/wal-")[0].clone();
    let mut bytes = d.read(&name).unwrap();
    let mid = bytes.len() / 2;
    // The record holding byte `mid` starts at the last record boundary at or below it.
    let mut starts = vec![0];
    while let Ok((_, next)) = Record::decode(&bytes, *starts.last().unwrap()) {
        starts.push(next);
    }
    let record = starts.into_iter().filter(|&start| start <= mid).max().unwrap();
    bytes[mid] ^= 0x10;
    d.remove(&name).unwrap();
    d.create(&name).unwrap();
    d.append(&name, &bytes).unwrap();
    match Log::open(&d, "t", 1 << 20, 0, Plants::NONE).map(|_| ()) {
        Err(Error::LogCorruption { segment, offset, reason }) => {
            assert_eq!((segment.as_str(), offset), ("t/wal-00000001", record));
            assert!(reason.starts_with("checksum mismatch (stored "), "{reason}");
        }
        other => panic!("not refused as corruption: {other:?}"),
    }
}

#[test]
fn segments_below_the_frontier_are_skipped_and_gc_removes_whole_segments_only() {
    let d = disk();
    let mut log = filled(&d, 20, 200);
    let segments = log.segments().to_vec();
    assert!(segments.len() >= 5, "{segments:?}");
    let frontier = 12;
    let (_, recovery) = Log::open(&d, "t", 200, frontier, Plants::NONE).unwrap();
    let first = recovery.entries[0].op_id.index;
    assert!(first <= frontier + 1 && recovery.segments_skipped > 0, "{first}");
    assert_eq!(*indexes(&recovery).last().unwrap(), 20);
    let removed = log.gc(frontier).unwrap();
    assert!(removed > 0);
    assert!(log.segments().iter().all(|s| s.last.index >= frontier));
    assert!(log.segments()[0].prev.index < frontier, "never past the bound");
    d.crash(Tear::None);
    let (_, after) = Log::open(&d, "t", 200, frontier, Plants::NONE).unwrap();
    assert_eq!(*indexes(&after).last().unwrap(), 20);
}

#[test]
fn first_segment_to_read_is_the_newest_starting_at_or_below_the_frontier() {
    let prevs = [OpId::new(1, 0), OpId::new(1, 4), OpId::new(1, 9)];
    assert_eq!(first_segment_to_read(&prevs, 0), 0);
    assert_eq!(first_segment_to_read(&prevs, 3), 0);
    assert_eq!(first_segment_to_read(&prevs, 4), 1, "entry 5 is the first needed");
    assert_eq!(first_segment_to_read(&prevs, 100), 2);
    let gc_ed = [OpId::new(1, 4), OpId::new(1, 9)];
    assert_eq!(first_segment_to_read(&gc_ed, 2), 0, "none qualifies: the oldest");
}

#[test]
fn a_new_leader_overwrites_the_tail() {
    let d = disk();
    let (mut log, _) = Log::open(&d, "t", 1 << 20, 0, Plants::NONE).unwrap();
    let old = [entry(1, 1, b"a"), entry(1, 2, b"b"), entry(1, 3, b"c")];
    log.append(&old, None).unwrap();
    log.append(&[entry(2, 2, b"B")], None).unwrap();
    log.sync().unwrap();
    let (_, recovery) = Log::open(&d, "t", 1 << 20, 0, Plants::NONE).unwrap();
    let ids: Vec<OpId> = recovery.entries.iter().map(|e| e.op_id).collect();
    assert_eq!(ids, [OpId::new(1, 1), OpId::new(2, 2)]);
}

/// A replica that flushed a new leader's entry which replaced the last entry of an older
/// segment opens from that frontier: reading from the newest segment alone would find the
/// entry "before where the log starts", so every segment is read (seed 29 with three
/// replicas failed its restart so before).
#[test]
fn an_overwrite_reaching_into_a_skipped_segment_is_read_from_the_start() {
    let d = disk();
    let mut log = filled(&d, 12, 200);
    let mut last = 12;
    while log.segments().last().unwrap().bytes < 200 {
        last += 1;
        log.append(&[entry(1, last, b"old")], None).unwrap();
    }
    let hs = HardState { term: 2, vote: 2, commit: last };
    log.append(&[entry(2, last, b"new"), entry(2, last + 1, b"next")], Some(hs)).unwrap();
    log.sync().unwrap();
    let (reopened, recovery) = Log::open(&d, "t", 200, last, Plants::NONE).expect("opens");
    let tail: Vec<OpId> = recovery.entries.iter().rev().take(2).map(|e| e.op_id).collect();
    assert_eq!(tail, [OpId::new(2, last + 1), OpId::new(2, last)]);
    assert_eq!(recovery.segments_skipped, 0, "every segment read");
    assert_eq!(reopened.segments(), log.segments());
    // The segment holding the overwrite is skipped too once a newer one starts at or
    // below the frontier: checking it alone finds the same reach-back.
    let mut next = last + 2;
    while log.segments().last().unwrap().prev.index <= last + 1 {
        log.append(&[entry(2, next, b"more")], None).unwrap();
        next += 1;
    }
    log.sync().unwrap();
    let (_, recovery) = Log::open(&d, "t", 200, next - 1, Plants::NONE).expect("opens");
    assert_eq!(recovery.entries.last().map(|e| e.op_id), Some(OpId::new(2, next - 1)));
    assert_eq!(recovery.segments_skipped, 0, "every segment read");
}

/// A record framed by hand: length, checksum (by the independent reference), kind, payload.
fn framed(kind: u8, payload: &[u8]) -> Vec<u8> {
    let covered: Vec<u8> = std::iter::once(kind).chain(payload.iter().copied()).collect();
    let mut bytes = u32::try_from(payload.len()).unwrap().to_le_bytes().to_vec();
    bytes.extend_from_slice(&crc32c_reference(&covered).to_le_bytes());
    bytes.extend_from_slice(&covered);
    bytes
}

proptest::proptest! {
    /// Any kind and payload behind a valid checksum decodes exactly when it has its kind's
    /// shape (a header: 56 bytes opening with the magic; an entry: 16 or more; a hard
    /// state: 24; a reset mark: 16), to a record that encodes back to the same bytes; else
    /// it is refused with its reason. Never a panic, never "cut short".
    #[test]
    fn checksummed_payloads_decode_by_their_shape_or_are_refused(
        kind in 0u8..6,
        len in proptest::prop_oneof![
            proptest::strategy::Just(16usize), proptest::strategy::Just(24),
            proptest::strategy::Just(56), 0usize..80
        ],
        fill in proptest::collection::vec(proptest::prelude::any::<u8>(), 80),
        magic in proptest::prelude::any::<bool>(),
    ) {
        let mut payload = fill[..len].to_vec();
        if magic && len >= 8 {
            payload[..8].copy_from_slice(b"docsimlg");
        }
        let shaped = match kind {
            1 => len == 56 && payload.starts_with(b"docsimlg"),
            2 => len >= 16,
            3 => len == 24,
            4 => len == 16,
            _ => false,
        };
        let bytes = framed(kind, &payload);
        match Record::decode(&bytes, 0) {
            Ok((record, next)) => {
                proptest::prop_assert!(shaped, "kind {kind}, {len} bytes decoded: {record:?}");
                proptest::prop_assert_eq!(next, bytes.len());
                let mut again = Vec::new();
                record.encode(&mut again);
                proptest::prop_assert_eq!(again, bytes);
            }
            Err(RecordError::Corrupt(why)) => {
                proptest::prop_assert!(!shaped, "kind {kind}, {len} bytes refused: {why}");
                let expected = match kind {
                    1 => "bad segment header".to_owned(),
                    _ => format!("record kind {kind} with {len} payload bytes"),
                };
                proptest::prop_assert_eq!(why, expected);
            }
            Err(RecordError::Incomplete) => proptest::prop_assert!(false, "whole, yet cut short"),
        }
    }

    /// A segment of real records, one byte flipped or the bytes cut short anywhere: the
    /// records before the damaged one decode as written; the damaged one is refused
    /// (corrupt, or cut short when the cut or a grown length leaves it incomplete). Never a
    /// panic, never a damaged record taken.
    #[test]
    fn damaged_records_are_refused_and_those_before_them_read(
        lens in proptest::collection::vec(0usize..40, 1..6),
        at in proptest::prelude::any::<proptest::sample::Index>(),
        flip in proptest::option::of(0u8..8),
    ) {
        let mut bytes = Vec::new();
        let mut starts = Vec::new();
        for (i, len) in lens.iter().enumerate() {
            starts.push(bytes.len());
            Record::Entry(entry(1, i as u64 + 1, &vec![i as u8; *len])).encode(&mut bytes);
        }
        let at = at.index(bytes.len());
        match flip {
            Some(bit) => bytes[at] ^= 1 << bit,
            None => bytes.truncate(at),
        }
        let damaged = starts.iter().rposition(|&start| start <= at).unwrap();
        let mut offset = 0;
        for (i, &start) in starts.iter().enumerate().take(damaged) {
            proptest::prop_assert_eq!(offset, start);
            let (record, next) = Record::decode(&bytes, offset).unwrap();
            let written = entry(1, i as u64 + 1, &vec![i as u8; lens[i]]);
            proptest::prop_assert_eq!(record, Record::Entry(written));
            offset = next;
        }
        match (Record::decode(&bytes, offset), flip) {
            (Err(RecordError::Incomplete), None) | (Err(_), Some(_)) => {}
            (other, _) => proptest::prop_assert!(false, "at byte {at}: {other:?}"),
        }
    }
}

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), bit by bit: an independent
/// reference for the checksum the log stores.
fn crc32c_reference(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0x82F6_3B78 } else { crc >> 1 };
        }
    }
    !crc
}

#[test]
fn a_record_is_length_crc32c_kind_payload() {
    // The standard check value of CRC-32C.
    assert_eq!(crc32c_reference(b"123456789"), 0xE306_9283);
    let mut out = Vec::new();
    record::Record::Entry(entry(3, 7, b"payload")).encode(&mut out);
    let len = u32::from_le_bytes(out[0..4].try_into().unwrap()) as usize;
    assert_eq!(len, 16 + 7, "op id (two u64s) and the data");
    assert_eq!(out.len(), 4 + 4 + 1 + len);
    let crc = u32::from_le_bytes(out[4..8].try_into().unwrap());
    assert_eq!(crc, crc32c_reference(&out[8..]), "the checksum covers kind and payload");
}

#[test]
fn a_sync_mark_lost_mid_rewrite_falls_back_to_the_other_slot() {
    let d = disk();
    let mut mark = SyncMark::read(&d, "t").unwrap(); // as opening the log does
    mark.write(&d, "t", 1, 100).unwrap();
    mark.write(&d, "t", 1, 200).unwrap();
    // The marks alternate slots: the first in b, the second in a.
    let slot = |name: &str| SyncMark::decode(&d.read(name).unwrap(), name).unwrap();
    assert_eq!(slot("t/synced-b"), Some(SyncMark { counter: 1, seq: 1, len: 100 }));
    assert_eq!(slot("t/synced-a"), Some(SyncMark { counter: 2, seq: 1, len: 200 }));
    // The power goes while the third mark rewrites slot b: the slot is emptied.
    d.truncate("t/synced-b", 0).unwrap();
    d.crash(Tear::None);
    assert_eq!(SyncMark::read(&d, "t").unwrap(), SyncMark { counter: 2, seq: 1, len: 200 });
}

#[test]
fn a_damaged_sync_mark_is_corruption() {
    let d = disk();
    let mut mark = SyncMark::read(&d, "t").unwrap(); // as opening the log does
    mark.write(&d, "t", 1, 100).unwrap();
    let mut bytes = d.read("t/synced-b").unwrap();
    bytes[17] ^= 4;
    d.truncate("t/synced-b", 0).unwrap();
    d.append("t/synced-b", &bytes).unwrap();
    let reason = "sync mark checksum mismatch".to_owned();
    let damaged = Error::LogCorruption { segment: "t/synced-b".into(), offset: 0, reason };
    assert_eq!(SyncMark::read(&d, "t").unwrap_err(), damaged);
    d.append("t/synced-b", &[0]).unwrap(); // one byte too many
    let reason = "a sync mark of the wrong size".to_owned();
    let long = Error::LogCorruption { segment: "t/synced-b".into(), offset: 0, reason };
    assert_eq!(SyncMark::read(&d, "t").unwrap_err(), long);
}

/// A mark is recorded only once it is durable: a write that fails leaves the previous
/// mark, and the retry goes to the same slot, never the one holding the only durable mark.
#[test]
fn a_failed_sync_mark_write_keeps_the_previous_mark_and_its_slot() {
    let d = disk();
    let mut mark = SyncMark::read(&d, "t").unwrap();
    mark.write(&d, "t", 1, 100).unwrap();
    d.arm_io_error(crate::disk::IoTarget::NextSync);
    assert_eq!(mark.write(&d, "t", 1, 200).unwrap_err().kind(), crate::ErrorKind::Io);
    assert_eq!(mark, SyncMark { counter: 1, seq: 1, len: 100 });
    mark.write(&d, "t", 1, 300).unwrap();
    let slot = |name: &str| SyncMark::decode(&d.read(name).unwrap(), name).unwrap();
    assert_eq!(slot("t/synced-b"), Some(SyncMark { counter: 1, seq: 1, len: 100 }));
    assert_eq!(slot("t/synced-a"), Some(SyncMark { counter: 2, seq: 1, len: 300 }));
}

#[test]
fn a_sync_mark_naming_a_segment_that_is_gone_is_corruption() {
    let mark = SyncMark { counter: 7, seq: 3, len: 512 };
    let reason = "the sync mark names it (synced to 512 bytes), but it is gone".to_owned();
    let gone = Error::LogCorruption { segment: "t/wal-00000003".into(), offset: 0, reason };
    assert_eq!(mark.synced_len("t", 2).unwrap_err(), gone);
    assert_eq!(mark.synced_len("t", 3).unwrap(), 512);
    assert_eq!(mark.synced_len("t", 4).unwrap(), 0, "a mark from before segment 4 existed");
}

#[test]
fn a_flipped_length_below_the_sync_mark_is_corruption_not_a_torn_tail() {
    let d = disk();
    let log = filled(&d, 3, 1 << 20);
    let name = log.segments()[0].name.clone();
    let mut bytes = d.read(&name).unwrap();
    let last_record = bytes.len() - (9 + 16 + 40) - (9 + 24); // the last entry, then its hard state
    bytes[last_record] ^= 0x40; // its length field: 56 -> 120, past the end of the file
    d.truncate(&name, 0).unwrap();
    d.append(&name, &bytes).unwrap();
    d.sync(&name).unwrap();
    let err = Log::open(&d, "t", 1 << 20, 0, Plants::NONE).map(|_| ()).unwrap_err();
    let reason = "the record is cut short".to_owned();
    assert_eq!(err, Error::LogCorruption { segment: name, offset: last_record, reason });
}

/// A length no record can have is corruption even past the sync mark, where a record cut
/// short is a torn tail (a tear keeps a prefix of what was written; it invents no length).
#[test]
fn an_impossible_length_is_corruption_even_in_the_unsynced_tail() {
    let max = u32::try_from(record::MAX_PAYLOAD_BYTES).expect("fits a length field");
    for (len, corrupt) in [(max, false), (max + 1, true)] {
        let d = disk();
        d.create("t/wal-00000001").unwrap();
        let mut bytes = Vec::new();
        Record::Header { seq: 1, prev: OpId::default(), hard_state: HardState::default() }
            .encode(&mut bytes);
        let header_len = bytes.len();
        bytes.extend_from_slice(&len.to_le_bytes());
        bytes.extend_from_slice(&[0; 5]); // a checksum and a kind, then nothing
        d.append("t/wal-00000001", &bytes).unwrap();
        let opened = Log::open(&d, "t", 1 << 20, 0, Plants::NONE);
        if corrupt {
            let err = opened.map(|_| ()).unwrap_err();
            let reason = format!("record length {len} is impossible");
            assert_eq!(
                err,
                Error::LogCorruption {
                    segment: "t/wal-00000001".into(),
                    offset: header_len,
                    reason
                }
            );
        } else {
            let (_, recovery) = opened.unwrap();
            let cut = recovery.truncated.expect("a torn tail");
            assert_eq!((cut.offset, cut.dropped_bytes), (header_len, 9));
        }
    }
}

#[test]
fn a_roll_that_fails_leaves_no_segment_without_a_header() {
    let d = disk();
    let mut log = filled(&d, 3, 200); // about 200-byte segments
    let mut next = 4;
    while log.segments().last().unwrap().bytes < 200 {
        assert!(next < 100, "appends must grow the active segment");
        log.append(&[entry(1, next, &[1; 40])], None).unwrap();
        log.sync().unwrap();
        next += 1;
    }
    let (segments, written) = (d.list("t/wal-").len(), next - 1);
    let used = d.used_bytes();
    // The next append rolls: room to seal the active segment, none for the new header.
    d.set_faults(FaultConfig { capacity_bytes: Some(used + 8), ..FaultConfig::default() });
    let err = log.append(&[entry(1, next, &[4; 40])], None).unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::DiskFull, "{err}");
    assert_eq!(d.list("t/wal-").len(), segments, "the failed roll left no new segment");
    d.set_faults(FaultConfig::default());
    // Reopened without a power loss (a clean restart): the log is whole.
    let (_, recovery) = Log::open(&d, "t", 200, 0, Plants::NONE).expect("no header-less segment");
    assert_eq!(indexes(&recovery), (1..=written).collect::<Vec<u64>>());
}

#[test]
fn a_reset_starts_the_log_after_a_snapshot_keeping_the_hard_state() {
    let d = disk();
    let mut log = filled(&d, 12, 200);
    assert!(log.segments().len() > 2);
    let hs = HardState { term: 4, vote: 2, commit: 30 };
    log.reset(OpId::new(3, 30), hs).unwrap();
    assert_eq!(log.segments().len(), 1, "older segments removed");
    log.append(&[entry(4, 31, b"after")], None).unwrap();
    log.sync().unwrap();
    d.crash(Tear::None);
    let (log, recovery) = Log::open(&d, "t", 200, 0, Plants::NONE).unwrap();
    assert_eq!(recovery.prev, OpId::new(3, 30));
    assert_eq!(indexes(&recovery), [31]);
    assert_eq!(recovery.hard_state, hs);
    assert_eq!(recovery.snapshot, Some(OpId::new(3, 30)));
    assert_eq!(log.segments().last().expect("a segment").last, OpId::new(4, 31));
}

#[test]
fn a_reset_cut_short_before_the_old_segments_went_is_finished_at_open() {
    let d = disk();
    let mut log = filled(&d, 12, 200);
    let old: Vec<(String, Vec<u8>)> =
        d.list("t/wal-").into_iter().map(|n| (n.clone(), d.read(&n).unwrap())).collect();
    log.reset(OpId::new(2, 5), HardState { term: 2, vote: 1, commit: 5 }).unwrap();
    for (i, (name, bytes)) in old.iter().enumerate() {
        // The old active segment's unsynced tail (a commit index) torn by the crash.
        let bytes = if i + 1 == old.len() { &bytes[..bytes.len() - 3] } else { &bytes[..] };
        // As if the power went before the removals reached the disk.
        d.create(name).unwrap();
        d.append(name, bytes).unwrap();
        d.sync(name).unwrap();
    }
    d.sync_dir("t").unwrap();
    let (log, recovery) = Log::open(&d, "t", 200, 0, Plants::NONE).unwrap();
    assert_eq!((recovery.prev, indexes(&recovery)), (OpId::new(2, 5), vec![]));
    assert_eq!(recovery.hard_state, HardState { term: 2, vote: 1, commit: 5 });
    assert_eq!(log.segments().len(), 1);
    assert_eq!(d.list("t/wal-").len(), 1, "the old segments are removed at open");
}

#[test]
fn reopening_keeps_the_term_of_an_overwrite_that_ends_at_its_segments_prev() {
    let d = disk();
    let mut log = filled(&d, 12, 200);
    let mut last = 12;
    while log.segments().last().unwrap().bytes < 200 {
        last += 1;
        log.append(&[entry(1, last, b"old")], None).unwrap();
    }
    // The active segment is full: a new leader's entry at its last index rolls it, and the
    // new segment's header names the entry it replaces.
    let hs = HardState { term: 2, vote: 2, commit: last };
    log.append(&[entry(2, last, b"new")], Some(hs)).unwrap();
    log.sync().unwrap();
    let active = log.segments().last().unwrap();
    assert_eq!((active.prev, active.last), (OpId::new(1, last), OpId::new(2, last)));
    let (reopened, _) = Log::open(&d, "t", 200, 0, Plants::NONE).unwrap();
    assert_eq!(reopened.segments().last().expect("a segment").last, OpId::new(2, last));
    assert_eq!(reopened.segments(), log.segments());
    // Log GC keeps the segment holding 1.last: reading the new one starts after its
    // `prev`, 1.last, which 2.last replaces.
    let before = log.segments().len();
    log.gc(last + 1).unwrap();
    assert_eq!(log.segments()[log.segments().len() - 2].last, OpId::new(1, last));
    assert!(log.segments().len() < before, "the older segments go: {:?}", log.segments());
    let (_, recovery) = Log::open(&d, "t", 200, 0, Plants::NONE).unwrap();
    assert_eq!(recovery.entries.last().map(|e| e.op_id), Some(OpId::new(2, last)));
}

#[test]
fn gc_keeps_a_segment_whose_tail_a_newer_segment_overwrote() {
    let d = disk();
    let mut log = filled(&d, 12, 200);
    // A new leader overwrites from an entry before the active segment's first.
    let start = log.segments().last().unwrap().prev.index;
    let overwrite: Vec<LogEntry> = (start - 1..=start + 1).map(|i| entry(2, i, b"new")).collect();
    log.append(&overwrite, Some(HardState { term: 2, vote: 2, commit: start + 1 })).unwrap();
    log.sync().unwrap();
    log.gc(start + 1).unwrap();
    let kept = log.segments().len();
    assert!(kept >= 2, "the overwritten segment stays: {:?}", log.segments());
    let (reopened, recovery) = Log::open(&d, "t", 200, 0, Plants::NONE).unwrap();
    let last = recovery.entries.last().unwrap().op_id;
    assert_eq!(last, OpId::new(2, start + 1));
    assert_eq!(reopened.segments(), log.segments(), "reopening rebuilds the segment table");
    let at = |index: u64| recovery.entries.iter().find(|e| e.op_id.index == index).unwrap().op_id;
    assert_eq!(at(start - 1), OpId::new(2, start - 1), "the overwrite is read in place");
    assert!(recovery.prev.index < start - 1, "read from before the overwrite: {:?}", recovery.prev);
}

/// Each record a segment may not hold where it stands, refused with the segment, the
/// offset and the reason; and the entries at the highest index taken, not overflowed.
#[test]
fn recovery_refuses_records_out_of_place_exactly() {
    let refused = |record: Record, offset: usize| {
        let mut recovery = Recovery { prev: OpId::new(1, 5), ..Recovery::default() };
        recovery.add(Record::Entry(entry(1, 6, b"a")), "t/wal-00000002", 40).unwrap();
        match recovery.add(record, "t/wal-00000002", offset) {
            Err(Error::LogCorruption { segment, offset, reason }) => {
                assert_eq!(segment, "t/wal-00000002");
                (offset, reason)
            }
            other => panic!("not refused as corruption: {other:?}"),
        }
    };
    let header = Record::Header { seq: 2, prev: OpId::new(1, 5), hard_state: HardState::default() };
    assert_eq!(refused(header, 90), (90, "a header mid-segment".to_owned()));
    let first = (0, "a reset mark first".to_owned());
    assert_eq!(refused(Record::Snapshot(OpId::new(1, 6)), 0), first);
    let before = "entry 2.5 replaces one before where the log starts (1.5)".to_owned();
    assert_eq!(refused(Record::Entry(entry(2, 5, b"b")), 70), (70, before));
    let gap = "entry 1.8 follows 1.6: the log has a gap".to_owned();
    assert_eq!(refused(Record::Entry(entry(1, 8, b"b")), 80), (80, gap));

    let mut recovery = Recovery { prev: OpId::new(1, u64::MAX - 1), ..Recovery::default() };
    recovery.add(Record::Entry(entry(1, u64::MAX, b"a")), "t/wal-00000002", 40).unwrap();
    recovery.add(Record::Entry(entry(2, u64::MAX, b"b")), "t/wal-00000002", 80).unwrap();
    assert_eq!(recovery.entries, [entry(2, u64::MAX, b"b")]);
}

/// A tear that ends inside a record's header past the sync mark (its length, checksum or
/// kind cut short) is a torn tail like any other: cut off, never corruption.
#[test]
fn a_tear_inside_a_record_header_is_a_torn_tail() {
    let sector = crate::disk::SECTOR_BYTES;
    for header_kept in 1..record::HEADER_BYTES {
        let d = disk();
        let mut log = filled(&d, 2, 1 << 20);
        let (name, synced) = (log.segments()[0].name.clone(), log.segments()[0].bytes);
        // Entry 3 ends `header_kept` bytes before the first sector boundary; entry 4 spans it.
        let data_len = sector - header_kept - synced - record::HEADER_BYTES - 16;
        log.append(&[entry(1, 3, &vec![3; data_len])], None).unwrap();
        log.append(&[entry(1, 4, &[4; 600])], None).unwrap();
        d.crash(Tear::Sector(0));
        let (_, recovery) = Log::open(&d, "t", 1 << 20, 0, Plants::NONE).unwrap();
        assert_eq!(indexes(&recovery), [1, 2, 3], "{header_kept} header bytes kept");
        let offset = sector - header_kept;
        let cut = Truncation { segment: name, offset, dropped_bytes: header_kept };
        assert_eq!(recovery.truncated, Some(cut));
    }
}

/// Segments that are not where their headers say, or not all there, are corruption:
/// a header naming another segment, a segment missing between two others, and every
/// segment gone while the sync mark names one.
#[test]
fn missing_or_misplaced_segments_are_corruption() {
    let refused = |d: &SimDisk| match Log::open(d, "t", 200, 0, Plants::NONE).map(|_| ()) {
        Err(Error::LogCorruption { segment, offset: 0, reason }) => (segment, reason),
        other => panic!("not refused as corruption at byte 0: {other:?}"),
    };
    let d = disk();
    let log = filled(&d, 20, 200);
    let names: Vec<String> = log.segments().iter().map(|s| s.name.clone()).collect();
    assert!(names.len() >= 4, "{names:?}");
    let bytes = d.read(&names[1]).unwrap();
    d.remove(&names[1]).unwrap();
    d.sync_dir("t").unwrap();
    let gap = (names[2].clone(), "segment 3 follows segment 1: one between is gone".to_owned());
    assert_eq!(refused(&d), gap);
    d.create("t/wal-00000099").unwrap(); // segment 2's bytes under another name
    d.append("t/wal-00000099", &bytes).unwrap();
    d.remove(&names[0]).unwrap();
    for name in &names[2..] {
        d.remove(name).unwrap();
    }
    let misnamed = ("t/wal-00000099".to_owned(), "its header names segment 2".to_owned());
    assert_eq!(refused(&d), misnamed);
    d.remove("t/wal-00000099").unwrap();
    let mark = SyncMark::read(&d, "t").unwrap();
    let gone = format!("the sync mark names it (synced to {} bytes), but it is gone", mark.len);
    assert_eq!(refused(&d), (names.last().unwrap().clone(), gone));
}
