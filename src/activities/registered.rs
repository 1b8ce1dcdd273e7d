//! The `#[activities]` registration: thin Temporal wrappers over [`OverspillActivities`]'s bodies.
// The macro adds an undocumented associated constant per activity.
#![allow(missing_docs)]

use std::sync::Arc;

use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};

use super::{Incoming, Outgoing, OverspillActivities, Progress};
use crate::api::{
    GrepRequest, GrepResponse, ListRequest, ListResponse, QueryRequest, QueryResponse, ReadRequest,
    ReadResponse, ReduceRequest, ReduceResponse, SpillRequest, SpillResponse, SummarizeRequest,
    SummarizeResponse,
};
use crate::names::{
    GREP_TOOL_RESULT, LIST_TOOL_RESULTS, QUERY_TOOL_RESULT, READ_TOOL_RESULT, REDUCE, SPILL,
    SUMMARIZE,
};

/// The `#[activities]` impl: each activity is its wire name, request and response forms, and a
/// body given the activities (`this`), the context and the raw input. The SDK's macro needs each
/// signature spelled out; this writes them once.
macro_rules! registered {
    ($(
        $(#[$doc:meta])*
        $name:ident($wire:path, $request:ty => $response:ty) |$this:ident, $ctx:ident, $input:ident| $body:block
    )*) => {
        #[activities]
        impl OverspillActivities {
            $(
                $(#[$doc])*
                #[activity(name = $wire)]
                pub async fn $name(
                    self: Arc<Self>,
                    $ctx: ActivityContext,
                    $input: Incoming<$request>,
                ) -> Result<Outgoing<$response>, ActivityError> {
                    let $this = self;
                    $body
                }
            )*
        }
    };
}

registered! {
    /// [`REDUCE`]: measure, pick the band, truncate / spill / summarize.
    reduce(REDUCE, ReduceRequest => ReduceResponse) |this, ctx, input| {
        let work = |request| this.reduce_request(request, ctx.info().workflow_run_id.as_deref());
        this.serve(&ctx, input, &Progress::none(), work).await
    }

    /// [`SPILL`]: persist a payload under its key; handle, preview and shape.
    spill(SPILL, SpillRequest => SpillResponse) |this, ctx, input| {
        let work = |request| this.spill_request(request, ctx.info().workflow_run_id.as_deref());
        this.serve(&ctx, input, &Progress::none(), work).await
    }

    /// [`SUMMARIZE`]: one model call; summary and usage.
    summarize(SUMMARIZE, SummarizeRequest => SummarizeResponse)
    |this, ctx, input| {
        // A retry resumes a chunked summary from the last chunk the previous attempt reported;
        // heartbeats keep reporting it until this attempt gets further.
        let resume = ctx
            .heartbeat_details()
            .deserialize::<crate::summarize::ChunkProgress>()
            .ok()
            .flatten();
        let latest = Progress::default();
        if let Some(resume) = &resume {
            latest.set(resume.clone());
        }
        let (beat, slot) = (ctx.clone(), latest.clone());
        this.serve(&ctx, input, &latest, |request| {
            this.summarize_resumable(request, resume, move |progress| {
                let (ctx, progress) = (beat.clone(), progress.clone());
                slot.set(progress.clone());
                async move {
                    let _ = ctx.record_heartbeat(progress).await;
                }
            })
        })
        .await
    }

    /// [`READ_TOOL_RESULT`]: the bounded read-back, from any worker; charged its buffers.
    read_tool_result(READ_TOOL_RESULT, ReadRequest => ReadResponse) |this, ctx, input| {
        let working_set = crate::read::READ_WORKING_SET;
        let work = |r| this.read_request(r);
        this.serve_charged(&ctx, input, &Progress::none(), working_set, work).await
    }

    /// [`GREP_TOOL_RESULT`]: a spill's matching lines with context, from any worker; charged its
    /// buffers.
    grep_tool_result(GREP_TOOL_RESULT, GrepRequest => GrepResponse) |this, ctx, input| {
        let working_set = crate::read::GREP_WORKING_SET;
        let work = |r| this.grep_request(r);
        this.serve_charged(&ctx, input, &Progress::none(), working_set, work).await
    }

    /// [`QUERY_TOOL_RESULT`]: a jq filter over a spill of JSON, from any worker; charged the
    /// query's memory bound while it runs.
    query_tool_result(QUERY_TOOL_RESULT, QueryRequest => QueryResponse) |this, ctx, input| {
        let working_set = this.query_runner.memory();
        let work = |r| this.query_request(r);
        this.serve_charged(&ctx, input, &Progress::none(), working_set, work).await
    }

    /// [`LIST_TOOL_RESULTS`]: a run's spills, newest first.
    list_tool_results(LIST_TOOL_RESULTS, ListRequest => ListResponse) |this, ctx, input| {
        let work = |request| this.list_request(request, ctx.info().workflow_run_id.as_deref());
        this.serve(&ctx, input, &Progress::none(), work).await
    }
}
