//! # docsim: the simulator and its command line
//!
//! `docsim` drives the DocDB engine (`docsim-engine`) from the outside, through one path
//! for every group size: a group of one replica is the same executor, the same run and the
//! same checks as a group of three or five.
//!
//! - The **executor** ([`exec`]) carries out docscript commands on a group of tablet
//!   servers ([`world`]: madsim nodes with their own disks, RocksDB environments, skewed
//!   clocks, on madsim's network), each hosting a replica of every tablet. `docsim
//!   script FILE` ([`script`]) runs a file through it; a random run does too, so a run's
//!   recorded script is its exact reproducer.
//! - A **random run** ([`run`]) takes one seed: seeded streams draw the workload (the whole
//!   data model: documents, CQL tables with collections, jsonb and packed rows, Redis,
//!   TTLs; SELECTs read in pages, long scans), the schedule of flushes and compactions
//!   per node (each compaction's cutoff from the node's retention policy, its interval
//!   drawn per seed), power cuts and disk faults, and with replicas the nemesis
//!   (partitions, skew, loss, slow disks, membership).
//! - The **checker** ([`check`]) judges every event: replies and reads of every replica
//!   against the reference model (`docsim-models`) fed the committed log in order,
//!   refusals below each replica's cutoff, pages and long scans, each cutoff against the
//!   retention rule, re-reads after compactions, GC completeness,
//!   and with one replica every field of every restart (the durability book). The
//!   executor itself checks what needs no model: one history per group, acknowledged
//!   writes committed, convergence ([`exec::history`]). Failures are typed ([`failure`]).
//! - [`campaign`] runs many seeds on worker threads (sharded, merged reports), [`shrink`]
//!   delta-debugs a failing run to a short reproducer, [`report`] writes failure blocks
//!   and reproducers, [`metamorphic`] compares storage configurations, [`bench`](mod@bench)
//!   compares the engine with raw RocksDB.
//! - Wall-clock time is read in one place, `bench::Stopwatch` (a raw system call, since
//!   madsim answers the libc clock with simulated time): for benchmarks and for the
//!   reports' "where the time goes" ([`cost`]). It never steers a run or enters a trace.
//!
//! ## Layers
//!
//! Bottom up; a module uses only modules of lower layers (`sim/tests/tidy.rs` checks it,
//! in `use` lines and inline paths alike; test code may reach anything):
//!
//! 1. `failure`, `streams`, `bench`, `convert`
//! 2. `cost`
//! 3. `world`
//! 4. `exec`
//! 5. `script`, `check`
//! 6. `run`, `space`
//! 7. `metamorphic`, `shrink`, `report`
//! 8. `campaign`

pub mod bench;
pub mod campaign;
pub mod check;
pub mod convert;
pub mod cost;
pub mod exec;
pub mod failure;
pub mod metamorphic;
pub mod report;
pub mod run;
pub mod script;
pub mod shrink;
pub mod space;
pub mod streams;
pub mod world;

use std::path::Path;

/// Inside the madsim runtime `Instant::now` reads simulated time (madsim intercepts the
/// clock); this is the one place the simulation reads it.
#[allow(clippy::disallowed_methods)]
pub fn simulated_now() -> madsim::time::Instant {
    madsim::time::Instant::now()
}

/// Run a docscript text, printing its output to standard output; `plant` switches a
/// planted bug on. Returns whether the script ran without any error.
pub fn run_script_file(
    text: &str,
    plant: Option<docsim_engine::canary::Plant>,
) -> std::io::Result<bool> {
    use std::io::Write;
    let plants = docsim_engine::canary::Plants::of(plant);
    let run = script::run_script(text, plants, docsim_engine::StorageConfig::default());
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    out.write_all(run.output.as_bytes())?;
    out.flush()?;
    Ok(run.ok())
}

/// A scratch directory under the system temp dir, removed on drop. Its name comes from the
/// process id and a counter: nothing random.
pub struct ScratchDir(std::path::PathBuf);

impl ScratchDir {
    /// Create a fresh scratch directory.
    pub fn new() -> std::io::Result<ScratchDir> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("docsim-{}-{n}", std::process::id()));
        if path.exists() {
            std::fs::remove_dir_all(&path)?;
        }
        std::fs::create_dir_all(&path)?;
        Ok(ScratchDir(path))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
