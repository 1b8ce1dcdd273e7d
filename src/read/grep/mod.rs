//! `grep_tool_result(handle, pattern, context=2, max_matches=20, offset=0, regex=False)`:
//! pydantic-ai-harness 0.75's search of a spill, the lines that contain a literal substring with
//! their line numbers and `context` lines around them, in the harness's words; `regex` is
//! Overspill's own, off unless asked.
//!
//! - Lines are `str.splitlines()` lines, numbered from 1, exactly as `read_tool_result` counts
//!   them (so `offset = N - 1` there shows line `N`). Matching is on the raw (UTF-8) bytes of one
//!   line at a time; lines show their lossy decoding.
//! - A match of the page is `N:text`, any other line `N-text` (a match outside the page that is
//!   context of one in it too); context windows that overlap or touch merge into one group, and
//!   groups are separated by a `--` line.
//! - `context` is clamped to 10 and `max_matches` to 200; the header counts every matching line
//!   and, when more remain, says how many and the `offset` to continue from.
//! - The page stops before the line that would take it past 50,000 chars (`read::page`), and the
//!   header lists what it left out as `read_tool_result` calls.
//! - A regex is the `regex` crate's (linear time: no input makes a search backtrack), with
//!   compiled-size limits. A bad or too large pattern is a ModelRetry-style [`ReadError`].
//!
//! Requests of the earlier Overspill grep are still served: `limit` is `max_matches`, and
//! `ignore_case` and `from_end` (the page counted back from the last match; the offset to continue
//! from still counts from the first) keep their meaning.
//!
//! The payload is streamed, in two chunks of memory and the page, by the scan that also serves
//! pages by pattern (`read::scan`, which describes its passes).
//!
//! ```
//! use overspill::read::{grep_page, GrepRequest};
//!
//! let request = GrepRequest { handle: "r/c.0".into(), pattern: "err".into(), context: 1, ..Default::default() };
//! let page = grep_page(b"a\nerr 1\nb\nc\nd\nerr 2\n", &request)?;
//! assert_eq!(page, "[handle 'r/c.0': 2 matching line(s); showing 2]\n1-a\n2:err 1\n3-b\n--\n5-d\n6:err 2");
//! # Ok::<(), overspill::read::ReadError>(())
//! ```

#[cfg(test)]
mod tests;

use regex::bytes::RegexBuilder;
use serde::{Deserialize, Serialize};

use super::page::{self, Reader, below};
use super::request::ReadError;
use super::scan::{Matcher, Query};
use super::source::{PageError, SpillReader};
use super::{ReadOutcomeError, outcome};
use crate::limits::pyfmt::{repr, thousands};

/// Context lines on each side of a match when the caller does not say (the harness's).
pub const DEFAULT_GREP_CONTEXT: i64 = 2;
/// Matches per page when the caller does not say (the harness's `max_matches`).
pub const DEFAULT_GREP_MATCHES: i64 = 20;
/// The most context lines shown on each side of a match (the harness's clamp).
pub const MAX_GREP_CONTEXT: i64 = 10;
/// The most matches shown per page (the harness's clamp of `max_matches`).
pub const MAX_GREP_MATCHES: i64 = 200;
/// The longest regex accepted, in bytes.
const MAX_REGEX_BYTES: usize = 4_096;
/// The compiled regex's size limit (`RegexBuilder::size_limit`).
pub(crate) const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// The lazy DFA's cache limit (`RegexBuilder::dfa_size_limit`).
pub(crate) const REGEX_DFA_SIZE_LIMIT: usize = 4 << 20;

/// One `grep_tool_result` call (also `overspill grep`'s arguments).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default, deny_unknown_fields)]
pub struct GrepRequest {
    /// The handle from a spill marker.
    pub handle: String,
    /// The text (or, with `regex`, the regular expression) a line must contain.
    pub pattern: String,
    /// Lines to show before and after each match (clamped to 10).
    #[cfg_attr(
        feature = "clap",
        arg(short = 'C', long, default_value_t = DEFAULT_GREP_CONTEXT, allow_negative_numbers = true)
    )]
    pub context: i64,
    /// Matches to show (clamped to 200); `limit` is its earlier name.
    #[serde(alias = "limit")]
    #[cfg_attr(
        feature = "clap",
        arg(long, alias = "limit", default_value_t = DEFAULT_GREP_MATCHES, allow_negative_numbers = true)
    )]
    pub max_matches: i64,
    /// Matches to skip, to continue a previous search (from the last match with `from_end`).
    #[cfg_attr(
        feature = "clap",
        arg(long, default_value_t = 0, allow_negative_numbers = true)
    )]
    pub offset: i64,
    /// `pattern` is a regex (the `regex` crate's syntax), not literal text (Overspill's own).
    #[cfg_attr(feature = "clap", arg(long))]
    pub regex: bool,
    /// Match without regard to case (Unicode simple case folding; Overspill's own).
    #[cfg_attr(feature = "clap", arg(short = 'i', long))]
    pub ignore_case: bool,
    /// Count `offset` back from the last match; the page is still in file order (Overspill's
    /// own).
    #[cfg_attr(feature = "clap", arg(long))]
    pub from_end: bool,
    /// The read tool's name as the model calls it, in the header's pointers to what a capped
    /// page left out (absent: `read_tool_result`).
    #[cfg_attr(feature = "clap", arg(skip))]
    pub read_tool_name: Option<String>,
}

impl Default for GrepRequest {
    fn default() -> Self {
        Self {
            handle: String::new(),
            pattern: String::new(),
            context: DEFAULT_GREP_CONTEXT,
            max_matches: DEFAULT_GREP_MATCHES,
            offset: 0,
            regex: false,
            ignore_case: false,
            from_end: false,
            read_tool_name: None,
        }
    }
}

impl GrepRequest {
    /// Check the arguments (in the harness's order and words) and compile the pattern, before any
    /// read: what the scan looks for.
    pub(crate) fn check(&self) -> Result<Query, ReadError> {
        if self.pattern.is_empty() {
            return Err(ReadError::ModelRetry("`pattern` must not be empty."));
        }
        if self.context < 0 {
            return Err(ReadError::ModelRetry("`context` must be >= 0."));
        }
        if self.max_matches < 1 {
            return Err(ReadError::ModelRetry("`max_matches` must be >= 1."));
        }
        if self.offset < 0 {
            return Err(ReadError::ModelRetry("`offset` must be >= 0."));
        }
        if (self.regex || self.ignore_case) && self.pattern.len() > MAX_REGEX_BYTES {
            return Err(ReadError::BadArgument(format!(
                "`pattern` is {} bytes long; a regex of at most {MAX_REGEX_BYTES} is accepted.",
                self.pattern.len()
            )));
        }
        Ok(Query {
            matcher: matcher(&self.pattern, self.regex, self.ignore_case)?,
            context: self.context.min(MAX_GREP_CONTEXT) as u64,
            offset: self.offset,
            from_end: self.from_end,
            limit: self.max_matches.min(MAX_GREP_MATCHES) as u64,
            numbered: true,
            lossy: false,
        })
    }

    fn reader(&self) -> Reader<'_> {
        Reader::new(&self.handle, self.read_tool_name.as_deref())
    }
}

/// A grep pattern as the scan tests it: a literal searched as bytes, or a regex.
fn matcher(pattern: &str, is_regex: bool, ignore_case: bool) -> Result<Matcher, ReadError> {
    if !is_regex && !ignore_case {
        return Ok(Matcher::literal(pattern));
    }
    let source = match is_regex {
        true => pattern.to_owned(),
        false => regex::escape(pattern),
    };
    let regex = RegexBuilder::new(&source)
        .case_insensitive(ignore_case)
        .multi_line(true)
        .crlf(true)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
        .build()
        .map_err(|e| ReadError::BadArgument(bad_regex(&e)))?;
    let per_line = is_regex && anchors_to_lines(&source);
    Ok(Matcher::Regex { regex, per_line })
}

/// The model's retry message for a pattern the `regex` crate refuses.
fn bad_regex(error: &regex::Error) -> String {
    match error {
        regex::Error::CompiledTooBig(limit) => format!(
            "`pattern` compiles to more than {limit} bytes: use a simpler regex (fewer or smaller \
             repetitions, shorter alternations), or a literal pattern with regex=false."
        ),
        e => format!(
            "`pattern` is not a valid regex (Rust `regex` syntax; no look-around or \
             backreferences). Escape special characters or set regex=false for a literal \
             search.\n{e}"
        ),
    }
}

/// Whether a regex uses `^`, `$`, `\A` or `\z`, which mean a line's start or end here.
fn anchors_to_lines(source: &str) -> bool {
    regex_syntax::ParserBuilder::new()
        .build()
        .parse(source)
        .map(|hir| {
            let looks = hir.properties().look_set();
            looks.contains_anchor_line() || looks.contains_anchor_haystack()
        })
        // A regex that compiled parses; if it did not, the per-line path is always correct.
        .unwrap_or(true)
}

/// Serve one `grep_tool_result` call from `reader`.
///
/// An unknown or refused handle is [`ReadOutcomeError::NoStoredResult`]; other store failures
/// are [`ReadOutcomeError::Store`], for an activity to retry.
pub async fn grep_tool_result<R: SpillReader>(
    reader: &R,
    request: &GrepRequest,
) -> Result<String, ReadOutcomeError> {
    let query = request.check()?;
    outcome(&request.handle, grep_spill(reader, request, &query).await)
}

async fn grep_spill<R: SpillReader>(
    reader: &R,
    request: &GrepRequest,
    query: &Query,
) -> Result<String, PageError> {
    let scanned = page::scan_spill(reader, &request.handle, query, true).await?;
    Ok(render(request, query, scanned))
}

/// Serve one call from a payload in memory: the pure form of [`grep_tool_result`].
pub fn grep_page(data: &[u8], request: &GrepRequest) -> Result<String, ReadError> {
    let query = request.check()?;
    Ok(render(
        request,
        &query,
        page::scan_memory(data, &query, true),
    ))
}

/// The page of the scan's matches: the header, with how many more there are and what the cap
/// left out, then the lines.
fn render(request: &GrepRequest, query: &Query, scanned: page::Scanned) -> String {
    let page::Scanned {
        total,
        page,
        cut_at,
    } = scanned;
    let next = query.window(total).start + page.shown;
    let remaining = match total.checked_sub(next) {
        Some(more @ 1..) => format!(", {} more; continue with offset={next}", thousands(more)),
        _ => String::new(),
    };
    let header = format!(
        "[handle {}: {} matching line(s); showing {}{remaining}{}]",
        repr(&request.handle),
        thousands(total),
        page.shown,
        request.reader().capped(&page, cut_at, None)
    );
    below(header, &page.lines)
}
