//! The unit the engine measures and reduces: one part of a result (the return value, or the
//! envelope's text content) as text or bytes, with the shape sketch of a structured value.

use std::borrow::Cow;

use bytes::Bytes;
use serde_json::Value;

use super::config::Limits;
use super::output::{ByteString, ToolOutput};
use super::pyfmt::{repr, type_name};
use super::{ansi, serialize, text};

/// One measurable part of a result (the return value, or the envelope's text content).
///
/// Shares the output's buffer: clamping a 100 MB string copies only what is kept, and a spill
/// hands the store the output's own bytes.
#[derive(Debug, Clone)]
pub struct Unit {
    /// The text, or `None` for a binary unit.
    text: Option<ByteString>,
    /// The text's length in chars (0 for binary).
    chars: u64,
    binary: Bytes,
    /// The top-level shape sketch of a structured value (empty otherwise).
    pub sketch: String,
}

impl Unit {
    /// Build the unit for an output: serialize structured values, strip ANSI if asked. A text
    /// or binary output is shared, not copied, so [`Unit::data`] hands a spill its own buffer.
    pub fn new(output: &ToolOutput, limits: &Limits) -> Self {
        match output {
            ToolOutput::Text(text) => Self::from_text(text.clone(), String::new(), limits),
            ToolOutput::Json(value) => {
                let text = serialize::render(value, limits.serializer).into();
                Self::from_text(text, shape_sketch(value), limits)
            }
            ToolOutput::Bytes(data) => Self {
                text: None,
                chars: 0,
                binary: data.clone(),
                sketch: String::new(),
            },
        }
    }

    /// A text unit (ANSI stripped if `limits` ask), with the shape `sketch` of its value.
    pub(super) fn from_text(text: ByteString, sketch: String, limits: &Limits) -> Self {
        let text = if limits.strip_ansi
            && let Cow::Owned(stripped) = ansi::strip_ansi(&text)
        {
            stripped.into()
        } else {
            text
        };
        Self {
            chars: text::char_len(&text),
            text: Some(text),
            binary: Bytes::new(),
            sketch,
        }
    }

    /// The text, or `None` for a binary unit.
    pub fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// The text's length in chars (Python `len(str)`; 0 for binary).
    pub fn chars(&self) -> u64 {
        self.chars
    }

    /// The binary payload's length (0 for text).
    pub fn binary_len(&self) -> u64 {
        self.binary.len() as u64
    }

    /// What a spill stores: the UTF-8 of the text, or the binary payload.
    pub fn data(&self) -> Bytes {
        match &self.text {
            Some(text) => text.clone().into_bytes(),
            None => self.binary.clone(),
        }
    }
}

/// Keys a shape sketch names at most.
const SKETCH_KEYS: usize = 10;

/// A one-line sketch of a structured value's top level; empty for scalars.
fn shape_sketch(value: &Value) -> String {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::shape_sketch;

    #[test]
    fn sketches_name_the_top_level() {
        let sketch = shape_sketch(&json!({"rows": [1], "ok": true}));
        assert_eq!(sketch, "{'rows': list, 'ok': bool}");
        assert_eq!(shape_sketch(&json!([{"a": 1}, 2])), "[2 items of dict]");
        assert_eq!(shape_sketch(&json!([])), "[0 items of empty]");
        assert_eq!(shape_sketch(&json!("text")), "");
    }
}
