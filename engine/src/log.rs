//! The tablet's Raft log on the simulated disk: segment files of checksummed records.
//!
//! ```text
//!  wal-00000001: [header prev=0.0 hs] [entry 1.1] [entry 1.2] [hard state] [entry 1.3] ...
//!  wal-00000002: [header prev=1.3 hs] [entry 1.4] ...
//!  record := len:u32le  crc32c(kind ++ payload):u32le  kind:u8  payload
//! ```
//!
//! Appends are volatile until [`Log::sync`]; a write is acknowledged only after its entry
//! is synced. A segment is sealed (synced) before the next one is created, and a new
//! segment is durable — header synced, directory synced — before any entry goes into it,
//! so a crash can only damage the unsynced tail of the newest segment. Hence opening the
//! log distinguishes:
//!
//! - a **torn tail**: the newest segment ends inside a record beyond its sync mark (a
//!   crash tore an unsynced append). Truncated at the last whole record, durably, and
//!   reported;
//! - **corruption**: a whole record whose checksum fails, a damaged sealed segment, or a
//!   record cut short below the newest segment's sync mark (`log/sync_mark.rs`: how far
//!   it is known to be synced, e.g. a flipped length field). Never skipped: opening fails
//!   with the segment and offset.
//!
//! Each segment's header carries the op id before its first entry and the hard state at
//! its creation, so bootstrap can skip whole segments below the flushed frontier (it still
//! checks their records: damage anywhere in the log fails the open) and log GC can delete
//! whole segments without losing the hard state.

use crate::canary::{Plant, Plants};
use crate::disk::SimDisk;
use crate::error::{Error, Result};
pub use crate::ids::OpId;

mod record;
mod sync_mark;
#[cfg(test)]
mod tests;

use record::{Record, RecordError};
use sync_mark::SyncMark;

/// One log entry: its op id and its payload (empty for a new leader's no-op entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEntry {
    pub op_id: OpId,
    pub data: Vec<u8>,
}

/// Raft's hard state: current term, vote, commit index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HardState {
    pub term: u64,
    pub vote: u64,
    pub commit: u64,
}

/// What one segment file holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentInfo {
    pub seq: u64,
    pub name: String,
    /// The op id just before the segment's first entry.
    pub prev: OpId,
    /// The op id of its last entry (`prev` while it has none).
    pub last: OpId,
    pub bytes: usize,
    /// The lowest index of an entry in it (`u64::MAX` while it has none). Below `prev`
    /// when a new leader's overwrite reached into older segments: reading it then needs
    /// the segment holding the entry before that one.
    pub lowest: u64,
}

/// A torn tail cut off while opening.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Truncation {
    pub segment: String,
    pub offset: usize,
    pub dropped_bytes: usize,
}

/// What opening the log read: the entries of the segments read, in order, with
/// overwritten tails resolved, and the newest hard state.
#[derive(Clone, Debug, Default)]
pub struct Recovery {
    pub entries: Vec<LogEntry>,
    /// The op id just before `entries[0]`.
    pub prev: OpId,
    pub hard_state: HardState,
    pub truncated: Option<Truncation>,
    pub segments_skipped: usize,
    /// The op id of the newest snapshot the log was reset to ([`Log::reset`]), if read.
    pub snapshot: Option<OpId>,
    /// An entry replaced one before where reading started (refused as corruption: when
    /// reading skipped segments, [`Log::open`] reads them all instead).
    pub reached_back: bool,
}

/// The open log. The last segment is the active one.
pub struct Log {
    disk: SimDisk,
    dir: String,
    segment_bytes: usize,
    segments: Vec<SegmentInfo>,
    hard_state: HardState,
    /// How far the newest segment is durably known to be synced.
    mark: SyncMark,
    /// The sync mark's two slot files.
    mark_slots: [String; 2],
    /// The planted bugs (of the tablet this log serves).
    plants: Plants,
}

impl Log {
    /// The disk the log lives on (the node's).
    pub fn disk(&self) -> &SimDisk {
        &self.disk
    }

    /// Open (or create) the log in `dir`, reading entries from the newest segment whose
    /// first entry is at or below `from_index + 1` (see [`first_segment_to_read`]).
    pub fn open(
        disk: &SimDisk,
        dir: &str,
        segment_bytes: usize,
        from_index: u64,
        plants: Plants,
    ) -> Result<(Log, Recovery)> {
        let mut log = Log {
            disk: disk.clone(),
            dir: dir.to_owned(),
            segment_bytes,
            segments: Vec::new(),
            hard_state: HardState::default(),
            mark: SyncMark::read(disk, dir)?,
            mark_slots: sync_mark::slot_names(dir),
            plants,
        };
        let mut names = disk.list(&format!("{dir}/wal-"));
        if names.is_empty() {
            log.mark.synced_len(dir, 0)?; // a mark naming a segment: it is gone
            log.new_segment(1, OpId::default())?;
            return Ok((log, Recovery::default()));
        }
        let mut headers = Vec::with_capacity(names.len());
        for name in &names {
            headers.push(log.read_header(name)?);
        }
        log.remove_before_reset(&mut names, &mut headers)?;
        check_unbroken(&names, &headers)?;
        let prevs: Vec<OpId> = headers.iter().map(|h| h.1).collect();
        let start = first_segment_to_read(&prevs, from_index);
        let recovery = match log.read_from(&names, &headers, start) {
            // A new leader's overwrite reached back into a skipped segment (it replaced
            // entries after the frontier there): read every segment instead.
            Err((_, true)) if start > 0 => {
                log.segments.clear();
                log.read_from(&names, &headers, 0).map_err(|(e, _)| e)?
            }
            result => result.map_err(|(e, _)| e)?,
        };
        log.hard_state = recovery.hard_state;
        Ok((log, recovery))
    }

    /// Read the segments `names` (with their `headers`) from segment `start` on, checking
    /// the ones before it; on failure, the error and whether an entry reached back before
    /// where reading started.
    fn read_from(
        &mut self,
        names: &[String],
        headers: &[(u64, OpId, HardState, bool)],
        start: usize,
    ) -> std::result::Result<Recovery, (Error, bool)> {
        let prevs: Vec<OpId> = headers.iter().map(|h| h.1).collect();
        let mut recovery = Recovery {
            prev: prevs[start],
            hard_state: headers[start].2,
            segments_skipped: start,
            ..Recovery::default()
        };
        for (i, name) in names.iter().enumerate() {
            let (seq, prev, ..) = headers[i];
            let newest = i + 1 == names.len();
            if i < start {
                let last = prevs[i + 1];
                let skipped =
                    SegmentInfo { seq, name: name.clone(), prev, last, bytes: 0, lowest: 0 };
                self.skip_segment(skipped)?;
                continue;
            }
            let synced = match newest {
                true => Some(self.mark.synced_len(&self.dir, seq).map_err(|e| (e, false))?),
                false => None,
            };
            let (bytes, lowest) = self
                .read_segment(name, synced, &mut recovery)
                .map_err(|e| (e, recovery.reached_back))?;
            // The segment's last entry if it holds one, else its header's prev. (Not "the
            // last entry if above prev": a new leader's overwrite may end at or below it.)
            let last = match recovery.entries.last() {
                Some(entry) if lowest != u64::MAX => entry.op_id,
                _ => prev,
            };
            let name = name.clone();
            self.segments.push(SegmentInfo { seq, name, prev, last, bytes, lowest });
        }
        Ok(recovery)
    }

    /// The newest reset supersedes every older segment: a crash cut the reset short before
    /// they were removed. They go, unread (their unsynced tails may be torn), durably.
    fn remove_before_reset(
        &self,
        names: &mut Vec<String>,
        headers: &mut Vec<(u64, OpId, HardState, bool)>,
    ) -> Result<()> {
        let reset = headers.iter().rposition(|h| h.3).unwrap_or(0);
        if reset == 0 {
            return Ok(()); // no reset, or nothing older than it
        }
        for name in names.drain(..reset) {
            self.disk.remove(&name)?;
        }
        headers.drain(..reset);
        self.disk.sync_dir(&self.dir)
    }

    /// Take a segment bootstrap skips: its entries are all at or below the frontier, so
    /// none is kept — but its records are checked all the same (a damaged segment is
    /// corruption whether or not this bootstrap needs it: peers or a later GC bound might).
    /// On failure, the error and whether an entry reached back before the segment's start
    /// (a new leader's overwrite of an older segment's entries: read them all instead).
    fn skip_segment(&mut self, mut segment: SegmentInfo) -> std::result::Result<(), (Error, bool)> {
        let mut scratch = Recovery { prev: segment.prev, ..Recovery::default() };
        (segment.bytes, segment.lowest) = if self.plants.contains(Plant::SkippedSegmentsUnchecked) {
            self.planted_unchecked_skip(&segment).map_err(|e| (e, false))?
        } else {
            let read = self.read_segment(&segment.name, None, &mut scratch);
            read.map_err(|e| (e, scratch.reached_back))?
        };
        self.segments.push(segment);
        Ok(())
    }

    /// The plant `skipped-segments-unchecked`: a skipped segment's length and lowest index
    /// without reading its records. (Code only a plant runs is named `planted_`: the
    /// torture-alone mutation measure leaves it out, `.ci/mutants`.)
    fn planted_unchecked_skip(&self, segment: &SegmentInfo) -> Result<(usize, u64)> {
        Ok((self.disk.read(&segment.name)?.len(), segment.prev.index + 1))
    }

    /// A segment's header (seq, prev, hard state), and whether a reset created it (its
    /// second record is the reset's mark, written and synced with the header).
    fn read_header(&self, name: &str) -> Result<(u64, OpId, HardState, bool)> {
        let bytes = self.disk.read(name)?;
        match Record::decode(&bytes, 0) {
            Ok((Record::Header { seq, .. }, _)) if *name != segment_name(&self.dir, seq) => {
                Err(corrupt(name, 0, &format!("its header names segment {seq}")))
            }
            Ok((Record::Header { seq, prev, hard_state }, next)) => {
                let reset = matches!(Record::decode(&bytes, next), Ok((Record::Snapshot(_), _)));
                Ok((seq, prev, hard_state, reset))
            }
            Ok(_) => Err(corrupt(name, 0, "the first record is not a segment header")),
            Err(e) => Err(corrupt(name, 0, &e.to_string())),
        }
    }

    /// Read one segment's records into `recovery`; returns the segment's valid length and
    /// the lowest entry index in it.
    /// `synced` is, for the newest segment, how far its sync mark says it is synced (a tail
    /// cut short beyond it is torn); `None` for a sealed segment (nothing may be cut).
    fn read_segment(
        &self,
        name: &str,
        synced: Option<usize>,
        recovery: &mut Recovery,
    ) -> Result<(usize, u64)> {
        let bytes = self.disk.read(name)?;
        let mut lowest = u64::MAX;
        if let Some(synced) = synced.filter(|&synced| bytes.len() < synced) {
            let why = format!("{} bytes, but its sync mark says {synced} were synced", bytes.len());
            return Err(corrupt(name, bytes.len(), &why));
        }
        let mut offset = 0;
        while offset < bytes.len() {
            match Record::decode(&bytes, offset) {
                Ok((record, next)) => {
                    if let Record::Entry(e) = &record {
                        lowest = lowest.min(e.op_id.index);
                    }
                    recovery.add(record, name, offset)?;
                    offset = next;
                }
                Err(RecordError::Incomplete) if synced.is_some_and(|synced| offset >= synced) => {
                    if self.plants.contains(Plant::TornHeaderIsCorruption)
                        && planted_cut_in_header(&bytes, offset)
                    {
                        return Err(corrupt(name, offset, "a record header cut short"));
                    }
                    self.disk.truncate(name, offset)?;
                    self.disk.sync(name)?;
                    let dropped_bytes = bytes.len() - offset;
                    let segment = name.to_owned();
                    recovery.truncated = Some(Truncation { segment, offset, dropped_bytes });
                    break;
                }
                Err(e) => return Err(corrupt(name, offset, &e.to_string())),
            }
        }
        Ok((offset, lowest))
    }

    /// Append entries, then the hard state if given; volatile until [`Log::sync`].
    pub fn append(&mut self, entries: &[LogEntry], hard_state: Option<HardState>) -> Result<()> {
        if self.active().bytes >= self.segment_bytes && !entries.is_empty() {
            self.roll()?;
        }
        // Each record's header and ids fit in 64 bytes; the hard state's record too.
        let mut bytes = Vec::with_capacity(64 * (entries.len() + 1) + data_len(entries));
        for entry in entries {
            Record::encode_entry(entry, &mut bytes);
        }
        if let Some(hs) = hard_state {
            Record::HardState(hs).encode(&mut bytes);
        }
        let active = self.segments.last_mut().expect("a log has a segment");
        self.disk.append(&active.name, &bytes)?;
        active.bytes += bytes.len();
        if let Some(first) = entries.first() {
            active.lowest = active.lowest.min(first.op_id.index);
        }
        if let Some(last) = entries.last() {
            active.last = last.op_id;
        }
        if let Some(hs) = hard_state {
            self.hard_state = hs;
        }
        Ok(())
    }

    /// Make everything appended durable, then record how far (the sync mark).
    pub fn sync(&mut self) -> Result<()> {
        let active = self.segments.last().expect("a log has a segment");
        self.disk.sync(&active.name)?;
        self.mark.write_in(&self.disk, &self.mark_slots, active.seq, active.bytes)
    }

    /// Remove the segments whose entries are all below `keep_index`, oldest first; never
    /// the active segment. Returns how many went.
    pub fn gc(&mut self, keep_index: u64) -> Result<usize> {
        let below = if self.plants.contains(Plant::GcTakesFirstNeededSegment) {
            planted_one_past(keep_index)
        } else {
            keep_index
        };
        let wholly_below = self.segments[..self.segments.len() - 1]
            .iter()
            .take_while(|s| s.last.index < below)
            .count();
        // The first segment kept must start below every entry kept (a newer segment's
        // overwrite may reach back into older ones): reading starts after its `prev`.
        // (None reaches below the oldest segment's `prev`: removing none always does.)
        let reaches_back = |from: usize| {
            let lowest_kept = self.segments[from..].iter().map(|s| s.lowest).min();
            lowest_kept.is_some_and(|lowest| lowest <= self.segments[from].prev.index)
        };
        let removable = (1..=wholly_below).rev().find(|&n| !reaches_back(n)).unwrap_or(0);
        self.remove_oldest(removable)?;
        Ok(removable)
    }

    /// Remove the `count` oldest segments, durably.
    fn remove_oldest(&mut self, count: usize) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        for segment in self.segments.drain(..count) {
            self.disk.remove(&segment.name)?;
        }
        self.disk.sync_dir(&self.dir)
    }

    /// Start the log over after a snapshot of the state at `snapshot`: a new segment whose
    /// header follows `snapshot` and holds `hard_state`, marked as a reset, made durable;
    /// then every older segment goes. A crash in between leaves both; opening finds the
    /// newest reset from the headers, removes the older segments unread, and reads on.
    pub fn reset(&mut self, snapshot: OpId, hard_state: HardState) -> Result<()> {
        self.hard_state = hard_state;
        let seq = self.active().seq + 1;
        // The header carries the hard state; the mark says the segment starts over.
        self.create_segment(seq, snapshot, &[Record::Snapshot(snapshot)])?;
        let older = self.segments.len() - 1;
        self.remove_oldest(older)
    }

    /// Seal the active segment and start the next, if the active one holds an entry
    /// (YugabyteDB's `Log::AsyncAllocateSegmentAndRollover`, after a memory flush): log GC
    /// can then free what the flush made durable without waiting for the segment to fill.
    pub fn roll_over(&mut self) -> Result<()> {
        match self.active().lowest != u64::MAX {
            true => self.roll(),
            false => Ok(()),
        }
    }

    /// The segments, oldest first.
    pub fn segments(&self) -> &[SegmentInfo] {
        &self.segments
    }

    fn active(&self) -> &SegmentInfo {
        self.segments.last().expect("a log has a segment")
    }

    /// Seal the active segment (sync) and start the next one.
    fn roll(&mut self) -> Result<()> {
        self.sync()?;
        let (seq, prev) = (self.active().seq + 1, self.active().last);
        self.new_segment(seq, prev)
    }

    /// Create segment `seq` durably: header synced, then the directory.
    fn new_segment(&mut self, seq: u64, prev: OpId) -> Result<()> {
        self.create_segment(seq, prev, &[])
    }

    /// Create segment `seq` durably with the records `first` after its header.
    fn create_segment(&mut self, seq: u64, prev: OpId, first: &[Record]) -> Result<()> {
        let name = segment_name(&self.dir, seq);
        let mut header = Vec::new();
        Record::Header { seq, prev, hard_state: self.hard_state }.encode(&mut header);
        first.iter().for_each(|record| record.encode(&mut header));
        self.disk.create(&name)?;
        let durable = self
            .disk
            .append(&name, &header)
            .and_then(|()| self.disk.sync(&name))
            .and_then(|()| self.disk.sync_dir(&self.dir));
        if let Err(e) = durable {
            // Never leave a segment without its header: opening would take it for
            // corruption. (Removing a file whose name never became durable is volatile
            // too, but a crash drops that name anyway.)
            let _ = self.disk.remove(&name);
            return Err(e);
        }
        let bytes = header.len();
        self.mark.write_in(&self.disk, &self.mark_slots, seq, bytes)?;
        let lowest = u64::MAX;
        self.segments.push(SegmentInfo { seq, name, prev, last: prev, bytes, lowest });
        Ok(())
    }
}

/// The payload bytes of `entries`.
fn data_len(entries: &[LogEntry]) -> usize {
    entries.iter().map(|e| e.data.len()).sum()
}

impl Recovery {
    /// Take one record read from `segment` at `offset`.
    fn add(&mut self, record: Record, segment: &str, offset: usize) -> Result<()> {
        match record {
            Record::Header { .. } if offset == 0 => {}
            Record::Header { .. } => return Err(corrupt(segment, offset, "a header mid-segment")),
            Record::HardState(hs) => self.hard_state = hs,
            Record::Snapshot(op_id) if offset > 0 => {
                // What came before is superseded by the snapshot's state.
                self.entries.clear();
                self.prev = op_id;
                self.snapshot = Some(op_id);
            }
            Record::Snapshot(_) => return Err(corrupt(segment, offset, "a reset mark first")),
            Record::Entry(entry) => {
                let last = self.entries.last().map_or(self.prev, |e| e.op_id);
                let index = entry.op_id.index;
                if index <= self.prev.index {
                    self.reached_back = true;
                    let why = format!(
                        "entry {} replaces one before where the log starts ({})",
                        entry.op_id, self.prev
                    );
                    return Err(corrupt(segment, offset, &why));
                }
                if index - 1 > last.index {
                    // (`index` is above `prev`'s, so at least 1: no overflow either way.)
                    let why = format!("entry {} follows {last}: the log has a gap", entry.op_id);
                    return Err(corrupt(segment, offset, &why));
                }
                // A new leader overwrote the tail from `index` on (Raft's log matching).
                self.entries.retain(|e| e.op_id.index < index);
                self.entries.push(entry);
            }
        }
        Ok(())
    }
}

/// The index of the segment bootstrap starts reading at: the newest one whose first entry
/// is at or below `from_index + 1` (every entry it skips is at or below `from_index`), or
/// the oldest when none qualifies. `prevs[i]` is the op id before segment `i`'s first entry.
/// (It cannot see a new leader's overwrite reaching back into older segments: reading
/// then finds an entry that "replaces one before where the log starts", and [`Log::open`]
/// reads every segment instead.)
pub fn first_segment_to_read(prevs: &[OpId], from_index: u64) -> usize {
    prevs.iter().rposition(|prev| prev.index <= from_index).unwrap_or(0)
}

/// The file of segment `seq` of the log in `dir`.
fn segment_name(dir: &str, seq: u64) -> String {
    format!("{dir}/wal-{seq:08}")
}

/// The segments (`names`, their `headers`) must follow one another: a segment missing
/// between two others is corruption. (Only the oldest go, by GC or a reset.)
fn check_unbroken(names: &[String], headers: &[(u64, OpId, HardState, bool)]) -> Result<()> {
    for (i, pair) in headers.windows(2).enumerate() {
        let (before, after) = (pair[0].0, pair[1].0);
        if before.checked_add(1) != Some(after) {
            let why = format!("segment {after} follows segment {before}: one between is gone");
            return Err(corrupt(&names[i + 1], 0, &why));
        }
    }
    Ok(())
}

fn corrupt(segment: &str, offset: usize, why: &str) -> Error {
    Error::LogCorruption { segment: segment.to_owned(), offset, reason: why.to_owned() }
}

/// The plant `torn-header-is-corruption`: the bytes from `offset` on are shorter than a
/// record header.
fn planted_cut_in_header(bytes: &[u8], offset: usize) -> bool {
    bytes.len() - offset < record::HEADER_BYTES
}

/// The plant `gc-takes-first-needed-segment`: log GC reaches one entry too far, to the
/// segment ending at `keep_index`.
fn planted_one_past(keep_index: u64) -> u64 {
    keep_index + 1
}
