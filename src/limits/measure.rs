//! Measuring a unit: bytes for binary, code points for text, or estimated tokens.

use super::config::Limits;
use super::reduce::Unit;

/// Chars per token in the reference's token heuristic (`len(text) // 4`).
pub const CHARS_PER_TOKEN: u64 = 4;

/// The number of Unicode code points (Python `len(str)`).
pub fn chars(text: &str) -> u64 {
    text.chars().count() as u64
}

/// The size a band threshold is compared with: binary → bytes (even with `over_tokens`);
/// text → chars, or tokens with `over_tokens` (the custom tokenizer if set).
pub fn size(unit: &Unit<'_>, limits: &Limits) -> u64 {
    match unit.text() {
        None => unit.binary_len(),
        Some(text) if limits.over_tokens => match &limits.tokenizer {
            Some(tokenizer) => (tokenizer.0)(text),
            None => unit.chars() / CHARS_PER_TOKEN,
        },
        Some(_) => unit.chars(),
    }
}
