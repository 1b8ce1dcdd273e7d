//! A spill's line index beside its payload, at `<object>.idx`: built while the spill is written
//! and bound to the payload's new tag, and the ranged reads paging makes ([`SpillReader`]).

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path;
use object_store::{GetOptions, ObjectStore, ObjectStoreExt as _, PutOptions};

use super::local::{Access, LocalBackend};
use super::{Backend, Call, INDEX_SUFFIX, Store};
use crate::limits::StoreError;
use crate::read::line_index::{Index, MIN_INDEXED_BYTES};
use crate::read::{Fetched, IndexCache, Part, SpillReader, Version};

/// Payloads smaller than this are indexed on the calling task rather than a blocking thread.
const INLINE_INDEX_BYTES: usize = 256 * 1024;

/// The index of a payload about to be written; `None` for a spill too small to need one.
pub(super) async fn build(data: Bytes) -> Option<Index> {
    if (data.len() as u64) < MIN_INDEXED_BYTES {
        return None;
    }
    if data.len() < INLINE_INDEX_BYTES {
        return Some(Index::build(&data));
    }
    tokio::task::spawn_blocking(move || Index::build(&data))
        .await
        .ok()
}

fn index_path(path: &Path) -> Path {
    Path::from(format!("{path}{INDEX_SUFFIX}"))
}

impl Store {
    /// Store `index` of the payload just written to `path` at `payload` beside it, and cache it.
    ///
    /// A failure only costs speed: the spill stands, any older index describes an older payload
    /// version and is not trusted, and the first page rebuilds the index.
    pub(super) async fn store_index(
        &self,
        fs: &Arc<dyn ObjectStore>,
        path: &Path,
        handle: &str,
        index: Index,
        payload: &Version,
    ) {
        let Some(tag) = payload.tag.as_deref() else {
            tracing::debug!(target: "overspill::store", "{path} has no tag to bind its index to");
            return;
        };
        let stored = match index.encode(tag) {
            Ok(encoded) => {
                let encoded = Bytes::from(encoded);
                let put = self
                    .put_index_at(fs, &index_path(path), encoded.clone())
                    .await;
                put.map(|tag| (encoded, tag))
            }
            Err(e) => Err(StoreError::Backend(e.into())),
        };
        match stored {
            Ok((encoded, tag)) => {
                let object = Version {
                    size: encoded.len() as u64,
                    tag,
                };
                self.inner
                    .cache
                    .insert_stored(handle, &encoded, object, payload);
            }
            Err(e) => tracing::warn!(
                target: "overspill::store",
                error_type = e.type_name(),
                "could not store the line index of {path}: {e}"
            ),
        }
    }

    async fn put_index_at(
        &self,
        fs: &Arc<dyn ObjectStore>,
        location: &Path,
        index: Bytes,
    ) -> Result<Option<String>, StoreError> {
        self.bounded(index.len() as u64, async {
            fs.put_opts(location, index.into(), PutOptions::default())
                .await
                .map(|put| put.e_tag)
                .map_err(|e| self.map_error(e, location.as_ref(), Call::Write))
        })
        .await
    }

    /// The object path of `part` of `handle` (no local checks yet); a payload handle too long to
    /// have been stored is `NotFound`.
    fn part_path(&self, handle: &str, part: Part) -> Result<Path, StoreError> {
        match part {
            Part::Payload => self.read_path(handle),
            Part::Index => Ok(index_path(&self.locate(handle)?)),
        }
    }
}

impl SpillReader for Store {
    async fn head(&self, handle: &str) -> Result<Version, StoreError> {
        let (fs, path) = self.for_read(handle).await?;
        self.bounded(0, async {
            let meta = fs.head(&path).await;
            meta.map(|m| Version {
                size: m.size,
                tag: m.e_tag,
            })
            .map_err(|e| self.map_error(e, handle, Call::Read))
        })
        .await
    }

    async fn fetch(
        &self,
        handle: &str,
        part: Part,
        range: Range<u64>,
    ) -> Result<Fetched, StoreError> {
        let location = self.part_path(handle, part)?;
        let fs = match &self.inner.backend {
            Backend::Object(fs) => fs,
            Backend::Local(local) => {
                let handle = handle.to_owned();
                let bytes = range.end.saturating_sub(range.start);
                let read = move |l: &LocalBackend| l.read(&location, &handle, range);
                let (bytes, version) = self.on_disk(local, bytes, read).await?;
                return Ok(Fetched { bytes, version });
            }
        };
        let options = GetOptions::new().with_range(Some(range));
        let (bytes, version) = self.get(fs, &location, options, handle).await?;
        Ok(Fetched { bytes, version })
    }

    async fn put_index(&self, handle: &str, index: Bytes) -> Result<Option<String>, StoreError> {
        let path = index_path(&self.locate(handle)?);
        let (fs, location) = self.backend_for(path, handle, Access::Write).await?;
        self.put_index_at(&fs, &location, index).await
    }

    fn index_cache(&self) -> Option<&IndexCache> {
        Some(&self.inner.cache)
    }
}
