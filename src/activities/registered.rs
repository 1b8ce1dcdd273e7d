//! The `#[activities]` registration: thin Temporal wrappers over [`OverspillActivities`]'s bodies.
// The macro adds an undocumented associated constant per activity.
#![allow(missing_docs)]

use std::sync::Arc;

use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};

use super::{Incoming, Outgoing, OverspillActivities, guard};
use crate::api::{
    GrepRequest, GrepResponse, ListRequest, ListResponse, ReadRequest, ReadResponse, ReduceRequest,
    ReduceResponse, SpillRequest, SpillResponse, SummarizeRequest, SummarizeResponse,
};

#[activities]
impl OverspillActivities {
    /// `tool_output_limits.reduce`: measure, pick the band, truncate / spill / summarize.
    #[activity(name = "tool_output_limits.reduce")]
    pub async fn reduce(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: Incoming<ReduceRequest>,
    ) -> Result<Outgoing<ReduceResponse>, ActivityError> {
        let run_id = ctx.info().workflow_run_id.clone();
        self.serve(&ctx, input, |request| {
            self.reduce_request(request, run_id.as_deref())
        })
        .await
    }

    /// `tool_output_limits.spill`: persist a payload under its key; handle, preview and shape.
    #[activity(name = "tool_output_limits.spill")]
    pub async fn spill(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: Incoming<SpillRequest>,
    ) -> Result<Outgoing<SpillResponse>, ActivityError> {
        let run_id = ctx.info().workflow_run_id.clone();
        self.serve(&ctx, input, |request| {
            self.spill_request(request, run_id.as_deref())
        })
        .await
    }

    /// `tool_output_limits.summarize`: one model call; summary and usage.
    #[activity(name = "tool_output_limits.summarize")]
    pub async fn summarize(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: Incoming<SummarizeRequest>,
    ) -> Result<Outgoing<SummarizeResponse>, ActivityError> {
        // A retry resumes a chunked summary from the last chunk the previous attempt reported;
        // heartbeats keep reporting it until this attempt gets further.
        let resume = ctx
            .heartbeat_details()
            .deserialize::<crate::summarize::ChunkProgress>()
            .ok()
            .flatten();
        let latest = guard::Progress::default();
        if let Some(resume) = &resume {
            latest.set(resume.clone());
        }
        let (beat, slot) = (ctx.clone(), latest.clone());
        self.serve_with(&ctx, input, &latest, |request| {
            self.summarize_resumable(request, resume, move |progress| {
                let (ctx, progress) = (beat.clone(), progress.clone());
                slot.set(progress.clone());
                async move {
                    let _ = ctx.record_heartbeat(progress).await;
                }
            })
        })
        .await
    }

    /// `tool_output_limits.read_tool_result`: the bounded read-back, from any worker.
    #[activity(name = "tool_output_limits.read_tool_result")]
    pub async fn read_tool_result(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: Incoming<ReadRequest>,
    ) -> Result<Outgoing<ReadResponse>, ActivityError> {
        self.serve(&ctx, input, |request| self.read_request(request))
            .await
    }

    /// `tool_output_limits.grep_tool_result`: a spill's matching lines with context, from any
    /// worker.
    #[activity(name = "tool_output_limits.grep_tool_result")]
    pub async fn grep_tool_result(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: Incoming<GrepRequest>,
    ) -> Result<Outgoing<GrepResponse>, ActivityError> {
        self.serve(&ctx, input, |request| self.grep_request(request))
            .await
    }

    /// `tool_output_limits.list_tool_results`: a run's spills, newest first.
    #[activity(name = "tool_output_limits.list_tool_results")]
    pub async fn list_tool_results(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: Incoming<ListRequest>,
    ) -> Result<Outgoing<ListResponse>, ActivityError> {
        let run_id = ctx.info().workflow_run_id.clone();
        self.serve(&ctx, input, |request| {
            self.list_request(request, run_id.as_deref())
        })
        .await
    }
}
