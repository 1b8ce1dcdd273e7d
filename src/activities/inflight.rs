//! The worker's bound on the payload bytes its running activities hold (`--max-inflight-bytes`),
//! so that many concurrent large spills queue instead of exhausting memory.
//!
//! Before it fetches or decodes anything, an activity is charged what its input costs in memory at
//! its peak, four times the input's size (the payload, serde_json's
//! buffer for a string with escapes, the decoded request and the bytes the spill uploads), and it
//! gives the charge back when it finishes. The read-back activities are charged their fixed
//! working set on top (a query its memory bound, [`crate::query::QueryRunner::memory`]; a grep or
//! a read its buffers, [`crate::read::GREP_WORKING_SET`] and [`crate::read::READ_WORKING_SET`]),
//! so that concurrent queries queue rather than exhaust the container. A charge larger than the
//! whole budget waits for all of it and then runs alone.
//!
//! ```
//! use overspill::activities::InflightBudget;
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let budget = InflightBudget::new(64 << 20);
//! let permit = budget.charge(10 << 20).await;
//! assert_eq!(permit.bytes(), 40 << 20);
//! assert_eq!(budget.available(), 24 << 20);
//! drop(permit);
//! assert_eq!(budget.available(), 64 << 20);
//! # });
//! ```

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes are counted in KiB (a semaphore hands out at most `u32::MAX` permits at once).
const UNIT: u64 = 1024;

/// What an activity holds at its peak per byte of input (see the module's documentation).
const WORKING_SET_FACTOR: u64 = 4;

/// The budget when the available memory cannot be read.
const FALLBACK_BYTES: u64 = 1 << 30;

/// The smallest default budget.
const MIN_DEFAULT_BYTES: u64 = 64 << 20;

/// A shared budget of in-flight payload bytes. Clones share it.
#[derive(Debug, Clone)]
pub struct InflightBudget {
    semaphore: Arc<Semaphore>,
    units: u32,
}

/// A charge against an [`InflightBudget`], given back when dropped.
#[derive(Debug)]
pub struct InflightPermit(Option<OwnedSemaphorePermit>);

impl InflightBudget {
    /// A budget of `bytes` (at least 1 KiB).
    pub fn new(bytes: u64) -> Self {
        let max = Semaphore::MAX_PERMITS.min(u32::MAX as usize) as u64;
        let units = (bytes / UNIT).clamp(1, max) as u32;
        Self {
            semaphore: Arc::new(Semaphore::new(units as usize)),
            units,
        }
    }

    /// Half the memory available to this process ([`available_memory`]), at least 64 MiB.
    pub fn from_available_memory() -> Self {
        Self::for_memory(available_memory())
    }

    /// Half of `available` bytes (a fixed fallback when unknown), at least 64 MiB.
    fn for_memory(available: Option<u64>) -> Self {
        Self::new((available.unwrap_or(FALLBACK_BYTES) / 2).max(MIN_DEFAULT_BYTES))
    }

    /// The whole budget in bytes.
    pub fn bytes(&self) -> u64 {
        u64::from(self.units) * UNIT
    }

    /// The bytes not charged right now.
    pub fn available(&self) -> u64 {
        self.semaphore.available_permits() as u64 * UNIT
    }

    /// Wait until an input of `input_bytes` fits (charged four times its size, at most the whole
    /// budget), and hold the charge until the permit is dropped.
    pub async fn charge(&self, input_bytes: u64) -> InflightPermit {
        self.charge_with(input_bytes, 0).await
    }

    /// [`Self::charge`] plus `working_set` bytes the activity holds whatever its input (a query's
    /// memory bound, a grep's buffers), in one charge: an activity never holds one charge while
    /// it waits for another.
    pub async fn charge_with(&self, input_bytes: u64, working_set: u64) -> InflightPermit {
        let units = input_bytes
            .saturating_mul(WORKING_SET_FACTOR)
            .saturating_add(working_set)
            .div_ceil(UNIT)
            .min(u64::from(self.units));
        let units = u32::try_from(units).unwrap_or(self.units);
        // The semaphore is never closed, so acquiring only ever waits.
        InflightPermit(self.semaphore.clone().acquire_many_owned(units).await.ok())
    }
}

impl InflightPermit {
    /// The bytes this permit holds.
    pub fn bytes(&self) -> u64 {
        self.0.as_ref().map_or(0, |p| p.num_permits() as u64 * UNIT)
    }
}

impl Default for InflightBudget {
    fn default() -> Self {
        Self::from_available_memory()
    }
}

/// The memory this process may still use: the smaller of the system's `MemAvailable` and what
/// is left under the cgroup's `memory.max`; `None` where neither can be read.
pub fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let system = (meminfo.lines())
        .find_map(|line| line.strip_prefix("MemAvailable:"))
        .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024);
    let read = |file: &str| {
        std::fs::read_to_string(format!("/sys/fs/cgroup/{file}"))
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
    };
    let cgroup =
        read("memory.max").map(|max| max.saturating_sub(read("memory.current").unwrap_or(0)));
    system.into_iter().chain(cgroup).min()
}

#[cfg(test)]
mod tests {
    use futures::FutureExt as _;

    use super::*;

    #[tokio::test]
    async fn charges_queue_until_earlier_ones_are_given_back() {
        let budget = InflightBudget::new(100 << 20);
        let first = budget.charge(15 << 20).await;
        assert_eq!(first.bytes(), 60 << 20, "charged four times the input");
        assert_eq!(budget.available(), 40 << 20);
        // Polled once, no clock: a charge that fits is ready at once, one that does not waits.
        let second = budget.charge(15 << 20).now_or_never();
        assert!(second.is_none(), "a second 15 MB input waits");
        drop(first);
        let _second =
            (budget.charge(15 << 20).now_or_never()).expect("runs once the first is done");
    }

    #[tokio::test]
    async fn a_working_set_is_charged_with_the_input_at_once() {
        let budget = InflightBudget::new(1 << 30);
        let query = budget.charge_with(1 << 20, 512 << 20).await;
        assert_eq!(query.bytes(), (4 << 20) + (512 << 20));
        let second = budget.charge_with(1 << 20, 512 << 20).now_or_never();
        assert!(second.is_none(), "a second query waits for the first");
        drop(query);
        let _second = (budget.charge_with(1 << 20, 512 << 20).now_or_never())
            .expect("runs once the first is done");
    }

    #[tokio::test]
    async fn an_input_larger_than_the_budget_runs_alone() {
        let budget = InflightBudget::new(10 << 20);
        let _huge =
            (budget.charge(1 << 30).now_or_never()).expect("the whole budget, not a deadlock");
        assert_eq!(budget.available(), 0);
    }

    #[test]
    fn the_default_is_half_the_available_memory() {
        // One reading, judged once: the machine's free memory moves between two reads.
        assert_eq!(InflightBudget::for_memory(Some(8 << 30)).bytes(), 4 << 30);
        assert_eq!(
            InflightBudget::for_memory(Some(1 << 20)).bytes(),
            MIN_DEFAULT_BYTES
        );
        assert_eq!(InflightBudget::for_memory(None).bytes(), FALLBACK_BYTES / 2);
        assert!(available_memory().is_some_and(|bytes| bytes > 0));
    }
}
