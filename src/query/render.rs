//! The results a query keeps, and the text the model sees: a header counting every result, one
//! compact JSON value per line (each cut at [`MAX_VALUE_CHARS`] with a marker), the body cut
//! before the value that would take it past 50,000 chars, and notes on how to get the rest.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::limits::pyfmt::{repr, thousands};
use crate::read::MAX_READ_CHARS;

/// The most chars of one result shown; a longer one is cut with a marker.
pub const MAX_VALUE_CHARS: usize = 10_000;

/// A value's compact JSON text: the first `cap` chars kept, every char counted.
struct Capped {
    text: String,
    chars: usize,
    cap: usize,
}

impl fmt::Write for Capped {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for c in s.chars() {
            if self.chars < self.cap {
                self.text.push(c);
            }
            self.chars += 1;
        }
        Ok(())
    }
}

/// The page being collected, and the counts the header gives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Page {
    offset: u64,
    limit: u64,
    /// Input values filtered.
    pub(crate) inputs: u64,
    /// Results in all.
    total: u64,
    /// The shown results' lines, and their chars with separators.
    lines: Vec<String>,
    chars: usize,
    /// The first result of the window left out because the body was full.
    capped_at: Option<u64>,
    /// Inputs whose filtering raised an error, and the first: input number, message.
    errors: u64,
    first_error: Option<(u64, String)>,
}

impl Page {
    pub(crate) fn new(offset: u64, limit: u64) -> Self {
        Self {
            offset,
            limit,
            inputs: 0,
            total: 0,
            lines: Vec::new(),
            chars: 0,
            capped_at: None,
            errors: 0,
            first_error: None,
        }
    }

    /// Count one result; keep it (`write` renders it) if the window shows it and it fits.
    pub(crate) fn result(&mut self, write: impl FnOnce(&mut dyn fmt::Write)) {
        let index = self.total;
        self.total += 1;
        if index < self.offset || index - self.offset >= self.limit || self.capped_at.is_some() {
            return;
        }
        let mut value = Capped {
            text: String::new(),
            chars: 0,
            cap: MAX_VALUE_CHARS,
        };
        write(&mut value);
        let mut line = value.text;
        let mut chars = value.chars.min(MAX_VALUE_CHARS);
        if value.chars > MAX_VALUE_CHARS {
            let marker = format!(
                "…[value cut at {} of {} chars: narrow the filter to see the rest]",
                thousands(MAX_VALUE_CHARS as u64),
                thousands(value.chars as u64)
            );
            chars += marker.chars().count();
            line.push_str(&marker);
        }
        let separator = usize::from(!self.lines.is_empty());
        if self.chars + separator + chars > MAX_READ_CHARS && !self.lines.is_empty() {
            self.capped_at = Some(index);
            return;
        }
        self.chars += separator + chars;
        self.lines.push(line);
    }

    /// Count an input whose filtering failed; `message` is asked for the first only, and cut
    /// at [`MAX_VALUE_CHARS`] like a result (jq's `error(v)` carries any value).
    pub(crate) fn error(&mut self, input: u64, message: impl FnOnce() -> String) {
        self.errors += 1;
        if self.first_error.is_none() {
            let mut message = message();
            if let Some((cut, _)) = message.char_indices().nth(MAX_VALUE_CHARS) {
                let chars = message.chars().count();
                message.truncate(cut);
                message.push_str(&format!(
                    "…[message cut at {} of {} chars]",
                    thousands(MAX_VALUE_CHARS as u64),
                    thousands(chars as u64)
                ));
            }
            self.first_error = Some((input, message));
        }
    }

    /// The text the model sees for `handle` and `filter`.
    pub(crate) fn render(&self, handle: &str, filter: &str) -> String {
        let shown =
            self.offset.min(self.total)..self.offset.min(self.total) + self.lines.len() as u64;
        let mut out = format!(
            "[handle {}: {} result(s) of filter {} over {} JSON value(s); ",
            repr(handle),
            thousands(self.total),
            repr(filter),
            thousands(self.inputs),
        );
        match shown.is_empty() {
            true => out.push_str("showing none"),
            false => out.push_str(&format!(
                "showing results {}-{}",
                shown.start + 1,
                shown.end
            )),
        }
        if self.capped_at.is_some() {
            out.push_str(", output capped");
        }
        out.push(']');
        for line in &self.lines {
            out.push('\n');
            out.push_str(line);
        }
        let mut note = |text: String| {
            out.push('\n');
            out.push_str(&text);
        };
        if let Some(next) = self.capped_at {
            note(format!(
                "[output capped at {} chars before result {}: call query_tool_result again with \
                 offset={next} for the next results]",
                thousands(MAX_READ_CHARS as u64),
                next + 1,
            ));
        } else if shown.end < self.total {
            note(format!(
                "[{} more result(s): call query_tool_result again with offset={}]",
                thousands(self.total - shown.end),
                shown.end
            ));
        }
        if let Some((input, message)) = &self.first_error {
            note(format!(
                "[the filter raised an error on {} JSON value(s); the first, on value {}: {}]",
                thousands(self.errors),
                thousands(*input),
                message
            ));
        }
        out
    }
}
