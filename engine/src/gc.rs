//! Compaction GC: which entries a compaction with history cutoff H may drop or rewrite.
//!
//! A pure function of the entries in key order ([`GcFeed::decide`]); the RocksDB
//! compaction filter (`db/gc_filter.rs`) is only an adapter around it. The invariant it must keep:
//! **a compaction with cutoff H changes no read at R >= H.**
//!
//! The feed keeps one level per path component (colocated table, document, subkeys...),
//! with the newest version at or below H seen at that level or above it (`overwrite`,
//! tracked by the shadow walk shared with the reader, `shadow.rs`), and every version seen
//! at the level (for TTL inheritance). For each entry:
//!
//! 1. not newer than `overwrite` → **drop**: a newer version of the path, or of an ancestor, at
//!    or below H hides it from every read at R >= H;
//! 2. above H → keep;
//! 3. at or below H (inclusive):
//!    - a tombstone: full compaction **drops** it (everything it hides is dropped by rule 1
//!      in the same compaction) — unless an older packed row of its row stays, which it
//!      may hide a value of (`decide_packed_row`), or it lies just beneath a packed row,
//!      which may hold a column folded in with an older write time (`beneath_hiding_nothing`);
//!      a minor compaction keeps it (older data may live outside);
//!    - expired at H through a TTL it inherits (or the table's): full compaction **drops**
//!      it; a minor one **keeps** it (`KeepInherited`): an ancestor's version in a file
//!      outside the compaction may carry the TTL it really inherits (`0`: never expires),
//!      so it cannot tell. A rule of docsim's own: YugabyteDB judges such an entry by the
//!      compaction's own stack alone and rewrites it as a tombstone
//!      (`CalcExpiration`, `docdb_compaction_context.cc`; the plant
//!      `yb-minor-gc-drops-ttl` puts that back too);
//!    - expired at H through a TTL of its own: full compaction **drops** it, as
//!      YugabyteDB does (`DocDBCompactionFeed::Feed`): what was written beneath it while it
//!      lived inherits its TTL and expires with it, and what is written after it ran out
//!      does not inherit it (`expiry.rs`: docsim's read rule, which makes this drop change
//!      no read; YugabyteDB's reader makes it change one, the plant
//!      `yb-expired-parent-gc`) — unless an older packed row of its row stays, whose
//!      value it may hide. A minor compaction rewrites it as a tombstone where nothing can
//!      be written beneath it (a row's liveness or scalar column, `SchemaGc`), as
//!      YugabyteDB does, and elsewhere **keeps it as it is** (`KeepExpired`): an entry in a
//!      file outside, written beneath it while it lived, inherits its TTL (YugabyteDB's
//!      tombstone there frees it: the plant `yb-minor-gc-drops-ttl`);
//!    - of a column dropped at or before H: **dropped** by every compaction (no read can
//!      show it: YugabyteDB's `CompactionSchemaInfo::deleted_cols`);
//!    - otherwise keep.

use crate::encoding::Ttl;
use crate::expiry;
use crate::hybrid_time::{DocHybridTime, HybridTime};
use crate::shadow::Shadow;
use std::fmt;
use std::sync::Arc;

/// Full or minor compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactionKind {
    /// Every file of the tablet: nothing older exists elsewhere.
    Full,
    /// Must assume older data may exist outside the compaction.
    Minor,
}

/// What one compaction knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GcParams {
    /// History cutoff, inclusive.
    pub cutoff_ht: HybridTime,
    /// Full or minor.
    pub kind: CompactionKind,
    /// The table default TTL.
    pub table_ttl_ms: Option<u64>,
    /// What the tablet's schema says (`Schema::gc`).
    pub schema: Arc<SchemaGc>,
    /// The expired entries (path components, version) a full compaction keeps all the
    /// same ([`ExpiredKeeps`]).
    pub keep_expired: Arc<KeptExpired>,
    /// The plant `gc-keeps-expired` (docsim's rule before it reclaimed expired entries):
    /// a full compaction keeps an expired entry with a TTL of its own.
    pub planted_keeps_expired: bool,
}

/// Expired entries to keep, by path components and version.
pub type KeptExpired = std::collections::BTreeSet<(Vec<Vec<u8>>, DocHybridTime)>;

impl GcParams {
    /// A compaction's parameters with nothing known of the schema (the document tablet's)
    /// and no plant.
    pub fn new(cutoff_ht: HybridTime, kind: CompactionKind, table_ttl_ms: Option<u64>) -> Self {
        let (schema, keep_expired) = (Arc::new(SchemaGc::default()), Arc::default());
        GcParams {
            cutoff_ht,
            kind,
            table_ttl_ms,
            schema,
            keep_expired,
            planted_keeps_expired: false,
        }
    }
}

/// What compaction needs of a table's schema: the encoded subkeys below a row that can
/// have no descendants (the liveness column, scalar columns, elements of collections of
/// scalars), and each dropped column's
/// encoded subkey with the hybrid time of its drop. Empty for the document tablet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SchemaGc {
    pub leaves: Vec<Vec<u8>>,
    /// Collection columns whose elements can have no descendants (a map's or list's of
    /// scalars, a set's), encoded.
    pub collections: Vec<Vec<u8>>,
    pub dropped: Vec<(Vec<u8>, HybridTime)>,
    /// Every write to the tablet is blind (a CQL table): none seeks what is stored to
    /// decide where to write markers ([`ExpiredKeeps`]).
    pub blind_writes: bool,
}

impl SchemaGc {
    /// Whether the path `components` (document, subkeys) can have no descendants.
    fn is_leaf(&self, components: &[&[u8]]) -> bool {
        let of = |columns: &[Vec<u8>]| columns.iter().any(|c| c.as_slice() == components[1]);
        match components.len() {
            2 => of(&self.leaves),
            3 => of(&self.collections), // an element
            _ => false,
        }
    }

    /// Whether the path belongs to a column dropped at or before `cutoff_ht`.
    fn dropped_by(&self, components: &[&[u8]], cutoff_ht: HybridTime) -> bool {
        let column = components.get(1);
        let dropped =
            |(c, at): &(Vec<u8>, HybridTime)| Some(&c.as_slice()) == column && *at <= cutoff_ht;
        self.dropped.iter().any(dropped)
    }
}

/// The verdict for one entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Keep unchanged.
    Keep,
    /// Drop.
    Drop,
    /// Replace the value by a tombstone (same key).
    Tombstone,
    /// Keep unchanged an expired entry with a TTL of its own: the TTL every child of its
    /// path inherits.
    KeepExpired,
    /// Keep unchanged, in a minor compaction, an entry that looks expired through a TTL it
    /// inherits: an ancestor outside the compaction may give it another.
    KeepInherited,
}

/// Entries that break the feed's premise (key order): the compaction keeps them and
/// reports the error after the compaction, instead of panicking on RocksDB's thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FeedError {
    /// An entry without a path component (every entry has at least its document).
    NoComponents,
    /// A path's versions did not arrive newest first.
    OutOfOrder { previous: DocHybridTime, next: DocHybridTime },
}

impl fmt::Display for FeedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FeedError::NoComponents => write!(f, "an entry without path components"),
            FeedError::OutOfOrder { previous, next } => write!(
                f,
                "versions of one path out of order: {next} after {previous} (newest first)"
            ),
        }
    }
}

impl std::error::Error for FeedError {}

/// One stored version, as GC sees it.
#[derive(Clone, Copy, Debug)]
struct Version {
    dht: DocHybridTime,
    ttl: Ttl,
    tombstone: bool,
    /// A TTL-only record or a packed row: it hides nothing, and no child inherits through
    /// it here (see `decide_ttl_only`, `decide_packed_row`).
    hides_nothing: bool,
    /// A packed row (see `decide_packed_row`).
    packed: bool,
}

/// What GC keeps per level besides the shadowing version (`Shadow`'s newest version at
/// or below the cutoff at this level or an ancestor, the `overwrite` of the rules above).
struct Level {
    component: Vec<u8>,
    /// Versions of this level's path, newest first.
    versions: Vec<Version>,
}

/// The GC decision state for one compaction: feed it every entry in key order.
pub struct GcFeed {
    params: GcParams,
    levels: Shadow<DocHybridTime, Level>,
    /// Whether the last entry was of a colocated table key's own document.
    in_table_doc: bool,
}

impl GcFeed {
    /// A feed for one compaction.
    pub fn new(params: GcParams) -> GcFeed {
        GcFeed { params, levels: Shadow::new(), in_table_doc: false }
    }

    /// The compaction's parameters.
    pub fn params(&self) -> &GcParams {
        &self.params
    }

    /// Decide one entry. `components` are the encoded path components (table, document,
    /// subkeys); entries must arrive in key order. An entry that breaks the order (or has
    /// no component) is an error, and the feed decides nothing for it.
    pub fn decide(
        &mut self,
        components: &[&[u8]],
        dht: DocHybridTime,
        is_tombstone: bool,
        ttl: Ttl,
    ) -> Result<Verdict, FeedError> {
        self.decide_in(components, dht, is_tombstone, ttl, false)
    }

    /// [`GcFeed::decide`] for an entry of a colocated table; `table_doc`: of the table key's
    /// own document (the table key and its subkeys), which sorts before every other
    /// document of the table. Its entries are fed like any; when the first other document
    /// follows, the table key's level keeps only its tombstones, the one entry there that
    /// is every document's ancestor (the reader's rule, `reader.rs`).
    pub fn decide_in(
        &mut self,
        components: &[&[u8]],
        dht: DocHybridTime,
        is_tombstone: bool,
        ttl: Ttl,
        table_doc: bool,
    ) -> Result<Verdict, FeedError> {
        let version =
            Version { dht, ttl, tombstone: is_tombstone, hides_nothing: false, packed: false };
        self.enter(components, version, table_doc)?;
        let exp = expiry::effective_expiration(ttl, dht.ht, self.inherited(dht));
        let params = &self.params;
        if params.schema.dropped_by(components, params.cutoff_ht) {
            return Ok(Verdict::Drop); // no read can show a dropped column
        }
        // A tombstone at a colocated table's own key hides the table's documents whatever
        // is written at the key after it: a minor compaction, which may not hold what it
        // hides, keeps it even under a newer entry there.
        let table_key = table_doc && components.len() == 1;
        if table_key && is_tombstone && params.kind == CompactionKind::Minor {
            return Ok(Verdict::Keep);
        }
        // Equal to an ancestor's version (two batches at one hybrid time) also hides it:
        // a child must be strictly newer, as the reader requires.
        if self.levels.newest().is_some_and(|overwrite| dht <= overwrite) {
            return Ok(Verdict::Drop);
        }
        if dht.ht > params.cutoff_ht {
            return Ok(Verdict::Keep);
        }
        self.levels.record(dht);
        if self.beneath_hiding_nothing() {
            // The version a TTL-only record or a packed row stands on, whatever it is
            // (see `beneath_hiding_nothing`).
            return Ok(Verdict::Keep);
        }
        let expired = expiry::is_expired(exp, dht.ht, params.table_ttl_ms, params.cutoff_ht);
        let own_ttl = matches!(ttl, Ttl::Ms(_));
        let leaf = params.schema.is_leaf(components);
        Ok(match (params.kind, is_tombstone, expired) {
            // Beneath a TTL-only record, or below one: the record's TTL is the one in effect,
            // which this feed does not judge (see `decide_ttl_only`), so the entry stays.
            (_, false, true) if self.under_ttl_only() => Verdict::KeepInherited,
            (kind, false, true) if own_ttl => self.expired_own_ttl(kind, (components, leaf), dht),
            // Over an older packed row a column's older value may live in the packed row,
            // which stays: a tombstone that hides it stays too, as does an expired value
            // (it hides it as a tombstone would).
            (CompactionKind::Full, true, _) if self.under_older_packed_row(components, dht) => {
                Verdict::Keep
            }
            (CompactionKind::Full, false, true) if self.under_older_packed_row(components, dht) => {
                Verdict::KeepExpired
            }
            (CompactionKind::Full, true, _) | (CompactionKind::Full, false, true) => Verdict::Drop,
            (CompactionKind::Minor, true, _) => Verdict::Keep,
            // Expired through an inherited TTL (or the table's): a minor compaction cannot
            // tell, as an ancestor's version in a file outside it may carry another TTL
            // (`0`: never) that the entry inherits instead.
            (CompactionKind::Minor, false, true) => Verdict::KeepInherited,
            (_, false, false) => Verdict::Keep,
        })
    }

    /// An entry at or below the cutoff expired through a TTL of its own. A full compaction
    /// drops it: nothing can still inherit that TTL (what was written beneath it while it
    /// lived expires with it, and what is written after it ran out does not inherit it,
    /// `expiry.rs`) — unless an older packed row of its row stays, whose value it may
    /// hide. A minor compaction rewrites it as a tombstone where nothing can be written
    /// beneath it (a liveness or scalar column: it hides what it hid, and an older
    /// version in a file outside stays hidden), as YugabyteDB does; elsewhere it keeps it:
    /// an entry outside the compaction written beneath it while it lived inherits its TTL.
    fn expired_own_ttl(
        &self,
        kind: CompactionKind,
        (components, leaf): (&[&[u8]], bool),
        dht: DocHybridTime,
    ) -> Verdict {
        let outlived = || {
            let path: Vec<Vec<u8>> = components.iter().map(|c| c.to_vec()).collect();
            self.params.keep_expired.contains(&(path, dht))
        };
        match kind {
            CompactionKind::Full if self.params.planted_keeps_expired => Verdict::KeepExpired,
            CompactionKind::Full if self.under_older_packed_row(components, dht) => {
                Verdict::KeepExpired
            }
            CompactionKind::Full if outlived() => Verdict::KeepExpired,
            CompactionKind::Full => Verdict::Drop,
            CompactionKind::Minor if leaf => Verdict::Tombstone,
            CompactionKind::Minor => Verdict::KeepExpired,
        }
    }

    /// [`GcFeed::decide_in`] for a TTL-only record (Redis EXPIRE). It hides nothing, so
    /// it shadows neither its path's older versions — the one beneath it is the value it
    /// gives its TTL to — nor its children; it goes when a newer version of its path or of
    /// an ancestor at or below the cutoff hides it, and is otherwise kept, expired or not.
    /// Nothing at or below its path is dropped for an expiry while it is there: the TTL
    /// in effect there is the record's, which this feed does not judge (an entry's own
    /// TTL, or the table's, may end sooner or later than the record's). Records live only
    /// at document roots outside colocated tables (`doc_write.rs` refuses others), so no
    /// ancestor version can shadow the version beneath a record and not the record. A
    /// rule of docsim's own: YugabyteDB folds a record at or below the cutoff into the
    /// version beneath, rewriting that version's TTL (`DocDBCompactionFeed::Feed`, its
    /// merge block, `docdb_compaction_context.cc`), which the `rocksdb` crate's compaction
    /// filter cannot do (`docs/findings.md`).
    pub fn decide_ttl_only(
        &mut self,
        components: &[&[u8]],
        dht: DocHybridTime,
        ttl: Ttl,
        table_doc: bool,
    ) -> Result<Verdict, FeedError> {
        let version = Version { dht, ttl, tombstone: false, hides_nothing: true, packed: false };
        self.decide_hiding_nothing(components, version, table_doc)
    }

    /// [`GcFeed::decide_in`] for a packed row at a row's root (`db/packed.rs`): it stands
    /// for one version of each packed column (and the liveness column), not for a version
    /// of the root, so it hides nothing, and like a TTL-only record it goes only when a
    /// newer version of the root at or below the cutoff hides it. While it is there, the
    /// row's columns are judged as a minor compaction judges them: a column tombstone or
    /// expired value at or below the cutoff may hide an older value inside the packed row,
    /// which stays, so it stays too (a rule of docsim's: found by the first metamorphic
    /// runs over the packed layout, seed 3, where a full compaction dropped a column's
    /// tombstone and the packed row's older value came back). Repacking folds them.
    ///
    /// `folded`: repacking folds this packed row into a newer one (`gc/repack.rs`), so it
    /// goes, and keeps nothing for its columns.
    pub fn decide_packed_row(
        &mut self,
        components: &[&[u8]],
        dht: DocHybridTime,
        ttl: Ttl,
        folded: bool,
    ) -> Result<Verdict, FeedError> {
        let version = Version { dht, ttl, tombstone: false, hides_nothing: true, packed: true };
        let mut verdict = self.decide_hiding_nothing(components, version, false)?;
        if folded {
            verdict = Verdict::Drop;
        }
        if verdict == Verdict::Drop {
            // Gone (hidden, folded into a newer one, or expired whole with what it hid):
            // nothing beneath needs keeping for it, and the version beneath it is judged
            // as if it had never been.
            let level = self.levels.top_mut().expect("entered");
            level.versions.pop();
        }
        Ok(verdict)
    }

    fn decide_hiding_nothing(
        &mut self,
        components: &[&[u8]],
        version: Version,
        table_doc: bool,
    ) -> Result<Verdict, FeedError> {
        let dht = version.dht;
        self.enter(components, version, table_doc)?;
        let hidden = self.levels.newest().is_some_and(|overwrite| dht <= overwrite);
        Ok(if hidden { Verdict::Drop } else { Verdict::Keep })
    }

    /// Whether a packed row older than `dht` that the compaction keeps is among the
    /// versions of the entry's ancestors (its row's root): the entry may hide one of its
    /// values.
    fn under_older_packed_row(&self, components: &[&[u8]], dht: DocHybridTime) -> bool {
        // Only a column a packed row can hold (the liveness column, a scalar column): a
        // collection's or jsonb's entries are never in one.
        if !(components.len() == 2 && self.params.schema.is_leaf(components)) {
            return false;
        }
        let older_packed = |v: &Version| v.packed && v.dht < dht;
        self.levels.ancestors().any(|level| level.versions.iter().any(older_packed))
    }

    /// Whether the entry just entered is the version beneath a TTL-only record or a
    /// packed row: the version of its path just newer than it hides nothing. It stays:
    /// without it the record would read as a tombstone at its own time, and a packed row
    /// may hold a column folded in with its own write time, older than a row tombstone
    /// beneath the row, which only that tombstone hides (golden
    /// `packed_tombstone_beneath_folded_column.ds`).
    fn beneath_hiding_nothing(&self) -> bool {
        let Some(own) = self.levels.payloads().last() else { return false };
        let newer = &own.versions[..own.versions.len().saturating_sub(1)];
        newer.last().is_some_and(|v| v.hides_nothing)
    }

    /// Whether the entry just entered has a TTL-only record above it at its own level or
    /// at an ancestor's (a packed row passes no TTL down: `db/packed.rs`).
    fn under_ttl_only(&self) -> bool {
        let ttl_only = |v: &Version| v.hides_nothing && !v.packed;
        self.levels.payloads().any(|level| level.versions.iter().any(ttl_only))
    }

    /// Align the levels to an entry's path and add its version there (newest first).
    fn enter(
        &mut self,
        components: &[&[u8]],
        version: Version,
        table_doc: bool,
    ) -> Result<(), FeedError> {
        if components.is_empty() {
            return Err(FeedError::NoComponents);
        }
        if std::mem::replace(&mut self.in_table_doc, table_doc) && !table_doc {
            self.hand_table_key_to_documents();
        }
        self.align(components);
        let level = self.levels.top_mut().ok_or(FeedError::NoComponents)?;
        if let Some(previous) = level.versions.last().filter(|newer| newer.dht <= version.dht) {
            return Err(FeedError::OutOfOrder { previous: previous.dht, next: version.dht });
        }
        level.versions.push(version);
        Ok(())
    }

    /// The table key's level, as the table's other documents see it: its tombstones only,
    /// the newest of them at or below the cutoff shadowing every older document version.
    fn hand_table_key_to_documents(&mut self) {
        let cutoff_ht = self.params.cutoff_ht;
        let Some(root) = self.levels.payloads().next() else { return };
        let tombstones = root.versions.iter().filter(|v| v.tombstone);
        let shadow = tombstones.clone().map(|v| v.dht).find(|dht| dht.ht <= cutoff_ht);
        let versions: Vec<Version> = tombstones.copied().collect();
        self.levels.reset_root(shadow);
        if let Some(root) = self.levels.top_mut() {
            root.versions = versions;
        }
    }

    /// Make the levels exactly those of `components`, reusing the shared prefix.
    fn align(&mut self, components: &[&[u8]]) {
        let shared = self
            .levels
            .payloads()
            .zip(components)
            .take_while(|(level, c)| level.component == **c)
            .count();
        self.levels.align(shared, components.len(), |i| Level {
            component: components[i].to_vec(),
            versions: Vec::new(),
        });
    }

    /// The explicit TTLs of the ancestors of the entry at the top level, written at `dht`,
    /// nearest first. At each ancestor level the version in effect for any read that sees
    /// the entry is the newest one older than it; it counts only if it is newer than the
    /// ancestors above it.
    fn inherited(&self, dht: DocHybridTime) -> Vec<(HybridTime, Ttl)> {
        let mut newest_ancestor: Option<DocHybridTime> = None;
        let mut explicit = Vec::new();
        for level in self.levels.ancestors() {
            let older = level.versions.iter().filter(|v| !v.hides_nothing);
            let Some(v) = older.clone().find(|v| v.dht < dht) else { continue };
            if newest_ancestor.is_none_or(|newest| v.dht > newest) {
                newest_ancestor = Some(v.dht);
                if v.ttl != Ttl::Inherit {
                    explicit.push((v.dht.ht, v.ttl));
                }
            }
        }
        explicit.reverse();
        explicit
    }
}

/// Which entries expired through a TTL of their own a full compaction keeps all the same:
/// those beneath which it keeps a newer entry that is no tombstone. Dropping one would
/// change what that entry means: if it inherits the expired TTL (written while it ran), it
/// would read back (the feed drops such entries, but keeps some for other reasons: beneath
/// a TTL-only record, or a packed row); and whatever it is, a required-marker write's seek,
/// which takes the first entry at or below a level, would find it and see the level as
/// existing, where it saw the expired entry and wrote a new marker (seed 292: a document
/// under required markers whose children outlive it). Where no write seeks (a CQL table:
/// every write is blind, `SchemaGc::blind_writes`), only an entry written while the TTL
/// ran, without one of its own, keeps it. A rule of docsim's own: YugabyteDB drops the
/// expired entry (`DocDBCompactionFeed::Feed`), its Redis keys have no TTLs below them,
/// and its CQL writes no required markers. Feed every entry in key order
/// ([`ExpiredKeeps::see`]); the keys to keep come out of [`ExpiredKeeps::finish`].
#[derive(Default)]
pub struct ExpiredKeeps {
    cutoff_ht: HybridTime,
    blind_writes: bool,
    /// Expired entries whose descendants are being looked at: path, version, the last
    /// time they were visible.
    open: Vec<(Vec<Vec<u8>>, DocHybridTime, HybridTime)>,
    /// Whether the entries seen last were of a colocated table key's own document.
    in_table_doc: bool,
    keep: KeptExpired,
}

impl ExpiredKeeps {
    /// A planner for a full compaction with `params` (its cutoff and schema).
    pub fn new(params: &GcParams) -> ExpiredKeeps {
        let (cutoff_ht, blind_writes) = (params.cutoff_ht, params.schema.blind_writes);
        ExpiredKeeps { cutoff_ht, blind_writes, ..ExpiredKeeps::default() }
    }

    /// One stored entry: its path's components, version and TTL, and whether it stays as
    /// a value: the compaction keeps it and it is no tombstone. `table_doc`: of a
    /// colocated table key's own document, whose entries are no ancestors of the table's
    /// documents (`doc_write.rs`, `reader.rs` for all but tombstones, which never stay).
    pub fn see(
        &mut self,
        components: &[&[u8]],
        (dht, ttl): (DocHybridTime, Ttl),
        (stays, table_doc): (bool, bool),
    ) {
        if std::mem::replace(&mut self.in_table_doc, table_doc) != table_doc {
            self.open.clear();
        }
        let under = |path: &[Vec<u8>]| {
            path.len() < components.len() && path.iter().zip(components).all(|(a, b)| a == b)
        };
        self.open.retain(|(path, ..)| under(path) || path.as_slice() == components);
        for (path, at, last) in &self.open {
            let inherits = ttl == Ttl::Inherit && dht.ht <= *last;
            if under(path) && dht > *at && stays && (inherits || !self.blind_writes) {
                self.keep.insert((path.clone(), *at));
            }
        }
        let Ttl::Ms(ms) = ttl else { return };
        let last = dht.ht.add_micros(ms.saturating_mul(1000));
        if dht.ht <= self.cutoff_ht && last < self.cutoff_ht {
            let path = components.iter().map(|c| c.to_vec()).collect();
            self.open.push((path, dht, last));
        }
    }

    /// The expired entries to keep.
    pub fn finish(self) -> KeptExpired {
        self.keep
    }
}

mod repack;
pub use repack::{plan_row, RowRepack};

#[cfg(test)]
mod tests;
