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
//! index ([`crate::read::index`]) beside it at `… .idx`, written with it, so that
//! [`read_tool_result`](crate::read::read_tool_result) serves a page by offset with a few small
//! ranged reads. Writes are overwrites (atomic: a reader or a concurrent writer never sees a torn
//! object); payloads above the multipart threshold upload in parts without copying. Every call is
//! bounded by a deadline.
//!
//! # Retention
//!
//! `overspill spills gc --older-than 6h` ([`Store::gc`]) deletes old spills on any backend from a
//! full listing. In production on S3, a bucket lifecycle rule does the same without a cron:
//! expire objects under `<prefix>/tool_output_limits/` after a day (S3 counts whole days):
//!
//! ```json
//! {"Rules": [{"ID": "overspill-spills", "Status": "Enabled",
//!   "Filter": {"Prefix": "tool_output_limits/"}, "Expiration": {"Days": 1},
//!   "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}}]}
//! ```
//! (`aws s3api put-bucket-lifecycle-configuration --bucket spills --lifecycle-configuration file://rule.json`).
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
//! # Ok::<(), overspill::limits::StoreError>(())
//! # }).unwrap();
//! ```

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures::{StreamExt as _, TryStreamExt as _};
use object_store::path::Path;
use object_store::{Attributes, GetOptions, ObjectMeta, ObjectStore, PutOptions};

use crate::limits::{SpillStore, StoreError};
use crate::read::{IndexCache, Version};

mod backend;
mod bucket;
mod index;
mod key;
mod listing;
mod local;
mod meta;
mod upload;
mod url;

pub use bucket::Bucket;
pub use key::{INDEX_SUFFIX, NAMESPACE, Refusal, check_handle, sanitize_key, sanitize_segment};
pub use listing::{DEFAULT_LIST_LIMIT, ListRequest, ListedSpill, MAX_LIST_LIMIT, RunListing};
pub use meta::SpillFacts;
pub use url::UrlError;

use local::LocalBackend;
use url::StoreUrl;

/// The longest object key S3, GCS and Azure hold, in bytes.
const MAX_KEY_BYTES: usize = 1024;

/// The longest file name a local filesystem holds, in bytes (`NAME_MAX`).
const MAX_NAME_BYTES: usize = 255;

/// How a [`Store`] talks to its backend. Defaults are documented on each setter.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    timeout: Duration,
    scan_timeout: Duration,
    min_throughput: u64,
    connect_timeout: Duration,
    max_retries: usize,
    multipart_threshold: usize,
    part_size: usize,
    part_concurrency: usize,
    index_cache_bytes: usize,
    endpoint: Option<String>,
    region: Option<String>,
    allow_http: Option<bool>,
    credentials: Option<Credentials>,
}

/// An S3 access key pair; `Debug` shows the key id, never the secret.
#[derive(Clone)]
pub(crate) struct Credentials {
    pub(crate) access_key_id: String,
    pub(crate) secret_access_key: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .finish()
    }
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(5),
            scan_timeout: Duration::from_secs(300),
            min_throughput: 8 << 20,
            connect_timeout: Duration::from_secs(2),
            max_retries: 2,
            multipart_threshold: 16 << 20,
            part_size: 8 << 20,
            part_concurrency: 4,
            index_cache_bytes: 64 << 20,
            endpoint: None,
            region: None,
            allow_http: None,
            credentials: None,
        }
    }
}

impl StoreOptions {
    /// Options with the defaults below.
    pub fn new() -> Self {
        Self::default()
    }

    /// The per-call deadline (default 5 s), also the HTTP read-inactivity timeout and the retry
    /// budget. Transfers get `bytes / min_throughput` on top.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The deadline of a whole listing or garbage collection, every page and delete included
    /// (default 5 minutes).
    pub fn with_scan_timeout(mut self, timeout: Duration) -> Self {
        self.scan_timeout = timeout;
        self
    }

    /// The slowest transfer rate a deadline allows for, in bytes a second (default 8 MiB/s).
    pub fn with_min_throughput(mut self, bytes_per_second: u64) -> Self {
        self.min_throughput = bytes_per_second.max(1);
        self
    }

    /// The TCP/TLS connect timeout (default 2 s).
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Retries of a failed request inside one call (default 2, backoff 100 ms doubling to 1 s).
    pub fn with_max_retries(mut self, retries: usize) -> Self {
        self.max_retries = retries;
        self
    }

    /// Upload payloads of at least `threshold` bytes (default 16 MiB) in `part_size` parts
    /// (default 8 MiB, at least 5 MiB for S3), `concurrency` at a time (default 4).
    pub fn with_multipart(
        mut self,
        threshold: usize,
        part_size: usize,
        concurrency: usize,
    ) -> Self {
        self.multipart_threshold = threshold;
        self.part_size = part_size.max(1);
        self.part_concurrency = concurrency.max(1);
        self
    }

    /// Bytes of opened line indexes kept in memory per store (default 64 MiB; 0 disables the
    /// cache). An entry holds at most an index's first 64 KiB.
    pub fn with_index_cache_bytes(mut self, bytes: usize) -> Self {
        self.index_cache_bytes = bytes;
        self
    }

    /// The S3/Azure endpoint (default: `AWS_ENDPOINT_URL`, the URL's `endpoint`, or the cloud).
    pub fn with_endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// The S3 region (default: `AWS_REGION`, the URL's `region`, or `us-east-1`).
    pub fn with_region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }

    /// Allow plain-HTTP endpoints (default: `AWS_ALLOW_HTTP`, the URL's `allow_http`, or no).
    pub fn with_allow_http(mut self, allow: bool) -> Self {
        self.allow_http = Some(allow);
        self
    }

    /// S3 credentials (default: `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`; without them, the
    /// instance's role, except with a custom endpoint: see [`Store::open_with`]).
    pub fn with_credentials(mut self, access_key_id: &str, secret_access_key: &str) -> Self {
        self.credentials = Some(Credentials {
            access_key_id: access_key_id.to_owned(),
            secret_access_key: secret_access_key.to_owned(),
        });
        self
    }

    /// The deadline for a call moving `bytes`.
    fn deadline(&self, bytes: u64) -> Duration {
        self.timeout + Duration::from_secs_f64(bytes as f64 / self.min_throughput as f64)
    }
}

/// The spill store chosen by URL. Cheap to clone; clones share the backend and the index cache.
#[derive(Debug, Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    url: String,
    backend: Backend,
    /// `{prefix}/tool_output_limits`, relative to the backend's root.
    base: Path,
    options: StoreOptions,
    cache: IndexCache,
}

#[derive(Debug)]
enum Backend {
    Object(Arc<dyn ObjectStore>),
    Local(Arc<LocalBackend>),
}

/// A local backend's check of an object path (relative to its root) for a handle, giving the
/// filesystem to use.
type LocalCheck = fn(&LocalBackend, &str, &str) -> Result<Arc<dyn ObjectStore>, StoreError>;

/// What a failed call was doing: a 404 on a write or a listing means a missing bucket, not a
/// missing spill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    Read,
    Write,
    List,
}

/// One stored spill, as `overspill spills ls` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpillInfo {
    /// The sanitized handle (readable as a handle: sanitizing is idempotent).
    pub handle: String,
    /// The payload's size in bytes.
    pub size: u64,
    /// When the payload was last written.
    pub last_modified: SystemTime,
}

/// What a garbage collection removed (or would remove, on a dry run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcReport {
    /// The spills removed, oldest first.
    pub removed: Vec<SpillInfo>,
    /// Spills newer than the cutoff, kept.
    pub kept: usize,
    /// Objects deleted, line indexes included (0 on a dry run).
    pub deleted_objects: usize,
}

impl Store {
    /// Open the store at `url` (`None`: the local default) with default [`StoreOptions`].
    pub fn open(url: Option<&str>) -> Result<Self, StoreError> {
        Self::open_with(url, StoreOptions::default())
    }

    /// Open the store at `url` (`None`: the local default) with `options`.
    ///
    /// An `s3://` store with a custom endpoint (`AWS_ENDPOINT_URL`, `?endpoint=`, or
    /// [`StoreOptions::with_endpoint`]) and no credentials is refused as
    /// [`StoreError::Misconfigured`]: object_store would fall back to the EC2 instance metadata
    /// service, which a self-hosted server never answers for.
    pub fn open_with(url: Option<&str>, options: StoreOptions) -> Result<Self, StoreError> {
        let parsed = match url {
            None => StoreUrl::Local {
                root: local::default_root(),
            },
            Some(raw) => StoreUrl::parse(raw).map_err(|e| StoreError::Backend(Box::new(e)))?,
        };
        let (backend, prefix, shown) = match parsed {
            StoreUrl::Local { root } => (
                Backend::Local(Arc::new(LocalBackend::new(root.clone()))),
                Path::default(),
                root_url(&root),
            ),
            object => {
                let (store, prefix, url) = bucket::connect(object, &options)?;
                (Backend::Object(store), prefix, url)
            }
        };
        Ok(Self {
            inner: Arc::new(Inner {
                url: shown,
                backend,
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

    /// The object path a handle resolves to, relative to the backend's root (bucket or
    /// directory), or why it is refused.
    pub fn object_path(&self, handle: &str) -> Result<String, StoreError> {
        self.locate(handle).map(|p| p.to_string())
    }

    /// The spills stored (for one run when `run` is given), in path order, within the scan
    /// deadline ([`StoreOptions::with_scan_timeout`]).
    pub async fn list(&self, run: Option<&str>) -> Result<Vec<SpillInfo>, StoreError> {
        let prefix = match run {
            None => self.inner.base.clone(),
            Some(run) => key::segments(run)
                .iter()
                .fold(self.inner.base.clone(), |p, s| p.join(s.as_ref())),
        };
        self.scan(async {
            let metas = self.list_objects(&prefix).await?;
            Ok(metas
                .iter()
                .filter(|m| !m.location.as_ref().ends_with(INDEX_SUFFIX))
                .map(|m| self.info(m))
                .collect())
        })
        .await
    }

    /// Delete the spills (and their line indexes) last written more than `older_than` ago, within
    /// the scan deadline ([`StoreOptions::with_scan_timeout`]).
    ///
    /// Lists every object under the store's namespace (no delimiter listings), so it works the
    /// same on S3-compatible servers and local directories. An index goes with its payload; an
    /// index whose payload is gone goes once it is older than the cutoff.
    pub async fn gc(&self, older_than: Duration, dry_run: bool) -> Result<GcReport, StoreError> {
        let cutoff = SystemTime::now()
            .checked_sub(older_than)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        self.scan(self.collect(cutoff, dry_run)).await
    }

    async fn collect(&self, cutoff: SystemTime, dry_run: bool) -> Result<GcReport, StoreError> {
        let metas = self.list_objects(&self.inner.base).await?;
        let present: HashSet<&str> = metas.iter().map(|m| m.location.as_ref()).collect();
        let mut report = GcReport::default();
        let mut doomed: Vec<Path> = Vec::new();
        for meta in &metas {
            let path = meta.location.as_ref();
            let old = SystemTime::from(meta.last_modified) < cutoff;
            match path.strip_suffix(INDEX_SUFFIX) {
                Some(payload) => {
                    if old && !present.contains(payload) {
                        doomed.push(meta.location.clone());
                    }
                }
                None if old => {
                    report.removed.push(self.info(meta));
                    doomed.push(meta.location.clone());
                    let index = format!("{path}{INDEX_SUFFIX}");
                    if present.contains(index.as_str()) {
                        doomed.push(Path::from(index));
                    }
                }
                None => report.kept += 1,
            }
        }
        report.removed.sort_by_key(|s| s.last_modified);
        if dry_run || doomed.is_empty() {
            return Ok(report);
        }
        let (fs, doomed) = match &self.inner.backend {
            Backend::Object(store) => (store.clone(), doomed),
            Backend::Local(local) => self.on_disk(local, move |l| l.for_delete(doomed)).await?,
        };
        let count = doomed.len();
        let locations = futures::stream::iter(doomed.clone().into_iter().map(Ok)).boxed();
        let deleted: Vec<Path> = fs
            .delete_stream(locations)
            .try_collect()
            .await
            .map_err(|e| self.map_error(e, "", Call::List))?;
        report.deleted_objects = deleted.len().min(count);
        if let Backend::Local(local) = &self.inner.backend {
            let base = self.inner.base.clone();
            self.on_disk(local, move |l| {
                l.prune_empty_dirs(&doomed, &base);
                Ok(())
            })
            .await?;
        }
        Ok(report)
    }

    fn info(&self, meta: &ObjectMeta) -> SpillInfo {
        let handle = meta
            .location
            .prefix_match(&self.inner.base)
            .map(|parts| {
                parts
                    .map(|p| p.as_ref().to_owned())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_else(|| meta.location.to_string());
        SpillInfo {
            handle,
            size: meta.size,
            last_modified: SystemTime::from(meta.last_modified),
        }
    }

    async fn list_objects(&self, prefix: &Path) -> Result<Vec<ObjectMeta>, StoreError> {
        let fs = match &self.inner.backend {
            Backend::Object(store) => store.clone(),
            Backend::Local(local) => match self.on_disk(local, LocalBackend::for_listing).await? {
                Some(fs) => fs,
                None => return Ok(Vec::new()),
            },
        };
        fs.list(Some(prefix))
            .try_collect()
            .await
            .map_err(|e| self.map_error(e, "", Call::List))
    }

    /// Run `call` within the scan deadline.
    async fn scan<T>(
        &self,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        self.within(self.inner.options.scan_timeout, call).await
    }

    /// Run the blocking local-filesystem `work` on a blocking thread, within the per-call deadline.
    async fn on_disk<T: Send + 'static>(
        &self,
        local: &Arc<LocalBackend>,
        work: impl FnOnce(&LocalBackend) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let local = local.clone();
        self.bounded(0, async move {
            tokio::task::spawn_blocking(move || work(&local))
                .await
                .map_err(|e| StoreError::Backend(Box::new(e)))?
        })
        .await
    }

    /// The object path of `handle`, or why it is refused.
    fn locate(&self, handle: &str) -> Result<Path, StoreError> {
        check_handle(handle).map_err(|_| StoreError::OutsideStore {
            handle: handle.to_owned(),
        })?;
        Ok(key::segments(handle)
            .iter()
            .fold(self.inner.base.clone(), |p, s| p.join(s.as_ref())))
    }

    /// The backend and object path for a read of `handle`, after the local root checks. A handle
    /// too long to have been stored is `NotFound`.
    async fn for_read(&self, handle: &str) -> Result<(Arc<dyn ObjectStore>, Path), StoreError> {
        let path = self.locate(handle)?;
        if self.too_long(&path, handle).is_err() {
            return Err(StoreError::NotFound {
                handle: handle.to_owned(),
            });
        }
        self.backend_for(path, handle, LocalBackend::for_read).await
    }

    /// The backend and object path for a write of `key`, after creating, checking and confining
    /// the local root.
    async fn for_write(&self, key: &str) -> Result<(Arc<dyn ObjectStore>, Path), StoreError> {
        let path = self.locate(key)?;
        self.too_long(&path, key)?;
        self.backend_for(path, key, LocalBackend::for_write).await
    }

    /// The backend for the object at `path`, after the local backend's `check` of it.
    async fn backend_for(
        &self,
        path: Path,
        handle: &str,
        check: LocalCheck,
    ) -> Result<(Arc<dyn ObjectStore>, Path), StoreError> {
        let fs = match &self.inner.backend {
            Backend::Object(store) => store.clone(),
            Backend::Local(local) => {
                let (relative, handle) = (path.to_string(), handle.to_owned());
                self.on_disk(local, move |l| check(l, &relative, &handle))
                    .await?
            }
        };
        Ok((fs, path))
    }

    /// Refuse a key whose object (or line index beside it) the backend cannot name: over 1,024
    /// bytes of key on a blob store, a file name over 255 bytes on a local disk.
    fn too_long(&self, path: &Path, key: &str) -> Result<(), StoreError> {
        let (bytes, max) = match &self.inner.backend {
            Backend::Object(_) => (path.as_ref().len() + INDEX_SUFFIX.len(), MAX_KEY_BYTES),
            Backend::Local(_) => {
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

    /// The store's error for a failed `call`: a missing bucket and refused credentials are
    /// [`StoreError::Misconfigured`] (final, saying what to fix), only a missing object on a
    /// read is `NotFound`, and a timeout or any other failure is retryable.
    fn map_error(&self, error: object_store::Error, handle: &str, call: Call) -> StoreError {
        use object_store::Error as E;
        let remote = matches!(self.inner.backend, Backend::Object(_));
        // A listing's 404 comes back as a generic error: the S3 code names it.
        let no_bucket = remote
            && (matches!(error, E::NotFound { .. }) && call != Call::Read
                || error.to_string().contains("<Code>NoSuchBucket</Code>"));
        match error {
            _ if no_bucket => StoreError::Misconfigured(format!(
                "the bucket of store {} does not exist: create it, or fix the store URL \
                     ({error})",
                self.url()
            )),
            E::NotFound { .. } => StoreError::NotFound {
                handle: handle.to_owned(),
            },
            E::PermissionDenied { .. } | E::Unauthenticated { .. } => {
                StoreError::Misconfigured(format!(
                    "store {} refused the credentials: check AWS_ACCESS_KEY_ID and \
                     AWS_SECRET_ACCESS_KEY, and the bucket's policy ({error})",
                    self.url()
                ))
            }
            e if is_timeout(&e) => StoreError::Timeout(self.inner.options.timeout),
            e => StoreError::Backend(Box::new(e)),
        }
    }

    /// Run `call` within the deadline for `bytes`.
    async fn bounded<T>(
        &self,
        bytes: u64,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        self.within(self.inner.options.deadline(bytes), call).await
    }

    /// Run `call` within `deadline`.
    async fn within<T>(
        &self,
        deadline: Duration,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        tokio::time::timeout(deadline, call)
            .await
            .unwrap_or(Err(StoreError::Timeout(deadline)))
    }

    /// Upload `data` to `path` with `attributes`; returns the new object's tag.
    async fn put(
        &self,
        fs: &Arc<dyn ObjectStore>,
        path: &Path,
        data: Bytes,
        attributes: Attributes,
        key: &str,
    ) -> Result<Option<String>, StoreError> {
        let options = &self.inner.options;
        let multipart = matches!(self.inner.backend, Backend::Object(_))
            && data.len() >= options.multipart_threshold
            && data.len() > options.part_size;
        let result = if multipart {
            upload::put_multipart(
                fs.as_ref(),
                path,
                data,
                attributes,
                options.part_size,
                options.part_concurrency,
                options.timeout,
            )
            .await
        } else {
            let options = PutOptions {
                attributes,
                ..PutOptions::default()
            };
            fs.put_opts(path, data.into(), options).await
        };
        result
            .map(|put| put.e_tag)
            .map_err(|e| self.map_error(e, key, Call::Write))
    }

    /// The object at `path` (or the part `options` asks for), with its version.
    async fn get(
        &self,
        fs: &Arc<dyn ObjectStore>,
        path: &Path,
        options: GetOptions,
        handle: &str,
    ) -> Result<(Bytes, Version), StoreError> {
        let result = self
            .bounded(0, async {
                fs.get_opts(path, options)
                    .await
                    .map_err(|e| self.map_error(e, handle, Call::Read))
            })
            .await?;
        let version = Version {
            size: result.meta.size,
            tag: result.meta.e_tag.clone(),
        };
        let size = result.range.end - result.range.start;
        let bytes = self
            .bounded(size, async {
                result
                    .bytes()
                    .await
                    .map_err(|e| self.map_error(e, handle, Call::Read))
            })
            .await?;
        Ok((bytes, version))
    }
}

fn root_url(root: &std::path::Path) -> String {
    ::url::Url::from_directory_path(root)
        .map(|u| u.to_string())
        .unwrap_or_else(|()| root.display().to_string())
}

/// Whether an object_store error is, somewhere in its chain, an HTTP timeout.
fn is_timeout(error: &object_store::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(http) = e.downcast_ref::<object_store::client::HttpError>()
            && http.kind() == object_store::client::HttpErrorKind::Timeout
        {
            return true;
        }
        source = e.source();
    }
    false
}

impl Store {
    /// The whole payload stored under `handle`.
    pub async fn read(&self, handle: &str) -> Result<Bytes, StoreError> {
        let (fs, path) = self.for_read(handle).await?;
        let (bytes, _) = self.get(&fs, &path, GetOptions::default(), handle).await?;
        Ok(bytes)
    }
}

impl SpillStore for Store {
    async fn write(&self, key: &str, data: Bytes) -> Result<String, StoreError> {
        self.write_output(key, data, None).await
    }
}

impl Store {
    /// The spill store for outputs of `tool`: its spills carry the tool's name (see
    /// [`SpillFacts`]).
    pub fn for_tool<'a>(&'a self, tool: &'a str) -> ToolSpills<'a> {
        ToolSpills { store: self, tool }
    }

    /// Write the output of `tool` (if known) under `key`, with its [`SpillFacts`] as metadata
    /// where the backend keeps any.
    async fn write_output(
        &self,
        key: &str,
        data: Bytes,
        tool: Option<&str>,
    ) -> Result<String, StoreError> {
        let (fs, path) = self.for_write(key).await?;
        let attributes = match &self.inner.backend {
            Backend::Object(_) => SpillFacts::measure(&data, tool).await.to_attributes(),
            Backend::Local(_) => Attributes::new(),
        };
        let len = data.len() as u64;
        // The payload uploads while its line index is built; the index is stored once the
        // payload's new tag, which binds it, is known.
        self.inner.cache.remove(key);
        let (stored, built) = futures::join!(
            self.bounded(len, self.put(&fs, &path, data.clone(), attributes, key)),
            index::build(data)
        );
        let tag = stored?;
        if let Some(built) = built {
            let payload = Version { size: len, tag };
            self.store_index(&fs, &path, key, built, &payload).await;
        }
        tracing::debug!(target: "overspill::store", bytes = len, "spilled {key:?} to {path}");
        Ok(key.to_owned())
    }
}

/// A [`Store`] writing the outputs of one tool ([`Store::for_tool`]).
#[derive(Debug, Clone, Copy)]
pub struct ToolSpills<'a> {
    store: &'a Store,
    tool: &'a str,
}

impl SpillStore for ToolSpills<'_> {
    async fn write(&self, key: &str, data: Bytes) -> Result<String, StoreError> {
        self.store.write_output(key, data, Some(self.tool)).await
    }
}

#[cfg(test)]
mod tests;
