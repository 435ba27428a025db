//! The `docsim` command line.

use clap::{Parser, Subcommand};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

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

#[derive(Subcommand)]
enum Command {
    /// Run a docscript file (`-` reads standard input) and print its output.
    Script {
        /// The script.
        file: PathBuf,
        /// Keep the tablets in this directory (default: a fresh temporary directory,
        /// removed afterwards).
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// Benchmarks, compared with raw RocksDB doing the same work in the same run.
    Bench {
        /// What to measure: `engine` (CQL row writes and reads).
        target: String,
        /// Rows to write and read.
        #[arg(long, default_value_t = 50_000)]
        rows: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Script { file, data_dir } => script(&file, data_dir),
        Command::Bench { target, rows } => bench(&target, rows),
    }
}

fn bench(target: &str, rows: usize) -> ExitCode {
    if target != "engine" {
        eprintln!("docsim: unknown benchmark `{target}` (known: engine)");
        return ExitCode::from(2);
    }
    let scratch = match docsim::ScratchDir::new() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("docsim: {e}");
            return ExitCode::from(2);
        }
    };
    match docsim::bench::bench_engine(rows, scratch.path()) {
        Ok(b) => {
            println!("rows: {}", b.rows);
            println!("{:<10} {:>14} {:>14} {:>7}", "", "engine ops/s", "raw ops/s", "ratio");
            let line = |name: &str, e: f64, r: f64| {
                println!("{name:<10} {e:>14.0} {r:>14.0} {:>6.2}x", e / r)
            };
            line("writes", b.engine_writes_per_s, b.raw_writes_per_s);
            line("reads", b.engine_reads_per_s, b.raw_reads_per_s);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("docsim: bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn script(file: &PathBuf, data_dir: Option<PathBuf>) -> ExitCode {
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
    match docsim::run_script_file(&text, data_dir.as_deref()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("docsim: {e}");
            ExitCode::from(2)
        }
    }
}
