//! The document scans: what a read needs of one document (`DocDb::scan_document_at`,
//! `DocDb::get`) or of every document under a key prefix (`DocDb::scan_documents`),
//! decided on raw key bytes (`NeededAt`) and handed to the reader in key order, packed
//! rows read back (`db/packed.rs`).

use super::packed::{self, PackedCells};
use super::range_bounds::{self, RangeCondition};
use super::{corrupt_key, decode_doc_entry, with_key, DocDb};
use crate::document::Document;
use crate::encoding::{bloom_prefix_len, doc_key_len, DocKey, DocPath, Value, ValueKind};
use crate::entity::Iter;
use crate::error::{Error, Result};
use crate::hybrid_time::HybridTime;
use crate::reader::{read_subdocument, DocEntry, ReadConfig};
use crate::shadow::Shadow;
use rocksdb::statistics::Ticker;

/// What a tablet's reads skipped and read since it opened ([`DocDb::read_stats`]): counts
/// of file visits (a file skipped by ten seeks counts ten times), not of distinct files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Files a seek's bloom filter kept out (RocksDB's `*_LEVEL_SEEK_FILTERED`) and let
    /// in (`*_LEVEL_SEEK_FILTER_MATCH`); `None` without statistics.
    pub bloom: Option<(u64, u64)>,
    /// Files scans with range conditions skipped by their bounds.
    pub pruned: u64,
    /// Files such scans read.
    pub pruning_read: u64,
}

/// Which documents of a scan's prefix it reads: from a key on (or just past the
/// documents starting with it: `after`), and at most `limit` of them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Window<'a> {
    pub from: Option<&'a [u8]>,
    pub after: bool,
    pub limit: Option<usize>,
}

impl Window<'_> {
    /// Where the scan of `prefix` seeks first.
    fn start(&self, prefix: &[u8]) -> Vec<u8> {
        let from = match (self.from, self.after) {
            (Some(key), true) => prefix_successor(key),
            (Some(key), false) => Some(key.to_vec()),
            (None, _) => None,
        };
        match from {
            Some(from) if from.as_slice() > prefix => from,
            _ => prefix.to_vec(),
        }
    }
}

impl DocDb {
    /// The entries of `doc_key`'s document that a read at `read_ht` needs, in key order,
    /// preceded by its colocated table key's (the table tombstone is an ancestor of every
    /// document of the table).
    pub fn scan_document_at(&self, doc_key: &DocKey, read_ht: HybridTime) -> Result<Vec<DocEntry>> {
        self.scan_document(doc_key, NeededAt::new(read_ht))
    }

    /// Like [`DocDb::scan_document_at`], but every path's newest version at or before
    /// `read_ht` (and the version beneath a TTL-only record), also one an ancestor
    /// overwrote later: what a YugabyteDB write batch's prefix seeks see (`doc_write.rs`).
    /// The reader still reads these entries right.
    pub fn scan_document_newest_at(
        &self,
        doc_key: &DocKey,
        read_ht: HybridTime,
    ) -> Result<Vec<DocEntry>> {
        self.scan_document(doc_key, NeededAt { skip_overwritten: false, ..NeededAt::new(read_ht) })
    }

    fn scan_document(&self, doc_key: &DocKey, needed: NeededAt) -> Result<Vec<DocEntry>> {
        let read_ht = needed.read_ht;
        let mut entries = Vec::new();
        if let Some(id) = doc_key.colocation_id {
            if !doc_key.is_table_key() {
                let table = DocKey { colocation_id: Some(id), ..DocKey::default() };
                entries.extend(self.table_tombstone_at(&table.encode(), read_ht)?);
            }
        }
        self.scan_doc_prefix(&doc_key.encode(), doc_key.is_table_key(), needed, &mut entries)?;
        Ok(entries)
    }

    /// The newest tombstone at or before `read_ht` at the table key `table` (encoded): the
    /// only entry there that is an ancestor of the table's documents (`reader.rs`).
    fn table_tombstone_at(&self, table: &[u8], read_ht: HybridTime) -> Result<Option<DocEntry>> {
        let mut it = self.document_iterator(table);
        while let (Some(key), Some(value)) = (it.key(), it.value()) {
            if !key.starts_with(table) {
                break;
            }
            let entry = decode_doc_entry(key, table.len(), true, value)?;
            if !entry.subkeys.is_empty() {
                break; // the table key's own versions come first; the rest are below it
            }
            if entry.doc_ht.ht <= read_ht && entry.value.kind == ValueKind::Tombstone {
                return Ok(Some(entry));
            }
            it.next();
        }
        it.status().map_err(Error::storage)?;
        Ok(None)
    }

    /// The entries `needed` keeps: versions newer than the read, older versions of a path
    /// and (usually) versions an ancestor overwrote are skipped on their raw bytes, without
    /// decoding (reads of documents with long histories stay cheap).
    fn scan_doc_prefix(
        &self,
        doc: &[u8],
        table_key: bool,
        mut needed: NeededAt,
        out: &mut Vec<DocEntry>,
    ) -> Result<()> {
        let mut it = self.document_iterator(doc);
        let (from, mut packed) = (out.len(), false);
        while let (Some(key), Some(value)) = (it.key(), it.value()) {
            if !key.starts_with(doc) {
                break; // only without an upper bound (a prefix of 0xff bytes)
            }
            if needed.needed(key, value, doc.len())? {
                let mut entry = decode_doc_entry(key, doc.len(), table_key, value)?;
                if let Some(packed) = self.entity_as_packed(key, &entry.value, &it)? {
                    entry.value = packed;
                }
                packed |= packed::push_entry(entry, (&self.packings, self.plants), key, out)?;
            }
            it.next();
        }
        it.status().map_err(Error::storage)?;
        if packed {
            out[from..].sort_by(DocEntry::key_cmp);
        }
        Ok(())
    }

    /// An iterator over the keys of one document (or the table key) `doc`, positioned at
    /// the first. Bounded above by the key's successor, the prefix bloom filters let the
    /// seek skip files that hold none of its keys. (Through the C API, so an entity's
    /// columns can be read where the iterator is.)
    fn document_iterator(&self, doc: &[u8]) -> Iter<'_> {
        let bound = prefix_successor(doc);
        // Without a bound (a key of 0xff bytes), in total order.
        let total_order = bound.is_none();
        let mut it = Iter::new(self.db(), bound, total_order);
        it.seek(doc);
        it
    }

    /// Every document whose key starts with `prefix` (e.g. one hash key's rows), each with
    /// what a read with `read` needs of it, in key order.
    /// With `conditions` on range components (and pruning on) the scan reads only the SST
    /// files whose bounds may meet them, with an iterator of its own (`db/range_bounds.rs`).
    pub(crate) fn scan_documents(
        &self,
        prefix: &[u8],
        read: &ReadConfig,
        conditions: &[RangeCondition],
        window: Window<'_>,
    ) -> Result<Vec<(DocKey, DocRead)>> {
        // A prefix holding a whole bloom prefix (a partition's, or more) seeks in prefix
        // mode: the bloom filters skip the files without the partition. Others (a whole
        // table's) seek in total order.
        let prefix_mode = bloom_prefix_len(prefix).is_some_and(|len| len <= prefix.len());
        if self.pruning && !conditions.is_empty() {
            let mut it = self.pruning_iterator(prefix_mode, conditions);
            return self.scan_with(&mut it, prefix, read, window);
        }
        // SAFETY: the database closes only in `drop`, which forgets the iterator first.
        let mut taken = unsafe { self.scan_iter.take(self.db(), prefix_mode) };
        let docs = self.scan_with(&mut taken.iter, prefix, read, window)?;
        self.scan_iter.keep(taken);
        Ok(docs)
    }

    /// An iterator that reads only the files whose range bounds may meet `conditions`,
    /// counting the files it skips and reads.
    fn pruning_iterator(&self, prefix_mode: bool, conditions: &[RangeCondition]) -> Iter<'_> {
        let (conditions, plants, counts) = (conditions.to_vec(), self.plants, self.pruned.clone());
        let keep = Box::new(move |property: Option<&[u8]>| {
            let kept = range_bounds::keep_file(property, &conditions, plants);
            counts.count(kept);
            kept
        });
        Iter::filtered(self.db(), (None, !prefix_mode), range_bounds::PROPERTY, keep)
    }

    /// What this tablet's reads skipped and read since it opened: RocksDB's statistics
    /// for the files a seek's bloom filter kept out and let in (every file is in level 0
    /// of one, so both the last-level and the other tickers are summed), and docsim's
    /// count of the files range pruning skipped and read.
    pub fn read_stats(&self) -> ReadStats {
        let ticker = |t| self.opts.get_ticker_count(t);
        let (pruned, pruning_read) = self.pruned.get();
        let bloom = self.statistics.then(|| {
            let filtered =
                ticker(Ticker::LastLevelSeekFiltered) + ticker(Ticker::NonLastLevelSeekFiltered);
            let passed = ticker(Ticker::LastLevelSeekFilterMatch)
                + ticker(Ticker::NonLastLevelSeekFilterMatch);
            (filtered, passed)
        });
        ReadStats { bloom, pruned, pruning_read }
    }

    /// [`DocDb::scan_documents`] with the iterator `it`.
    fn scan_with(
        &self,
        it: &mut Iter<'_>,
        prefix: &[u8],
        read: &ReadConfig,
        window: Window<'_>,
    ) -> Result<Vec<(DocKey, DocRead)>> {
        it.seek(&window.start(prefix));
        let limit = window.limit.unwrap_or(usize::MAX);
        let mut docs = Documents::default();
        let mut needed = NeededAt::new(read.read_ht);
        while let (Some(key), Some(value)) = (it.key(), it.value()) {
            if !key.starts_with(prefix) {
                break;
            }
            let doc_len = doc_key_len(key).ok_or_else(|| corrupt_key(key, "no document key"))?;
            if needed.needed(key, value, doc_len)? {
                if key[..doc_len] != docs.current[..] {
                    if docs.out.len() == limit {
                        break; // the window is full: this document is the next one's
                    }
                    docs.finish(read);
                    docs.start(key, doc_len)?;
                }
                let table_key = docs.out.last().expect("started above").0.is_table_key();
                let mut entry = decode_doc_entry(key, doc_len, table_key, value)?;
                if let Some(packed) = self.entity_as_packed(key, &entry.value, it)? {
                    entry.value = packed;
                }
                docs.add(packed::scanned(entry, (&self.packings, self.plants), key)?);
            }
            it.next();
        }
        it.status().map_err(Error::storage)?;
        docs.finish(read);
        Ok(docs.out)
    }

    /// The subdocument at `path` as of `read_ht`, with the table default TTL.
    pub fn get(
        &self,
        path: &DocPath,
        read_ht: HybridTime,
        table_ttl_ms: Option<u64>,
    ) -> Result<Option<Document>> {
        self.check_read_time(read_ht)?;
        let entries = self.scan_document_at(&path.doc_key, read_ht)?;
        Ok(read_subdocument(entries, path, self.read_config(read_ht, table_ttl_ms)))
    }

    /// What a read at `read_ht` with this table default TTL is, on this instance.
    pub(crate) fn read_config(&self, read_ht: HybridTime, table_ttl_ms: Option<u64>) -> ReadConfig {
        ReadConfig { read_ht, table_ttl_ms, plants: self.plants }
    }
}

/// What a read needs of one document.
pub(crate) enum DocRead {
    /// Its entries in key order, packed rows expanded (`reader.rs` reads them).
    Entries(Vec<DocEntry>),
    /// The row a packed row read alone stands for ([`packed::PackedRead::alone`]).
    Packed(PackedCells),
}

/// The documents of a scan as it goes: the last one's key, and its packed row while it is
/// the only entry seen (it is expanded as soon as another one comes).
#[derive(Default)]
struct Documents {
    out: Vec<(DocKey, DocRead)>,
    current: Vec<u8>,
    held: Option<packed::PackedRead>,
    /// The last document's entries include an expanded packed row (they need sorting).
    packed: bool,
}

impl Documents {
    /// Start the document whose key is `key[..doc_len]`.
    fn start(&mut self, key: &[u8], doc_len: usize) -> Result<()> {
        self.current.clear();
        self.current.extend_from_slice(&key[..doc_len]);
        let (doc, _) = DocKey::decode(&self.current).map_err(|e| with_key(key, e))?;
        self.out.push((doc, DocRead::Entries(Vec::new())));
        Ok(())
    }

    fn entries(&mut self) -> &mut Vec<DocEntry> {
        match &mut self.out.last_mut().expect("a document started").1 {
            DocRead::Entries(entries) => entries,
            DocRead::Packed(_) => unreachable!("a finished document takes no entries"),
        }
    }

    /// Add a needed entry of the last document.
    fn add(&mut self, scanned: packed::Scanned) {
        if let Some(held) = self.held.take() {
            self.expand(held);
        }
        match scanned {
            packed::Scanned::Packed(row) if self.entries().is_empty() => self.held = Some(row),
            packed::Scanned::Packed(row) => self.expand(row),
            packed::Scanned::Entry(entry) => self.entries().push(entry),
        }
    }

    /// Finish the last document: a packed row alone becomes its row, or is expanded.
    fn finish(&mut self, read: &ReadConfig) {
        if let Some(held) = self.held.take() {
            match held.alone(read) {
                Ok(cells) => self.out.last_mut().expect("held in one").1 = DocRead::Packed(cells),
                Err(held) => self.expand(held),
            }
        }
        if std::mem::take(&mut self.packed) {
            self.entries().sort_by(DocEntry::key_cmp);
        }
    }

    /// Expand a packed row into the last document's entries (which then need sorting).
    fn expand(&mut self, row: packed::PackedRead) {
        row.expand(self.entries());
        self.packed = true;
    }
}

/// Which stored versions a read at `read_ht` needs, decided on raw key bytes in key order
/// (a path's versions newest first, a parent before its children), without decoding:
/// per path only the newest version at or before the read, and none that a version of an
/// ancestor overwrote at a later hybrid time. Ties at one hybrid time are left to the
/// reader, which orders them by write id. (Seeking past long runs of unneeded versions
/// was measured slower than stepping over them: a RocksDB seek costs dozens of steps.)
struct NeededAt {
    read_ht: HybridTime,
    /// Skip versions an ancestor overwrote (a read's scan); `false` keeps them.
    skip_overwritten: bool,
    /// The last version kept was a TTL-only record: the next older one of its path counts.
    beneath_ttl_only: bool,
    /// The path of the last version kept or overwritten: older versions of it are skipped.
    last_path: Vec<u8>,
    /// The levels of `last_path` (the document, each subkey), each with the newest hybrid
    /// time at or before the read along the chain.
    levels: Shadow<HybridTime, ()>,
    /// Where each level of the current key's path ends (scratch, reused across keys).
    ends: Vec<usize>,
}

impl NeededAt {
    fn new(read_ht: HybridTime) -> NeededAt {
        let (last_path, levels, ends) = (Vec::new(), Shadow::new(), Vec::new());
        NeededAt {
            read_ht,
            skip_overwritten: true,
            beneath_ttl_only: false,
            last_path,
            levels,
            ends,
        }
    }

    /// Whether the read needs the entry with this `key` and `value` (its document key ends
    /// at `doc_len`).
    fn needed(&mut self, key: &[u8], value: &[u8], doc_len: usize) -> Result<bool> {
        let end =
            level_ends(key, doc_len, &mut self.ends).ok_or_else(|| corrupt_key(key, "no '#'"))?;
        let path = &key[..end];
        let older_version = path == &self.last_path[..];
        if older_version && !self.beneath_ttl_only {
            return Ok(false); // an older version: checked first, it needs no decoding
        }
        let ht = crate::encoding::decode_doc_ht(&key[end + 1..], end + 1)
            .map_err(|e| with_key(key, e))?
            .ht;
        if ht > self.read_ht {
            return Ok(false);
        }
        // A TTL-only record or a packed row hides nothing: the version beneath it is
        // needed too, and its time does not overwrite anything.
        let ttl_only = Value::hides_nothing(value);
        if older_version {
            self.beneath_ttl_only = ttl_only;
            let shadowed = self.levels.newest().is_some_and(|ancestors_ht| ancestors_ht > ht);
            if !ttl_only && !shadowed {
                self.levels.record(ht);
            }
            return Ok(true);
        }
        self.beneath_ttl_only = false;
        // Levels of the last path that are prefixes of this one (encoded key entries are
        // self-delimiting, so a shared byte prefix ending at a level's end is that level).
        let common = path.iter().zip(&self.last_path).take_while(|(a, b)| a == b).count();
        let shared = self.ends.iter().take_while(|&&level_end| level_end <= common).count();
        let depth = self.ends.len();
        self.levels.align(shared.min(depth - 1), depth, |_| ());
        let needed = !self.skip_overwritten
            || self.levels.newest().is_none_or(|ancestors_ht| ancestors_ht <= ht);
        if needed && ttl_only {
            self.beneath_ttl_only = true;
        } else if needed {
            self.levels.record(ht);
        }
        self.last_path.clear();
        self.last_path.extend_from_slice(path);
        Ok(needed)
    }
}

/// The smallest key greater than every key starting with `prefix` (`None`: no such key).
fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut bound = prefix.to_vec();
    while let Some(last) = bound.pop() {
        if last < 0xFF {
            bound.push(last + 1);
            return Some(bound);
        }
    }
    None
}

/// Where the path of an encoded key ends (the position of its `#`), found by skipping the
/// subkeys after the document key without decoding them; `ends` gets where each level ends
/// (the document at `doc_len`, then each subkey).
fn level_ends(key: &[u8], doc_len: usize, ends: &mut Vec<usize>) -> Option<usize> {
    ends.clear();
    ends.push(doc_len);
    let hybrid_time = crate::encoding::tag::HYBRID_TIME;
    crate::encoding::skip_key_entries(key, doc_len, hybrid_time, |end| ends.push(end))
}

#[cfg(test)]
mod needed_at_tests {
    use super::NeededAt;
    use crate::encoding::{DocPath, KeyEntry, Primitive, SubDocKey};
    use crate::hybrid_time::{DocHybridTime, HybridTime};
    use crate::tests::doc_d as doc;

    /// The encoded key of `path` (subkey names) at `us` with write id 0.
    fn key(path: &[&str], us: u64) -> Vec<u8> {
        let subkeys = path.iter().map(|s| KeyEntry::asc(Primitive::String((*s).into()))).collect();
        let at = DocHybridTime::new(HybridTime::new(us, 0), 0);
        SubDocKey::new(DocPath::new(doc(), subkeys), at).encode()
    }

    /// Which of `keys` (given in RocksDB order) a read at `read_us` keeps.
    fn kept(keys: &[Vec<u8>], read_us: u64) -> Vec<bool> {
        let entries: Vec<(Vec<u8>, &[u8])> = keys.iter().map(|k| (k.clone(), &b"{"[..])).collect();
        kept_values(&entries, read_us)
    }

    /// Which of `entries` (keys with their values, in RocksDB order) a read keeps.
    fn kept_values(entries: &[(Vec<u8>, &[u8])], read_us: u64) -> Vec<bool> {
        let doc_len = doc().encode().len();
        let mut needed = NeededAt::new(HybridTime::new(read_us, 0));
        entries.iter().map(|(k, v)| needed.needed(k, v, doc_len).expect("well-formed")).collect()
    }

    #[test]
    fn newest_version_at_or_before_the_read_only() {
        let keys = [key(&["a"], 30), key(&["a"], 20), key(&["a"], 10)];
        assert_eq!(kept(&keys, 25), [false, true, false]);
        assert_eq!(kept(&keys, 5), [false, false, false]);
    }

    #[test]
    fn versions_an_ancestor_overwrote_later_are_skipped() {
        // Root marker at 20; a.b at 10 (overwritten), a.c at 30 (newer), `z` at 20 (the
        // same hybrid time as the root: left to the reader), z.y at 15 (overwritten).
        let keys = [
            key(&[], 20),
            key(&["a", "b"], 10),
            key(&["a", "c"], 30),
            key(&["z"], 20),
            key(&["z", "y"], 15),
        ];
        assert_eq!(kept(&keys, 40), [true, false, true, true, false]);
    }

    #[test]
    fn an_overwritten_path_does_not_hide_its_newer_children() {
        // `a` at 5 is hidden by the root at 20; `a.b` at 25 is newer than both.
        let keys = [key(&[], 20), key(&["a"], 5), key(&["a", "b"], 25), key(&["c"], 21)];
        assert_eq!(kept(&keys, 40), [true, false, true, true]);
        // Read before the root's version: nothing above `a` hides it.
        assert_eq!(kept(&keys, 10), [false, true, false, false]);
    }

    /// A version beneath a TTL-only record is needed (the record hides nothing), but if an
    /// ancestor overwrote it, it shadows nothing below it either: a child older than the
    /// ancestor stays hidden. (EXPIRE writes TTL-only records at document roots only,
    /// where nothing is above; the filter's rule holds at any level.)
    #[test]
    fn an_overwritten_version_beneath_a_ttl_only_record_hides_its_children_still() {
        let ttl_only: &[u8] = &[crate::encoding::tag::VALUE_MERGE_FLAGS];
        let entries: [(Vec<u8>, &[u8]); 4] = [
            (key(&[], 20), b"{"),
            (key(&["a"], 30), ttl_only),
            (key(&["a"], 10), b"{"), // beneath the record, overwritten by the root at 20
            (key(&["a", "b"], 15), b"{"), // overwritten by the root at 20 too
        ];
        assert_eq!(kept_values(&entries, 40), [true, true, true, false]);
    }

    /// Two TTL-only records above a version: both hide nothing, so the version beneath
    /// them is needed, and it (not either record) is what hides older children.
    #[test]
    fn a_version_beneath_two_ttl_only_records_hides_its_older_children_only() {
        let ttl_only: &[u8] = &[crate::encoding::tag::VALUE_MERGE_FLAGS];
        let entries: [(Vec<u8>, &[u8]); 6] = [
            (key(&["a"], 30), ttl_only),
            (key(&["a"], 20), ttl_only),
            (key(&["a"], 10), b"{"),
            (key(&["a", "b"], 15), b"{"), // newer than `a`'s version: kept
            (key(&["a", "c"], 5), b"{"),  // older: hidden by it
            (key(&["d"], 1), b"{"),
        ];
        assert_eq!(kept_values(&entries, 40), [true, true, true, true, false, true]);
    }

    #[test]
    fn prefix_successor_bounds_exactly_the_prefixed_keys() {
        use super::prefix_successor;
        assert_eq!(prefix_successor(b"ab!"), Some(b"ab\"".to_vec()));
        assert_eq!(prefix_successor(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff"), None);
        assert_eq!(prefix_successor(b""), None);
        let doc = doc().encode();
        let bound = prefix_successor(&doc).expect("a document key has a successor");
        let inside = key(&["z", "z"], 1);
        assert!(inside.starts_with(&doc) && inside < bound && doc < bound);
    }
}
