//! Example tool activities for [`super::AgentLoop`]. `generate_logs` reduces its own output
//! inside the activity, so the multi-megabyte text never enters workflow history; `list_files`
//! returns its output as is and the workflow passes it through `tool_output_limits.reduce`.
// The macro adds an undocumented associated constant per activity.
#![allow(missing_docs)]

use std::fmt::Write as _;
use std::sync::Arc;

use overspill::activities::{Caller, Failure, OverspillActivities};
use overspill::api::{ReduceRequest, ReduceResponse};
use overspill::limits::{ToolCall, ToolOutput};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};

/// A tool call from the scripted model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolRequest {
    /// The agent run (spill key's first segment).
    pub run_id: Option<String>,
    /// The model's tool call id.
    pub tool_call_id: Option<String>,
    /// The tool call's retry.
    pub retry: u32,
    /// How many lines of output to produce.
    pub lines: u64,
    /// Limits for the self-reduction (default: the worker's).
    pub config: Option<Value>,
}

/// The example tools, reducing through `overspill`.
#[derive(Debug, Clone)]
pub struct ExampleTools {
    overspill: OverspillActivities,
}

impl ExampleTools {
    /// Tools that reduce their outputs with `overspill`.
    pub fn new(overspill: OverspillActivities) -> Self {
        Self { overspill }
    }
}

/// A deterministic build log of `lines` lines, with an `ERROR` every 997 lines.
pub fn build_log(lines: u64) -> String {
    let mut out = String::with_capacity(capacity(lines));
    append_log(&mut out, 0..lines);
    out
}

/// [`build_log`], yielding every 10,000 lines so that a heartbeat or a cancellation gets through.
async fn build_log_async(lines: u64) -> String {
    let mut out = String::with_capacity(capacity(lines));
    for start in (0..lines).step_by(10_000) {
        append_log(&mut out, start..lines.min(start + 10_000));
        tokio::task::yield_now().await;
    }
    out
}

fn capacity(lines: u64) -> usize {
    usize::try_from(lines.min(1_000_000) * 56).unwrap_or(0)
}

fn append_log(out: &mut String, lines: std::ops::Range<u64>) {
    for i in lines {
        let level = if i % 997 == 996 { "ERROR" } else { "INFO " };
        let _ = writeln!(
            out,
            "{level} step {i:>8}: compiled unit {:08x} in {:>4} ms",
            i.wrapping_mul(2_654_435_761) & 0xffff_ffff,
            (i * 37) % 1000
        );
    }
}

#[activities]
impl ExampleTools {
    /// `overspill.example.generate_logs`: a multi-megabyte build log, reduced before returning.
    #[activity(name = "overspill.example.generate_logs")]
    pub async fn generate_logs(
        self: Arc<Self>,
        ctx: ActivityContext,
        request: ToolRequest,
    ) -> Result<ReduceResponse, ActivityError> {
        let caller = Caller::of(ctx.info());
        let overspill = &self.overspill;
        // Generation and reduction both run under heartbeats, and stop on cancellation.
        let work = async move {
            let text = build_log_async(request.lines).await;
            let call = ToolCall {
                tool_name: "generate_logs".into(),
                run_id: request.run_id,
                tool_call_id: request.tool_call_id,
                retry: request.retry,
                tool_kind: None,
                run_step: None,
            };
            let reduce = ReduceRequest {
                config: request.config,
                ..ReduceRequest::new(call, ToolOutput::Text(text.into()))
            };
            overspill.reduce_request(reduce, &caller).await
        };
        overspill::activities::guarded(&ctx, work)
            .await?
            .map_err(Failure::into_activity_error)
    }

    /// `overspill.example.list_files`: a directory listing, returned unreduced.
    #[activity(name = "overspill.example.list_files")]
    pub async fn list_files(
        _ctx: ActivityContext,
        request: ToolRequest,
    ) -> Result<String, ActivityError> {
        let mut out = String::new();
        for i in 0..request.lines {
            let _ = writeln!(
                out,
                "src/module_{i:05}/lib.rs\t{} bytes",
                (i * 7919) % 100_000
            );
        }
        Ok(out)
    }
}
