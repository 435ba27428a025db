//! Ops serialize with serde and back; a seed generates the same ops every time.

use docsim_workloads::{simpler, strategy, Op, Profile, Workload};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn round_trip(op: &Op) -> Result<(), TestCaseError> {
    let json = serde_json::to_string(op).expect("serializes");
    prop_assert!(!json.contains('\n'));
    let back: Op = serde_json::from_str(&json).expect("deserializes");
    prop_assert_eq!(&back, op);
    Ok(())
}

/// `len` ops of a seed, at times that move on by up to 3 ms, with a history cutoff that
/// trails them; and one more draw, to compare where the random stream ended.
fn generate(seed: u64, profile: Profile, len: usize) -> (Vec<Op>, u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut clock = ChaCha8Rng::seed_from_u64(!seed);
    let mut workload = Workload::new(&mut rng, Some(profile));
    let mut ops = workload.setup_ops(1 << 12);
    let mut now: u64 = 1 << 12;
    for _ in 0..len {
        now += clock.random_range(1..3_000u64) << 12 | clock.random_range(0..4u64);
        let cutoff = now.saturating_sub(clock.random_range(0..20_000u64) << 12);
        ops.push(workload.next_op(&mut rng, now, cutoff));
    }
    (ops, rng.random())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn doc_ops_round_trip_through_serde(
        nested in strategy::ops(Profile::Nested, 40), ttl in strategy::ops(Profile::TtlHeavy, 40),
    ) {
        for op in nested.iter().chain(&ttl) {
            round_trip(op)?;
        }
    }

    #[test]
    fn cql_and_redis_ops_round_trip_through_serde(
        cql in strategy::ops(Profile::Cql, 30), redis in strategy::ops(Profile::Redis, 30),
    ) {
        for op in cql.iter().chain(&redis) {
            round_trip(op)?;
        }
    }

    #[test]
    fn simpler_ops_round_trip_differ_and_run_out(
        cql in strategy::ops(Profile::Cql, 30),
        redis in strategy::ops(Profile::Redis, 30),
        nested in strategy::ops(Profile::Nested, 30),
    ) {
        for op in cql.iter().chain(&redis).chain(&nested) {
            for variant in simpler(op) {
                prop_assert_ne!(&variant, op);
                round_trip(&variant)?;
            }
            // Always taking the last (mildest) variant still ends: each is smaller.
            let mut current = op.clone();
            for step in 0.. {
                prop_assert!(step < 1_000, "no end simplifying {:?}", op);
                match simpler(&current).pop() {
                    Some(next) => current = next,
                    None => break,
                }
            }
        }
    }
}

#[test]
fn settings_round_trip_through_serde() {
    for op in [Op::DefaultTtl { ttl_ms: None }, Op::DefaultTtl { ttl_ms: Some(7) }] {
        round_trip(&op).expect("round trip");
    }
}

#[test]
fn a_seed_generates_the_same_ops_every_time() {
    for seed in 0..20 {
        for profile in Profile::ALL {
            let first = generate(seed, profile, 200);
            assert_eq!(generate(seed, profile, 200), first, "seed {seed} {profile:?}");
        }
    }
}

#[test]
fn seeds_differ() {
    for profile in Profile::ALL {
        assert_ne!(generate(1, profile, 50).0, generate(2, profile, 50).0, "{profile:?}");
    }
}

#[test]
fn every_profile_reads_and_writes() {
    for profile in Profile::ALL {
        let ops: Vec<Op> = (0..10).flat_map(|seed| generate(seed, profile, 100).0).collect();
        assert!(ops.iter().any(Op::is_read), "{profile:?} reads");
        assert!(ops.iter().any(|op| !op.is_read()), "{profile:?} writes");
    }
}
