//! The protobuf forms of the activity messages (`proto/overspill/v1/`), for callers that send
//! `json/protobuf` (proto3 JSON: lowerCamelCase names, 64-bit integers as strings; either name
//! accepted) or `binary/protobuf` payloads. The worker decodes requests (`from_protobuf`) and
//! encodes replies (`to_protobuf`).
//!
//! No message or field is converted by hand: a message is read against its descriptor into the
//! `json/plain` form of its Rust twin, which serde decodes, and a reply's plain form is written
//! back the same way. A field declared under one name in the `.proto` and the Rust form needs no
//! other code. The plain form is the message's own, with proto field names, integers as numbers
//! and unset `optional` fields absent (the Rust form's defaults apply), except that:
//!
//! - an enum value is its name without the enum's prefix, lowercased (`REDUCTION_KIND_SPILLED`
//!   is `spilled`), and an `…_UNSPECIFIED` one is absent;
//! - a string named `json` or `…_json` is JSON text, whose value the plain form holds under the
//!   name without `_json` (`content_json` is `content`);
//! - `bytes` are base64 under the name with `_b64` (`bytes` is `bytes_b64`);
//! - a message of one field is that field's value (a `BandList` its bands, a reply of `text` the
//!   bare text);
//! - a oneof of messages is tagged by `type` (`{"spill": {…}}` is `{"type": "spill", …}`);
//! - a `Limits` without `explicit_bands` whose `bands` are empty has the default bands, and a
//!   `tool_filter` of no names is every tool: the plain form leaves both out.
//!
//! A request's `config` stays JSON and is validated where a `json/plain` config is, so its
//! errors name the same fields (under `config.`).

use std::sync::LazyLock;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use heck::AsShoutySnakeCase;
use prost_reflect::{
    DescriptorPool, DynamicMessage, FieldDescriptor, Kind, MapKey, ReflectMessage,
};
use serde::Serialize;
use serde::de::{Deserialize, DeserializeOwned, Deserializer};
use serde_json::{Map, Value};

use super::encoding::Encoding;
use super::errors::Failure;
use crate::api::{
    GrepRequest, GrepResponse, ListRequest, ListResponse, QueryRequest, QueryResponse, ReadRequest,
    ReadResponse, ReduceRequest, ReduceResponse, SpillRequest, SpillResponse, SummarizeRequest,
    SummarizeResponse,
};
use crate::service::Surface;

/// The generated `overspill.v1` messages (prost), for Rust callers that build protobuf payloads.
#[allow(missing_docs, unreachable_pub, clippy::all)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/overspill.v1.rs"));
}

/// The descriptors of `proto/overspill/v1/`, as build.rs compiled them.
static DESCRIPTORS: LazyLock<DescriptorPool> = LazyLock::new(|| {
    let bytes = include_bytes!(concat!(env!("OUT_DIR"), "/overspill_descriptor.bin"));
    DescriptorPool::decode(bytes.as_slice()).expect("build.rs writes valid descriptors")
});

/// A request or reply form with a protobuf twin in `proto/overspill/v1/`.
pub trait ProtoForm: 'static {
    /// The twin's full name (the payload's `messageType`).
    const MESSAGE_TYPE: &'static str;

    /// The plain form of a reply, with anything else its twin carries.
    fn plain(&self) -> serde_json::Result<Value>
    where
        Self: Serialize,
    {
        serde_json::to_value(self)
    }
}

/// The forms and their twins.
macro_rules! proto_forms {
    ($($form:ty => $message:literal),* $(,)?) => {
        $(impl ProtoForm for $form {
            const MESSAGE_TYPE: &'static str = concat!("overspill.v1.", $message);
        })*
    };
}

proto_forms! {
    ReduceRequest => "ReduceRequest",
    SpillRequest => "SpillRequest", SpillResponse => "SpillResponse",
    SummarizeRequest => "SummarizeRequest", SummarizeResponse => "SummarizeResponse",
    ReadRequest => "ReadToolResultRequest", ReadResponse => "ReadToolResultResponse",
    GrepRequest => "GrepToolResultRequest", GrepResponse => "GrepToolResultResponse",
    QueryRequest => "QueryToolResultRequest", QueryResponse => "QueryToolResultResponse",
    ListRequest => "ListToolResultsRequest", ListResponse => "ListToolResultsResponse",
}

impl ProtoForm for ReduceResponse {
    const MESSAGE_TYPE: &'static str = "overspill.v1.ReduceResponse";

    /// The plain form with the spill facts the message also carries in fields of their own.
    fn plain(&self) -> serde_json::Result<Value> {
        let mut plain = serde_json::to_value(self)?;
        if let Value::Object(fields) = &mut plain {
            let handles = [
                ("overflow_handle", self.overflow_handle()),
                ("overflow_content_handle", self.overflow_content_handle()),
            ];
            fields.extend(handles.map(|(name, handle)| (name.to_owned(), handle.into())));
            fields.insert("overflow_bytes".to_owned(), self.overflow_bytes().into());
        }
        Ok(plain)
    }
}

/// Why a reply could not be encoded.
type EncodeError = Box<dyn std::error::Error + Send + Sync>;

/// Decode `T` from `de`, naming the offending field in the error.
pub(crate) fn decode_json<'de, T: Deserialize<'de>>(
    de: impl Deserializer<'de>,
) -> Result<T, Failure> {
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        Failure::invalid_input(Surface::Activity, &path, e.into_inner().to_string())
    })
}

/// A request sent as its protobuf twin in `encoding` (`binary/protobuf` or `json/protobuf`).
pub(crate) fn from_protobuf<T: ProtoForm + DeserializeOwned>(
    data: &[u8],
    encoding: Encoding,
) -> Result<T, Failure> {
    let descriptor = descriptor(T::MESSAGE_TYPE);
    let message = if encoding == Encoding::BinaryProtobuf {
        DynamicMessage::decode(descriptor, data)
            .map_err(|e| Failure::invalid_input(Surface::Activity, "request", e))?
    } else {
        let mut track = serde_path_to_error::Track::new();
        let de = &mut serde_json::Deserializer::from_slice(data);
        let de = serde_path_to_error::Deserializer::new(de, &mut track);
        DynamicMessage::deserialize(descriptor, de)
            .map_err(|e| Failure::invalid_input(Surface::Activity, &track.path().to_string(), e))?
    };
    decode_json(plain_message(message, "")?)
}

/// A reply as its protobuf twin in `encoding` (`binary/protobuf` or `json/protobuf`).
pub(crate) fn to_protobuf<T: ProtoForm + Serialize>(
    reply: &T,
    encoding: Encoding,
) -> Result<Vec<u8>, EncodeError> {
    let descriptor = descriptor(T::MESSAGE_TYPE);
    let message = DynamicMessage::deserialize(
        descriptor.clone(),
        proto_value(reply.plain()?, &Kind::Message(descriptor)),
    )?;
    Ok(if encoding == Encoding::BinaryProtobuf {
        prost::Message::encode_to_vec(&message)
    } else {
        serde_json::to_vec(&message)?
    })
}

fn descriptor(name: &str) -> prost_reflect::MessageDescriptor {
    (DESCRIPTORS.get_message_by_name(name)).expect("every ProtoForm names a message of proto/")
}

/// Whether a string field holds JSON text, and its name in the plain form.
fn json_field(name: &str) -> Option<&str> {
    (name == "json")
        .then_some(name)
        .or(name.strip_suffix("_json"))
}

/// A field's name in the plain form.
fn plain_name(field: &FieldDescriptor) -> String {
    match (field.kind(), json_field(field.name())) {
        (Kind::String, Some(plain)) => plain.to_owned(),
        (Kind::Bytes, _) => format!("{}_b64", field.name()),
        _ => field.name().to_owned(),
    }
}

/// The prefix of an enum's value names: `REDUCTION_KIND_` for `ReductionKind`.
fn enum_prefix(kind: &prost_reflect::EnumDescriptor) -> String {
    format!("{}_", AsShoutySnakeCase(kind.name()))
}

/// `message` in the plain form (see the module's rules); a JSON text that does not parse is
/// `InvalidInput` naming its field under `path`.
fn plain_message(mut message: DynamicMessage, path: &str) -> Result<Value, Failure> {
    let descriptor = message.descriptor();
    let mut plain = Map::new();
    for field in descriptor.fields() {
        if field.supports_presence() && !message.has_field(&field) {
            continue;
        }
        let value = (message.take_field(&field))
            .unwrap_or_else(|| prost_reflect::Value::default_value_for_field(&field));
        let path = if path.is_empty() {
            field.name().to_owned()
        } else {
            format!("{path}.{}", field.name())
        };
        let value = match plain_value(value, &field.kind(), &path)? {
            Value::String(text) if json_field(field.name()).is_some() => {
                serde_json::from_str(&text)
                    .map_err(|e| Failure::invalid_input(Surface::Activity, &path, e))?
            }
            Value::Null => continue,
            value => value,
        };
        let tagged = field.containing_oneof().filter(|oneof| {
            !oneof.is_synthetic() && (oneof.fields()).all(|f| f.kind().as_message().is_some())
        });
        match (tagged, value) {
            (Some(_), Value::Object(inner)) => {
                plain.insert("type".to_owned(), field.name().into());
                plain.extend(inner);
            }
            (_, value) => {
                plain.insert(plain_name(&field), value);
            }
        }
    }
    if descriptor.full_name() == "overspill.v1.Limits" {
        let explicit = plain.remove("explicit_bands") == Some(Value::Bool(true));
        let empty =
            |value: Option<&Value>| value.and_then(Value::as_array).is_some_and(Vec::is_empty);
        if !explicit && empty(plain.get("bands")) {
            plain.remove("bands");
        }
        if empty(plain.get("tool_filter")) {
            plain.remove("tool_filter");
        }
    }
    if descriptor.fields().len() == 1 {
        return Ok(plain.into_values().next().unwrap_or_default());
    }
    Ok(Value::Object(plain))
}

/// One value of a field of `kind` in the plain form; `Null` for an unspecified enum.
fn plain_value(value: prost_reflect::Value, kind: &Kind, path: &str) -> Result<Value, Failure> {
    use prost_reflect::Value as Pb;
    Ok(match value {
        Pb::Bool(b) => b.into(),
        Pb::I32(n) => n.into(),
        Pb::I64(n) => n.into(),
        Pb::U32(n) => n.into(),
        Pb::U64(n) => n.into(),
        Pb::F32(x) => x.into(),
        Pb::F64(x) => x.into(),
        Pb::String(text) => text.into(),
        Pb::Bytes(data) => STANDARD.encode(data).into(),
        Pb::EnumNumber(number) => {
            let named = kind
                .as_enum()
                .and_then(|e| Some((e.get_value(number)?, enum_prefix(e))));
            match named {
                Some((value, _)) if value.name().ends_with("_UNSPECIFIED") => Value::Null,
                Some((value, prefix)) => {
                    let name = value.name();
                    (name
                        .strip_prefix(&prefix)
                        .unwrap_or(name)
                        .to_ascii_lowercase())
                    .into()
                }
                // A number outside the enum: the Rust form refuses it, naming the field.
                None => number.into(),
            }
        }
        Pb::Message(message) => plain_message(message, path)?,
        Pb::List(values) => (values.into_iter().enumerate())
            .map(|(i, value)| plain_value(value, kind, &format!("{path}[{i}]")))
            .collect::<Result<_, _>>()?,
        Pb::Map(entries) => {
            let value_kind = kind
                .as_message()
                .map(|entry| entry.map_entry_value_field().kind());
            let value_kind = value_kind.unwrap_or_else(|| kind.clone());
            (entries.into_iter())
                .map(|(key, value)| {
                    let key = match key {
                        MapKey::String(key) => key,
                        // proto3 JSON writes other keys as their text.
                        other => plain_value(other.into(), kind, path)?.to_string(),
                    };
                    let value = plain_value(value, &value_kind, &format!("{path}.{key}"))?;
                    Ok((key, value))
                })
                .collect::<Result<Map<_, _>, Failure>>()?
                .into()
        }
    })
}

/// A plain value of a field of `kind` as proto3 JSON with proto field names (the inverse of
/// [`plain_message`] for what replies carry).
fn proto_value(value: Value, kind: &Kind) -> Value {
    match (kind, value) {
        (Kind::Enum(kind), Value::String(name)) => {
            format!("{}{}", enum_prefix(kind), name.to_ascii_uppercase()).into()
        }
        (Kind::Message(message), Value::Object(mut plain)) => {
            let mut proto = Map::new();
            for field in message.fields() {
                let Some(value) = plain.remove(&plain_name(&field)) else {
                    continue;
                };
                let value = match (json_field(field.name()), value) {
                    (_, Value::Null) => continue,
                    (Some(_), value) if field.kind() == Kind::String => value.to_string().into(),
                    (_, Value::Array(values)) => values
                        .into_iter()
                        .map(|v| proto_value(v, &field.kind()))
                        .collect(),
                    (_, value) => proto_value(value, &field.kind()),
                };
                proto.insert(field.name().to_owned(), value);
            }
            // What is left has no twin: the message refuses it.
            proto.extend(plain);
            proto.into()
        }
        (Kind::Message(message), bare) if message.fields().len() == 1 && !bare.is_null() => {
            let only = message.fields().next().map(|f| f.name().to_owned());
            proto_value(
                Value::Object(Map::from_iter(only.map(|name| (name, bare)))),
                kind,
            )
        }
        (_, value) => value,
    }
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;
    use crate::limits::{self, Envelope, Limits, ReductionKind, ToolOutput, Usage};

    fn decode<T: ProtoForm + DeserializeOwned>(json: &str) -> Result<T, Failure> {
        from_protobuf(json.as_bytes(), Encoding::JsonProtobuf)
    }

    /// The limits of a reduce request whose `config` is `config` in proto3 JSON.
    fn limits_of(config: &str) -> Result<Limits, limits::ConfigError> {
        let json = format!(r#"{{"toolName":"t","output":{{"text":""}},"config":{config}}}"#);
        let request: ReduceRequest = decode(&json).expect("decodes");
        request.limits(&Limits::default())
    }

    #[test]
    fn every_form_names_a_message() {
        let names = [
            ReduceRequest::MESSAGE_TYPE,
            ReduceResponse::MESSAGE_TYPE,
            SpillRequest::MESSAGE_TYPE,
            SpillResponse::MESSAGE_TYPE,
            SummarizeRequest::MESSAGE_TYPE,
            SummarizeResponse::MESSAGE_TYPE,
            ReadRequest::MESSAGE_TYPE,
            ReadResponse::MESSAGE_TYPE,
            GrepRequest::MESSAGE_TYPE,
            GrepResponse::MESSAGE_TYPE,
            QueryRequest::MESSAGE_TYPE,
            QueryResponse::MESSAGE_TYPE,
            ListRequest::MESSAGE_TYPE,
            ListResponse::MESSAGE_TYPE,
        ];
        for name in names {
            assert!(DESCRIPTORS.get_message_by_name(name).is_some(), "{name}");
        }
    }

    #[test]
    fn a_protobuf_limits_is_its_json_twin() {
        // Every field away from its default, so that a field the conversion drops shows.
        let plain = r#"{"bands":[{"over":50000,"action":{"type":"summarize","model":"m","then":{"type":"spill","preview_chars":300,"then":{"type":"truncate","strategy":"tail","max_tokens":500,"keep_tail_lines":3}}}},{"over":0,"action":{"type":"passthrough"}}],"per_tool":{"ls":[]},"tool_filter":["ls","cat"],"over_tokens":true,"tokenizer":"cl100k_base","strip_ansi":true,"serializer":"json_lines","summary_prompt":"Sum up {tool_name}: {output}","read_tool_name":"page_back"}"#;
        let proto = r#"{"bands":[{"over":"50000","action":{"summarize":{"model":"m","then":{"spill":{"previewChars":"300","then":{"truncate":{"strategy":"TRUNCATION_STRATEGY_TAIL","maxTokens":"500","keepTailLines":"3"}}}}}}},{"over":"0","action":{"passthrough":{}}}],"perTool":{"ls":{}},"toolFilter":{"names":["ls","cat"]},"overTokens":true,"tokenizer":"TOKENIZER_CL100K_BASE","stripAnsi":true,"serializer":"SERIALIZER_JSON_LINES","summaryPrompt":"Sum up {tool_name}: {output}","readToolName":"page_back"}"#;
        let limits = Limits::from_json(plain).expect("valid");
        assert_ne!(limits, Limits::default());
        assert_eq!(limits_of(proto).expect("converts"), limits);
        // Unset fields (an unspecified enum, a filter of no names) take the JSON form's
        // defaults; `explicitBands` keeps an empty list.
        let unset = r#"{"tokenizer":"TOKENIZER_UNSPECIFIED","toolFilter":{}}"#;
        for config in ["{}", unset] {
            assert_eq!(limits_of(config).expect("converts"), Limits::default());
        }
        let none = limits_of(r#"{"explicitBands":true}"#).expect("converts");
        assert!(none.bands.is_empty());
    }

    #[test]
    fn bad_protobuf_config_names_the_field() {
        let config = |limits: pb::Limits| {
            let request = pb::ReduceRequest {
                output: Some(pb::ToolOutput {
                    value: Some(pb::tool_output::Value::Text("x".into())),
                }),
                config: Some(limits),
                ..Default::default()
            };
            let data = request.encode_to_vec();
            let request: ReduceRequest =
                from_protobuf(&data, Encoding::BinaryProtobuf).expect("decodes");
            request.limits(&Limits::default()).expect_err("invalid")
        };
        let unknown = config(pb::Limits {
            tokenizer: 99,
            ..Default::default()
        });
        assert_eq!(unknown.path(), "tokenizer");
        let band = |action| pb::Band { over: 1, action };
        let truncate = pb::action::Action::Truncate(Box::new(pb::Truncate {
            max_tokens: Some(-1),
            ..Default::default()
        }));
        let negative = config(pb::Limits {
            bands: vec![band(Some(pb::Action {
                action: Some(truncate),
            }))],
            ..Default::default()
        });
        assert_eq!(negative.path(), "bands[0].action.max_tokens");
        let missing = config(pb::Limits {
            bands: vec![band(None)],
            ..Default::default()
        });
        assert_eq!(missing.path(), "bands[0]");
        let failure = Failure::invalid_config(Surface::Activity, &missing);
        assert_eq!(failure.type_name, "InvalidConfig");
        assert!(
            failure
                .message
                .contains("`config.bands[0]`: missing field `action`")
        );
        let empty = config(pb::Limits {
            bands: vec![band(Some(pb::Action { action: None }))],
            ..Default::default()
        });
        assert_eq!(empty.path(), "bands[0].action");
    }

    #[test]
    fn requests_decode_from_camel_or_snake_case_json_and_binary() {
        let request = ReadRequest {
            handle: "r/c.0".into(),
            offset: 3,
            limit: 2,
            from_end: true,
            ..ReadRequest::default()
        };
        let camel = r#"{"handle":"r/c.0","offset":"3","limit":"2","fromEnd":true}"#;
        let snake = r#"{"handle":"r/c.0","offset":3,"limit":"2","from_end":true}"#;
        for json in [camel, snake] {
            assert_eq!(decode::<ReadRequest>(json).expect("decodes"), request);
        }
        let binary = pb::ReadToolResultRequest {
            handle: "r/c.0".into(),
            offset: 3,
            limit: Some(2),
            from_end: true,
            ..Default::default()
        }
        .encode_to_vec();
        let decoded = from_protobuf::<ReadRequest>(&binary, Encoding::BinaryProtobuf);
        assert_eq!(decoded.expect("decodes"), request);
        // An absent optional field keeps the form's default.
        let bare = decode::<ReadRequest>(r#"{"handle":"h"}"#).expect("decodes");
        assert_eq!(bare.limit, crate::read::DEFAULT_LIMIT);
        let garbage = from_protobuf::<ReadRequest>(b"\xff\xff", Encoding::BinaryProtobuf);
        assert_eq!(garbage.expect_err("refused").type_name, "InvalidInput");
    }

    #[test]
    fn a_reduce_request_carries_its_output_and_envelope() {
        let json = r#"{"tool_name":"cat","toolKind":"k","runId":"r","retry":2,"output":{"json":"{\"a\":[1]}"},"contentJson":"\"c\"","metadataJson":"{\"m\":1}","envelope":true}"#;
        let request: ReduceRequest = decode(json).expect("decodes");
        assert_eq!(request.call.tool_kind.as_deref(), Some("k"));
        assert_eq!(request.call(None).spill_key(""), "r/call.2");
        assert_eq!(
            request.output,
            ToolOutput::Json(serde_json::json!({"a": [1]}))
        );
        let envelope = Envelope {
            content: Some("c".into()),
            metadata: Some(serde_json::json!({"m": 1})),
            wrapped: true,
        };
        assert_eq!(request.envelope, envelope);
        let bytes = r#"{"toolName":"cat","output":{"bytes":"AP8Q"}}"#;
        let request: ReduceRequest = decode(bytes).expect("decodes");
        assert_eq!(request.output, ToolOutput::Bytes(vec![0, 255, 16].into()));
        let bad = decode::<ReduceRequest>(r#"{"output":{"text":"x"},"contentJson":"{"}"#);
        assert!(
            bad.expect_err("bad JSON")
                .message
                .contains("`content_json`")
        );
        let bad = decode::<ReduceRequest>(r#"{"output":{"json":"{"}}"#);
        assert!(bad.expect_err("bad JSON").message.contains("`output.json`"));
    }

    #[test]
    fn a_reduce_reply_names_its_spills_in_their_own_protobuf_fields() {
        let reduced = ReduceResponse {
            kind: ReductionKind::Spilled,
            content_kind: ReductionKind::Summarized,
            return_value: ToolOutput::Text("marker".into()),
            envelope: Envelope {
                content: Some(serde_json::json!(["a"])),
                metadata: Some(serde_json::json!({
                    "overflow_handle": "r/c.0",
                    "overflow_bytes": 31_000,
                    "overflow_content_handle": "r/c.0.content",
                })),
                wrapped: true,
            },
            usage: Usage {
                requests: 2,
                input_tokens: 3,
                output_tokens: 0,
            },
            exhausted: false,
            store: Some("s3://b".into()),
        };
        let json = to_protobuf(&reduced, Encoding::JsonProtobuf).expect("encodes");
        let expected = r#"{"kind":"REDUCTION_KIND_SPILLED","contentKind":"REDUCTION_KIND_SUMMARIZED","returnValue":{"text":"marker"},"contentJson":"[\"a\"]","metadataJson":"{\"overflow_handle\":\"r/c.0\",\"overflow_bytes\":31000,\"overflow_content_handle\":\"r/c.0.content\"}","envelope":true,"usage":{"requests":"2","inputTokens":"3"},"overflowHandle":"r/c.0","overflowBytes":"31000","overflowContentHandle":"r/c.0.content","store":"s3://b"}"#;
        assert_eq!(String::from_utf8_lossy(&json), expected);
        let binary = to_protobuf(&reduced, Encoding::BinaryProtobuf).expect("encodes");
        let message = pb::ReduceResponse {
            kind: pb::ReductionKind::Spilled.into(),
            content_kind: pb::ReductionKind::Summarized.into(),
            return_value: Some(pb::ToolOutput {
                value: Some(pb::tool_output::Value::Text("marker".into())),
            }),
            content_json: Some(r#"["a"]"#.into()),
            metadata_json: reduced.envelope.metadata.as_ref().map(Value::to_string),
            envelope: true,
            usage: Some(pb::Usage {
                requests: 2,
                input_tokens: 3,
                output_tokens: 0,
            }),
            overflow_handle: Some("r/c.0".into()),
            overflow_bytes: 31_000,
            overflow_content_handle: Some("r/c.0.content".into()),
            store: Some("s3://b".into()),
        };
        assert_eq!(binary, message.encode_to_vec());
    }

    #[test]
    fn replies_encode_as_their_messages() {
        let bare = ReduceResponse {
            return_value: ToolOutput::Bytes(vec![0, 255].into()),
            ..Default::default()
        };
        let json = to_protobuf(&bare, Encoding::JsonProtobuf).expect("encodes");
        assert_eq!(json, br#"{"returnValue":{"bytes":"AP8="},"usage":{}}"#);
        let page = ReadResponse("line\n".into());
        let binary = to_protobuf(&page, Encoding::BinaryProtobuf).expect("encodes");
        let message = pb::ReadToolResultResponse {
            text: "line\n".into(),
        };
        assert_eq!(binary, message.encode_to_vec());
        let json = to_protobuf(&ListResponse(String::new()), Encoding::JsonProtobuf);
        assert_eq!(json.expect("encodes"), b"{}");
        let spilled = SpillResponse {
            handle: "h".into(),
            overflow_bytes: 5,
            ..Default::default()
        };
        let json = to_protobuf(&spilled, Encoding::JsonProtobuf).expect("encodes");
        assert_eq!(json, br#"{"handle":"h","overflowBytes":"5"}"#);
    }

    #[test]
    fn grep_and_list_requests_decode_every_field() {
        let grep = GrepRequest {
            handle: "r/c.0".into(),
            pattern: "ERR".into(),
            regex: true,
            ignore_case: true,
            context: 2,
            offset: 4,
            max_matches: 9,
            from_end: true,
            read_tool_name: Some("read".into()),
        };
        let camel = r#"{"handle":"r/c.0","pattern":"ERR","regex":true,"ignoreCase":true,"context":"2","offset":"4","maxMatches":"9","fromEnd":true,"readToolName":"read"}"#;
        assert_eq!(decode::<GrepRequest>(camel).expect("decodes"), grep);
        let read = ReadRequest {
            handle: "r/c.0".into(),
            unit: crate::read::ReadUnit::Bytes,
            harness: Some(crate::limits::Harness::V0_62),
            read_tool_name: Some("read".into()),
            ..ReadRequest::default()
        };
        let camel =
            r#"{"handle":"r/c.0","unit":"READ_UNIT_BYTES","harness":"0.62","readToolName":"read"}"#;
        assert_eq!(decode::<ReadRequest>(camel).expect("decodes"), read);
        let list = ListRequest {
            run_id: "run-1".into(),
            limit: 5,
            tool_names: [("call-1".to_owned(), "cat".to_owned())].into(),
        };
        let camel = r#"{"runId":"run-1","limit":"5","toolNames":{"call-1":"cat"}}"#;
        assert_eq!(decode::<ListRequest>(camel).expect("decodes"), list);
        let default = decode::<ListRequest>(r#"{"runId":"r"}"#).expect("decodes");
        assert_eq!(default.limit, crate::store::DEFAULT_LIST_LIMIT);
    }
}
