//! The protobuf forms of the activity messages (`proto/overspill/v1/`), for callers that send
//! `json/protobuf` (proto3 JSON: lowerCamelCase names, 64-bit integers as strings; either name
//! accepted) or `binary/protobuf` payloads, and the conversions to the serde forms.
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

/// A serde form (`json/plain`) with a protobuf counterpart, in both protobuf encodings.
pub trait ProtoForm: Serialize + DeserializeOwned + 'static {
    /// The generated message.
    type Pb: prost::Message + Default + Serialize + DeserializeOwned;
    /// The full protobuf message name (the payload's `messageType`).
    const MESSAGE_TYPE: &'static str;
    /// From the message (field errors name the snake_case field).
    fn from_pb(pb: Self::Pb) -> Result<Self, Failure>;
    /// To the message; fails on a form the message cannot carry (an invalid `config`).
    fn to_pb(&self) -> Result<Self::Pb, Failure>;

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
    fn to_proto_binary(&self) -> Result<Vec<u8>, EncodeError> {
        Ok(prost::Message::encode_to_vec(&self.to_pb()?))
    }
    /// Encode the proto3 JSON form (pbjson also refuses an enum field outside its enum).
    fn to_proto_json(&self) -> Result<Vec<u8>, EncodeError> {
        Ok(serde_json::to_vec(&self.to_pb()?)?)
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

/// How one field of a serde form maps to its protobuf field. `set_from` leaves the form's
/// default in place when an optional protobuf field is absent; errors name `field`.
trait PbField<P> {
    /// Set the form's field from the message's.
    fn set_from(&mut self, value: P, field: &str) -> Result<(), Failure>;
    /// The message's field.
    fn to_field(&self) -> Result<P, Failure>;
}

impl<T: Clone> PbField<T> for T {
    fn set_from(&mut self, value: T, _: &str) -> Result<(), Failure> {
        *self = value;
        Ok(())
    }
    fn to_field(&self) -> Result<T, Failure> {
        Ok(self.clone())
    }
}

/// An optional protobuf field the form defaults (`limit`, `preview_chars`).
impl<T: Clone> PbField<Option<T>> for T {
    fn set_from(&mut self, value: Option<T>, _: &str) -> Result<(), Failure> {
        if let Some(value) = value {
            *self = value;
        }
        Ok(())
    }
    fn to_field(&self) -> Result<Option<T>, Failure> {
        Ok(Some(self.clone()))
    }
}

impl PbField<Option<pb::ToolOutput>> for ToolOutput {
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
    fn to_field(&self) -> Result<Option<pb::ToolOutput>, Failure> {
        let value = match self {
            ToolOutput::Text(text) => pb::tool_output::Value::Text(text.to_string()),
            ToolOutput::Json(value) => pb::tool_output::Value::Json(value.to_string()),
            ToolOutput::Bytes(data) => pb::tool_output::Value::Bytes(data.to_vec()),
        };
        Ok(Some(pb::ToolOutput { value: Some(value) }))
    }
}

/// A JSON value carried as text (`content_json`, `metadata_json`).
impl PbField<Option<String>> for Option<Value> {
    fn set_from(&mut self, value: Option<String>, field: &str) -> Result<(), Failure> {
        *self = value
            .map(|t| serde_json::from_str(&t).map_err(|e| Failure::invalid_input(field, e)))
            .transpose()?;
        Ok(())
    }
    fn to_field(&self) -> Result<Option<String>, Failure> {
        Ok(self.as_ref().map(Value::to_string))
    }
}

/// A request's `config`: a protobuf `Limits` becomes the JSON form and is validated as one; an
/// invalid config cannot be sent.
impl PbField<Option<pb::Limits>> for Option<Value> {
    fn set_from(&mut self, value: Option<pb::Limits>, _: &str) -> Result<(), Failure> {
        *self = value.map(limits_to_json).transpose()?;
        Ok(())
    }
    fn to_field(&self) -> Result<Option<pb::Limits>, Failure> {
        let limits = self.clone().map(Limits::from_value).transpose();
        let limits = limits.map_err(|e| Failure::invalid_config(&e))?;
        Ok(limits.as_ref().map(limits_to_pb))
    }
}

impl PbField<i32> for ReductionKind {
    /// A number outside the enum reads as passthrough.
    fn set_from(&mut self, value: i32, _: &str) -> Result<(), Failure> {
        let kind = pb::ReductionKind::try_from(value).unwrap_or_default();
        *self = Option::from(kind).unwrap_or_default();
        Ok(())
    }
    fn to_field(&self) -> Result<i32, Failure> {
        Ok(pb::ReductionKind::from(*self).into())
    }
}

impl PbField<Option<pb::Usage>> for Usage {
    fn set_from(&mut self, value: Option<pb::Usage>, _: &str) -> Result<(), Failure> {
        let u = value.unwrap_or_default();
        *self = Usage {
            requests: u.requests,
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
        };
        Ok(())
    }
    fn to_field(&self) -> Result<Option<pb::Usage>, Failure> {
        Ok(Some(pb::Usage {
            requests: self.requests,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
        }))
    }
}

/// `From` both ways between a protobuf enum and the serde enum whose variants it names; a
/// protobuf value without a twin (`…_UNSPECIFIED`) converts to `None`.
macro_rules! mirror_enum {
    ($pb:ident <=> $form:ident { $($variant:ident),+ }) => {
        impl From<$form> for pb::$pb {
            fn from(value: $form) -> Self {
                match value {
                    $($form::$variant => Self::$variant,)+
                }
            }
        }
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

mirror_enum!(Tokenizer <=> Tokenizer { CharsDiv4, O200kBase, Cl100kBase });
mirror_enum!(Serializer <=> SerializerKind { IndentedJson, JsonLines });
mirror_enum!(TruncationStrategy <=> TruncationStrategy { Head, Tail, HeadTail });
mirror_enum!(ReductionKind <=> ReductionKind { Passthrough, Truncated, Spilled, Summarized });

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

/// A validated `Limits` as its protobuf message.
pub fn limits_to_pb(l: &Limits) -> pb::Limits {
    let bands = |bands: &[Band]| {
        (bands.iter())
            .map(|b| pb::Band {
                over: b.over,
                action: Some(action_to_pb(&b.action)),
            })
            .collect()
    };
    pb::Limits {
        bands: bands(&l.bands),
        explicit_bands: l.bands.is_empty(),
        per_tool: (l.per_tool.iter())
            .map(|(tool, list)| (tool.clone(), pb::BandList { bands: bands(list) }))
            .collect(),
        tool_filter: match &l.tool_filter {
            ToolFilter::All => None,
            ToolFilter::Names(names) => Some(pb::ToolFilter {
                names: names.clone(),
            }),
        },
        over_tokens: l.over_tokens,
        tokenizer: pb::Tokenizer::from(l.tokenizer).into(),
        strip_ansi: l.strip_ansi,
        serializer: l
            .serializer
            .map_or(pb::Serializer::Unspecified, Into::into)
            .into(),
        summary_prompt: Some(l.summary_prompt.clone()),
        read_tool_name: Some(l.read_tool_name.clone()),
    }
}

fn action_to_pb(action: &Action) -> pb::Action {
    use pb::action::Action as Pb;
    let then = |t: &Option<Box<Action>>| t.as_deref().map(|t| Box::new(action_to_pb(t)));
    let action = match action {
        Action::Passthrough => Pb::Passthrough(pb::Passthrough {}),
        Action::Truncate(t) => Pb::Truncate(Box::new(pb::Truncate {
            strategy: pb::TruncationStrategy::from(t.strategy).into(),
            max_chars: Some(t.max_chars),
            max_tokens: t.max_tokens,
            keep_tail_lines: t.keep_tail_lines,
            then: then(&t.then),
        })),
        Action::Spill(s) => Pb::Spill(Box::new(pb::Spill {
            preview_chars: Some(s.preview_chars),
            then: then(&s.then),
        })),
        Action::Summarize(s) => Pb::Summarize(Box::new(pb::Summarize {
            model: s.model.clone(),
            then: then(&s.then),
        })),
    };
    pb::Action {
        action: Some(action),
    }
}

/// Implements [`ProtoForm`] from a field mapping, `form.field = message_field` (each by its
/// [`PbField`]); the form's `Default` fills what the message does not carry. A `then` block
/// sets message fields derived from the form.
macro_rules! proto_form {
    ($form:ty => $pb:ident { $($($field:tt).+ = $pb_field:ident),* $(,)? }
     $(then |$this:ident, $message:ident| $derived:block)?) => {
        impl ProtoForm for $form {
            type Pb = pb::$pb;
            const MESSAGE_TYPE: &'static str = concat!("overspill.v1.", stringify!($pb));
            fn from_pb(pb: Self::Pb) -> Result<Self, Failure> {
                let mut form = Self::default();
                $(PbField::set_from(&mut form.$($field).+, pb.$pb_field, stringify!($pb_field))?;)*
                Ok(form)
            }
            fn to_pb(&self) -> Result<Self::Pb, Failure> {
                let mut message = pb::$pb::default();
                $(message.$pb_field = PbField::to_field(&self.$($field).+)?;)*
                $({
                    let ($this, $message) = (self, &mut message);
                    $derived
                })?
                Ok(message)
            }
        }
    };
}

proto_form! { ReduceRequest => ReduceRequest {
    call.tool_name = tool_name, call.tool_kind = tool_kind, call.run_id = run_id,
    call.tool_call_id = tool_call_id, call.retry = retry, output = output,
    envelope.content = content_json, envelope.metadata = metadata_json,
    envelope.wrapped = envelope, config = config,
} }

proto_form! { ReduceResponse => ReduceResponse {
    kind = kind, content_kind = content_kind, return_value = return_value,
    envelope.content = content_json, envelope.metadata = metadata_json,
    envelope.wrapped = envelope, usage = usage, store = store,
} then |reduced, message| {
    message.overflow_handle = reduced.overflow_handle().map(str::to_owned);
    message.overflow_content_handle = reduced.overflow_content_handle().map(str::to_owned);
    message.overflow_bytes = reduced.overflow_bytes();
} }

proto_form! { SpillRequest => SpillRequest {
    call.tool_name = tool_name, call.run_id = run_id, call.tool_call_id = tool_call_id,
    call.retry = retry, suffix = suffix, key = key, output = output,
    preview_chars = preview_chars, config = config,
} }

proto_form! { SpillResponse => SpillResponse {
    handle = handle, preview = preview, shape = shape, overflow_bytes = overflow_bytes,
    store = store,
} }

proto_form! { SummarizeRequest => SummarizeRequest {
    tool_name = tool_name, output = output, model = model, template = prompt,
} }

proto_form! { SummarizeResponse => SummarizeResponse { summary = summary, usage = usage } }

proto_form! { ReadRequest => ReadToolResultRequest {
    handle = handle, offset = offset, limit = limit, from_end = from_end, pattern = pattern,
} }

proto_form! { GrepRequest => GrepToolResultRequest {
    handle = handle, pattern = pattern, regex = regex, ignore_case = ignore_case,
    context = context, offset = offset, limit = limit, from_end = from_end,
} }

proto_form! { QueryRequest => QueryToolResultRequest {
    handle = handle, filter = filter, offset = offset, limit = limit,
} }

proto_form! { ListRequest => ListToolResultsRequest {
    run_id = run_id, limit = limit, tool_names = tool_names,
} }

proto_form! { ReadResponse => ReadToolResultResponse { 0 = text } }
proto_form! { GrepResponse => GrepToolResultResponse { 0 = text } }
proto_form! { QueryResponse => QueryToolResultResponse { 0 = text } }
proto_form! { ListResponse => ListToolResultsResponse { 0 = text } }

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits;

    #[test]
    fn limits_round_trip_through_protobuf() {
        // Every field away from its default, so that a field the conversion drops shows.
        let json = r#"{"bands":[{"over":50000,"action":{"type":"summarize","model":"m","then":{"type":"spill","preview_chars":300,"then":{"type":"truncate","strategy":"tail","max_tokens":500,"keep_tail_lines":3}}}},{"over":0,"action":{"type":"passthrough"}}],"per_tool":{"ls":[]},"tool_filter":["ls","cat"],"over_tokens":true,"tokenizer":"cl100k_base","strip_ansi":true,"serializer":"json_lines","summary_prompt":"Sum up {tool_name}: {output}","read_tool_name":"page_back"}"#;
        let limits = limits::Limits::from_json(json).expect("valid");
        assert_ne!(limits, limits::Limits::default());
        let back = limits_to_json(limits_to_pb(&limits)).expect("converts");
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
        let back = limits_to_json(decoded).expect("converts");
        let again = limits::Limits::from_value(back).expect("valid again");
        assert_eq!(again.tokenizer, limits::Tokenizer::Cl100kBase);
        assert_eq!(again.bands, limits.bands);
        let unset = limits_to_json(pb::Limits::default()).expect("converts");
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
    fn proto_json_uses_camel_case_and_accepts_both() {
        let request = ReadRequest {
            handle: "r/c.0".into(),
            offset: 3,
            limit: 2,
            from_end: true,
            pattern: None,
        };
        let json = String::from_utf8(request.to_proto_json().expect("encodes")).expect("utf8");
        assert_eq!(
            json,
            r#"{"handle":"r/c.0","offset":"3","limit":"2","fromEnd":true}"#
        );
        let snake = br#"{"handle":"r/c.0","offset":3,"limit":"2","from_end":true}"#;
        assert_eq!(
            ReadRequest::from_proto_json(snake).expect("decodes"),
            request
        );
        let binary = request.to_proto_binary().expect("encodes");
        assert_eq!(
            ReadRequest::from_proto_binary(&binary).expect("decodes"),
            request
        );
    }

    #[test]
    fn invalid_protobuf_config_names_the_field() {
        let call = limits::ToolCall {
            tool_name: "cat".into(),
            ..Default::default()
        };
        let mut pb = ReduceRequest::new(call, ToolOutput::Text("x".into()))
            .to_pb()
            .expect("encodes");
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
        let pb = reduced.to_pb().expect("encodes");
        assert_eq!(pb.overflow_handle.as_deref(), Some("r/c.0"));
        assert_eq!(pb.overflow_content_handle.as_deref(), Some("r/c.0.content"));
        assert_eq!(pb.overflow_bytes, 31_000);
        assert_eq!(ReduceResponse::from_pb(pb).expect("decodes"), reduced);
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
            GrepRequest::from_proto_binary(&grep.to_proto_binary().expect("encodes"))
                .expect("decodes"),
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
            ListRequest::from_proto_json(&list.to_proto_json().expect("encodes")).expect("decodes"),
            list
        );
        let default = ListRequest::from_proto_json(br#"{"runId":"r"}"#).expect("decodes");
        assert_eq!(default.limit, crate::store::DEFAULT_LIST_LIMIT);
    }
}
