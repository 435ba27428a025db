//! docscript: the project's text language (`docs/docscript.md` is the contract).
//!
//! [`run_script`] executes a script line by line against real tablets in a directory and
//! writes the contract's output. A line that does not parse stops the run; a command that
//! fails prints `error: <message>` and the run goes on.
//!
//! Extensions to the contract (the contract's own commands print exactly what it says):
//! - `expect <line>` / `expect error` / `expect error: <kind>`: the previous command's
//!   next output line must be `<line>`, or an error (of that kind when the text after
//!   `error:` is a kind name: the engine's [`crate::ErrorKind`] names, or `syntax_error`
//!   for CQL or Redis text that does not parse; any other text is a whole `error: ...`
//!   line); an expected error does not fail the script;
//! - `crash torn`: power loss that keeps each log file's unsynced tail up to its first
//!   sector boundary (a torn append); `crash at <stage> [torn]` arms the power loss at a
//!   stage of the next write (`after-append`, `after-sync`, `after-apply`: the write prints
//!   `error: crashed <stage>`) or after the next flush, before its log GC (`after-flush`);
//! - `log`: one `log: segment=N after=<op> last=<op> bytes=B` line per Raft log segment;
//! - `restart` prints one line per tablet: the document tablet's exactly as the contract
//!   says, a CQL table's with ` table=<name>` appended.
//!
//! The Raft logs of a run live on a fault-free simulated disk (1 KiB segments, so scripts
//! see segment rolls and log GC); RocksDB's files are real, in the run's directory.

mod command;
mod parse;
mod run;
#[cfg(test)]
mod tests;

pub use command::{
    format_bytes, At, BackupOp, Command, ConfChange, DumpStyle, FaultCommand, FileRun, Header,
    PageOptions, Route,
};
pub use parse::{parse_line, strip_comment};
pub use run::{
    dump, error_kind_names, format_entry, format_file, format_get, format_memory_flush,
    format_page, format_restart, format_restart_full, format_segment, format_stats,
    memory_flush_line, run_script, run_script_in, CommandError, Last, Runner, ScriptOutcome,
};
