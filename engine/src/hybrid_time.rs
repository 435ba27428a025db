//! Hybrid time: physical microseconds plus a 12-bit logical counter, and the clock that
//! hands it out. The engine never reads a clock on its own: the physical clock is injected.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Bits of a [`HybridTime`] given to the logical component.
pub const LOGICAL_BITS: u32 = 12;
/// The largest logical component.
pub const LOGICAL_MAX: u16 = (1 << LOGICAL_BITS) - 1;

/// A hybrid time: `(physical_us << 12) | logical`, totally ordered.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct HybridTime(u64);

impl HybridTime {
    /// The lowest hybrid time.
    pub const MIN: HybridTime = HybridTime(0);
    /// The highest hybrid time; reads at `MAX` see everything.
    pub const MAX: HybridTime = HybridTime(u64::MAX);
    /// The largest physical part a hybrid time can carry.
    pub const PHYSICAL_MAX_US: u64 = u64::MAX >> LOGICAL_BITS;

    /// A hybrid time from its parts. Panics on a logical part above 4095 or a physical part
    /// above [`HybridTime::PHYSICAL_MAX_US`]: callers validate user input first.
    pub fn new(physical_us: u64, logical: u16) -> HybridTime {
        assert!(logical <= LOGICAL_MAX, "logical component {logical} exceeds 12 bits");
        assert!(physical_us <= Self::PHYSICAL_MAX_US, "physical time {physical_us} too large");
        HybridTime((physical_us << LOGICAL_BITS) | u64::from(logical))
    }

    /// A hybrid time with logical part 0.
    pub fn from_micros(physical_us: u64) -> HybridTime {
        HybridTime::new(physical_us, 0)
    }

    /// The raw 64-bit representation.
    pub fn from_raw(raw: u64) -> HybridTime {
        HybridTime(raw)
    }

    /// The raw 64-bit representation.
    pub fn raw(self) -> u64 {
        self.0
    }

    /// Physical microseconds.
    pub fn physical_us(self) -> u64 {
        self.0 >> LOGICAL_BITS
    }

    /// The logical component.
    pub fn logical(self) -> u16 {
        (self.0 & u64::from(LOGICAL_MAX)) as u16
    }

    /// The next hybrid time (logical + 1, carrying into the physical part).
    pub fn incremented(self) -> HybridTime {
        HybridTime(self.0.checked_add(1).expect("hybrid time overflow"))
    }

    /// This time plus `delta_us` physical microseconds, saturating at [`HybridTime::MAX`].
    pub fn add_micros(self, delta_us: u64) -> HybridTime {
        match delta_us.checked_shl(LOGICAL_BITS) {
            Some(shifted) if shifted >> LOGICAL_BITS == delta_us => {
                HybridTime(self.0.saturating_add(shifted))
            }
            _ => HybridTime::MAX,
        }
    }
}

impl fmt::Display for HybridTime {
    /// docscript notation: `T1000`, or `T1000.3` with a logical part.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "T{}", self.physical_us())?;
        if self.logical() != 0 {
            write!(f, ".{}", self.logical())?;
        }
        Ok(())
    }
}

impl fmt::Debug for HybridTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The version of one stored entry: the hybrid time of its write batch and the entry's
/// index in that batch. Ordered by hybrid time, then write id: a later entry of the same
/// batch is newer.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct DocHybridTime {
    /// The write batch's hybrid time.
    pub ht: HybridTime,
    /// The entry's position in its write batch.
    pub write_id: u32,
}

impl DocHybridTime {
    /// The lowest version.
    pub const MIN: DocHybridTime = DocHybridTime { ht: HybridTime::MIN, write_id: 0 };
    /// The highest version.
    pub const MAX: DocHybridTime = DocHybridTime { ht: HybridTime::MAX, write_id: u32::MAX };

    /// A version from its parts.
    pub fn new(ht: HybridTime, write_id: u32) -> DocHybridTime {
        DocHybridTime { ht, write_id }
    }
}

impl fmt::Display for DocHybridTime {
    /// docscript notation: `T7000`, `T7000w1`, `T1000.3w2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.ht)?;
        if self.write_id != 0 {
            write!(f, "w{}", self.write_id)?;
        }
        Ok(())
    }
}

impl fmt::Debug for DocHybridTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A source of physical time in microseconds. The simulator injects a simulated clock;
/// nothing in the engine reads the system clock.
pub trait PhysicalClock {
    /// The current physical time in microseconds. It may jump backwards (clock skew).
    fn now_us(&mut self) -> u64;
}

/// A hybrid logical clock over an injected [`PhysicalClock`]: `now()` is strictly
/// increasing, and after `update(ht)` every `now()` is above `ht`.
pub struct HybridClock<C: PhysicalClock> {
    physical: C,
    last: HybridTime,
}

impl<C: PhysicalClock> HybridClock<C> {
    /// A clock that has handed out nothing yet.
    pub fn new(physical: C) -> Self {
        HybridClock { physical, last: HybridTime::MIN }
    }

    /// A hybrid time above every time handed out or seen so far.
    pub fn now(&mut self) -> HybridTime {
        let physical_us = self.physical.now_us().min(HybridTime::PHYSICAL_MAX_US);
        let next = if physical_us > self.last.physical_us() {
            HybridTime::from_micros(physical_us)
        } else {
            self.last.incremented()
        };
        assert!(next > self.last, "hybrid clock went backwards");
        self.last = next;
        next
    }

    /// Record a time seen elsewhere (a remote peer, a replayed log entry).
    pub fn update(&mut self, seen: HybridTime) {
        self.last = self.last.max(seen);
    }

    /// The physical clock, for the simulator to steer.
    pub fn physical_mut(&mut self) -> &mut C {
        &mut self.physical
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Scripted(Vec<u64>);
    impl PhysicalClock for Scripted {
        fn now_us(&mut self) -> u64 {
            self.0.remove(0)
        }
    }

    #[test]
    fn parts_and_order() {
        let a = HybridTime::new(1000, 3);
        assert_eq!((a.physical_us(), a.logical()), (1000, 3));
        assert!(HybridTime::new(1000, 4095) < HybridTime::new(1001, 0));
        assert_eq!(HybridTime::new(1000, 4095).incremented(), HybridTime::new(1001, 0));
        assert_eq!(a.to_string(), "T1000.3");
        assert_eq!(DocHybridTime::new(a, 2).to_string(), "T1000.3w2");
        assert_eq!(DocHybridTime::new(HybridTime::from_micros(7000), 0).to_string(), "T7000");
        // Assertion messages print them as docscript does.
        assert_eq!(format!("{a:?} {:?}", DocHybridTime::new(a, 2)), "T1000.3 T1000.3w2");
        assert!(DocHybridTime::new(a, 1) > DocHybridTime::new(a, 0));
    }

    #[test]
    fn clock_is_strictly_increasing_under_skew() {
        // Physical time stalls, then jumps back: logical ticks keep now() increasing.
        let mut clock = HybridClock::new(Scripted(vec![100, 100, 50, 200, 150]));
        let got: Vec<String> = (0..5).map(|_| clock.now().to_string()).collect();
        assert_eq!(got, ["T100", "T100.1", "T100.2", "T200", "T200.1"]);
    }

    #[test]
    fn clock_update_moves_past_remote_time() {
        let mut clock = HybridClock::new(Scripted(vec![100, 100, 900]));
        clock.now();
        clock.update(HybridTime::new(500, 7));
        assert_eq!(clock.now(), HybridTime::new(500, 8));
        clock.update(HybridTime::new(10, 0)); // older: ignored
        assert_eq!(clock.now(), HybridTime::from_micros(900));
    }

    #[test]
    fn add_micros_saturates() {
        assert_eq!(HybridTime::from_micros(5).add_micros(10), HybridTime::from_micros(15));
        assert_eq!(HybridTime::from_micros(5).add_micros(u64::MAX), HybridTime::MAX);
        // Shifted into the logical bits' place, this delta's one bit falls off the top.
        assert_eq!(HybridTime::from_micros(5).add_micros(1 << 52), HybridTime::MAX);
    }
}
