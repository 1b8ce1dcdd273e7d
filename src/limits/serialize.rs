//! Rendering structured returns to text as pydantic-core's `to_json` does (SPEC §8).
//!
//! Compact JSON by default; `indented_json` and `json_lines` give a pageable layout. Bytes leaves
//! (`{"$bytes_b64": "…"}`) render as the text they decode to, or, when any of them is not UTF-8,
//! every bytes leaf as URL-safe base64 with padding (decided per record for `json_lines`).

use std::io;

use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};

use super::config::SerializerKind;

/// The key of a bytes leaf object: `{"$bytes_b64": "<standard base64>"}`.
pub const BYTES_LEAF_KEY: &str = "$bytes_b64";

/// The decoded bytes of a bytes leaf, if `value` is one.
pub fn bytes_leaf(value: &Value) -> Option<Vec<u8>> {
    let Value::Object(map) = value else {
        return None;
    };
    let (key, Value::String(b64)) = map.iter().next()? else {
        return None;
    };
    if map.len() != 1 || key != BYTES_LEAF_KEY {
        return None;
    }
    base64::engine::general_purpose::STANDARD
        .decode(b64.as_bytes())
        .ok()
}

/// Render `value` with the chosen serializer (`None`: compact JSON, no separator escaping).
///
/// ```
/// use overspill::limits::{serialize::render, SerializerKind};
/// let v = serde_json::json!([{"a": 1}, {"a": [1, 2]}]);
/// assert_eq!(render(&v, None), r#"[{"a":1},{"a":[1,2]}]"#);
/// assert_eq!(render(&v, Some(SerializerKind::JsonLines)), "{\"a\":1}\n{\"a\":[1,2]}");
/// assert_eq!(render(&serde_json::json!({"a": 1}), Some(SerializerKind::IndentedJson)), "{\n  \"a\": 1\n}");
/// ```
pub fn render(value: &Value, serializer: Option<SerializerKind>) -> String {
    match (serializer, value) {
        (None, _) => compact(value),
        (Some(SerializerKind::JsonLines), Value::Array(records)) => {
            escape_separators(records.iter().map(compact).collect::<Vec<_>>().join("\n"))
        }
        (Some(_), _) => escape_separators(indented(value)),
    }
}

/// Compact JSON, `{"a":1,"b":[1,2]}`.
pub fn compact(value: &Value) -> String {
    write(value, CompactFormatter)
}

/// `to_json(v, indent=2)`.
pub fn indented(value: &Value) -> String {
    write(value, PrettyFormatter::with_indent(b"  "))
}

fn write<F: Formatter>(value: &Value, formatter: F) -> String {
    let value = resolve_bytes(value);
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PyFloats(formatter));
    // Serializing a `Value` into a Vec cannot fail.
    let _ = value.serialize(&mut ser);
    String::from_utf8(out).unwrap_or_default()
}

/// Escape the separators that would knock read-back offsets off the line grid.
fn escape_separators(text: String) -> String {
    if !text.contains(['\u{85}', '\u{2028}', '\u{2029}']) {
        return text;
    }
    text.replace('\u{85}', "\\u0085")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// Replace bytes leaves by strings: their UTF-8 text, or (if any leaf is not UTF-8) base64.
fn resolve_bytes(value: &Value) -> std::borrow::Cow<'_, Value> {
    fn any_leaf(v: &Value, pred: &dyn Fn(&[u8]) -> bool) -> bool {
        match v {
            Value::Array(items) => items.iter().any(|i| any_leaf(i, pred)),
            Value::Object(map) => match bytes_leaf(v) {
                Some(bytes) => pred(&bytes),
                None => map.values().any(|i| any_leaf(i, pred)),
            },
            _ => false,
        }
    }
    fn replace(v: &Value, as_base64: bool) -> Value {
        match v {
            Value::Array(items) => items.iter().map(|i| replace(i, as_base64)).collect(),
            Value::Object(map) => match bytes_leaf(v) {
                Some(bytes) if as_base64 => {
                    Value::String(base64::engine::general_purpose::URL_SAFE.encode(bytes))
                }
                Some(bytes) => Value::String(String::from_utf8_lossy(&bytes).into_owned()),
                None => Value::Object(
                    map.iter()
                        .map(|(k, i)| (k.clone(), replace(i, as_base64)))
                        .collect(),
                ),
            },
            other => other.clone(),
        }
    }
    if !any_leaf(value, &|_| true) {
        return std::borrow::Cow::Borrowed(value);
    }
    let as_base64 = any_leaf(value, &|b| std::str::from_utf8(b).is_err());
    std::borrow::Cow::Owned(replace(value, as_base64))
}

/// pydantic-core's float style: shortest round-trip digits, `1e+20` / `1e-7` exponents.
struct PyFloats<F>(F);

impl<F: Formatter> Formatter for PyFloats<F> {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        let mut buf = Vec::new();
        self.0.write_f64(&mut buf, value)?;
        match buf.iter().position(|&b| b == b'e') {
            Some(e) if buf.get(e + 1) != Some(&b'-') => {
                writer.write_all(&buf[..=e])?;
                writer.write_all(b"+")?;
                writer.write_all(&buf[e + 1..])
            }
            _ => writer.write_all(&buf),
        }
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}
