//! What a Raft entry of a tablet carries (docsim's own format; the log stores payloads,
//! not Raft entry types):
//!
//! ```text
//! write          := ht:u64be batch                 (a write batch the leader evaluated)
//! metadata       := "\xff\xffmetav1" ht:u64be text (a MetaChange, `schema.rs`)
//! configuration  := "\xff\xffconfv2" ConfChangeV2  (raft-rs's membership change)
//! empty          := ""                             (a new leader's entry)
//! ```
//! A hybrid time never starts with `0xff` (its physical part has 52 bits), so the tags
//! cannot be mistaken for a write's time.

use super::schema::MetaChange;
use crate::hybrid_time::HybridTime;
use crate::write_batch::DocWriteBatch;

const CONF_TAG: [u8; 8] = *b"\xff\xffconfv2";
const META_TAG: [u8; 8] = *b"\xff\xffmetav1";

/// A decoded payload.
#[derive(Clone, Debug, PartialEq)]
pub enum Payload {
    Write {
        ht: HybridTime,
        batch: DocWriteBatch,
    },
    Meta {
        ht: HybridTime,
        change: MetaChange,
    },
    /// An encoded `ConfChangeV2`.
    Conf(Vec<u8>),
    Empty,
}

impl Payload {
    /// The stored form.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Payload::Write { ht, batch } => {
                let mut data = Vec::with_capacity(8 + batch.encoded_len());
                data.extend_from_slice(&ht.raw().to_be_bytes());
                batch.write_to(&mut data);
                data
            }
            Payload::Meta { ht, change } => {
                let text = change.to_string();
                [&META_TAG[..], &ht.raw().to_be_bytes(), text.as_bytes()].concat()
            }
            Payload::Conf(cc) => [&CONF_TAG[..], cc].concat(),
            Payload::Empty => Vec::new(),
        }
    }

    /// The payload `data` holds, or what is wrong with it.
    pub fn decode(data: &[u8]) -> Result<Payload, String> {
        if data.is_empty() {
            return Ok(Payload::Empty);
        }
        if let Some(cc) = data.strip_prefix(&CONF_TAG) {
            return Ok(Payload::Conf(cc.to_vec()));
        }
        if let Some(rest) = data.strip_prefix(&META_TAG) {
            let (ht, text) = split_ht(rest)?;
            let text = std::str::from_utf8(text).map_err(|e| format!("metadata change: {e}"))?;
            return Ok(Payload::Meta { ht, change: MetaChange::parse(text)? });
        }
        let (ht, batch) = split_ht(data)?;
        let batch = DocWriteBatch::from_bytes(batch).map_err(|e| e.to_string())?;
        Ok(Payload::Write { ht, batch })
    }

    /// The hybrid time of a write or a metadata change, read without decoding the rest.
    pub fn ht_of(data: &[u8]) -> Result<Option<HybridTime>, String> {
        if data.is_empty() || data.starts_with(&CONF_TAG) {
            return Ok(None);
        }
        let body = data.strip_prefix(&META_TAG).unwrap_or(data);
        split_ht(body).map(|(ht, _)| Some(ht))
    }

    /// The encoded `ConfChangeV2` of a configuration change.
    pub fn conf_change_of(data: &[u8]) -> Option<&[u8]> {
        data.strip_prefix(&CONF_TAG)
    }
}

fn split_ht(data: &[u8]) -> Result<(HybridTime, &[u8]), String> {
    let (ht, rest) = data.split_at_checked(8).ok_or("no hybrid time")?;
    Ok((HybridTime::from_raw(u64::from_be_bytes(ht.try_into().expect("8 bytes"))), rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_payload_round_trips_and_names_its_time() {
        let ht = HybridTime::from_micros(1_234);
        let batch = DocWriteBatch::default();
        let payloads = [
            Payload::Write { ht, batch },
            Payload::Meta { ht, change: MetaChange::DefaultTtl(Some(10)) },
            Payload::Conf(vec![1, 2, 3]),
            Payload::Empty,
        ];
        for payload in payloads {
            let data = payload.encode();
            assert_eq!(Payload::decode(&data), Ok(payload.clone()));
            let ht_of = Payload::ht_of(&data).expect("a time or none");
            let want = matches!(payload, Payload::Write { .. } | Payload::Meta { .. });
            assert_eq!(ht_of, want.then_some(ht), "{payload:?}");
        }
        assert_eq!(Payload::decode(&[0, 1]), Err("no hybrid time".into()));
        let bad = [&META_TAG[..], &ht.raw().to_be_bytes(), b"frobnicate"].concat();
        assert!(Payload::decode(&bad).unwrap_err().contains("frobnicate"));
    }
}
