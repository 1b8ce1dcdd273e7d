//! Why a reference could not be resolved or a payload could not be offloaded.

/// An External Storage failure. Each says what to configure or what went wrong; only a missing
/// object and an unavailable store are worth retrying ([`Self::retryable`]): refused
/// credentials, a missing bucket or a refused TLS handshake are [`Self::Misconfigured`], another
/// deterministic 4xx is [`Self::Rejected`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExternalStorageError {
    /// A reference arrived at a worker started without `--external-storage`.
    #[error(
        "received an External Storage reference (driver {driver:?}) but this worker has no \
         External Storage: start it with --external-storage s3://BUCKET (OVERSPILL_EXTERNAL_STORAGE), \
         the bucket the sender's S3StorageDriver writes to"
    )]
    NotConfigured {
        /// The driver the reference names.
        driver: String,
    },
    /// The reference names a driver this worker does not serve.
    #[error(
        "External Storage reference names driver {driver:?}, but this worker's \
         --external-storage serves {served:?}; point --external-storage at the sender's storage \
         (s3:// for aws.s3driver, gs:// for gcp.gcsdriver) and keep the driver's default name"
    )]
    UnknownDriver {
        /// The driver the reference names.
        driver: String,
        /// The driver this worker serves.
        served: &'static str,
    },
    /// The claim names a bucket other than the configured one.
    #[error(
        "External Storage claim names bucket {claimed:?}, but this worker's --external-storage \
         is bucket {configured:?}; use the same bucket on both sides"
    )]
    ForeignBucket {
        /// The bucket in the claim.
        claimed: String,
        /// The bucket this worker reads.
        configured: String,
    },
    /// The reference or its claim is malformed, or names a key outside the storage's keys.
    #[error("invalid External Storage reference: {0}")]
    InvalidReference(String),
    /// A marked reference that is still encoded by a payload codec Overspill does not have.
    #[error(
        "External Storage reference is encoded by a payload codec (encoding {encoding:?}); \
         Overspill runs no payload codec, so the sender must not encode references"
    )]
    EncodedReference {
        /// The reference payload's encoding.
        encoding: String,
    },
    /// The stored object does not hash to the claim's hash.
    #[error(
        "External Storage integrity check failed for {object}: expected sha256 {expected}, \
         got {actual}"
    )]
    HashMismatch {
        /// The claim's object, `bucket/key`.
        object: String,
        /// The claim's hash.
        expected: String,
        /// The stored object's hash.
        actual: String,
    },
    /// The stored object is not a serialized Temporal payload.
    #[error("External Storage object {object} is not a serialized Temporal payload: {reason}")]
    Undecodable {
        /// The claim's object, `bucket/key`.
        object: String,
        /// What the decoder said.
        reason: String,
    },
    /// A payload over the configured size limit.
    #[error(
        "External Storage payload {what} is {size} bytes, over the limit of {limit} bytes; raise \
         --external-storage-max-payload (OVERSPILL_EXTERNAL_STORAGE_MAX_PAYLOAD)"
    )]
    TooLarge {
        /// Which payload (a key, or "to offload").
        what: String,
        /// Its size in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// No object under the claim's key (yet): retryable, the writer may still be uploading.
    #[error("External Storage object {object} does not exist")]
    Missing {
        /// The claim's object, `bucket/key`.
        object: String,
    },
    /// The store refused the credentials, has no such bucket, or refused the TLS handshake:
    /// final, and the reason says what to fix.
    #[error("External Storage at {object} failed: {reason}")]
    Misconfigured {
        /// The object, `bucket/key`.
        object: String,
        /// What the store said, and the setting that fixes it.
        reason: String,
    },
    /// The store answered with a deterministic client error (a 4xx other than the credentials,
    /// a missing bucket or object, 408, 409 and 429, and other than the 400s that clear on a
    /// retry): the same request gets the same answer, so it is final.
    #[error("External Storage at {object} refused the request ({status}{}): {message}", code.as_deref().map(|c| format!(", {c}")).unwrap_or_default())]
    Rejected {
        /// The object, `bucket/key`.
        object: String,
        /// The HTTP status (`400 Bad Request`).
        status: String,
        /// The store's error code (`InvalidArgument`, `MetadataTooLarge`), where it names one.
        code: Option<String>,
        /// The store's own words.
        message: String,
    },
    /// The store failed or did not answer in time: retryable.
    #[error("External Storage at {object} failed: {reason}")]
    Unavailable {
        /// The object, `bucket/key`.
        object: String,
        /// What the store said.
        reason: String,
    },
    /// The `--external-storage` URL cannot be used.
    #[error("--external-storage: {0}")]
    Config(String),
}

impl ExternalStorageError {
    /// The Temporal ApplicationError type an activity fails with.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::NotConfigured { .. } => "ExternalStorageNotConfigured",
            Self::UnknownDriver { .. } => "ExternalStorageUnknownDriver",
            Self::ForeignBucket { .. } => "ExternalStorageForeignBucket",
            Self::InvalidReference(_) | Self::EncodedReference { .. } => {
                "ExternalStorageInvalidReference"
            }
            Self::HashMismatch { .. } => "ExternalStorageIntegrity",
            Self::Undecodable { .. } => "ExternalStorageUndecodable",
            Self::TooLarge { .. } => "ExternalStorageTooLarge",
            Self::Missing { .. } => "ExternalStorageMissing",
            Self::Misconfigured { .. } => "ExternalStorageMisconfigured",
            Self::Rejected { .. } => "ExternalStorageRejected",
            Self::Unavailable { .. } => "ExternalStorageUnavailable",
            Self::Config(_) => "ExternalStorageConfig",
        }
    }

    /// Whether trying again may succeed: only a missing object or an unavailable store.
    pub fn retryable(&self) -> bool {
        matches!(self, Self::Missing { .. } | Self::Unavailable { .. })
    }
}
