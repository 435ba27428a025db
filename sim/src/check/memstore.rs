//! The server-wide memstore limit, judged from the run's own account: which tablet a
//! memory flush must take, and how much log each tablet may keep.
//!
//! The account follows the events alone, never the engine's counts: each (node, tablet)
//! holds the entries with writes it applied since that tablet's last flush there, by log
//! index, with their hybrid times (a flush, a compaction, a memory flush take them; a
//! power cut loses them). A memory flush must take the tablet holding the oldest write
//! (YugabyteDB's `TabletMemoryManager::FlushTabletIfLimitExceeded`: smallest
//! `OldestMutableMemtableWriteHybridTime`), the lower tablet id on a tie, among what each
//! tablet had applied when the node chose: the flush names each running tablet's last
//! applied index then (where in its log the choice fell; replicas apply in the background,
//! and the run collects what they applied afterwards). What a bootstrap replays, or a
//! snapshot installs, the account does not follow: such a tablet is unknown until its next
//! flush, and a choice it could change is not judged.

use docsim_engine::{HybridTime, TabletId};
use std::collections::{BTreeMap, BTreeSet};

/// The entries with writes a replica holds unflushed: log index → hybrid time.
type Held = BTreeMap<u64, HybridTime>;

/// The run's own account of what each node's memtables hold.
#[derive(Default)]
pub struct Account {
    held: BTreeMap<(u64, TabletId), Held>,
    unknown: BTreeSet<(u64, TabletId)>,
}

impl Account {
    /// Node `node`'s replica of `tablet` applied entry `index`, a write at `ht`.
    pub fn applied(&mut self, node: u64, tablet: &TabletId, index: u64, ht: HybridTime) {
        self.held.entry((node, tablet.clone())).or_default().insert(index, ht);
    }

    /// Node `node` flushed `only` (or every tablet): their memtables are empty.
    pub fn flushed(&mut self, node: u64, only: Option<&TabletId>) {
        let hit = |(n, t): &(u64, TabletId)| *n == node && only.is_none_or(|o| o == t);
        self.held.retain(|key, _| !hit(key));
        self.unknown.retain(|key| !hit(key));
    }

    /// The memstore limit flushed node `node`'s `tablet` when it had applied up to index
    /// `upto`: the entries up to it are flushed.
    pub fn flushed_upto(&mut self, node: u64, tablet: &TabletId, upto: u64) {
        let key = (node, tablet.clone());
        if let Some(held) = self.held.get_mut(&key) {
            held.retain(|index, _| *index > upto);
        }
        self.unknown.remove(&key);
    }

    /// Node `node`'s memtables of `tablets` hold what the account cannot follow (a
    /// bootstrap replayed into them, a snapshot was installed).
    pub fn unknowable(&mut self, node: u64, tablets: impl IntoIterator<Item = TabletId>) {
        self.unknown.extend(tablets.into_iter().map(|t| (node, t)));
    }

    /// Node `node` lost its power: its memtables are empty (until bootstrap replays).
    pub fn crashed(&mut self, node: u64) {
        self.flushed(node, None);
    }

    /// The oldest write node `node`'s replica of `tablet` held when it had applied up to
    /// index `upto`.
    pub fn oldest(&self, node: u64, tablet: &TabletId, upto: u64) -> Option<HybridTime> {
        let held = self.held.get(&(node, tablet.clone()))?;
        held.range(..=upto).map(|(_, ht)| *ht).min()
    }

    /// The tablet a memory flush of node `node` must take, of its running tablets with
    /// the last index each had applied then: `Ok(None)` when none holds a write,
    /// `Err(())` when the account cannot tell.
    pub fn choice(&self, node: u64, running: &[(TabletId, u64)]) -> Result<Option<TabletId>, ()> {
        if running.iter().any(|(t, _)| self.unknown.contains(&(node, t.clone()))) {
            return Err(());
        }
        let held = running.iter().filter_map(|(t, upto)| Some((self.oldest(node, t, *upto)?, t)));
        Ok(held.min().map(|(_, t)| t.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_is_the_oldest_write_the_lower_tablet_on_a_tie() {
        let (docs, t) = (TabletId::Docs, TabletId::table("t"));
        let ht = HybridTime::from_micros;
        let at = |upto: u64| [(docs.clone(), upto), (t.clone(), upto)];
        let mut account = Account::default();
        assert_eq!(account.choice(1, &at(9)), Ok(None));
        account.applied(1, &t, 1, ht(20));
        account.applied(1, &docs, 1, ht(30));
        account.applied(1, &t, 2, ht(40));
        assert_eq!(account.choice(1, &at(9)), Ok(Some(t.clone())), "t's write at 20");
        assert_eq!(account.choice(1, &at(0)), Ok(None), "nothing applied yet then");
        account.flushed_upto(1, &t, 1);
        assert_eq!(account.choice(1, &at(9)), Ok(Some(docs.clone())), "docs at 30, t at 40");
        account.applied(1, &t, 3, ht(30));
        assert_eq!(account.choice(1, &at(9)), Ok(Some(docs.clone())), "a tie: docs < t");
        assert_eq!(account.choice(2, &at(9)), Ok(None), "another node's");
        account.unknowable(1, [t.clone()]);
        assert_eq!(account.choice(1, &at(9)), Err(()));
        let only_docs = [(docs.clone(), 9)];
        assert_eq!(account.choice(1, &only_docs), Ok(Some(docs.clone())), "t not running");
        account.crashed(1);
        assert_eq!(account.choice(1, &at(9)), Ok(None));
    }
}
