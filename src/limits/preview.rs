//! The spill marker the model sees: a header naming the size, the handle and the read-back
//! call, the shape line of a structured value, and a head/tail preview.

use super::config::Limits;
use super::pyfmt::{repr, thousands};
use super::text::{head_chars, tail_chars};
use super::unit::Unit;

/// The model-visible text of a spilled unit: header, optional `shape:` line, preview body.
pub(crate) fn spill_message(
    unit: &Unit,
    handle: &str,
    preview_chars: i64,
    limits: &Limits,
) -> String {
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
            // The release's own estimate whatever the tokenizer, as the reference does when a
            // custom tokenizer chose the band.
            let size = if limits.over_tokens {
                format!(
                    "{} tokens",
                    thousands(limits.harness.estimate().count(text))
                )
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
