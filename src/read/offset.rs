//! Pages by offset: the spill's index (cached, read in small ranges, or rebuilt) leads to the
//! nearest line start before the page and bounds where the page ends; one ranged read of the
//! payload between the two serves it.
//!
//! Round trips are what a page costs on a remote store, so a page makes as few as it can, and
//! never two where one would do:
//!
//! - **Opening** a spill (not cached) reads the payload's first [`HEAD_BYTES`] and the index's
//!   first bytes at once. The payload read gives its version (no separate HEAD), all of a spill
//!   up to 256 KiB (whose first page is then served from it, and whose index, if missing, is
//!   built from it), and the first pages of a spill of short lines. When the index comes first
//!   and places the page beyond those bytes, the page does not wait for them: the index's header
//!   names the payload version it was built for, and the page's own read is checked against it
//!   (on a remote store a large object's read can take twice a small one's). A page from line
//!   256 Ki on lies beyond them whatever the index says, so it reads the index alone, and in the
//!   same round the block entries it needs when they lie beyond the index's first 512 KiB (their
//!   place is known before the header is read).
//! - **Locating** the page's first line reads three block entries (and at most `K` checkpoints)
//!   unless the index bytes held cover them; a cached spill whose index is at most
//!   [`WHOLE_INDEX_BYTES`](super::cache::WHOLE_INDEX_BYTES) has it read whole on its second
//!   page, and reads no index bytes again.
//! - **Reading** the page takes the payload from the nearest line start (at most `B` bytes
//!   before the page) to the next block start or checkpoint after the page (of the block's
//!   checkpoints just read), at most `B` + 200 KB. A page shows 50,000 chars at most, so when
//!   that range is longer than `B` + 64 KB, its first `B` + 64 KB are read first: they hold the
//!   page of any text of one byte a char, and only a page they do not decide reads the rest
//!   (after which the spill's pages read whole ranges, in one round trip).
//!
//! So a page of a cached spill is one payload read (two for the first such page of long lines
//! of multi-byte text), and a first page one read (a spill up to
//! [`HEAD_BYTES`]) or two in a row (three for an index beyond its first 512 KiB written with
//! other than [`LINES_PER_BLOCK`], or for checkpoints beyond them). A missing,
//! foreign, corrupt or stale index is rebuilt (from that first read when it holds the whole
//! spill, else by streaming the payload once) and stored again.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use futures::future::{Either, select};

use super::cache::{INDEX_PREFIX_BYTES, IndexCache, IndexView, Opened};
use super::index::{
    Header, Index, IndexBuilder, LINES_PER_BLOCK, LineStart, MIN_INDEXED_BYTES, Version,
};
use super::lines::{split_lines, window_lines, window_ranges};
use super::request::{MAX_READ_CHARS, PAGE_BYTES_CAP, ReadRequest, decided_by, render};
use super::source::{Fetched, PageError, Part, SpillReader, fetch_checked, stream_lines};
use crate::limits::StoreError;

/// The payload bytes opening a spill reads: enough that most spills (tool outputs of tens or
/// hundreds of KB) are read whole in the first round trip, small enough that the first page of
/// a large spill pays little for it (on SeaweedFS, 0.1–0.4 ms over a 64 KiB read).
pub(crate) const HEAD_BYTES: u64 = 256 << 10;

/// Bytes past the preroll (`B`, the most a page's first line starts after the line start its
/// read begins at) that a page reads at first: [`MAX_READ_CHARS`], the most a page shows, with
/// room for its lines' breaks. A page of text of one byte a char, the usual tool output, needs
/// no more, though a page may need up to [`PAGE_BYTES_CAP`]; what does is read after them.
pub(super) const LIKELY_PAGE_BYTES: u64 = MAX_READ_CHARS as u64 + (14 << 10);

/// Tries before a spill that keeps changing under a reader fails the read.
const ATTEMPTS: usize = 3;

/// A spill as a page finds it: what it knows before reading the page, the payload's first bytes
/// when it just read them, and the cache it came from, if any.
struct Spill<'a> {
    opened: Arc<Opened>,
    head: Bytes,
    /// Index entries read beside the index's first bytes (those a far page needs).
    ahead: Option<Ahead>,
    cached: Option<&'a IndexCache>,
}

/// Bytes of the index object read from `at`, beyond its first bytes.
struct Ahead {
    at: u64,
    fetched: Fetched,
}

/// A page of `reader`'s payload by line offset.
pub(crate) async fn offset_page<R: SpillReader>(
    reader: &R,
    request: &ReadRequest,
    limit: u64,
) -> Result<String, PageError> {
    let handle = &request.handle;
    let cache = reader.index_cache();
    for attempt in 0..ATTEMPTS {
        let served = match cache.and_then(|c| Some((c, c.get(handle)?))) {
            Some((cache, opened)) => {
                let spill = Spill {
                    opened,
                    head: Bytes::new(),
                    ahead: None,
                    cached: Some(cache),
                };
                page(reader, request, limit, &spill).await
            }
            // After a stale try, the payload's own version decides.
            None => first_page(reader, request, limit, attempt == 0).await,
        };
        match served {
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

/// A page of a spill not cached, which it opens (and caches). A page from line [`HEAD_BYTES`] on
/// lies beyond the payload's first bytes whatever the index says ([`far_first_page`]). For any
/// other, the payload's first bytes and the index's are read at once. When `trust_index` and the
/// index comes first and places the page beyond those bytes, it serves the page on its word
/// ([`claim_if_beyond_head`]) while the other read finishes beside it (so its connection goes
/// back to the pool); otherwise the payload's version, from the first bytes, decides whether the
/// index describes it ([`open`]).
async fn first_page<R: SpillReader>(
    reader: &R,
    request: &ReadRequest,
    limit: u64,
    trust_index: bool,
) -> Result<String, PageError> {
    let handle = &request.handle;
    let line = u64::try_from(request.offset).unwrap_or(0);
    if trust_index && !request.from_end && line >= HEAD_BYTES {
        return far_first_page(reader, request, limit, line).await;
    }
    let head = std::pin::pin!(payload_head(reader, handle));
    let index = std::pin::pin!(reader.fetch(handle, Part::Index, 0..INDEX_PREFIX_BYTES));
    let (payload, stored) = match select(head, index).await {
        Either::Left((payload, index)) => (payload, index.await),
        Either::Right((stored, head)) => match claim_if_beyond_head(&stored, request, limit) {
            Some(view) if trust_index => {
                return claimed_page(reader, request, limit, view, None, head).await;
            }
            _ => (head.await, stored),
        },
    };
    opened_page(reader, request, limit, payload?, stored).await
}

/// A first page from `line` on, `line` at least [`HEAD_BYTES`] (every line takes a byte at
/// least): the payload's first bytes cannot serve it, so only the index is read, with the block
/// entries the page needs when they lie beyond the index's first bytes (where an index written
/// with [`LINES_PER_BLOCK`] keeps them), and taken at its word. An index that cannot be (missing,
/// unreadable, or placing the page past the end) is opened after the payload's first bytes.
async fn far_first_page<R: SpillReader>(
    reader: &R,
    request: &ReadRequest,
    limit: u64,
    line: u64,
) -> Result<String, PageError> {
    let handle = &request.handle;
    let prefix = reader.fetch(handle, Part::Index, 0..INDEX_PREFIX_BYTES);
    let entries = Header::block_entries_unread(line, LINES_PER_BLOCK);
    let (stored, ahead) = match entries.end > INDEX_PREFIX_BYTES {
        true => {
            let ahead = reader.fetch(handle, Part::Index, entries.clone());
            let (stored, ahead) = futures::join!(prefix, ahead);
            (stored, Some(ahead))
        }
        false => (prefix.await, None),
    };
    // A store that did not answer in time fails the page now, not after a second wait.
    for read in std::iter::once(&stored).chain(&ahead) {
        if let Err(StoreError::Timeout(after)) = read {
            return Err(StoreError::Timeout(*after).into());
        }
    }
    let ahead = ahead.and_then(Result::ok).map(|fetched| Ahead {
        at: entries.start,
        fetched,
    });
    if let Some(view) = claim_if_beyond_head(&stored, request, limit) {
        // No first bytes are being read: nothing to let finish beside the page.
        let nothing = std::future::pending::<()>();
        return claimed_page(reader, request, limit, view, ahead, nothing).await;
    }
    let payload = payload_head(reader, handle).await?;
    opened_page(reader, request, limit, payload, stored).await
}

/// The page of a spill opened ([`open`]) from the payload's version and first bytes and the
/// index's first bytes as read; the opened spill is cached.
async fn opened_page<R: SpillReader>(
    reader: &R,
    request: &ReadRequest,
    limit: u64,
    payload: (Version, Bytes),
    stored: Result<Fetched, StoreError>,
) -> Result<String, PageError> {
    let handle = &request.handle;
    let (opened, head) = open(reader, handle, payload, stored).await?;
    let spill = Spill {
        opened: Arc::new(opened),
        head,
        ahead: None,
        cached: None,
    };
    remember(reader, handle, &spill.opened);
    page(reader, request, limit, &spill).await
}

/// The page, served from an index taken at its word (and `ahead`, its entries read beside its
/// first bytes), while `head` (the read of the payload's first bytes, no longer needed) finishes
/// beside it, so that its connection goes back to the pool. The index is cached only once the
/// page's payload read, checked against the version it claims, has confirmed it: until then no
/// other page may trust it (a cached index answers a page past the end without reading the
/// payload).
async fn claimed_page<R: SpillReader>(
    reader: &R,
    request: &ReadRequest,
    limit: u64,
    view: IndexView,
    ahead: Option<Ahead>,
    head: impl Future + Unpin,
) -> Result<String, PageError> {
    let spill = Spill {
        opened: Arc::new(Opened::Indexed(view)),
        head: Bytes::new(),
        ahead,
        cached: None,
    };
    let page = std::pin::pin!(page(reader, request, limit, &spill));
    let served = match select(page, head).await {
        Either::Left((served, _)) => served,
        Either::Right((_, page)) => page.await,
    };
    match served {
        Ok(page) => {
            remember(reader, &request.handle, &spill.opened);
            Ok(page)
        }
        // The store refusing the range the index placed the page at (past the end of a shorter
        // payload) shows the index stale too.
        Err(PageError::Store(StoreError::Backend(_))) => Err(PageError::Stale),
        Err(e) => Err(e),
    }
}

/// Put `opened`, the spill `handle` just opened, in the reader's cache.
fn remember<R: SpillReader>(reader: &R, handle: &str, opened: &Arc<Opened>) {
    if let Some(cache) = reader.index_cache() {
        cache.put(handle, opened);
    }
}

/// What a page of `handle` needs, from the payload's version and first bytes and the index's
/// first bytes as read: the index when it describes that payload, else the index rebuilt (or
/// nothing, for a spill too small to need one).
async fn open<R: SpillReader>(
    reader: &R,
    handle: &str,
    (payload, head): (Version, Bytes),
    stored: Result<Fetched, StoreError>,
) -> Result<(Opened, Bytes), PageError> {
    let unusable = match stored {
        Ok(Fetched { bytes, version }) => match IndexView::open(bytes, version, &payload) {
            Ok(view) => return Ok((Opened::Indexed(view), head)),
            Err(e) => e.to_string(),
        },
        Err(StoreError::Timeout(after)) => return Err(StoreError::Timeout(after).into()),
        Err(e) => e.to_string(),
    };
    if payload.size < MIN_INDEXED_BYTES {
        return Ok((Opened::Whole(payload), head));
    }
    tracing::debug!(target: "overspill::read", "rebuilding the line index of {handle:?}: {unusable}");
    let view = rebuild(reader, handle, &payload, &head).await?;
    Ok((Opened::Indexed(view), head))
}

/// The index just read, taken at its word ([`IndexView::claimed`]), when the page lies beyond
/// the payload's first [`HEAD_BYTES`] (the block holding its first line starts after them), so
/// that it could not be served from them. An empty page reads no payload to check the index
/// against, so it waits for them.
fn claim_if_beyond_head(
    stored: &Result<Fetched, StoreError>,
    request: &ReadRequest,
    limit: u64,
) -> Option<IndexView> {
    let Fetched { bytes, version } = stored.as_ref().ok()?;
    // A store that keeps no tags cannot confirm the payload version an index names.
    version.tag.as_ref()?;
    let view = IndexView::claimed(bytes.clone(), version.clone()).ok()?;
    let header = &view.header;
    let window = request.window(header.lines(), limit);
    if window.is_empty() {
        return None;
    }
    // Every line takes a byte at least: a page from line `HEAD_BYTES` on lies beyond them.
    if window.start >= HEAD_BYTES {
        return Some(view);
    }
    let entries = header.block_entries(window.start);
    let entries = view
        .prefix
        .get(entries.start as usize..entries.end as usize)?;
    let (start, _) = header.block_start(window.start, entries);
    (start.offset >= HEAD_BYTES).then_some(view)
}

/// The payload's version and first [`HEAD_BYTES`] (all of a small spill), in one read;
/// when the store cannot serve that range (an empty payload), its version alone.
async fn payload_head<R: SpillReader>(
    reader: &R,
    handle: &str,
) -> Result<(Version, Bytes), PageError> {
    match reader.fetch(handle, Part::Payload, 0..HEAD_BYTES).await {
        Ok(Fetched { bytes, version }) => Ok((version, bytes)),
        Err(StoreError::Backend(_)) => Ok((reader.head(handle).await?, Bytes::new())),
        Err(e) => Err(e.into()),
    }
}

/// Index the payload (from `head` when it holds all of it, else by streaming it once); store
/// the index beside it when the payload has a tag to bind it to.
async fn rebuild<R: SpillReader>(
    reader: &R,
    handle: &str,
    payload: &Version,
    head: &[u8],
) -> Result<IndexView, PageError> {
    let index = match head.len() as u64 == payload.size {
        true => Index::build(head),
        false => stream_lines(reader, handle, payload, 0, IndexBuilder::new())
            .await?
            .finish(),
    };
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
    spill: &Spill<'_>,
) -> Result<String, PageError> {
    let view = match spill.opened.as_ref() {
        Opened::Whole(version) => {
            let data = held_or_read(
                reader,
                &request.handle,
                Part::Payload,
                version,
                &spill.head,
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
    let (start, end) = locate(reader, &request.handle, spill, view, window.clone()).await?;
    let preroll = start.offset + view.header.checkpoint_bytes();
    // Every line takes a byte at least: an index that puts the page's lines in no bytes does not
    // describe this payload (and no read would check it).
    let range = start.offset..end.min(preroll + PAGE_BYTES_CAP as u64);
    if range.is_empty() {
        return Err(PageError::Stale);
    }
    let window = window.start - start.line..window.end - start.line;
    let data = page_bytes(reader, request, spill, view, range, &window).await?;
    let lines = window_lines(&data, window.clone());
    Ok(render(
        &request.handle,
        total,
        window.end - window.start,
        lines,
    ))
}

/// The payload bytes `range` that a page's `window` of lines (counted from the range's first
/// line, which starts it) is read from: held, or read. A range longer than `B` +
/// [`LIKELY_PAGE_BYTES`] is read that far first, and the rest only when those bytes do not
/// decide the page ([`decided_by`]); from then on the spill's pages read their whole range at
/// once.
async fn page_bytes<R: SpillReader>(
    reader: &R,
    request: &ReadRequest,
    spill: &Spill<'_>,
    view: &IndexView,
    range: Range<u64>,
    window: &Range<u64>,
) -> Result<Bytes, PageError> {
    let (handle, payload) = (&request.handle, &view.payload);
    let likely = range.start + view.header.checkpoint_bytes() + LIKELY_PAGE_BYTES;
    if let Some(bytes) = held_slice(0, &spill.head, &range) {
        return Ok(bytes);
    }
    let whole = &view.reads_whole_ranges;
    if range.end <= likely || whole.load(Ordering::Relaxed) {
        return fetch_checked(reader, handle, Part::Payload, payload, range).await;
    }
    let first = fetch_checked(reader, handle, Part::Payload, payload, range.start..likely).await?;
    let shown = window.end - window.start;
    if decided_by(&first, window_ranges(&first, window.clone()), shown) {
        return Ok(first);
    }
    whole.store(true, Ordering::Relaxed);
    let rest = fetch_checked(reader, handle, Part::Payload, payload, likely..range.end).await?;
    Ok([first.as_ref(), rest.as_ref()].concat().into())
}

/// Bytes `range` of `part` at `version`: from `held`, its first bytes, when they cover the
/// range, or read.
async fn held_or_read<R: SpillReader>(
    reader: &R,
    handle: &str,
    part: Part,
    version: &Version,
    held: &Bytes,
    range: Range<u64>,
) -> Result<Bytes, PageError> {
    if let Some(bytes) = held_slice(0, held, &range) {
        return Ok(bytes);
    }
    fetch_checked(reader, handle, part, version, range).await
}

/// Bytes `range` of an object from `held`, its bytes from offset `at`, when they cover it.
fn held_slice(at: u64, held: &Bytes, range: &Range<u64>) -> Option<Bytes> {
    let covered = at <= range.start && range.end <= at + held.len() as u64;
    covered.then(|| held.slice((range.start - at) as usize..(range.end - at) as usize))
}

/// [`offset_page`] over a payload in memory.
pub(crate) fn offset_page_in_memory(data: &[u8], request: &ReadRequest, limit: u64) -> String {
    let total = split_lines(data).count() as u64;
    let window = request.window(total, limit);
    let lines = window_lines(data, window.clone());
    render(&request.handle, total, window.end - window.start, lines)
}

/// The nearest line start at or before `window.start`, from the index's entries, and where the
/// window's lines end at the latest.
async fn locate<R: SpillReader>(
    reader: &R,
    handle: &str,
    spill: &Spill<'_>,
    view: &IndexView,
    window: Range<u64>,
) -> Result<(LineStart, u64), PageError> {
    let header = &view.header;
    let line = window.start;
    let view = &*whole_if_due(reader, handle, spill, view).await?;
    let ahead = spill.ahead.as_ref();
    let entries = index_bytes(reader, handle, view, ahead, header.block_entries(line)).await?;
    let end = header.lines_end(line, window.end, &entries);
    let (start, checkpoints) = header.block_start(line, &entries);
    if checkpoints.is_empty() {
        return Ok((start, end));
    }
    let checkpoints = index_bytes(reader, handle, view, ahead, checkpoints).await?;
    let start = header.nearest(line, start, &checkpoints);
    let end = header
        .checkpoint_end(window.end, start.offset, &checkpoints)
        .map_or(end, |at| at.min(end));
    Ok((start, end))
}

/// `view`, or, for a spill paged again whose index fits the cache but is not held whole, the whole
/// index: read once, in one read, and cached, so that later pages read no index bytes.
async fn whole_if_due<'v, R: SpillReader>(
    reader: &R,
    handle: &str,
    spill: &Spill<'_>,
    view: &'v IndexView,
) -> Result<Cow<'v, IndexView>, PageError> {
    let Some(cache) = spill.cached else {
        return Ok(Cow::Borrowed(view));
    };
    if view.is_whole() || !view.fits_cache_whole() || view.object.tag.is_none() {
        return Ok(Cow::Borrowed(view));
    }
    let held = view.prefix.len() as u64;
    let rest = fetch_checked(
        reader,
        handle,
        Part::Index,
        &view.object,
        held..view.object.size,
    );
    let whole = IndexView {
        prefix: [view.prefix.as_ref(), rest.await?.as_ref()].concat().into(),
        ..view.clone()
    };
    cache.put(handle, &Opened::Indexed(whole.clone()));
    Ok(Cow::Owned(whole))
}

/// Bytes `range` of the index object: from the bytes held (its first bytes, or those read
/// `ahead` of the same object), or read from the same object.
async fn index_bytes<R: SpillReader>(
    reader: &R,
    handle: &str,
    view: &IndexView,
    ahead: Option<&Ahead>,
    range: Range<u64>,
) -> Result<Bytes, PageError> {
    let same_object = |a: &&Ahead| a.fetched.version == view.object && view.object.tag.is_some();
    let ahead = ahead.filter(same_object);
    if let Some(bytes) = ahead.and_then(|a| held_slice(a.at, &a.fetched.bytes, &range)) {
        return Ok(bytes);
    }
    if range.end > view.prefix.len() as u64 && view.object.tag.is_none() {
        return Err(PageError::Stale);
    }
    held_or_read(
        reader,
        handle,
        Part::Index,
        &view.object,
        &view.prefix,
        range,
    )
    .await
}
