//! How activity failures reach the caller: the service's typed failures
//! ([`crate::service::Failure`], whose module has the table of kinds), as Temporal
//! ApplicationErrors of the same type and retryability.
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
pub use crate::service::Failure;

impl Failure {
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
    use crate::limits::SummarizeError;

    /// A failure's type, retryability and `Retry-After` reach Temporal as they are.
    #[test]
    fn a_failure_becomes_an_application_error_of_its_type() {
        let busy = Failure::model(&SummarizeError::Unavailable {
            status: Some(429),
            message: "slow down".into(),
            retry_after: Some(Duration::from_secs(7)),
        });
        let ActivityError::Application(failure) = busy.into_activity_error() else {
            panic!("an application failure")
        };
        assert_eq!(failure.type_name(), Some("ModelUnavailable"));
        assert!(!failure.is_non_retryable());
        assert_eq!(failure.next_retry_delay(), Some(Duration::from_secs(7)));
    }
}
