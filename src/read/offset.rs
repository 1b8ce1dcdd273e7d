//! Pages by offset: the spill's line index (cached, or read and cached) leads to the nearest
//! line start before the page and bounds where the page ends; one ranged read of the payload
//! between the two serves it ([`super::line_index`] describes the reads).

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;

use super::cache::{INDEX_PREFIX_BYTES, IndexCache, IndexView, Opened, WHOLE_INDEX_BYTES};
use super::line_index::{IndexBuilder, IndexError, LineStart, MIN_INDEXED_BYTES, Version};
use super::lines::{split_lines, window_lines};
use super::request::{PAGE_BYTES_CAP, ReadRequest, render, window};
use super::source::{Fetched, PageError, Part, SpillReader, fetch_checked, stream_lines};
use crate::limits::StoreError;

/// Tries before a spill that keeps changing under a reader fails the read.
const ATTEMPTS: usize = 3;

/// A page of `reader`'s payload by line offset.
pub(crate) async fn offset_page<R: SpillReader>(
    reader: &R,
    request: &ReadRequest,
    limit: u64,
) -> Result<String, PageError> {
    let handle = &request.handle;
    let cache = reader.index_cache();
    for _ in 0..ATTEMPTS {
        let (opened, cached) = match cache.and_then(|c| c.get(handle)) {
            Some(opened) => (opened, cache),
            None => {
                let opened = Arc::new(open(reader, handle).await?);
                cache.inspect(|c| c.put(handle, &opened));
                (opened, None)
            }
        };
        match page(reader, request, limit, &opened, cached).await {
            Err(PageError::Stale) => cache.into_iter().for_each(|c| c.remove(handle)),
            done => return done,
        }
    }
    Err(PageError::Stale)
}

/// Open `handle`: read the payload's version and the index's first bytes at once; use the index
/// if it describes that payload version, else page a small spill whole and rebuild a larger
/// one's index (and store it again).
async fn open<R: SpillReader>(reader: &R, handle: &str) -> Result<Opened, PageError> {
    let index = reader.fetch(handle, Part::Index, 0..INDEX_PREFIX_BYTES);
    let (payload, stored) = futures::join!(reader.head(handle), index);
    let payload = payload?;
    let unusable = match stored {
        Ok(Fetched { bytes, version }) => match IndexView::new(bytes, version, &payload) {
            Ok(view) if view.header.describes(&payload) => return Ok(Opened::Indexed(view)),
            Ok(_) => "it describes another payload version".to_owned(),
            Err(e) => e.to_string(),
        },
        Err(StoreError::Timeout(after)) => return Err(StoreError::Timeout(after).into()),
        Err(e) => e.to_string(),
    };
    if payload.size < MIN_INDEXED_BYTES {
        return Ok(Opened::Whole(payload));
    }
    tracing::debug!(target: "overspill::read", "rebuilding the line index of {handle:?}: {unusable}");
    let view = rebuild(reader, handle, &payload).await?;
    Ok(Opened::Indexed(view))
}

/// Index the payload by streaming it once; store the index beside it when the payload has a
/// tag to bind it to.
async fn rebuild<R: SpillReader>(
    reader: &R,
    handle: &str,
    payload: &Version,
) -> Result<IndexView, PageError> {
    let built = stream_lines(reader, handle, payload, 0, IndexBuilder::new()).await?;
    let tag = payload.tag.as_deref().unwrap_or_default();
    let backend = |e: IndexError| PageError::from(StoreError::Backend(e.into()));
    let encoded = Bytes::from(built.finish().encode(tag).map_err(backend)?);
    let mut object = Version {
        size: encoded.len() as u64,
        tag: None,
    };
    if payload.tag.is_some() {
        match reader.put_index(handle, encoded.clone()).await {
            Ok(tag) => object.tag = tag,
            Err(e) => tracing::warn!(
                target: "overspill::read",
                error_type = e.type_name(),
                "could not store the rebuilt line index of {handle:?}: {e}"
            ),
        }
    }
    IndexView::new(encoded, object, payload).map_err(backend)
}

/// Serve the page from an opened spill (`cached`: the cache it came from); [`PageError::Stale`]
/// if it changed since.
async fn page<R: SpillReader>(
    reader: &R,
    request: &ReadRequest,
    limit: u64,
    opened: &Opened,
    cached: Option<&IndexCache>,
) -> Result<String, PageError> {
    let handle = &request.handle;
    let view = match opened {
        Opened::Whole(version) => {
            let range = 0..version.size;
            let data = fetch_checked(reader, handle, Part::Payload, version, range).await?;
            return Ok(offset_page_in_memory(&data, request, limit));
        }
        Opened::Indexed(view) => view,
    };
    let total = view.header.lines();
    let window = window(request.offset, request.from_end, total, limit);
    if window.is_empty() {
        return Ok(render(handle, total, 0, std::iter::empty()));
    }
    let (start, end) = locate(reader, handle, view, cached, window.clone()).await?;
    // The page's first line starts at most `B` bytes after `start`, and a page shows what
    // PAGE_BYTES_CAP bytes from there hold at most.
    let most = start.offset + view.header.checkpoint_bytes() + PAGE_BYTES_CAP as u64;
    let range = start.offset..end.min(most);
    // Every line takes a byte at least: an index that puts the page's lines in no bytes does not
    // describe this payload (and no read would check it).
    if range.is_empty() {
        return Err(PageError::Stale);
    }
    let data = fetch_checked(reader, handle, Part::Payload, &view.payload, range).await?;
    let window = window.start - start.line..window.end - start.line;
    let lines = window_lines(&data, window.clone());
    Ok(render(handle, total, window.end - window.start, lines))
}

/// [`offset_page`] over a payload in memory.
pub(crate) fn offset_page_in_memory(data: &[u8], request: &ReadRequest, limit: u64) -> String {
    let total = split_lines(data).count() as u64;
    let window = window(request.offset, request.from_end, total, limit);
    let lines = window_lines(data, window.clone());
    render(&request.handle, total, window.end - window.start, lines)
}

/// The nearest line start at or before `window.start`, from the index's entries, and where the
/// window's lines end at the latest.
async fn locate<R: SpillReader>(
    reader: &R,
    handle: &str,
    view: &IndexView,
    cached: Option<&IndexCache>,
    window: Range<u64>,
) -> Result<(LineStart, u64), PageError> {
    let (header, line) = (&view.header, window.start);
    let entries = header.block_entries(line);
    let view = match cached {
        Some(cache) if entries.end > view.prefix.len() as u64 => {
            complete(reader, handle, view, cache).await?
        }
        _ => Cow::Borrowed(view),
    };
    let entries = index_bytes(reader, handle, &view, entries).await?;
    let end = header.lines_end(line, window.end, &entries);
    let (start, checkpoints) = header.block_start(line, &entries);
    let checkpoints = index_bytes(reader, handle, &view, checkpoints).await?;
    let start = header.nearest(line, start, &checkpoints);
    let end = header
        .checkpoint_end(window.end, start.offset, &checkpoints)
        .map_or(end, |at| at.min(end));
    Ok((start, end))
}

/// A cached spill's index read whole (the rest of it, in one read) and cached so, when it fits
/// the cache whole: from its second page on, a spill reads no index bytes.
async fn complete<'v, R: SpillReader>(
    reader: &R,
    handle: &str,
    view: &'v IndexView,
    cache: &IndexCache,
) -> Result<Cow<'v, IndexView>, PageError> {
    if view.object.size > WHOLE_INDEX_BYTES || view.object.tag.is_none() {
        return Ok(Cow::Borrowed(view));
    }
    let rest = view.prefix.len() as u64..view.object.size;
    let rest = fetch_checked(reader, handle, Part::Index, &view.object, rest).await?;
    let whole = IndexView {
        prefix: [view.prefix.as_ref(), rest.as_ref()].concat().into(),
        ..view.clone()
    };
    cache.put(handle, &Opened::Indexed(whole.clone()));
    Ok(Cow::Owned(whole))
}

/// Bytes `range` of the index object: from the bytes held, or read from the same object.
async fn index_bytes<R: SpillReader>(
    reader: &R,
    handle: &str,
    view: &IndexView,
    range: Range<u64>,
) -> Result<Bytes, PageError> {
    if range.end <= view.prefix.len() as u64 {
        return Ok(view.prefix.slice(range.start as usize..range.end as usize));
    }
    if view.object.tag.is_none() {
        return Err(PageError::Stale);
    }
    fetch_checked(reader, handle, Part::Index, &view.object, range).await
}
