//! Pages by offset, through the spill's line index ([`super::line_index`] describes the reads).

use std::sync::Arc;

use bytes::Bytes;

use super::StoreError;
use super::cache::Opened;
use super::line_index::{Header, IndexBuilder, IndexError, MIN_INDEXED_BYTES, Version};
use std::ops::Range;

use super::lines::{split_lines, window_ranges};
use super::page::{Fill, read_text};
use super::request::{PAGE_BYTES_CAP, ReadRequest, render, window};
use super::source::{Fetched, PageError, Part, SpillReader, fetch_checked, stream_lines};
use crate::limits::Pages;

/// Tries before a spill that keeps changing under a reader fails the read.
const ATTEMPTS: usize = 3;

/// The bytes of an index that opening a spill reads with the payload's version: the whole index
/// of a spill of up to 32 GiB, with no more than this read from a foreign object. A larger index
/// is read whole in one more read.
pub(crate) const INDEX_READ_BYTES: u64 = 8 << 20;

/// A page of `reader`'s payload by line offset.
///
/// The rule that keeps a cached entry from answering for a spill its reader may not see (or no
/// longer holds): **every page reads the payload in this call**, through `reader`, which refuses
/// a spill it does not admit as a missing one. The read is the ranged GET of the lines shown,
/// checked against the entry's version; where a page shows no payload bytes (past the end, or an
/// empty spill) it is the HEAD that opened the spill just now or, for a cached entry, one more
/// HEAD, also checked against the entry's version. A mismatch drops the entry and opens again.
pub(crate) async fn offset_page<R: SpillReader>(
    reader: &R,
    request: &ReadRequest,
    limit: u64,
) -> Result<String, PageError> {
    let handle = &request.handle;
    let key = reader.cache_key(handle);
    let cache = reader.index_cache().zip(key.as_deref());
    for _ in 0..ATTEMPTS {
        let (opened, fresh) = match cache.and_then(|(c, key)| c.get(key)) {
            Some(opened) => (opened, false),
            None => {
                let opened = Arc::new(open(reader, handle).await?);
                cache.inspect(|(c, key)| c.put(key, opened.clone()));
                (opened, true)
            }
        };
        match page(reader, request, limit, &opened, fresh).await {
            Err(PageError::Stale) => cache.into_iter().for_each(|(c, key)| c.remove(key)),
            done => return done,
        }
    }
    Err(PageError::Stale)
}

/// For a page that reads no payload bytes: unless the spill was `fresh`ly opened (by a HEAD in
/// this call), one HEAD through `reader` (which admits the spill or reads it as missing),
/// checked against the opened `payload` version.
async fn confirm<R: SpillReader>(
    reader: &R,
    handle: &str,
    payload: &Version,
    fresh: bool,
) -> Result<(), PageError> {
    if !fresh && reader.head(handle).await? != *payload {
        return Err(PageError::Stale);
    }
    Ok(())
}

/// Open `handle`: read the payload's version and the index at once; use the index if it
/// describes that payload version, else page a small spill whole and rebuild a larger one's index
/// (and store it again).
async fn open<R: SpillReader>(reader: &R, handle: &str) -> Result<Opened, PageError> {
    let index = reader.fetch(handle, Part::Index, 0..INDEX_READ_BYTES);
    let (payload, stored) = futures::join!(reader.head(handle), index);
    let payload = payload?;
    let unusable = match stored {
        Ok(Fetched { bytes, version }) => match Header::decode(&bytes, version.size) {
            Ok(header) if header.describes(&payload) => {
                // The rest of an index larger than the first read, from the same object.
                let rest = bytes.len() as u64..version.size;
                let rest = fetch_checked(reader, handle, Part::Index, &version, rest).await?;
                let index = match rest.is_empty() {
                    true => bytes,
                    false => [bytes, rest].concat().into(),
                };
                let index = Some((header, index));
                return Ok(Opened { payload, index });
            }
            Ok(_) => "it describes another payload version".to_owned(),
            Err(e) => e.to_string(),
        },
        Err(StoreError::Timeout(after)) => return Err(StoreError::Timeout(after).into()),
        Err(e) => e.to_string(),
    };
    let mut index = None;
    if payload.size >= MIN_INDEXED_BYTES {
        tracing::debug!(target: "overspill::read", "rebuilding the line index of {handle:?}: {unusable}");
        index = Some(rebuild(reader, handle, &payload).await?);
    }
    Ok(Opened { payload, index })
}

/// Index the payload by streaming it once; store the index beside it when the payload has a
/// tag to bind it to.
async fn rebuild<R: SpillReader>(
    reader: &R,
    handle: &str,
    payload: &Version,
) -> Result<(Header, Bytes), PageError> {
    let built = stream_lines(reader, handle, payload, 0, IndexBuilder::new()).await?;
    let tag = payload.tag.as_deref().unwrap_or_default();
    let backend = |e: IndexError| PageError::from(StoreError::Backend(e.into()));
    let encoded = Bytes::from(built.finish().encode(tag).map_err(backend)?);
    if payload.tag.is_some()
        && let Err(e) = reader.put_index(handle, encoded.clone()).await
    {
        tracing::warn!(
            target: "overspill::read",
            error_type = e.type_name(),
            "could not store the rebuilt line index of {handle:?}: {e}"
        );
    }
    let header = Header::decode(&encoded, encoded.len() as u64).map_err(backend)?;
    Ok((header, encoded))
}

/// Serve the page from an opened spill (`fresh`: opened by this call); [`PageError::Stale`] if
/// it changed since.
async fn page<R: SpillReader>(
    reader: &R,
    request: &ReadRequest,
    limit: u64,
    opened: &Opened,
    fresh: bool,
) -> Result<String, PageError> {
    let (handle, payload) = (&request.handle, &opened.payload);
    let Some((header, index)) = &opened.index else {
        if payload.size == 0 {
            confirm(reader, handle, payload, fresh).await?;
        }
        let data = fetch_checked(reader, handle, Part::Payload, payload, 0..payload.size).await?;
        return Ok(offset_page_in_memory(&data, request, limit));
    };
    let total = header.lines();
    let window = window(request.offset, request.from_end, total, limit);
    if window.is_empty() {
        confirm(reader, handle, payload, fresh).await?;
        let nothing = Lines {
            data: &[],
            line: 0,
            offset: 0,
        };
        return Ok(lines_page(request, total, window, nothing));
    }
    let (start, end) = header.locate(index, window.clone());
    // The page's first line starts at most `B` bytes after `start`, and a page shows what
    // PAGE_BYTES_CAP bytes from there hold at most.
    let most = start.offset + header.checkpoint_bytes() + PAGE_BYTES_CAP as u64;
    let range = start.offset..end.min(most);
    // Every line takes a byte at least: an index that puts the page's lines in no bytes does not
    // describe this payload (and no read would check it).
    if range.is_empty() {
        return Err(PageError::Stale);
    }
    let data = fetch_checked(reader, handle, Part::Payload, payload, range.clone()).await?;
    let at = Lines {
        data: &data,
        line: start.line,
        offset: range.start,
    };
    Ok(lines_page(request, total, window, at))
}

/// [`offset_page`] over a payload in memory.
pub(crate) fn offset_page_in_memory(data: &[u8], request: &ReadRequest, limit: u64) -> String {
    let total = split_lines(data).count() as u64;
    let window = window(request.offset, request.from_end, total, limit);
    let at = Lines {
        data,
        line: 0,
        offset: 0,
    };
    lines_page(request, total, window, at)
}

/// Bytes of a payload from a line start on: `data`, where line `line` starts, at byte `offset`.
#[derive(Clone, Copy)]
struct Lines<'a> {
    data: &'a [u8],
    line: u64,
    offset: u64,
}

/// The page of lines `window` (of `total`), which `at` holds, in the request's release's words.
fn lines_page(request: &ReadRequest, total: u64, window: Range<u64>, at: Lines<'_>) -> String {
    let skip = window.start.saturating_sub(at.line);
    let ranges = window_ranges(at.data, skip..skip + (window.end - window.start));
    match request.harness().pages() {
        Pages::CutBody => {
            let lines = ranges.map(|r| &at.data[r]);
            render(&request.handle, total, window.end - window.start, lines)
        }
        Pages::WholeLines => {
            let mut fill = Fill::default();
            let mut first_at = None;
            for (index, range) in (window.start..).zip(ranges) {
                first_at.get_or_insert(at.offset + range.start as u64);
                fill.offer(index, true, &at.data[range], "", false);
            }
            let page = fill.finish();
            // Only a page's first line is ever cut.
            let cut_at = page
                .cut
                .zip(first_at)
                .map(|((_, shown), start)| start + shown);
            read_text(request, total, window, &page, cut_at)
        }
    }
}
