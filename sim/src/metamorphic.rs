//! Metamorphic runs: one seed, one op stream, under every storage configuration of
//! [`StorageConfig::SET`] (block size, bloom filters, snappy). None of them may change
//! what a reader sees, so every trace — read results, errors, restarts — must be
//! identical; the first differing step is reported when one is not. (Issue 16 adds the
//! row layouts to the set; today it varies RocksDB's table options only.)

use crate::simulate::{run, RunConfig, RunOutcome};
use docsim_engine::StorageConfig;

/// Where a configuration's trace first differs from the default's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    pub config: StorageConfig,
    /// The first differing trace line (0-based).
    pub line: usize,
    pub default_line: Option<String>,
    pub this_line: Option<String>,
}

/// The first index where two traces differ (a missing line counts), if any.
pub fn first_difference(a: &[String], b: &[String]) -> Option<usize> {
    let common = a.iter().zip(b).position(|(x, y)| x != y);
    common.or((a.len() != b.len()).then_some(a.len().min(b.len())))
}

/// Run `config`'s seed under every configuration of the set (the default first).
pub fn run_set(config: &RunConfig) -> Vec<(StorageConfig, RunOutcome)> {
    StorageConfig::SET
        .iter()
        .map(|&storage| (storage, run(&RunConfig { storage, keep_trace: true, ..config.clone() })))
        .collect()
}

/// Every run against the first: the divergences found.
pub fn divergences(runs: &[(StorageConfig, RunOutcome)]) -> Vec<Divergence> {
    let Some((_, first)) = runs.first() else { return vec![] };
    runs[1..]
        .iter()
        .filter_map(|(config, outcome)| {
            let line = first_difference(&first.trace, &outcome.trace)?;
            Some(Divergence {
                config: *config,
                line,
                default_line: first.trace.get(line).cloned(),
                this_line: outcome.trace.get(line).cloned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_first_difference_is_found_or_none() {
        let a = lines(&["a", "b", "c"]);
        assert_eq!(first_difference(&a, &a), None);
        assert_eq!(first_difference(&a, &lines(&["a", "x", "c"])), Some(1));
        assert_eq!(first_difference(&a, &lines(&["a", "b"])), Some(2), "a shorter trace");
        assert_eq!(first_difference(&lines(&[]), &lines(&["a"])), Some(0));
    }
}
