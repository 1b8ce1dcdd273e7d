//! What a tool call returns, as the engine takes it: the call, its return value, and the
//! ToolReturn envelope around it.

use bytes::Bytes;
pub use bytestring::ByteString;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which call produced a return: names the tool and derives the spill key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolCall {
    /// The tool's name as the model called it.
    pub tool_name: String,
    /// The tool's kind, for exemptions (`tool_output_limits.read_tool_result`, …).
    pub tool_kind: Option<String>,
    /// The agent run; `run` when absent.
    pub run_id: Option<String>,
    /// The model's tool call id; `call` when absent.
    pub tool_call_id: Option<String>,
    /// The tool call's retry (a new attempt by the model), never an activity attempt.
    pub retry: u32,
    /// The run step (the model response) the call came from, where the framework counts them:
    /// with a harness that keys by step, a spill of a call id an earlier step of the run already
    /// spilled goes under it ([`ToolCall::step_key`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_step: Option<u64>,
}

impl ToolCall {
    /// The spill key, `{run_id}/{tool_call_id}.{retry}{suffix}`, exactly as the reference builds it.
    pub fn spill_key(&self, suffix: &str) -> String {
        format!("{}/{}", self.run(), self.name(suffix))
    }

    /// The key of a spill at run `step` whose plain key an earlier step of the run took,
    /// `{run_id}/{step}/{tool_call_id}.{retry}{suffix}`, as the reference (0.75) builds it.
    pub fn step_key(&self, step: u64, suffix: &str) -> String {
        format!("{}/{step}/{}", self.run(), self.name(suffix))
    }

    fn run(&self) -> &str {
        (self.run_id.as_deref())
            .filter(|s| !s.is_empty())
            .unwrap_or("run")
    }

    /// `{tool_call_id}.{retry}{suffix}`.
    fn name(&self, suffix: &str) -> String {
        let call = (self.tool_call_id.as_deref())
            .filter(|s| !s.is_empty())
            .unwrap_or("call");
        format!("{call}.{}{suffix}", self.retry)
    }
}

/// A tool's return value: text, structured JSON, or raw bytes.
///
/// Text is a [`ByteString`], UTF-8 over [`Bytes`]: built from a `String` or checked bytes without
/// a copy and cheap to clone, so a spill hands the store the very buffer the output arrived in.
///
/// JSON form: `{"text": "…"}`, `{"json": …}` or `{"bytes_b64": "…"}` (standard base64). Inside
/// `json`, an object `{"$bytes_b64": "…"}` stands for a bytes leaf (Python `bytes`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolOutput {
    /// A string return (never serialized).
    Text(ByteString),
    /// A structured return, rendered by the serializer when a band triggers.
    Json(Value),
    /// A binary return (measured in bytes, spilled verbatim, never truncated).
    #[serde(rename = "bytes_b64", with = "base64_form")]
    Bytes(Bytes),
}

impl ToolOutput {
    /// Raw output as the reference types it: text when it is UTF-8, else bytes (measured in
    /// bytes, spilled verbatim, never truncated). Neither form copies `data`.
    pub fn from_raw(data: Bytes) -> Self {
        ByteString::try_from(data.clone()).map_or(Self::Bytes(data), Self::Text)
    }

    /// The text, if this is a text output.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(text) => Some(text),
            _ => None,
        }
    }
}

/// [`ToolOutput::Bytes`] as standard base64.
mod base64_form {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use bytes::Bytes;
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub(super) fn serialize<S: Serializer>(data: &Bytes, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(data))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        let b64 = String::deserialize(d)?;
        (STANDARD.decode(b64.as_bytes()).map(Bytes::from))
            .map_err(|e| D::Error::custom(format!("bytes_b64: {e}")))
    }
}

impl Default for ToolOutput {
    /// An empty text.
    fn default() -> Self {
        Self::Text(ByteString::new())
    }
}

/// A tool's result: a bare return value, or a ToolReturn envelope with `content` and `metadata`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The return value.
    pub return_value: ToolOutput,
    /// The ToolReturn envelope around it, if any.
    pub envelope: Envelope,
}

/// A ToolReturn envelope's parts: what a result carries beside its return value.
///
/// JSON form: `content`, `metadata` and `envelope` (whether there is an envelope at all), each
/// optional; flattened into the messages that carry a result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// The envelope's model-visible `content` (a string, a list of parts, anything).
    #[serde(default)]
    pub content: Option<Value>,
    /// The envelope's app-side metadata.
    #[serde(default)]
    pub metadata: Option<Value>,
    /// Whether the result is a ToolReturn envelope (as opposed to a bare value); `content` or
    /// `metadata` imply one (see [`Envelope::implied`]). `envelope` on the wire.
    #[serde(default, rename = "envelope")]
    pub wrapped: bool,
}

impl Envelope {
    /// The same parts, `wrapped` when `content` or `metadata` is present.
    pub fn implied(self) -> Self {
        let wrapped = self.wrapped || self.content.is_some() || self.metadata.is_some();
        Self { wrapped, ..self }
    }
}

impl ToolResult {
    /// A bare return value.
    pub fn bare(return_value: ToolOutput) -> Self {
        Self {
            return_value,
            envelope: Envelope::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spill_keys_and_raw_outputs() {
        let call = ToolCall {
            run_id: Some("run-1".into()),
            tool_call_id: Some("call-1".into()),
            ..Default::default()
        };
        assert_eq!(call.spill_key(""), "run-1/call-1.0");
        assert_eq!(call.step_key(3, ".content"), "run-1/3/call-1.0.content");
        assert_eq!(
            ToolCall::default().spill_key(".content"),
            "run/call.0.content"
        );
        assert_eq!(
            ToolOutput::from_raw("héllo".into()).as_text(),
            Some("héllo")
        );
        let binary = ToolOutput::from_raw(vec![0xff, b'a'].into());
        assert!(matches!(binary, ToolOutput::Bytes(_)));
    }

    #[test]
    fn json_forms() {
        for (output, json) in [
            (ToolOutput::Text("hé".into()), r#"{"text":"hé"}"#),
            (
                ToolOutput::Json(serde_json::json!({"a": [1]})),
                r#"{"json":{"a":[1]}}"#,
            ),
            (
                ToolOutput::Bytes(Bytes::from_static(b"\xff\x00")),
                r#"{"bytes_b64":"/wA="}"#,
            ),
        ] {
            assert_eq!(serde_json::to_string(&output).expect("serializes"), json);
            assert_eq!(
                serde_json::from_str::<ToolOutput>(json).expect("parses"),
                output
            );
            let value: Value = serde_json::from_str(json).expect("JSON");
            assert_eq!(
                serde_json::from_value::<ToolOutput>(value).expect("converts"),
                output
            );
        }
        let bad = serde_json::from_str::<ToolOutput>(r#"{"bytes_b64":"!"}"#).expect_err("base64");
        assert!(bad.to_string().starts_with("bytes_b64: "), "{bad}");
        for wrong in [r#"{"text":"a","json":1}"#, r#"{"txt":"a"}"#, r#"{}"#] {
            assert!(
                serde_json::from_str::<ToolOutput>(wrong).is_err(),
                "{wrong}"
            );
        }
    }
}
