//! How a [`Store`](super::Store) talks to its backend: timeouts, retries, multipart, the index
//! cache and S3 settings.

use std::time::Duration;

/// How a [`Store`](super::Store) talks to its backend, built with [`StoreOptions::builder`]
/// (each setter's default below; `StoreOptions::default()` is all of them).
///
/// ```
/// use std::time::Duration;
/// let options = overspill::store::StoreOptions::builder()
///     .timeout(Duration::from_secs(2))
///     .endpoint("http://127.0.0.1:8333")
///     .build();
/// ```
#[derive(Debug, Clone, bon::Builder)]
#[builder(on(String, into))]
pub struct StoreOptions {
    /// The per-call deadline (default 5 s), also the HTTP read-inactivity timeout and the retry
    /// budget. Transfers get `bytes / min_throughput` on top.
    #[builder(default = Duration::from_secs(5))]
    pub(super) timeout: Duration,
    /// The deadline of a whole listing or garbage collection, every page and delete included
    /// (default 5 minutes).
    #[builder(default = Duration::from_secs(300))]
    pub(super) scan_timeout: Duration,
    /// The slowest transfer rate a deadline allows for, in bytes a second (default 8 MiB/s).
    #[builder(default = 8 << 20)]
    pub(super) min_throughput: u64,
    /// The TCP/TLS connect timeout (default 2 s).
    #[builder(default = Duration::from_secs(2))]
    pub(super) connect_timeout: Duration,
    /// Retries of a failed request inside one call (default 2, backoff 100 ms doubling to 1 s).
    #[builder(default = 2)]
    pub(super) max_retries: usize,
    /// Payloads of at least this many bytes are uploaded in parts (default 16 MiB).
    #[builder(default = 16 << 20)]
    pub(super) multipart_threshold: usize,
    /// The size of a multipart upload's parts (default 8 MiB; at least 5 MiB for S3).
    #[builder(default = 8 << 20)]
    pub(super) part_size: usize,
    /// Parts uploaded at a time (default 4).
    #[builder(default = 4)]
    pub(super) part_concurrency: usize,
    /// Bytes of opened line indexes kept in memory per store (default 64 MiB; 0 disables the
    /// cache). An entry holds a whole index up to 4 MiB (that of a spill of 500 MB or more),
    /// else the index's first 512 KiB.
    #[builder(default = 64 << 20)]
    pub(super) index_cache_bytes: usize,
    /// The S3/Azure endpoint (default: `AWS_ENDPOINT_URL`, the URL's `endpoint`, or the cloud).
    pub(super) endpoint: Option<String>,
    /// The S3 region (default: `AWS_REGION`, the URL's `region`, or `us-east-1`).
    pub(super) region: Option<String>,
    /// Allow plain-HTTP endpoints (default: `AWS_ALLOW_HTTP`, the URL's `allow_http`, or no).
    pub(super) allow_http: Option<bool>,
    /// A PEM file of the CAs to trust for HTTPS endpoints, instead of the system's, as the AWS
    /// tools take it (default: `AWS_CA_BUNDLE`; for every backend of a URL, S3, GCS and Azure).
    #[builder(into)]
    pub(super) ca_bundle: Option<std::path::PathBuf>,
    /// S3 credentials, key id and secret (default: `AWS_ACCESS_KEY_ID` /
    /// `AWS_SECRET_ACCESS_KEY`; without them, the instance's role, except with a custom endpoint:
    /// see [`Store::open_with`](super::Store::open_with)).
    #[builder(with = |access_key_id: &str, secret_access_key: &str| Credentials {
        access_key_id: access_key_id.to_owned(),
        secret_access_key: secret_access_key.to_owned(),
    })]
    pub(super) credentials: Option<Credentials>,
}

/// An S3 access key pair; `Debug` shows the key id, never the secret.
#[derive(Clone, derive_more::Debug)]
pub(crate) struct Credentials {
    pub(crate) access_key_id: String,
    #[debug("{:?}", crate::redact::PLACEHOLDER)]
    pub(crate) secret_access_key: String,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self::builder().build()
    }
}

impl StoreOptions {
    /// The deadline for a call moving `bytes` (saturating: any range a caller names has one).
    pub(super) fn deadline(&self, bytes: u64) -> Duration {
        let transfer = bytes as f64 / self.min_throughput.max(1) as f64;
        let transfer = Duration::try_from_secs_f64(transfer).unwrap_or(Duration::MAX);
        self.timeout.saturating_add(transfer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deadline grows with the bytes moved, and saturates instead of overflowing for any range
    /// a caller names.
    #[test]
    fn deadlines_grow_with_the_bytes_and_saturate() {
        let options = StoreOptions::builder()
            .timeout(Duration::from_secs(5))
            .min_throughput(1)
            .build();
        assert_eq!(options.deadline(0), Duration::from_secs(5));
        assert_eq!(options.deadline(10), Duration::from_secs(15));
        assert_eq!(options.deadline(u64::MAX), Duration::MAX);
    }
}
