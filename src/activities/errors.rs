//! How activity failures reach the caller: typed Temporal ApplicationErrors.
//!
//! | type            | retryable | when                                                        |
//! |-----------------|-----------|-------------------------------------------------------------|
//! | `InvalidConfig` | no        | the limits configuration is invalid (message names the field) |
//! | `InvalidInput`  | no        | the request does not decode (message names the field)       |
//! | `ModelRetry`    | no        | read_tool_result's bad `offset` / `limit` (reference message) |
//! | `StoreUnavailable` | yes    | the store is down or slow and the action has no `then`      |
//! | `StoreMisconfigured` | no   | a missing bucket, refused or missing credentials (says what to fix) |
//! | `StoreRefused`  | no        | a handle outside the store, a key the store cannot hold, or a store that refuses to be used (a local root or file this user may not use, no store configured) |
//! | `StoreRejected` | no        | the store answered a deterministic 4xx (not 408, 409 or 429, nor S3's 400 `RequestTimeout`, `IncompleteBody`, `BadDigest` or `ExpiredToken`, which are `StoreUnavailable`); the message names the status and the store's error code |
//! | `WorkerBug`     | no        | a task of the worker panicked (a bug, logged at ERROR with the panic's message) |
//! | `ModelUnavailable` | yes    | the model is unavailable (429, 5xx, 408, 409, no connection) and the action has no `then`; waits the server's `Retry-After` |
//! | `ModelRejected` | no        | the model timed out, refused the request or replied malformed, or no model is configured |
//! | `QuerySandboxFailed` | yes  | a query's child process could not start, failed or answered garbage (names which) |
//! | `ExternalStorage…` | see below | an External Storage reference could not be resolved, or a reply offloaded |
//!
//! External Storage failures carry the error's own type: `ExternalStorageMissing` and
//! `ExternalStorageUnavailable` are retryable; `ExternalStorageNotConfigured`,
//! `ExternalStorageMisconfigured` (refused credentials, a missing bucket, a refused TLS
//! handshake), `ExternalStorageRejected` (another deterministic 4xx; the message names the status
//! and the store's error code), `ExternalStorageForeignBucket`, `ExternalStorageUnknownDriver`,
//! `ExternalStorageIntegrity`, `ExternalStorageInvalidReference`, `ExternalStorageUndecodable`
//! and `ExternalStorageTooLarge` are not, and say what to configure.

use temporalio_common::error::ApplicationFailure;
use temporalio_sdk::activities::ActivityError;

use crate::external_storage::ExternalStorageError;
use crate::limits::{ConfigError, SummarizeError};
use crate::store::StoreError;

/// A typed activity failure, converted into a Temporal ApplicationError.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    /// The ApplicationError type (`InvalidConfig`, `InvalidInput`, …).
    pub type_name: &'static str,
    /// The message (names the offending field for config and input errors).
    pub message: String,
    /// Whether Temporal may retry the activity.
    pub retryable: bool,
    /// The model's `Retry-After`, as the next retry's delay.
    pub retry_after: Option<std::time::Duration>,
}

impl Failure {
    /// A failure of `type_name` with no retry delay.
    pub(crate) fn new(type_name: &'static str, message: String, retryable: bool) -> Self {
        Self {
            type_name,
            message,
            retryable,
            retry_after: None,
        }
    }

    /// `InvalidInput` for a request field (non-retryable).
    pub fn invalid_input(field: &str, problem: impl std::fmt::Display) -> Self {
        let field = if matches!(field, "" | ".") {
            "request"
        } else {
            field
        };
        let message = format!("invalid input at `{field}`: {problem}");
        Self::new("InvalidInput", message, false)
    }

    /// `InvalidConfig` for a configuration error (non-retryable); the path is under `config`.
    pub fn invalid_config(error: &ConfigError) -> Self {
        let message = error.to_string();
        let message = message.replacen("configuration at `", "configuration at `config.", 1);
        Self::new("InvalidConfig", message, false)
    }

    /// `ModelRetry` with the reference's exact message (non-retryable).
    pub fn model_retry(message: impl Into<String>) -> Self {
        Self::new("ModelRetry", message.into(), false)
    }

    /// A store failure: retryable only when the store may answer later.
    pub fn store(error: &StoreError) -> Self {
        let type_name = match error {
            StoreError::Misconfigured(_) => "StoreMisconfigured",
            StoreError::Rejected { .. } => "StoreRejected",
            StoreError::Bug { .. } => "WorkerBug",
            e if e.is_retryable() => "StoreUnavailable",
            _ => "StoreRefused",
        };
        let message = format!("spill store failed ({}): {error}", error.type_name());
        Self::new(type_name, message, error.is_retryable())
    }

    /// A query's child process that gave no answer: retryable (another attempt, perhaps on
    /// another worker, may start one).
    pub fn query_sandbox(error: &(dyn std::error::Error + Send + Sync)) -> Self {
        Self::new("QuerySandboxFailed", error.to_string(), true)
    }

    /// A model failure: retryable when the model may answer later, after the server's
    /// `Retry-After` when it named one.
    pub fn model(error: &SummarizeError) -> Self {
        let retryable = error.is_retryable();
        let type_name = if retryable {
            "ModelUnavailable"
        } else {
            "ModelRejected"
        };
        let message = format!("summary failed ({}): {error}", error.type_name());
        Self {
            retry_after: error.retry_after(),
            ..Self::new(type_name, message, retryable)
        }
    }

    /// An External Storage failure, typed and retryable as the error says.
    pub fn external_storage(error: &ExternalStorageError) -> Self {
        Self::new(error.type_name(), error.to_string(), error.retryable())
    }

    /// The Temporal ApplicationError for this failure.
    pub fn into_activity_error(self) -> ActivityError {
        let (retryable, type_name) = (self.retryable, self.type_name.to_owned());
        let retry_after = self.retry_after.filter(|_| retryable);
        ActivityError::application(
            ApplicationFailure::builder(Box::new(self))
                .type_name(type_name)
                .non_retryable(!retryable)
                .maybe_next_retry_delay(retry_after)
                .build(),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A store's deterministic answer and a bug are final and say what happened; an outage is
    /// retried.
    #[test]
    fn store_failures_are_final_unless_the_store_may_answer_later() {
        let rejected = Failure::store(&StoreError::Rejected {
            status: "400 Bad Request".into(),
            code: Some("MetadataTooLarge".into()),
            message: "Your metadata headers exceed the maximum allowed metadata size.".into(),
        });
        assert_eq!(
            (rejected.type_name, rejected.retryable),
            ("StoreRejected", false)
        );
        assert_eq!(
            rejected.message,
            "spill store failed (Rejected): the store refused the request (400 Bad Request, \
             MetadataTooLarge): Your metadata headers exceed the maximum allowed metadata size."
        );
        let bug = Failure::store(&StoreError::panicked(
            "the grep scan",
            &"index out of bounds",
        ));
        assert_eq!((bug.type_name, bug.retryable), ("WorkerBug", false));
        assert!(
            bug.message
                .contains("the grep scan panicked (index out of bounds)")
        );
        let denied = Failure::store(&StoreError::PermissionDenied("root unreadable".into()));
        assert_eq!(
            (denied.type_name, denied.retryable),
            ("StoreRefused", false)
        );
        let down = Failure::store(&StoreError::Backend("connection reset".into()));
        assert_eq!((down.type_name, down.retryable), ("StoreUnavailable", true));
    }

    /// One retry rule: only an unavailable model is retried, after the server's delay; a timeout,
    /// a refusal and a malformed reply go to the action's `then` at once.
    #[test]
    fn model_failures_retry_only_when_unavailable() {
        let busy = Failure::model(&SummarizeError::Unavailable {
            status: Some(429),
            message: "slow down".into(),
            retry_after: Some(Duration::from_secs(7)),
        });
        assert_eq!(
            (busy.type_name, busy.retryable, busy.retry_after),
            ("ModelUnavailable", true, Some(Duration::from_secs(7)))
        );
        for final_error in [
            SummarizeError::Timeout(Duration::from_secs(1)),
            SummarizeError::Malformed("no choices".into()),
            SummarizeError::Rejected {
                status: 400,
                message: "bad".into(),
            },
            SummarizeError::NotConfigured("no model".into()),
        ] {
            let failure = Failure::model(&final_error);
            assert_eq!(
                (failure.type_name, failure.retryable),
                ("ModelRejected", false),
                "{final_error:?}"
            );
        }
        let ActivityError::Application(failure) = busy.into_activity_error() else {
            panic!("an application failure")
        };
        assert_eq!(failure.type_name(), Some("ModelUnavailable"));
        assert!(!failure.is_non_retryable());
        assert_eq!(failure.next_retry_delay(), Some(Duration::from_secs(7)));
    }
}
