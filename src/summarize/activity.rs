//! Summarizing inside a Temporal activity: heartbeats, resume, and failures typed for the
//! activity's retry policy.

use temporalio_common::ActivityError;
use temporalio_sdk::activities::ActivityContext;

use super::{ChunkBudget, ChunkProgress, OpenAiSummarizer, summarize_chunked};
use crate::limits::{Summary, SummaryRequest};

/// Summarize `request` in the activity behind `ctx`.
///
/// Resumes from the previous attempt's last heartbeat (a [`ChunkProgress`]), heartbeats the
/// progress after every finished chunk, and fails with [`Error::into_activity_error`]: a
/// retryable `Unavailable` with the server's `Retry-After` as the next retry delay, or a
/// non-retryable `Rejected` / `Malformed` / `Timeout` / `NotConfigured`, for the workflow to run
/// the action's `then`. The summary's text is not stripped (the engine strips it).
///
/// The SDK sends the first heartbeat at once and coalesces later ones over 80% of the activity's
/// heartbeat timeout (30 s when none is set): a worker killed in between loses the chunks since
/// the last heartbeat that left, so set a heartbeat timeout shorter than a chunk's summary.
///
/// [`Error::into_activity_error`]: super::Error::into_activity_error
pub async fn summarize_in_activity(
    ctx: &ActivityContext,
    model: &OpenAiSummarizer,
    request: SummaryRequest<'_>,
    budget: ChunkBudget,
) -> Result<Summary, ActivityError> {
    let resume = match ctx.heartbeat_details().deserialize::<ChunkProgress>() {
        Ok(resume) => resume,
        Err(error) => {
            tracing::warn!(
                target: "overspill::summarize",
                %error,
                "unreadable chunk progress in the heartbeat; starting over"
            );
            None
        }
    };
    summarize_chunked(model, request, budget, resume, |progress| {
        let beat = ctx.record_heartbeat(progress.clone());
        async move {
            if let Err(error) = beat.await {
                tracing::warn!(target: "overspill::summarize", %error, "could not record a heartbeat");
            }
        }
    })
    .await
    .map_err(super::Error::into_activity_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Activities run on a multi-threaded runtime: the future must be `Send`.
    #[allow(dead_code)]
    fn is_send(ctx: &ActivityContext, model: &OpenAiSummarizer, request: SummaryRequest<'_>) {
        fn send<T: Send>(_: &T) {}
        send(&summarize_in_activity(
            ctx,
            model,
            request,
            ChunkBudget::default(),
        ));
    }
}
