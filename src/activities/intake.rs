//! How an activity takes its input and gives its reply.
//!
//! An input that is an External Storage reference is resolved inside the activity's own task:
//! charged against the worker's [`InflightBudget`](super::inflight::InflightBudget) first (the
//! charge is held until the activity finishes), fetched while heartbeating and cancellable, and
//! any failure is a typed activity failure. A reply over the threshold is offloaded, keyed by
//! the workflow that called the activity (or, for a standalone activity, by the activity), as
//! Python's worker keys it.

use serde::Serialize;
use serde::de::DeserializeOwned;
use temporalio_sdk::activities::{ActivityContext, ActivityError, ActivityInfo};

use super::guard::{Progress, guarded, guarded_with};
use super::proto::ProtoForm;
use super::{Failure, OverspillActivities, Wire};
use crate::external_storage::KeyScope;

impl OverspillActivities {
    /// The whole life of an activity: charge the in-flight budget for `input` (held until the
    /// reply is sent), resolve it if it is a reference, decode it, run `work` on the request,
    /// and reply in the request's encoding, offloaded to External Storage when over the
    /// threshold. Every wait heartbeats the latest `progress` and stops on cancellation.
    pub(crate) async fn serve<T, R, W, P>(
        &self,
        ctx: &ActivityContext,
        input: Wire<T>,
        progress: &Progress<P>,
        work: impl FnOnce(T) -> W,
    ) -> Result<Wire<R>, ActivityError>
    where
        T: ProtoForm + DeserializeOwned,
        R: ProtoForm + Serialize,
        W: Future<Output = Result<R, Failure>>,
        P: Serialize + Clone + Send + Sync + 'static,
    {
        self.serve_charged(ctx, input, progress, 0, work).await
    }

    /// [`Self::serve`], charging `working_set` bytes beside the input's (see
    /// [`InflightBudget::charge_with`](super::InflightBudget::charge_with)).
    pub(crate) async fn serve_charged<T, R, W, P>(
        &self,
        ctx: &ActivityContext,
        input: Wire<T>,
        progress: &Progress<P>,
        working_set: u64,
        work: impl FnOnce(T) -> W,
    ) -> Result<Wire<R>, ActivityError>
    where
        T: ProtoForm + DeserializeOwned,
        R: ProtoForm + Serialize,
        W: Future<Output = Result<R, Failure>>,
        P: Serialize + Clone + Send + Sync + 'static,
    {
        let storage = self.external_storage.as_deref();
        let reference = input.reference().map_err(Failure::into_activity_error)?;
        let size = match (reference, storage) {
            (None, _) => input.payload_bytes(),
            (Some(reference), Some(storage)) => {
                guarded_with(ctx, storage.stored_size(&reference), progress)
                    .await?
                    .map_err(|e| Failure::external_storage(&e).into_activity_error())?
            }
            // Resolving fails at once, saying what to configure.
            (Some(_), None) => 0,
        };
        let charge = self.budget.charge_with(size, working_set);
        let _permit = guarded_with(ctx, charge, progress).await?;
        let input = guarded_with(ctx, input.resolve(storage), progress)
            .await?
            .map_err(Failure::into_activity_error)?;
        let (request, encoding) = input.decode().map_err(Failure::into_activity_error)?;
        let response = guarded_with(ctx, work(request), progress)
            .await?
            .map_err(Failure::into_activity_error)?;

        let reply = Wire::encode(&response, encoding)?;
        let Some(storage) = storage.filter(|storage| storage.should_offload(reply.payload()))
        else {
            return Ok(reply);
        };
        let offloaded = guarded(
            ctx,
            storage.offload(reply.into_payload(), key_scope(ctx.info())),
        )
        .await?
        .map_err(|e| Failure::external_storage(&e).into_activity_error())?;
        Ok(Wire::new(offloaded))
    }
}

/// Whose payload an activity's reply is: the calling workflow's, else the activity's own.
fn key_scope(info: &ActivityInfo) -> KeyScope<'_> {
    match info.workflow_id.as_deref().filter(|id| !id.is_empty()) {
        Some(workflow_id) => KeyScope::Workflow {
            namespace: &info.namespace,
            workflow_type: info.workflow_type.as_deref(),
            workflow_id: Some(workflow_id),
            run_id: info.workflow_run_id.as_deref(),
        },
        None => KeyScope::Activity {
            namespace: &info.namespace,
            activity_type: Some(&info.activity_type),
            activity_id: Some(&info.activity_id),
            run_id: info.activity_run_id.as_deref(),
        },
    }
}
