//! # docsim: the simulator and its command line
//!
//! `docsim` drives the DocDB engine (`docsim-engine`) from the outside:
//!
//! - `docsim script FILE` runs docscript (golden tests, reproducers, bug reports) against
//!   real RocksDB tablets in a scratch directory of its own, so a script's output depends
//!   on nothing but the script.
//! - A **simulated run** ([`simulate`]) takes one seed: seeded streams per subsystem drive
//!   the workload, the madsim clock, flushes and compactions (of every file, or of a run
//!   of files), crashes, and disk faults (tears at any sector, I/O errors, a full disk,
//!   bit flips). Every op runs on the engine and on the independent model
//!   (`docsim-models`); every read must agree. `step` runs one op on both and compares
//!   typed results (errors by kind); `convert` translates data between the model's types
//!   and the engine's. The durability book (`durability`) is the simulator's own account
//!   of acknowledged and flushed op ids, of the write in doubt, and of what the disk did
//!   (its fault ledger, and the log files' framing as `log_files` reads it), from which it
//!   derives every field of what each restart must report. Reads cannot tell a
//!   compaction that keeps too much, so after every full compaction `gc_complete` checks
//!   each tablet's dump for what no read at or above the cutoff can need.
//! - [`cluster`] runs one document tablet as a Raft group of replicas on madsim's network
//!   (partitions, crashes, skew, loss, a liveness phase) and judges the whole history:
//!   `docsim cluster`.
//! - [`torture`] runs many seeds on worker threads (sharded, merged reports), [`shrink`]
//!   delta-debugs a failing run to a short reproducer, [`report`] writes failure blocks
//!   and reproducers, [`bench`](mod@bench) compares the engine with raw RocksDB.
//! - Wall-clock time is read in one place, `bench::Stopwatch` (a raw system call, since
//!   madsim answers the libc clock with simulated time): for benchmarks and for the
//!   reports' "where the time goes" by kind of step and by part of the simulator (engine,
//!   model, harness). It never steers a run or enters a trace.

pub mod bench;
pub mod cluster;
mod convert;
mod durability;
mod gc_complete;
mod log_files;
pub mod metamorphic;
pub mod report;
pub mod shrink;
pub mod simulate;
mod step;
pub mod torture;

use std::io::Write;
use std::path::Path;

/// Run a docscript text, printing its output to standard output. Tablets live in
/// `data_dir`, or in a fresh scratch directory removed afterwards; `plant` switches a
/// planted bug on. Returns whether the script ran without any error.
pub fn run_script_file(
    text: &str,
    data_dir: Option<&Path>,
    plant: Option<docsim_engine::canary::Plant>,
) -> std::io::Result<bool> {
    let scratch;
    let dir = match data_dir {
        Some(dir) => dir,
        None => {
            scratch = ScratchDir::new()?;
            scratch.path()
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let plants = docsim_engine::canary::Plants::of(plant);
    let outcome = docsim_engine::script::run_script(text, dir, plants, &mut out)?;
    out.flush()?;
    Ok(outcome.ok())
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
