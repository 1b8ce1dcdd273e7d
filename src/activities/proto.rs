//! The protobuf forms of the activity messages (`proto/overspill/v1/`), for callers that send
//! `json/protobuf` (proto3 JSON: lowerCamelCase names, 64-bit integers as strings; either name
//! accepted) or `binary/protobuf` payloads. The worker only decodes requests ([`ProtoRequest`])
//! and encodes replies ([`ProtoReply`]), so each conversion is written in the one direction it
//! runs in.
//!
//! A protobuf `Limits` becomes the JSON form of [`crate::limits::Limits`] and is validated by the
//! same code as a `json/plain` config, so errors name the same fields.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::errors::Failure;
use crate::api::{
    GrepRequest, GrepResponse, ListRequest, ListResponse, QueryRequest, QueryResponse, ReadRequest,
    ReadResponse, ReduceRequest, ReduceResponse, SpillRequest, SpillResponse, SummarizeRequest,
    SummarizeResponse,
};
use crate::limits::{
    Action, Band, DEFAULT_MAX_CHARS, DEFAULT_PREVIEW_CHARS, Limits, ReductionKind, SerializerKind,
    Spill, Summarize, Tokenizer, ToolFilter, ToolOutput, Truncate, TruncationStrategy, Usage,
};

/// The generated `overspill.v1` messages (prost) with their proto3 JSON mapping (pbjson).
#[allow(missing_docs, unreachable_pub, clippy::all)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/overspill.v1.rs"));
    include!(concat!(env!("OUT_DIR"), "/overspill.v1.serde.rs"));
}

/// A request's serde form (`json/plain`) with a protobuf counterpart, decoded from either
/// protobuf encoding.
pub trait ProtoRequest: DeserializeOwned + 'static {
    /// The generated message.
    type Pb: prost::Message + Default + DeserializeOwned;
    /// The full protobuf message name (the payload's `messageType`).
    const MESSAGE_TYPE: &'static str;
    /// From the message (field errors name the snake_case field).
    fn from_pb(pb: Self::Pb) -> Result<Self, Failure>;

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
}

/// A reply's serde form (`json/plain`) with a protobuf counterpart, encoded in either protobuf
/// encoding.
pub trait ProtoReply: Serialize + 'static {
    /// The generated message.
    type Pb: prost::Message + Serialize;
    /// The full protobuf message name (the payload's `messageType`).
    const MESSAGE_TYPE: &'static str;
    /// To the message.
    fn to_pb(&self) -> Self::Pb;

    /// Encode the protobuf wire form.
    fn to_proto_binary(&self) -> Vec<u8> {
        prost::Message::encode_to_vec(&self.to_pb())
    }
    /// Encode the proto3 JSON form (pbjson refuses an enum field outside its enum).
    fn to_proto_json(&self) -> Result<Vec<u8>, EncodeError> {
        Ok(serde_json::to_vec(&self.to_pb())?)
    }
}

/// Why a form could not be encoded.
pub type EncodeError = Box<dyn std::error::Error + Send + Sync>;

/// Decode plain JSON, naming the offending field in the error.
pub(crate) fn decode_json<T: DeserializeOwned>(data: &[u8]) -> Result<T, Failure> {
    let de = &mut serde_json::Deserializer::from_slice(data);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        Failure::invalid_input(&path, e.into_inner().to_string())
    })
}

/// How a request field is set from its protobuf field: `set_from` leaves the form's default in
/// place when an optional protobuf field is absent; errors name `field`.
trait FromPbField<P> {
    fn set_from(&mut self, value: P, field: &str) -> Result<(), Failure>;
}

/// How a reply field becomes its protobuf field.
trait ToPbField<P> {
    fn to_field(&self) -> P;
}

impl<T> FromPbField<T> for T {
    fn set_from(&mut self, value: T, _: &str) -> Result<(), Failure> {
        *self = value;
        Ok(())
    }
}

/// An optional protobuf field the form defaults (`limit`, `preview_chars`).
impl<T> FromPbField<Option<T>> for T {
    fn set_from(&mut self, value: Option<T>, _: &str) -> Result<(), Failure> {
        if let Some(value) = value {
            *self = value;
        }
        Ok(())
    }
}

impl<T: Clone> ToPbField<T> for T {
    fn to_field(&self) -> T {
        self.clone()
    }
}

impl<T: Clone> ToPbField<Option<T>> for T {
    fn to_field(&self) -> Option<T> {
        Some(self.clone())
    }
}

impl FromPbField<Option<pb::ToolOutput>> for ToolOutput {
    fn set_from(&mut self, value: Option<pb::ToolOutput>, field: &str) -> Result<(), Failure> {
        *self = match value.and_then(|o| o.value) {
            Some(pb::tool_output::Value::Text(text)) => ToolOutput::Text(text.into()),
            Some(pb::tool_output::Value::Json(text)) => serde_json::from_str(&text)
                .map(ToolOutput::Json)
                .map_err(|e| Failure::invalid_input(&format!("{field}.json"), e))?,
            Some(pb::tool_output::Value::Bytes(data)) => ToolOutput::Bytes(data.into()),
            None => {
                return Err(Failure::invalid_input(
                    field,
                    "missing: set text, json or bytes",
                ));
            }
        };
        Ok(())
    }
}

impl ToPbField<Option<pb::ToolOutput>> for ToolOutput {
    fn to_field(&self) -> Option<pb::ToolOutput> {
        let value = match self {
            ToolOutput::Text(text) => pb::tool_output::Value::Text(text.to_string()),
            ToolOutput::Json(value) => pb::tool_output::Value::Json(value.to_string()),
            ToolOutput::Bytes(data) => pb::tool_output::Value::Bytes(data.to_vec()),
        };
        Some(pb::ToolOutput { value: Some(value) })
    }
}

/// A JSON value carried as text (`content_json`, `metadata_json`).
impl FromPbField<Option<String>> for Option<Value> {
    fn set_from(&mut self, value: Option<String>, field: &str) -> Result<(), Failure> {
        *self = value
            .map(|t| serde_json::from_str(&t).map_err(|e| Failure::invalid_input(field, e)))
            .transpose()?;
        Ok(())
    }
}

impl ToPbField<Option<String>> for Option<Value> {
    fn to_field(&self) -> Option<String> {
        self.as_ref().map(Value::to_string)
    }
}

/// A request's `config`: a protobuf `Limits` becomes the JSON form and is validated as one.
impl FromPbField<Option<pb::Limits>> for Option<Value> {
    fn set_from(&mut self, value: Option<pb::Limits>, _: &str) -> Result<(), Failure> {
        *self = value.map(limits_to_json).transpose()?;
        Ok(())
    }
}

impl ToPbField<i32> for ReductionKind {
    fn to_field(&self) -> i32 {
        let kind = match self {
            Self::Passthrough => pb::ReductionKind::Passthrough,
            Self::Truncated => pb::ReductionKind::Truncated,
            Self::Spilled => pb::ReductionKind::Spilled,
            Self::Summarized => pb::ReductionKind::Summarized,
        };
        kind.into()
    }
}

impl ToPbField<Option<pb::Usage>> for Usage {
    fn to_field(&self) -> Option<pb::Usage> {
        Some(pb::Usage {
            requests: self.requests,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
        })
    }
}

/// A protobuf enum as the serde enum whose variants it names; a protobuf value without a twin
/// (`…_UNSPECIFIED`) converts to `None`.
macro_rules! from_pb_enum {
    ($pb:ident => $form:ident { $($variant:ident),+ }) => {
        impl From<pb::$pb> for Option<$form> {
            #[allow(unreachable_patterns)]
            fn from(value: pb::$pb) -> Self {
                match value {
                    $(pb::$pb::$variant => Some($form::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

from_pb_enum!(Tokenizer => Tokenizer { CharsDiv4, O200kBase, Cl100kBase });
from_pb_enum!(Serializer => SerializerKind { IndentedJson, JsonLines });
from_pb_enum!(TruncationStrategy => TruncationStrategy { Head, Tail, HeadTail });

/// A protobuf `Limits` as the JSON form, validated later as a `json/plain` config is
/// (`Limits::from_value`); absent fields take the JSON form's defaults.
fn limits_to_json(l: pb::Limits) -> Result<Value, Failure> {
    let defaults = Limits::default();
    let limits = Limits {
        bands: if l.bands.is_empty() && !l.explicit_bands {
            defaults.bands
        } else {
            bands_from_pb(l.bands, "bands")?
        },
        per_tool: (l.per_tool.into_iter())
            .map(|(tool, list)| {
                let bands = bands_from_pb(list.bands, &format!("per_tool.{tool}"))?;
                Ok((tool, bands))
            })
            .collect::<Result<_, Failure>>()?,
        tool_filter: match l.tool_filter {
            Some(filter) if !filter.names.is_empty() => ToolFilter::Names(filter.names),
            _ => ToolFilter::All,
        },
        over_tokens: l.over_tokens,
        tokenizer: enum_from_pb::<pb::Tokenizer, _>(l.tokenizer, "tokenizer", "tokenizer")?
            .unwrap_or_default(),
        strip_ansi: l.strip_ansi,
        serializer: enum_from_pb::<pb::Serializer, _>(l.serializer, "serializer", "serializer")?,
        summary_prompt: l.summary_prompt.unwrap_or(defaults.summary_prompt),
        read_tool_name: l.read_tool_name.unwrap_or(defaults.read_tool_name),
    };
    serde_json::to_value(limits).map_err(|e| Failure::invalid_input("config", e))
}

/// A protobuf enum field at `path` as its serde twin (`None` when unspecified); a number outside
/// the enum is an `InvalidConfig` naming it (`unknown {what}`).
fn enum_from_pb<P: TryFrom<i32>, F>(
    value: i32,
    path: &str,
    what: &str,
) -> Result<Option<F>, Failure>
where
    Option<F>: From<P>,
{
    P::try_from(value)
        .map(Option::from)
        .map_err(|_| bad_config(path, &format!("unknown {what}")))
}

fn bad_config(path: &str, message: &str) -> Failure {
    let message = format!("invalid limits configuration at `config.{path}`: {message}");
    Failure::new("InvalidConfig", message, false)
}

fn bands_from_pb(bands: Vec<pb::Band>, path: &str) -> Result<Vec<Band>, Failure> {
    (bands.into_iter().enumerate())
        .map(|(i, band)| {
            let path = format!("{path}[{i}].action");
            let action = band.action.ok_or_else(|| bad_config(&path, "missing"))?;
            Ok(Band {
                over: band.over,
                action: action_from_pb(action, &path)?,
            })
        })
        .collect()
}

fn action_from_pb(action: pb::Action, path: &str) -> Result<Action, Failure> {
    use pb::action::Action as Pb;
    let then = |then: Option<Box<pb::Action>>| {
        then.map(|t| action_from_pb(*t, &format!("{path}.then")).map(Box::new))
            .transpose()
    };
    Ok(match action.action {
        None => {
            let missing = "missing: set passthrough, truncate, spill or summarize";
            return Err(bad_config(path, missing));
        }
        Some(Pb::Passthrough(_)) => Action::Passthrough,
        Some(Pb::Truncate(t)) => {
            let strategy = format!("{path}.strategy");
            let strategy =
                enum_from_pb::<pb::TruncationStrategy, _>(t.strategy, &strategy, "strategy")?;
            Action::Truncate(Truncate {
                strategy: strategy.unwrap_or_default(),
                max_chars: t.max_chars.unwrap_or(DEFAULT_MAX_CHARS),
                max_tokens: t.max_tokens,
                keep_tail_lines: t.keep_tail_lines,
                then: then(t.then)?,
            })
        }
        Some(Pb::Spill(s)) => Action::Spill(Spill {
            preview_chars: s.preview_chars.unwrap_or(DEFAULT_PREVIEW_CHARS),
            then: then(s.then)?,
        }),
        Some(Pb::Summarize(s)) => Action::Summarize(Summarize {
            model: s.model,
            then: then(s.then)?,
        }),
    })
}

/// Implements [`ProtoRequest`] from a field mapping, `form.field = message_field` (each set by
/// its [`FromPbField`]); the form's `Default` fills what the message does not carry.
macro_rules! proto_request {
    ($form:ty => $pb:ident { $($($field:tt).+ = $pb_field:ident),* $(,)? }) => {
        impl ProtoRequest for $form {
            type Pb = pb::$pb;
            const MESSAGE_TYPE: &'static str = concat!("overspill.v1.", stringify!($pb));
            fn from_pb(pb: Self::Pb) -> Result<Self, Failure> {
                let mut form = Self::default();
                $(FromPbField::set_from(&mut form.$($field).+, pb.$pb_field, stringify!($pb_field))?;)*
                Ok(form)
            }
        }
    };
}

/// Implements [`ProtoReply`] from a field mapping, `form.field = message_field` (each by its
/// [`ToPbField`]). A `then` block sets message fields derived from the form.
macro_rules! proto_reply {
    ($form:ty => $pb:ident { $($($field:tt).+ = $pb_field:ident),* $(,)? }
     $(then |$this:ident, $message:ident| $derived:block)?) => {
        impl ProtoReply for $form {
            type Pb = pb::$pb;
            const MESSAGE_TYPE: &'static str = concat!("overspill.v1.", stringify!($pb));
            fn to_pb(&self) -> Self::Pb {
                let mut message = pb::$pb::default();
                $(message.$pb_field = ToPbField::to_field(&self.$($field).+);)*
                $({
                    let ($this, $message) = (self, &mut message);
                    $derived
                })?
                message
            }
        }
    };
}

proto_request! { ReduceRequest => ReduceRequest {
    call.tool_name = tool_name, call.tool_kind = tool_kind, call.run_id = run_id,
    call.tool_call_id = tool_call_id, call.retry = retry, output = output,
    envelope.content = content_json, envelope.metadata = metadata_json,
    envelope.wrapped = envelope, config = config,
} }

proto_reply! { ReduceResponse => ReduceResponse {
    kind = kind, content_kind = content_kind, return_value = return_value,
    envelope.content = content_json, envelope.metadata = metadata_json,
    envelope.wrapped = envelope, usage = usage, store = store,
} then |reduced, message| {
    message.overflow_handle = reduced.overflow_handle().map(str::to_owned);
    message.overflow_content_handle = reduced.overflow_content_handle().map(str::to_owned);
    message.overflow_bytes = reduced.overflow_bytes();
} }

proto_request! { SpillRequest => SpillRequest {
    call.tool_name = tool_name, call.run_id = run_id, call.tool_call_id = tool_call_id,
    call.retry = retry, suffix = suffix, key = key, output = output,
    preview_chars = preview_chars, config = config,
} }

proto_reply! { SpillResponse => SpillResponse {
    handle = handle, preview = preview, shape = shape, overflow_bytes = overflow_bytes,
    store = store,
} }

proto_request! { SummarizeRequest => SummarizeRequest {
    tool_name = tool_name, output = output, model = model, template = prompt,
} }

proto_reply! { SummarizeResponse => SummarizeResponse { summary = summary, usage = usage } }

proto_request! { ReadRequest => ReadToolResultRequest {
    handle = handle, offset = offset, limit = limit, from_end = from_end, pattern = pattern,
} }

proto_request! { GrepRequest => GrepToolResultRequest {
    handle = handle, pattern = pattern, regex = regex, ignore_case = ignore_case,
    context = context, offset = offset, limit = limit, from_end = from_end,
} }

proto_request! { QueryRequest => QueryToolResultRequest {
    handle = handle, filter = filter, offset = offset, limit = limit,
} }

proto_request! { ListRequest => ListToolResultsRequest {
    run_id = run_id, limit = limit, tool_names = tool_names,
} }

proto_reply! { ReadResponse => ReadToolResultResponse { 0 = text } }
proto_reply! { GrepResponse => GrepToolResultResponse { 0 = text } }
proto_reply! { QueryResponse => QueryToolResultResponse { 0 = text } }
proto_reply! { ListResponse => ListToolResultsResponse { 0 = text } }

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;
    use crate::limits;

    /// The `config` a protobuf request carries, as `json/protobuf` sends it, in the serde form.
    fn from_proto_json(json: &str) -> Result<limits::Limits, Failure> {
        let pb: pb::Limits = serde_json::from_str(json).expect("proto3 JSON");
        let value = limits_to_json(pb)?;
        Ok(limits::Limits::from_value(value).expect("valid"))
    }

    #[test]
    fn a_protobuf_limits_is_its_json_twin() {
        // Every field away from its default, so that a field the conversion drops shows.
        let plain = r#"{"bands":[{"over":50000,"action":{"type":"summarize","model":"m","then":{"type":"spill","preview_chars":300,"then":{"type":"truncate","strategy":"tail","max_tokens":500,"keep_tail_lines":3}}}},{"over":0,"action":{"type":"passthrough"}}],"per_tool":{"ls":[]},"tool_filter":["ls","cat"],"over_tokens":true,"tokenizer":"cl100k_base","strip_ansi":true,"serializer":"json_lines","summary_prompt":"Sum up {tool_name}: {output}","read_tool_name":"page_back"}"#;
        let proto = r#"{"bands":[{"over":"50000","action":{"summarize":{"model":"m","then":{"spill":{"previewChars":"300","then":{"truncate":{"strategy":"TRUNCATION_STRATEGY_TAIL","maxTokens":"500","keepTailLines":"3"}}}}}}},{"over":"0","action":{"passthrough":{}}}],"perTool":{"ls":{}},"toolFilter":{"names":["ls","cat"]},"overTokens":true,"tokenizer":"TOKENIZER_CL100K_BASE","stripAnsi":true,"serializer":"SERIALIZER_JSON_LINES","summaryPrompt":"Sum up {tool_name}: {output}","readToolName":"page_back"}"#;
        let limits = limits::Limits::from_json(plain).expect("valid");
        assert_ne!(limits, limits::Limits::default());
        assert_eq!(from_proto_json(proto).expect("converts"), limits);
        // Unset fields take the JSON form's defaults; `explicitBands` keeps an empty list.
        assert_eq!(
            from_proto_json("{}").expect("converts"),
            limits::Limits::default()
        );
        let none = from_proto_json(r#"{"explicitBands":true}"#).expect("converts");
        assert!(none.bands.is_empty());
    }

    #[test]
    fn bad_protobuf_tokenizer_or_token_budget_names_the_field() {
        let unknown = pb::Limits {
            tokenizer: 99,
            ..Default::default()
        };
        let err = limits_to_json(unknown).expect_err("unknown tokenizer");
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
        let json = limits_to_json(negative).expect("converts");
        let err = limits::Limits::from_value(json).expect_err("negative budget");
        assert_eq!(err.path(), "bands[0].action.max_tokens");
    }

    #[test]
    fn requests_decode_from_camel_or_snake_case_json_and_binary() {
        let request = ReadRequest {
            handle: "r/c.0".into(),
            offset: 3,
            limit: 2,
            from_end: true,
            pattern: None,
        };
        let camel = br#"{"handle":"r/c.0","offset":"3","limit":"2","fromEnd":true}"#;
        let snake = br#"{"handle":"r/c.0","offset":3,"limit":"2","from_end":true}"#;
        for json in [&camel[..], snake] {
            assert_eq!(
                ReadRequest::from_proto_json(json).expect("decodes"),
                request
            );
        }
        let binary = pb::ReadToolResultRequest {
            handle: "r/c.0".into(),
            offset: 3,
            limit: Some(2),
            from_end: true,
            pattern: None,
        }
        .encode_to_vec();
        assert_eq!(
            ReadRequest::from_proto_binary(&binary).expect("decodes"),
            request
        );
        // An absent optional field keeps the form's default.
        let bare = ReadRequest::from_proto_json(br#"{"handle":"h"}"#).expect("decodes");
        assert_eq!(bare.limit, crate::read::DEFAULT_LIMIT);
    }

    #[test]
    fn invalid_protobuf_config_names_the_field() {
        let pb = pb::ReduceRequest {
            tool_name: "cat".into(),
            output: Some(pb::ToolOutput {
                value: Some(pb::tool_output::Value::Text("x".into())),
            }),
            config: Some(pb::Limits {
                bands: vec![pb::Band {
                    over: 5,
                    action: None,
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        let err = ReduceRequest::from_pb(pb).expect_err("invalid");
        assert_eq!(err.type_name, "InvalidConfig");
        assert!(
            err.message.contains("config.bands[0].action"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_reduce_reply_names_its_spills_in_their_own_protobuf_fields() {
        let reduced = ReduceResponse {
            kind: ReductionKind::Spilled,
            envelope: limits::Envelope {
                metadata: Some(serde_json::json!({
                    "overflow_handle": "r/c.0",
                    "overflow_bytes": 31_000,
                    "overflow_content_handle": "r/c.0.content",
                })),
                wrapped: true,
                ..Default::default()
            },
            ..Default::default()
        };
        let pb = pb::ReduceResponse::decode(reduced.to_proto_binary().as_slice()).expect("decodes");
        assert_eq!(pb.kind, pb::ReductionKind::Spilled as i32);
        assert!(pb.envelope);
        assert_eq!(pb.overflow_handle.as_deref(), Some("r/c.0"));
        assert_eq!(pb.overflow_content_handle.as_deref(), Some("r/c.0.content"));
        assert_eq!(pb.overflow_bytes, 31_000);
        let json: Value = serde_json::from_slice(&reduced.to_proto_json().expect("encodes"))
            .expect("proto3 JSON");
        assert_eq!(json["kind"], "REDUCTION_KIND_SPILLED");
        assert_eq!(json["overflowBytes"], "31000");
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
            limit: 9,
            from_end: true,
        };
        let camel = br#"{"handle":"r/c.0","pattern":"ERR","regex":true,"ignoreCase":true,"context":"2","offset":"4","limit":"9","fromEnd":true}"#;
        assert_eq!(GrepRequest::from_proto_json(camel).expect("decodes"), grep);
        let list = ListRequest {
            run_id: "run-1".into(),
            limit: 5,
            tool_names: [("call-1".to_owned(), "cat".to_owned())].into(),
        };
        let camel = br#"{"runId":"run-1","limit":"5","toolNames":{"call-1":"cat"}}"#;
        assert_eq!(ListRequest::from_proto_json(camel).expect("decodes"), list);
        let default = ListRequest::from_proto_json(br#"{"runId":"r"}"#).expect("decodes");
        assert_eq!(default.limit, crate::store::DEFAULT_LIST_LIMIT);
    }
}
