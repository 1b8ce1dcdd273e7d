//! `grep_tool_result(handle, pattern, regex, ignore_case, context, offset, limit, from_end)`: the
//! lines of a spill that match a literal or a regex, with their line numbers and the lines
//! around them, `grep -n -C` style, in pages bounded like [`read_tool_result`](super::read_tool_result)'s.
//!
//! - Lines are `str.splitlines()` lines, numbered from 1, exactly as `read_tool_result` counts
//!   them (so `offset = N - 1` there shows line `N`).
//! - A matching line is `N:text`, a context line `N-text`; with `context` > 0, groups of lines
//!   that are not adjacent are separated by a `--` line. Matching is on the raw (UTF-8) bytes of
//!   one line at a time; lines show their lossy decoding.
//! - `offset` / `limit` / `from_end` page through the *matches* ([`GrepRequest`]).
//! - The header counts every matching line; the body is cut at 50,000 chars, and a closing note
//!   says how to get the next page (`offset=…`).
//! - Regexes are the `regex` crate's (linear time: no input makes a search backtrack), with
//!   compiled-size limits. A bad or too large pattern is a ModelRetry-style [`ReadError`].
//!
//! The payload is streamed, in two chunks of memory and the page, by the scan that also serves
//! pages by pattern (`read::scan`, which describes its passes).
//!
//! ```
//! use overspill::read::{grep_page, GrepRequest};
//!
//! let request = GrepRequest { handle: "r/c.0".into(), pattern: "err".into(), context: 1, ..Default::default() };
//! let page = grep_page(b"a\nerr 1\nb\nc\nd\nerr 2\n", &request)?;
//! assert_eq!(page, "[handle 'r/c.0': 2 matching line(s) for 'err'; showing matches 1-2]\n1-a\n2:err 1\n3-b\n--\n5-d\n6:err 2");
//! # Ok::<(), overspill::read::ReadError>(())
//! ```

pub(crate) mod render;
#[cfg(test)]
mod tests;

use regex::bytes::RegexBuilder;
use serde::{Deserialize, Serialize};

use super::request::{MAX_READ_LINES, ReadError};
use super::scan::{Matcher, Page, Query, scan_memory, scan_spill};
use super::source::SpillReader;
use super::{ReadOutcomeError, outcome};

/// Matches per page when the caller does not say.
pub const DEFAULT_GREP_LIMIT: i64 = 50;
/// The most context lines shown on each side of a match.
pub const MAX_CONTEXT: i64 = 20;
/// Context lines on each side of a match when the caller does not say (the harness's).
pub const DEFAULT_GREP_CONTEXT: i64 = 2;
/// Matches per page when the caller does not say (the harness's `max_matches`).
pub const DEFAULT_GREP_MATCHES: i64 = 20;
/// The most context lines shown on each side of a match (the harness's clamp).
pub const MAX_GREP_CONTEXT: i64 = 10;
/// The most matches shown per page (the harness's clamp of `max_matches`).
pub const MAX_GREP_MATCHES: i64 = 200;
/// The longest pattern accepted, in bytes.
const MAX_PATTERN_BYTES: usize = 4_096;
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
    /// `pattern` is a regex (the `regex` crate's syntax), not literal text.
    #[cfg_attr(feature = "clap", arg(long))]
    pub regex: bool,
    /// Match without regard to case (Unicode simple case folding).
    #[cfg_attr(feature = "clap", arg(short = 'i', long))]
    pub ignore_case: bool,
    /// Lines to show before and after each match (clamped to 20, [`MAX_CONTEXT`]).
    #[cfg_attr(
        feature = "clap",
        arg(short = 'C', long, default_value_t = 0, allow_negative_numbers = true)
    )]
    pub context: i64,
    /// Matches to skip (from the first, or from the last with `from_end`).
    #[cfg_attr(
        feature = "clap",
        arg(long, default_value_t = 0, allow_negative_numbers = true)
    )]
    pub offset: i64,
    /// Matches to show (clamped to 1,000).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = DEFAULT_GREP_LIMIT, allow_negative_numbers = true))]
    pub limit: i64,
    /// Count `offset` from the last match; the page is still in file order.
    #[cfg_attr(feature = "clap", arg(long))]
    pub from_end: bool,
}

impl Default for GrepRequest {
    fn default() -> Self {
        Self {
            handle: String::new(),
            pattern: String::new(),
            regex: false,
            ignore_case: false,
            context: 0,
            offset: 0,
            limit: DEFAULT_GREP_LIMIT,
            from_end: false,
        }
    }
}

impl GrepRequest {
    /// Check the arguments and compile the pattern, before any read: what the scan looks for.
    pub(crate) fn check(&self) -> Result<Query, ReadError> {
        let retry = |message: &str| Err(ReadError::BadArgument(message.to_owned()));
        if self.offset < 0 {
            return retry("`offset` must be >= 0.");
        }
        if self.limit < 1 {
            return retry("`limit` must be >= 1.");
        }
        if self.context < 0 {
            return retry("`context` must be >= 0.");
        }
        if self.pattern.is_empty() {
            return retry(
                "`pattern` must not be empty. To page through every line, use read_tool_result.",
            );
        }
        if self.pattern.len() > MAX_PATTERN_BYTES {
            return Err(ReadError::BadArgument(format!(
                "`pattern` is {} bytes long; at most {MAX_PATTERN_BYTES} are accepted.",
                self.pattern.len()
            )));
        }
        Ok(Query {
            matcher: matcher(&self.pattern, self.regex, self.ignore_case)?,
            context: self.context.min(MAX_CONTEXT) as u64,
            offset: self.offset,
            from_end: self.from_end,
            limit: self.limit.min(MAX_READ_LINES) as u64,
            numbered: true,
            lossy: false,
        })
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
    let scanned = scan_spill(reader, &request.handle, &query).await;
    let page = scanned.map(|found| render(request, &query, found));
    outcome(&request.handle, page)
}

/// Serve one call from a payload in memory: the pure form of [`grep_tool_result`].
pub fn grep_page(data: &[u8], request: &GrepRequest) -> Result<String, ReadError> {
    let query = request.check()?;
    Ok(render(request, &query, scan_memory(data, &query)))
}

/// The page of `total` matches, from the lines the scan kept.
fn render(request: &GrepRequest, query: &Query, (total, page): (u64, Page)) -> String {
    page.render(request, query.context > 0, total, query.window(total))
}
