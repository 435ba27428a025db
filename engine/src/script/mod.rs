//! docscript: the project's text language (`../shared/docscript.md` is the contract).
//!
//! [`run_script`] executes a script line by line against real tablets in a directory and
//! writes the contract's output. A line that does not parse stops the run; a command that
//! fails prints `error: <message>` and the run goes on.

mod command;
mod run;

pub use command::{
    parse_line, strip_comment, Command, CrashAt, DocWrite, DumpStyle, MarkerMode, WriteKind,
};
pub use run::{format_get, format_restart, run_script, Runner, ScriptOutcome, TabletName};
