//! How workflow code calls Overspill's activities: typed definitions by name, default options,
//! and engine adapters ([`ActivityStore`], [`ActivitySummarizer`]) that turn the engine's spill
//! and summarize into activity calls.
// The macro adds an undocumented associated constant per activity definition.
#![allow(missing_docs)]

use std::time::Duration;

use bytes::Bytes;
use temporalio_common::RetryPolicy;
use temporalio_macros::activity_definitions;
use temporalio_sdk::activities::ActivityError;
use temporalio_sdk::{ActivityOptions, WorkflowContext};

// `::overspill`: `#[activity_definitions]` on `Overspill` defines a module `overspill` here.
use ::overspill::api::{
    QueryRequest, ReadRequest, ReduceRequest, ReduceResponse, SpillRequest, SpillResponse,
    SummarizeRequest, SummarizeResponse,
};
use ::overspill::limits::{
    Limits, SpillStore, SummarizeError, Summarizer, Summary, SummaryRequest, ToolCall, ToolOutput,
};
use ::overspill::names::{QUERY_TOOL_RESULT, READ_TOOL_RESULT, REDUCE, SPILL, SUMMARIZE};
use ::overspill::store::StoreError;

/// The `tool_output_limits.*` activities, as workflow code calls them (`json/plain`).
pub struct Overspill;

#[activity_definitions]
impl Overspill {
    /// [`REDUCE`].
    #[activity(name = REDUCE)]
    pub fn reduce(_request: ReduceRequest) -> Result<ReduceResponse, ActivityError> {
        unimplemented!()
    }

    /// [`SPILL`].
    #[activity(name = SPILL)]
    pub fn spill(_request: SpillRequest) -> Result<SpillResponse, ActivityError> {
        unimplemented!()
    }

    /// [`SUMMARIZE`].
    #[activity(name = SUMMARIZE)]
    pub fn summarize(_request: SummarizeRequest) -> Result<SummarizeResponse, ActivityError> {
        unimplemented!()
    }

    /// [`READ_TOOL_RESULT`].
    #[activity(name = READ_TOOL_RESULT)]
    pub fn read_tool_result(_request: ReadRequest) -> Result<String, ActivityError> {
        unimplemented!()
    }

    /// [`QUERY_TOOL_RESULT`].
    #[activity(name = QUERY_TOOL_RESULT)]
    pub fn query_tool_result(_request: QueryRequest) -> Result<String, ActivityError> {
        unimplemented!()
    }
}

/// Options for Overspill's activities: 60 s per attempt, at most 2 minutes waiting for a worker
/// to start it, 10 s heartbeats, and 12 attempts with backoff from 200 ms to 10 s: about a minute
/// of retries, through a store's restart (one took 35 s on a loaded machine,
/// tests/integration/chaos.rs). A store outage that outlasts them fails the call, and the engine
/// runs the action's `then`.
pub fn activity_options() -> ActivityOptions {
    ActivityOptions::with_start_to_close_timeout(Duration::from_secs(60))
        .schedule_to_start_timeout(Duration::from_secs(120))
        .heartbeat_timeout(Duration::from_secs(10))
        .retry_policy(
            RetryPolicy::builder()
                .initial_interval(Duration::from_millis(200))
                .backoff_coefficient(2.0)
                .maximum_interval(Duration::from_secs(10))
                .maximum_attempts(12)
                .build(),
        )
        .build()
}

/// The engine's spill store inside workflow code: every write is a `tool_output_limits.spill`
/// activity keyed by the engine's key, so the handle is journaled and a replay reuses it.
pub(crate) struct ActivityStore<'a, W> {
    ctx: &'a WorkflowContext<W>,
    tool_name: &'a str,
    config: serde_json::Value,
}

impl<'a, W> ActivityStore<'a, W> {
    /// Spills of `tool_name`'s outputs reduced under `limits`.
    ///
    /// The engine hands over bytes it already prepared (ANSI stripped, JSON rendered), which the
    /// activity must store as they are: its `config` turns `strip_ansi` off, whatever the
    /// worker's own defaults say, and carries the settings that shape the preview.
    pub(crate) fn new(ctx: &'a WorkflowContext<W>, tool_name: &'a str, limits: &Limits) -> Self {
        let config = serde_json::json!({
            "strip_ansi": false,
            "over_tokens": limits.over_tokens,
            "serializer": limits.serializer,
            "read_tool_name": limits.read_tool_name,
        });
        Self {
            ctx,
            tool_name,
            config,
        }
    }
}

impl<W> SpillStore for ActivityStore<'_, W> {
    type Error = StoreError;

    async fn write(&self, key: &str, data: Bytes) -> Result<String, StoreError> {
        let output = ToolOutput::from_raw(data);
        let request = SpillRequest {
            call: ToolCall {
                tool_name: self.tool_name.to_owned(),
                ..ToolCall::default()
            },
            suffix: String::new(),
            key: Some(key.to_owned()),
            output,
            preview_chars: 0,
            config: Some(self.config.clone()),
        };
        self.ctx
            .execute_activity(Overspill::spill, request, activity_options())
            .await
            .map(|response| response.handle)
            .map_err(|e| StoreError::Backend(e.to_string().into()))
    }
}

/// The engine's summarizer inside workflow code: one `tool_output_limits.summarize` activity,
/// with the workflow's own `summary_prompt` as its template.
pub(crate) struct ActivitySummarizer<'a, W> {
    pub(crate) ctx: &'a WorkflowContext<W>,
    pub(crate) template: &'a str,
}

impl<W> Summarizer for ActivitySummarizer<'_, W> {
    async fn summarize(&self, request: SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        let request = SummarizeRequest {
            tool_name: request.tool_name.to_owned(),
            output: request.output.to_owned(),
            model: request.model.map(str::to_owned),
            template: Some(self.template.to_owned()),
        };
        self.ctx
            .execute_activity(Overspill::summarize, request, activity_options())
            .await
            .map(|r| Summary {
                text: r.summary,
                usage: r.usage,
            })
            .map_err(|e| SummarizeError::Unavailable {
                status: None,
                message: e.to_string(),
                retry_after: None,
            })
    }
}
