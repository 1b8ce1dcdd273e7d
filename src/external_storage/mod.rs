//! Temporal External Storage: payloads over a size threshold live in a bucket, and history
//! carries a small reference to them. The format, keys and claims are those of temporalio 1.35's
//! Python `ExternalStorage` with its `S3StorageDriver` (or `GCSStorageDriver`), so a Python
//! workflow and an Overspill worker exchange payloads of any size through the same bucket.
//!
//! - [`Reference`]: the reference forms read from history and the one written.
//! - [`Driver`]: the drivers' claims and content-addressed keys.
//! - [`ExternalStorage`]: stores (`offload`) and fetches (`retrieve`) payloads, checking each
//!   object's SHA-256 against its claim before use, every call bounded by a deadline.
//! - [`ExternalStorage::gc`]: deletes the objects whose history Temporal has let go.
//! - [`ExternalStorageCodec`]: the worker's payload codec. It offloads outbound payloads over the
//!   threshold and resolves references in workflow activations. Activity inputs are left as
//!   references for the activities to resolve inside their own task (see
//!   [`crate::activities::payload::Wire::resolve`]), so a failure there is a typed activity
//!   failure and the fetched bytes count against the worker's in-flight budget.
//!
//! ```
//! use std::sync::Arc;
//! use overspill::external_storage::{Driver, ExternalStorage, ExternalStorageSettings, KeyScope, resolve};
//! use overspill::store::{Bucket, StoreOptions};
//! # use temporalio_common::protos::temporal::api::common::v1::Payload;
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let bucket = Bucket::new(Arc::new(object_store::memory::InMemory::new()), "payloads", "", StoreOptions::default());
//! let settings = ExternalStorageSettings { threshold: 10, ..ExternalStorageSettings::default() };
//! let storage = ExternalStorage::new(Driver::S3, bucket, settings);
//! let payload = Payload { data: b"\"a long enough value\"".to_vec(), ..Payload::default() };
//! let reference = storage.offload(payload.clone(), KeyScope::Namespace("default")).await?;
//! assert_ne!(reference, payload);
//! assert_eq!(resolve(Some(&storage), reference).await?, payload);
//! # Ok::<(), overspill::external_storage::ExternalStorageError>(())
//! # }).unwrap();
//! ```

mod codec;
mod driver;
mod error;
mod gc;
mod reference;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use futures::StreamExt as _;
use object_store::path::Path;
use object_store::{GetOptions, ObjectStoreExt as _, PutPayload};
use prost::Message as _;
use temporalio_common::protos::temporal::api::common::v1::Payload;
use temporalio_common::protos::temporal::api::common::v1::payload::ExternalPayloadDetails;

use crate::store::{Bucket, StoreOptions};

pub use codec::ExternalStorageCodec;
pub use driver::{Driver, KeyScope, Located};
pub use error::ExternalStorageError;
pub use gc::{GcMetrics, GcOptions, PayloadGcReport, Tally};
pub use reference::{MESSAGE_TYPE, Reference};

/// How much goes to External Storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExternalStorageSettings {
    /// Payloads of at least this many serialized bytes are offloaded (default 256 KiB, as
    /// Python's `payload_size_threshold`).
    pub threshold: u64,
    /// The largest payload stored or fetched, in serialized bytes (default 50 MiB, as Python's
    /// `S3StorageDriver.max_payload_size`).
    pub max_payload_bytes: u64,
}

impl Default for ExternalStorageSettings {
    fn default() -> Self {
        Self {
            threshold: 256 << 10,
            max_payload_bytes: 50 << 20,
        }
    }
}

/// Payloads in a bucket, keyed and claimed as temporalio's blob-store drivers do.
#[derive(Debug, Clone)]
pub struct ExternalStorage {
    driver: Driver,
    bucket: Bucket,
    settings: ExternalStorageSettings,
}

impl ExternalStorage {
    /// The storage `url` names: `s3://bucket[/prefix]` (the S3 driver; endpoint, region and
    /// credentials as for a spill store) or `gs://bucket[/prefix]` (the GCS driver). Payloads
    /// Overspill writes go under `{prefix}/v0/…`; claims are read anywhere under `v0/` or
    /// `{prefix}/v0/` in the bucket.
    pub fn open(
        url: &str,
        settings: ExternalStorageSettings,
    ) -> Result<Self, ExternalStorageError> {
        Self::open_with(url, settings, StoreOptions::default())
    }

    /// [`Self::open`] with the bucket's client `options` (a CA bundle, timeouts).
    pub fn open_with(
        url: &str,
        settings: ExternalStorageSettings,
        options: StoreOptions,
    ) -> Result<Self, ExternalStorageError> {
        let scheme = url.split_once("://").map(|(scheme, _)| scheme);
        let driver = match scheme {
            Some("s3" | "s3a") => Driver::S3,
            Some("gs") => Driver::Gcs,
            _ => {
                return Err(ExternalStorageError::Config(
                    "use s3://BUCKET[/prefix] (the S3 driver) or gs://BUCKET[/prefix] (the GCS driver)"
                        .into(),
                ));
            }
        };
        let bucket =
            Bucket::open(url, options).map_err(|e| ExternalStorageError::Config(e.to_string()))?;
        Ok(Self::new(driver, bucket, settings))
    }

    /// Storage in `bucket` through `driver`.
    pub fn new(driver: Driver, bucket: Bucket, settings: ExternalStorageSettings) -> Self {
        Self {
            driver,
            bucket,
            settings,
        }
    }

    /// The bucket's name.
    pub fn bucket_name(&self) -> &str {
        &self.bucket.name
    }

    /// Check that the bucket answers one listing request (it exists, the credentials are
    /// accepted), within the per-call timeout.
    pub async fn check(&self) -> Result<(), ExternalStorageError> {
        let prefix = Path::from(self.bucket.prefix.as_str());
        let listing = self.bucket.store.list_with_delimiter(Some(&prefix));
        let why = match tokio::time::timeout(self.bucket.deadline(0), listing).await {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {:?}", self.bucket.deadline(0)),
        };
        let message = format!("bucket {}: {why}", self.bucket.name);
        Err(ExternalStorageError::Config(message))
    }

    /// Whether `payload` goes to storage: at least the threshold, and not a reference already.
    pub fn should_offload(&self, payload: &Payload) -> bool {
        payload.encoded_len() as u64 >= self.settings.threshold && !Reference::is_reference(payload)
    }

    /// Store `payload` if [`Self::should_offload`] says so and return its reference payload
    /// (otherwise `payload` unchanged). Content-addressed: an object already present is not
    /// uploaded again.
    pub async fn offload(
        &self,
        payload: Payload,
        scope: KeyScope<'_>,
    ) -> Result<Payload, ExternalStorageError> {
        if !self.should_offload(&payload) {
            return Ok(payload);
        }
        let bytes = OrderedPayload::from(payload).encode_to_vec();
        let size = bytes.len() as u64;
        if size > self.settings.max_payload_bytes {
            return Err(ExternalStorageError::TooLarge {
                what: "to offload".into(),
                size,
                limit: self.settings.max_payload_bytes,
            });
        }
        let sha256 = hex(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &bytes).as_ref());
        let (key, path) = self.writable_key(&scope, &sha256)?;
        let store = &self.bucket.store;
        let object = || format!("{}/{key}", self.bucket.name);
        let exists = self.bounded(0, &key, async {
            match store.head(&path).await {
                Ok(_) => Ok(true),
                Err(object_store::Error::NotFound { .. }) => Ok(false),
                Err(e) => Err(self.failed(object(), e)),
            }
        });
        if !exists.await? {
            let put = store.put(&path, PutPayload::from(bytes));
            let put = async { put.await.map_err(|e| self.failed(object(), e)) };
            self.bounded(size, &key, put).await?;
        }
        let reference = Reference {
            driver_name: self.driver.name().to_owned(),
            claim: self.driver.claim(&self.bucket.name, &key, &sha256),
            size_bytes: Some(size),
        };
        Ok(reference.to_payload())
    }

    /// The size of the payload `reference` names: as the reference states it, else the object's.
    pub async fn stored_size(&self, reference: &Reference) -> Result<u64, ExternalStorageError> {
        if let Some(size) = reference.size_bytes {
            return Ok(size);
        }
        let (located, path) = self.readable(reference)?;
        let head = self.bucket.store.head(&path);
        let head = async { head.await.map_err(|e| self.failed(located.object(), e)) };
        Ok(self.bounded(0, located.key, head).await?.size)
    }

    /// Fetch the payload `reference` names: streamed, bounded by the size limit, its SHA-256
    /// checked against the claim before it is decoded.
    pub async fn retrieve(&self, reference: &Reference) -> Result<Payload, ExternalStorageError> {
        let (located, path) = self.readable(reference)?;
        let limit = self.settings.max_payload_bytes;
        let declared = reference.size_bytes.unwrap_or(limit);
        if declared > limit {
            return Err(self.too_large(&located, declared));
        }
        let bytes = self
            .bounded(declared, located.key, self.fetch(&located, &path))
            .await?;
        Payload::decode(bytes.as_slice()).map_err(|e| ExternalStorageError::Undecodable {
            object: located.object(),
            reason: e.to_string(),
        })
    }

    /// The object's bytes, hashed as they arrive; refused once they pass the limit.
    async fn fetch(
        &self,
        located: &Located<'_>,
        path: &Path,
    ) -> Result<Vec<u8>, ExternalStorageError> {
        let limit = self.settings.max_payload_bytes;
        let result = self.bucket.store.get_opts(path, GetOptions::default());
        let result = result.await.map_err(|e| self.failed(located.object(), e))?;
        if result.meta.size > limit {
            return Err(self.too_large(located, result.meta.size));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(result.meta.size).unwrap_or(0));
        let mut hasher = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
        let mut stream = result.into_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.failed(located.object(), e))?;
            let size = (bytes.len() + chunk.len()) as u64;
            if size > limit {
                return Err(self.too_large(located, size));
            }
            hasher.update(&chunk);
            bytes.extend_from_slice(&chunk);
        }
        let actual = hex(hasher.finish().as_ref());
        if actual != located.sha256 {
            return Err(ExternalStorageError::HashMismatch {
                object: located.object(),
                expected: located.sha256.to_owned(),
                actual,
            });
        }
        Ok(bytes)
    }

    /// Where `reference` points, if it is this storage's to read: this driver, this bucket, a
    /// key under `v0/` or `{prefix}/v0/`.
    fn readable<'r>(
        &self,
        reference: &'r Reference,
    ) -> Result<(Located<'r>, Path), ExternalStorageError> {
        let located = self.driver.locate(reference)?;
        if located.bucket != self.bucket.name {
            return Err(ExternalStorageError::ForeignBucket {
                claimed: located.bucket.to_owned(),
                configured: self.bucket.name.clone(),
            });
        }
        let prefixed = format!("{}/v0/", self.bucket.prefix);
        let in_key_space = located.key.starts_with("v0/")
            || (!self.bucket.prefix.is_empty() && located.key.starts_with(&prefixed));
        let path = Path::parse(located.key)
            .ok()
            .filter(|_| in_key_space)
            .ok_or_else(|| {
                ExternalStorageError::InvalidReference(format!(
                    "claim key {:?} is outside the External Storage keys (v0/… or {prefixed}…)",
                    located.key
                ))
            })?;
        Ok((located, path))
    }

    /// The key (and its path) for a payload hashing to `sha256` in `scope`; a scope whose
    /// segments make no valid object path (a workflow id of `..`) falls back to its namespace.
    fn writable_key(
        &self,
        scope: &KeyScope<'_>,
        sha256: &str,
    ) -> Result<(String, Path), ExternalStorageError> {
        let namespace_only = match scope {
            KeyScope::Workflow { namespace, .. } | KeyScope::Activity { namespace, .. } => {
                KeyScope::Namespace(namespace)
            }
            other => *other,
        };
        [scope, &namespace_only]
            .into_iter()
            .map(|scope| self.driver.object_key(&self.bucket.prefix, scope, sha256))
            .find_map(|key| Path::parse(&key).ok().map(|path| (key, path)))
            .ok_or_else(|| {
                ExternalStorageError::Config(format!(
                    "prefix {:?} makes no valid object key",
                    self.bucket.prefix
                ))
            })
    }

    /// Run one store call within the deadline for `bytes`.
    async fn bounded<T>(
        &self,
        bytes: u64,
        key: &str,
        call: impl Future<Output = Result<T, ExternalStorageError>>,
    ) -> Result<T, ExternalStorageError> {
        let deadline = self.bucket.deadline(bytes);
        tokio::time::timeout(deadline, call)
            .await
            .unwrap_or_else(|_| {
                Err(ExternalStorageError::Unavailable {
                    object: format!("{}/{key}", self.bucket.name),
                    reason: format!("no answer within {deadline:?}"),
                })
            })
    }

    /// The failure of a call about `object` (`bucket/key`), in the server's words with the
    /// setting that fixes it: a missing object is [`Missing`](ExternalStorageError::Missing);
    /// refused credentials, a missing bucket or a refused TLS handshake are
    /// [`Misconfigured`](ExternalStorageError::Misconfigured), another deterministic 4xx is
    /// [`Rejected`](ExternalStorageError::Rejected) (both final); anything else may pass.
    fn failed(&self, object: String, error: object_store::Error) -> ExternalStorageError {
        use crate::store::Cause;
        let scheme = match self.driver {
            Driver::S3 => "s3",
            Driver::Gcs => "gs",
        };
        let url = format!("{scheme}://{}", self.bucket.name);
        let (cause, reason) = crate::store::explain(&error, &url, false);
        match cause {
            Cause::NoBucket | Cause::Credentials | Cause::Tls(_) => {
                ExternalStorageError::Misconfigured { object, reason }
            }
            _ if matches!(error, object_store::Error::NotFound { .. }) => {
                ExternalStorageError::Missing { object }
            }
            _ => match crate::store::rejection(&error) {
                // A deterministic 4xx (an over-long key, metadata over the store's limit): the
                // same request gets the same answer.
                Some(r) => ExternalStorageError::Rejected {
                    object,
                    status: r.status,
                    code: r.code,
                    message: r.message,
                },
                None => ExternalStorageError::Unavailable { object, reason },
            },
        }
    }

    fn too_large(&self, located: &Located<'_>, size: u64) -> ExternalStorageError {
        ExternalStorageError::TooLarge {
            what: located.object(),
            size,
            limit: self.settings.max_payload_bytes,
        }
    }
}

/// `payload` itself, or, when it is a reference, the payload it names, fetched from `storage`
/// (an error says what to configure when there is none). The one place references are resolved.
pub async fn resolve(
    storage: Option<&ExternalStorage>,
    payload: Payload,
) -> Result<Payload, ExternalStorageError> {
    let Some(reference) = Reference::from_payload(&payload)? else {
        return Ok(payload);
    };
    match storage {
        Some(storage) => storage.retrieve(&reference).await,
        None => Err(ExternalStorageError::NotConfigured {
            driver: reference.driver_name,
        }),
    }
}

/// `temporal.api.common.v1.Payload` with its metadata map in key order: the same wire form, but
/// equal payloads serialize to equal bytes, and so to one content-addressed key, in every process.
#[derive(Clone, PartialEq, prost::Message)]
struct OrderedPayload {
    #[prost(btree_map = "string, bytes", tag = "1")]
    metadata: BTreeMap<String, Vec<u8>>,
    #[prost(bytes = "vec", tag = "2")]
    data: Vec<u8>,
    #[prost(message, repeated, tag = "3")]
    external_payloads: Vec<ExternalPayloadDetails>,
}

impl From<Payload> for OrderedPayload {
    fn from(payload: Payload) -> Self {
        Self {
            metadata: payload.metadata.into_iter().collect(),
            data: payload.data,
            external_payloads: payload.external_payloads,
        }
    }
}

/// Lower-case hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
