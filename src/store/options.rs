//! How a [`Store`](super::Store) talks to its backend: timeouts, retries, multipart, the index
//! cache and S3 settings.

use std::time::Duration;

/// How a [`Store`](super::Store) talks to its backend. Defaults are documented on each setter.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub(super) timeout: Duration,
    pub(super) scan_timeout: Duration,
    pub(super) min_throughput: u64,
    pub(super) connect_timeout: Duration,
    pub(super) max_retries: usize,
    pub(super) multipart_threshold: usize,
    pub(super) part_size: usize,
    pub(super) part_concurrency: usize,
    pub(super) index_cache_bytes: usize,
    pub(super) endpoint: Option<String>,
    pub(super) region: Option<String>,
    pub(super) allow_http: Option<bool>,
    pub(super) credentials: Option<Credentials>,
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
    /// cache). An entry holds a whole index up to 4 MiB (that of a spill of 500 MB or more),
    /// else the index's first 64 KiB.
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
    pub(super) fn deadline(&self, bytes: u64) -> Duration {
        self.timeout + Duration::from_secs_f64(bytes as f64 / self.min_throughput as f64)
    }
}
