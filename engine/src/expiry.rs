//! TTL rules, shared by the reader and compaction GC so that both agree exactly.
//!
//! An entry's *expiration* is its own explicit TTL, else the nearest explicit TTL among its
//! visible ancestors, counted from the write time of the ancestor that carried it —
//! whether or not it had run out when the entry was written: a child written under an
//! expired parent is invisible from birth. This is YugabyteDB's reader:
//! `GetNewExpiration` (`src/yb/docdb/doc_reader.cc`) gives a child without a TTL of its
//! own its parent's `Expiration` (write time, TTL) unchanged, and a child with one its
//! own; `GetHelperBase::IsObsolete` then tests `HasExpiredTTL(exp.write_ht, exp.ttl,
//! read_time)` (`src/yb/dockv/doc_ttl_util.cc`) with no regard to the child's write time.
//! `Ttl::Never` (0) stops the chain: never expires, overriding the table default
//! (`ComputeTTL`). With no explicit TTL on the chain the table default applies, counted
//! from the entry's own write time. An entry expires after `base + ttl`: at exactly
//! `base + ttl` it is visible (`HasExpiredTTL` is strict).
//!
//! Compaction must then take care (`gc.rs`): dropping an expired parent would free a
//! child above the cutoff that inherits its expiry.

use crate::encoding::Ttl;
use crate::hybrid_time::HybridTime;

/// The explicit TTL in effect: the write time of the entry that carried it, and the TTL.
pub(crate) type Expiration = Option<(HybridTime, Ttl)>;

/// The expiration of an entry written at `own_ht` with `own_ttl`: its own TTL, else the
/// nearest of its ancestors' explicit TTLs (`ancestors`, nearest first).
pub(crate) fn effective_expiration(
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
        // A child written after the parent expired inherits the dead TTL all the same
        // (YugabyteDB's `GetNewExpiration`): it is expired from birth.
        let late = effective_expiration(Ttl::Inherit, t(10_001), chain.clone());
        assert_eq!(late, Some((t(0), Ttl::Ms(10))));
        assert!(is_expired(late, t(10_001), None, t(10_001)));
        // The nearest explicit TTL counts, not a live one further up.
        let grand = [(t(10), Ttl::Ms(10)), (t(0), Ttl::Never)];
        let nearest = effective_expiration(Ttl::Inherit, t(20_011), grand);
        assert_eq!(nearest, Some((t(10), Ttl::Ms(10))));
        // A child with its own TTL written later outlives the parent.
        let own = effective_expiration(Ttl::Ms(20), t(5000), chain);
        assert_eq!(expires_at(own, t(5000), None), Some(t(25_000)));
        // Never overrides the table default; the default counts from the entry itself.
        assert_eq!(expires_at(Some((t(0), Ttl::Never)), t(0), Some(1)), None);
        assert_eq!(expires_at(None, t(7000), Some(1)), Some(t(8000)));
        assert_eq!(expires_at(None, t(7000), None), None);
    }
}
