//! Ancestor shadowing: the one walk that the reader (`reader.rs`), compaction GC (`gc.rs`)
//! and the raw-bytes read filter (`db/scan.rs`, `NeededAt`) share.
//!
//! Entries arrive in key order: a parent before its children, each path's versions newest
//! first. A version is hidden when a version of an ancestor (or a newer version of its own
//! path) shadows it. A [`Shadow`] stack keeps one level per path component of the last
//! entry — the colocated table, the document, each subkey — and each level knows the
//! newest relevant version at that level *or any of its ancestors*. Moving to the next
//! entry keeps the levels of the prefix it shares with the last one and opens the others,
//! each inheriting its parent's newest version; so the top of the stack answers "what is
//! the newest version along my ancestor chain" in O(1), without walking it.
//!
//! ```text
//!   entries (key order)     stack after the entry (newest per level)
//!   d        @20            [d:20]
//!   d.a      @10            [d:20, a:20]          hidden: 10 is not newer than 20
//!   d.a.b    @30            [d:20, a:20, b:30]    visible: 30 is newer than 20
//!   d.c      @25            [d:20, c:25]          aligned: shares `d` with d.a.b
//! ```
//!
//! What "relevant" and "newer" mean is each client's: the reader compares full
//! DocHybridTimes (write id included) and hides ties; `NeededAt` compares hybrid times only
//! and leaves ties to the reader; GC records only versions at or below its history cutoff
//! and keeps a level across a path's versions. Each client compares [`Shadow::newest`] with
//! its version its own way, [`Shadow::record`]s the version if it shadows what follows,
//! and keeps what else it needs per level in the payload `P`.

/// One level: the newest recorded version at this level or above, and the client's payload.
struct Level<V, P> {
    newest: Option<V>,
    payload: P,
}

/// The level stack of the last entry's path (see the module documentation).
pub(crate) struct Shadow<V, P> {
    levels: Vec<Level<V, P>>,
}

impl<V: Copy, P> Shadow<V, P> {
    /// An empty stack: nothing recorded.
    pub(crate) fn new() -> Shadow<V, P> {
        Shadow { levels: Vec::new() }
    }

    /// Align to a path of `depth` levels whose first `shared` levels are those of the last
    /// path (its shared prefix): keep those, and open the rest with `open(level)`, each
    /// inheriting its parent's newest version. With `shared == depth` (the same path again)
    /// the path's own level, with what it recorded, stays.
    pub(crate) fn align(&mut self, shared: usize, depth: usize, mut open: impl FnMut(usize) -> P) {
        self.levels.truncate(shared.min(depth));
        while self.levels.len() < depth {
            let newest = self.levels.last().and_then(|level| level.newest);
            let payload = open(self.levels.len());
            self.levels.push(Level { newest, payload });
        }
    }

    /// The newest version recorded at the top level or any of its ancestors (`None`:
    /// nothing, or an empty stack).
    pub(crate) fn newest(&self) -> Option<V> {
        self.levels.last().and_then(|level| level.newest)
    }

    /// Record `version` at the top level: it is what shadows the levels opened below it
    /// (and, for a level kept across versions, this path's older versions). The caller
    /// records only a version it found not shadowed, so it is the newest along the chain.
    /// Nothing happens on an empty stack.
    pub(crate) fn record(&mut self, version: V) {
        if let Some(top) = self.levels.last_mut() {
            top.newest = Some(version);
        }
    }

    /// Keep only the outermost level, with `newest` as what it records (`None`: nothing).
    pub(crate) fn reset_root(&mut self, newest: Option<V>) {
        self.levels.truncate(1);
        if let Some(root) = self.levels.first_mut() {
            root.newest = newest;
        }
    }

    /// The top level's payload (`None`: an empty stack).
    pub(crate) fn top_mut(&mut self) -> Option<&mut P> {
        self.levels.last_mut().map(|level| &mut level.payload)
    }

    /// Every level's payload, outermost first.
    pub(crate) fn payloads(&self) -> impl DoubleEndedIterator<Item = &P> {
        self.levels.iter().map(|level| &level.payload)
    }

    /// The payloads of the top level's ancestors (every level but the top), outermost first.
    pub(crate) fn ancestors(&self) -> impl DoubleEndedIterator<Item = &P> {
        let below_top = self.levels.len().saturating_sub(1);
        self.levels[..below_top].iter().map(|level| &level.payload)
    }
}

#[cfg(test)]
mod tests {
    use super::Shadow;

    /// Walk `(path, time)` rows the way the reader does (a version is hidden unless strictly
    /// newer than the newest along its chain; each path's first row only); return which
    /// rows are visible. Paths are `.`-separated components.
    fn visible(rows: &[(&str, u64)]) -> Vec<bool> {
        let mut shadow: Shadow<u64, String> = Shadow::new();
        let mut last: Vec<&str> = Vec::new();
        rows.iter()
            .map(|&(path, time)| {
                let components: Vec<&str> = path.split('.').collect();
                let shared = components.iter().zip(&last).take_while(|(a, b)| a == b).count();
                let depth = components.len();
                shadow.align(shared.min(depth - 1), depth, |i| components[i].to_owned());
                assert_eq!(shadow.payloads().cloned().collect::<Vec<_>>(), components);
                last = components;
                let shown = shadow.newest().is_none_or(|newest| time > newest);
                if shown {
                    shadow.record(time);
                }
                shown
            })
            .collect()
    }

    #[test]
    fn a_newer_ancestor_version_hides_older_descendants() {
        let rows = [("d", 20), ("d.a", 10), ("d.a.b", 30), ("d.a.b.c", 25), ("d.c", 25)];
        assert_eq!(visible(&rows), [true, false, true, false, true]);
    }

    #[test]
    fn levels_opened_below_a_hidden_path_inherit_the_chain() {
        // `a` at 5 is hidden by `d` at 20 but its child at 15 is still hidden by `d`.
        let rows = [("d", 20), ("d.a", 5), ("d.a.b", 15), ("d.a.b.c", 21)];
        assert_eq!(visible(&rows), [true, false, false, true]);
    }

    #[test]
    fn aligning_forgets_the_siblings_subtree() {
        // `d.a` at 30 shadows its own subtree only: `d.b.x` at 10 is visible.
        let rows = [("d.a", 30), ("d.a.x", 10), ("d.b.x", 10), ("e.a", 1)];
        assert_eq!(visible(&rows), [true, false, true, true]);
    }

    #[test]
    fn ties_are_the_clients_call() {
        // Equal times: hidden under "strictly newer"; the chain still holds 20.
        let rows = [("d", 20), ("d.a", 20), ("d.a.b", 21)];
        assert_eq!(visible(&rows), [true, false, true]);
    }

    #[test]
    fn the_same_path_keeps_its_level_and_ancestors_are_the_levels_below_the_top() {
        let mut shadow: Shadow<u64, &str> = Shadow::new();
        assert_eq!(shadow.newest(), None);
        assert!(shadow.top_mut().is_none());
        shadow.record(1); // an empty stack records nothing
        assert_eq!(shadow.newest(), None);
        shadow.align(0, 2, |i| ["d", "a"][i]);
        shadow.record(7);
        // The same path again (GC: an older version): its level and record stay.
        shadow.align(2, 2, |_| unreachable!("nothing to open"));
        assert_eq!(shadow.newest(), Some(7));
        assert_eq!(shadow.ancestors().copied().collect::<Vec<_>>(), ["d"]);
        // A child opens below it and inherits 7; a sibling of `a` does not.
        shadow.align(2, 3, |_| "x");
        assert_eq!(shadow.newest(), Some(7));
        assert_eq!(shadow.ancestors().rev().copied().collect::<Vec<_>>(), ["a", "d"]);
        shadow.align(1, 2, |_| "b");
        assert_eq!(shadow.newest(), None);
        *shadow.top_mut().expect("aligned") = "c";
        assert_eq!(shadow.payloads().copied().collect::<Vec<_>>(), ["d", "c"]);
    }
}
