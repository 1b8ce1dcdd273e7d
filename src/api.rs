//! The request and response forms of `reduce`, shared by `overspill reduce --request` and the
//! `tool_output_limits.reduce` activity (mirrored in `proto/overspill/v1/`).
//!
//! ```
//! use overspill::api::ReduceRequest;
//! let request: ReduceRequest = serde_json::from_str(
//!     r#"{"tool_name":"cat","run_id":"r","tool_call_id":"c","output":{"text":"hi"}}"#,
//! )?;
//! assert_eq!(request.call().spill_key(""), "r/c.0");
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::limits::{
    ConfigError, Limits, Reduced, ReductionKind, ToolCall, ToolOutput, ToolResult, Usage,
};

/// One tool result to reduce, with the call it came from and (optionally) its configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReduceRequest {
    /// The tool's name as the model called it.
    pub tool_name: String,
    /// The tool's kind, for exemptions.
    #[serde(default)]
    pub tool_kind: Option<String>,
    /// The agent run (default `run`; the activity defaults it to the calling workflow's run id).
    #[serde(default)]
    pub run_id: Option<String>,
    /// The model's tool call id (default `call`).
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// The tool call's retry.
    #[serde(default)]
    pub retry: u32,
    /// The return value.
    pub output: ToolOutput,
    /// A ToolReturn envelope's `content`.
    #[serde(default)]
    pub content: Option<Value>,
    /// A ToolReturn envelope's `metadata`.
    #[serde(default)]
    pub metadata: Option<Value>,
    /// Whether the result is a ToolReturn envelope; implied by `content` or `metadata`.
    #[serde(default)]
    pub envelope: bool,
    /// The limits (the JSON form of [`Limits`]); `None` uses the caller's defaults.
    #[serde(default)]
    pub config: Option<Value>,
}

impl ReduceRequest {
    /// The call this result came from.
    pub fn call(&self) -> ToolCall {
        ToolCall {
            tool_name: self.tool_name.clone(),
            tool_kind: self.tool_kind.clone(),
            run_id: self.run_id.clone(),
            tool_call_id: self.tool_call_id.clone(),
            retry: self.retry,
        }
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
        let envelope = self.envelope || self.content.is_some() || self.metadata.is_some();
        ToolResult {
            return_value: self.output,
            content: self.content,
            metadata: self.metadata,
            envelope,
        }
    }
}

/// A reduced result, as the model will see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReduceResponse {
    /// What happened to the return value.
    pub kind: ReductionKind,
    /// What happened to the envelope's text content.
    #[serde(default)]
    pub content_kind: ReductionKind,
    /// The return value (the model-visible text when reduced).
    pub return_value: ToolOutput,
    /// The envelope's content.
    #[serde(default)]
    pub content: Option<Value>,
    /// The metadata, with `overflow_handle` / `overflow_bytes` / `overflow_content_handle`.
    #[serde(default)]
    pub metadata: Option<Value>,
    /// Whether the result is a ToolReturn envelope (a bare value that spilled becomes one).
    #[serde(default)]
    pub envelope: bool,
    /// Model usage of summaries.
    #[serde(default)]
    pub usage: Usage,
}

impl From<Reduced> for ReduceResponse {
    fn from(r: Reduced) -> Self {
        Self {
            kind: r.kind,
            content_kind: r.content_kind,
            return_value: r.return_value,
            content: r.content,
            metadata: r.metadata,
            envelope: r.envelope,
            usage: r.usage,
        }
    }
}
