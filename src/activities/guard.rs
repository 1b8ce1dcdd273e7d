//! Heartbeats and cancellation around an activity's work.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use temporalio_sdk::activities::{ActivityContext, ActivityError};

/// How often a long activity heartbeats (the SDK throttles to the heartbeat timeout anyway).
const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);

/// The latest progress an activity reported; periodic heartbeats carry it, so that they never
/// replace the details a retry resumes from. Clones share it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Progress<T>(Arc<Mutex<Option<T>>>);

impl Progress<u64> {
    /// No progress to report: heartbeats carry a beat count.
    pub(crate) fn none() -> Self {
        Self::default()
    }
}

impl<T: Clone> Progress<T> {
    /// Remember `progress` as the latest.
    pub(crate) fn set(&self, progress: T) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(progress);
    }

    /// The latest progress, if any.
    pub(crate) fn latest(&self) -> Option<T> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Run `work`, heartbeating while it runs; a cancellation (or a heartbeat timeout) abandons it
/// with `Cancelled` (stores write whole objects: an abandoned spill leaves none).
pub async fn guarded<F: Future>(
    ctx: &ActivityContext,
    work: F,
) -> Result<F::Output, ActivityError> {
    guarded_with(ctx, work, &Progress::none()).await
}

/// [`guarded`], heartbeating the latest `progress` (a beat count until there is one).
pub(super) async fn guarded_with<F, T>(
    ctx: &ActivityContext,
    work: F,
    progress: &Progress<T>,
) -> Result<F::Output, ActivityError>
where
    F: Future,
    T: Serialize + Clone + Send + Sync + 'static,
{
    let mut work = std::pin::pin!(work);
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
                    let _ = match progress.latest() {
                        Some(latest) => ctx.record_heartbeat(latest).await,
                        None => ctx.record_heartbeat(beats).await,
                    };
                }
            }
        }
    }
}
