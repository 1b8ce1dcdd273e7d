//! `read_tool_result(handle, offset, limit, from_end, pattern)`: bounded paging into a spill
//! (SPEC §11), without a full decode and split per page.
//!
//! Lines follow Python's `str.splitlines()`. A [`LineIndex`] (built once, kept beside the spill
//! or cached) turns a page by offset into one ranged read; a pattern page is one literal
//! `memmem` scan over the payload. The output is byte-for-byte the reference's.
//!
//! ```
//! use overspill::read::{read_page, ReadRequest};
//!
//! let page = read_page(b"alpha\nbeta\ngamma\n", &ReadRequest { handle: "r/c.0".into(), limit: 2, ..Default::default() })?;
//! assert_eq!(page, "[handle 'r/c.0': 3 matching line(s); showing 2]\nalpha\nbeta");
//! # Ok::<(), overspill::read::ReadError>(())
//! ```

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::limits::pyfmt::{repr, thousands};
use crate::limits::{SpillStore, StoreError};

/// Lines returned by one call at most.
pub const MAX_READ_LINES: i64 = 1_000;
/// Chars of joined body returned by one call at most.
pub const MAX_READ_CHARS: usize = 50_000;
/// Bytes that always decode to more than a capped page (4 bytes a char, plus slack).
const PAGE_BYTES_CAP: usize = 4 * (MAX_READ_CHARS + 4);
/// Lines per page when the caller does not say.
pub const DEFAULT_LIMIT: i64 = 200;

/// One `read_tool_result` call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReadRequest {
    /// The handle from a spill marker.
    pub handle: String,
    /// Lines to skip (from the start, or from the end with `from_end`).
    pub offset: i64,
    /// Lines to return (clamped to 1,000).
    pub limit: i64,
    /// Count `offset` from the end; the page is still in file order.
    pub from_end: bool,
    /// Keep only lines containing this literal substring (never a regex).
    pub pattern: Option<String>,
}

impl Default for ReadRequest {
    fn default() -> Self {
        Self {
            handle: String::new(),
            offset: 0,
            limit: DEFAULT_LIMIT,
            from_end: false,
            pattern: None,
        }
    }
}

/// A read the model must retry with other arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// Bad `offset` or `limit`; the message is the reference's ModelRetry text.
    #[error("{0}")]
    ModelRetry(&'static str),
}

impl ReadRequest {
    /// Validate the arguments before any read (SPEC §11.1); returns the clamped limit.
    pub fn checked_limit(&self) -> Result<usize, ReadError> {
        if self.offset < 0 {
            return Err(ReadError::ModelRetry("`offset` must be >= 0."));
        }
        if self.limit < 1 {
            return Err(ReadError::ModelRetry("`limit` must be >= 1."));
        }
        Ok(self.limit.min(MAX_READ_LINES) as usize)
    }

    /// The lines `[start, end)` of `total` this request selects.
    fn window(&self, total: usize, limit: usize) -> Range<usize> {
        let offset = usize::try_from(self.offset).unwrap_or(usize::MAX);
        if self.from_end {
            let end = total.saturating_sub(offset);
            end.saturating_sub(limit)..end
        } else {
            let start = offset.min(total);
            start..start.saturating_add(limit).min(total)
        }
    }

    /// The pattern, unless it keeps every line (`None` or `""`).
    fn filter(&self) -> Option<&str> {
        self.pattern.as_deref().filter(|p| !p.is_empty())
    }
}

/// The text for a handle the store does not have or refuses; never the store's own error.
pub fn no_stored_result(handle: &str) -> String {
    format!(
        "[No stored tool result for handle {}. Use the exact handle string from a \"[Tool output too large ... stored to handle ...]\" marker; if the result is no longer available, re-run the original tool.]",
        repr(handle)
    )
}

/// Serve one `read_tool_result` call from `store`.
///
/// A page by offset costs the index plus one ranged read when the store keeps an index; a
/// pattern page streams the payload once. Store failures other than an unknown handle are
/// returned as `Err(Ok(StoreError))` so that an activity can retry them.
pub async fn read_tool_result<S: SpillStore>(
    store: &S,
    request: &ReadRequest,
) -> Result<String, ReadOutcomeError> {
    let limit = request.checked_limit()?;
    let handle = &request.handle;
    let missing = |e: StoreError| -> Result<String, ReadOutcomeError> {
        if e.is_unknown_handle() {
            Ok(no_stored_result(handle))
        } else {
            Err(ReadOutcomeError::Store(e))
        }
    };
    if request.filter().is_none() {
        match store.line_index(handle).await {
            Ok(Some(index)) => {
                let window = request.window(index.len(), limit);
                let bytes = index.byte_range(window.clone(), PAGE_BYTES_CAP as u64);
                let data = match store.read_range(handle, bytes.clone()).await {
                    Ok(data) => data,
                    Err(e) => return missing(e),
                };
                // Clamped, so that an index that does not describe the payload shows a wrong
                // page at worst, never a panic.
                let offset = |at: u64| (at.saturating_sub(bytes.start) as usize).min(data.len());
                let lines = index.lines(window.clone()).map(|r| {
                    let end = offset(r.end);
                    offset(r.start).min(end)..end
                });
                return Ok(render(handle, index.len(), &data, lines, window.len()));
            }
            Ok(None) => {}
            Err(e) => return missing(e),
        }
    }
    match store.read(handle).await {
        Ok(data) => Ok(read_page(&data, request)?),
        Err(e) => missing(e),
    }
}

/// Why a read could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ReadOutcomeError {
    /// The model must retry with other arguments.
    #[error(transparent)]
    Retry(#[from] ReadError),
    /// The store failed (not an unknown handle): worth retrying later.
    #[error(transparent)]
    Store(StoreError),
}

/// Serve one call from a payload in memory: the pure form of [`read_tool_result`].
pub fn read_page(data: &[u8], request: &ReadRequest) -> Result<String, ReadError> {
    let limit = request.checked_limit()?;
    let lines: Vec<Range<usize>> = match request.filter() {
        None => split_lines(data).collect(),
        Some(pattern) => matching_lines(data, pattern),
    };
    let window = request.window(lines.len(), limit);
    let shown = window.len();
    Ok(render(
        &request.handle,
        lines.len(),
        data,
        lines[window].iter().cloned(),
        shown,
    ))
}

/// The header and the capped body for the selected line ranges of `data`.
fn render(
    handle: &str,
    total: usize,
    data: &[u8],
    lines: impl Iterator<Item = Range<usize>>,
    shown: usize,
) -> String {
    let mut body = String::new();
    let mut chars = 0usize;
    let mut capped = false;
    'lines: for (i, range) in lines.enumerate() {
        let separator = (i > 0).then_some('\n');
        // A page shows at most MAX_READ_CHARS chars, and every char takes at least one byte.
        let range = range.start..range.end.min(range.start + PAGE_BYTES_CAP);
        for c in separator
            .into_iter()
            .chain(String::from_utf8_lossy(&data[range]).chars())
        {
            if chars == MAX_READ_CHARS {
                capped = true;
                break 'lines;
            }
            body.push(c);
            chars += 1;
        }
    }
    let mut out = format!(
        "[handle {}: {} matching line(s); showing {shown}{}]",
        repr(handle),
        thousands(total as u64),
        if capped { ", output capped" } else { "" }
    );
    if !body.is_empty() {
        out.push('\n');
        out.push_str(&body);
    }
    out
}

/// The length of the line break starting at `data[i]`, if one does (Python `str.splitlines`).
#[inline]
fn break_len(data: &[u8], i: usize) -> usize {
    match data[i] {
        b'\n' | 0x0b | 0x0c | 0x1c | 0x1d | 0x1e => 1,
        b'\r' => 1 + usize::from(data.get(i + 1) == Some(&b'\n')),
        0xc2 if data.get(i + 1) == Some(&0x85) => 2,
        0xe2 if data.get(i + 1) == Some(&0x80) && matches!(data.get(i + 2), Some(0xa8 | 0xa9)) => 3,
        _ => 0,
    }
}

/// Whether `b` can start a line break.
#[inline]
fn may_break(b: u8) -> bool {
    matches!(b, b'\n' | b'\r' | 0x0b | 0x0c | 0x1c..=0x1e | 0xc2 | 0xe2)
}

/// The next line break at or after `from`: `(position, length)`.
fn next_break(data: &[u8], from: usize) -> Option<(usize, usize)> {
    const CHUNK: usize = 32;
    let mut i = from;
    while i < data.len() {
        // Skip chunks with no candidate byte; this loop vectorizes.
        if i + CHUNK <= data.len()
            && !data[i..i + CHUNK].iter().fold(false, |any, &b| {
                any | (b < 0x1f) | (b == 0xc2) | (b == 0xe2)
            })
        {
            i += CHUNK;
            continue;
        }
        if may_break(data[i]) {
            let len = break_len(data, i);
            if len > 0 {
                return Some((i, len));
            }
        }
        i += 1;
    }
    None
}

/// The content ranges of `data`'s lines, as `str.splitlines()` would split its lossy decoding.
pub fn split_lines(data: &[u8]) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos >= data.len() {
            return None;
        }
        let start = pos;
        match next_break(data, pos) {
            Some((at, len)) => {
                pos = at + len;
                Some(start..at)
            }
            None => {
                pos = data.len();
                Some(start..data.len())
            }
        }
    })
}

/// The lines containing `pattern`, found with one `memmem` scan.
///
/// Only the lines around matches are examined: each match is checked to end before its line's
/// break, its line is taken once, and the scan resumes after that line, so the cost is one pass
/// of `memmem` plus the matching lines themselves.
fn matching_lines(data: &[u8], pattern: &str) -> Vec<Range<usize>> {
    if pattern.contains('\u{FFFD}') {
        // A replacement char can only match after lossy decoding: take the slow path.
        return split_lines(data)
            .filter(|r| String::from_utf8_lossy(&data[r.clone()]).contains(pattern))
            .collect();
    }
    let finder = memchr::memmem::Finder::new(pattern.as_bytes());
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(found) = finder.find(&data[pos..]).map(|i| pos + i) {
        let (end, len) = next_break(data, found).unwrap_or((data.len(), 0));
        if found + pattern.len() > end {
            // The match spans a line break: not a match within one line.
            pos = found + 1;
            continue;
        }
        out.push(line_start(data, found)..end);
        pos = end + len;
        if pos >= data.len() {
            break;
        }
    }
    out
}

/// The start of the line holding `data[at]`: just after the last line break before `at`.
fn line_start(data: &[u8], at: usize) -> usize {
    let mut i = at;
    while i > 0 {
        let b = data[i - 1];
        let ends_break = matches!(b, b'\n' | b'\r' | 0x0b | 0x0c | 0x1c..=0x1e)
            || (b == 0x85 && i >= 2 && data[i - 2] == 0xc2)
            || (matches!(b, 0xa8 | 0xa9) && i >= 3 && data[i - 3..i - 1] == [0xe2, 0x80]);
        if ends_break {
            return i;
        }
        i -= 1;
    }
    0
}

/// Where each line of a payload ends: a page by offset becomes one ranged read.
///
/// One `u64` per line: the content end, with the break's length (0–3 bytes) in the top two bits.
/// Serialized as little-endian `u64`s, it is written beside a spill as `<object>.idx`.
/// Cloning is cheap (shared), so stores can hand out cached indexes freely.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LineIndex {
    entries: std::sync::Arc<[u64]>,
}

const LEN_SHIFT: u32 = 62;
const END_MASK: u64 = (1 << LEN_SHIFT) - 1;

impl LineIndex {
    /// Index `data`'s lines.
    pub fn build(data: &[u8]) -> Self {
        let mut entries = Vec::new();
        let mut pos = 0;
        while pos < data.len() {
            match next_break(data, pos) {
                Some((at, len)) => {
                    entries.push(at as u64 | ((len as u64) << LEN_SHIFT));
                    pos = at + len;
                }
                None => {
                    entries.push(data.len() as u64);
                    pos = data.len();
                }
            }
        }
        Self {
            entries: entries.into(),
        }
    }

    /// The number of lines.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the payload has no lines.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn start(&self, line: usize) -> u64 {
        match line.checked_sub(1) {
            None => 0,
            Some(prev) => {
                let e = self.entries[prev];
                (e & END_MASK) + (e >> LEN_SHIFT)
            }
        }
    }

    fn end(&self, line: usize) -> u64 {
        self.entries[line] & END_MASK
    }

    /// The content byte ranges of `lines`.
    pub fn lines(&self, lines: Range<usize>) -> impl Iterator<Item = Range<u64>> + '_ {
        lines.map(|i| self.start(i)..self.end(i))
    }

    /// The bytes covering `lines`, at most `cap` of them (enough for a capped page).
    pub fn byte_range(&self, lines: Range<usize>, cap: u64) -> Range<u64> {
        if lines.is_empty() {
            return 0..0;
        }
        let start = self.start(lines.start);
        let end = self.end(lines.end - 1);
        start..end.min(start.saturating_add(cap))
    }

    /// The serialized form (little-endian `u64`s).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.entries.iter().flat_map(|e| e.to_le_bytes()).collect()
    }

    /// Parse the serialized form; `None` if it is not a whole number of entries.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        if !bytes.len().is_multiple_of(8) {
            return None;
        }
        let entries = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect();
        Some(Self { entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Python's `str.splitlines()` over the lossy decoding, written the slow, obvious way.
    fn py_splitlines(data: &[u8]) -> Vec<String> {
        let text = String::from_utf8_lossy(data);
        let mut lines = Vec::new();
        let mut line = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\r' => {
                    if chars.peek() == Some(&'\n') {
                        chars.next();
                    }
                    lines.push(std::mem::take(&mut line));
                }
                '\n' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}'
                | '\u{2029}' => lines.push(std::mem::take(&mut line)),
                c => line.push(c),
            }
        }
        if !line.is_empty() {
            lines.push(line);
        }
        lines
    }

    fn payload() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(b"\n".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"\r".to_vec()),
            Just("\u{85}\u{2028}\u{2029}\x0b\x1d".as_bytes().to_vec()),
            Just(vec![0xe2, 0x80]),
            Just(vec![0xc2]),
            Just(vec![0xff]),
            "[a-z ]{0,12}".prop_map(String::into_bytes),
            "\\PC{0,6}".prop_map(String::into_bytes),
        ];
        prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
    }

    fn page(data: &[u8], offset: i64, limit: i64, pattern: Option<&str>) -> String {
        let request = ReadRequest {
            handle: "h".into(),
            offset,
            limit,
            pattern: pattern.map(str::to_owned),
            ..ReadRequest::default()
        };
        read_page(data, &request).expect("valid arguments")
    }

    #[test]
    fn bad_arguments_are_model_retries() {
        let bad_offset = ReadRequest {
            offset: -1,
            ..ReadRequest::default()
        };
        assert_eq!(
            read_page(b"", &bad_offset),
            Err(ReadError::ModelRetry("`offset` must be >= 0."))
        );
        let bad_limit = ReadRequest {
            limit: 0,
            ..ReadRequest::default()
        };
        assert_eq!(
            read_page(b"", &bad_limit),
            Err(ReadError::ModelRetry("`limit` must be >= 1."))
        );
    }

    #[test]
    fn body_is_capped_at_fifty_thousand_chars() {
        let data = "é".repeat(60_000);
        let out = page(data.as_bytes(), 0, 10, None);
        assert!(out.starts_with("[handle 'h': 1 matching line(s); showing 1, output capped]\n"));
        assert_eq!(
            out.split_once('\n').map(|(_, b)| b.chars().count()),
            Some(MAX_READ_CHARS)
        );
    }

    proptest! {
        #[test]
        fn lines_follow_python_splitlines(data in payload()) {
            let ours: Vec<String> = split_lines(&data)
                .map(|r| String::from_utf8_lossy(&data[r]).into_owned())
                .collect();
            prop_assert_eq!(ours, py_splitlines(&data));
            let index = LineIndex::build(&data);
            prop_assert_eq!(index.len(), py_splitlines(&data).len());
            prop_assert_eq!(LineIndex::from_bytes(&index.to_bytes()), Some(index));
        }

        #[test]
        fn pages_concatenate_back(data in payload(), limit in 1i64..7) {
            let lines = py_splitlines(&data);
            let mut got = Vec::new();
            let mut offset = 0;
            while offset < lines.len() as i64 {
                let out = page(&data, offset, limit, None);
                let body = out.split_once('\n').map_or("", |(_, b)| b);
                let shown = (lines.len() as i64 - offset).min(limit) as usize;
                let mut window: Vec<String> = body.split('\n').map(str::to_owned).collect();
                window.resize(shown, String::new());
                got.extend(window);
                offset += limit;
            }
            prop_assert_eq!(got, lines);
        }

        #[test]
        fn pattern_keeps_exactly_the_matching_lines(
            data in payload(),
            pattern in "[a-c]{1,2}|\u{fffd}|\n|a\nb|\u{85}|\r|\u{2028}z",
        ) {
            let expected: Vec<String> = py_splitlines(&data).into_iter().filter(|l| l.contains(&pattern)).collect();
            let out = page(&data, 0, 1_000, Some(&pattern));
            let header = format!("[handle 'h': {} matching line(s); showing {}]", expected.len(), expected.len());
            let want = if expected.join("\n").is_empty() { header } else { format!("{header}\n{}", expected.join("\n")) };
            prop_assert_eq!(out, want);
        }
    }
}
