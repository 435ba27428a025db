//! docscript notation for literals, keys, paths, hybrid times, durations and documents:
//! `Display` prints it, [`Parser`] reads it back, and the two round-trip.

mod parse;
mod print;

pub use parse::{PResult, ParseError, Parser};
pub use print::{format_double, format_duration_us, Subkey};

#[cfg(test)]
mod tests;
