//! # docsim-workloads: seeded operation generators
//!
//! A workload turns a random stream into [`Op`]s: docscript commands (document writes and
//! reads, marker modes), CQL statements and Redis commands. Every op prints as one line of
//! docscript, so an op log *is* a script that `docsim script` runs; ops also serialize
//! with serde.
//!
//! **Profiles** pick what a run exercises: nested documents (depth up to 6, hot and cold
//! keys), CQL tables (the seed's `msgs` and `page_views` and a random schema, maps and
//! sets), Redis, TTL-heavy writes, and time-travel reads (at random times between the
//! history cutoff and now, and just around TTL boundaries). **Swarm testing**: each seed
//! also draws its own [`Knobs`] — operation weights (some kinds switched off entirely),
//! key-space size, nesting depth, TTL odds — so different seeds stress different corners.
//!
//! Generators never look at the engine: they remember only what they generated (write
//! times and TTLs, for boundary reads). Structured CQL and Redis ops are the model's own
//! types (`docsim-models`), rendered to statement text here.

mod generate;
mod op;
mod render;

pub use generate::{Knobs, Profile, Workload};
pub use op::{CqlTableSpec, Op};
pub use render::redis as redis_command;

/// Proptest strategies over the same generators: a strategy draws a seed and generates.
pub mod strategy {
    use super::{Profile, Workload};
    use docsim_engine::HybridTime;
    use proptest::prelude::*;
    use rand::SeedableRng;

    /// `len` ops of `profile` from a random seed, at hybrid times 1 ms apart.
    pub fn ops(profile: Profile, len: usize) -> impl Strategy<Value = Vec<super::Op>> {
        any::<u64>().prop_map(move |seed| {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut workload = Workload::new(&mut rng, Some(profile));
            let mut ops = workload.setup_ops(HybridTime::from_micros(1));
            for i in 0..len {
                let now = HybridTime::from_micros(1_000 * (i as u64 + 2));
                ops.push(workload.next_op(&mut rng, now, HybridTime::MIN));
            }
            ops
        })
    }
}
