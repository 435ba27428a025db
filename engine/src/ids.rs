//! Identifiers many layers name: a Raft entry's op id, a tablet's id, and which part of
//! its table's 16-bit hash space a tablet owns. A leaf of the module graph (it imports
//! nothing of the engine), so the storage layer can record an op id as its flushed
//! frontier without naming the log.

use std::fmt;

/// A Raft op id: the term and index of a log entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OpId {
    pub term: u64,
    pub index: u64,
}

impl OpId {
    pub fn new(term: u64, index: u64) -> OpId {
        OpId { term, index }
    }
}

impl fmt::Display for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.term, self.index)
    }
}

/// Which tablet of a node. Ordered as `dump` prints: the document tablet first, then each
/// table's tablets in hash order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TabletId {
    /// The document tablet (document commands and Redis keys).
    Docs,
    /// One tablet of a CQL table: the table's only one, or one range of its hash space.
    Table(String, Part),
}

impl TabletId {
    /// The only tablet of CQL table `name`.
    pub fn table(name: &str) -> TabletId {
        TabletId::Table(name.to_owned(), Part::WHOLE)
    }

    /// The CQL table this tablet belongs to, if any.
    pub fn table_name(&self) -> Option<&str> {
        match self {
            TabletId::Docs => None,
            TabletId::Table(name, _) => Some(name),
        }
    }
}

impl TabletId {
    /// What a command's `table=` names this tablet by: `t` (a table of one tablet) or
    /// `t/2` (its tablet 2 of several, counted from 0 in hash order); `None` for the
    /// document tablet.
    pub fn table_ref(&self) -> Option<String> {
        match self {
            TabletId::Docs => None,
            TabletId::Table(name, part) if part.count == 1 => Some(name.clone()),
            TabletId::Table(name, part) => Some(format!("{name}/{}", part.index)),
        }
    }
}

impl fmt::Display for TabletId {
    /// `docs`, `table=t` or `table=t/2`: how every line naming a tablet names it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.table_ref() {
            None => f.write_str("docs"),
            Some(name) => write!(f, "table={name}"),
        }
    }
}

impl TabletId {
    /// How a line of a tablet's own (`files`, `log`, `stats`) opens: nothing for the
    /// document tablet, `table=t ` or `table=t/2 ` for a table's.
    pub fn line_prefix(&self) -> String {
        match self {
            TabletId::Docs => String::new(),
            TabletId::Table(..) => format!("{self} "),
        }
    }
}

/// YugabyteDB's largest partition hash (`kMaxPartitionKey`, src/yb/dockv/partition.h).
pub const MAX_HASH: u32 = 0xffff;

/// Tablet `index` of a table split into `count` tablets by ranges of the 16-bit hash, as
/// YugabyteDB's `PartitionSchema::CreateHashPartitions` (src/yb/dockv/partition.cc)
/// splits it: tablet i owns `[i * 65536 / count, (i + 1) * 65536 / count)`, the last one up
/// to `0xffff` inclusive. Ordered by index, which is hash order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Part {
    pub index: u16,
    pub count: u16,
}

impl Part {
    /// A table's only tablet: the whole hash space.
    pub const WHOLE: Part = Part { index: 0, count: 1 };

    /// The parts of a table of `count` tablets, in hash order.
    pub fn all(count: u16) -> impl Iterator<Item = Part> {
        (0..count).map(move |index| Part { index, count })
    }

    /// The hashes this tablet owns: `start..=end`.
    pub fn hash_range(self) -> std::ops::RangeInclusive<u16> {
        let bound = |i: u32| i * (MAX_HASH + 1) / u32::from(self.count);
        let start = bound(u32::from(self.index));
        let end = bound(u32::from(self.index) + 1) - 1;
        start as u16..=end as u16
    }

    /// The tablet of a table of `count` tablets that owns `hash`: the one whose range
    /// holds it (a table has at most a few hundred).
    pub fn owning(count: u16, hash: u16) -> Part {
        let found = Part::all(count).find(|p| p.hash_range().contains(&hash));
        found.expect("the hash ranges of a table cover 0..=0xffff")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tablets_split_the_hash_space_as_create_hash_partitions_does() {
        // YugabyteDB: pend = (i + 1) * (kMaxPartitionKey + 1) / num_tablets.
        let starts: Vec<u16> = Part::all(3).map(|p| *p.hash_range().start()).collect();
        assert_eq!(starts, [0, 21845, 43690]);
        let ends: Vec<u16> = Part::all(3).map(|p| *p.hash_range().end()).collect();
        assert_eq!(ends, [21844, 43689, 0xffff]);
        assert_eq!(Part::WHOLE.hash_range(), 0..=0xffff);
        for count in [1, 2, 3, 4, 7, 16, 100, 0xffff] {
            let mut next = 0u32;
            for p in Part::all(count) {
                assert_eq!(u32::from(*p.hash_range().start()), next, "{count} tablets");
                next = u32::from(*p.hash_range().end()) + 1;
            }
            assert_eq!(next, MAX_HASH + 1, "{count} tablets cover the space");
        }
    }

    #[test]
    fn the_owner_of_a_hash_is_the_tablet_whose_range_holds_it() {
        for count in [1, 3, 4, 16, 100] {
            for hash in (0..=0xffffu32).step_by(97).chain([0xffff]) {
                let hash = hash as u16;
                let owner = Part::owning(count, hash);
                let holders: Vec<Part> =
                    Part::all(count).filter(|p| p.hash_range().contains(&hash)).collect();
                assert_eq!(holders, [owner], "hash {hash:#06x} of {count} tablets");
            }
        }
    }
}
