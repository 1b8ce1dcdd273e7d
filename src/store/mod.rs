//! Spill storage over [`object_store`]: one [`Store`] for S3-compatible servers, GCS, Azure, a
//! local directory and memory, chosen by URL.
//!
//! - `s3://bucket/prefix`: endpoint, region, credentials and `allow_http` from the usual `AWS_*`
//!   variables (`AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//!   `AWS_ALLOW_HTTP`), URL query parameters (`?endpoint=…&region=…&allow_http=true`) or
//!   [`StoreOptions`]; path-style requests, so self-hosted servers (SeaweedFS, MinIO) work.
//! - `gs://bucket/prefix`, `az://container/prefix`: object_store's own environment variables.
//! - `file:///path`: a local directory with the reference LocalFileStore's security model
//!   (root `0700`, owned by the effective user, not a symlink, targets confined to the root).
//!   `None` is `<system temp dir>/overspill-<euid>`.
//! - `memory://`: in-process (clones of one [`Store`] share it).
//!
//! A spill's object lives at `{prefix}/tool_output_limits/{sanitized handle}` and its sparse line
//! index ([`crate::read::line_index`]) beside it at `… .idx`, written with it, so that
//! [`read_tool_result`](crate::read::read_tool_result) serves a page by offset with a few small
//! ranged reads. Writes are overwrites (atomic: a reader or a concurrent writer never sees a torn
//! object); payloads above the multipart threshold upload in parts without copying. Every call is
//! bounded by a deadline.
//!
//! # Retention
//!
//! `overspill spills gc --older-than 6h` ([`Store::gc`]) deletes old spills on any backend from a
//! full listing. In production on S3, a bucket lifecycle rule expiring
//! `<prefix>/tool_output_limits/` after a day does the same without a cron (the rule is in
//! `deploy/README.md`).
//!
//! ```
//! use bytes::Bytes;
//! use overspill::limits::SpillStore;
//! use overspill::store::Store;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let store = Store::open(Some("memory://"))?;
//! let handle = store.write("run-1/call 1.0", Bytes::from_static(b"a\nb\n")).await?;
//! assert_eq!(handle, "run-1/call 1.0");
//! assert_eq!(store.read(&handle).await?, "a\nb\n");
//! assert!(store.read("../etc/passwd").await.unwrap_err().is_unknown_handle());
//! # Ok::<(), overspill::store::StoreError>(())
//! # }).unwrap();
//! ```

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt as _;
use object_store::path::Path;
use object_store::{GetOptions, GetResult, ObjectStore, PutOptions};

use crate::diagnose;
use crate::limits::SpillStore;
use crate::read::{IndexCache, Part, Version};

mod backend;
mod explain;
mod gc;
mod index;
mod key;
mod listing;
mod local;
mod meta;
mod options;
mod scope;
mod upload;
mod url;

pub use crate::read::StoreError;
pub use backend::Bucket;
pub(crate) use explain::Cause;
#[cfg(feature = "worker")]
pub(crate) use explain::{explain, rejection};
pub use gc::{GcReport, SpillInfo};
use key::{INDEX_SUFFIX, NAMESPACE, check_handle};
pub use key::{sanitize_key, sanitize_segment};
pub(crate) use listing::MAX_LIST_LIMIT;
pub use listing::{DEFAULT_LIST_LIMIT, ListRequest, ListedSpill, RunListing};
pub use meta::SpillFacts;
pub use options::StoreOptions;
pub use scope::{ReadScope, Reader, Scope};

use local::LocalStore;
use url::StoreUrl;

/// The longest object key S3, GCS and Azure hold, in bytes.
const MAX_KEY_BYTES: usize = 1024;

/// The longest file name a local filesystem holds, in bytes (`NAME_MAX`).
const MAX_NAME_BYTES: usize = 255;

/// The spill store chosen by URL. Cheap to clone; clones share the backend and the index cache.
#[derive(Debug, Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    url: String,
    /// Every call's objects: a bucket's client, or a local root ([`LocalStore`]).
    store: Arc<dyn ObjectStore>,
    /// The local root, where the objects are its files: named by file names, created by the
    /// store's check, and written whole.
    local: Option<LocalStore>,
    /// `{prefix}/tool_output_limits`, relative to the backend's root.
    base: Path,
    options: StoreOptions,
    cache: IndexCache,
}

/// What a failed call was doing: a 404 on a write or a listing means a missing bucket, not a
/// missing spill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    Read,
    Write,
    List,
}

impl Store {
    /// Open the store at `url` (`None`: the local default) with default [`StoreOptions`].
    pub fn open(url: Option<&str>) -> Result<Self, StoreError> {
        Self::open_with(url, StoreOptions::default())
    }

    /// Open the store at `url` (`None`: the local default) with `options`.
    ///
    /// An `s3://` store with a custom endpoint (`AWS_ENDPOINT_URL`, `?endpoint=`, or
    /// [`StoreOptions`]'s `endpoint`) and no credentials is refused as
    /// [`StoreError::Misconfigured`]: object_store would fall back to the EC2 instance metadata
    /// service, which a self-hosted server never answers for.
    pub fn open_with(url: Option<&str>, options: StoreOptions) -> Result<Self, StoreError> {
        let parsed = match url {
            None => StoreUrl::Local {
                root: local::default_root(),
            },
            Some(raw) => StoreUrl::parse(raw).map_err(|e| StoreError::Backend(Box::new(e)))?,
        };
        let (store, local, prefix, shown) = match parsed {
            StoreUrl::Local { root } => {
                let shown = ::url::Url::from_directory_path(&root)
                    .map_or_else(|()| root.display().to_string(), String::from);
                let local = LocalStore::new(root);
                let store: Arc<dyn ObjectStore> = Arc::new(local.clone());
                (store, Some(local), Path::default(), shown)
            }
            object => {
                let (store, prefix, url) = backend::connect(object, &options)?;
                (store, None, prefix, url)
            }
        };
        Ok(Self {
            inner: Arc::new(Inner {
                url: shown,
                store,
                local,
                base: prefix.join(NAMESPACE),
                cache: IndexCache::new(options.index_cache_bytes),
                options,
            }),
        })
    }

    /// The store's URL, for logs: without query parameters, any password redacted.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// Check that the store can be used before the first spill: a local root is created (or
    /// checked: a directory owned by this user, not a symlink); a bucket answers one listing
    /// request (it exists, the credentials are accepted). Bounded by the per-call timeout.
    pub async fn check(&self) -> Result<(), StoreError> {
        if let Some(local) = &self.inner.local {
            self.bounded(0, local.ensure()).await?;
        }
        let failed = |e| self.map_error(e, "", Call::List);
        let listed = self.inner.store.list_with_delimiter(Some(&self.inner.base));
        let listed = self.bounded(0, listed.map(|r| r.map_err(failed)));
        listed.await.map(drop)
    }

    /// Whether a spill here records its writer: always on an object store (its metadata), on a
    /// local root only where the filesystem keeps user extended attributes. Where it does not,
    /// every spill's writer is unknown, and only a reader of every spill reads any.
    pub async fn records_writers(&self) -> Result<bool, StoreError> {
        match &self.inner.local {
            None => Ok(true),
            Some(local) => self.bounded(0, local.keeps_metadata()).await,
        }
    }

    /// The whole payload stored under `handle`.
    pub async fn read(&self, handle: &str) -> Result<Bytes, StoreError> {
        self.read_for(handle, None).await
    }

    /// The whole payload stored under `handle`, if `reader` (when given) admits its writer.
    async fn read_for(&self, handle: &str, reader: Option<&Reader>) -> Result<Bytes, StoreError> {
        let path = self.for_read(handle, Part::Payload)?;
        let (bytes, _) = (self.get(&path, GetOptions::default(), handle, reader)).await?;
        Ok(bytes)
    }

    /// The spill store for outputs of `tool` written for `writer`: its spills carry the tool's
    /// name and the writer's [`Scope`] (see [`SpillFacts`]).
    pub fn for_tool<'a>(&'a self, tool: &'a str, writer: &'a Reader) -> ToolSpills<'a> {
        ToolSpills {
            store: self,
            tool,
            writer,
        }
    }

    /// This store's spills as `reader` may see them: a spill it does not admit reads exactly as
    /// a missing one (see [`Reader`]).
    pub fn read_as<'a>(&'a self, reader: &'a Reader) -> ReadAs<'a> {
        ReadAs {
            store: self,
            reader,
        }
    }

    /// Write the output of `tool` (if known) under `key` for `writer`, with its [`SpillFacts`]
    /// as metadata where the backend keeps any.
    async fn write_output(
        &self,
        key: &str,
        data: Bytes,
        tool: Option<&str>,
        writer: &Reader,
        step: Option<u64>,
    ) -> Result<String, StoreError> {
        let path = self.locate(key)?;
        self.too_long(&path, key)?;
        let len = data.len() as u64;
        // The payload is measured for its metadata and uploaded while its line index is built;
        // the index is stored once the payload's new tag, which binds it, is known.
        // Entries of the old payload are dropped here for speed only: any other reader's entry
        // (another scope's, another process's) is checked against the payload on its next page
        // (see `read::offset`), so none shows the old spill's text.
        let cached = writer.cache_key(key);
        self.inner.cache.remove(key);
        if let Some(cached) = &cached {
            self.inner.cache.remove(cached);
        }
        // A refused or failed write returns at once, without waiting for the index.
        let built = index::build(data.clone()).map(Ok);
        let put = self.put(&path, data, tool, key, writer, step);
        let (tag, built) = futures::try_join!(put, built)?;
        if let Some(built) = built {
            let payload = Version { size: len, tag };
            self.store_index(&path, key, cached.as_deref(), built, &payload)
                .await;
        }
        tracing::debug!(target: "overspill::store", bytes = len, "spilled {key:?} to {path}");
        Ok(key.to_owned())
    }

    /// Upload `data`, the output of `tool` (if known) written by `writer` (recording its scope,
    /// if any), to `path` (spill `key`'s) within the deadline for its size (in parts when large),
    /// with its facts; returns the new object's tag. On a local root, a writer whose own reads
    /// need its scope kept ([`Reader::reads_need_its_scope`]) fails the write when its extended
    /// attribute cannot be set: the spill would otherwise be one its workflow can never read.
    async fn put(
        &self,
        path: &Path,
        data: Bytes,
        tool: Option<&str>,
        key: &str,
        writer: &Reader,
        step: Option<u64>,
    ) -> Result<Option<String>, StoreError> {
        let (fs, options) = (self.inner.store.as_ref(), &self.inner.options);
        let attributes = SpillFacts::measure(&data, tool, key, writer.scope(), step)
            .await
            .to_attributes();
        let len = data.len() as u64;
        // A large upload to a bucket goes in parts; a local file is written whole.
        let multipart = self.inner.local.is_none()
            && data.len() >= options.multipart_threshold
            && data.len() > options.part_size.max(1);
        let put = self.bounded(len, async {
            let put = if multipart {
                upload::put_multipart(fs, path, data, attributes, options).await
            } else {
                let mut put = PutOptions::from(attributes);
                if writer.reads_need_its_scope() {
                    put.extensions.insert(local::MetadataRequired);
                }
                fs.put_opts(path, data.into(), put).await
            };
            put.map_err(|e| self.map_error(e, key, Call::Write))
        });
        Ok(put.await?.e_tag)
    }

    /// The object at `path` (or the part `options` asks for), with its version; with a
    /// `reader`, only a spill it admits (see [`Self::reply`]).
    async fn get(
        &self,
        path: &Path,
        options: GetOptions,
        handle: &str,
        reader: Option<&Reader>,
    ) -> Result<(Bytes, Version), StoreError> {
        let result = self.reply(path, options, handle, reader).await?;
        let version = Version {
            size: result.meta.size,
            tag: result.meta.e_tag.clone(),
        };
        let size = result.range.end - result.range.start;
        let failed = |e| self.map_error(e, handle, Call::Read);
        let bytes = self.bounded(size, result.bytes().map(|r| r.map_err(failed)));
        Ok((bytes.await?, version))
    }

    /// The reply to a get (or head) of the spill `handle` at `path`; with a `reader`, the one
    /// check of who reads what: [`StoreError::NotFound`], exactly as for a missing spill, unless
    /// `reader` admits the spill's writer. Its scope comes with the reply (an object store's user
    /// metadata arrives with every GET and HEAD; a local root reads it when asked, after the file
    /// was opened). A spill whose writer is unknown is admitted only by a reader of every spill.
    async fn reply(
        &self,
        path: &Path,
        options: GetOptions,
        handle: &str,
        reader: Option<&Reader>,
    ) -> Result<GetResult, StoreError> {
        let reader = reader.filter(|r| !r.sees_all());
        let options = SpillFacts::asked_if(reader.is_some(), options);
        let failed = |e| self.map_error(e, handle, Call::Read);
        let reply = self.inner.store.get_opts(path, options);
        let reply = self.bounded(0, reply.map(|r| r.map_err(failed))).await?;
        let writer = || SpillFacts::from_attributes(&reply.attributes).scope;
        if reader.is_some_and(|r| !r.admits(writer().as_ref())) {
            return Err(StoreError::NotFound {
                handle: handle.to_owned(),
            });
        }
        Ok(reply)
    }

    /// The sanitized object path of `key` (no checks).
    fn object_path(&self, key: &str) -> Path {
        key::segments(key)
            .iter()
            .fold(self.inner.base.clone(), |p, s| p.join(s.as_ref()))
    }

    /// The object path of `handle`, or why it is refused.
    fn locate(&self, handle: &str) -> Result<Path, StoreError> {
        check_handle(handle).map_err(|_| StoreError::OutsideStore {
            handle: handle.to_owned(),
        })?;
        Ok(self.object_path(handle))
    }

    /// The object path of `part` of `handle` for a read. A payload handle too long to have been
    /// stored is `NotFound`.
    fn for_read(&self, handle: &str, part: Part) -> Result<Path, StoreError> {
        let path = self.locate(handle)?;
        match part {
            Part::Index => Ok(index::index_path(&path)),
            Part::Payload if self.too_long(&path, handle).is_ok() => Ok(path),
            Part::Payload => Err(StoreError::NotFound {
                handle: handle.to_owned(),
            }),
        }
    }

    /// Refuse a key whose object (or line index beside it) the backend cannot name: over 1,024
    /// bytes of key on a blob store, a file name over 255 bytes on a local disk.
    fn too_long(&self, path: &Path, key: &str) -> Result<(), StoreError> {
        let (bytes, max) = match &self.inner.local {
            None => (path.as_ref().len() + INDEX_SUFFIX.len(), MAX_KEY_BYTES),
            Some(_) => {
                let longest = path.parts().map(|p| p.as_ref().len()).max().unwrap_or(0);
                (longest + INDEX_SUFFIX.len(), MAX_NAME_BYTES)
            }
        };
        if bytes > max {
            return Err(StoreError::KeyTooLong {
                key: key.to_owned(),
                bytes,
                max,
            });
        }
        Ok(())
    }

    /// The store's error for a failed `call`, in the server's words with the setting to fix: a
    /// missing bucket, refused credentials and a refused TLS handshake are
    /// [`StoreError::Misconfigured`] (final), a local file the worker may not read is
    /// [`StoreError::PermissionDenied`] (final), only a missing object on a read is `NotFound`, a
    /// deterministic 4xx is [`StoreError::Rejected`] (final, with the server's status and code),
    /// and a timeout, an unreachable endpoint or any other failure is retryable. A local root's
    /// refusal is the store's error already.
    fn map_error(&self, error: object_store::Error, handle: &str, call: Call) -> StoreError {
        let error = match error {
            object_store::Error::Generic { store, source } => match source.downcast() {
                Ok(refused) => return StoreError::about(*refused, handle),
                Err(source) => object_store::Error::Generic { store, source },
            },
            error => error,
        };
        let remote = self.inner.local.is_none();
        let (cause, text) = explain::explain(&error, self.url(), remote && call != Call::Read);
        let timeout = diagnose::chain(&error).any(|e| {
            e.downcast_ref::<object_store::client::HttpError>()
                .is_some_and(|h| h.kind() == object_store::client::HttpErrorKind::Timeout)
        });
        let denied = diagnose::io_kind(&error) == Some(std::io::ErrorKind::PermissionDenied);
        match cause {
            Cause::NoBucket if remote => StoreError::Misconfigured(text),
            _ if matches!(error, object_store::Error::NotFound { .. }) => StoreError::NotFound {
                handle: handle.to_owned(),
            },
            Cause::Credentials | Cause::Tls(_) => StoreError::Misconfigured(text),
            _ if timeout => StoreError::Timeout(self.inner.options.timeout),
            _ if !remote && denied => StoreError::PermissionDenied(format!(
                "store {} refused access: {error}",
                self.url()
            )),
            Cause::Unreachable => StoreError::Backend(text.into()),
            _ => match explain::rejection(&error) {
                Some(r) => StoreError::Rejected {
                    status: r.status,
                    code: r.code,
                    message: r.message,
                },
                None => StoreError::Backend(Box::new(error)),
            },
        }
    }

    /// Run `call` within the deadline for `bytes`.
    async fn bounded<T>(
        &self,
        bytes: u64,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        within(self.inner.options.deadline(bytes), call).await
    }

    /// Run `call` within the scan deadline.
    async fn scan<T>(
        &self,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        within(self.inner.options.scan_timeout, call).await
    }
}

/// Run `call` within `deadline`.
async fn within<T>(
    deadline: Duration,
    call: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::time::timeout(deadline, call)
        .await
        .unwrap_or(Err(StoreError::Timeout(deadline)))
}

/// The operator's writes: spills of no workflow, which only a reader of every spill reads.
impl SpillStore for Store {
    type Error = StoreError;

    async fn write(&self, key: &str, data: Bytes) -> Result<String, StoreError> {
        (self.write_output(key, data, None, &Reader::operator(), None)).await
    }

    async fn write_at_step(&self, key: &str, data: Bytes, step: u64) -> Result<String, StoreError> {
        (self.write_output(key, data, None, &Reader::operator(), Some(step))).await
    }

    async fn step_of(&self, key: &str) -> Result<Option<Option<u64>>, StoreError> {
        self.written_step(key).await
    }
}

/// A [`Store`] writing the outputs of one tool for one writer ([`Store::for_tool`]).
#[derive(Debug, Clone, Copy)]
pub struct ToolSpills<'a> {
    store: &'a Store,
    tool: &'a str,
    writer: &'a Reader,
}

impl SpillStore for ToolSpills<'_> {
    type Error = StoreError;

    async fn write(&self, key: &str, data: Bytes) -> Result<String, StoreError> {
        let (tool, writer) = (Some(self.tool), self.writer);
        self.store.write_output(key, data, tool, writer, None).await
    }

    async fn write_at_step(&self, key: &str, data: Bytes, step: u64) -> Result<String, StoreError> {
        let (tool, writer) = (Some(self.tool), self.writer);
        (self.store.write_output(key, data, tool, writer, Some(step))).await
    }

    async fn step_of(&self, key: &str) -> Result<Option<Option<u64>>, StoreError> {
        self.store.written_step(key).await
    }
}

/// A [`Store`]'s spills as one [`Reader`] may see them ([`Store::read_as`]); the store itself
/// reads as the operator, who sees every spill.
#[derive(Debug, Clone, Copy)]
pub struct ReadAs<'a> {
    store: &'a Store,
    reader: &'a Reader,
}

impl ReadAs<'_> {
    /// The whole payload stored under `handle`; [`StoreError::NotFound`], exactly as for a
    /// missing spill, when this reader may not see it.
    pub async fn read(&self, handle: &str) -> Result<Bytes, StoreError> {
        self.store.read_for(handle, Some(self.reader)).await
    }
}

#[cfg(test)]
mod tests;
