//! The paging rules, exactly as the reference applies them: the arguments and their checks, the
//! window of lines a call selects, and the text the model sees.
//!
//! - `offset < 0` and `limit < 1` are ModelRetry errors, checked before any read, as is a
//!   `pattern` with `unit='bytes'`; `limit` is clamped to 1,000 lines (50,000 bytes).
//! - The window is `lines[offset : offset + limit]`, or with `from_end` the `limit` lines ending
//!   `offset` lines before the end (still in file order). With a pattern, "lines" are the
//!   matching lines only.
//! - The header counts the lines (or matching lines) in all, with thousands separators, and says
//!   how many are shown. Under 0.62 the body is the window joined by `\n`, cut to 50,000 chars
//!   (`render`); under 0.75 it stops before the line that would cross them and the header says
//!   where the rest is (`read::page`).
//! - `unit='bytes'` slices the raw bytes instead (`read::bytes`).

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::limits::Harness;
use crate::limits::pyfmt::{repr, thousands};

/// Lines returned by one call at most.
pub(crate) const MAX_READ_LINES: i64 = 1_000;
/// Chars of joined body returned by one call at most.
pub(crate) const MAX_READ_CHARS: usize = 50_000;
/// Bytes returned by one call with `unit='bytes'` at most (the clamp of its `limit`).
pub(crate) const MAX_READ_BYTES: i64 = MAX_READ_CHARS as i64;
/// Bytes of lines that always decode to more chars than a page shows (a char takes at most 4
/// bytes), so a page never needs more than this many bytes from its first line on.
pub(crate) const PAGE_BYTES_CAP: usize = 4 * (MAX_READ_CHARS + 4);
/// Lines per page when the caller does not say.
pub const DEFAULT_LIMIT: i64 = 200;

/// One `read_tool_result` call (also `overspill read`'s arguments).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct ReadRequest {
    /// The handle from a spill marker.
    pub handle: String,
    /// Lines to skip (from the start, or from the end with `from_end`); with `pattern`, matching
    /// lines. The header says "matching line(s)" either way, as the reference does.
    #[cfg_attr(
        feature = "clap",
        arg(long, default_value_t = 0, allow_negative_numbers = true)
    )]
    pub offset: i64,
    /// Lines to return (clamped to 1,000).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = DEFAULT_LIMIT, allow_negative_numbers = true))]
    pub limit: i64,
    /// Count `offset` from the end; the page is still in file order.
    #[cfg_attr(feature = "clap", arg(long))]
    pub from_end: bool,
    /// Keep only lines containing this literal substring (never a regex).
    #[cfg_attr(feature = "clap", arg(long))]
    pub pattern: Option<String>,
    /// What `offset` and `limit` count: `lines`, or `bytes` (a slice of the raw bytes, for
    /// output without useful line breaks such as minified JSON).
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t))]
    pub unit: ReadUnit,
    /// The pydantic-ai-harness release whose page to produce (`0.62`, `0.75`); absent: the
    /// newest.
    #[cfg_attr(feature = "clap", arg(long))]
    pub harness: Option<Harness>,
    /// The read tool's name as the model calls it, in the header's pointers to the rest
    /// (absent: `read_tool_result`).
    #[cfg_attr(feature = "clap", arg(skip))]
    pub read_tool_name: Option<String>,
}

impl Default for ReadRequest {
    fn default() -> Self {
        Self {
            handle: String::new(),
            offset: 0,
            limit: DEFAULT_LIMIT,
            from_end: false,
            pattern: None,
            unit: ReadUnit::Lines,
            harness: None,
            read_tool_name: None,
        }
    }
}

/// What a read's `offset` and `limit` count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum ReadUnit {
    /// Lines, as `str.splitlines()` splits the text.
    #[default]
    Lines,
    /// Bytes of the payload as stored.
    Bytes,
}

/// A read the model must retry with other arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// Bad `offset` or `limit`; the message is the reference's ModelRetry text.
    #[error("{0}")]
    ModelRetry(&'static str),
    /// A bad argument of a call the reference does not have (`grep_tool_result`'s pattern,
    /// context, …); the message says what to change.
    #[error("{0}")]
    BadArgument(String),
}

impl ReadRequest {
    /// Validate the arguments before any read; returns the clamped limit.
    pub fn checked_limit(&self) -> Result<u64, ReadError> {
        if self.offset < 0 {
            return Err(ReadError::ModelRetry("`offset` must be >= 0."));
        }
        if self.limit < 1 {
            return Err(ReadError::ModelRetry("`limit` must be >= 1."));
        }
        match self.unit {
            ReadUnit::Bytes if self.pattern.is_some() => Err(ReadError::ModelRetry(
                "`pattern` filters lines, so it cannot be combined with `unit='bytes'`.",
            )),
            ReadUnit::Bytes => Ok(self.limit.min(MAX_READ_BYTES) as u64),
            ReadUnit::Lines => Ok(self.limit.min(MAX_READ_LINES) as u64),
        }
    }

    /// The release whose page to produce.
    pub fn harness(&self) -> Harness {
        self.harness.unwrap_or(Harness::NEWEST)
    }
}

/// Items `[start, end)` of `total` that `offset`, `limit` and `from_end` select: from the start,
/// or the `limit` items ending `offset` items before the end (still in order).
pub(crate) fn window(offset: i64, from_end: bool, total: u64, limit: u64) -> Range<u64> {
    let offset = u64::try_from(offset).unwrap_or(0);
    if from_end {
        let end = total.saturating_sub(offset);
        end.saturating_sub(limit)..end
    } else {
        let start = offset.min(total);
        start..start.saturating_add(limit).min(total)
    }
}

/// The text for a handle the store does not have or refuses; never the store's own error.
pub fn no_stored_result(handle: &str) -> String {
    format!(
        "[No stored tool result for handle {}. Use the exact handle string from a \"[Tool output too large ... stored to handle ...]\" marker; if the result is no longer available, re-run the original tool.]",
        repr(handle)
    )
}

/// The page: a header counting `total` lines and showing `shown`, then the body of `lines` (the
/// window's lines from its first on, as raw bytes; they may stop early once the body is capped).
pub(crate) fn render<'a>(
    handle: &str,
    total: u64,
    shown: u64,
    lines: impl Iterator<Item = &'a [u8]>,
) -> String {
    let mut body = Body::default();
    for line in lines {
        let line = &line[..line.len().min(PAGE_BYTES_CAP)];
        if !body.line(&String::from_utf8_lossy(line)) {
            break;
        }
    }
    let header = format!(
        "[handle {}: {} matching line(s); showing {shown}{}]",
        repr(handle),
        thousands(total),
        if body.capped { ", output capped" } else { "" }
    );
    body.below(header)
}

/// A body of lines joined by `\n`, cut at [`MAX_READ_CHARS`] chars.
#[derive(Default)]
pub(crate) struct Body {
    text: String,
    chars: usize,
    lines: usize,
    pub(crate) capped: bool,
}

impl Body {
    /// Append `line`; false once the body is full.
    pub(crate) fn line(&mut self, line: &str) -> bool {
        let separator = (self.lines > 0).then_some('\n');
        self.lines += 1;
        for c in separator.into_iter().chain(line.chars()) {
            if self.chars == MAX_READ_CHARS {
                self.capped = true;
                return false;
            }
            self.text.push(c);
            self.chars += 1;
        }
        true
    }

    /// `header`, then the body on the lines below it, if it has any.
    pub(crate) fn below(self, header: String) -> String {
        match self.text.is_empty() {
            true => header,
            false => header + "\n" + &self.text,
        }
    }
}
