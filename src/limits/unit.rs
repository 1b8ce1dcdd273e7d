//! The unit the engine measures and reduces: one part of a result (the return value, or the
//! envelope's text content) as text or bytes, with the shape sketch of a structured value.

use std::borrow::Cow;

use bytes::Bytes;
use serde_json::Value;

use super::config::Limits;
use super::output::{ByteString, ToolOutput};
use super::pyfmt::{repr, type_name};
use super::{ansi, serialize};

/// One measurable part of a result (the return value, or the envelope's text content).
///
/// Never copies the output: clamping a 100 MB string copies only what is kept, and a spill hands
/// the store the output's own buffer.
#[derive(Debug, Clone)]
pub struct Unit<'a> {
    text: Option<UnitText<'a>>,
    /// The text's length in chars, counted once on first use (a 100 MB count is not free).
    chars: std::sync::OnceLock<u64>,
    binary: Bytes,
    /// The top-level shape sketch of a structured value (empty otherwise).
    pub sketch: String,
}

/// A unit's text: borrowed from the result, or shared with the store a spill writes to.
#[derive(Debug, Clone)]
pub(super) enum UnitText<'a> {
    Borrowed(&'a str),
    Shared(ByteString),
}

impl<'a> Unit<'a> {
    /// Build the unit for an output: serialize structured values, strip ANSI if asked. A text
    /// or binary output is shared, not copied, so [`Unit::data`] hands a spill its own buffer.
    pub fn new(output: &ToolOutput, limits: &Limits) -> Self {
        match output {
            ToolOutput::Text(text) => {
                Self::from_text(UnitText::Shared(text.clone()), String::new(), limits)
            }
            ToolOutput::Json(value) => {
                let text = serialize::render(value, limits.serializer).into();
                Self::from_text(UnitText::Shared(text), shape_sketch(value), limits)
            }
            ToolOutput::Bytes(data) => Self {
                text: None,
                chars: std::sync::OnceLock::new(),
                binary: data.clone(),
                sketch: String::new(),
            },
        }
    }

    pub(super) fn from_text(text: UnitText<'a>, sketch: String, limits: &Limits) -> Self {
        let text = match text {
            UnitText::Borrowed(t) if limits.strip_ansi => match ansi::strip_ansi(t) {
                Cow::Borrowed(t) => UnitText::Borrowed(t),
                Cow::Owned(t) => UnitText::Shared(t.into()),
            },
            UnitText::Shared(t) if limits.strip_ansi => match ansi::strip_ansi(&t) {
                Cow::Borrowed(_) => UnitText::Shared(t),
                Cow::Owned(stripped) => UnitText::Shared(stripped.into()),
            },
            t => t,
        };
        Self {
            text: Some(text),
            chars: std::sync::OnceLock::new(),
            binary: Bytes::new(),
            sketch,
        }
    }

    /// The text, or `None` for a binary unit.
    pub fn text(&self) -> Option<&str> {
        match self.text.as_ref()? {
            UnitText::Borrowed(t) => Some(t),
            UnitText::Shared(t) => Some(t),
        }
    }

    /// The text's length in chars (Python `len(str)`; 0 for binary).
    pub fn chars(&self) -> u64 {
        *self
            .chars
            .get_or_init(|| self.text().map_or(0, super::text::char_len))
    }

    /// The binary payload's length (0 for text).
    pub fn binary_len(&self) -> u64 {
        self.binary.len() as u64
    }

    /// What a spill stores: the UTF-8 of the text, or the binary payload.
    pub fn data(&self) -> Bytes {
        match &self.text {
            Some(UnitText::Shared(text)) => text.clone().into_bytes(),
            Some(UnitText::Borrowed(text)) => Bytes::copy_from_slice(text.as_bytes()),
            None => self.binary.clone(),
        }
    }
}

/// Keys a shape sketch names at most.
pub const SKETCH_KEYS: usize = 10;

/// A one-line sketch of a structured value's top level; empty for scalars.
///
/// ```
/// use overspill::limits::unit::shape_sketch;
/// use serde_json::json;
/// assert_eq!(shape_sketch(&json!({"rows": [1], "ok": true})), "{'rows': list, 'ok': bool}");
/// assert_eq!(shape_sketch(&json!([{"a": 1}, 2])), "[2 items of dict]");
/// assert_eq!(shape_sketch(&json!([])), "[0 items of empty]");
/// assert_eq!(shape_sketch(&json!("text")), "");
/// ```
pub fn shape_sketch(value: &Value) -> String {
    match value {
        Value::Object(map) if serialize::bytes_leaf(value).is_none() => {
            let keys: Vec<String> = map
                .iter()
                .take(SKETCH_KEYS)
                .map(|(k, v)| format!("{}: {}", repr(k), type_name(v)))
                .collect();
            let more = if map.len() > SKETCH_KEYS {
                format!(", ... ({} keys)", map.len())
            } else {
                String::new()
            };
            format!("{{{}{more}}}", keys.join(", "))
        }
        Value::Array(items) => format!(
            "[{} items of {}]",
            items.len(),
            items.first().map_or("empty", type_name)
        ),
        _ => String::new(),
    }
}
