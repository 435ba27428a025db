//! What a seed draws for its run, each part from its own ChaCha stream so that a new knob
//! in one never reshuffles another: the schedule of flushes and compactions, the power
//! cuts, the disk faults, and (with replicas) the nemesis — partitions, skew, loss, slow
//! disks, membership changes, clients. Swarm testing: each seed switches some kinds off
//! and draws its own rates, so different seeds stress different corners.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A swarm-testing rate in `lo..hi` (powers of two): an octave drawn uniformly, then a
/// value within it. Most seeds get a low rate, a few a high one (integer-only, so a seed
/// draws the same rates on every machine).
pub fn swarm_rate(rng: &mut ChaCha8Rng, lo: u32, hi: u32) -> u32 {
    assert!(lo.is_power_of_two() && hi.is_power_of_two() && lo < hi, "rate range {lo}..{hi}");
    let octaves = hi.trailing_zeros() - lo.trailing_zeros();
    let base = lo << rng.random_range(0..octaves);
    rng.random_range(base..2 * base)
}

/// The server-wide memstore limit of every node a seed draws (its own stream): none for
/// half the seeds, else 4 KiB to 64 KiB, small enough that the limit, not the schedule,
/// flushes most tablets of a busy run.
pub fn memstore_limit(mut rng: ChaCha8Rng) -> Option<usize> {
    match rng.random_range(0..2) {
        0 => None,
        _ => Some([4, 8, 16, 64][rng.random_range(0..4)] << 10),
    }
}

/// How often the run flushes and compacts (each node on its own draws). A compaction's
/// history cutoff is its node's retention policy's (`Spans::retention_us`).
pub struct Schedule {
    pub rng: ChaCha8Rng,
    pub flush_permille: u32,
    pub compact_permille: u32,
    pub minor_percent: u32,
    /// Of minor compactions, the share (in %) that take a run of files, not all of them.
    pub run_percent: u32,
}

/// A flush or compaction the schedule drew.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    Flush,
    /// `files`: a run of the document tablet's files (first, last), drawn from `count`.
    Compact {
        minor: bool,
        files: Option<(usize, usize)>,
    },
}

impl Schedule {
    pub fn new(mut rng: ChaCha8Rng) -> Schedule {
        Schedule {
            flush_permille: swarm_rate(&mut rng, 2, 64),
            compact_permille: swarm_rate(&mut rng, 1, 32),
            minor_percent: rng.random_range(0..60),
            run_percent: rng.random_range(0..100),
            rng,
        }
    }

    /// A flush, a compaction (a minor one may take a run of the `doc_files` SST files of
    /// the document tablet), or nothing.
    pub fn next(&mut self, doc_files: impl FnOnce() -> usize) -> Option<Work> {
        let roll = self.rng.random_range(0..1000u32);
        if roll < self.flush_permille {
            return Some(Work::Flush);
        }
        if roll < self.flush_permille + self.compact_permille {
            let minor = self.rng.random_range(0..100) < self.minor_percent;
            let run = minor && self.rng.random_range(0..100) < self.run_percent;
            let doc_files = if run { doc_files() } else { 0 };
            let files = (doc_files > 0).then(|| {
                let first = self.rng.random_range(0..doc_files);
                (first, self.rng.random_range(first..doc_files))
            });
            return Some(Work::Compact { minor, files });
        }
        None
    }
}

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "flush={}\u{2030} compact={}\u{2030} minor={}% runs={}%",
            self.flush_permille, self.compact_permille, self.minor_percent, self.run_percent
        )
    }
}

/// Power cuts: how often, and where. Drawn from its own stream.
pub struct Crashes {
    pub rng: ChaCha8Rng,
    pub per_10k: u32,
}

/// Where a power cut the crash stream drew falls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutAt {
    /// At once.
    Now,
    /// Armed at a point of the next write (or other replica work).
    Armed(docsim_engine::CrashPoint),
    /// Armed after the next flush, then a flush.
    AfterFlush,
    /// A flush, then at once (after its log GC).
    AfterLogGc,
    /// A full compaction, then at once.
    AfterCompaction,
    /// Armed inside the next flush, after its k-th disk operation, then a flush.
    InFlush(u32),
    /// Armed inside the next full compaction, after its k-th disk operation, then one.
    InCompaction(u32),
}

impl Crashes {
    pub fn new(mut rng: ChaCha8Rng) -> Crashes {
        // One seed in eight runs without crashes (swarm testing: a feature switched off).
        let per_10k = if rng.random_range(0..8u32) == 0 { 0 } else { swarm_rate(&mut rng, 4, 64) };
        Crashes { per_10k, rng }
    }

    /// A power cut and whether it tears, or nothing. `points`: the points it may be
    /// armed at (a group of one: the write's; with replicas: every replica moment).
    pub fn next(&mut self, points: &[docsim_engine::CrashPoint]) -> Option<(CutAt, bool)> {
        if self.rng.random_range(0..10_000u32) >= self.per_10k {
            return None;
        }
        let torn = self.rng.random_range(0..2u32) == 1;
        let at = match self.rng.random_range(0..7u32) {
            0 => CutAt::Now,
            1..=3 => CutAt::Armed(points[self.rng.random_range(0..points.len())]),
            4 => CutAt::AfterFlush,
            5 => CutAt::AfterLogGc,
            _ => CutAt::AfterCompaction,
        };
        Some((at, torn))
    }
}

/// Disk faults beyond power cuts, drawn from their own stream by swarm: one seed in four
/// injects none, the others a few kinds at a rate of their own.
pub struct DiskFaults {
    pub rng: ChaCha8Rng,
    /// Per 10k steps, the chance of arming an I/O fault for the next write.
    pub io_per_10k: u32,
    /// The I/O faults this seed arms.
    pub io_kinds: Vec<IoKind>,
    /// A torn crash keeps its tail up to a sector boundary in `0..=max_sector`.
    pub max_sector: u32,
    /// The chance (in %) that a power cut comes with a bit flip in synced log data.
    pub flip_percent: u32,
    /// Whether a power cut the crash stream draws torn tears (else it is a clean cut).
    pub tears: bool,
}

#[derive(Clone, Copy, Debug)]
pub enum IoKind {
    Append,
    Sync,
    Full,
}

impl DiskFaults {
    pub fn new(mut rng: ChaCha8Rng) -> DiskFaults {
        let on = rng.random_range(0..4u32) != 0;
        let io_on = on && rng.random_range(0..3u32) != 0;
        let io_per_10k = if io_on { swarm_rate(&mut rng, 4, 128) } else { 0 };
        let mut io_kinds: Vec<IoKind> = [IoKind::Append, IoKind::Sync, IoKind::Full]
            .into_iter()
            .filter(|_| rng.random_range(0..2u32) == 1)
            .collect();
        if io_kinds.is_empty() {
            io_kinds.push([IoKind::Append, IoKind::Sync, IoKind::Full][rng.random_range(0..3)]);
        }
        let max_sector = if on { rng.random_range(0..8) } else { 0 };
        let flip_on = on && rng.random_range(0..4u32) == 0;
        let flip_percent = if flip_on { rng.random_range(1..30) } else { 0 };
        DiskFaults { rng, io_per_10k, io_kinds, max_sector, flip_percent, tears: true }
    }

    /// No fault whose effect depends on the log's bytes (the draws above stay, so every
    /// other stream is unchanged).
    pub fn placed_by_bytes_off(&mut self) {
        (self.io_per_10k, self.flip_percent, self.tears) = (0, 0, false);
    }

    /// The sector boundary a torn crash keeps.
    pub fn tear_sector(&mut self) -> u32 {
        self.rng.random_range(0..=self.max_sector)
    }

    /// An I/O fault for the next write, or nothing.
    pub fn next_io(&mut self) -> Option<docsim_engine::script::FaultCommand> {
        use docsim_engine::disk::IoTarget;
        use docsim_engine::script::FaultCommand;
        if self.rng.random_range(0..10_000u32) >= self.io_per_10k {
            return None;
        }
        Some(match self.io_kinds[self.rng.random_range(0..self.io_kinds.len())] {
            IoKind::Append => FaultCommand::IoError(IoTarget::NextAppend),
            IoKind::Sync => FaultCommand::IoError(IoTarget::NextSync),
            // Little room: most writes hit it, some fit and the fault is lifted unfired.
            IoKind::Full => FaultCommand::DiskFull { free_bytes: self.rng.random_range(0..200) },
        })
    }

    /// A bit flip in synced data of some log file of `disk` (weighted by synced bytes),
    /// or nothing.
    pub fn flip(
        &mut self,
        disk: &docsim_engine::disk::SimDisk,
    ) -> Option<docsim_engine::script::FaultCommand> {
        if self.rng.random_range(0..100) >= self.flip_percent {
            return None;
        }
        let files: Vec<(String, usize)> = disk
            .list("")
            .into_iter()
            .filter(|name| name.contains("/log/"))
            .filter_map(|name| disk.synced_len(&name).map(|len| (name, len)))
            .filter(|(_, len)| *len > 0)
            .collect();
        flip_in(&mut self.rng, files)
    }
}

/// A bit flip at a byte of `files` (each a name and its synced length), drawn with every
/// synced byte equally likely, or nothing when they hold none.
fn flip_in(
    rng: &mut ChaCha8Rng,
    files: Vec<(String, usize)>,
) -> Option<docsim_engine::script::FaultCommand> {
    let total: usize = files.iter().map(|(_, len)| len).sum();
    if total == 0 {
        return None;
    }
    let (mut at, bit) = (rng.random_range(0..total), rng.random_range(0..8u8));
    for (file, len) in files {
        if at < len {
            return Some(docsim_engine::script::FaultCommand::Flip { file, offset: at, bit });
        }
        at -= len;
    }
    unreachable!("`at` is below the total")
}

impl std::fmt::Display for DiskFaults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "io={}/10k {:?} tear<={} flip={}%",
            self.io_per_10k, self.io_kinds, self.max_sector, self.flip_percent
        )
    }
}

/// Faults in RocksDB's own files, drawn by swarm from a stream of their own (so the
/// other streams draw what they drew before RocksDB's files reached the disk): one seed
/// in four injects none. Each changes a fault the other streams drew:
/// - a power cut drawn after a flush or a compaction moves inside it (`in-flush op=<k>`,
///   `in-compaction op=<k>`, k drawn here), at `in_job_percent`;
/// - an I/O fault drawn for the next log write targets RocksDB's next SST append or sync,
///   or MANIFEST append instead, at `io_percent`;
/// - a restart (a group of one, a tablet whose log GC ran) finds the tablet's RocksDB
///   files lost, at `lose_percent`;
/// - a restart (a group of one) finds a bit of a synced SST file flipped, at
///   `flip_percent`.
pub struct RocksFaults {
    pub rng: ChaCha8Rng,
    pub in_job_percent: u32,
    pub io_percent: u32,
    pub lose_percent: u32,
    pub flip_percent: u32,
}

impl RocksFaults {
    pub fn new(mut rng: ChaCha8Rng) -> RocksFaults {
        let on = rng.random_range(0..4u32) != 0;
        let mut chance =
            |most: u32| if on && rng.random_bool(0.75) { rng.random_range(1..=most) } else { 0 };
        let (in_job_percent, io_percent, lose_percent) = (chance(80), chance(80), chance(20));
        let flip_percent = chance(20);
        RocksFaults { rng, in_job_percent, io_percent, lose_percent, flip_percent }
    }

    /// None of them (the metamorphic comparison of row layouts).
    pub fn off(&mut self) {
        (self.in_job_percent, self.io_percent, self.lose_percent) = (0, 0, 0);
        self.flip_percent = 0;
    }

    /// A bit flip in synced data of one of `disk`'s SST files (weighted by synced bytes),
    /// or nothing.
    pub fn sst_flip(
        &mut self,
        disk: &docsim_engine::disk::SimDisk,
    ) -> Option<docsim_engine::script::FaultCommand> {
        if self.rng.random_range(0..100) >= self.flip_percent {
            return None;
        }
        // Each SST file named as `<dir>/sst:<i>`: its place, not RocksDB's number.
        let mut files: Vec<(String, usize)> = Vec::new();
        for dir in disk.children("") {
            let ssts = disk.children(&dir).into_iter().filter(|f| f.ends_with(".sst"));
            for (i, file) in ssts.enumerate() {
                let len = disk.synced_len(&format!("{dir}/{file}")).unwrap_or(0);
                files.extend((len > 0).then(|| (format!("{dir}/sst:{i}"), len)));
            }
        }
        flip_in(&mut self.rng, files)
    }

    /// `at` (a power cut the crash stream drew), or the same cut moved inside its job.
    /// A flush of one tablet makes 7 disk operations (its SST file's create, append and
    /// sync, the directory's sync, two MANIFEST records and the MANIFEST's sync); a
    /// compaction its flush's, as many again and its inputs' removals; more tablets, more.
    pub fn inside(&mut self, at: CutAt) -> CutAt {
        if !matches!(at, CutAt::AfterFlush | CutAt::AfterCompaction)
            || self.rng.random_range(0..100) >= self.in_job_percent
        {
            return at;
        }
        match at {
            CutAt::AfterFlush => CutAt::InFlush(self.rng.random_range(1..=16)),
            _ => CutAt::InCompaction(self.rng.random_range(1..=24)),
        }
    }

    /// `fault` (an I/O fault drawn for the next log write), or one in RocksDB's files.
    pub fn io(
        &mut self,
        fault: docsim_engine::script::FaultCommand,
    ) -> docsim_engine::script::FaultCommand {
        use docsim_engine::disk::IoTarget;
        use docsim_engine::script::FaultCommand;
        if self.rng.random_range(0..100) >= self.io_percent {
            return fault;
        }
        let targets = [IoTarget::NextSstWrite, IoTarget::NextSstSync, IoTarget::NextManifestWrite];
        FaultCommand::IoError(targets[self.rng.random_range(0..targets.len())])
    }

    /// The RocksDB files of one of `tablets` (disk directories whose Raft log starts
    /// above entry 1) lost, or nothing.
    pub fn lose(&mut self, tablets: &[String]) -> Option<docsim_engine::script::FaultCommand> {
        if tablets.is_empty() || self.rng.random_range(0..100) >= self.lose_percent {
            return None;
        }
        let dir = tablets[self.rng.random_range(0..tablets.len())].clone();
        Some(docsim_engine::script::FaultCommand::LoseRocksDb { dir })
    }
}

impl std::fmt::Display for RocksFaults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (j, i, l) = (self.in_job_percent, self.io_percent, self.lose_percent);
        write!(f, "rocksdb: in-job={j}% io={i}% lose={l}% flip={}%", self.flip_percent)
    }
}

/// The nemesis's knobs (a replicated run): how often a fault starts, how many at once,
/// message loss, clock skew, clients, writes, membership changes.
#[derive(Clone, Copy, Debug)]
pub struct Nemesis {
    pub fault_percent: u32,
    pub loss_percent: u32,
    pub max_skew_us: u64,
    /// Writes in flight at once (clients).
    pub clients: usize,
    /// Percent of generated writes sent (the others become reads: read-heavy seeds).
    pub write_percent: u32,
    /// Faults in force at once.
    pub max_faults: usize,
    /// Whether the nemesis changes the groups' membership.
    pub membership: bool,
}

impl Nemesis {
    pub fn draw(rng: &mut ChaCha8Rng, faults: bool) -> Nemesis {
        Nemesis {
            fault_percent: if faults { [2, 5, 10, 20][rng.random_range(0..4)] } else { 0 },
            loss_percent: if faults { [0, 0, 1, 5][rng.random_range(0..4)] } else { 0 },
            max_skew_us: if faults {
                [0, 5_000, 50_000, 500_000][rng.random_range(0..4)]
            } else {
                0
            },
            clients: [1, 2, 4, 8][rng.random_range(0..4)],
            write_percent: [100, 50, 10][rng.random_range(0..3)],
            max_faults: rng.random_range(1..=2),
            membership: faults && rng.random_bool(0.5),
        }
    }
}

impl std::fmt::Display for Nemesis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "nemesis={}% loss={}% max-skew={}us clients={} writes={}% max-faults={} membership={}",
            self.fault_percent,
            self.loss_percent,
            self.max_skew_us,
            self.clients,
            self.write_percent,
            self.max_faults,
            self.membership
        )
    }
}

/// History retention and the reads that span it, drawn per seed from their own stream:
/// the retention interval every node's compactions keep history for, how often a SELECT
/// is read in pages (and how big), how often a paged read is a long scan holding its read
/// point, and how often a step continues a paged read instead of starting something new.
pub struct Spans {
    pub rng: ChaCha8Rng,
    pub retention_us: u64,
    pub page_percent: u32,
    pub hold_percent: u32,
    pub next_percent: u32,
    pub page_rows_max: usize,
    /// Snapshots of a table taken (or deleted) per 1,000 client ops.
    pub snapshot_permille: u32,
    /// Snapshots named so far (each run's names are `s0`, `s1`, ...).
    snapshots_named: usize,
}

/// A step of snapshots and restores the run takes.
pub enum SnapshotStep {
    /// Take snapshot `id` of a table (or, `true`, delete it).
    Take(String, String, bool),
    /// Restore a table to its snapshot `id`.
    Restore(String, String),
    /// Restore a table to this many microseconds before now.
    RestoreBack(String, u64),
}

impl Spans {
    pub fn new(mut rng: ChaCha8Rng) -> Spans {
        // Mostly 100 us to 90 ms, spread evenly over the scales (a run spans seconds of
        // simulated time and TTLs of milliseconds: compactions then collect history and
        // reads fall below cutoffs); now and then YugabyteDB's default, 900 s, under which
        // nothing is ever collected.
        let retention_us = match rng.random_range(0..10) {
            0 => docsim_engine::retention::DEFAULT_INTERVAL_US,
            _ => {
                let scale = [100, 300, 1_000, 3_000, 10_000, 30_000][rng.random_range(0..6)];
                rng.random_range(scale..=3 * scale)
            }
        };
        Spans {
            retention_us,
            page_percent: [0, 10, 30, 60][rng.random_range(0..4)],
            hold_percent: rng.random_range(0..=100),
            next_percent: rng.random_range(10..60),
            page_rows_max: rng.random_range(1..=4),
            snapshot_permille: [0, 5, 20][rng.random_range(0..3)],
            snapshots_named: 0,
            rng,
        }
    }

    /// A snapshot to take of one of `tables`, or now and then one of `taken` (table, id)
    /// to delete or restore, or a restore to a recent time; or nothing.
    pub fn snapshot(
        &mut self,
        tables: &[String],
        taken: &[(String, String)],
    ) -> Option<SnapshotStep> {
        if tables.is_empty() || self.rng.random_range(0..1000) >= self.snapshot_permille {
            return None;
        }
        if !taken.is_empty() && self.rng.random_range(0..100) < 30 {
            let (table, id) = taken[self.rng.random_range(0..taken.len())].clone();
            return Some(SnapshotStep::Take(table, id, true));
        }
        let table = tables[self.rng.random_range(0..tables.len())].clone();
        match self.rng.random_range(0..100) {
            0..25 if !taken.is_empty() => {
                let (table, id) = taken[self.rng.random_range(0..taken.len())].clone();
                return Some(SnapshotStep::Restore(table, id));
            }
            25..50 => {
                // Back by 1 µs to ~1 s, log-uniformly: within the history kept, or not.
                let back_us = 1u64 << self.rng.random_range(0..20);
                let back_us = back_us + self.rng.random_range(0..back_us);
                return Some(SnapshotStep::RestoreBack(table, back_us));
            }
            _ => {}
        }
        self.snapshots_named += 1;
        Some(SnapshotStep::Take(table, format!("s{}", self.snapshots_named - 1), false))
    }

    /// Whether a SELECT is read in pages: its page size and whether it holds its read
    /// point (a long scan), or `None`.
    pub fn paged(&mut self) -> Option<(usize, bool)> {
        if self.rng.random_range(0..100) >= self.page_percent {
            return None;
        }
        let size = self.rng.random_range(1..=self.page_rows_max);
        Some((size, self.rng.random_range(0..100) < self.hold_percent))
    }

    /// Whether this step continues one of `open` paged reads: which.
    pub fn next_page(&mut self, open: usize) -> Option<usize> {
        if open == 0 || self.rng.random_range(0..100) >= self.next_percent {
            return None;
        }
        Some(self.rng.random_range(0..open))
    }
}

impl std::fmt::Display for Spans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "retention={}us pages={}% hold={}% next={}% page_rows<={} snapshots={}\u{2030}",
            self.retention_us,
            self.page_percent,
            self.hold_percent,
            self.next_percent,
            self.page_rows_max,
            self.snapshot_permille
        )
    }
}
