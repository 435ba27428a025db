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
