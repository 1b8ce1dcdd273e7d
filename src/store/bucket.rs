//! A bucket opened the way [`Store`](super::Store) opens its backend, for objects whose keys
//! another module owns (Temporal External Storage keeps its payloads in one).

use std::sync::Arc;
use std::time::Duration;

use object_store::ObjectStore;
use object_store::path::Path;

use super::url::StoreUrl;
use super::{StoreOptions, backend};
use crate::limits::StoreError;

/// An `s3://` / `gs://` / `az://` bucket: the same environment variables, URL query parameters,
/// timeouts and retries as a spill store on that URL.
#[derive(Debug, Clone)]
pub struct Bucket {
    /// The object store, rooted at the bucket (keys are bucket keys).
    pub store: Arc<dyn ObjectStore>,
    /// The bucket's name.
    pub name: String,
    /// The URL's path inside the bucket: `""` or `a/b`.
    pub prefix: String,
    options: StoreOptions,
}

impl Bucket {
    /// The bucket `url` names (`file://` is not a bucket).
    pub fn open(url: &str, options: StoreOptions) -> Result<Self, StoreError> {
        let parsed = StoreUrl::parse(url).map_err(|e| StoreError::Backend(Box::new(e)))?;
        let (store, prefix, shown) = connect(parsed, &options)?;
        let name = ::url::Url::parse(&shown)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        Ok(Self::new(store, name, prefix.as_ref(), options))
    }

    /// A bucket over an existing object store (tests use object_store's in-memory store).
    pub fn new(
        store: Arc<dyn ObjectStore>,
        name: impl Into<String>,
        prefix: &str,
        options: StoreOptions,
    ) -> Self {
        Self {
            store,
            name: name.into(),
            prefix: prefix.trim_matches('/').to_owned(),
            options,
        }
    }

    /// The deadline of one call moving `bytes` (the store's per-call timeout plus the transfer
    /// at its slowest allowed rate).
    pub fn deadline(&self, bytes: u64) -> Duration {
        self.options.deadline(bytes)
    }
}

/// The object store a blob-store URL names, its key prefix and the URL without its query.
pub(super) fn connect(
    parsed: StoreUrl,
    options: &StoreOptions,
) -> Result<(Arc<dyn ObjectStore>, Path, String), StoreError> {
    match parsed {
        StoreUrl::Local { root } => Err(StoreError::Backend(
            format!("{} is a local directory, not a bucket", root.display()).into(),
        )),
        StoreUrl::Object {
            scheme,
            url,
            prefix,
            endpoint,
            region,
            allow_http,
        } => {
            // The options' settings over the URL's query (the environment's come last).
            let options = StoreOptions {
                endpoint: options.endpoint.clone().or(endpoint),
                region: options.region.clone().or(region),
                allow_http: options.allow_http.or(allow_http),
                ..options.clone()
            };
            let store = backend::build(scheme, &url, &options)?;
            Ok((store, prefix, crate::redact::url(&url)))
        }
    }
}
