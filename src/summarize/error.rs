//! The summarizer client's error: what failed, whether a retry can help, and after how long.

use std::time::Duration;

use crate::limits::SummarizeError;

/// Why a model call failed.
///
/// Texts never contain the API key: server messages are redacted before they are stored here.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No endpoint or no model is configured, or the configuration is unusable.
    #[error("the summarizer is not configured: {0}")]
    NotConfigured(String),
    /// The model did not answer within the configured timeout.
    #[error("the model did not answer within {0:?}")]
    Timeout(Duration),
    /// The endpoint is unavailable for now: a 429, a 5xx, a 408 or 409, or a connection failure. Worth retrying,
    /// after `retry_after` when the server named a delay.
    #[error("the model is unavailable ({}): {message}", status_text(*status))]
    Unavailable {
        /// The HTTP status, or `None` for a connection failure.
        status: Option<u16>,
        /// The server's error message (or the transport error).
        message: String,
        /// The server's `Retry-After` (or `retry-after-ms`) delay.
        retry_after: Option<Duration>,
    },
    /// The endpoint refused the request: a 4xx other than 429 (bad model name, context length
    /// exceeded, bad key). Retrying the same request cannot help.
    #[error("the model refused the request ({status}): {message}")]
    Rejected {
        /// The HTTP status.
        status: u16,
        /// The server's error message.
        message: String,
    },
    /// The reply is not a chat completion with a text message.
    #[error("malformed model reply: {0}")]
    Malformed(String),
}

fn status_text(status: Option<u16>) -> String {
    status.map_or_else(|| "no response".to_owned(), |s| format!("HTTP {s}"))
}

impl Error {
    /// The error's type name: the Temporal ApplicationFailure type and the fallback WARN's
    /// `(Type)`, the same names as [`SummarizeError::type_name`].
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::NotConfigured(_) => "NotConfigured",
            Self::Timeout(_) => "Timeout",
            Self::Unavailable { .. } => "Unavailable",
            Self::Rejected { .. } => "Rejected",
            Self::Malformed(_) => "Malformed",
        }
    }

    /// Whether the same request may succeed later: only [`Error::Unavailable`] (429, 5xx, 408, 409,
    /// connection failures). A timeout is final: the model spent its time on this exact input, so
    /// the output goes to the action's `then` rather than paying for the call again.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }

    /// The delay the server asked for before the next attempt (`Retry-After`), if any.
    pub fn retry_after(&self) -> Option<Duration> {
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

    /// The Temporal activity error for this failure: an ApplicationFailure typed with
    /// [`Error::type_name`], non-retryable unless [`Error::is_retryable`], and with the server's
    /// `Retry-After` as its `next_retry_delay`.
    pub fn into_activity_error(self) -> temporalio_common::ActivityError {
        use temporalio_common::error::ApplicationFailure;
        let type_name = self.type_name().to_owned();
        let retryable = self.is_retryable();
        let delay = self.retry_after();
        let failure = ApplicationFailure::builder(self)
            .type_name(type_name)
            .non_retryable(!retryable)
            .maybe_next_retry_delay(delay)
            .build();
        temporalio_common::ActivityError::application(failure)
    }
}

impl From<Error> for SummarizeError {
    fn from(error: Error) -> Self {
        match error {
            Error::NotConfigured(_) => Self::NotConfigured,
            Error::Timeout(d) => Self::Timeout(d),
            Error::Unavailable {
                status, message, ..
            } => Self::Unavailable(format!("{}: {message}", status_text(status))),
            Error::Rejected { status, message } => {
                Self::Rejected(format!("HTTP {status}: {message}"))
            }
            Error::Malformed(message) => Self::Malformed(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        let busy = Error::Unavailable {
            status: Some(429),
            message: "slow down".into(),
            retry_after: Some(Duration::from_secs(2)),
        };
        assert!(busy.is_retryable());
        assert_eq!(busy.retry_after(), Some(Duration::from_secs(2)));
        assert_eq!(
            busy.to_string(),
            "the model is unavailable (HTTP 429): slow down"
        );
        let refused = Error::Rejected {
            status: 400,
            message: "bad".into(),
        };
        assert!(!refused.is_retryable());
        assert!(!Error::Timeout(Duration::from_secs(1)).is_retryable());
        assert!(!Error::Malformed("x".into()).is_retryable());
        assert!(matches!(
            SummarizeError::from(refused),
            SummarizeError::Rejected(m) if m == "HTTP 400: bad"
        ));
        assert_eq!(SummarizeError::from(busy).type_name(), "Unavailable");
    }

    #[test]
    fn activity_failure_carries_type_and_delay() {
        let busy = Error::Unavailable {
            status: Some(503),
            message: "down".into(),
            retry_after: Some(Duration::from_secs(7)),
        };
        let temporalio_common::ActivityError::Application(failure) = busy.into_activity_error()
        else {
            panic!("an application failure")
        };
        assert_eq!(failure.type_name(), Some("Unavailable"));
        assert!(!failure.is_non_retryable());
        assert_eq!(failure.next_retry_delay(), Some(Duration::from_secs(7)));

        let temporalio_common::ActivityError::Application(failure) =
            Error::Malformed("no choices".into()).into_activity_error()
        else {
            panic!("an application failure")
        };
        assert_eq!(failure.type_name(), Some("Malformed"));
        assert!(failure.is_non_retryable());
        assert_eq!(failure.next_retry_delay(), None);
    }
}
