//! Document keys, paths and versioned keys.
//!
//! ```text
//! DocKey    = [ '0' colocation_id:u32be ]
//!             [ 'G' hash:u16be  hashed components...  '!' ]   (iff hashed components)
//!             range components...  '!'
//! DocPath   = DocKey  subkey components...
//! SubDocKey = DocPath  '#'  DocHybridTime                       (newest first)
//! ```
//! The 16-bit hash is part of the on-disk format: YugabyteDB's own partition hash of the
//! hashed components' values (`yb_hash.rs`, pinned by YugabyteDB's test vectors), checked
//! again whenever a key is decoded.

use super::primitive::encode_component;
use super::{doc_ht, tag, KeyEntry};
use crate::decode_error::DecodeError;
use crate::hybrid_time::DocHybridTime;

/// A document key: optional colocation id, hashed group, range group. Ordered like its
/// encoding (so the hash comes first).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct DocKey {
    /// The colocated table's id, if the table is colocated.
    pub colocation_id: Option<u32>,
    /// Hashed components; when present the key carries their 16-bit hash.
    pub hashed: Vec<KeyEntry>,
    /// Range components, in clustering order.
    pub range: Vec<KeyEntry>,
}

/// A path to a subdocument: a document key and subkeys. Ordered like its encoding: a
/// parent before its children.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct DocPath {
    /// The document.
    pub doc_key: DocKey,
    /// Subkeys below the document root.
    pub subkeys: Vec<KeyEntry>,
}

/// One stored version of a path: the RocksDB key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubDocKey {
    /// The path.
    pub path: DocPath,
    /// The version.
    pub doc_ht: DocHybridTime,
}

/// The length of the document key at the start of an encoded key, found without decoding
/// (RocksDB's prefix extractor calls this for every key). `None` if it is not a doc key.
pub fn doc_key_len(key: &[u8]) -> Option<usize> {
    let mut pos = 0;
    if key.first() == Some(&tag::COLOCATION_ID) {
        pos = 5;
    }
    let mut groups = 1;
    if key.get(pos) == Some(&tag::HASH) {
        pos += 3;
        groups = 2;
    }
    for _ in 0..groups {
        pos = super::primitive::skip_key_entries(key, pos, tag::GROUP_END, |_| {})? + 1;
    }
    Some(pos)
}

/// The length of an encoded key's bloom-filter prefix, found without decoding: the
/// colocation id if any, then for a hash-partitioned key the hash and the hashed
/// components through their group end, else the first range component (or the empty
/// range group). YugabyteDB's filter policy keys its bloom filters so
/// (`DocDbAwareV3FilterPolicy` with `DocKeyComponentsExtractor<kUpToHashOrFirstRange>`):
/// a read of one row, one partition or one collection skips the SST files that hold
/// nothing of its partition. Any key holding that much has one, a partition's own prefix
/// (a scan's seek key) included. `None` if the key is shorter, or no document key.
pub fn bloom_prefix_len(key: &[u8]) -> Option<usize> {
    let pos = if key.first() == Some(&tag::COLOCATION_ID) { 5 } else { 0 };
    match *key.get(pos)? {
        tag::HASH if key.len() >= pos + 3 => {
            let end = super::primitive::skip_key_entries(key, pos + 3, tag::GROUP_END, |_| {})?;
            Some(end + 1)
        }
        tag::GROUP_END => Some(pos + 1),
        _ => super::primitive::skip_key_entry(key, pos),
    }
}

/// The plant `bloom-prefix-one-long`: a hash-partitioned key's prefix runs one range
/// component past its hashed ones (the whole key if it has none), so a partition's seek
/// key no longer shares its rows' prefix.
pub fn planted_bloom_prefix_len(key: &[u8]) -> Option<usize> {
    let len = bloom_prefix_len(key)?;
    let hashed = key.get(if key.first() == Some(&tag::COLOCATION_ID) { 5 } else { 0 });
    match (hashed, key.get(len)) {
        (Some(&tag::HASH), Some(&tag::GROUP_END)) => Some(key.len()),
        (Some(&tag::HASH), Some(_)) => {
            super::primitive::skip_key_entry(key, len).or(Some(key.len()))
        }
        _ => Some(len),
    }
}

impl DocKey {
    /// A key with hashed and range components.
    pub fn new(hashed: Vec<KeyEntry>, range: Vec<KeyEntry>) -> DocKey {
        DocKey { colocation_id: None, hashed, range }
    }

    /// The 16-bit hash, present iff there are hashed components.
    pub fn hash(&self) -> Option<u16> {
        if self.hashed.is_empty() {
            return None;
        }
        Some(super::yb_hash::hash_values(self.hashed.iter().map(|c| &c.value)))
    }

    /// Whether this is a colocated table's own key (`doc(coloc=N | ;)`): a tombstone there
    /// hides every document of the table written before it.
    pub fn is_table_key(&self) -> bool {
        self.colocation_id.is_some() && self.hashed.is_empty() && self.range.is_empty()
    }

    /// Append the encoding.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        if let Some(id) = self.colocation_id {
            out.push(tag::COLOCATION_ID);
            out.extend_from_slice(&id.to_be_bytes());
        }
        if !self.hashed.is_empty() {
            out.extend_from_slice(&[tag::HASH, 0, 0]);
            let hash_at = out.len() - 2;
            self.hashed.iter().for_each(|e| encode_component(&e.value, e.order, out));
            let hash = super::yb_hash::hash_values(self.hashed.iter().map(|e| &e.value));
            out[hash_at..hash_at + 2].copy_from_slice(&hash.to_be_bytes());
            out.push(tag::GROUP_END);
        }
        self.range.iter().for_each(|e| encode_component(&e.value, e.order, out));
        out.push(tag::GROUP_END);
    }

    /// The encoding.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_to(&mut out);
        out
    }

    /// Decode a document key at the start of `input`; returns it and its encoded length.
    /// A stored hash that does not match the components is corruption.
    pub fn decode(input: &[u8]) -> Result<(DocKey, usize), DecodeError> {
        let mut key = DocKey::default();
        let mut pos = 0;
        if input.first() == Some(&tag::COLOCATION_ID) {
            let id = input
                .get(1..5)
                .ok_or_else(|| DecodeError::new("doc key", 1, "truncated colocation id"))?;
            key.colocation_id = Some(u32::from_be_bytes(id.try_into().expect("4 bytes")));
            pos = 5;
        }
        if input.get(pos) == Some(&tag::HASH) {
            let stored = input
                .get(pos + 1..pos + 3)
                .ok_or_else(|| DecodeError::new("doc key", pos + 1, "truncated hash"))?;
            let stored = u16::from_be_bytes(stored.try_into().expect("2 bytes"));
            let group_at = pos + 3;
            pos = decode_group(input, group_at, &mut key.hashed)?;
            if key.hashed.is_empty() {
                return Err(DecodeError::new(
                    "doc key",
                    group_at,
                    "hash without hashed components",
                ));
            }
            let computed = super::yb_hash::hash_values(key.hashed.iter().map(|c| &c.value));
            if computed != stored {
                let reason = format!("stored hash 0x{stored:04x} != computed 0x{computed:04x}");
                return Err(DecodeError::new("doc key", group_at - 2, reason));
            }
        }
        pos = decode_group(input, pos, &mut key.range)?;
        Ok((key, pos))
    }
}

/// Decode components up to and including a group end; returns the position after it.
fn decode_group(
    input: &[u8],
    mut pos: usize,
    group: &mut Vec<KeyEntry>,
) -> Result<usize, DecodeError> {
    loop {
        match input.get(pos) {
            None => return Err(DecodeError::new("doc key", pos, "missing group end '!'")),
            Some(&tag::GROUP_END) => return Ok(pos + 1),
            Some(_) => {
                let (entry, next) = KeyEntry::decode(input, pos)?;
                group.push(entry);
                pos = next;
            }
        }
    }
}

impl DocPath {
    /// A path from a document key and subkeys.
    pub fn new(doc_key: DocKey, subkeys: Vec<KeyEntry>) -> DocPath {
        DocPath { doc_key, subkeys }
    }

    /// The path one subkey down.
    pub fn child(&self, subkey: KeyEntry) -> DocPath {
        let mut child = self.clone();
        child.subkeys.push(subkey);
        child
    }

    /// Whether `self` is `other` or one of its ancestors.
    pub fn is_prefix_of(&self, other: &DocPath) -> bool {
        self.doc_key == other.doc_key && other.subkeys.starts_with(&self.subkeys)
    }

    /// Append the encoding (without a hybrid time).
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        self.doc_key.encode_to(out);
        self.subkeys.iter().for_each(|s| s.encode_to(out));
    }

    /// The encoding (without a hybrid time).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_to(&mut out);
        out
    }
}

/// Decode the subkeys and version that follow a document key ending at `pos`.
pub fn decode_key_suffix(
    input: &[u8],
    mut pos: usize,
) -> Result<(Vec<KeyEntry>, DocHybridTime), DecodeError> {
    let mut subkeys = Vec::new();
    loop {
        match input.get(pos) {
            None => return Err(DecodeError::new("key", pos, "missing hybrid time '#'")),
            Some(&tag::HYBRID_TIME) => break,
            Some(_) => {
                let (entry, next) = KeyEntry::decode(input, pos)?;
                subkeys.push(entry);
                pos = next;
            }
        }
    }
    Ok((subkeys, doc_ht::decode(&input[pos + 1..], pos + 1)?))
}

impl SubDocKey {
    /// A versioned key.
    pub fn new(path: DocPath, doc_ht: DocHybridTime) -> SubDocKey {
        SubDocKey { path, doc_ht }
    }

    /// The RocksDB key.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.path.encode_to(&mut out);
        out.push(tag::HYBRID_TIME);
        doc_ht::encode(self.doc_ht, &mut out);
        out
    }

    /// Decode a RocksDB key. Total: any input gives a key or an error, never a panic.
    pub fn decode(input: &[u8]) -> Result<SubDocKey, DecodeError> {
        let (doc_key, pos) = DocKey::decode(input)?;
        let (subkeys, doc_ht) = decode_key_suffix(input, pos)?;
        Ok(SubDocKey { path: DocPath { doc_key, subkeys }, doc_ht })
    }
}

impl Ord for SubDocKey {
    /// Path order, then newest version first: the order of the encodings.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.path.cmp(&other.path).then_with(|| other.doc_ht.cmp(&self.doc_ht))
    }
}

impl PartialOrd for SubDocKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// One self-delimiting piece of an encoded key, for comparing keys without encoding them.
#[derive(PartialEq, Eq)]
enum Token<'a> {
    GroupEnd,
    Colocation(u32),
    Hash(u16),
    Entry(&'a KeyEntry),
}

impl Token<'_> {
    fn first_byte(&self) -> u8 {
        match self {
            Token::GroupEnd => tag::GROUP_END,
            Token::Colocation(_) => tag::COLOCATION_ID,
            Token::Hash(_) => tag::HASH,
            Token::Entry(e) => e.type_byte(),
        }
    }
}

impl Ord for Token<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.first_byte().cmp(&other.first_byte()).then_with(|| match (self, other) {
            (Token::Colocation(a), Token::Colocation(b)) => a.cmp(b),
            (Token::Hash(a), Token::Hash(b)) => a.cmp(b),
            (Token::Entry(a), Token::Entry(b)) => a.cmp(b),
            _ => std::cmp::Ordering::Equal,
        })
    }
}

impl PartialOrd for Token<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl DocKey {
    fn tokens(&self) -> impl Iterator<Item = Token<'_>> {
        let coloc = self.colocation_id.map(Token::Colocation);
        let hashed = self.hash().into_iter().flat_map(move |h| {
            std::iter::once(Token::Hash(h))
                .chain(self.hashed.iter().map(Token::Entry))
                .chain(std::iter::once(Token::GroupEnd))
        });
        let range = self.range.iter().map(Token::Entry).chain(std::iter::once(Token::GroupEnd));
        coloc.into_iter().chain(hashed).chain(range)
    }
}

impl Ord for DocKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.tokens().cmp(other.tokens())
    }
}

impl PartialOrd for DocKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for DocPath {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let a = self.doc_key.tokens().chain(self.subkeys.iter().map(Token::Entry));
        let b = other.doc_key.tokens().chain(other.subkeys.iter().map(Token::Entry));
        a.cmp(b)
    }
}

impl PartialOrd for DocPath {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::{KeyEntry, Primitive};

    fn encoded(doc: &DocKey, subkeys: &[KeyEntry]) -> Vec<u8> {
        let mut key = Vec::new();
        doc.encode_to(&mut key);
        subkeys.iter().for_each(|s| s.encode_to(&mut key));
        key
    }

    /// The bloom prefix of a hash-partitioned key ends after its hashed components, of a
    /// range-keyed one after its first range component; subkeys and later range
    /// components never count, so every key of a partition (or a first range component)
    /// shares it; a colocated table's key and its documents keep the colocation id.
    #[test]
    fn the_bloom_prefix_is_the_partition() {
        let s = |v: &str| KeyEntry::asc(Primitive::String(v.into()));
        let i = |v: i32| KeyEntry::asc(Primitive::Int32(v));
        let col = KeyEntry::asc(Primitive::ColumnId(10));
        let row = DocKey::new(vec![s("u1")], vec![i(7)]);
        let partition = encoded(&DocKey::new(vec![s("u1")], vec![]), &[]);
        let key = encoded(&row, std::slice::from_ref(&col));
        let hashed_end = partition.len() - 1; // the partition key's empty range group
        assert_eq!(bloom_prefix_len(&key), Some(hashed_end));
        let other_row = encoded(&DocKey::new(vec![s("u1")], vec![i(8)]), &[]);
        assert_eq!(key[..hashed_end], other_row[..hashed_end], "one partition, one prefix");
        let doc = encoded(&DocKey::new(vec![], vec![s("d"), s("e")]), &[col]);
        let first = encoded(&DocKey::new(vec![], vec![s("d")]), &[]);
        assert_eq!(bloom_prefix_len(&doc), Some(first.len() - 1));
        let table_key = DocKey { colocation_id: Some(7), ..DocKey::default() };
        let table_key = encoded(&table_key, &[]);
        assert_eq!(bloom_prefix_len(&table_key), Some(table_key.len()));
        let colocated = DocKey { colocation_id: Some(7), ..DocKey::new(vec![], vec![s("d")]) };
        assert_eq!(bloom_prefix_len(&encoded(&colocated, &[])), Some(5 + first.len() - 1));
        assert_eq!(bloom_prefix_len(b"\xff meta"), None);
    }
}
