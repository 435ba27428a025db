//! The read path: reconstruct a subdocument as of a read time from entries in key order.
//!
//! For each path only the newest version at or before the read time counts. A version is
//! visible only if its DocHybridTime (write id included) is strictly newer than the version
//! in effect at every ancestor (the colocated table, the document root, each subkey); an
//! object marker therefore overwrites a whole subtree and a tombstone deletes one. An
//! expired or deleted version still hides older versions and older descendants: it never
//! resurrects them. TTL rules live in `expiry.rs`, shared with compaction GC.

use crate::document::Document;
use crate::encoding::{DocPath, KeyEntry, SubDocKey, Value, ValueKind};
use crate::expiry::{self, Expiration};
use crate::hybrid_time::{DocHybridTime, HybridTime};
use std::collections::BTreeMap;

/// One level of a path: the colocated table, the document, or a subkey.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Level<'a> {
    Table(u32),
    Doc(&'a crate::encoding::DocKey),
    Sub(&'a KeyEntry),
}

/// The levels of `path`: `[table?] [doc] [subkeys...]`; a table key is the table level only.
pub(crate) fn levels(path: &DocPath) -> Vec<Level<'_>> {
    let key = &path.doc_key;
    let mut out = Vec::with_capacity(path.subkeys.len() + 2);
    if let Some(id) = key.colocation_id {
        out.push(Level::Table(id));
    }
    if !key.is_table_key() {
        out.push(Level::Doc(key));
    }
    out.extend(path.subkeys.iter().map(Level::Sub));
    out
}

#[derive(Clone, Copy)]
struct Frame {
    /// The newest visible-by-time version at this level or above (`None`: nothing).
    newest: Option<DocHybridTime>,
    exp: Expiration,
}

/// Read the subdocument at `target` as of `read_ht`. `entries` are every stored entry of
/// the target's document (and its colocated table key) in key order.
pub(crate) fn read_subdocument(
    entries: impl IntoIterator<Item = (SubDocKey, Value)>,
    target: &DocPath,
    read_ht: HybridTime,
    table_ttl_ms: Option<u64>,
) -> Option<Document> {
    let target_levels = levels(target);
    let mut out: Option<Document> = None;
    let mut stack: Vec<(Vec<u8>, Frame)> = Vec::new();
    let mut last_path: Option<DocPath> = None;
    for (key, value) in entries {
        if key.doc_ht.ht > read_ht || last_path.as_ref() == Some(&key.path) {
            continue; // too new, or an older version of a path already decided
        }
        let entry_levels = levels(&key.path);
        let shared = entry_levels.iter().zip(&target_levels).take_while(|(a, b)| a == b).count();
        let in_subtree = shared == target_levels.len();
        if !in_subtree && shared < entry_levels.len() {
            continue; // neither an ancestor of the target nor inside it
        }
        let frame = push_level(&mut stack, &key, &value);
        last_path = Some(key.path.clone());
        if !in_subtree {
            continue; // an ancestor: it only shapes visibility, through the stack
        }
        let rel = &key.path.subkeys[target.subkeys.len()..];
        let Some(frame) = frame else { continue };
        let expired = expiry::is_expired(frame.exp, key.doc_ht.ht, table_ttl_ms, read_ht);
        match value.kind {
            _ if expired => remove(&mut out, rel),
            ValueKind::Tombstone => remove(&mut out, rel),
            ValueKind::Object => put(&mut out, rel, Document::empty_object()),
            ValueKind::Primitive(p) => put(&mut out, rel, Document::Primitive(p)),
        }
    }
    out
}

/// Align the level stack with `key`'s path and push its frame; returns the frame if the
/// version is visible by time (newer than every ancestor), `None` if an ancestor hides it.
fn push_level(stack: &mut Vec<(Vec<u8>, Frame)>, key: &SubDocKey, value: &Value) -> Option<Frame> {
    let ids = level_ids(&key.path);
    let shared = stack.iter().zip(&ids).take_while(|((a, _), b)| a == *b).count();
    stack.truncate(shared.min(ids.len() - 1));
    let root = Frame { newest: None, exp: None };
    while stack.len() < ids.len() - 1 {
        let inherited = stack.last().map_or(root, |(_, f)| *f);
        stack.push((ids[stack.len()].clone(), inherited));
    }
    let parent = stack.last().map_or(root, |(_, f)| *f);
    let own = ids.last().expect("at least one level").clone();
    if parent.newest.is_some_and(|newest| key.doc_ht <= newest) {
        stack.push((own, parent));
        return None;
    }
    let exp = expiry::child_expiration(parent.exp, value.ttl, key.doc_ht.ht);
    let frame = Frame { newest: Some(key.doc_ht), exp };
    stack.push((own, frame));
    Some(frame)
}

/// Byte identities of a path's levels, for cheap comparison on the stack.
pub(crate) fn level_ids(path: &DocPath) -> Vec<Vec<u8>> {
    levels(path)
        .into_iter()
        .map(|level| match level {
            Level::Table(id) => [&[0u8][..], &id.to_be_bytes()].concat(),
            Level::Doc(key) => key.encode(),
            Level::Sub(entry) => {
                let mut out = vec![1u8];
                entry.encode_to(&mut out);
                out
            }
        })
        .collect()
}

/// Set `node` at `rel` below the root, creating objects on the way (a primitive on the
/// way becomes an object: its newer children are visible).
fn put(root: &mut Option<Document>, rel: &[KeyEntry], node: Document) {
    let Some((last, parents)) = rel.split_last() else {
        *root = Some(node);
        return;
    };
    let mut cur = root.get_or_insert_with(Document::empty_object);
    for key in parents {
        cur = object_mut(cur).entry(key.clone()).or_insert_with(Document::empty_object);
    }
    object_mut(cur).insert(last.clone(), node);
}

fn object_mut(doc: &mut Document) -> &mut BTreeMap<KeyEntry, Document> {
    if !matches!(doc, Document::Object(_)) {
        *doc = Document::empty_object();
    }
    match doc {
        Document::Object(map) => map,
        Document::Primitive(_) => unreachable!("just made an object"),
    }
}

/// Remove whatever is at `rel`.
fn remove(root: &mut Option<Document>, rel: &[KeyEntry]) {
    let Some((last, parents)) = rel.split_last() else {
        *root = None;
        return;
    };
    let mut node = root.as_mut();
    for key in parents {
        node = match node {
            Some(Document::Object(map)) => map.get_mut(key),
            _ => return,
        };
    }
    if let Some(Document::Object(map)) = node {
        map.remove(last);
    }
}
