//! Why a service call failed, typed once for every caller: its kind (the Temporal
//! ApplicationError type the activities raise, the `kind` a Python `StoreError` carries), whether
//! the same call may succeed later, and a message that names the fix in the terms of the API the
//! caller used ([`Surface`]).
//!
//! | kind            | retryable | when                                                        |
//! |-----------------|-----------|-------------------------------------------------------------|
//! | `InvalidConfig` | no        | the limits configuration is invalid (message names the field) |
//! | `InvalidInput`  | no        | the request does not decode (message names the field)       |
//! | `ModelRetry`    | no        | a read-back's bad argument: the model's to retry (the reference's message) |
//! | `StoreUnavailable` | yes    | the store is down or slow and the action has no `then`      |
//! | `StoreMisconfigured` | no   | a missing bucket, refused or missing credentials (says what to fix) |
//! | `StoreRefused`  | no        | a handle outside the store, a key the store cannot hold, or a store that refuses to be used (a local root or file this user may not use, no store configured) |
//! | `StoreRejected` | no        | the store answered a deterministic 4xx (not 408, 409 or 429, nor S3's 400 `RequestTimeout`, `IncompleteBody`, `BadDigest` or `ExpiredToken`, which are `StoreUnavailable`); the message names the status and the store's error code |
//! | `WorkerBug`     | no        | a task panicked (a bug, logged at ERROR with the panic's message) |
//! | `ModelUnavailable` | yes    | the model is unavailable (429, 5xx, 408, 409, no connection) and the action has no `then`; waits the server's `Retry-After` |
//! | `ModelRejected` | no        | the model timed out, refused the request or replied malformed, or no model is configured |
//! | `QuerySandboxFailed` | yes  | a query's child process could not start, failed or answered garbage (names which) |
//! | `QuerySandboxUnbounded` | no | no sandbox can bound a query's memory here (none is configured, or it cannot bound itself, as on a system without `/proc`): the query is refused rather than run unbounded, and the message says why |

use std::fmt;
use std::time::Duration;

use crate::limits::{ConfigError, SummarizeError};
use crate::query::SandboxError;
use crate::store::StoreError;

/// The kind of a bad argument of a read-back tool: the model's to retry.
pub const MODEL_RETRY: &str = "ModelRetry";
/// The kind of a limits configuration the engine refuses.
pub const INVALID_CONFIG: &str = "InvalidConfig";
/// The kind of a request that does not decode, or a field it refuses.
pub const INVALID_INPUT: &str = "InvalidInput";
/// The kind of a query refused because no sandbox can bound its memory.
pub const QUERY_SANDBOX_UNBOUNDED: &str = "QuerySandboxUnbounded";

/// The API a caller uses, in whose terms a failure names its fix: an activity request's field
/// (`run_id`), a Python keyword argument (`run_id=`), a Node property (`runId`), a command-line
/// flag (`--run-id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Surface {
    /// The `tool_output_limits.*` activities' requests.
    #[default]
    Activity,
    /// The Python module's functions and keyword arguments.
    Python,
    /// The Node addon's functions and request objects.
    Node,
    /// The `overspill` command's flags.
    Cli,
}

impl Surface {
    /// How this surface names the request field `field` (snake_case, as an activity request
    /// names it), quoted: `` `run_id` ``, `` `run_id=` ``, `` `runId` ``, `` `--run-id` ``.
    pub fn name(self, field: &str) -> String {
        match self {
            Self::Activity => format!("`{field}`"),
            Self::Python => format!("`{field}=`"),
            Self::Node => {
                let mut words = field.split('_');
                let first = words.next().unwrap_or_default().to_owned();
                let camel = words.fold(first, |mut name, word| {
                    let mut chars = word.chars();
                    name.extend(chars.next().map(|c| c.to_ascii_uppercase()));
                    name.push_str(chars.as_str());
                    name
                });
                format!("`{camel}`")
            }
            Self::Cli => {
                let flag = match field {
                    "tool_name" => "tool",
                    "tool_call_id" => "call-id",
                    other => return format!("`--{}`", other.replace('_', "-")),
                };
                format!("`--{flag}`")
            }
        }
    }
}

/// A typed failure of a service call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    /// Its kind (`InvalidConfig`, `StoreUnavailable`, …; the module's table).
    pub type_name: &'static str,
    /// The message (names the offending field for config and input errors).
    pub message: String,
    /// Whether the same call may succeed later.
    pub retryable: bool,
    /// The model's `Retry-After`, as the next retry's delay.
    pub retry_after: Option<Duration>,
}

impl Failure {
    /// A failure of `type_name` with no retry delay.
    pub fn new(type_name: &'static str, message: String, retryable: bool) -> Self {
        Self {
            type_name,
            message,
            retryable,
            retry_after: None,
        }
    }

    /// Whether this is a bad argument the model should retry with others (`ModelRetry`).
    pub fn is_model_retry(&self) -> bool {
        self.type_name == MODEL_RETRY
    }

    /// `InvalidInput` for the request field `field` (non-retryable), named as `surface` names it.
    pub fn invalid_input(surface: Surface, field: &str, problem: impl fmt::Display) -> Self {
        let field = if matches!(field, "" | ".") {
            "request"
        } else {
            field
        };
        let message = match surface {
            Surface::Activity => format!("invalid input at `{field}`: {problem}"),
            _ => format!("invalid argument {}: {problem}", surface.name(field)),
        };
        Self::new(INVALID_INPUT, message, false)
    }

    /// `InvalidConfig` for a configuration error (non-retryable); in an activity request the
    /// path is under `config`.
    pub fn invalid_config(surface: Surface, error: &ConfigError) -> Self {
        let message = error.to_string();
        let message = match surface {
            Surface::Activity => {
                message.replacen("configuration at `", "configuration at `config.", 1)
            }
            _ => message,
        };
        Self::new(INVALID_CONFIG, message, false)
    }

    /// `ModelRetry` with the reference's exact message (non-retryable).
    pub fn model_retry(message: impl Into<String>) -> Self {
        Self::new(MODEL_RETRY, message.into(), false)
    }

    /// A store failure: retryable only when the store may answer later; an over-long key names
    /// the fields to shorten as `surface` names them.
    pub fn store(surface: Surface, error: &StoreError) -> Self {
        let type_name = match error {
            StoreError::Misconfigured(_) => "StoreMisconfigured",
            StoreError::Rejected { .. } => "StoreRejected",
            StoreError::Bug { .. } => "WorkerBug",
            e if e.is_retryable() => "StoreUnavailable",
            _ => "StoreRefused",
        };
        let text = match error {
            StoreError::KeyTooLong { key, bytes, max } => format!(
                "the spill key {key:?} is {bytes} bytes as an object path, more than the \
                 store's {max}: shorten {} or {}",
                surface.name("run_id"),
                surface.name("tool_call_id")
            ),
            other => other.to_string(),
        };
        let message = format!("spill store failed ({}): {text}", error.type_name());
        Self::new(type_name, message, error.is_retryable())
    }

    /// A query's child process that gave no answer: retryable (another attempt, perhaps on
    /// another worker, may start one), unless the sandbox cannot bound itself, which is final.
    pub fn query_sandbox(error: &(dyn std::error::Error + Send + Sync + 'static)) -> Self {
        match error.downcast_ref::<SandboxError>() {
            Some(SandboxError::Unbounded(why)) => Self::query_unbounded(why),
            _ => Self::new("QuerySandboxFailed", error.to_string(), true),
        }
    }

    /// `QuerySandboxUnbounded`: queries are refused because no sandbox bounds them (`why`).
    pub fn query_unbounded(why: impl fmt::Display) -> Self {
        let message =
            format!("query_tool_result refuses to run a jq filter unbounded in memory: {why}");
        Self::new(QUERY_SANDBOX_UNBOUNDED, message, false)
    }

    /// No query sandbox is configured: the fix names `query_sandbox` as `surface` does.
    pub fn no_query_sandbox(surface: Surface) -> Self {
        Self::query_unbounded(format!(
            "no query sandbox is configured; give {} the `overspill` executable (the \
             `overspill-cli` package installs it)",
            surface.name("query_sandbox")
        ))
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
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A store's deterministic answer and a bug are final and say what happened; an outage is
    /// retried.
    #[test]
    fn store_failures_are_final_unless_the_store_may_answer_later() {
        let rejected = Failure::store(
            Surface::Activity,
            &StoreError::Rejected {
                status: "400 Bad Request".into(),
                code: Some("MetadataTooLarge".into()),
                message: "Your metadata headers exceed the maximum allowed metadata size.".into(),
            },
        );
        assert_eq!(
            (rejected.type_name, rejected.retryable),
            ("StoreRejected", false)
        );
        assert_eq!(
            rejected.message,
            "spill store failed (Rejected): the store refused the request (400 Bad Request, \
             MetadataTooLarge): Your metadata headers exceed the maximum allowed metadata size."
        );
        let bug = Failure::store(
            Surface::Activity,
            &StoreError::panicked("the grep scan", &"index out of bounds"),
        );
        assert_eq!((bug.type_name, bug.retryable), ("WorkerBug", false));
        assert!(
            bug.message
                .contains("the grep scan panicked (index out of bounds)")
        );
        let denied = StoreError::PermissionDenied("root unreadable".into());
        let denied = Failure::store(Surface::Activity, &denied);
        assert_eq!(
            (denied.type_name, denied.retryable),
            ("StoreRefused", false)
        );
        let down = StoreError::Backend("connection reset".into());
        let down = Failure::store(Surface::Python, &down);
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
    }

    /// Each surface names a field its own way, and a failure names its fix so.
    #[test]
    fn a_fix_is_named_in_the_callers_terms() {
        let names = |field| {
            [
                Surface::Activity,
                Surface::Python,
                Surface::Node,
                Surface::Cli,
            ]
            .map(|s| s.name(field))
        };
        assert_eq!(
            names("tool_call_id"),
            [
                "`tool_call_id`",
                "`tool_call_id=`",
                "`toolCallId`",
                "`--call-id`"
            ]
        );
        assert_eq!(
            names("query_sandbox"),
            [
                "`query_sandbox`",
                "`query_sandbox=`",
                "`querySandbox`",
                "`--query-sandbox`"
            ]
        );
        let long = StoreError::KeyTooLong {
            key: "r/c.0".into(),
            bytes: 2_000,
            max: 1_024,
        };
        let python = Failure::store(Surface::Python, &long);
        assert!(
            python
                .message
                .ends_with("shorten `run_id=` or `tool_call_id=`"),
            "{}",
            python.message
        );
        assert!(
            (Failure::store(Surface::Cli, &long).message).ends_with("`--run-id` or `--call-id`")
        );
        let input = Failure::invalid_input(Surface::Python, "tool_name", "must not be empty");
        assert_eq!(
            input.message,
            "invalid argument `tool_name=`: must not be empty"
        );
        let input = Failure::invalid_input(Surface::Activity, "tool_name", "must not be empty");
        assert_eq!(
            input.message,
            "invalid input at `tool_name`: must not be empty"
        );
        let missing = Failure::no_query_sandbox(Surface::Python);
        assert_eq!(
            (missing.type_name, missing.retryable),
            (QUERY_SANDBOX_UNBOUNDED, false)
        );
        assert!(
            missing
                .message
                .contains("give `query_sandbox=` the `overspill` executable")
        );
    }

    /// A sandbox that cannot bound itself is final, saying why; any other sandbox failure is
    /// retried.
    #[test]
    fn an_unbounded_sandbox_is_final() {
        let unbounded = SandboxError::Unbounded("cannot read /proc/self/status".into());
        let failure = Failure::query_sandbox(&unbounded);
        assert_eq!(
            (failure.type_name, failure.retryable),
            (QUERY_SANDBOX_UNBOUNDED, false)
        );
        assert!(
            failure.message.ends_with("cannot read /proc/self/status"),
            "{}",
            failure.message
        );
        let lost = SandboxError::Io(std::io::Error::other("pipe closed"));
        let failure = Failure::query_sandbox(&lost);
        assert_eq!(
            (failure.type_name, failure.retryable),
            ("QuerySandboxFailed", true)
        );
    }
}
