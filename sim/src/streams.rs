//! The seed's random streams: every part of a run draws from its own ChaCha stream of
//! the one seed, so that a new draw in one part never reshuffles another. The executor's
//! setup (disk seeds, election timeouts) draws from the header's seed here too, so a
//! script's header alone sets a group up as the random run that wrote it did.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The stream of one part of a run (splitmix64 of seed and stream id).
pub fn stream(seed: u64, id: u64) -> ChaCha8Rng {
    let mut z = seed ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ChaCha8Rng::seed_from_u64(z ^ (z >> 31))
}

pub const STREAM_WORKLOAD: u64 = 1;
pub const STREAM_CLOCK: u64 = 2;
pub const STREAM_SCHEDULE: u64 = 3;
pub const STREAM_CRASHES: u64 = 4;
pub const STREAM_DISK: u64 = 5;
pub const STREAM_FAULTS: u64 = 6;
/// The storage configuration torture draws per seed (`metamorphic::drawn`).
pub const STREAM_STORAGE: u64 = 7;
pub const STREAM_NEMESIS: u64 = 8;
pub const STREAM_ELECTION: u64 = 9;
pub const STREAM_CLIENTS: u64 = 10;
/// The server-wide memstore limit a seed draws (`run/knobs.rs`).
pub const STREAM_MEMSTORE: u64 = 11;
/// Faults in RocksDB's own files (`run/knobs.rs`, `RocksFaults`).
pub const STREAM_ROCKS_FAULTS: u64 = 12;
/// History retention and reads that span time: the retention interval, paged reads and
/// long scans (`run/knobs.rs`, `Spans`).
pub const STREAM_SPANS: u64 = 13;
