//! TTL rules, shared by the reader and compaction GC so that both agree exactly.
//!
//! An entry's *expiration* is its own explicit TTL, else the nearest explicit TTL among its
//! visible ancestors that had not run out when the entry was written, counted from the
//! write time of the ancestor that carried it. With no such TTL on the chain the table
//! default applies, counted from the entry's own write time. `Ttl::Never` (0) never
//! expires, overriding the table default (`ComputeTTL`). An entry expires after
//! `base + ttl`: at exactly `base + ttl` it is visible (`HasExpiredTTL` is strict).
//!
//! The skip of TTLs that ran out before the entry was written is a rule of docsim's own.
//! YugabyteDB's reader gives a child without a TTL of its own its parent's (write time,
//! TTL) unchanged, run out or not (`GetNewExpiration`, `src/yb/docdb/doc_reader.cc`;
//! `IsObsolete` tests `HasExpiredTTL(exp.write_ht, exp.ttl, read_time)`,
//! `src/yb/dockv/doc_ttl_util.cc`): a child written under an expired parent is invisible
//! from birth — until YugabyteDB's own major compaction drops the expired parent
//! (`DocDBCompactionFeed::Feed`), after which the same child reads back. docsim reads
//! such a child as YugabyteDB reads it after that compaction, from the start, so that
//! compaction may reclaim every expired entry and change no read (`gc.rs`; the plant
//! `yb-expired-parent-gc` puts YugabyteDB's reader back; `docs/findings.md`).

use crate::encoding::Ttl;
use crate::hybrid_time::HybridTime;

/// The explicit TTL in effect: the write time of the entry that carried it, and the TTL.
pub(crate) type Expiration = Option<(HybridTime, Ttl)>;

/// The expiration of an entry written at `own_ht` with `own_ttl`: its own TTL, else the
/// nearest of its ancestors' explicit TTLs (`ancestors`, nearest first) that had not run
/// out at `own_ht`.
pub(crate) fn effective_expiration(
    own_ttl: Ttl,
    own_ht: HybridTime,
    ancestors: impl IntoIterator<Item = (HybridTime, Ttl)>,
) -> Expiration {
    match own_ttl {
        Ttl::Inherit => ancestors
            .into_iter()
            .find(|&(base, ttl)| !is_expired(Some((base, ttl)), base, None, own_ht)),
        explicit => Some((own_ht, explicit)),
    }
}

/// YugabyteDB's reader ([`effective_expiration`] without the skip): the nearest explicit
/// TTL of the ancestors, run out or not when the entry was written. The plant
/// `yb-expired-parent-gc` only.
pub(crate) fn planted_yb_expiration(
    own_ttl: Ttl,
    own_ht: HybridTime,
    ancestors: impl IntoIterator<Item = (HybridTime, Ttl)>,
) -> Expiration {
    match own_ttl {
        Ttl::Inherit => ancestors.into_iter().next(),
        explicit => Some((own_ht, explicit)),
    }
}

/// The last hybrid time at which the entry is visible, or `None` if it never expires.
pub(crate) fn expires_at(
    exp: Expiration,
    own_ht: HybridTime,
    table_ttl_ms: Option<u64>,
) -> Option<HybridTime> {
    let (base, ttl_ms) = match exp {
        Some((_, Ttl::Never)) => return None,
        Some((base, Ttl::Ms(ms))) => (base, ms),
        Some((_, Ttl::Inherit)) => unreachable!("Inherit is never an explicit expiration"),
        None => (own_ht, table_ttl_ms?),
    };
    Some(base.add_micros(ttl_ms.saturating_mul(1000)))
}

/// Of two explicit expirations of an entry written at `own_ht`, the one that runs out
/// first (`None` never does). Used by a planted bug only.
pub(crate) fn planted_sooner(a: Expiration, b: Expiration, own_ht: HybridTime) -> Expiration {
    match (expires_at(a, own_ht, None), expires_at(b, own_ht, None)) {
        (Some(x), Some(y)) if y < x => b,
        (None, Some(_)) => b,
        _ => a,
    }
}

/// Whether an entry with this expiration is expired at `read_ht`.
pub(crate) fn is_expired(
    exp: Expiration,
    own_ht: HybridTime,
    table_ttl_ms: Option<u64>,
    read_ht: HybridTime,
) -> bool {
    expires_at(exp, own_ht, table_ttl_ms).is_some_and(|last| read_ht > last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(us: u64) -> HybridTime {
        HybridTime::from_micros(us)
    }

    #[test]
    fn boundary_is_inclusive() {
        let exp = Some((t(1000), Ttl::Ms(2)));
        assert!(!is_expired(exp, t(1000), None, t(3000)));
        assert!(is_expired(exp, t(1000), None, HybridTime::new(3000, 1)));
    }

    #[test]
    fn inheritance_and_overrides() {
        let parent = effective_expiration(Ttl::Ms(10), t(0), None);
        let chain = parent.into_iter().collect::<Vec<_>>();
        // A child without TTL counts from the parent's write time.
        let child = effective_expiration(Ttl::Inherit, t(5000), chain.clone());
        assert_eq!(expires_at(child, t(5000), None), Some(t(10_000)));
        // A child written after the parent's TTL ran out does not inherit it (docsim's
        // rule; YugabyteDB's reader would: the plant's rule): it takes the next live one
        // up, else the table default from its own write time.
        let late = effective_expiration(Ttl::Inherit, t(10_001), chain.clone());
        assert_eq!(late, None);
        assert!(!is_expired(late, t(10_001), None, t(99_999)));
        let yb = planted_yb_expiration(Ttl::Inherit, t(10_001), chain.clone());
        assert_eq!(yb, Some((t(0), Ttl::Ms(10))));
        assert!(is_expired(yb, t(10_001), None, t(10_001)));
        // Written exactly at the last visible moment, it still inherits.
        let edge = effective_expiration(Ttl::Inherit, t(10_000), chain.clone());
        assert_eq!(edge, Some((t(0), Ttl::Ms(10))));
        // The nearest live TTL counts: a run-out one is skipped for one further up.
        let grand = [(t(10), Ttl::Ms(10)), (t(0), Ttl::Never)];
        let nearest = effective_expiration(Ttl::Inherit, t(20_011), grand);
        assert_eq!(nearest, Some((t(0), Ttl::Never)));
        let alive = effective_expiration(Ttl::Inherit, t(10_000), grand);
        assert_eq!(alive, Some((t(10), Ttl::Ms(10))));
        // A child with its own TTL written later outlives the parent.
        let own = effective_expiration(Ttl::Ms(20), t(5000), chain);
        assert_eq!(expires_at(own, t(5000), None), Some(t(25_000)));
        // Never overrides the table default; the default counts from the entry itself.
        assert_eq!(expires_at(Some((t(0), Ttl::Never)), t(0), Some(1)), None);
        assert_eq!(expires_at(None, t(7000), Some(1)), Some(t(8000)));
        assert_eq!(expires_at(None, t(7000), None), None);
    }
}
