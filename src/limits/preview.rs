//! The spill marker the model sees: header, shape sketch, head/tail preview (SPEC §6).

use serde_json::Value;

use super::config::Limits;
use super::pyfmt::{repr, thousands, type_name};
use super::reduce::Unit;
use super::tokens::CHARS_PER_TOKEN;
use super::truncate::{head_chars, tail_chars};

/// Keys a shape sketch names at most.
pub const SKETCH_KEYS: usize = 10;

/// A one-line sketch of a structured value's top level; empty for scalars.
///
/// ```
/// use overspill::limits::preview::shape_sketch;
/// use serde_json::json;
/// assert_eq!(shape_sketch(&json!({"rows": [1], "ok": true})), "{'rows': list, 'ok': bool}");
/// assert_eq!(shape_sketch(&json!([{"a": 1}, 2])), "[2 items of dict]");
/// assert_eq!(shape_sketch(&json!([])), "[0 items of empty]");
/// assert_eq!(shape_sketch(&json!("text")), "");
/// ```
pub fn shape_sketch(value: &Value) -> String {
    match value {
        Value::Object(map) if super::serialize::bytes_leaf(value).is_none() => {
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

/// The model-visible text of a spilled unit: header, optional `shape:` line, preview body.
pub fn spill_message(unit: &Unit<'_>, handle: &str, preview_chars: i64, limits: &Limits) -> String {
    let handle_repr = repr(handle);
    let (size, body) = match unit.text() {
        None => {
            let n = thousands(unit.binary_len());
            (
                format!("{n} bytes (binary)"),
                format!("<{n} bytes of binary data>"),
            )
        }
        Some(text) => {
            let chars = unit.chars();
            // The reference's estimate whatever the tokenizer, as the reference does when a
            // custom tokenizer chose the band: counting a whole spill would cost more than it.
            let size = if limits.over_tokens {
                format!("{} tokens", thousands(chars / CHARS_PER_TOKEN))
            } else {
                format!("{} chars", thousands(chars))
            };
            (size, preview(text, chars, preview_chars.max(0) as u64))
        }
    };
    let mut out = format!(
        "[Tool output too large ({size}); stored to handle {handle_repr}. Read it with {}(handle={handle_repr}, offset=0, limit=200, from_end=False, pattern=None).]",
        limits.read_tool_name
    );
    if !unit.sketch.is_empty() {
        out.push_str("\nshape: ");
        out.push_str(&unit.sketch);
    }
    out.push('\n');
    out.push_str(&body);
    out
}

/// The head/tail preview with a `P`-char content budget. Unlike the reference, `P = 0` shows
/// no tail (Python's `text[-0:]` is the whole text: a documented quirk fixed here).
fn preview(text: &str, chars: u64, budget: u64) -> String {
    if chars <= budget {
        return text.to_owned();
    }
    let head = budget / 2;
    let tail = budget - head;
    format!(
        "{}\n...[{} chars omitted]...\n{}",
        head_chars(text, head as usize),
        thousands(chars - head - tail),
        tail_chars(text, tail as usize)
    )
}
