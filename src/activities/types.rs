//! The spill, summarize and read activities' request and response forms (`json/plain`, snake_case).
//! The reduce activity's forms are [`crate::api::ReduceRequest`] / [`crate::api::ReduceResponse`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::limits::{ToolCall, ToolOutput, Usage};

/// `tool_output_limits.spill`: persist one output under its key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpillRequest {
    /// The tool's name (named in the preview's header).
    #[serde(default)]
    pub tool_name: String,
    /// The agent run (default: the calling workflow's run id).
    #[serde(default)]
    pub run_id: Option<String>,
    /// The model's tool call id (default `call`).
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// The tool call's retry (never the activity attempt).
    #[serde(default)]
    pub retry: u32,
    /// The handle suffix: `""` for the return value, `".content"` for a ToolReturn's content.
    #[serde(default)]
    pub suffix: String,
    /// An explicit spill key (`run/call.0`), as the engine derives it; overrides `run_id`,
    /// `tool_call_id`, `retry` and `suffix`. Workflow-side stores send this.
    #[serde(default)]
    pub key: Option<String>,
    /// The payload.
    pub output: ToolOutput,
    /// The preview's content budget in chars (default 1,000).
    #[serde(default = "default_preview_chars")]
    pub preview_chars: i64,
    /// Limits settings that shape the preview (`over_tokens`, `strip_ansi`, `serializer`,
    /// `read_tool_name`); bands are ignored.
    #[serde(default)]
    pub config: Option<Value>,
}

fn default_preview_chars() -> i64 {
    1_000
}

impl SpillRequest {
    /// The call this payload came from.
    pub fn call(&self) -> ToolCall {
        ToolCall {
            tool_name: self.tool_name.clone(),
            tool_kind: None,
            run_id: self.run_id.clone(),
            tool_call_id: self.tool_call_id.clone(),
            retry: self.retry,
        }
    }
}

/// What a spill returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpillResponse {
    /// The handle to read the payload back with.
    pub handle: String,
    /// The model-visible text: header, shape line and head/tail preview.
    pub preview: String,
    /// The top-level shape sketch of a structured output (empty otherwise).
    pub shape: String,
    /// Bytes stored (UTF-8 of the text, or the binary length).
    pub overflow_bytes: u64,
}

/// `tool_output_limits.summarize`: one model call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummarizeRequest {
    /// The tool whose output is summarized.
    #[serde(default)]
    pub tool_name: String,
    /// The text to summarize.
    pub output: String,
    /// The model override (default: the worker's model).
    #[serde(default)]
    pub model: Option<String>,
    /// The prompt template with `{tool_name}` and `{output}` (default: the worker's
    /// `summary_prompt`); `prompt` on the wire.
    #[serde(default, rename = "prompt")]
    pub template: Option<String>,
}

/// What a summary returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummarizeResponse {
    /// The summary, stripped of surrounding whitespace.
    pub summary: String,
    /// What the call cost.
    pub usage: Usage,
}

/// What `tool_output_limits.read_tool_result` returns: the model-visible text (a bare JSON
/// string in `json/plain`, `ReadToolResultResponse.text` in the protobuf encodings).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ReadResponse(pub String);
