//! # docsim-workloads: seeded operation generators
//!
//! A workload turns a random stream into [`Op`]s: document writes, batches and reads,
//! marker modes and the table default TTL; CQL statements on declared tables; Redis
//! commands (flushes, compactions, crashes and faults are the simulator's to draw). An op
//! is plain typed data in the reference model's vocabulary (`docsim-models`:
//! [`DocId`](docsim_models::DocId), [`Key`](docsim_models::Key),
//! [`Write`](docsim_models::Write), [`Ttl`](docsim_models::Ttl), raw hybrid
//! [`Time`](docsim_models::Time), `CqlOp`, `RedisOp`), so this crate knows nothing of the
//! engine: the simulator applies an op to the engine and to the model, and prints it as
//! docscript through the engine's printer. Ops serialize with serde.
//!
//! **Profiles** pick what a run exercises: nested documents (depth up to 6, hot and cold
//! keys), CQL tables (the seed's `msgs` and `page_views` and a random schema, maps and
//! sets), Redis, TTL-heavy writes, and time-travel reads (at random times between the
//! history cutoff and now, and just around TTL boundaries). **Swarm testing**: each seed
//! also draws its own [`Knobs`] — operation weights (some kinds switched off entirely),
//! key-space size, nesting depth, TTL odds — so different seeds stress different corners.
//! The ops of a seed are a pure function of it: the simulator's determinism hashes rely on
//! every draw staying where it is.
//!
//! Generators never look at the engine: they remember only what they generated (write
//! times and TTLs, for boundary reads).
//!
//! **Shrinking**: [`simpler`] lists smaller variants of one op — fewer batch items, object
//! entries, CQL columns, assignments and collection elements, Redis fields; no TTLs;
//! shorter paths; values at their type's zero — for the simulator's shrinker to try.

mod generate;
mod op;
mod simplify;

pub use generate::{Knobs, Profile, Workload};
pub use op::{CqlTableSpec, DocWrite, Op, RestoreTo};
pub use simplify::simpler;

/// Proptest strategies over the same generators: a strategy draws a seed and generates.
pub mod strategy {
    use super::{Profile, Workload};
    use docsim_models::Time;
    use proptest::prelude::*;
    use rand::SeedableRng;

    /// A raw hybrid time at `us` microseconds, logical 0.
    fn micros(us: u64) -> Time {
        us << 12
    }

    /// `len` ops of `profile` from a random seed, at hybrid times 1 ms apart (history
    /// cutoff 0).
    pub fn ops(profile: Profile, len: usize) -> impl Strategy<Value = Vec<super::Op>> {
        any::<u64>().prop_map(move |seed| {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut workload = Workload::new(&mut rng, Some(profile));
            let mut ops = workload.setup_ops(micros(1));
            for i in 0..len {
                let now = micros(1_000 * (i as u64 + 2));
                ops.push(workload.next_op(&mut rng, now, 0));
            }
            ops
        })
    }
}
