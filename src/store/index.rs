//! A spill's line index beside its payload, at `<object>.idx`: built while the spill is written
//! and bound to the payload's new tag, and the ranged reads paging makes ([`SpillReader`]).

use std::borrow::Cow;
use std::ops::Range;

use bytes::Bytes;
use futures::FutureExt as _;
use object_store::path::Path;
use object_store::{GetOptions, ObjectStoreExt as _};

use super::StoreError;
use super::{Call, INDEX_SUFFIX, ReadAs, Reader, Store};
use crate::read::line_index::{Index, MIN_INDEXED_BYTES};
use crate::read::{Fetched, IndexCache, Part, SpillReader, Version};

/// The index of a payload about to be written, built on a blocking thread; `None` for a spill
/// too small to need one, or when building it failed (a panic, logged at ERROR: the spill is
/// written without an index, and the first page by offset builds one).
pub(super) async fn build(data: Bytes) -> Option<Index> {
    if (data.len() as u64) < MIN_INDEXED_BYTES {
        return None;
    }
    let built = tokio::task::spawn_blocking(move || Index::build(&data)).await;
    built
        .map_err(|e| crate::read::joined("building a line index", e))
        .ok()
}

/// The object path of the line index of the payload at `path`.
pub(super) fn index_path(path: &Path) -> Path {
    Path::from(format!("{path}{INDEX_SUFFIX}"))
}

impl Store {
    /// Store `index` of the payload just written to `path` at `payload` beside it, and cache it
    /// under `cached` (the writer's [`Reader::cache_key`], if it keeps one).
    ///
    /// A failure only costs speed: the spill stands, any older index describes an older payload
    /// version and is not trusted, and the first page rebuilds the index.
    pub(super) async fn store_index(
        &self,
        path: &Path,
        handle: &str,
        cached: Option<&str>,
        index: Index,
        payload: &Version,
    ) {
        let Some(tag) = payload.tag.as_deref() else {
            tracing::debug!(target: "overspill::store", "{path} has no tag to bind its index to");
            return;
        };
        let stored = async {
            let encoded = index
                .encode(tag)
                .map_err(|e| StoreError::Backend(e.into()))?;
            let encoded = Bytes::from(encoded);
            self.put_index(handle, encoded.clone()).await?;
            Ok::<_, StoreError>(encoded)
        };
        match stored.await {
            Ok(encoded) => {
                if let Some(cached) = cached {
                    self.inner.cache.insert_stored(cached, &encoded, payload);
                }
            }
            Err(e) => tracing::warn!(
                target: "overspill::store",
                error_type = e.type_name(),
                "could not store the line index of {path}: {e}"
            ),
        }
    }
}

impl Store {
    /// The payload's version, if `reader` admits its writer (one `HEAD`, whose reply carries
    /// the writer).
    async fn head_as(&self, handle: &str, reader: &Reader) -> Result<Version, StoreError> {
        let path = self.for_read(handle, Part::Payload)?;
        let head = GetOptions::new().with_head(true);
        let head = self.reply(&path, head, handle, Some(reader)).await?;
        Ok(Version {
            size: head.meta.size,
            tag: head.meta.e_tag,
        })
    }

    /// Bytes `range` of `part`; of the payload only if `reader` admits its writer. An index is
    /// read unchecked: every read of a page reads the payload's version (or the payload) for its
    /// reader too, and shows nothing of an index alone.
    async fn fetch_as(
        &self,
        handle: &str,
        part: Part,
        range: Range<u64>,
        reader: &Reader,
    ) -> Result<Fetched, StoreError> {
        let path = self.for_read(handle, part)?;
        let options = GetOptions::new().with_range(Some(range));
        let reader = (part == Part::Payload).then_some(reader);
        let (bytes, version) = self.get(&path, options, handle, reader).await?;
        Ok(Fetched { bytes, version })
    }
}

/// The operator's reads: every spill.
impl SpillReader for Store {
    async fn head(&self, handle: &str) -> Result<Version, StoreError> {
        self.head_as(handle, &Reader::operator()).await
    }

    async fn fetch(
        &self,
        handle: &str,
        part: Part,
        range: Range<u64>,
    ) -> Result<Fetched, StoreError> {
        (self.fetch_as(handle, part, range, &Reader::operator())).await
    }

    async fn put_index(&self, handle: &str, index: Bytes) -> Result<(), StoreError> {
        let (path, len) = (index_path(&self.locate(handle)?), index.len() as u64);
        let put = self.inner.store.put(&path, index.into());
        let put = put.map(|r| {
            r.map(drop)
                .map_err(|e| self.map_error(e, handle, Call::Write))
        });
        self.bounded(len, put).await
    }

    fn index_cache(&self) -> Option<&IndexCache> {
        Some(&self.inner.cache)
    }

    fn cache_key<'h>(&self, handle: &'h str) -> Option<Cow<'h, str>> {
        Reader::operator().cache_key(handle)
    }
}

/// One reader's reads: the spills it does not admit read as missing ones, and its opened indexes
/// are cached apart from those of readers that see other spills.
impl SpillReader for ReadAs<'_> {
    async fn head(&self, handle: &str) -> Result<Version, StoreError> {
        self.store.head_as(handle, self.reader).await
    }

    async fn fetch(
        &self,
        handle: &str,
        part: Part,
        range: Range<u64>,
    ) -> Result<Fetched, StoreError> {
        (self.store.fetch_as(handle, part, range, self.reader)).await
    }

    async fn put_index(&self, handle: &str, index: Bytes) -> Result<(), StoreError> {
        self.store.put_index(handle, index).await
    }

    fn index_cache(&self) -> Option<&IndexCache> {
        self.store.index_cache()
    }

    fn cache_key<'h>(&self, handle: &'h str) -> Option<Cow<'h, str>> {
        self.reader.cache_key(handle)
    }
}
