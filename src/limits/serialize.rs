//! Rendering structured returns to text as pydantic-core's `to_json` does.
//!
//! Compact JSON by default; `indented_json` and `json_lines` give a pageable layout. Bytes leaves
//! (`{"$bytes_b64": "…"}`) render as the text they decode to, or, when any of them is not UTF-8,
//! every bytes leaf as URL-safe base64 with padding (decided per record for `json_lines`).

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The serializer presets for structured returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SerializerKind {
    /// `to_json(v, indent=2)`: one field per line.
    IndentedJson,
    /// One compact record per line for lists; `indented_json` for anything else.
    JsonLines,
}

/// The key of a bytes leaf object: `{"$bytes_b64": "<standard base64>"}`.
const BYTES_LEAF_KEY: &str = "$bytes_b64";

/// The decoded bytes of a bytes leaf, if `value` is one.
pub(super) fn bytes_leaf(value: &Value) -> Option<Vec<u8>> {
    let map = value.as_object().filter(|map| map.len() == 1)?;
    let b64 = map.get(BYTES_LEAF_KEY)?.as_str()?;
    STANDARD.decode(b64).ok()
}

/// Render `value` with the chosen serializer (`None`: compact JSON, no separator escaping).
pub(crate) fn render(value: &Value, serializer: Option<SerializerKind>) -> String {
    match (serializer, value) {
        (None, _) => compact(value),
        (Some(SerializerKind::JsonLines), Value::Array(records)) => {
            let lines: Vec<String> = records.iter().map(compact).collect();
            escape_separators(lines.join("\n"))
        }
        (Some(_), _) => escape_separators(indented(value)),
    }
}

/// Compact JSON, `{"a":1,"b":[1,2]}`, bytes leaves resolved.
pub(crate) fn compact(value: &Value) -> String {
    // Serializing a `Value` to a string cannot fail.
    serde_json::to_string(&resolve_bytes(value)).unwrap_or_default()
}

/// `to_json(v, indent=2)`, bytes leaves resolved.
pub(super) fn indented(value: &Value) -> String {
    serde_json::to_string_pretty(&resolve_bytes(value)).unwrap_or_default()
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
fn resolve_bytes(value: &Value) -> Cow<'_, Value> {
    fn leaves(v: &Value, out: &mut Vec<Vec<u8>>) {
        match (v, bytes_leaf(v)) {
            (_, Some(bytes)) => out.push(bytes),
            (Value::Array(items), None) => items.iter().for_each(|i| leaves(i, out)),
            (Value::Object(map), None) => map.values().for_each(|i| leaves(i, out)),
            _ => {}
        }
    }
    fn replace(v: &Value, as_base64: bool) -> Value {
        match (v, bytes_leaf(v)) {
            (_, Some(bytes)) if as_base64 => Value::String(URL_SAFE.encode(bytes)),
            (_, Some(bytes)) => Value::String(String::from_utf8_lossy(&bytes).into_owned()),
            (Value::Array(items), None) => items.iter().map(|i| replace(i, as_base64)).collect(),
            (Value::Object(map), None) => {
                let entries = map.iter().map(|(k, i)| (k.clone(), replace(i, as_base64)));
                Value::Object(entries.collect())
            }
            (other, None) => other.clone(),
        }
    }
    let mut found = Vec::new();
    leaves(value, &mut found);
    if found.is_empty() {
        return Cow::Borrowed(value);
    }
    let as_base64 = found.iter().any(|b| std::str::from_utf8(b).is_err());
    Cow::Owned(replace(value, as_base64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn presets() {
        let v = json!([{"a": 1}, {"a": [1, 2]}]);
        assert_eq!(render(&v, None), r#"[{"a":1},{"a":[1,2]}]"#);
        let lines = render(&v, Some(SerializerKind::JsonLines));
        assert_eq!(lines, "{\"a\":1}\n{\"a\":[1,2]}");
        let indented = render(&json!({"a": 1}), Some(SerializerKind::IndentedJson));
        assert_eq!(indented, "{\n  \"a\": 1\n}");
    }

    #[test]
    fn floats_render_as_pydantic_core_does() {
        // Recorded from pydantic_core.to_json on the same list.
        assert_eq!(
            compact(&json!([
                1.0,
                2.5,
                1e20,
                1e-7,
                1e16,
                1e15,
                0.1,
                123456789.123,
                1e-5,
                5e-324
            ])),
            "[1.0,2.5,1e+20,1e-7,1e+16,1000000000000000.0,0.1,123456789.123,0.00001,5e-324]"
        );
    }

    #[test]
    fn separators_are_escaped_only_by_the_presets() {
        let v = json!({"s": "a\u{2028}b"});
        assert_eq!(render(&v, None), "{\"s\":\"a\u{2028}b\"}");
        assert_eq!(
            render(&v, Some(SerializerKind::IndentedJson)),
            "{\n  \"s\": \"a\\u2028b\"\n}"
        );
    }

    #[test]
    fn bytes_leaves_switch_to_urlsafe_base64_together() {
        let leaf = |b: &[u8]| json!({ BYTES_LEAF_KEY: base64::engine::general_purpose::STANDARD.encode(b) });
        assert_eq!(compact(&json!([leaf(b"ok")])), r#"["ok"]"#);
        assert_eq!(
            compact(&json!([leaf(b"ok"), leaf(b"\xff\x00")])),
            r#"["b2s=","_wA="]"#
        );
        let lines = render(
            &json!([leaf(b"ok"), leaf(b"\xff")]),
            Some(SerializerKind::JsonLines),
        );
        assert_eq!(lines, "\"ok\"\n\"_w==\"");
    }
}
