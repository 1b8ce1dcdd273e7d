//! How an activity takes its input and gives its reply.
//!
//! An input that is an External Storage reference is resolved inside the activity's own task:
//! charged against the worker's [`InflightBudget`](super::inflight::InflightBudget) first (the
//! charge is held until the activity finishes), fetched while heartbeating and cancellable, and
//! any failure is a typed activity failure. A reply over the threshold is offloaded, keyed by
//! the workflow that called the activity (or, for a standalone activity, by the activity), as
//! Python's worker keys it.

use serde::Serialize;
use temporalio_sdk::activities::{ActivityContext, ActivityError, ActivityInfo};

use super::guard::{Progress, guarded, guarded_with};
use super::inflight::InflightPermit;
use super::proto::ProtoForm;
use super::{Encoding, Failure, Incoming, Outgoing, OverspillActivities};
use crate::external_storage::KeyScope;

/// An activity's decoded request, with the share of the in-flight budget it holds until dropped.
struct Admitted<T> {
    request: T,
    encoding: Encoding,
    permit: InflightPermit,
}

impl OverspillActivities {
    /// The whole life of an activity: admit `input`, run `work` on the request while
    /// heartbeating the latest `progress` and cancellable, and reply in the request's encoding.
    pub(crate) async fn serve<T, R, W, P>(
        &self,
        ctx: &ActivityContext,
        input: Incoming<T>,
        progress: &Progress<P>,
        work: impl FnOnce(T) -> W,
    ) -> Result<Outgoing<R>, ActivityError>
    where
        T: ProtoForm,
        R: ProtoForm,
        W: Future<Output = Result<R, Failure>>,
        P: Serialize + Clone + Send + Sync + 'static,
    {
        let Admitted {
            request,
            encoding,
            permit: _permit,
        } = self.admit_with(ctx, input, progress).await?;
        let response = guarded_with(ctx, work(request), progress)
            .await?
            .map_err(Failure::into_activity_error)?;
        self.reply(ctx, &response, encoding).await
    }

    /// Charge the budget for `input`, resolve it if it is a reference, and decode it; while
    /// waiting or fetching, heartbeat `progress` and stop on cancellation.
    async fn admit_with<T, P>(
        &self,
        ctx: &ActivityContext,
        input: Incoming<T>,
        progress: &Progress<P>,
    ) -> Result<Admitted<T>, ActivityError>
    where
        T: ProtoForm,
        P: Serialize + Clone + Send + Sync + 'static,
    {
        let storage = self.external_storage.as_deref();
        let size = match (
            input.reference().map_err(Failure::into_activity_error)?,
            storage,
        ) {
            (None, _) => input.payload_bytes(),
            (Some(reference), Some(storage)) => {
                guarded_with(ctx, storage.stored_size(&reference), progress)
                    .await?
                    .map_err(|e| Failure::external_storage(&e).into_activity_error())?
            }
            // Resolving fails at once, saying what to configure.
            (Some(_), None) => 0,
        };
        let permit = guarded_with(ctx, self.budget.charge(size), progress).await?;
        let input = guarded_with(ctx, input.resolve(storage), progress)
            .await?
            .map_err(Failure::into_activity_error)?;
        let (request, encoding) = input.decode().map_err(Failure::into_activity_error)?;
        Ok(Admitted {
            request,
            encoding,
            permit,
        })
    }

    /// `value` encoded in `encoding`; offloaded to External Storage when it is over the threshold.
    pub(crate) async fn reply<T>(
        &self,
        ctx: &ActivityContext,
        value: &T,
        encoding: Encoding,
    ) -> Result<Outgoing<T>, ActivityError>
    where
        T: ProtoForm,
    {
        let reply = Outgoing::encode(value, encoding)?;
        let Some(storage) = self
            .external_storage
            .as_deref()
            .filter(|storage| storage.should_offload(reply.payload()))
        else {
            return Ok(reply);
        };
        let offloaded = guarded(
            ctx,
            storage.offload(reply.into_payload(), key_scope(ctx.info())),
        )
        .await?
        .map_err(|e| Failure::external_storage(&e).into_activity_error())?;
        Ok(Outgoing::new(offloaded))
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
