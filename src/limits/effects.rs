//! The engine's two doors to the outside world: a spill store and a summarizer.
//!
//! The engine itself does no I/O. A Spill reaches storage only through [`SpillStore`] and a
//! Summarize reaches a model only through [`Summarizer`], so the engine runs unchanged over
//! `object_store` in an activity, over an activity call inside workflow code, or over an
//! in-memory fake in a unit test.

use std::collections::BTreeMap;
use std::sync::Mutex;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

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
    /// The store refuses to be used (a symlinked or foreign-owned local root, a read-only store).
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
            Self::Backend(_) => "Backend",
        }
    }

    /// Whether the same call may succeed later: a timeout or a backend failure (a store that is
    /// down, a 5xx). Refused handles, misconfiguration and over-long keys are final.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Timeout(_) | Self::Backend(_))
    }

    /// Whether the handle itself is unknown or refused, as opposed to the store failing.
    pub fn is_unknown_handle(&self) -> bool {
        matches!(
            self,
            Self::NotFound { .. } | Self::OutsideStore { .. } | Self::PermissionDenied(_)
        )
    }
}

/// Where spilled payloads go: write a key, get a handle back. Reading them back is paging's
/// concern (`read::SpillReader`), not the engine's.
///
/// A write of an existing key must be an overwrite (replays and retries write the same key again).
/// The engine never needs `Send` futures, so the trait serves workflow code too.
#[allow(async_fn_in_trait)]
pub trait SpillStore {
    /// Persist `data` under `key` and return the handle the model will use to read it back.
    async fn write(&self, key: &str, data: Bytes) -> Result<String, StoreError>;
}

/// Token and request counts of model calls, to fold into the calling agent's usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// Model requests made.
    pub requests: u64,
    /// Prompt tokens reported by the model.
    pub input_tokens: u64,
    /// Completion tokens reported by the model.
    pub output_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.requests += other.requests;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// One summarization to perform.
#[derive(Debug, Clone, Copy)]
pub struct SummaryRequest<'a> {
    /// The tool whose output is summarized.
    pub tool_name: &'a str,
    /// The output to summarize.
    pub output: &'a str,
    /// The rendered prompt (the template with `{tool_name}` and `{output}` filled in).
    pub prompt: &'a str,
    /// The Summarize action's model override, if any.
    pub model: Option<&'a str>,
}

/// A summary and what it cost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// The summary text as the model returned it (the engine strips it).
    pub text: String,
    /// What the call cost.
    pub usage: Usage,
}

/// Why a summary could not be made: the one error of every summarizer, from the engine's to the
/// OpenAI-compatible client, with the one retry rule ([`SummarizeError::is_retryable`]).
///
/// Texts never contain an API key: server messages are redacted before they are stored here.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SummarizeError {
    /// No model is configured, or the configuration is unusable (the text says what is missing).
    #[error("the summarizer is not configured: {0}")]
    NotConfigured(String),
    /// The model did not answer in time.
    #[error("the model did not answer within {0:?}")]
    Timeout(std::time::Duration),
    /// The model refused the request: a 4xx other than 408, 409 and 429 (a bad model name, a
    /// context length exceeded, a bad key).
    #[error("the model refused the request (HTTP {status}): {message}")]
    Rejected {
        /// The HTTP status.
        status: u16,
        /// The server's error message.
        message: String,
    },
    /// The model's reply could not be understood.
    #[error("malformed model reply: {0}")]
    Malformed(String),
    /// The model is unavailable for now: a 429, a 5xx, a 408 or 409, or a connection failure.
    #[error("the model is unavailable ({}): {message}", status_text(*status))]
    Unavailable {
        /// The HTTP status, or `None` when no reply came.
        status: Option<u16>,
        /// The server's error message (or the transport error).
        message: String,
        /// The delay the server asked for before the next attempt (`Retry-After`).
        retry_after: Option<std::time::Duration>,
    },
}

fn status_text(status: Option<u16>) -> String {
    status.map_or_else(|| "no response".to_owned(), |s| format!("HTTP {s}"))
}

impl SummarizeError {
    /// The error's type name, as logged in fallback warnings (`… failed (Timeout)`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::NotConfigured(_) => "NotConfigured",
            Self::Timeout(_) => "Timeout",
            Self::Rejected { .. } => "Rejected",
            Self::Malformed(_) => "Malformed",
            Self::Unavailable { .. } => "Unavailable",
        }
    }

    /// Whether the same request may succeed later: only [`SummarizeError::Unavailable`]. A
    /// timeout is final (the model spent its time on this exact input, so the output goes to the
    /// action's `then` rather than paying for the call again), and so are a refusal and a
    /// malformed reply.
    ///
    /// ```
    /// use overspill::limits::SummarizeError;
    /// let busy = SummarizeError::Unavailable { status: Some(429), message: "slow down".into(), retry_after: None };
    /// assert!(busy.is_retryable());
    /// assert!(!SummarizeError::Timeout(std::time::Duration::from_secs(1)).is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }

    /// The delay the server asked for before the next attempt, if any.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            Self::Unavailable { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The HTTP status of the failed reply, if there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Unavailable { status, .. } => *status,
            Self::Rejected { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// Summarizes text with one model call.
#[allow(async_fn_in_trait)]
pub trait Summarizer {
    /// Summarize `request.output`; the engine strips the returned text.
    async fn summarize(&self, request: SummaryRequest<'_>) -> Result<Summary, SummarizeError>;
}

/// A store for configurations that never spill: every write fails, so a Spill falls back.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoStore;

impl SpillStore for NoStore {
    async fn write(&self, _key: &str, _data: Bytes) -> Result<String, StoreError> {
        Err(StoreError::PermissionDenied(
            "no spill store is configured".into(),
        ))
    }
}

/// A summarizer for configurations without a model: every call fails, so a Summarize falls back.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSummarizer;

impl Summarizer for NoSummarizer {
    async fn summarize(&self, _request: SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        Err(SummarizeError::NotConfigured(
            "no model is configured: set --model-url (or OVERSPILL_MODEL_URL)".into(),
        ))
    }
}

/// A borrowed summarizer summarizes as its owner.
impl<S: Summarizer + ?Sized> Summarizer for &S {
    async fn summarize(&self, request: SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        (**self).summarize(request).await
    }
}

/// No summarizer is [`NoSummarizer`]: an optional model, as a worker holds it.
impl<S: Summarizer> Summarizer for Option<S> {
    async fn summarize(&self, request: SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        match self {
            Some(summarizer) => summarizer.summarize(request).await,
            None => NoSummarizer.summarize(request).await,
        }
    }
}

/// An in-memory [`SpillStore`], for tests and workflow-side experiments. Handle = key.
#[derive(Debug, Default)]
pub struct MemoryStore {
    objects: Mutex<BTreeMap<String, Bytes>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The handles stored so far, in order.
    pub fn handles(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    /// The payload stored under `handle`.
    pub fn get(&self, handle: &str) -> Option<Bytes> {
        self.lock().get(handle).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Bytes>> {
        self.objects
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl SpillStore for MemoryStore {
    async fn write(&self, key: &str, data: Bytes) -> Result<String, StoreError> {
        self.lock().insert(key.to_owned(), data);
        Ok(key.to_owned())
    }
}
