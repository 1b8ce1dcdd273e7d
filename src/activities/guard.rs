//! Heartbeats and cancellation around an activity's work.

use std::future::Future;
use std::time::Duration;

use temporalio_sdk::activities::{ActivityContext, ActivityError};

/// How often a long activity heartbeats (the SDK throttles to the heartbeat timeout anyway).
const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);

/// Run `work`, heartbeating while it runs; a cancellation (or a heartbeat timeout noticed by the
/// server) abandons it with `Cancelled`. A spill abandoned mid-write leaves at most a partial
/// temporary object: stores write whole objects, so the key is either absent or complete.
pub async fn guarded<F: Future>(
    ctx: &ActivityContext,
    work: F,
) -> Result<F::Output, ActivityError> {
    let work = std::pin::pin!(work);
    let mut work = work;
    let mut ticks = tokio::time::interval(HEARTBEAT_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    let mut beats: u64 = 0;
    loop {
        tokio::select! {
            biased;
            out = &mut work => return Ok(out),
            () = ctx.cancelled() => return Err(ActivityError::cancelled()),
            _ = ticks.tick() => {
                beats += 1;
                if ctx.info().heartbeat_timeout.is_some() {
                    // A failed heartbeat conversion is not worth failing the activity over.
                    let _ = ctx.record_heartbeat(beats).await;
                }
            }
        }
    }
}
