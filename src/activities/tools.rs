//! The model tools beyond the reference's `read_tool_result`: `grep_tool_result` (the lines of a
//! spill matching a pattern, with context) and `list_tool_results` (a run's spills, newest
//! first). Both return the model-visible text, and both fail as `read_tool_result` does: a bad
//! argument is a non-retryable `ModelRetry`, a store failure `StoreUnavailable` (retryable).

use std::time::SystemTime;

use super::{Failure, OverspillActivities};
use crate::api::{GrepRequest, GrepResponse, ListRequest, ListResponse};
use crate::read::{self, ReadOutcomeError};

impl OverspillActivities {
    /// Grep a spill (the body of [`super::GREP_TOOL_RESULT`], without Temporal).
    pub async fn grep_request(&self, request: GrepRequest) -> Result<GrepResponse, Failure> {
        read::grep_tool_result(self.store().as_ref(), &request)
            .await
            .map(GrepResponse)
            .map_err(|e| read_failure(&e))
    }

    /// List a run's spills (the body of [`super::LIST_TOOL_RESULTS`], without Temporal);
    /// `workflow_run_id` fills a missing `run_id`.
    pub async fn list_request(
        &self,
        mut request: ListRequest,
        workflow_run_id: Option<&str>,
    ) -> Result<ListResponse, Failure> {
        if request.run_id.is_empty() {
            request.run_id = workflow_run_id.unwrap_or_default().to_owned();
        }
        let listing = self
            .store()
            .list_run(&request)
            .await
            .map_err(|e| read_failure(&e))?;
        Ok(ListResponse(listing.render(SystemTime::now())))
    }
}

/// The activity failure for a read that could not be served.
pub(crate) fn read_failure(error: &ReadOutcomeError) -> Failure {
    match error {
        ReadOutcomeError::Retry(retry) => Failure::model_retry(retry.to_string()),
        ReadOutcomeError::Store(e) => Failure::store(e),
    }
}
