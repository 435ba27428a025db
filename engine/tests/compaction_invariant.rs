//! The compaction invariant, on real RocksDB: a compaction with history cutoff H changes no
//! read at R >= H. Random operation sequences (sets, object literals, markers, tombstones,
//! TTLs, Redis EXPIRE's TTL-only records at existing documents, flushes in between) are
//! read at several times at or above H before and after a full or minor compaction; every
//! read must be identical.

use docsim_engine::canary::Plants;
use docsim_engine::disk::SimDisk;
use docsim_engine::gc::CompactionKind;
use docsim_engine::script::{format_get, Command};
use docsim_engine::{
    DocKey, DocPath, DocWrite, Document, ErrorKind, HybridTime, KeyEntry, MarkerMode, Node,
    NodeOptions, Primitive, WriteKind,
};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn path(doc: u8, subkeys: &[u8]) -> DocPath {
    let key = DocKey::new(vec![], vec![KeyEntry::asc(Primitive::String(format!("d{doc}")))]);
    let subkeys =
        subkeys.iter().map(|s| KeyEntry::asc(Primitive::String(format!("k{s}")))).collect();
    DocPath::new(key, subkeys)
}

fn leaf() -> impl Strategy<Value = Document> {
    prop_oneof![
        (0i64..5).prop_map(|v| Document::Primitive(Primitive::Int64(v))),
        Just(Document::Primitive(Primitive::Null)),
        (0u8..3, 0i64..5).prop_map(|(k, v)| {
            let mut map = BTreeMap::new();
            map.insert(
                KeyEntry::asc(Primitive::String(format!("k{k}"))),
                Document::Primitive(Primitive::Int64(v)),
            );
            Document::Object(map)
        }),
    ]
}

fn write() -> impl Strategy<Value = DocWrite> {
    let kind = prop_oneof![
        4 => leaf().prop_map(WriteKind::Set),
        1 => Just(WriteKind::Obj),
        2 => Just(WriteKind::Del),
    ];
    let ttl = prop_oneof![
        4 => Just(None),
        1 => Just(Some(0)),
        2 => (1u64..6).prop_map(|ms| Some(ms * 1000)),
    ];
    (0u8..2, prop::collection::vec(0u8..3, 0..3), kind, ttl).prop_map(
        |(doc, subs, kind, ttl_us)| {
            let ttl_us = if kind == WriteKind::Del { None } else { ttl_us };
            DocWrite { path: path(doc, &subs), kind, ttl_us }
        },
    )
}

#[derive(Debug, Clone)]
enum Step {
    Write(DocWrite, u64),
    /// Redis EXPIRE of document `doc` with this TTL (ms), at this time (µs): a TTL-only
    /// record at its root, if it exists then.
    Expire(u8, u64, u64),
    Flush,
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        8 => (write(), 1u64..20).prop_map(|(w, ms)| Step::Write(w, ms * 1000)),
        2 => (0u8..2, 1u64..12, 1u64..20).prop_map(|(d, ttl, ms)| Step::Expire(d, ttl, ms * 1000)),
        1 => Just(Step::Flush),
    ];
    prop::collection::vec(step, 1..40)
}

/// A node whose logs and RocksDB files live on `disk`, under `dir`.
fn node(dir: &std::path::Path, disk: SimDisk) -> Node {
    let options = NodeOptions::alone(disk, 1 << 20, Plants::NONE, docsim_engine::Medium::SimDisk);
    Node::new(dir, options).expect("node")
}

fn reads(node: &mut Node, times: &[u64]) -> Vec<String> {
    let mut out = Vec::new();
    for &t in times {
        for doc in 0..2 {
            for subs in [&[][..], &[0], &[1], &[0, 1], &[2, 2]] {
                let (path, ht) = (path(doc, subs), HybridTime::from_micros(t));
                out.push(match node.get(&path, ht) {
                    Ok(got) => format_get(&path, ht, got.as_ref()),
                    Err(e) => format!("error: {e}"),
                });
            }
        }
    }
    out
}

/// What Redis EXPIRE writes (`redis.rs`): a TTL-only record at the root of an existing
/// document, typed as what a read finds there.
fn expire(node: &mut Node, doc: u8, ttl_ms: u64, us: u64) {
    let (root, ht) = (path(doc, &[]), HybridTime::from_micros(us));
    let Some(found) = node.get(&root, ht).unwrap() else { return };
    let object = matches!(found, Document::Object(_));
    let write =
        DocWrite { path: root, kind: WriteKind::TtlOnly { object }, ttl_us: Some(ttl_ms * 1000) };
    node.write(ht, &[write], MarkerMode::Required).unwrap();
}

fn check(
    steps: Vec<Step>,
    cutoff_ms: u64,
    minor: bool,
    table_ttl_ms: Option<u64>,
) -> Result<(), TestCaseError> {
    static CASE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let case = CASE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("docsim-invariant-{}-{case}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut runner = node(&dir, SimDisk::new(0, Default::default()));
    runner.set_default_ttl(table_ttl_ms).unwrap();
    for step in &steps {
        match step {
            Step::Write(w, us) => {
                let ht = HybridTime::from_micros(*us);
                runner.write(ht, std::slice::from_ref(w), MarkerMode::Optional).unwrap()
            }
            Step::Expire(doc, ttl_ms, us) => expire(&mut runner, *doc, *ttl_ms, *us),
            Step::Flush => runner.flush().unwrap(),
        }
    }
    let cutoff_us = cutoff_ms * 1000;
    let times = [cutoff_us, cutoff_us + 1, cutoff_us + 999, cutoff_us + 2500, 25_000, 40_000];
    let times: Vec<u64> = times.into_iter().filter(|t| *t >= cutoff_us).collect();
    let before = reads(&mut runner, &times);
    let kind = if minor { CompactionKind::Minor } else { CompactionKind::Full };
    runner.compact(HybridTime::from_micros(cutoff_us), kind).unwrap();
    let after = reads(&mut runner, &times);
    drop(runner);
    let _ = std::fs::remove_dir_all(&dir);
    let script: Vec<String> = steps
        .iter()
        .map(|step| match step {
            Step::Write(w, us) => Command::Write {
                write: w.clone(),
                ht: Some(HybridTime::from_micros(*us)),
                route: Default::default(),
            }
            .to_string(),
            Step::Expire(doc, ttl_ms, us) => format!("# EXPIRE d{doc} {ttl_ms}ms @T{us}"),
            Step::Flush => "flush".into(),
        })
        .collect();
    let diff: Vec<String> = before
        .iter()
        .zip(&after)
        .filter(|(b, a)| b != a)
        .map(|(b, a)| format!("before: {b}after:  {a}"))
        .collect();
    prop_assert!(
        diff.is_empty(),
        "default_ttl {:?} ms, compact {} cutoff=T{}\n{}\n{}",
        table_ttl_ms,
        if minor { "minor" } else { "full" },
        cutoff_us,
        script.join("\n"),
        diff.join("")
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn full_compaction_changes_no_read_at_or_above_cutoff(steps in steps(), cutoff_ms in 0u64..22) {
        check(steps, cutoff_ms, false, None)?;
    }

    #[test]
    fn minor_compaction_changes_no_read_at_or_above_cutoff(
        steps in steps(), cutoff_ms in 0u64..22,
    ) {
        check(steps, cutoff_ms, true, None)?;
    }

    #[test]
    fn compaction_with_table_ttl_changes_no_read_at_or_above_cutoff(
        steps in steps(), cutoff_ms in 0u64..22, table_ttl_ms in 1u64..8, minor: bool,
    ) {
        check(steps, cutoff_ms, minor, Some(table_ttl_ms))?;
    }
}

/// The history cutoff is stored with the data: it survives closing and reopening.
#[test]
fn history_cutoff_survives_reopen() {
    let dir = std::env::temp_dir().join(format!("docsim-cutoff-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = path(0, &[1]);
    // The Raft log lives on a simulated disk that outlives both runners (RocksDB's data is in
    // `dir`): the second runner is the first one's restart.
    let disk = docsim_engine::disk::SimDisk::new(0, Default::default());
    let open = || node(&dir, disk.clone());
    {
        let mut runner = open();
        let write = DocWrite {
            path: path.clone(),
            kind: WriteKind::Set(Document::Primitive(Primitive::Int64(7))),
            ttl_us: None,
        };
        runner.write(HybridTime::from_micros(1000), &[write], MarkerMode::Optional).unwrap();
        runner.compact(HybridTime::from_micros(5000), CompactionKind::Full).unwrap();
    }
    let mut runner = open();
    assert_eq!(runner.history_cutoff().unwrap(), HybridTime::from_micros(5000));
    let err = runner.get(&path, HybridTime::from_micros(4999)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SnapshotTooOld, "{err}");
    let doc = runner.get(&path, HybridTime::from_micros(5000)).unwrap();
    assert_eq!(doc, Some(Document::Primitive(Primitive::Int64(7))));
    drop(runner);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A TTL-only record goes only where Redis EXPIRE puts it — a document root outside any
/// colocated table, with required markers and a TTL of at least 1 ms — since GC's rules for
/// records assume no ancestor can shadow them (`gc.rs`); anywhere else it is refused.
#[test]
fn ttl_only_records_are_refused_off_a_root() {
    let dir = std::env::temp_dir().join(format!("docsim-ttl-only-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut runner = node(&dir, SimDisk::new(0, Default::default()));
    let record = |path: DocPath, ttl_us| DocWrite {
        path,
        kind: WriteKind::TtlOnly { object: false },
        ttl_us,
    };
    let colocated = DocPath::new(DocKey { colocation_id: Some(3), ..path(0, &[]).doc_key }, vec![]);
    let ht = HybridTime::from_micros(1000);
    let refused = [
        (record(path(0, &[1]), Some(5000)), MarkerMode::Required, "document root"),
        (record(colocated, Some(5000)), MarkerMode::Required, "document root"),
        (record(path(0, &[]), Some(5000)), MarkerMode::Optional, "required markers"),
        (record(path(0, &[]), None), MarkerMode::Required, "at least 1ms"),
        (record(path(0, &[]), Some(999)), MarkerMode::Required, "at least 1ms"),
    ];
    for (write, mode, why) in refused {
        let err = runner.write(ht, std::slice::from_ref(&write), mode).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{write}: {err}");
        assert!(err.to_string().contains(why), "{write}: {err}");
    }
    runner.write(ht, &[record(path(0, &[]), Some(1000))], MarkerMode::Required).unwrap();
    drop(runner);
    let _ = std::fs::remove_dir_all(&dir);
}
