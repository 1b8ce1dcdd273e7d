//! Pages by offset: the spill's index (cached, read in small ranges, or rebuilt) leads to the
//! nearest line start before the page, and one ranged read of the payload from there serves it.
//!
//! A page costs the payload's version and the index's first bytes (in parallel; nothing when the
//! spill is cached), at most two more small reads of index entries, and one payload read of at
//! most `B` + 200 KB. A spill under [`MIN_INDEXED_BYTES`] is read whole. A missing, foreign,
//! corrupt or stale index is rebuilt by streaming the payload once, and stored again.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;

use super::cache::{INDEX_PREFIX_BYTES, IndexView, Opened};
use super::index::{IndexBuilder, LineStart, MIN_INDEXED_BYTES, Version};
use super::lines::{split_lines, window_lines};
use super::request::{PAGE_BYTES_CAP, ReadRequest, render};
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
        let opened = match cache.and_then(|c| c.get(handle)) {
            Some(opened) => opened,
            None => {
                let opened = Arc::new(open(reader, handle).await?);
                if let Some(cache) = cache {
                    cache.put(handle, &opened);
                }
                opened
            }
        };
        match page(reader, request, limit, &opened).await {
            Err(PageError::Stale) => {
                if let Some(cache) = cache {
                    cache.remove(handle);
                }
            }
            done => return done,
        }
    }
    Err(PageError::Stale)
}

/// Learn what a page of `handle` needs: its version, and the index describing it (read, or
/// rebuilt when the spill is not small).
async fn open<R: SpillReader>(reader: &R, handle: &str) -> Result<Opened, PageError> {
    let (payload, stored) = futures::join!(
        reader.head(handle),
        reader.fetch(handle, Part::Index, 0..INDEX_PREFIX_BYTES)
    );
    let payload = payload?;
    let unusable = match stored {
        Ok(Fetched { bytes, version }) => match IndexView::open(bytes, version, &payload) {
            Ok(view) => return Ok(Opened::Indexed(view)),
            Err(e) => e.to_string(),
        },
        Err(StoreError::Timeout(after)) => return Err(StoreError::Timeout(after).into()),
        Err(e) => e.to_string(),
    };
    if payload.size < MIN_INDEXED_BYTES {
        return Ok(Opened::Whole(payload));
    }
    tracing::debug!(target: "overspill::read", "rebuilding the line index of {handle:?}: {unusable}");
    Ok(Opened::Indexed(rebuild(reader, handle, &payload).await?))
}

/// Index the payload by streaming it once; store the index beside it when the payload has a tag
/// to bind it to.
async fn rebuild<R: SpillReader>(
    reader: &R,
    handle: &str,
    payload: &Version,
) -> Result<IndexView, PageError> {
    let index = stream_lines(reader, handle, payload, 0, IndexBuilder::new())
        .await?
        .finish();
    let tag = payload.tag.as_deref().unwrap_or_default();
    let encoded = Bytes::from(
        index
            .encode(tag)
            .map_err(|e| StoreError::Backend(e.into()))?,
    );
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
    let view = IndexView::built(encoded, object, payload);
    view.map_err(|e| StoreError::Backend(e.into()).into())
}

/// Serve the page from an opened spill; [`PageError::Stale`] if it changed since.
async fn page<R: SpillReader>(
    reader: &R,
    request: &ReadRequest,
    limit: u64,
    opened: &Opened,
) -> Result<String, PageError> {
    let view = match opened {
        Opened::Whole(version) => {
            let data = fetch_checked(
                reader,
                &request.handle,
                Part::Payload,
                version,
                0..version.size,
            )
            .await?;
            return Ok(offset_page_in_memory(&data, request, limit));
        }
        Opened::Indexed(view) => view,
    };
    let total = view.header.lines();
    let window = request.window(total, limit);
    if window.is_empty() {
        return Ok(render(&request.handle, total, 0, std::iter::empty()));
    }
    let start = locate(reader, &request.handle, view, window.start).await?;
    let payload = &view.payload;
    let end = payload
        .size
        .min(start.offset + view.header.checkpoint_bytes() + PAGE_BYTES_CAP as u64);
    let data = fetch_checked(
        reader,
        &request.handle,
        Part::Payload,
        payload,
        start.offset..end,
    )
    .await?;
    let lines = window_lines(&data, window.start - start.line..window.end - start.line);
    Ok(render(
        &request.handle,
        total,
        window.end - window.start,
        lines,
    ))
}

/// [`offset_page`] over a payload in memory.
pub(crate) fn offset_page_in_memory(data: &[u8], request: &ReadRequest, limit: u64) -> String {
    let total = split_lines(data).count() as u64;
    let window = request.window(total, limit);
    let lines = window_lines(data, window.clone());
    render(&request.handle, total, window.end - window.start, lines)
}

/// The nearest line start at or before `line`, from the index's entries.
async fn locate<R: SpillReader>(
    reader: &R,
    handle: &str,
    view: &IndexView,
    line: u64,
) -> Result<LineStart, PageError> {
    let header = &view.header;
    let entries = index_bytes(reader, handle, view, header.block_entries(line)).await?;
    let (start, checkpoints) = header.block_start(line, &entries);
    if checkpoints.is_empty() {
        return Ok(start);
    }
    let checkpoints = index_bytes(reader, handle, view, checkpoints).await?;
    Ok(header.nearest(line, start, &checkpoints))
}

/// Bytes `range` of the index object: from the prefix held, or read from the same object.
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
