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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Script { file, data_dir } => script(&file, data_dir),
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
