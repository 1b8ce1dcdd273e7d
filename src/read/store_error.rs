//! A spill store's error: why a spill could not be written or read. It is the error of the
//! [`SpillReader`](super::SpillReader) seam that paging reads through, so it lives beside it, and
//! the store that implements the seam re-exports it.

use crate::limits::SpillError;

/// Why a store could not write or read a spill.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No object is stored under the handle.
    #[error("no stored tool result for handle {handle:?}")]
    NotFound {
        /// The handle that was asked for.
        handle: String,
    },
    /// The handle resolves outside the store (traversal, absolute path, foreign prefix, symlink).
    #[error("handle {handle:?} resolves outside the store")]
    OutsideStore {
        /// The refused handle.
        handle: String,
    },
    /// The store refuses to be used (a symlinked, foreign-owned or unreadable local root or
    /// file, no store configured): the store's failure, never an unknown handle.
    #[error("{0}")]
    PermissionDenied(String),
    /// The store did not answer in time.
    #[error("the store did not answer within {0:?}")]
    Timeout(std::time::Duration),
    /// The store cannot work as configured (a missing bucket, refused or missing credentials):
    /// retrying cannot help, and the message says what to fix.
    #[error("{0}")]
    Misconfigured(String),
    /// The key is longer than the backend can hold; retrying the same key cannot help.
    #[error(
        "the spill key {key:?} is {bytes} bytes as an object path, more than the store's {max}: \
         shorten the run id or tool call id"
    )]
    KeyTooLong {
        /// The key.
        key: String,
        /// Its object path's length, line index suffix included.
        bytes: usize,
        /// The backend's limit.
        max: usize,
    },
    /// The store answered the request with a deterministic client error (a 4xx other than 408
    /// Request Timeout and 429 Too Many Requests, and other than the 401, 403 and 404 that are
    /// [`Self::Misconfigured`] or [`Self::NotFound`]): the same request gets the same answer, so
    /// retrying cannot help.
    #[error("the store refused the request ({status}{}): {message}", comma(code.as_deref()))]
    Rejected {
        /// The HTTP status (`400 Bad Request`).
        status: String,
        /// The store's error code (`InvalidArgument`, `MetadataTooLarge`, `KeyTooLongError`,
        /// `EntityTooLarge`), where its answer names one.
        code: Option<String>,
        /// The store's own words (its error message, or the start of its answer).
        message: String,
    },
    /// A bug: a task of the worker panicked while it served the call. Retrying the same call
    /// would hit it again.
    #[error(
        "a bug in Overspill: {task} panicked ({message}); the call cannot succeed, please report it"
    )]
    Bug {
        /// What was running (`the grep scan`).
        task: &'static str,
        /// The panic's message.
        message: String,
    },
    /// Any other failure of the backend.
    #[error("{0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    /// The error's type name, as logged in fallback warnings (`Spilling output … failed (Timeout)`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => "NotFound",
            Self::OutsideStore { .. } => "OutsideStore",
            Self::PermissionDenied(_) => "PermissionDenied",
            Self::Timeout(_) => "Timeout",
            Self::Misconfigured(_) => "Misconfigured",
            Self::KeyTooLong { .. } => "KeyTooLong",
            Self::Rejected { .. } => "Rejected",
            Self::Bug { .. } => "Bug",
            Self::Backend(_) => "Backend",
        }
    }

    /// The error for `task`, which panicked with `payload` (logged at ERROR with its message).
    pub fn panicked(task: &'static str, payload: &(dyn std::any::Any + Send)) -> Self {
        let message = (payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        tracing::error!(target: "overspill::bug", "{task} panicked: {message}");
        Self::Bug { task, message }
    }

    /// This error, with a missing or refused object named by `handle`.
    pub(crate) fn about(self, handle: &str) -> Self {
        let handle = handle.to_owned();
        match self {
            Self::NotFound { .. } => Self::NotFound { handle },
            Self::OutsideStore { .. } => Self::OutsideStore { handle },
            other => other,
        }
    }

    /// Whether the same call may succeed later: a timeout or a backend failure (a store that is
    /// down, a 5xx, a 408 or 429). Refused handles, misconfiguration, over-long keys, a store's
    /// deterministic 4xx and a bug are final.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Timeout(_) | Self::Backend(_))
    }

    /// Whether the handle itself is unknown or refused, as opposed to the store failing: a store
    /// that refuses to be read ([`Self::PermissionDenied`]) is the store failing, so the model is
    /// never told that a spill is gone when the store could not be asked.
    pub fn is_unknown_handle(&self) -> bool {
        matches!(self, Self::NotFound { .. } | Self::OutsideStore { .. })
    }
}

/// `, code`, or nothing without a code.
fn comma(code: Option<&str>) -> String {
    code.map(|c| format!(", {c}")).unwrap_or_default()
}

impl SpillError for StoreError {
    fn type_name(&self) -> &'static str {
        StoreError::type_name(self)
    }
}
