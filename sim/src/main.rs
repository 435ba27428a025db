//! The `docsim` command line.

use clap::{Args, Parser, Subcommand};
use docsim::campaign::{torture, Campaign};
use docsim::report::{self, COMMIT};
use docsim::run::{run, RunConfig};
use docsim_engine::canary::Plant;
use docsim_workloads::Profile;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The engine's write and read paths allocate small objects at a high rate; glibc's
/// allocator was a quarter of a benchmark's time (YugabyteDB links tcmalloc for the same
/// reason). Allocation addresses steer nothing, so determinism is unaffected. See
/// [`never_purge`] for the one setting that keeps the allocator off madsim's clock.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's option `purge_delay`: its position in `mi_option_e` (`mimalloc.h` of the
/// mimalloc v3 that libmimalloc-sys 0.1.49 builds; the crate exports no constant for it).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
}

/// Never hand freed memory back to the OS. mimalloc schedules those purges by reading
/// `clock_gettime`, which madsim answers with simulated time inside a simulation — and
/// from inside a free, where madsim's own context may be borrowed (a panic in an
/// `extern "C"` function: an abort). With purging off, an allocation never reads a clock;
/// freed memory is still reused.
fn never_purge() {
    // SAFETY: plain option setters of the linked mimalloc, called before any thread starts.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    // SAFETY: as above.
    assert_eq!(unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) }, -1, "mimalloc purge_delay");
}

#[derive(Parser)]
#[command(
    name = "docsim",
    version,
    about = "Deterministic simulation testbed for DocDB on RocksDB"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct RunArgs {
    /// The seed: decimal, 0x-hex, or a git commit hash.
    #[arg(long, value_parser = parse_seed)]
    seed: u64,
    #[command(flatten)]
    shape: ShapeArgs,
}

#[derive(Args, Clone)]
struct ShapeArgs {
    /// Replicas per tablet: 1, 3 or 5 (every tablet a Raft group of that size).
    #[arg(long, default_value_t = 1, value_parser = parse_replicas)]
    replicas: usize,
    /// Workload operations per seed.
    #[arg(long, default_value_t = 2_000)]
    ops: usize,
    /// Force a profile: nested, cql, redis, ttl, time-travel (default: the seed picks).
    #[arg(long, value_parser = parse_profile)]
    profile: Option<Profile>,
    /// Switch on a planted bug (testing the tester).
    #[arg(long, value_parser = parse_plant)]
    plant: Option<Plant>,
    /// Where failing runs write `<seed>/repro.ds`.
    #[arg(long, default_value = "reports/runs")]
    reports: PathBuf,
    /// Storage configuration: its index in the metamorphic set (`run --metamorphic`
    /// lists them; 0 is RocksDB's defaults with rows as declared). Default: 0 for `run`;
    /// `torture` draws one per seed. With replicas, the other nodes draw their RocksDB
    /// options.
    #[arg(long, value_parser = parse_storage)]
    config: Option<usize>,
    /// No disk fault placed by where bytes lie in the log (I/O errors, full disks, torn
    /// crashes, bit flips): how `run --metamorphic` compares row layouts.
    #[arg(long)]
    no_byte_faults: bool,
    /// No nemesis (replicated runs: no partitions, skew, loss, slow disks, membership).
    #[arg(long)]
    no_faults: bool,
    /// RocksDB's files in RocksDB's in-memory environment (durable the moment they are
    /// written) instead of on the simulated disk: to measure what the disk costs.
    #[arg(long)]
    rocks_in_memory: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Run a docscript file (`-` reads standard input) and print its output.
    Script {
        /// The script.
        file: PathBuf,
        /// Switch on a planted bug (to replay a canary's reproducer).
        #[arg(long, value_parser = parse_plant)]
        plant: Option<Plant>,
        /// Write the script's output to FILE.out (its snapshot) instead of printing it.
        #[arg(long, conflicts_with = "check")]
        bless: bool,
        /// Compare the script's output with FILE.out: exit 1 and the first difference if
        /// they differ.
        #[arg(long)]
        check: bool,
    },
    /// Run one seed: a banner, then PASS or a failure block and a reproducer on disk.
    Run {
        #[command(flatten)]
        run: RunArgs,
        /// Run the seed twice in two processes and compare their traces step by step.
        #[arg(long)]
        check_determinism: bool,
        /// Run the seed under every storage configuration of the metamorphic set (block
        /// size, bloom filters, snappy, memtable size, packed rows, entities): the traces
        /// must be identical.
        #[arg(long)]
        metamorphic: bool,
        /// Print every trace line and the trace hash (used by --check-determinism).
        #[arg(long, hide = true)]
        emit_trace: bool,
    },
    /// Re-run a seed printing its full trace.
    Replay {
        #[command(flatten)]
        run: RunArgs,
    },
    /// Run many seeds: a progress line, a summary, non-zero exit on any failure.
    #[command(alias = "cluster")]
    Torture {
        /// Seeds `A..B` (B excluded); with --duration, only A counts.
        #[arg(long, value_parser = parse_range)]
        seeds: Option<(u64, u64)>,
        /// Run for this long instead (`90s`, `10m`, `1h`).
        #[arg(long, value_parser = parse_duration)]
        duration: Option<f64>,
        /// Worker threads (1 to 256).
        #[arg(long, default_value_t = 1, value_parser = parse_jobs)]
        jobs: usize,
        /// Run shard `i/n`: the seeds with `seed % n == i`.
        #[arg(long, value_parser = parse_shard, default_value = "0/1")]
        shard: (u64, u64),
        /// Write the campaign report (JSON, Markdown, HTML, JUnit XML) into this directory.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Fail the campaign if some coverage probe was never hit (CI's smoke must reach
        /// every rare path it claims to test).
        #[arg(long)]
        require_all_probes: bool,
        #[command(flatten)]
        shape: ShapeArgs,
    },
    /// Campaign reports: `docsim report merge A.json B.json ... --out DIR`, or
    /// `docsim report diff BASE.json NEW.json` (exit 1 if NEW has a failure signature BASE
    /// has not).
    Report {
        /// `merge` or `diff`.
        action: String,
        /// Shard reports (`campaign.json`).
        files: Vec<PathBuf>,
        /// Where to write the merged report.
        #[arg(long, default_value = "reports/merged")]
        out: PathBuf,
    },
    /// Shrink a failed run (`reports/runs/<seed>/`) to a minimal reproducer `shrunk.ds`.
    Shrink {
        /// The run's report directory.
        dir: PathBuf,
    },
    /// Benchmarks, compared with raw RocksDB doing the same work in the same run.
    Bench {
        /// What to measure: `engine` (CQL row writes and reads), `restart` (crash, then
        /// a restart replaying `--entries` log entries; `--rounds` times) or `ttl` (entries
        /// stored under TTL workloads over `--hours` simulated hours, by GC rules) or
        /// `cache` (a hot set's block-cache hit rate during large scans; `--rounds` scans)
        /// or `bloom` (SST files a point read looks into; `--rows` rows in 16 files) or
        /// `memstore` (the memstore limit over 16 tablets: flushes, each tablet's retained
        /// log against its bound; `--rows` inserts) or `prune` (a time-series range query
        /// over 16 files written in time order) or `snapshot` (a table's snapshot at
        /// `--rows` / 100, / 10 and `--rows` rows) or `restore` (a table of as many rows
        /// restored to a snapshot and to a time, against writing its rows again).
        /// `cache`, `bloom`, `memstore`, `prune` and `snapshot` also run raw RocksDB doing
        /// the same work, `--runs` times.
        target: String,
        /// `ttl`: simulated hours per workload.
        #[arg(long, default_value_t = 3)]
        hours: u64,
        /// Rows to write and read.
        #[arg(long, default_value_t = 50_000)]
        rows: usize,
        /// Log entries each restart replays.
        #[arg(long, default_value_t = 1_000)]
        entries: usize,
        /// Restarts to time.
        #[arg(long, default_value_t = 11)]
        rounds: usize,
        /// `bloom`, `cache`, `memstore`: runs, each on new databases (times: the median).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// `engine`: the engine packs its rows (every CQL table `WITH packed_rows = true`).
        #[arg(long)]
        packed: bool,
        /// `engine`: the engine stores its packed rows as RocksDB entities.
        #[arg(long, conflicts_with = "packed")]
        entity: bool,
    },
}

fn parse_seed(text: &str) -> Result<u64, String> {
    let bad = || format!("`{text}` is not a seed (decimal, 0x-hex, or a git commit hash)");
    let number = |e: std::num::ParseIntError| match e.kind() {
        std::num::IntErrorKind::PosOverflow => {
            format!("`{text}` is above {}, the largest seed (64 bits)", u64::MAX)
        }
        _ => bad(),
    };
    if let Some(hex) = text.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).map_err(number);
    }
    if text.chars().all(|c| c.is_ascii_digit()) {
        return text.parse().map_err(number);
    }
    if text.len() >= 7 && text.chars().all(|c| c.is_ascii_hexdigit()) {
        return u64::from_str_radix(&text[..text.len().min(16)], 16).map_err(|_| bad());
    }
    Err(bad())
}

fn parse_profile(text: &str) -> Result<Profile, String> {
    Profile::from_name(text).ok_or_else(|| {
        let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
        format!("unknown profile `{text}` (known: {})", names.join(", "))
    })
}

fn parse_plant(text: &str) -> Result<Plant, String> {
    Plant::from_name(text).ok_or_else(|| {
        let names: Vec<&str> = Plant::ALL.iter().map(|p| p.name()).collect();
        format!("unknown planted bug `{text}` (known: {})", names.join(", "))
    })
}

fn parse_replicas(text: &str) -> Result<usize, String> {
    match text.parse() {
        Ok(n @ (1 | 3 | 5)) => Ok(n),
        _ => Err(format!("`{text}` replicas: a Raft group here has 1, 3 or 5")),
    }
}

fn parse_range(text: &str) -> Result<(u64, u64), String> {
    let (a, b) = text.split_once("..").ok_or_else(|| format!("`{text}` is not a range A..B"))?;
    let (a, b) = (parse_seed(a)?, parse_seed(b)?);
    if a >= b {
        return Err(format!("--seeds {text} holds no seed (B is excluded)"));
    }
    Ok((a, b))
}

/// Worker threads: 1 to 256 (a bound of docsim's: each runs one seed at a time).
fn parse_jobs(text: &str) -> Result<usize, String> {
    match text.parse() {
        Ok(n @ 1..=256) => Ok(n),
        _ => Err(format!("--jobs {text}: 1 to 256 worker threads")),
    }
}

fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let err = || format!("`{text}` is not a shard i/n with i < n");
    let (i, n) = text.split_once('/').ok_or_else(err)?;
    let (i, n): (u64, u64) = (i.parse().map_err(|_| err())?, n.parse().map_err(|_| err())?);
    if n == 0 || i >= n {
        return Err(err());
    }
    Ok((i, n))
}

fn parse_duration(text: &str) -> Result<f64, String> {
    let err = || format!("`{text}` is not a duration like 90s, 10m or 1h");
    let (num, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).ok_or_else(err)?);
    let n: f64 = num.parse().map_err(|_| err())?;
    match unit {
        "s" => Ok(n),
        "m" => Ok(n * 60.0),
        "h" => Ok(n * 3600.0),
        _ => Err(err()),
    }
}

fn parse_storage(text: &str) -> Result<usize, String> {
    let n = docsim_engine::StorageConfig::SET.len();
    match text.parse::<usize>() {
        Ok(i) if i < n => Ok(i),
        _ => Err(format!("`{text}` is not a storage configuration (0 to {})", n - 1)),
    }
}

fn config(seed: u64, shape: &ShapeArgs, keep_trace: bool) -> RunConfig {
    let storage = docsim_engine::StorageConfig::SET[shape.config.unwrap_or(0)];
    RunConfig {
        profile: shape.profile,
        plant: shape.plant,
        keep_trace,
        storage,
        byte_faults: !shape.no_byte_faults,
        faults: !shape.no_faults,
        rocks_in_memory: shape.rocks_in_memory,
        ..RunConfig::new(seed, shape.replicas, shape.ops)
    }
}

/// A plant the run cannot catch with its replica count is refused, not run for nothing.
fn check_plant(shape: &ShapeArgs) -> Result<(), String> {
    match shape.plant {
        Some(plant) if !plant.replicas().contains(&shape.replicas) => Err(format!(
            "--plant {} needs --replicas {} (it cannot show with {})",
            plant.name(),
            plant.replicas().iter().map(|n| n.to_string()).collect::<Vec<_>>().join(" or "),
            shape.replicas
        )),
        _ => Ok(()),
    }
}

fn main() -> ExitCode {
    never_purge();
    // A closed pipe (`docsim replay ... | head`) ends the process quietly, as it does any
    // Unix filter, instead of a panic on the next print.
    // SAFETY: restoring a signal's default action before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    if let Command::Run { metamorphic: true, run, .. } = &cli.command {
        if let Some(k) = run.shape.config {
            eprintln!(
                "error: --metamorphic runs every storage configuration; --config {k} picks one"
            );
            return ExitCode::from(2);
        }
    }
    let shape = match &cli.command {
        Command::Run { run, .. } | Command::Replay { run } => Some(&run.shape),
        Command::Torture { shape, .. } => Some(shape),
        _ => None,
    };
    if let Some(Err(e)) = shape.map(check_plant) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    match cli.command {
        Command::Script { file, plant, bless: false, check: false } => script(&file, plant),
        Command::Script { file, plant, bless, .. } => snapshot(&file, plant, bless),
        Command::Run { run: args, check_determinism: true, .. } => check_determinism(&args),
        Command::Run { run: args, metamorphic: true, .. } => metamorphic(&args),
        Command::Run { run: args, emit_trace, .. } => run_seed(&args, emit_trace, false),
        Command::Replay { run: args } => run_seed(&args, false, true),
        Command::Torture { seeds, duration, jobs, shard, report, require_all_probes, shape } => {
            let coverage = Coverage { report_dir: report.as_deref(), require_all_probes };
            torture_command(seeds, duration, jobs, shard, coverage, &shape)
        }
        Command::Report { action, files, out } => report_command(&action, &files, &out),
        Command::Shrink { dir } => shrink(&dir),
        Command::Bench { target, rows, entries, rounds, runs, hours, packed, entity } => {
            let layout = match (packed, entity) {
                (true, _) => docsim_engine::Layout::Packed,
                (_, true) => docsim_engine::Layout::Entity,
                _ => docsim_engine::Layout::Declared,
            };
            match target.as_str() {
                "restart" => bench_restart(entries, rounds),
                "ttl" => bench_ttl(hours),
                "cache" => bench_cache(rounds, runs.max(1)),
                "bloom" => bench_bloom(rows, runs.max(1)),
                "memstore" => bench_memstore(rows, runs.max(1)),
                "prune" => bench_prune(runs.max(1)),
                "snapshot" => bench_snapshot(rows, runs.max(1)),
                "restore" => bench_restore(rows, runs.max(1)),
                _ => bench(&target, rows, layout),
            }
        }
    }
}

fn shrink(dir: &Path) -> ExitCode {
    let meta = std::fs::read_to_string(dir.join("run.json"))
        .map_err(|e| format!("{} holds no failed run ({e})", dir.display()))
        .and_then(|text| docsim::report::read_run_meta(&text))
        .and_then(|meta| meta.config().map(|config| (meta, config)));
    let (meta, config) = match meta {
        Ok(read) => read,
        Err(e) => {
            eprintln!("docsim: {}: {e}", dir.join("run.json").display());
            return ExitCode::from(2);
        }
    };
    let outcome = run(&config);
    let Some(failure) = outcome.failure.filter(|f| f.kind == meta.kind) else {
        println!("seed {} no longer fails with {}: nothing to shrink", meta.seed, meta.kind);
        return ExitCode::FAILURE;
    };
    let Some(shrunk) = docsim::shrink::shrink(failure.steps, meta.kind, &config) else {
        println!("the steps of seed {} no longer fail when replayed", meta.seed);
        return ExitCode::FAILURE;
    };
    let path = dir.join("shrunk.ds");
    let plant_arg = report::plant_arg(meta.plant.as_deref());
    let header = format!(
        "# docsim shrunk reproducer: seed {} commit {COMMIT}, {}, {} steps (from {})\n\
         # run alone: docsim script {plant_arg}{}\n",
        meta.seed,
        meta.kind,
        shrunk.after,
        shrunk.before,
        path.display()
    );
    if let Err(e) = std::fs::write(&path, format!("{header}{}", shrunk.failure.reproducer)) {
        eprintln!("docsim: cannot write {}: {e}", path.display());
        return ExitCode::from(2);
    }
    println!(
        "shrunk {} steps to {} in {} runs ({})",
        shrunk.before, shrunk.after, shrunk.runs, meta.kind
    );
    println!("  expected: {}", shrunk.failure.expected.join(" | "));
    println!("  actual:   {}", shrunk.failure.actual.join(" | "));
    println!("  reproducer: docsim script {plant_arg}{}", path.display());
    ExitCode::SUCCESS
}

fn run_seed(args: &RunArgs, emit_trace: bool, replay: bool) -> ExitCode {
    let cfg = config(args.seed, &args.shape, emit_trace || replay);
    let outcome = run(&cfg);
    if emit_trace {
        outcome.trace.iter().for_each(|line| println!("{line}"));
        println!("trace-hash {:016x}", outcome.trace_hash);
        return if outcome.failure.is_some() { ExitCode::FAILURE } else { ExitCode::SUCCESS };
    }
    println!("{}", report::banner(&outcome, &cfg));
    if replay {
        outcome.trace.iter().for_each(|line| println!("{line}"));
    }
    match &outcome.failure {
        None => {
            println!(
                "PASS seed={} replicas={} steps={} ops={} checked_reads={} compactions={} \
                 trace={:016x}",
                outcome.seed,
                cfg.replicas,
                outcome.steps,
                outcome.ops,
                outcome.checked_reads,
                outcome.compactions,
                outcome.trace_hash
            );
            ExitCode::SUCCESS
        }
        Some(_) => {
            let dir = report::write_run_report(&args.shape.reports, &outcome, &cfg).ok();
            print!("{}", report::failure_block(&outcome, &cfg, dir.as_deref()));
            ExitCode::FAILURE
        }
    }
}

fn script(file: &Path, plant: Option<Plant>) -> ExitCode {
    let text = if file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map(|_| text)
    } else {
        std::fs::read_to_string(file)
    };
    let text = match text {
        Ok(text) => text,
        Err(e) => {
            eprintln!("docsim: cannot read {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    match docsim::run_script_file(&text, plant) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("docsim: {e}");
            ExitCode::from(2)
        }
    }
}

/// `script --bless` (write FILE.out) or `script --check` (compare with it).
fn snapshot(file: &Path, plant: Option<Plant>, bless: bool) -> ExitCode {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("docsim: cannot read {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let plants = docsim_engine::canary::Plants::of(plant);
    let run = docsim::script::run_script(&text, plants, docsim_engine::StorageConfig::default());
    let out_file = file.with_extension("out");
    if bless {
        return match std::fs::write(&out_file, &run.output) {
            Ok(()) => {
                println!("wrote {}", out_file.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("docsim: cannot write {}: {e}", out_file.display());
                ExitCode::FAILURE
            }
        };
    }
    let Ok(want) = std::fs::read_to_string(&out_file) else {
        let (out, f) = (out_file.display(), file.display());
        eprintln!("docsim: no {out} to check against (`docsim script --bless {f}` writes it)");
        return ExitCode::from(2);
    };
    match first_difference(&want, &run.output) {
        None => ExitCode::SUCCESS,
        Some(i) => {
            let line = |text: &str| text.lines().nth(i).unwrap_or("(no line)").to_owned();
            println!("{}:{}: differs from its snapshot", out_file.display(), i + 1);
            println!("- {}\n+ {}", line(&want), line(&run.output));
            ExitCode::FAILURE
        }
    }
}

/// The first line (from 0) where two texts differ, a missing line counting.
fn first_difference(a: &str, b: &str) -> Option<usize> {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let common = a.iter().zip(&b).position(|(x, y)| x != y);
    common.or((a.len() != b.len()).then_some(a.len().min(b.len())))
}

/// What a torture campaign reports beyond its summary: the report files, and whether a
/// probe never hit fails it.
struct Coverage<'a> {
    report_dir: Option<&'a Path>,
    require_all_probes: bool,
}

/// `run --metamorphic`: the seed under every storage configuration, traces compared.
fn metamorphic(args: &RunArgs) -> ExitCode {
    let runs = docsim::metamorphic::run_set(&config(args.seed, &args.shape, true));
    let set = docsim_engine::StorageConfig::SET;
    for run in &runs {
        let outcome = &run.outcome;
        let verdict = if outcome.failure.is_some() { "FAIL" } else { "pass" };
        let hash = docsim::metamorphic::neutral_hash(&outcome.trace);
        let i = set.iter().position(|s| *s == run.storage).expect("in the set");
        let faults = if run.byte_faults { "all faults" } else { "no byte-placed faults" };
        let (name, lines) = (run.storage.to_string(), outcome.trace.len());
        println!(
            "--config {i}  {name:<42} {faults:<21} trace-hash {hash:016x}  {lines} lines  {verdict}"
        );
    }
    let divergences = docsim::metamorphic::divergences(&runs);
    for d in &divergences {
        println!("FAIL: {} differs from the default at trace line {}", d.config, d.line);
        println!("  default: {}", d.default_line.as_deref().unwrap_or("(end of trace)"));
        println!("  this:    {}", d.this_line.as_deref().unwrap_or("(end of trace)"));
    }
    // A configuration whose run failed its own checks: its failure block and reproducer
    // (which starts in its layout).
    let failing = runs.iter().find(|r| r.outcome.failure.is_some());
    if let Some(run) = failing {
        let base = config(args.seed, &args.shape, true);
        let cfg = RunConfig { storage: run.storage, byte_faults: run.byte_faults, ..base };
        let dir = report::write_run_report(&args.shape.reports, &run.outcome, &cfg).ok();
        print!("{}", report::failure_block(&run.outcome, &cfg, dir.as_deref()));
    }
    if divergences.is_empty() && failing.is_none() {
        println!("PASS: {} runs of {} configurations, identical traces", runs.len(), set.len());
        return ExitCode::SUCCESS;
    }
    ExitCode::FAILURE
}

/// Run the seed in two separate processes and compare their traces line by line.
/// The command-line flags that give `shape` (what a child run needs to be the same run).
fn shape_args(shape: &ShapeArgs) -> Vec<String> {
    let mut args = vec!["--ops".into(), shape.ops.to_string()];
    args.extend(["--replicas".into(), shape.replicas.to_string()]);
    if let Some(p) = shape.profile {
        args.extend(["--profile".into(), p.name().into()]);
    }
    if let Some(p) = shape.plant {
        args.extend(["--plant".into(), p.name().into()]);
    }
    if let Some(c) = shape.config {
        args.extend(["--config".into(), c.to_string()]);
    }
    if shape.no_byte_faults {
        args.push("--no-byte-faults".into());
    }
    if shape.no_faults {
        args.push("--no-faults".into());
    }
    if shape.rocks_in_memory {
        args.push("--rocks-in-memory".into());
    }
    args
}

fn check_determinism(args: &RunArgs) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("docsim: cannot find my own executable: {e}");
            return ExitCode::from(2);
        }
    };
    let mut child_args =
        vec!["run".to_string(), "--seed".into(), args.seed.to_string(), "--emit-trace".into()];
    child_args.extend(shape_args(&args.shape));
    let traces: Vec<Vec<String>> = (0..2)
        .map(|_| {
            let out = std::process::Command::new(&exe).args(&child_args).output();
            out.map(|o| String::from_utf8_lossy(&o.stdout).lines().map(str::to_owned).collect())
                .unwrap_or_default()
        })
        .collect();
    let (a, b) = (&traces[0], &traces[1]);
    println!(
        "docsim determinism check seed={} commit={COMMIT} replicas={} ops={}",
        args.seed, args.shape.replicas, args.shape.ops
    );
    if a.is_empty() {
        println!("FAIL: the child run printed nothing");
        return ExitCode::FAILURE;
    }
    match a.iter().zip(b).position(|(x, y)| x != y) {
        None if a.len() == b.len() => {
            println!(
                "PASS: {} trace lines identical, {}",
                a.len(),
                a.last().map_or("", String::as_str)
            );
            ExitCode::SUCCESS
        }
        None => {
            println!("FAIL: traces differ in length ({} vs {} lines)", a.len(), b.len());
            ExitCode::FAILURE
        }
        Some(i) => {
            println!(
                "FAIL: first divergent step at trace line {i}:\n  first:  {}\n  second: {}",
                a[i], b[i]
            );
            ExitCode::FAILURE
        }
    }
}

/// The campaign's summary lines: counts and rates, crashes and replays, where time went.
fn print_totals(campaign_report: &docsim_reports::CampaignReport, jobs: usize) {
    let (t, seconds) = (campaign_report.totals(), campaign_report.seconds);
    println!(
        "seeds {}  ops {}  steps {}  checked reads {}  compactions {}  failures {}  {:.1}s  \
         {:.0} ops/s  {:.0} ops/s/core  {:.1} seeds/min",
        t.seeds,
        t.ops,
        t.steps,
        t.checked_reads,
        t.compactions,
        t.failures,
        seconds,
        t.ops as f64 / seconds,
        t.ops as f64 / seconds / jobs.max(1) as f64,
        t.seeds as f64 / seconds * 60.0
    );
    println!(
        "crashes {}  restarts {}  replayed {}  expected above frontiers {}",
        t.crashes, t.restarts, t.replayed, t.expected_replayed
    );
    let faults: Vec<String> =
        campaign_report.fault_totals().iter().map(|(kind, n)| format!("{kind} {n}")).collect();
    println!("faults  {}", faults.join("  "));
    println!("time  {}", t.time_breakdown());
    println!("parts {}", t.part_breakdown());
}

fn torture_command(
    seeds: Option<(u64, u64)>,
    duration: Option<f64>,
    jobs: usize,
    shard: (u64, u64),
    coverage: Coverage<'_>,
    shape: &ShapeArgs,
) -> ExitCode {
    let (first, end) = match (seeds, duration) {
        (Some((a, b)), None) if docsim::campaign::seeds_in_shard(a, b, shard) == 0 => {
            let (i, n) = shard;
            eprintln!("error: shard {i}/{n} of seeds {a}..{b} holds no seed");
            return ExitCode::from(2);
        }
        (Some((a, b)), None) => (a, Some(b)),
        (seeds, Some(_)) => (seeds.map_or(0, |(a, _)| a), None),
        (None, None) => {
            eprintln!("docsim: torture needs --seeds A..B or --duration");
            return ExitCode::from(2);
        }
    };
    let campaign = Campaign {
        first,
        end,
        duration_s: duration,
        jobs,
        shard,
        template: config(0, shape, false),
        draw_storage: shape.config.is_none(),
        reports_dir: shape.reports.clone(),
    };
    println!(
        "docsim torture commit={COMMIT} seeds={first}..{} shard={}/{} jobs={jobs} ops/seed={}{}",
        end.map_or("".into(), |e| e.to_string()),
        shard.0,
        shard.1,
        shape.ops,
        shape.plant.map(|p| format!(" plant={}", p.name())).unwrap_or_default()
    );
    docsim::campaign::interrupt_on_ctrl_c();
    let campaign_report = torture(&campaign);
    if docsim::campaign::interrupted() {
        println!("interrupted (Ctrl-C): the report holds the seeds finished");
    }
    print_totals(&campaign_report, jobs);
    if let Some(dir) = coverage.report_dir {
        match report::write_campaign(dir, &campaign_report) {
            Ok(()) => println!("report: {}", dir.join("campaign.html").display()),
            Err(e) => eprintln!("docsim: cannot write the report: {e}"),
        }
    }
    let never = campaign_report.probes_never_hit();
    if !never.is_empty() {
        println!("probes never hit: {}", never.join(", "));
    }
    let uncovered = coverage.require_all_probes && !never.is_empty();
    if uncovered {
        println!("FAIL coverage: {} probes never hit (--require-all-probes)", never.len());
    }
    let failed: Vec<u64> =
        campaign_report.runs.iter().filter(|r| r.failure.is_some()).map(|r| r.seed).collect();
    if docsim::campaign::interrupted() && failed.is_empty() {
        println!("INTERRUPTED: no failure in the seeds finished");
        return ExitCode::from(130);
    }
    verdict(&failed, uncovered, &shape.reports)
}

/// PASS, or the first failure's block whole (op, expected, actual, how to reproduce) and
/// one line per failed seed.
fn verdict(failed: &[u64], uncovered: bool, reports: &Path) -> ExitCode {
    if failed.is_empty() && !uncovered {
        println!("PASS");
        return ExitCode::SUCCESS;
    }
    let failure_txt = |seed: u64| reports.join(seed.to_string()).join("failure.txt");
    if let Some(text) = failed.first().and_then(|s| std::fs::read_to_string(failure_txt(*s)).ok()) {
        print!("\n{text}\n");
    }
    for seed in failed {
        println!("FAIL seed {seed}: {}", failure_txt(*seed).display());
    }
    ExitCode::FAILURE
}

/// A campaign report (`campaign.json`), or what is wrong with it, naming the file.
fn read_campaign(file: &Path) -> Result<docsim_reports::CampaignReport, String> {
    std::fs::read_to_string(file)
        .map_err(|e| e.to_string())
        .and_then(|text| docsim_reports::CampaignReport::from_json(&text))
        .map_err(|e| format!("{}: {e}", file.display()))
}

/// `report diff BASE NEW`: exit 1 when NEW fails in a way BASE did not.
fn report_diff(base: &Path, new: &Path) -> ExitCode {
    match (read_campaign(base), read_campaign(new)) {
        (Ok(base), Ok(new)) => {
            print!("{}", docsim_reports::diff(&base, &new));
            match docsim_reports::has_new_failures(&base, &new) {
                true => ExitCode::FAILURE,
                false => ExitCode::SUCCESS,
            }
        }
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("docsim: {e}");
            ExitCode::from(2)
        }
    }
}

fn report_command(action: &str, files: &[PathBuf], out: &Path) -> ExitCode {
    if action == "diff" && files.len() == 2 {
        return report_diff(&files[0], &files[1]);
    }
    if action != "merge" || files.is_empty() {
        eprintln!(
            "docsim: usage: docsim report merge A.json B.json ... [--out DIR] | \
             docsim report diff BASE.json NEW.json"
        );
        return ExitCode::from(2);
    }
    let mut shards = Vec::new();
    for file in files {
        match read_campaign(file) {
            Ok(shard) => shards.push(shard),
            Err(e) => {
                eprintln!("docsim: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let merged = match docsim_reports::CampaignReport::merge(shards) {
        Ok(merged) => merged,
        Err(e) => {
            eprintln!("docsim: cannot merge: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = report::write_campaign(out, &merged) {
        eprintln!("docsim: cannot write {}: {e}", out.display());
        return ExitCode::from(2);
    }
    let t = merged.totals();
    println!(
        "merged {} shards: seeds {} ops {} checked reads {} failures {} -> {}",
        merged.shards.len(),
        t.seeds,
        t.ops,
        t.checked_reads,
        t.failures,
        out.join("campaign.html").display()
    );
    if t.failures > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// A scratch directory for a benchmark, or the exit code of failing to make one.
fn bench_scratch() -> Result<docsim::ScratchDir, ExitCode> {
    docsim::ScratchDir::new().map_err(|e| {
        eprintln!("docsim: {e}");
        ExitCode::from(2)
    })
}

fn bench_restart(entries: usize, rounds: usize) -> ExitCode {
    if entries == 0 || rounds == 0 {
        eprintln!("docsim: --entries and --rounds must be positive");
        return ExitCode::from(2);
    }
    let scratch = match bench_scratch() {
        Ok(dir) => dir,
        Err(code) => return code,
    };
    match docsim::bench::bench_restart(entries, rounds, scratch.path()) {
        Ok(b) => {
            use docsim::bench::median;
            let (restart, raw) = (median(&b.restart_ms), median(&b.raw_ms));
            println!("crash + restart replaying {} entries, {rounds} rounds", b.entries);
            println!(
                "restart  median {restart:.2} ms  min {:.2} ms  max {:.2} ms",
                b.restart_ms[0],
                b.restart_ms[b.restart_ms.len() - 1]
            );
            println!("raw RocksDB writing the same {} batches: median {raw:.2} ms", b.entries);
            println!("restart / raw re-apply: {:.2}x", restart / raw);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("docsim: bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Run a benchmark that prints a report, in a scratch directory.
fn bench_report<R>(
    bench: impl FnOnce(&Path) -> Result<R, String>,
    report: impl FnOnce(&R) -> String,
) -> ExitCode {
    let scratch = match bench_scratch() {
        Ok(dir) => dir,
        Err(code) => return code,
    };
    match bench(scratch.path()) {
        Ok(runs) => {
            print!("{}", report(&runs));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("docsim: bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn bench_bloom(rows: usize, runs: usize) -> ExitCode {
    use docsim::bench::bloom;
    bench_report(|dir| bloom::bench_bloom(rows, runs, dir), |r| bloom::format_report(rows, r))
}

fn bench_snapshot(rows: usize, runs: usize) -> ExitCode {
    use docsim::bench::snapshot;
    let sizes = [rows / 100, rows / 10, rows];
    println!("a snapshot of a table of n rows (unflushed), medians of {runs} runs:");
    let report = |r: &Vec<snapshot::SnapshotRun>| snapshot::format_report(r).join("\n") + "\n";
    bench_report(|dir| snapshot::bench_snapshot(&sizes, runs, dir), report)
}

fn bench_restore(rows: usize, runs: usize) -> ExitCode {
    use docsim::bench::restore;
    let sizes = [rows / 100, rows / 10, rows];
    println!("a table of n rows snapshotted, every row updated, restored; medians of {runs} runs:");
    let report = |r: &Vec<restore::RestoreRun>| restore::format_report(r).join("\n") + "\n";
    bench_report(|dir| restore::bench_restore(&sizes, runs, dir), report)
}

fn bench_prune(rounds: usize) -> ExitCode {
    let scratch = match bench_scratch() {
        Ok(dir) => dir,
        Err(code) => return code,
    };
    let (rows, queries, files) = (1_000, 400, docsim::bench::prune::FILES);
    println!(
        "{queries} range queries (host = ? AND ts > ? AND ts < ?, half a file wide) over \
         {files} SST files written in time order, {rows} rows per host per file; medians \
         of {rounds} runs, per query:"
    );
    let runs = match docsim::bench::prune::bench_prune(rows, (queries, rounds), scratch.path()) {
        Ok(runs) => runs,
        Err(e) => {
            eprintln!("docsim: bench failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let header = ("", "rows", "files read", "blocks read", "µs", "vs pruning");
    println!(
        "{:<20} {:>7} {:>11} {:>12} {:>9} {:>11}",
        header.0, header.1, header.2, header.3, header.4, header.5
    );
    let base = runs[0].us_per_query;
    for r in &runs {
        println!(
            "{:<20} {:>7.1} {:>11.2} {:>12.1} {:>9.1} {:>10.2}x",
            r.name,
            r.rows,
            r.files_read,
            r.blocks_read,
            r.us_per_query,
            r.us_per_query / base
        );
    }
    ExitCode::SUCCESS
}

fn bench_cache(scans: usize, runs: usize) -> ExitCode {
    use docsim::bench::cache::{self, CacheShape};
    let (shape, scans) = (CacheShape::BENCH, scans.max(1));
    bench_report(
        |dir| cache::bench_cache(shape, scans, runs, dir),
        |r| cache::format_report(shape, scans, r),
    )
}

fn bench_memstore(writes: usize, runs: usize) -> ExitCode {
    use docsim::bench::memstore;
    bench_report(
        |dir| memstore::bench_memstore(writes, runs, dir),
        |r| memstore::format_report(writes, r),
    )
}

fn bench_ttl(hours: u64) -> ExitCode {
    if hours == 0 {
        eprintln!("docsim: --hours must be positive");
        return ExitCode::from(2);
    }
    let scratch = match bench_scratch() {
        Ok(dir) => dir,
        Err(code) => return code,
    };
    match docsim::space::bench_ttl(hours, scratch.path()) {
        Ok(runs) => {
            print!("{}", docsim::space::format_report(&runs, hours));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("docsim: bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn bench(target: &str, rows: usize, layout: docsim_engine::Layout) -> ExitCode {
    if target != "engine" {
        eprintln!(
            "docsim: unknown benchmark `{target}` (known: engine, restart, ttl, cache, bloom, \
             memstore)"
        );
        return ExitCode::from(2);
    }
    let scratch = match bench_scratch() {
        Ok(dir) => dir,
        Err(code) => return code,
    };
    match docsim::bench::bench_engine(rows, scratch.path(), layout) {
        Ok(b) => {
            let layout = match b.layout {
                docsim_engine::Layout::Packed => "packed rows",
                docsim_engine::Layout::Entity => "packed rows as RocksDB entities",
                _ => "one entry per column",
            };
            println!("rows: {} (engine: {layout})", b.rows);
            println!("{:<24} {:>12} {:>12} {:>7}", "", "engine ops/s", "raw ops/s", "ratio");
            let line = |name: &str, e: f64, r: f64| {
                println!("{name:<24} {e:>12.0} {r:>12.0} {:>6.2}x", e / r)
            };
            let (w, r) = (b.engine_writes_per_s, b.engine_reads_per_s);
            for (form, raw) in [("columns", b.raw_columns), ("row value", b.raw_rows)] {
                line(&format!("writes vs {form}"), w, raw.writes_per_s);
                line(&format!("writes vs {form}/wal"), w, raw.wal_writes_per_s);
                line(&format!("reads vs {form}"), r, raw.reads_per_s);
                line(&format!("reads vs {form}/kept"), r, raw.kept_reads_per_s);
            }
            println!(
                "(raw: `columns` one key/value per column, `row value` one value per row; \
                 writes with the WAL off, and on without sync; the engine logs to its Raft \
                 log; reads with a new iterator per row, and `kept` with one iterator for \
                 all, as the engine keeps its scan iterator while nothing is written; both keep \
                 every file, WAL and Raft log included, on a simulated disk of their own)"
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("docsim: bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}
