//! The engine's door to a model: a Summarize reaches one only through [`Summarizer`], and what
//! the call cost comes back as [`Usage`].

use serde::{Deserialize, Serialize};

/// Token and request counts of model calls, to fold into the calling agent's usage.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, derive_more::AddAssign,
)]
#[serde(default)]
pub struct Usage {
    /// Model requests made.
    pub requests: u64,
    /// Prompt tokens reported by the model.
    pub input_tokens: u64,
    /// Completion tokens reported by the model.
    pub output_tokens: u64,
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
    /// The prompt is over the model's context window, and the server said how large the window
    /// is (llama.cpp's `exceed_context_size_error`): a chunking summarizer re-chunks to fit it.
    #[error(
        "the prompt is over the model's context of {context_tokens} tokens (HTTP {status}): {message}"
    )]
    ContextExceeded {
        /// The HTTP status.
        status: u16,
        /// The model's context window, in tokens (`n_ctx`).
        context_tokens: u64,
        /// The prompt's length in tokens, when the server counted it (`n_prompt_tokens`).
        prompt_tokens: Option<u64>,
        /// The server's error message.
        message: String,
    },
    /// The model's reply could not be understood.
    #[error("malformed model reply: {0}")]
    Malformed(String),
    /// The model is unavailable for now: a 429, a 5xx, a 408 or 409, or a connection failure.
    #[error("the model is unavailable ({}): {message}",
        status.map_or_else(|| "no response".to_owned(), |s| format!("HTTP {s}")))]
    Unavailable {
        /// The HTTP status, or `None` when no reply came.
        status: Option<u16>,
        /// The server's error message (or the transport error).
        message: String,
        /// The delay the server asked for before the next attempt (`Retry-After`).
        retry_after: Option<std::time::Duration>,
    },
}

impl SummarizeError {
    /// The error's type name, as logged in fallback warnings (`… failed (Timeout)`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::NotConfigured(_) => "NotConfigured",
            Self::Timeout(_) => "Timeout",
            Self::Rejected { .. } => "Rejected",
            Self::ContextExceeded { .. } => "ContextExceeded",
            Self::Malformed(_) => "Malformed",
            Self::Unavailable { .. } => "Unavailable",
        }
    }

    /// Whether the same request may succeed later: only [`SummarizeError::Unavailable`]. A
    /// timeout is final (the model spent its time on this exact input, so the output goes to the
    /// action's `then` rather than paying for the call again), and so are a refusal and a
    /// malformed reply.
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
            Self::Rejected { status, .. } | Self::ContextExceeded { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// Summarizes text with one model call.
#[allow(async_fn_in_trait)]
pub trait Summarizer {
    /// Summarize `request.output`; the engine strips the returned text.
    async fn summarize(&self, request: SummaryRequest<'_>) -> Result<Summary, SummarizeError>;

    /// Whether summaries are left to someone else: then a result any part of which falls in a
    /// Summarize band passes through whole, unreduced ([`Deferred`]). Default: no.
    fn defers(&self) -> bool {
        false
    }
}

/// Summaries made elsewhere: a result with a part in a Summarize band is left as it is, for
/// whoever has the model (a Python tool worker without one leaves it to the workflow's harness).
#[derive(Debug, Clone, Copy, Default)]
pub struct Deferred;

impl Summarizer for Deferred {
    async fn summarize(&self, request: SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        NoSummarizer.summarize(request).await
    }

    fn defers(&self) -> bool {
        true
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

/// No summarizer is [`NoSummarizer`]: an optional model, as a worker holds it.
impl<S: Summarizer> Summarizer for Option<S> {
    async fn summarize(&self, request: SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        match self {
            Some(summarizer) => summarizer.summarize(request).await,
            None => NoSummarizer.summarize(request).await,
        }
    }

    fn defers(&self) -> bool {
        self.as_ref().is_some_and(S::defers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unavailable_is_retried() {
        let busy = SummarizeError::Unavailable {
            status: Some(429),
            message: "slow down".into(),
            retry_after: None,
        };
        assert!(busy.is_retryable());
        assert!(!SummarizeError::Timeout(std::time::Duration::from_secs(1)).is_retryable());
    }
}
