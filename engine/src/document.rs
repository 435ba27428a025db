//! Documents: what a read returns and what a `set` with an object literal writes.

use crate::encoding::{KeyEntry, Primitive};
use std::collections::BTreeMap;

/// A subdocument: a primitive leaf, or an object whose keys are in stored (binary
/// comparable) order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Document {
    /// A leaf.
    Primitive(Primitive),
    /// An object; may be empty (`{}`).
    Object(BTreeMap<KeyEntry, Document>),
}

impl Document {
    /// An empty object.
    pub fn empty_object() -> Document {
        Document::Object(BTreeMap::new())
    }
}
