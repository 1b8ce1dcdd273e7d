//! Where pages come from: the [`SpillReader`] a store implements, and [`stream_lines`], which
//! walks a payload in bounded, line-aligned chunks over ranged reads.

use std::borrow::Cow;
use std::ops::{ControlFlow, Range};

use bytes::Bytes;
use futures::future::OptionFuture;

use super::StoreError;
use super::cache::IndexCache;
use super::line_index::Version;
use super::lines::{
    ChunkSink, LineChunk, count_lines, last_line_end, next_break, safe_piece_end, split_lines,
};

/// Bytes a payload is streamed in by default: two of these are in memory at once (one being
/// scanned, the next being read).
pub const CHUNK_BYTES: usize = 4 << 20;

/// The two objects of a spill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The payload itself.
    Payload,
    /// Its line index, beside it as `<object>.idx` (see [`super::line_index`]).
    Index,
}

/// Bytes read from one object, and the version of the object they came from.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The bytes of the requested range (fewer when the object ends sooner).
    pub bytes: Bytes,
    /// The object's version at the time of the read.
    pub version: Version,
}

/// What paging needs from a store: a payload's version, ranged reads of the payload and of the
/// index beside it, and a place to keep a rebuilt index. Reading only; the engine's
/// [`SpillStore`](crate::limits::SpillStore) writes.
#[allow(async_fn_in_trait)]
pub trait SpillReader {
    /// The payload's version; [`StoreError::NotFound`] for an unknown handle.
    async fn head(&self, handle: &str) -> Result<Version, StoreError>;

    /// Bytes `range` of `part` (`range.start` below the object's size, `range.end` clamped to
    /// it), with the version they were read from; [`StoreError::NotFound`] if there is no object.
    async fn fetch(
        &self,
        handle: &str,
        part: Part,
        range: Range<u64>,
    ) -> Result<Fetched, StoreError>;

    /// Store an encoded index beside the payload, replacing any.
    async fn put_index(&self, handle: &str, index: Bytes) -> Result<(), StoreError>;

    /// The opened indexes this reader keeps between pages, if any.
    fn index_cache(&self) -> Option<&IndexCache> {
        None
    }

    /// The key `handle`'s opened index is cached under, or `None` to cache nothing for it:
    /// readers that may see different spills through one cache must key their entries apart.
    fn cache_key<'h>(&self, handle: &'h str) -> Option<Cow<'h, str>> {
        Some(Cow::Borrowed(handle))
    }

    /// Bytes per ranged read when streaming a payload.
    fn chunk_bytes(&self) -> usize {
        CHUNK_BYTES
    }
}

/// Why a page could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PageError {
    /// The store failed, or does not have the handle.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The payload (or its index) changed while it was being read.
    #[error("the spill changed while it was read")]
    Stale,
}

/// Feed the payload at `version`, from the line start at `from` to its end, to `sink` in
/// line-aligned chunks of about [`SpillReader::chunk_bytes`]; returns the sink.
///
/// The next chunk is read while the sink works on the current one (on a blocking thread), so at
/// most two chunks are in memory. Every read is checked against `version`: a payload that changes
/// on the way fails the stream with [`PageError::Stale`].
pub(crate) async fn stream_lines<R: SpillReader, S: ChunkSink>(
    reader: &R,
    handle: &str,
    version: &Version,
    from: u64,
    mut sink: S,
) -> Result<S, PageError> {
    if from >= version.size {
        return Ok(sink);
    }
    let want = reader.chunk_bytes().max(1);
    let (mut offset, mut starts_line) = (from, true);
    let (mut bytes, mut ends_line) = read_chunk(reader, handle, version, offset, want).await?;
    loop {
        let next = offset + bytes.len() as u64;
        let fed = tokio::task::spawn_blocking(move || {
            let flow = sink.feed(LineChunk {
                offset,
                bytes: &bytes,
                starts_line,
                ends_line,
            });
            (sink, flow)
        });
        let prefetch =
            (next < version.size).then(|| read_chunk(reader, handle, version, next, want));
        let (fed, prefetched) = futures::join!(fed, OptionFuture::from(prefetch));
        let flow;
        (sink, flow) = fed.map_err(|e| joined("a scan of the spill", e))?;
        match (flow, prefetched) {
            (ControlFlow::Continue(()), Some(read)) => {
                (offset, starts_line) = (next, ends_line);
                (bytes, ends_line) = read?;
            }
            _ => return Ok(sink),
        }
    }
}

/// The byte offset line `index` of the payload at `version` starts at (lines as
/// `str.splitlines()` counts them), streaming it from the start; the payload's size if it has
/// fewer lines.
pub(crate) async fn line_offset<R: SpillReader>(
    reader: &R,
    handle: &str,
    version: &Version,
    index: u64,
) -> Result<u64, PageError> {
    let finder = LineFinder {
        target: index,
        line: 0,
        found: None,
    };
    let finder = stream_lines(reader, handle, version, 0, finder).await?;
    Ok(finder.found.unwrap_or(version.size))
}

/// Finds where line `target` starts, counting lines chunk by chunk.
struct LineFinder {
    target: u64,
    /// The number of the line that starts the next whole line of the chunk being fed.
    line: u64,
    found: Option<u64>,
}

impl ChunkSink for LineFinder {
    fn feed(&mut self, chunk: LineChunk<'_>) -> ControlFlow<()> {
        let data = chunk.bytes;
        let mut at = 0;
        if !chunk.starts_line {
            // The rest of a line begun in an earlier chunk, up to its break.
            let Some((end, len)) = next_break(data, 0) else {
                return ControlFlow::Continue(());
            };
            at = end + len;
            self.line += 1;
        } else if !chunk.ends_line {
            // The start of a line longer than a chunk.
            return self.at(self.line, chunk.offset);
        }
        let lines = &data[at..];
        if self.line + count_lines(lines) <= self.target {
            self.line += count_lines(lines);
            return ControlFlow::Continue(());
        }
        let skip = (self.target - self.line) as usize;
        let start = split_lines(lines)
            .nth(skip)
            .map_or(lines.len(), |r| r.start);
        self.at(self.target, chunk.offset + (at + start) as u64)
    }
}

impl LineFinder {
    /// Line `line` starts at `offset`: found if it is the target.
    fn at(&mut self, line: u64, offset: u64) -> ControlFlow<()> {
        if line == self.target {
            self.found = Some(offset);
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}

/// The store's error for a blocking task doing `task` that did not finish: a panic is a bug
/// ([`StoreError::Bug`], final, logged at ERROR with its message); a cancelled task (the runtime
/// shutting down) may succeed on another worker.
pub(crate) fn joined(task: &'static str, error: tokio::task::JoinError) -> StoreError {
    match error.try_into_panic() {
        Ok(payload) => StoreError::panicked(task, payload.as_ref()),
        Err(error) => StoreError::Backend(Box::new(error)),
    }
}

/// The chunk at `offset`, and whether it ends a line: at least `want` bytes unless the payload
/// ends sooner, cut after its last line break, or (when it holds none) where no UTF-8 sequence or
/// line break is split. Grows the read when even that leaves nothing.
async fn read_chunk<R: SpillReader>(
    reader: &R,
    handle: &str,
    version: &Version,
    offset: u64,
    mut want: usize,
) -> Result<(Bytes, bool), PageError> {
    loop {
        let end = version.size.min(offset.saturating_add(want as u64));
        let bytes = fetch_checked(reader, handle, Part::Payload, version, offset..end).await?;
        if end == version.size {
            return Ok((bytes, true));
        }
        if let Some(cut) = last_line_end(&bytes) {
            return Ok((bytes.slice(..cut), true));
        }
        let cut = safe_piece_end(&bytes);
        if cut > 0 {
            return Ok((bytes.slice(..cut), false));
        }
        want = want.saturating_mul(2);
    }
}

/// Bytes `range` of `part`, provided they all came from the object at `version` (nothing is read
/// for an empty range).
pub(crate) async fn fetch_checked<R: SpillReader>(
    reader: &R,
    handle: &str,
    part: Part,
    version: &Version,
    range: Range<u64>,
) -> Result<Bytes, PageError> {
    if range.is_empty() {
        return Ok(Bytes::new());
    }
    let fetched = reader.fetch(handle, part, range.clone()).await?;
    if fetched.version != *version || fetched.bytes.len() as u64 != range.end - range.start {
        return Err(PageError::Stale);
    }
    Ok(fetched.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::SpillStore as _;

    /// A scanner that panics.
    struct Panics;

    impl ChunkSink for Panics {
        fn feed(&mut self, _chunk: LineChunk<'_>) -> ControlFlow<()> {
            panic!("the scanner broke")
        }
    }

    /// A panic inside a scan is a bug: a final error that says so, logged at ERROR with the
    /// panic's message, never a retryable store failure.
    #[tokio::test]
    async fn a_panicking_scan_is_a_bug() {
        let store = crate::store::Store::open(Some("memory://")).expect("store");
        store
            .write("r/c.0", Bytes::from("a\nb\n"))
            .await
            .expect("written");
        let version = store.head("r/c.0").await.expect("stored");
        let logs = crate::test_logs::Logs::default();
        let _guard = logs.capture();
        let failed = stream_lines(&store, "r/c.0", &version, 0, Panics).await;
        let Err(PageError::Store(error)) = failed else {
            panic!("a store error")
        };
        assert!(
            matches!(&error, StoreError::Bug { message, .. } if message == "the scanner broke"),
            "{error:?}"
        );
        assert!(!error.is_retryable() && !error.is_unknown_handle());
        assert_eq!(
            error.to_string(),
            "a bug in Overspill: a scan of the spill panicked (the scanner broke); the call \
             cannot succeed, please report it"
        );
        let text = logs.text();
        assert!(
            text.contains("ERROR") && text.contains("the scanner broke"),
            "{text}"
        );
    }
}
