//! The engine's two doors to the outside world: a spill store and a summarizer.
//!
//! The engine itself does no I/O. A Spill reaches storage only through [`SpillStore`] and a
//! Summarize reaches a model only through [`Summarizer`], so the engine runs unchanged over
//! `object_store` in an activity, over an activity call inside workflow code, or over an
//! in-memory fake in a unit test.

use std::collections::BTreeMap;
use std::ops::Range;
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

/// Where spilled payloads live: write a key, get a handle back; read a handle.
///
/// A write of an existing key must be an overwrite (replays and retries write the same key again).
/// The engine never needs `Send` futures, so the trait serves workflow code too.
#[allow(async_fn_in_trait)]
pub trait SpillStore {
    /// Persist `data` under `key` and return the handle the model will use to read it back.
    async fn write(&self, key: &str, data: Bytes) -> Result<String, StoreError>;

    /// The whole payload stored under `handle`.
    async fn read(&self, handle: &str) -> Result<Bytes, StoreError>;

    /// The payload's size in bytes.
    async fn len(&self, handle: &str) -> Result<u64, StoreError> {
        Ok(self.read(handle).await?.len() as u64)
    }

    /// Bytes `range` of the payload. Stores that can serve ranges cheaply override this.
    async fn read_range(&self, handle: &str, range: Range<u64>) -> Result<Bytes, StoreError> {
        let all = self.read(handle).await?;
        let end = (range.end as usize).min(all.len());
        let start = (range.start as usize).min(end);
        Ok(all.slice(start..end))
    }

    /// The payload's line index (see [`crate::read::LineIndex`]), if the store keeps one beside the
    /// payload or has it cached. `None` makes readers scan the payload themselves.
    async fn line_index(&self, handle: &str) -> Result<Option<crate::read::LineIndex>, StoreError> {
        let _ = handle;
        Ok(None)
    }
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

/// Why a summary could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SummarizeError {
    /// No summarizer is configured.
    #[error("no summarizer is configured")]
    NotConfigured,
    /// The model did not answer in time.
    #[error("the model did not answer within {0:?}")]
    Timeout(std::time::Duration),
    /// The model refused the request (a 4xx other than 429).
    #[error("the model refused the request: {0}")]
    Rejected(String),
    /// The model's reply could not be understood.
    #[error("malformed model reply: {0}")]
    Malformed(String),
    /// The model is unavailable for now (429, 5xx, connection failure); worth retrying.
    #[error("the model is unavailable: {0}")]
    Unavailable(String),
}

impl SummarizeError {
    /// The error's type name, as logged in fallback warnings.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::NotConfigured => "NotConfigured",
            Self::Timeout(_) => "Timeout",
            Self::Rejected(_) => "Rejected",
            Self::Malformed(_) => "Malformed",
            Self::Unavailable(_) => "Unavailable",
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
    async fn read(&self, handle: &str) -> Result<Bytes, StoreError> {
        Err(StoreError::NotFound {
            handle: handle.into(),
        })
    }
}

/// A summarizer for configurations without a model: every call fails, so a Summarize falls back.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSummarizer;

impl Summarizer for NoSummarizer {
    async fn summarize(&self, _request: SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        Err(SummarizeError::NotConfigured)
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
    async fn read(&self, handle: &str) -> Result<Bytes, StoreError> {
        self.lock()
            .get(handle)
            .cloned()
            .ok_or_else(|| StoreError::NotFound {
                handle: handle.into(),
            })
    }
}
