//! `ReduceToolOutput`: the reduce pipeline as a workflow, startable as a child from any language.
// The workflow macros add an undocumented associated constant.
#![allow(missing_docs)]

use temporalio_common::error::ApplicationFailure;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{WorkflowContext, WorkflowResult};

use crate::calls::{ActivityStore, ActivitySummarizer};
use overspill::api::{ReduceRequest, ReduceResponse};
use overspill::limits::{self, Limits};

/// Reduce one tool result: measure, band and truncate in workflow code (deterministic, no
/// activity), spill and summarize through activities. Input and output are the
/// `tool_output_limits.reduce` JSON; `run_id` defaults to the parent workflow's run id (this
/// workflow's own when it has no parent), as the activity defaults it to its caller's.
#[workflow]
#[derive(Default)]
pub struct ReduceToolOutput;

#[workflow_methods]
impl ReduceToolOutput {
    /// Run the reduction.
    #[run(name = "ReduceToolOutput")]
    pub async fn run(
        ctx: &mut WorkflowContext<Self>,
        request: ReduceRequest,
    ) -> WorkflowResult<ReduceResponse> {
        let limits = request.limits(&Limits::default()).map_err(|e| {
            ApplicationFailure::builder(Box::new(e))
                .type_name("InvalidConfig".to_owned())
                .non_retryable(true)
                .build()
        })?;
        // Started as a child: the key is the parent's, as if it had called the activity.
        let run_id = match ctx.info().parent() {
            Some(parent) => parent.run_id().to_owned(),
            None => ctx.run_id().to_owned(),
        };
        let call = request.call(Some(&run_id));
        let ctx: &WorkflowContext<Self> = ctx;
        let store = ActivityStore::new(ctx, &call.tool_name, &limits);
        let summarizer = ActivitySummarizer {
            ctx,
            template: &limits.summary_prompt,
        };
        let reduced =
            limits::reduce(&limits, &call, request.into_result(), &store, &summarizer).await;
        Ok(reduced)
    }
}
