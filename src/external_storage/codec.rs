//! External Storage as the worker's payload codec.
//!
//! The Temporal Rust SDK runs the client's codec over every workflow activation and activity
//! task it receives (`decode`) and every completion and heartbeat it sends (`encode`). Its
//! serialization context says only *where* (workflow or activity), never *whose* payload it is,
//! so the codec keys what it stores by namespace (`v0/ns/{ns}/d/sha256/{hex}`, a key of the S3
//! driver's scheme); activities key their own replies by workflow (see
//! [`crate::activities::OverspillActivities`]), as Python does.

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt as _, StreamExt as _, TryStreamExt as _, stream};
use temporalio_common::data_converters::{
    DataConverter, DefaultFailureConverter, PayloadCodec, PayloadConversionError, PayloadConverter,
    SerializationContextData,
};
use temporalio_common::protos::temporal::api::common::v1::Payload;

use super::{ExternalStorage, ExternalStorageError, KeyScope, Reference, resolve};

/// Offloads outbound payloads over the threshold; resolves references in workflow activations
/// (a failure fails the workflow task, which Temporal retries) and leaves them in activity tasks,
/// whose activities resolve them. Without storage it offloads nothing, and a reference in a
/// workflow activation fails the task with an error saying to configure `--external-storage`.
#[derive(Debug, Clone)]
pub struct ExternalStorageCodec {
    storage: Option<Arc<ExternalStorage>>,
    namespace: String,
}

impl ExternalStorageCodec {
    /// The codec over `storage` (none: references are refused) for `namespace`'s payloads.
    pub fn new(storage: Option<Arc<ExternalStorage>>, namespace: impl Into<String>) -> Self {
        Self {
            storage,
            namespace: namespace.into(),
        }
    }

    /// The SDK's default data converter with this codec.
    pub fn into_data_converter(self) -> DataConverter {
        DataConverter::new(
            PayloadConverter::default(),
            DefaultFailureConverter::default(),
            self,
        )
    }
}

impl PayloadCodec for ExternalStorageCodec {
    fn encode(
        &self,
        _context: &SerializationContextData,
        payloads: Vec<Payload>,
    ) -> BoxFuture<'static, Result<Vec<Payload>, PayloadConversionError>> {
        let Some(storage) = self.storage.clone() else {
            return futures::future::ready(Ok(payloads)).boxed();
        };
        let namespace = self.namespace.clone();
        async move {
            let scope = KeyScope::Namespace(&namespace);
            let offloaded = stream::iter(payloads).then(|p| storage.offload(p, scope));
            let offloaded = offloaded.map_err(|e| failed("offload an outbound payload", e));
            offloaded.try_collect().await
        }
        .boxed()
    }

    fn decode(
        &self,
        context: &SerializationContextData,
        payloads: Vec<Payload>,
    ) -> BoxFuture<'static, Result<Vec<Payload>, PayloadConversionError>> {
        let for_activity = matches!(context, SerializationContextData::Activity(_));
        if for_activity || !payloads.iter().any(Reference::is_reference) {
            return futures::future::ready(Ok(payloads)).boxed();
        }
        let storage = self.storage.clone();
        async move {
            let resolved = stream::iter(payloads).then(|p| resolve(storage.as_deref(), p));
            let resolved =
                resolved.map_err(|e| failed("resolve a reference for a workflow task", e));
            resolved.try_collect().await
        }
        .boxed()
    }
}

/// Log a codec failure at WARN (the SDK fails the task with it) and wrap it for the SDK.
fn failed(doing: &str, error: ExternalStorageError) -> PayloadConversionError {
    tracing::warn!(
        error_type = error.type_name(),
        retryable = error.retryable(),
        "External Storage could not {doing}: {error}"
    );
    PayloadConversionError::EncodingError(Box::new(error))
}
