//! The protobuf forms of the activity messages (`proto/overspill/v1/`), for callers that send
//! `json/protobuf` (proto3 JSON: lowerCamelCase names, 64-bit integers as strings; either name
//! accepted) or `binary/protobuf` payloads, and the conversions to the serde forms.
//!
//! A protobuf `Limits` becomes the JSON form of [`crate::limits::Limits`] and is validated by the
//! same code as a `json/plain` config, so errors name the same fields.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::errors::Failure;
use crate::api::{
    GrepRequest, GrepResponse, ListRequest, ListResponse, ReadRequest, ReadResponse, ReduceRequest,
    ReduceResponse, SpillRequest, SpillResponse, SummarizeRequest, SummarizeResponse,
};
use crate::limits::{self, DEFAULT_PREVIEW_CHARS, ReductionKind, ToolOutput, Usage};
use crate::read::DEFAULT_GREP_LIMIT;
use crate::store::DEFAULT_LIST_LIMIT;

/// The generated `overspill.v1` messages (prost) with their proto3 JSON mapping (pbjson).
#[allow(missing_docs, unreachable_pub, clippy::all)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/overspill.v1.rs"));
    include!(concat!(env!("OUT_DIR"), "/overspill.v1.serde.rs"));
}

/// A serde form with a protobuf counterpart, in both protobuf encodings.
pub trait ProtoForm: Sized {
    /// The generated message.
    type Pb: prost::Message + Default + Serialize + DeserializeOwned;
    /// The full protobuf message name (the payload's `messageType`).
    const MESSAGE_TYPE: &'static str;
    /// From the message (field errors name the snake_case field).
    fn from_pb(pb: Self::Pb) -> Result<Self, Failure>;
    /// To the message.
    fn to_pb(&self) -> Self::Pb;

    /// Decode the protobuf wire form.
    fn from_proto_binary(data: &[u8]) -> Result<Self, Failure> {
        let pb = <Self::Pb as prost::Message>::decode(data)
            .map_err(|e| Failure::invalid_input("request", e))?;
        Self::from_pb(pb)
    }
    /// Decode the proto3 JSON form.
    fn from_proto_json(data: &[u8]) -> Result<Self, Failure> {
        Self::from_pb(decode_json(data)?)
    }
    /// Encode the protobuf wire form.
    fn to_proto_binary(&self) -> Vec<u8> {
        prost::Message::encode_to_vec(&self.to_pb())
    }
    /// Encode the proto3 JSON form.
    fn to_proto_json(&self) -> Vec<u8> {
        serde_json::to_vec(&self.to_pb()).unwrap_or_default()
    }
}

/// Decode plain JSON, naming the offending field in the error.
pub(crate) fn decode_json<T: DeserializeOwned>(data: &[u8]) -> Result<T, Failure> {
    let de = &mut serde_json::Deserializer::from_slice(data);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        Failure::invalid_input(&path, e.into_inner().to_string())
    })
}

fn output_from_pb(output: Option<pb::ToolOutput>, field: &str) -> Result<ToolOutput, Failure> {
    match output.and_then(|o| o.value) {
        Some(pb::tool_output::Value::Text(text)) => Ok(ToolOutput::Text(text.into())),
        Some(pb::tool_output::Value::Json(text)) => serde_json::from_str(&text)
            .map(ToolOutput::Json)
            .map_err(|e| Failure::invalid_input(&format!("{field}.json"), e)),
        Some(pb::tool_output::Value::Bytes(data)) => Ok(ToolOutput::Bytes(data.into())),
        None => Err(Failure::invalid_input(
            field,
            "missing: set text, json or bytes",
        )),
    }
}

fn output_to_pb(output: &ToolOutput) -> pb::ToolOutput {
    pb::ToolOutput {
        value: Some(match output {
            ToolOutput::Text(text) => pb::tool_output::Value::Text(text.to_string()),
            ToolOutput::Json(value) => pb::tool_output::Value::Json(value.to_string()),
            ToolOutput::Bytes(data) => pb::tool_output::Value::Bytes(data.to_vec()),
        }),
    }
}

fn json_from_text(text: Option<String>, field: &str) -> Result<Option<Value>, Failure> {
    text.map(|t| serde_json::from_str(&t).map_err(|e| Failure::invalid_input(field, e)))
        .transpose()
}

fn kind_to_pb(kind: ReductionKind) -> i32 {
    (match kind {
        ReductionKind::Passthrough => pb::ReductionKind::Passthrough,
        ReductionKind::Truncated => pb::ReductionKind::Truncated,
        ReductionKind::Spilled => pb::ReductionKind::Spilled,
        ReductionKind::Summarized => pb::ReductionKind::Summarized,
    }) as i32
}

fn kind_from_pb(kind: i32) -> ReductionKind {
    match pb::ReductionKind::try_from(kind) {
        Ok(pb::ReductionKind::Truncated) => ReductionKind::Truncated,
        Ok(pb::ReductionKind::Spilled) => ReductionKind::Spilled,
        Ok(pb::ReductionKind::Summarized) => ReductionKind::Summarized,
        _ => ReductionKind::Passthrough,
    }
}

fn usage_to_pb(u: &Usage) -> pb::Usage {
    pb::Usage {
        requests: u.requests,
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
    }
}

fn usage_from_pb(u: Option<pb::Usage>) -> Usage {
    let u = u.unwrap_or_default();
    Usage {
        requests: u.requests,
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
    }
}

/// A protobuf `Limits` as the JSON form `Limits::from_value` validates.
fn limits_to_json(l: &pb::Limits) -> Result<Value, Failure> {
    let mut m = Map::new();
    if !l.bands.is_empty() || l.explicit_bands {
        m.insert("bands".into(), bands_to_json(&l.bands, "bands")?);
    }
    if !l.per_tool.is_empty() {
        let mut per_tool = Map::new();
        for (tool, list) in &l.per_tool {
            per_tool.insert(
                tool.clone(),
                bands_to_json(&list.bands, &format!("per_tool.{tool}"))?,
            );
        }
        m.insert("per_tool".into(), Value::Object(per_tool));
    }
    if let Some(filter) = &l.tool_filter
        && !filter.names.is_empty()
    {
        m.insert("tool_filter".into(), json!(filter.names));
    }
    if l.over_tokens {
        m.insert("over_tokens".into(), Value::Bool(true));
    }
    let tokenizer = match pb::Tokenizer::try_from(l.tokenizer) {
        Ok(pb::Tokenizer::Unspecified) => None,
        Ok(pb::Tokenizer::CharsDiv4) => Some(limits::Tokenizer::CharsDiv4),
        Ok(pb::Tokenizer::O200kBase) => Some(limits::Tokenizer::O200kBase),
        Ok(pb::Tokenizer::Cl100kBase) => Some(limits::Tokenizer::Cl100kBase),
        Err(_) => return Err(bad_config("tokenizer", "unknown tokenizer")),
    };
    if let Some(tokenizer) = tokenizer {
        m.insert("tokenizer".into(), json!(tokenizer));
    }
    if l.strip_ansi {
        m.insert("strip_ansi".into(), Value::Bool(true));
    }
    match pb::Serializer::try_from(l.serializer) {
        Ok(pb::Serializer::Unspecified) => {}
        Ok(pb::Serializer::IndentedJson) => {
            m.insert("serializer".into(), json!("indented_json"));
        }
        Ok(pb::Serializer::JsonLines) => {
            m.insert("serializer".into(), json!("json_lines"));
        }
        Err(_) => return Err(bad_config("serializer", "unknown serializer")),
    }
    if let Some(prompt) = &l.summary_prompt {
        m.insert("summary_prompt".into(), json!(prompt));
    }
    if let Some(name) = &l.read_tool_name {
        m.insert("read_tool_name".into(), json!(name));
    }
    Ok(Value::Object(m))
}

fn bad_config(path: &str, message: &str) -> Failure {
    Failure {
        type_name: "InvalidConfig",
        message: format!("invalid limits configuration at `config.{path}`: {message}"),
        retryable: false,
        retry_after: None,
    }
}

fn bands_to_json(bands: &[pb::Band], path: &str) -> Result<Value, Failure> {
    bands
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let path = format!("{path}[{i}].action");
            let action = b
                .action
                .as_ref()
                .ok_or_else(|| bad_config(&path, "missing"))?;
            Ok(json!({"over": b.over, "action": action_to_json(action, &path)?}))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

fn action_to_json(a: &pb::Action, path: &str) -> Result<Value, Failure> {
    let then = |t: &Option<Box<pb::Action>>| -> Result<Option<Value>, Failure> {
        t.as_deref()
            .map(|t| action_to_json(t, &format!("{path}.then")))
            .transpose()
    };
    let mut m = Map::new();
    match a.action.as_ref() {
        None => {
            return Err(bad_config(
                path,
                "missing: set passthrough, truncate, spill or summarize",
            ));
        }
        Some(pb::action::Action::Passthrough(_)) => {
            m.insert("type".into(), json!("passthrough"));
        }
        Some(pb::action::Action::Truncate(t)) => {
            m.insert("type".into(), json!("truncate"));
            let strategy = match pb::TruncationStrategy::try_from(t.strategy) {
                Ok(pb::TruncationStrategy::Head) => "head",
                Ok(pb::TruncationStrategy::Tail) => "tail",
                Ok(_) => "head_tail",
                Err(_) => return Err(bad_config(&format!("{path}.strategy"), "unknown strategy")),
            };
            m.insert("strategy".into(), json!(strategy));
            if let Some(max) = t.max_chars {
                m.insert("max_chars".into(), json!(max));
            }
            if let Some(max) = t.max_tokens {
                m.insert("max_tokens".into(), json!(max));
            }
            m.insert("keep_tail_lines".into(), json!(t.keep_tail_lines));
            if let Some(then) = then(&t.then)? {
                m.insert("then".into(), then);
            }
        }
        Some(pb::action::Action::Spill(s)) => {
            m.insert("type".into(), json!("spill"));
            if let Some(p) = s.preview_chars {
                m.insert("preview_chars".into(), json!(p));
            }
            if let Some(then) = then(&s.then)? {
                m.insert("then".into(), then);
            }
        }
        Some(pb::action::Action::Summarize(s)) => {
            m.insert("type".into(), json!("summarize"));
            if let Some(model) = &s.model {
                m.insert("model".into(), json!(model));
            }
            if let Some(then) = then(&s.then)? {
                m.insert("then".into(), then);
            }
        }
    }
    Ok(Value::Object(m))
}

/// A validated `Limits` as its protobuf message.
pub fn limits_to_pb(l: &limits::Limits) -> pb::Limits {
    let bands = |bands: &[limits::Band]| bands.iter().map(band_to_pb).collect::<Vec<_>>();
    pb::Limits {
        bands: bands(&l.bands),
        explicit_bands: l.bands.is_empty(),
        per_tool: l
            .per_tool
            .iter()
            .map(|(k, v)| (k.clone(), pb::BandList { bands: bands(v) }))
            .collect(),
        tool_filter: match &l.tool_filter {
            limits::ToolFilter::All => None,
            limits::ToolFilter::Names(names) => Some(pb::ToolFilter {
                names: names.clone(),
            }),
        },
        over_tokens: l.over_tokens,
        tokenizer: (match l.tokenizer {
            limits::Tokenizer::CharsDiv4 => pb::Tokenizer::CharsDiv4,
            limits::Tokenizer::O200kBase => pb::Tokenizer::O200kBase,
            limits::Tokenizer::Cl100kBase => pb::Tokenizer::Cl100kBase,
        }) as i32,
        strip_ansi: l.strip_ansi,
        serializer: (match l.serializer {
            None => pb::Serializer::Unspecified,
            Some(limits::SerializerKind::IndentedJson) => pb::Serializer::IndentedJson,
            Some(limits::SerializerKind::JsonLines) => pb::Serializer::JsonLines,
        }) as i32,
        summary_prompt: Some(l.summary_prompt.clone()),
        read_tool_name: Some(l.read_tool_name.clone()),
    }
}

fn band_to_pb(b: &limits::Band) -> pb::Band {
    pb::Band {
        over: b.over,
        action: Some(action_to_pb(&b.action)),
    }
}

fn action_to_pb(a: &limits::Action) -> pb::Action {
    let then = |t: &Option<Box<limits::Action>>| t.as_deref().map(|t| Box::new(action_to_pb(t)));
    pb::Action {
        action: Some(match a {
            limits::Action::Passthrough => pb::action::Action::Passthrough(pb::Passthrough {}),
            limits::Action::Truncate(t) => pb::action::Action::Truncate(Box::new(pb::Truncate {
                strategy: (match t.strategy {
                    limits::TruncationStrategy::Head => pb::TruncationStrategy::Head,
                    limits::TruncationStrategy::Tail => pb::TruncationStrategy::Tail,
                    limits::TruncationStrategy::HeadTail => pb::TruncationStrategy::HeadTail,
                }) as i32,
                max_chars: Some(t.max_chars),
                max_tokens: t.max_tokens,
                keep_tail_lines: t.keep_tail_lines,
                then: then(&t.then),
            })),
            limits::Action::Spill(s) => pb::action::Action::Spill(Box::new(pb::Spill {
                preview_chars: Some(s.preview_chars),
                then: then(&s.then),
            })),
            limits::Action::Summarize(s) => {
                pb::action::Action::Summarize(Box::new(pb::Summarize {
                    model: s.model.clone(),
                    then: then(&s.then),
                }))
            }
        }),
    }
}

/// A request's `config` value as a protobuf `Limits` (invalid configs are sent as absent).
fn config_to_pb(config: &Option<Value>) -> Option<pb::Limits> {
    config
        .as_ref()
        .and_then(|c| limits::Limits::from_value(c.clone()).ok())
        .map(|l| limits_to_pb(&l))
}

fn config_from_pb(config: Option<pb::Limits>) -> Result<Option<Value>, Failure> {
    config.as_ref().map(limits_to_json).transpose()
}

impl ProtoForm for ReduceRequest {
    type Pb = pb::ReduceRequest;
    const MESSAGE_TYPE: &'static str = "overspill.v1.ReduceRequest";
    fn from_pb(pb: Self::Pb) -> Result<Self, Failure> {
        Ok(Self {
            tool_name: pb.tool_name,
            tool_kind: pb.tool_kind,
            run_id: pb.run_id,
            tool_call_id: pb.tool_call_id,
            retry: pb.retry,
            output: output_from_pb(pb.output, "output")?,
            content: json_from_text(pb.content_json, "content_json")?,
            metadata: json_from_text(pb.metadata_json, "metadata_json")?,
            envelope: pb.envelope,
            config: config_from_pb(pb.config)?,
        })
    }
    fn to_pb(&self) -> Self::Pb {
        pb::ReduceRequest {
            tool_name: self.tool_name.clone(),
            tool_kind: self.tool_kind.clone(),
            run_id: self.run_id.clone(),
            tool_call_id: self.tool_call_id.clone(),
            retry: self.retry,
            output: Some(output_to_pb(&self.output)),
            content_json: self.content.as_ref().map(Value::to_string),
            metadata_json: self.metadata.as_ref().map(Value::to_string),
            envelope: self.envelope,
            config: config_to_pb(&self.config),
        }
    }
}

impl ProtoForm for ReduceResponse {
    type Pb = pb::ReduceResponse;
    const MESSAGE_TYPE: &'static str = "overspill.v1.ReduceResponse";
    fn from_pb(pb: Self::Pb) -> Result<Self, Failure> {
        Ok(Self {
            kind: kind_from_pb(pb.kind),
            content_kind: kind_from_pb(pb.content_kind),
            return_value: output_from_pb(pb.return_value, "return_value")?,
            content: json_from_text(pb.content_json, "content_json")?,
            metadata: json_from_text(pb.metadata_json, "metadata_json")?,
            envelope: pb.envelope,
            usage: usage_from_pb(pb.usage),
            exhausted: false,
        })
    }
    fn to_pb(&self) -> Self::Pb {
        let meta = |key: &str| {
            self.metadata
                .as_ref()
                .and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        pb::ReduceResponse {
            kind: kind_to_pb(self.kind),
            content_kind: kind_to_pb(self.content_kind),
            return_value: Some(output_to_pb(&self.return_value)),
            content_json: self.content.as_ref().map(Value::to_string),
            metadata_json: self.metadata.as_ref().map(Value::to_string),
            envelope: self.envelope,
            usage: Some(usage_to_pb(&self.usage)),
            overflow_handle: meta("overflow_handle"),
            overflow_bytes: self
                .metadata
                .as_ref()
                .and_then(|m| m.get("overflow_bytes"))
                .and_then(Value::as_u64)
                .unwrap_or(0),
            overflow_content_handle: meta("overflow_content_handle"),
        }
    }
}

impl ProtoForm for SpillRequest {
    type Pb = pb::SpillRequest;
    const MESSAGE_TYPE: &'static str = "overspill.v1.SpillRequest";
    fn from_pb(pb: Self::Pb) -> Result<Self, Failure> {
        Ok(Self {
            tool_name: pb.tool_name,
            run_id: pb.run_id,
            tool_call_id: pb.tool_call_id,
            retry: pb.retry,
            suffix: pb.suffix,
            key: pb.key,
            output: output_from_pb(pb.output, "output")?,
            preview_chars: pb.preview_chars.unwrap_or(DEFAULT_PREVIEW_CHARS),
            config: config_from_pb(pb.config)?,
        })
    }
    fn to_pb(&self) -> Self::Pb {
        pb::SpillRequest {
            tool_name: self.tool_name.clone(),
            run_id: self.run_id.clone(),
            tool_call_id: self.tool_call_id.clone(),
            retry: self.retry,
            suffix: self.suffix.clone(),
            key: self.key.clone(),
            output: Some(output_to_pb(&self.output)),
            preview_chars: Some(self.preview_chars),
            config: config_to_pb(&self.config),
        }
    }
}

impl ProtoForm for SpillResponse {
    type Pb = pb::SpillResponse;
    const MESSAGE_TYPE: &'static str = "overspill.v1.SpillResponse";
    fn from_pb(pb: Self::Pb) -> Result<Self, Failure> {
        Ok(Self {
            handle: pb.handle,
            preview: pb.preview,
            shape: pb.shape,
            overflow_bytes: pb.overflow_bytes,
        })
    }
    fn to_pb(&self) -> Self::Pb {
        pb::SpillResponse {
            handle: self.handle.clone(),
            preview: self.preview.clone(),
            shape: self.shape.clone(),
            overflow_bytes: self.overflow_bytes,
        }
    }
}

impl ProtoForm for SummarizeRequest {
    type Pb = pb::SummarizeRequest;
    const MESSAGE_TYPE: &'static str = "overspill.v1.SummarizeRequest";
    fn from_pb(pb: Self::Pb) -> Result<Self, Failure> {
        Ok(Self {
            tool_name: pb.tool_name,
            output: pb.output,
            model: pb.model,
            template: pb.prompt,
        })
    }
    fn to_pb(&self) -> Self::Pb {
        pb::SummarizeRequest {
            tool_name: self.tool_name.clone(),
            output: self.output.clone(),
            model: self.model.clone(),
            prompt: self.template.clone(),
        }
    }
}

impl ProtoForm for SummarizeResponse {
    type Pb = pb::SummarizeResponse;
    const MESSAGE_TYPE: &'static str = "overspill.v1.SummarizeResponse";
    fn from_pb(pb: Self::Pb) -> Result<Self, Failure> {
        Ok(Self {
            summary: pb.summary,
            usage: usage_from_pb(pb.usage),
        })
    }
    fn to_pb(&self) -> Self::Pb {
        pb::SummarizeResponse {
            summary: self.summary.clone(),
            usage: Some(usage_to_pb(&self.usage)),
        }
    }
}

impl ProtoForm for ReadRequest {
    type Pb = pb::ReadToolResultRequest;
    const MESSAGE_TYPE: &'static str = "overspill.v1.ReadToolResultRequest";
    fn from_pb(pb: Self::Pb) -> Result<Self, Failure> {
        Ok(Self {
            handle: pb.handle,
            offset: pb.offset,
            limit: pb.limit.unwrap_or(crate::read::DEFAULT_LIMIT),
            from_end: pb.from_end,
            pattern: pb.pattern,
        })
    }
    fn to_pb(&self) -> Self::Pb {
        pb::ReadToolResultRequest {
            handle: self.handle.clone(),
            offset: self.offset,
            limit: Some(self.limit),
            from_end: self.from_end,
            pattern: self.pattern.clone(),
        }
    }
}

impl ProtoForm for GrepRequest {
    type Pb = pb::GrepToolResultRequest;
    const MESSAGE_TYPE: &'static str = "overspill.v1.GrepToolResultRequest";
    fn from_pb(pb: Self::Pb) -> Result<Self, Failure> {
        Ok(Self {
            handle: pb.handle,
            pattern: pb.pattern,
            regex: pb.regex,
            ignore_case: pb.ignore_case,
            context: pb.context,
            offset: pb.offset,
            limit: pb.limit.unwrap_or(DEFAULT_GREP_LIMIT),
            from_end: pb.from_end,
        })
    }
    fn to_pb(&self) -> Self::Pb {
        pb::GrepToolResultRequest {
            handle: self.handle.clone(),
            pattern: self.pattern.clone(),
            regex: self.regex,
            ignore_case: self.ignore_case,
            context: self.context,
            offset: self.offset,
            limit: Some(self.limit),
            from_end: self.from_end,
        }
    }
}

impl ProtoForm for ListRequest {
    type Pb = pb::ListToolResultsRequest;
    const MESSAGE_TYPE: &'static str = "overspill.v1.ListToolResultsRequest";
    fn from_pb(pb: Self::Pb) -> Result<Self, Failure> {
        Ok(Self {
            run_id: pb.run_id,
            limit: pb.limit.unwrap_or(DEFAULT_LIST_LIMIT),
            tool_names: pb.tool_names,
        })
    }
    fn to_pb(&self) -> Self::Pb {
        pb::ListToolResultsRequest {
            run_id: self.run_id.clone(),
            limit: Some(self.limit),
            tool_names: self.tool_names.clone(),
        }
    }
}

/// A text response's protobuf form: the message's one `text` field.
macro_rules! text_response {
    ($form:ident, $pb:ident, $name:literal) => {
        impl ProtoForm for $form {
            type Pb = pb::$pb;
            const MESSAGE_TYPE: &'static str = $name;
            fn from_pb(pb: Self::Pb) -> Result<Self, Failure> {
                Ok(Self(pb.text))
            }
            fn to_pb(&self) -> Self::Pb {
                pb::$pb {
                    text: self.0.clone(),
                }
            }
        }
    };
}

text_response!(
    ReadResponse,
    ReadToolResultResponse,
    "overspill.v1.ReadToolResultResponse"
);
text_response!(
    GrepResponse,
    GrepToolResultResponse,
    "overspill.v1.GrepToolResultResponse"
);
text_response!(
    ListResponse,
    ListToolResultsResponse,
    "overspill.v1.ListToolResultsResponse"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_round_trip_through_protobuf() {
        // Every field away from its default, so that a field the conversion drops shows.
        let json = r#"{"bands":[{"over":50000,"action":{"type":"summarize","model":"m","then":{"type":"spill","preview_chars":300,"then":{"type":"truncate","strategy":"tail","max_tokens":500,"keep_tail_lines":3}}}},{"over":0,"action":{"type":"passthrough"}}],"per_tool":{"ls":[]},"tool_filter":["ls","cat"],"over_tokens":true,"tokenizer":"cl100k_base","strip_ansi":true,"serializer":"json_lines","summary_prompt":"Sum up {tool_name}: {output}","read_tool_name":"page_back"}"#;
        let limits = limits::Limits::from_json(json).expect("valid");
        assert_ne!(limits, limits::Limits::default());
        let back = limits_to_json(&limits_to_pb(&limits)).expect("converts");
        let again = limits::Limits::from_value(back).expect("valid again");
        assert!(
            again == limits,
            "{again:?}
{limits:?}"
        );
    }

    #[test]
    fn tokenizer_and_token_budget_round_trip_through_protobuf() {
        let json = r#"{"bands":[{"over":7,"action":{"type":"truncate","max_tokens":300}}],"over_tokens":true,"tokenizer":"cl100k_base"}"#;
        let limits = limits::Limits::from_json(json).expect("valid");
        let pb = limits_to_pb(&limits);
        assert_eq!(pb.tokenizer, pb::Tokenizer::Cl100kBase as i32);
        let binary = prost::Message::encode_to_vec(&pb);
        let decoded: pb::Limits = prost::Message::decode(binary.as_slice()).expect("decodes");
        let back = limits_to_json(&decoded).expect("converts");
        let again = limits::Limits::from_value(back).expect("valid again");
        assert_eq!(again.tokenizer, limits::Tokenizer::Cl100kBase);
        assert_eq!(again.bands, limits.bands);
        let unset = limits_to_json(&pb::Limits::default()).expect("converts");
        assert_eq!(
            limits::Limits::from_value(unset).expect("valid").tokenizer,
            limits::Tokenizer::CharsDiv4
        );
    }

    #[test]
    fn bad_protobuf_tokenizer_or_token_budget_names_the_field() {
        let unknown = pb::Limits {
            tokenizer: 99,
            ..Default::default()
        };
        let err = limits_to_json(&unknown).expect_err("unknown tokenizer");
        assert_eq!(err.type_name, "InvalidConfig");
        assert!(err.message.contains("config.tokenizer"), "{}", err.message);
        let truncate = pb::Truncate {
            max_tokens: Some(-1),
            ..Default::default()
        };
        let negative = pb::Limits {
            bands: vec![pb::Band {
                over: 1,
                action: Some(pb::Action {
                    action: Some(pb::action::Action::Truncate(Box::new(truncate))),
                }),
            }],
            ..Default::default()
        };
        let json = limits_to_json(&negative).expect("converts");
        let err = limits::Limits::from_value(json).expect_err("negative budget");
        assert_eq!(err.path(), "bands[0].action.max_tokens");
    }

    #[test]
    fn proto_json_uses_camel_case_and_accepts_both() {
        let request = ReadRequest {
            handle: "r/c.0".into(),
            offset: 3,
            limit: 2,
            from_end: true,
            pattern: None,
        };
        let json = String::from_utf8(request.to_proto_json()).expect("utf8");
        assert_eq!(
            json,
            r#"{"handle":"r/c.0","offset":"3","limit":"2","fromEnd":true}"#
        );
        let snake = br#"{"handle":"r/c.0","offset":3,"limit":"2","from_end":true}"#;
        assert_eq!(
            ReadRequest::from_proto_json(snake).expect("decodes"),
            request
        );
        let binary = request.to_proto_binary();
        assert_eq!(
            ReadRequest::from_proto_binary(&binary).expect("decodes"),
            request
        );
    }

    #[test]
    fn invalid_protobuf_config_names_the_field() {
        let mut pb = ReduceRequest {
            tool_name: "cat".into(),
            tool_kind: None,
            run_id: None,
            tool_call_id: None,
            retry: 0,
            output: ToolOutput::Text("x".into()),
            content: None,
            metadata: None,
            envelope: false,
            config: None,
        }
        .to_pb();
        pb.config = Some(pb::Limits {
            bands: vec![pb::Band {
                over: 5,
                action: None,
            }],
            ..Default::default()
        });
        let err = ReduceRequest::from_pb(pb).expect_err("invalid");
        assert_eq!(err.type_name, "InvalidConfig");
        assert!(
            err.message.contains("config.bands[0].action"),
            "{}",
            err.message
        );
    }

    #[test]
    fn grep_and_list_requests_round_trip_through_protobuf() {
        let grep = GrepRequest {
            handle: "r/c.0".into(),
            pattern: "ERR".into(),
            regex: true,
            context: 2,
            from_end: true,
            ..GrepRequest::default()
        };
        assert_eq!(
            GrepRequest::from_proto_binary(&grep.to_proto_binary()).expect("decodes"),
            grep
        );
        let camel =
            br#"{"handle":"r/c.0","pattern":"ERR","regex":true,"context":"2","fromEnd":true}"#;
        assert_eq!(GrepRequest::from_proto_json(camel).expect("decodes"), grep);
        let list = ListRequest {
            run_id: "run-1".into(),
            limit: 5,
            tool_names: [("call-1".to_owned(), "cat".to_owned())].into(),
        };
        assert_eq!(
            ListRequest::from_proto_json(&list.to_proto_json()).expect("decodes"),
            list
        );
        let default = ListRequest::from_proto_json(br#"{"runId":"r"}"#).expect("decodes");
        assert_eq!(default.limit, DEFAULT_LIST_LIMIT);
    }
}
