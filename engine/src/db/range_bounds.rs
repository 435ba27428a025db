//! Range-component pruning: which SST files a scan with conditions on clustering columns
//! can skip. YugabyteDB records, per SST file, the smallest and largest value of each
//! range key component (`DocBoundaryValuesExtractor`, `docdb/doc_boundary_values_extractor.cc`,
//! kept in the file's user frontier), and a scan with range conditions skips the files whose
//! bounds cannot meet them (`QLRangeBasedFileFilter::Filter`, `docdb/doc_ql_filefilter.cc`).
//!
//! docsim keeps the bounds in a table property written by a collector the shim runs for
//! every SST file RocksDB builds (`entity/props.rs`), and decides here, on decoded values,
//! with the comparison the scan itself applies to each row (`KeyEntry::asc`, as
//! `cql::statement::select` does). Every entry counts — tombstones, packed rows, every
//! version — so a file holding any entry of a row that meets the conditions is never
//! skipped. A file holding a document key with fewer range components than a condition's
//! column (a table's key, a whole-document key of the document tablet) has no bound for
//! that column and is never skipped for it (YugabyteDB's missing bound "matches all",
//! `Compare` in `doc_ql_filefilter.cc`). Keys that are not document keys (the engine's own
//! metadata, `\x01...`) are never read by a scan and do not count; a key that does not
//! decode leaves the file without bounds.

use super::metadata::META_PREFIX;
use crate::canary::{Plant, Plants};
use crate::encoding::{doc_key_len, DocKey, KeyEntry, Primitive};
use crate::entity::PropertyCollector;
use crate::error::DecodeError;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The table property holding a file's bounds (a format of docsim's own, see
/// [`BoundsCollector::finish`]).
pub const PROPERTY: &CStr = c"docsim.range_bounds";

/// Whether a scan under `conditions` reads the file whose property is `property`: a file
/// without one (written with pruning off, or before the collector existed) or with one
/// that does not decode (a collector that panicked writes an empty one) is read.
pub fn keep_file(property: Option<&[u8]>, conditions: &[RangeCondition], plants: Plants) -> bool {
    match property.map(FileBounds::decode) {
        Some(Ok(bounds)) => bounds.may_match(conditions, plants),
        None | Some(Err(_)) => true,
    }
}

/// A tablet's count of the files its pruning scans skipped and read, since it opened.
#[derive(Debug, Default)]
pub struct PruneCounts {
    skipped: AtomicU64,
    read: AtomicU64,
}

impl PruneCounts {
    /// Count one file a scan skipped (`kept` false) or read.
    pub fn count(&self, kept: bool) {
        let counter = if kept { &self.read } else { &self.skipped };
        counter.fetch_add(1, Relaxed);
    }

    /// Files skipped and read so far.
    pub fn get(&self) -> (u64, u64) {
        (self.skipped.load(Relaxed), self.read.load(Relaxed))
    }
}

/// A comparison in a `WHERE` clause (of a key component with a value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }

    /// Whether a key that compares to the condition's value as `order` satisfies it.
    pub fn holds(self, order: Ordering) -> bool {
        match self {
            CmpOp::Eq => order.is_eq(),
            CmpOp::Lt => order.is_lt(),
            CmpOp::Le => order.is_le(),
            CmpOp::Gt => order.is_gt(),
            CmpOp::Ge => order.is_ge(),
        }
    }
}

/// A scan's condition on range component `index` (0: the first clustering column).
#[derive(Clone, Debug, PartialEq)]
pub struct RangeCondition {
    pub index: usize,
    pub op: CmpOp,
    pub value: Primitive,
}

/// The order of two component values as a scan compares them (ascending, whatever the
/// column's stored order).
pub fn compare_components(a: &Primitive, b: &Primitive) -> Ordering {
    a.cmp_ascending(b)
}

/// What one file's keys hold of each range component: `bounded[i]` is the smallest and
/// largest value of component i; components from `bounded.len()` on have no bound.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileBounds {
    pub bounded: Vec<(Primitive, Primitive)>,
}

/// Gathers a file's bounds from its keys, in any order (RocksDB hands them in key order).
#[derive(Debug, Default)]
pub struct BoundsCollector {
    /// The previous key's document key (its bounds are counted already).
    last_doc: Vec<u8>,
    /// `None` until a document key is seen.
    bounds: Option<Vec<(Primitive, Primitive)>>,
}

impl BoundsCollector {
    /// Count one key of the file.
    pub fn add(&mut self, key: &[u8]) {
        if key.first() == Some(&META_PREFIX) {
            return;
        }
        let Some(len) = doc_key_len(key) else {
            self.bounds = Some(Vec::new()); // not a document key: no bounds at all
            return;
        };
        if self.bounds.is_some() && key[..len] == self.last_doc[..] {
            return;
        }
        self.last_doc.clear();
        self.last_doc.extend_from_slice(&key[..len]);
        let range = match DocKey::decode(&key[..len]) {
            Ok((doc, _)) => doc.range,
            Err(_) => Vec::new(),
        };
        let bounds = self.bounds.get_or_insert_with(|| {
            range.iter().map(|c| (c.value.clone(), c.value.clone())).collect()
        });
        bounds.truncate(range.len());
        for ((min, max), component) in bounds.iter_mut().zip(&range) {
            if compare_components(&component.value, min).is_lt() {
                *min = component.value.clone();
            }
            if compare_components(&component.value, max).is_gt() {
                *max = component.value.clone();
            }
        }
    }

    /// The property's bytes: a version byte (1), the number of bounded components (at
    /// most 255), then each component's smallest and largest value as ascending key
    /// components.
    pub fn finish(&self) -> Vec<u8> {
        let bounded = self.bounds.as_deref().unwrap_or(&[]);
        let bounded = &bounded[..bounded.len().min(255)];
        let mut out = vec![1, bounded.len() as u8];
        for (min, max) in bounded {
            KeyEntry::asc(min.clone()).encode_to(&mut out);
            KeyEntry::asc(max.clone()).encode_to(&mut out);
        }
        out
    }
}

/// RocksDB runs one collector per SST file it builds (`entity/props.rs`).
impl PropertyCollector for BoundsCollector {
    fn add(&mut self, key: &[u8]) {
        BoundsCollector::add(self, key);
    }

    fn finish(&mut self) -> Vec<u8> {
        BoundsCollector::finish(self)
    }
}

impl FileBounds {
    /// Read a property [`BoundsCollector::finish`] wrote.
    pub fn decode(bytes: &[u8]) -> Result<FileBounds, DecodeError> {
        let what = "range bounds property";
        match bytes.first() {
            Some(1) => {}
            Some(v) => return Err(DecodeError::new(what, 0, format!("unknown version {v}"))),
            None => return Err(DecodeError::new(what, 0, "empty")),
        }
        let n = *bytes.get(1).ok_or_else(|| DecodeError::new(what, 1, "truncated"))?;
        let (mut pos, mut bounded) = (2, Vec::with_capacity(usize::from(n)));
        for _ in 0..n {
            let (min, next) = KeyEntry::decode(bytes, pos)?;
            let (max, next) = KeyEntry::decode(bytes, next)?;
            bounded.push((min.value, max.value));
            pos = next;
        }
        if pos != bytes.len() {
            return Err(DecodeError::new(what, pos, "bytes after the last bound"));
        }
        Ok(FileBounds { bounded })
    }

    /// Whether a row meeting every condition may have an entry in this file (false: the
    /// scan skips it). `Plant::YbPruneSwappedInclusivity` compares each bound with the
    /// other bound's inclusivity, as YugabyteDB's filter once did.
    pub fn may_match(&self, conditions: &[RangeCondition], plants: Plants) -> bool {
        let swapped = plants.contains(Plant::YbPruneSwappedInclusivity);
        intervals(conditions).iter().all(|(index, interval)| match self.bounded.get(*index) {
            None => true, // no bound: matches all
            Some((min, max)) => interval.meets(min, max, swapped),
        })
    }
}

/// The values a component may take under a scan's conditions: the tightest lower and
/// upper bound, each with whether it is inclusive.
#[derive(Clone, Debug, Default)]
struct Interval {
    lower: Option<(Primitive, bool)>,
    upper: Option<(Primitive, bool)>,
}

/// Each conditioned component's interval (conditions on one component intersected).
fn intervals(conditions: &[RangeCondition]) -> BTreeMap<usize, Interval> {
    let mut out: BTreeMap<usize, Interval> = BTreeMap::new();
    for c in conditions {
        let interval = out.entry(c.index).or_default();
        let (lower, upper) = match c.op {
            CmpOp::Eq => (Some(true), Some(true)),
            CmpOp::Gt => (Some(false), None),
            CmpOp::Ge => (Some(true), None),
            CmpOp::Lt => (None, Some(false)),
            CmpOp::Le => (None, Some(true)),
        };
        if let Some(inclusive) = lower {
            tighten(&mut interval.lower, (c.value.clone(), inclusive), Ordering::Greater);
        }
        if let Some(inclusive) = upper {
            tighten(&mut interval.upper, (c.value.clone(), inclusive), Ordering::Less);
        }
    }
    out
}

/// Keep the tighter of `bound` and `new`: the one further towards `inward` (an exclusive
/// bound is tighter than an inclusive one at the same value).
fn tighten(bound: &mut Option<(Primitive, bool)>, new: (Primitive, bool), inward: Ordering) {
    let tighter = match bound {
        None => true,
        Some((value, inclusive)) => match compare_components(&new.0, value) {
            Ordering::Equal => *inclusive && !new.1,
            order => order == inward,
        },
    };
    if tighter {
        *bound = Some(new);
    }
}

impl Interval {
    /// Whether a value within `min..=max` may lie in the interval.
    fn meets(&self, min: &Primitive, max: &Primitive, swapped: bool) -> bool {
        let (mut lower_inclusive, mut upper_inclusive) =
            (self.lower.as_ref().is_none_or(|b| b.1), self.upper.as_ref().is_none_or(|b| b.1));
        if swapped {
            (lower_inclusive, upper_inclusive) = (upper_inclusive, lower_inclusive);
        }
        let below_min = self.upper.as_ref().is_some_and(|(upper, _)| {
            let order = compare_components(upper, min);
            order.is_lt() || (order.is_eq() && !upper_inclusive)
        });
        let above_max = self.lower.as_ref().is_some_and(|(lower, _)| {
            let order = compare_components(max, lower);
            order.is_lt() || (order.is_eq() && !lower_inclusive)
        });
        !below_min && !above_max
    }
}

#[cfg(test)]
mod tests;
