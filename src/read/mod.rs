//! `read_tool_result(handle, offset, limit, from_end, pattern, unit)`: bounded paging into a
//! spill, in memory and time that depend on the page, not on the spill.
//!
//! Lines follow Python's `str.splitlines()` ([`lines`]). A page by offset goes through the spill's
//! sparse line index ([`line_index`], which also describes how such a page is read) to one ranged
//! read of the payload; a page by pattern is a grep for a literal without context: the one
//! streaming scan (`read::scan`) counts the matching lines and keeps only the page's; a page by
//! bytes is one ranged read (`read::bytes`). Stores serve all three through [`SpillReader`]. The
//! output is byte for byte the reference's, in the release the request names (`read::request`
//! states the rules, `read::page` how 0.75 fills a page).
//!
//! ```
//! use overspill::read::{read_page, ReadRequest};
//!
//! let page = read_page(b"alpha\nbeta\ngamma\n", &ReadRequest { handle: "r/c.0".into(), limit: 2, ..Default::default() })?;
//! assert_eq!(page, "[handle 'r/c.0': 3 matching line(s); showing 2]\nalpha\nbeta");
//! # Ok::<(), overspill::read::ReadError>(())
//! ```

mod cache;
mod grep;
pub mod line_index;
pub mod lines;
mod offset;
mod page;
mod request;
mod scan;
mod slice;
mod source;
mod store_error;

pub use cache::IndexCache;
pub use grep::{
    DEFAULT_GREP_CONTEXT, DEFAULT_GREP_MATCHES, GrepRequest, MAX_GREP_CONTEXT, MAX_GREP_MATCHES,
    grep_page, grep_tool_result,
};
pub use line_index::Version;
pub use lines::split_lines;
use request::PAGE_BYTES_CAP;
pub use request::{DEFAULT_LIMIT, ReadError, ReadRequest, ReadUnit, no_stored_result};
pub(crate) use request::{MAX_READ_BYTES, MAX_READ_CHARS, MAX_READ_LINES};
pub use source::{CHUNK_BYTES, Fetched, Part, SpillReader};
pub(crate) use source::{fetch_checked, joined};
pub use store_error::StoreError;

/// The most memory one `read_tool_result` holds whatever its arguments: two chunks of payload
/// (one scanned, the next being read), the largest index read at once, and the page.
pub const READ_WORKING_SET: u64 =
    (2 * CHUNK_BYTES + request::PAGE_BYTES_CAP) as u64 + offset::INDEX_READ_BYTES;

/// The most memory one `grep_tool_result` holds whatever its arguments: two chunks of payload, a
/// long line gathered to test a regex (`scan::MAX_LINE_BYTES`), the compiled regex and its
/// forward and reverse lazy DFAs at their size limits, and the page's lines with their context.
pub const GREP_WORKING_SET: u64 = (2 * CHUNK_BYTES
    + scan::MAX_LINE_BYTES
    + grep::REGEX_SIZE_LIMIT
    + 2 * grep::REGEX_DFA_SIZE_LIMIT
    + 2 * request::PAGE_BYTES_CAP) as u64;

use crate::limits::Pages;
use scan::{Page, Query};
use source::PageError;

/// Serve one `read_tool_result` call from `reader`.
///
/// An unknown or refused handle is [`ReadOutcomeError::NoStoredResult`]; other store failures
/// are [`ReadOutcomeError::Store`], so that an activity can retry them.
pub async fn read_tool_result<R: SpillReader>(
    reader: &R,
    request: &ReadRequest,
) -> Result<String, ReadOutcomeError> {
    let limit = request.checked_limit()?;
    let page = match (request.unit, query(request, limit)) {
        (ReadUnit::Bytes, _) => slice::byte_page(reader, request, limit).await,
        (ReadUnit::Lines, None) => offset::offset_page(reader, request, limit).await,
        (ReadUnit::Lines, Some(query)) => pattern_page_of(reader, request, &query).await,
    };
    outcome(&request.handle, page)
}

/// A page by pattern from `reader`, in the request's release's words.
async fn pattern_page_of<R: SpillReader>(
    reader: &R,
    request: &ReadRequest,
    query: &Query,
) -> Result<String, PageError> {
    let handle = &request.handle;
    if request.harness().pages() == Pages::CutBody {
        let scanned = scan::scan_spill(reader, handle, query, Page::new(PAGE_BYTES_CAP)).await?;
        return Ok(pattern_page(request, query, (scanned.total, scanned.page)));
    }
    let scanned = page::scan_spill(reader, handle, query, false).await?;
    Ok(scanned_page(request, query, scanned))
}

/// A page, or why there is none (see [`read_tool_result`]).
fn outcome(handle: &str, page: Result<String, PageError>) -> Result<String, ReadOutcomeError> {
    match page {
        Err(PageError::Store(e)) if e.is_unknown_handle() => {
            Err(ReadOutcomeError::NoStoredResult(handle.to_owned()))
        }
        page => Ok(page?),
    }
}

/// Why a read could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ReadOutcomeError {
    /// The store does not have this handle, or refuses it: the text ([`no_stored_result`]) is
    /// the answer the model sees, as the reference's.
    #[error("{}", no_stored_result(.0))]
    NoStoredResult(String),
    /// The model must retry with other arguments (an activity's `ModelRetry`).
    #[error(transparent)]
    Retry(#[from] ReadError),
    /// The store failed (not an unknown handle): worth retrying later.
    #[error(transparent)]
    Store(StoreError),
    /// A query's child process failed (the worker's fault, not the request's): worth retrying.
    /// The error is a [`crate::query::SandboxError`]; it is boxed as a trait object so that
    /// paging does not depend on the query module, which depends on it.
    #[error(transparent)]
    Sandbox(Box<dyn std::error::Error + Send + Sync>),
}

impl From<PageError> for ReadOutcomeError {
    fn from(e: PageError) -> Self {
        Self::Store(match e {
            PageError::Store(e) => e,
            PageError::Stale => {
                StoreError::Backend("the spill kept changing while it was read".into())
            }
        })
    }
}

/// Serve one call from a payload in memory: the pure form of [`read_tool_result`].
pub fn read_page(data: &[u8], request: &ReadRequest) -> Result<String, ReadError> {
    let limit = request.checked_limit()?;
    Ok(match (request.unit, query(request, limit)) {
        (ReadUnit::Bytes, _) => slice::byte_page_in_memory(data, request, limit),
        (ReadUnit::Lines, None) => offset::offset_page_in_memory(data, request, limit),
        (ReadUnit::Lines, Some(query)) if request.harness().pages() == Pages::CutBody => {
            let page = Page::new(PAGE_BYTES_CAP);
            pattern_page(request, &query, scan::scan_memory(data, &query, page))
        }
        (ReadUnit::Lines, Some(query)) => {
            scanned_page(request, &query, page::scan_memory(data, &query, false))
        }
    })
}

/// A 0.75 page by pattern, from what the scan kept.
fn scanned_page(request: &ReadRequest, query: &Query, scanned: page::Scanned) -> String {
    let window = query.window(scanned.total);
    page::read_text(
        request,
        scanned.total,
        window,
        &scanned.page,
        scanned.cut_at,
    )
}

/// A page by pattern, as the scan sees it (`None` or `""`: a page by offset). Under 0.62 a
/// pattern with U+FFFD matches the lines' lossy decoding (as the reference's `pattern in line`
/// does); under 0.75 the lines keep their undecodable bytes apart, which no pattern matches.
fn query(request: &ReadRequest, limit: u64) -> Option<Query> {
    let pattern = request.pattern.as_deref().filter(|p| !p.is_empty())?;
    let cut_body = request.harness().pages() == Pages::CutBody;
    Some(Query {
        matcher: scan::Matcher::literal(pattern),
        context: 0,
        offset: request.offset,
        from_end: request.from_end,
        limit,
        // 0.75 names a cut line's byte offset: count the lines to know which it is.
        numbered: !cut_body,
        lossy: cut_body && pattern.contains('\u{FFFD}'),
    })
}

/// The page of `total` matching lines, from the lines the scan kept.
fn pattern_page(request: &ReadRequest, query: &Query, (total, page): (u64, Page)) -> String {
    let shown = query.window(total);
    let lines = page.lines.iter().map(|(.., line)| line.as_slice());
    request::render(&request.handle, total, shown.end - shown.start, lines)
}

#[cfg(test)]
mod tests;
