//! Many seeds: `docsim torture`, for every replica count. Seeds run on worker threads
//! (each with its own madsim runtime); the summary is the same whatever the thread count.

use crate::bench::Stopwatch;
use crate::report;
use crate::run::{run, RunConfig, RunOutcome};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Which seeds to run.
#[derive(Clone, Debug)]
pub struct Campaign {
    /// First seed.
    pub first: u64,
    /// One past the last seed (`None`: until the time budget runs out).
    pub end: Option<u64>,
    /// Real-time budget in seconds.
    pub duration_s: Option<f64>,
    /// Worker threads.
    pub jobs: usize,
    /// Run only seeds with `seed % n == i`.
    pub shard: (u64, u64),
    /// The per-seed configuration (its seed is replaced).
    pub template: RunConfig,
    /// Draw each seed's storage configuration by swarm (`metamorphic::drawn`), instead of
    /// the template's.
    pub draw_storage: bool,
    /// Where failing seeds' reports go.
    pub reports_dir: std::path::PathBuf,
}

/// Set by Ctrl-C during a campaign ([`interrupt_on_ctrl_c`]).
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
    // A second Ctrl-C kills as usual. SAFETY: signal() is async-signal-safe.
    unsafe { libc::signal(libc::SIGINT, libc::SIG_DFL) };
}

/// From now on, Ctrl-C stops the campaign: the workers finish the seeds they run and take
/// no more, and the campaign reports the seeds finished. A second Ctrl-C kills it.
pub fn interrupt_on_ctrl_c() {
    let handler = on_sigint as extern "C" fn(libc::c_int);
    // SAFETY: the handler only stores an atomic and restores the default action.
    unsafe { libc::signal(libc::SIGINT, handler as libc::sighandler_t) };
}

/// Whether Ctrl-C stopped the campaign.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// How many seeds of `first..end` shard `i/n` holds (those with `seed % n == i`).
pub fn seeds_in_shard(first: u64, end: u64, (i, n): (u64, u64)) -> u64 {
    let below = |x: u64| if x > i { (x - i).div_ceil(n) } else { 0 };
    below(end) - below(first)
}

/// What is left of a campaign: `done/total` and the time left at the pace so far, or the
/// time left of its budget.
fn left(campaign: &Campaign, done: usize, elapsed_s: f64) -> String {
    match (campaign.end, campaign.duration_s) {
        (Some(end), _) => {
            let total = seeds_in_shard(campaign.first, end, campaign.shard);
            let pace = elapsed_s / done.max(1) as f64;
            let eta = (total.saturating_sub(done as u64) as f64 * pace).round();
            format!("{done}/{total}  ETA {}m{:02}s", eta as u64 / 60, eta as u64 % 60)
        }
        (None, d) => format!("{done}  left {:.0}s", (d.unwrap_or(0.0) - elapsed_s).max(0.0)),
    }
}

/// Print a progress line to stderr every second until the workers finish; stop them when
/// the time budget runs out.
fn watch_progress(
    workers: &[std::thread::JoinHandle<()>],
    (campaign, watch): (&Campaign, &Stopwatch),
    stop: &std::sync::atomic::AtomicBool,
    done: &AtomicUsize,
    results: &Mutex<Vec<RunOutcome>>,
) {
    use std::io::IsTerminal;
    // A live line on a terminal; a plain line every 10 s in logs.
    let (terminal, every_s) =
        if std::io::stderr().is_terminal() { (true, 1.0) } else { (false, 10.0) };
    let mut last_print = 0.0;
    while workers.iter().any(|w| !w.is_finished()) {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let elapsed = watch.seconds();
        if campaign.duration_s.is_some_and(|d| elapsed >= d) || interrupted() {
            stop.store(true, Ordering::Relaxed);
        }
        if elapsed - last_print >= every_s {
            last_print = elapsed;
            let (ops, failures) = {
                let r = results.lock().expect("results lock");
                (
                    r.iter().map(|o| o.ops).sum::<usize>(),
                    r.iter().filter(|o| o.failure.is_some()).count(),
                )
            };
            let line = format!(
                "seeds {}  ops {:>9}  failures {:>3}  {:>8.0} ops/s  {:>6.1}s",
                left(campaign, done.load(Ordering::Relaxed), elapsed),
                ops,
                failures,
                ops as f64 / elapsed,
                elapsed
            );
            if terminal {
                eprint!("\r{line}");
            } else {
                eprintln!("{line}");
            }
        }
    }
}

/// Run a campaign, printing a progress line to stderr; the report holds every run.
pub fn torture(campaign: &Campaign) -> docsim_reports::CampaignReport {
    let watch = Stopwatch::start();
    let next = Arc::new(AtomicU64::new(campaign.first));
    let done = Arc::new(AtomicUsize::new(0));
    let results: Arc<Mutex<Vec<RunOutcome>>> = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let workers: Vec<_> = (0..campaign.jobs.max(1))
        .map(|_| {
            let (next, done, results, stop) =
                (next.clone(), done.clone(), results.clone(), stop.clone());
            let campaign = campaign.clone();
            std::thread::spawn(move || loop {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if campaign.end.is_some_and(|end| seed >= end) {
                    return;
                }
                if seed % campaign.shard.1 != campaign.shard.0 {
                    continue;
                }
                let storage = match campaign.draw_storage {
                    true => crate::metamorphic::drawn(seed),
                    false => campaign.template.storage,
                };
                let config = RunConfig { seed, storage, ..campaign.template.clone() };
                let outcome = run(&config);
                if outcome.failure.is_some() {
                    let _ = report::write_run_report(&campaign.reports_dir, &outcome, &config);
                }
                results.lock().expect("results lock").push(outcome);
                done.fetch_add(1, Ordering::Relaxed);
            })
        })
        .collect();
    watch_progress(&workers, (campaign, &watch), &stop, &done, &results);
    workers.into_iter().for_each(|w| w.join().expect("worker thread"));
    eprintln!();
    let mut outcomes = Arc::try_unwrap(results).expect("workers done").into_inner().expect("lock");
    outcomes.sort_by_key(|o| o.seed);
    docsim_reports::CampaignReport {
        commit: report::COMMIT.into(),
        plant: campaign.template.plant.map(|p| p.name().into()),
        shards: vec![format!("{}/{}", campaign.shard.0, campaign.shard.1)],
        known_probes: docsim_engine::probe::KNOWN.iter().map(|p| p.to_string()).collect(),
        seconds: watch.seconds(),
        runs: outcomes.iter().map(|o| report::run_report(o, Some(&campaign.reports_dir))).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::seeds_in_shard;

    /// A shard's seeds are counted exactly (the progress line's total, and the refusal of
    /// a shard holding none).
    #[test]
    fn a_shard_holds_the_seeds_of_its_residue() {
        for (first, end, n) in [(0, 10, 3), (5, 6, 2), (7, 100, 7), (0, 1, 1), (3, 3, 2)] {
            for i in 0..n {
                let want = (first..end).filter(|s| s % n == i).count() as u64;
                assert_eq!(seeds_in_shard(first, end, (i, n)), want, "{first}..{end} {i}/{n}");
            }
        }
        assert_eq!(seeds_in_shard(0, u64::MAX, (0, 1)), u64::MAX);
    }
}
