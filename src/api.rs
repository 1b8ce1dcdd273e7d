//! The request and response forms of the `tool_output_limits.*` activities (`json/plain`,
//! snake_case; mirrored in `proto/overspill/v1/`; see [`crate::activities`] for which activity
//! takes which), shared by the activities, the workflows and `overspill reduce --request`.
//!
//! ```
//! use overspill::api::ReduceRequest;
//! let request: ReduceRequest = serde_json::from_str(
//!     r#"{"tool_name":"cat","run_id":"r","tool_call_id":"c","output":{"text":"hi"}}"#,
//! )?;
//! assert_eq!(request.call(None).spill_key(""), "r/c.0");
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::query::QueryRequest;
pub use crate::read::{GrepRequest, ReadRequest};
pub use crate::store::ListRequest;

use crate::limits::{
    ConfigError, DEFAULT_PREVIEW_CHARS, Envelope, Limits, Reduced, ToolCall, ToolOutput,
    ToolResult, Usage,
};

/// One tool result to reduce, with the call it came from and (optionally) its configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReduceRequest {
    /// The call: `tool_name`, `tool_kind`, `run_id` (default: the calling workflow's run id,
    /// else `run`), `tool_call_id` (default `call`), `retry`.
    #[serde(flatten)]
    pub call: ToolCall,
    /// The return value.
    pub output: ToolOutput,
    /// A ToolReturn envelope's `content`, `metadata` and `envelope` flag.
    #[serde(flatten)]
    pub envelope: Envelope,
    /// The limits (the JSON form of [`Limits`]); `None` uses the caller's defaults.
    #[serde(default)]
    pub config: Option<Value>,
}

impl ReduceRequest {
    /// A bare return value of `call`, under the caller's default limits.
    pub fn new(call: ToolCall, output: ToolOutput) -> Self {
        Self {
            call,
            output,
            envelope: Envelope::default(),
            config: None,
        }
    }

    /// The call this result came from; `workflow_run_id` stands in for a missing `run_id`.
    pub fn call(&self, workflow_run_id: Option<&str>) -> ToolCall {
        in_workflow(&self.call, workflow_run_id)
    }

    /// The limits to apply: the request's own, or `defaults`.
    pub fn limits(&self, defaults: &Limits) -> Result<Limits, ConfigError> {
        match &self.config {
            Some(config) => Limits::from_value(config.clone()),
            None => Ok(defaults.clone()),
        }
    }

    /// The tool result, consuming the request.
    pub fn into_result(self) -> ToolResult {
        ToolResult {
            return_value: self.output,
            envelope: self.envelope.implied(),
        }
    }
}

/// A reduced result, as the model will see it: the engine's [`Reduced`], whose serde form is
/// the reduce activity's reply.
pub type ReduceResponse = Reduced;

/// `tool_output_limits.spill`: persist one output under its key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpillRequest {
    /// The call: `tool_name` (named in the preview's header), `run_id` (default: the calling
    /// workflow's run id), `tool_call_id` (default `call`), `retry` (the tool call's, never the
    /// activity attempt); `tool_kind` is ignored.
    #[serde(flatten)]
    pub call: ToolCall,
    /// The handle suffix: `""` for the return value, `".content"` for a ToolReturn's content.
    #[serde(default)]
    pub suffix: String,
    /// An explicit spill key (`run/call.0`), as the engine derives it; overrides `run_id`,
    /// `tool_call_id`, `retry` and `suffix`. Workflow-side stores send this.
    #[serde(default)]
    pub key: Option<String>,
    /// The payload.
    pub output: ToolOutput,
    /// The preview's content budget in chars (default [`DEFAULT_PREVIEW_CHARS`]).
    #[serde(default = "default_preview_chars")]
    pub preview_chars: i64,
    /// Limits settings that shape the preview (`over_tokens`, `strip_ansi`, `serializer`,
    /// `read_tool_name`); bands are ignored.
    #[serde(default)]
    pub config: Option<Value>,
}

fn default_preview_chars() -> i64 {
    DEFAULT_PREVIEW_CHARS
}

impl Default for SpillRequest {
    fn default() -> Self {
        Self {
            call: ToolCall::default(),
            suffix: String::new(),
            key: None,
            output: ToolOutput::default(),
            preview_chars: default_preview_chars(),
            config: None,
        }
    }
}

impl SpillRequest {
    /// The call this payload came from; `workflow_run_id` stands in for a missing `run_id`.
    pub fn call(&self, workflow_run_id: Option<&str>) -> ToolCall {
        in_workflow(&self.call, workflow_run_id)
    }
}

/// What a spill returns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpillResponse {
    /// The handle to read the payload back with.
    pub handle: String,
    /// The model-visible text: header, shape line and head/tail preview.
    pub preview: String,
    /// The top-level shape sketch of a structured output (empty otherwise).
    pub shape: String,
    /// Bytes stored (UTF-8 of the text, or the binary length).
    pub overflow_bytes: u64,
    /// The worker's store URL (no query, no password), where the handle resolves: a caller
    /// that reads spills itself compares it with its own store.
    #[serde(default)]
    pub store: String,
}

/// `tool_output_limits.summarize`: one model call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummarizeResponse {
    /// The summary, stripped of surrounding whitespace.
    pub summary: String,
    /// What the call cost.
    pub usage: Usage,
}

/// What `read_tool_result` returns: the model-visible text (a bare JSON string in `json/plain`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ReadResponse(pub String);

/// What `grep_tool_result` returns: the model-visible text (a bare JSON string in `json/plain`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GrepResponse(pub String);

/// What `query_tool_result` returns: the model-visible text (a bare JSON string in `json/plain`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct QueryResponse(pub String);

/// What `list_tool_results` returns: the model-visible text (a bare JSON string in `json/plain`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ListResponse(pub String);

/// The call a request names, inside the workflow that sent it: a missing or empty `run_id` is
/// the calling workflow's run id when there is one (the engine's key then falls back to `run`).
fn in_workflow(call: &ToolCall, workflow_run_id: Option<&str>) -> ToolCall {
    let run_id = (call.run_id.as_deref())
        .filter(|id| !id.is_empty())
        .or(workflow_run_id);
    ToolCall {
        run_id: run_id.map(str::to_owned),
        ..call.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request's own `run_id` keys the spill; a missing or empty one is the calling workflow's
    /// run id, and without a workflow the engine's `run`.
    #[test]
    fn run_id_defaults_to_the_calling_workflow() {
        let spill = |run_id: Option<&str>| SpillRequest {
            call: ToolCall {
                tool_name: "cat".into(),
                run_id: run_id.map(str::to_owned),
                tool_call_id: Some("c".into()),
                ..ToolCall::default()
            },
            suffix: String::new(),
            key: None,
            output: ToolOutput::Text(Default::default()),
            preview_chars: DEFAULT_PREVIEW_CHARS,
            config: None,
        };
        let key =
            |request: &SpillRequest, workflow: Option<&str>| request.call(workflow).spill_key("");
        assert_eq!(key(&spill(Some("r")), Some("wf")), "r/c.0");
        assert_eq!(key(&spill(Some("")), Some("wf")), "wf/c.0");
        assert_eq!(key(&spill(None), Some("wf")), "wf/c.0");
        assert_eq!(key(&spill(None), None), "run/c.0");
        let reduce: ReduceRequest = serde_json::from_value(serde_json::json!({
            "tool_name": "cat", "tool_kind": "k", "tool_call_id": "c", "output": {"text": ""}
        }))
        .expect("a request");
        let call = reduce.call(Some("wf"));
        assert_eq!(call.spill_key(""), "wf/c.0");
        assert_eq!(call.tool_kind.as_deref(), Some("k"));
    }

    /// The call and envelope fields are flattened into the request, and a field neither the
    /// request nor they know is still refused by name.
    #[test]
    fn flattened_fields_are_read_and_unknown_ones_refused() {
        let request: ReduceRequest = serde_json::from_value(serde_json::json!({
            "tool_name": "cat", "run_id": "r", "tool_call_id": "c", "retry": 2,
            "output": {"text": "x"}, "metadata": {"k": 1}
        }))
        .expect("a request");
        assert_eq!(request.call(None).spill_key(""), "r/c.2");
        assert!(request.clone().into_result().envelope.wrapped);
        assert_eq!(
            serde_json::to_value(&request).expect("serializes")["tool_call_id"],
            "c"
        );
        for (body, field) in [
            (
                r#"{"tool_name":"cat","output":{"text":"x"},"tool_calls":1}"#,
                "tool_calls",
            ),
            (r#"{"output":{"text":"x"},"suffix":".content"}"#, "suffix"),
        ] {
            let err = serde_json::from_str::<ReduceRequest>(body).expect_err("unknown field");
            assert!(err.to_string().contains(field), "{err}");
        }
        let err =
            serde_json::from_str::<SpillRequest>(r#"{"output":{"text":"x"},"envelope":true}"#)
                .expect_err("unknown field");
        assert!(err.to_string().contains("envelope"), "{err}");
    }
}
