//! Every activity failure, logged by the worker: without it an operator sees nothing when, say,
//! every spill fails and the callers quietly fall back.

use temporalio_sdk::activities::ActivityError;
use temporalio_sdk::interceptors::{
    ActivityInboundInterceptor, ExecuteActivityInput, ExecuteActivityOutput, Next,
};

/// Logs each failed activity at WARN with its error type, retryability and message, the
/// activity's name, id and attempt, and the calling workflow's id and run id; a cancellation at
/// INFO. The worker registers it outermost, so it sees what Temporal is sent.
#[derive(Debug, Clone, Copy, Default)]
pub struct LogFailures;

impl ActivityInboundInterceptor for LogFailures {
    fn execute_activity<'a>(
        &'a self,
        input: ExecuteActivityInput,
        next: Next<'a, ExecuteActivityInput, ExecuteActivityOutput<'a>>,
    ) -> ExecuteActivityOutput<'a> {
        let info = input.activity_info();
        let activity = info.activity_type.clone();
        let activity_id = info.activity_id.clone();
        let attempt = info.attempt;
        let workflow_id = info.workflow_id.clone().unwrap_or_default();
        let run_id = info.workflow_run_id.clone().unwrap_or_default();
        Box::pin(async move {
            let result = next.run(input).await;
            match &result {
                Err(ActivityError::Application(failure)) => tracing::warn!(
                    activity,
                    activity_id,
                    attempt,
                    workflow_id,
                    run_id,
                    error_type = failure.type_name().unwrap_or("ApplicationError"),
                    non_retryable = failure.is_non_retryable(),
                    "activity failed: {}",
                    failure.source_error()
                ),
                Err(ActivityError::Cancelled { .. }) => tracing::info!(
                    activity,
                    activity_id,
                    attempt,
                    workflow_id,
                    run_id,
                    "activity cancelled"
                ),
                _ => {}
            }
            result
        })
    }
}
