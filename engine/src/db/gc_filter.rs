//! The compaction filter adapter: RocksDB's compaction filter (on RocksDB's threads) over
//! the pure GC of `gc.rs`, the state it shares with the caller's thread (`GcState`), the
//! repacking plan it applies, and the plants that change its verdicts.

use super::metadata::META_PREFIX;
use super::packed;
use super::{corrupt_key, decode_entry, lock};
use crate::canary::{Plant, Plants};
use crate::encoding::{doc_key_len, Packings, Ttl, ValueKind};
use crate::entity::EntityDecision;
use crate::error::{Error, Result};
use crate::gc::{CompactionKind, FeedError, GcFeed, GcParams, Verdict};
use crate::hybrid_time::{DocHybridTime, HybridTime};
use rocksdb::compaction_filter::{CompactionFilter, Decision};
use std::ffi::CStr;
use std::sync::{Arc, Mutex};

/// What the caller's thread and the compaction filter (on RocksDB's threads) share. The
/// filter never panics: what goes wrong there is recorded here and reported by
/// [`DocDb::compact`](super::DocDb::compact) after the compaction.
#[derive(Default)]
pub(super) struct GcState {
    pub(super) params: Option<GcParams>,
    /// The planted bugs, for the filter (set at open).
    pub(super) plants: Plants,
    /// Keys the compaction filter could not decode (kept untouched, reported here).
    pub(super) corrupt: Vec<String>,
    /// Entries the GC feed refused (out of key order: kept untouched, reported here).
    pub(super) failures: Vec<String>,
    /// Verdict counts of finished compaction filters: dropped, rewritten, kept above H,
    /// kept expired (a TTL of its own).
    pub(super) counts: [u64; 4],
    /// The repacking plan of the running full compaction (`gc/repack.rs`).
    pub(super) repack: Option<Arc<RepackPlan>>,
    /// The table's packings, to turn a repacked row into an entity's columns.
    pub(super) packings: Packings,
}

/// What repacking does in one compaction, by stored key: the packed rows that get a new
/// value, and the entries folded into them (dropped).
#[derive(Default)]
pub(super) struct RepackPlan {
    pub(super) rewrite: std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
    pub(super) fold: std::collections::BTreeSet<Vec<u8>>,
}

/// What the compaction filters recorded (undecodable keys, entries the GC feed refused;
/// all kept unchanged), as the compaction's result.
pub(super) fn filter_result(corrupt: &[String], failures: &[String]) -> Result<()> {
    if let Some(first) = corrupt.first() {
        let reason =
            format!("compaction kept {} undecodable entries; first: {first}", corrupt.len());
        let error = crate::error::DecodeError::new("compacted entry", 0, reason);
        return Err(Error::Corruption { error, key: None });
    }
    if let Some(first) = failures.first() {
        return Err(Error::CompactionFilter(format!(
            "kept {} entries it could not decide; first: {first}",
            failures.len()
        )));
    }
    Ok(())
}

/// The path components of an encoded key, as byte slices: `[table?] [doc] [subkeys...]`
/// (a colocated table's own key is the table level only).
pub(super) fn key_components(key: &[u8]) -> Option<Vec<&[u8]>> {
    let doc_end = doc_key_len(key)?;
    let mut components = Vec::with_capacity(4);
    let mut doc_start = 0;
    if key.first() == Some(&crate::encoding::tag::COLOCATION_ID) {
        components.push(key.get(..5)?);
        doc_start = 5;
    }
    let doc = key.get(doc_start..doc_end)?;
    if doc != b"!" || doc_start == 0 {
        components.push(doc);
    }
    let mut start = doc_end;
    crate::encoding::skip_key_entries(key, doc_end, crate::encoding::tag::HYBRID_TIME, |end| {
        components.push(&key[start..end]);
        start = end;
    })?;
    Some(components)
}

/// The GC filter of one compaction, from what the caller set in [`GcState`].
pub(super) fn new_gc_filter(gc: &Arc<Mutex<GcState>>) -> GcFilter {
    let (params, plants, repack, packings) = {
        let state = lock(gc);
        (state.params.clone(), state.plants, state.repack.clone(), state.packings.clone())
    };
    let unbounded = planted_unbounded_feed(params.clone(), plants);
    let (feed, gc, counts) = (params.map(GcFeed::new), gc.clone(), [0; 4]);
    GcFilter { feed, unbounded, gc, counts, plants, repack, packings }
}

/// The plant `yb-minor-gc-drops-ttl`, YugabyteDB's rule: a minor compaction rewrites an
/// expired entry as a bare tombstone, whatever may inherit its TTL. `None`: not planted,
/// or not such an entry.
fn planted_yb_minor_rule(
    verdict: Verdict,
    kind: CompactionKind,
    plants: Plants,
) -> Option<Verdict> {
    let kept = matches!(verdict, Verdict::KeepExpired | Verdict::KeepInherited);
    let planted = kind == CompactionKind::Minor && plants.contains(Plant::YbMinorGcDropsTtl);
    (kept && planted).then_some(Verdict::Tombstone)
}

/// With [`Plant::GcIgnoresCutoff`] planted, the filter's second feed: no history cutoff,
/// and minor, so its `Drop` says only "a newer version shadows this one".
fn planted_unbounded_feed(params: Option<GcParams>, plants: Plants) -> Option<GcFeed> {
    let mut params = params.filter(|_| plants.contains(Plant::GcIgnoresCutoff))?;
    (params.cutoff_ht, params.kind) = (HybridTime::MAX, CompactionKind::Minor);
    Some(GcFeed::new(params))
}

/// The plant `gc-keeps-tombstones`: whether this verdict drops a tombstone at or below the
/// cutoff of a full compaction (which the plant keeps).
fn planted_dropped_tombstone(
    tombstone: bool,
    verdict: Verdict,
    params: &GcParams,
    dht: DocHybridTime,
) -> bool {
    let full = params.kind == CompactionKind::Full;
    tombstone && verdict == Verdict::Drop && full && dht.ht <= params.cutoff_ht
}

/// The plant `gc-ignores-cutoff`: every version a newer one shadows goes, and (full
/// compaction) every tombstone, above the history cutoff as below it; expiry still counts
/// at it. `unbounded` is the feed without a cutoff ([`planted_unbounded_feed`]).
fn planted_ignoring_cutoff(
    unbounded: &mut GcFeed,
    verdict: Verdict,
    params: &GcParams,
    (components, dht, ttl, tombstone, table_doc): (&[&[u8]], DocHybridTime, Ttl, bool, bool),
) -> Result<Verdict, FeedError> {
    let shadowed =
        unbounded.decide_in(components, dht, tombstone, ttl, table_doc)? == Verdict::Drop;
    let full = params.kind == CompactionKind::Full;
    let tombstone_above = tombstone && full && dht.ht > params.cutoff_ht;
    Ok(if shadowed || tombstone_above { Verdict::Drop } else { verdict })
}

/// The GC filter as the shim's `FilterV3` filter shows it entries: plain values as they
/// are, an entity (a packed row of the entity layout) by its default column, which the
/// GC judges as the packed row; a repacked row goes back as the entity's new columns.
/// After a panic it keeps everything (its feed's state is not to be trusted), and the
/// compaction reports the panic.
pub(super) struct GcEntityFilter(pub(super) GcFilter, pub(super) bool);

impl crate::entity::EntityFilter for GcEntityFilter {
    fn filter(
        &mut self,
        level: u32,
        key: &[u8],
        entry: crate::entity::Entry<'_>,
    ) -> EntityDecision {
        if self.1 {
            return EntityDecision::Keep;
        }
        let (value, entity) = match &entry {
            crate::entity::Entry::Value(value) => (*value, false),
            crate::entity::Entry::Entity(columns) => {
                let default = columns.iter().find(|(name, _)| name.is_empty());
                (default.map_or(&[][..], |(_, value)| *value), true)
            }
        };
        match CompactionFilter::filter(&mut self.0, level, key, value) {
            Decision::Keep => EntityDecision::Keep,
            Decision::Remove => EntityDecision::Remove,
            Decision::Change(new) if entity => {
                match packed::entity_columns(new, &self.0.packings) {
                    Ok(Some(columns)) => EntityDecision::ChangeEntity(columns),
                    Ok(None) => EntityDecision::ChangeValue(new.to_vec()), // not a packed row
                    Err(e) => {
                        let key = crate::encoding::hex(key);
                        lock(&self.0.gc).failures.push(format!("repacked entity: {e} (key {key})"));
                        EntityDecision::Keep
                    }
                }
            }
            Decision::Change(new) => EntityDecision::ChangeValue(new.to_vec()),
        }
    }

    fn panicked(&mut self, message: String) {
        self.1 = true;
        lock(&self.0.gc).failures.push(format!("the GC filter panicked: {message}"));
    }
}

/// The RocksDB compaction filter: decodes each entry and asks the pure [`GcFeed`]. It runs
/// on RocksDB's threads, behind an `extern "C"` boundary where a panic would abort the
/// process: whatever goes wrong keeps the entry and is recorded in [`GcState`].
pub(super) struct GcFilter {
    feed: Option<GcFeed>,
    /// With [`Plant::GcIgnoresCutoff`] planted: a feed without a history cutoff, whose
    /// minor-compaction verdict `Drop` says "a newer version shadows this one".
    unbounded: Option<GcFeed>,
    gc: Arc<Mutex<GcState>>,
    /// Dropped, rewritten as tombstones, kept above
    /// the cutoff, kept expired (own TTL).
    counts: [u64; 4],
    /// The planted bugs.
    plants: Plants,
    /// The running full compaction's repacking plan.
    repack: Option<Arc<RepackPlan>>,
    /// The table's packings (a repacked entity's columns).
    packings: Packings,
}

impl Drop for GcFilter {
    fn drop(&mut self) {
        let mut gc = lock(&self.gc);
        (0..4).for_each(|i| gc.counts[i] += self.counts[i]);
    }
}

/// What the repacking plan does with a key GC keeps: a folded entry goes, a repacked
/// row gets its new value.
fn plan_decision(plan: &Arc<RepackPlan>, key: &[u8]) -> Decision {
    if plan.fold.contains(key) {
        return Decision::Remove;
    }
    match plan.rewrite.get(key) {
        Some(value) => Decision::Change(outliving_the_callback(value)),
        None => Decision::Keep,
    }
}

/// `value` as the `'static` slice `Decision::Change` asks for.
fn outliving_the_callback(value: &[u8]) -> &'static [u8] {
    // SAFETY: the value is owned by the plan, which the filter holds (an `Arc`) for the
    // whole compaction, so it outlives the filter callback; RocksDB's C wrapper copies a
    // changed value before the callback returns (`rocksdb_compactionfilter_t::Filter`,
    // `db/c.cc`: `new_value->assign(c_new_value, new_value_length)`), and the crate's
    // trampoline only passes the pointer on. Nothing keeps the slice after that.
    unsafe { std::slice::from_raw_parts(value.as_ptr(), value.len()) }
}

/// The feed's verdict on one entry of any kind: a packed row or entity (`folded`: into a
/// newer one by repacking), a TTL-only record, or any other entry (`table_doc`: of a
/// colocated table key's own document). The compaction filter and the planning of kept
/// expired entries (`DocDb::plan_expired_keeps`) both ask it.
pub(super) fn feed_verdict(
    feed: &mut GcFeed,
    components: &[&[u8]],
    dht: DocHybridTime,
    (kind, table_doc, folded): (&ValueKind, bool, bool),
    ttl: Ttl,
) -> Result<Verdict, FeedError> {
    match kind {
        ValueKind::PackedRow(_) | ValueKind::EntityRow(_) => {
            feed.decide_packed_row(components, dht, ttl, folded)
        }
        ValueKind::TtlOnly { .. } => feed.decide_ttl_only(components, dht, ttl, table_doc),
        _ => feed.decide_in(components, dht, *kind == ValueKind::Tombstone, ttl, table_doc),
    }
}

/// The value a [`Verdict::Tombstone`] writes.
const TOMBSTONE_VALUE: &[u8] = b"X";

impl CompactionFilter for GcFilter {
    fn filter(&mut self, _level: u32, key: &[u8], value: &[u8]) -> Decision {
        if self.feed.is_none() || key.first() == Some(&META_PREFIX) {
            return Decision::Keep;
        }
        let decoded = decode_entry(key, value).and_then(|entry| {
            let components = key_components(key).ok_or_else(|| corrupt_key(key, "no path"))?;
            Ok((entry, components))
        });
        let ((k, v), components) = match decoded {
            Ok(decoded) => decoded,
            Err(e) => {
                // Never drop what we cannot read; report it after the compaction.
                lock(&self.gc).corrupt.push(e.to_string());
                return Decision::Keep;
            }
        };
        let table_doc = k.path.doc_key.is_table_key();
        let folded = self.repack.as_ref().is_some_and(|plan| plan.fold.contains(key));
        let entry = (&v.kind, table_doc, folded);
        let verdict = match self.verdict(&components, k.doc_ht, entry, v.ttl) {
            Ok(verdict) => verdict,
            Err(e) => {
                let key = crate::encoding::hex(key);
                lock(&self.gc).failures.push(format!("{e} (key {key})"));
                return Decision::Keep;
            }
        };
        let decision = self.count(verdict, k.doc_ht.ht);
        match (&decision, self.repack.as_ref()) {
            (Decision::Keep, Some(plan)) => plan_decision(plan, key),
            _ => decision,
        }
    }

    fn name(&self) -> &CStr {
        c"docdb_gc"
    }
}

impl GcFilter {
    /// The feed's verdict on one entry (only called with a feed).
    fn verdict(
        &mut self,
        components: &[&[u8]],
        dht: DocHybridTime,
        (kind, table_doc, folded): (&ValueKind, bool, bool),
        ttl: Ttl,
    ) -> Result<Verdict, FeedError> {
        let Some(feed) = self.feed.as_mut() else { return Ok(Verdict::Keep) };
        let tombstone = *kind == ValueKind::Tombstone;
        let entry = (kind, table_doc, folded);
        if let ValueKind::PackedRow(_) | ValueKind::EntityRow(_) | ValueKind::TtlOnly { .. } = kind
        {
            if let Some(unbounded) = self.unbounded.as_mut() {
                feed_verdict(unbounded, components, dht, entry, ttl)?;
            }
            return feed_verdict(feed, components, dht, entry, ttl);
        }
        let verdict = feed_verdict(feed, components, dht, entry, ttl)?;
        let params = &feed.params().clone();
        // Planted: a full compaction keeps the tombstones at or below its cutoff.
        if self.plants.contains(Plant::GcKeepsTombstones)
            && planted_dropped_tombstone(tombstone, verdict, params, dht)
        {
            return Ok(Verdict::Keep);
        }
        if let Some(planted) = planted_yb_minor_rule(verdict, params.kind, self.plants) {
            return Ok(planted);
        }
        let Some(unbounded) = self.unbounded.as_mut() else { return Ok(verdict) };
        let entry = (components, dht, ttl, tombstone, table_doc);
        planted_ignoring_cutoff(unbounded, verdict, params, entry)
    }

    /// Count the verdict and turn it into RocksDB's decision.
    fn count(&mut self, verdict: Verdict, ht: HybridTime) -> Decision {
        match verdict {
            Verdict::KeepExpired | Verdict::KeepInherited => {
                self.counts[3] += 1;
                Decision::Keep
            }
            Verdict::Keep => {
                let cutoff_ht =
                    self.feed.as_ref().map_or(HybridTime::MAX, |f| f.params().cutoff_ht);
                self.counts[2] += u64::from(ht > cutoff_ht);
                Decision::Keep
            }
            Verdict::Drop => {
                self.counts[0] += 1;
                Decision::Remove
            }
            Verdict::Tombstone => {
                self.counts[1] += 1;
                Decision::Change(TOMBSTONE_VALUE)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::encoding::{DocPath, KeyEntry, Primitive, SubDocKey};
    use crate::hybrid_time::{DocHybridTime, HybridTime};
    use crate::tests::doc_d as doc;

    /// The encoded key of `path` (subkey names) at `us` with write id 0.
    fn key(path: &[&str], us: u64) -> Vec<u8> {
        let subkeys = path.iter().map(|s| KeyEntry::asc(Primitive::String((*s).into()))).collect();
        let at = DocHybridTime::new(HybridTime::new(us, 0), 0);
        SubDocKey::new(DocPath::new(doc(), subkeys), at).encode()
    }

    /// The GC state of a full compaction with history cutoff 100 µs, as `DocDb::compact`
    /// sets it for the filters it makes.
    fn full_compaction_at_100us() -> std::sync::Arc<std::sync::Mutex<super::GcState>> {
        use crate::gc::{CompactionKind, GcParams};
        let params = GcParams::new(HybridTime::new(100, 0), CompactionKind::Full, None);
        let state = super::GcState { params: Some(params), ..super::GcState::default() };
        std::sync::Arc::new(std::sync::Mutex::new(state))
    }

    #[test]
    fn the_filter_keeps_and_records_entries_out_of_order_instead_of_panicking() {
        use super::{filter_result, new_gc_filter};
        use crate::encoding::{Value, ValueKind};
        use rocksdb::compaction_filter::{CompactionFilter, Decision};
        let gc = full_compaction_at_100us();
        let mut filter = new_gc_filter(&gc);
        let value = Value::new(ValueKind::Object).encode();
        assert!(matches!(filter.filter(0, &key(&["a"], 10), &value), Decision::Keep));
        // A newer version of the same path after an older one: the feed refuses it.
        assert!(matches!(filter.filter(0, &key(&["a"], 20), &value), Decision::Keep));
        // In order again: hidden by the version at 10.
        assert!(matches!(filter.filter(0, &key(&["a"], 5), &value), Decision::Remove));
        drop(filter);
        let state = gc.lock().expect("not poisoned");
        assert_eq!(state.failures.len(), 1, "{:?}", state.failures);
        assert!(state.failures[0].contains("out of order"), "{}", state.failures[0]);
        let err = filter_result(&[], &state.failures).unwrap_err();
        assert!(matches!(err, crate::Error::CompactionFilter(_)));
        assert!(err.to_string().starts_with("compaction filter failed: kept 1 entries"), "{err}");
        assert_eq!(filter_result(&[], &[]), Ok(()));
    }

    /// After a panic in its `filter` the entity filter keeps every entry (even one the
    /// feed would drop: its state is not to be trusted), and the panic is the
    /// compaction's failure.
    #[test]
    fn the_entity_filter_keeps_everything_after_a_panic_and_reports_it() {
        use super::{new_gc_filter, GcEntityFilter};
        use crate::encoding::{Value, ValueKind};
        use crate::entity::{EntityDecision, EntityFilter, Entry};
        let gc = full_compaction_at_100us();
        let value = Value::new(ValueKind::Object).encode();
        let decide = |filter: &mut GcEntityFilter, ht: u64| {
            filter.filter(0, &key(&["a"], ht), Entry::Value(&value))
        };
        let mut healthy = GcEntityFilter(new_gc_filter(&gc), false);
        assert!(matches!(decide(&mut healthy, 10), EntityDecision::Keep));
        assert!(matches!(decide(&mut healthy, 5), EntityDecision::Remove), "hidden by 10");
        let mut filter = GcEntityFilter(new_gc_filter(&gc), false);
        assert!(matches!(decide(&mut filter, 10), EntityDecision::Keep));
        filter.panicked("boom".to_string());
        assert!(matches!(decide(&mut filter, 5), EntityDecision::Keep), "kept after a panic");
        let entity = Entry::Entity(vec![(&b""[..], &value[..])]);
        let kept = filter.filter(0, &key(&["a"], 4), entity);
        assert!(matches!(kept, EntityDecision::Keep), "an entity too");
        let failures = std::mem::take(&mut gc.lock().expect("not poisoned").failures);
        assert_eq!(failures, ["the GC filter panicked: boom"]);
        let failed = super::filter_result(&[], &failures).map_err(|e| e.to_string());
        let said = "compaction filter failed: kept 1 entries it could not decide; first: \
                    the GC filter panicked: boom";
        assert_eq!(failed, Err(said.to_string()));
    }
}
