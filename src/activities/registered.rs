//! The `#[activities]` registration: thin Temporal wrappers over [`OverspillActivities`]'s bodies.
// The macro adds an undocumented associated constant per activity.
#![allow(missing_docs)]

use std::sync::Arc;

use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};

use super::{Caller, OverspillActivities, Progress, Wire};
use crate::api::{
    GrepRequest, GrepResponse, ListRequest, ListResponse, QueryRequest, QueryResponse, ReadRequest,
    ReadResponse, ReduceRequest, ReduceResponse, SpillRequest, SpillResponse, SummarizeRequest,
    SummarizeResponse,
};
use crate::names::{
    GREP_TOOL_RESULT, LIST_TOOL_RESULTS, QUERY_TOOL_RESULT, READ_TOOL_RESULT, REDUCE, SPILL,
    SUMMARIZE,
};

/// The `#[activities]` impl: each activity is its wire name, request and response forms, and a
/// body given the activities (`this`), the context and the raw input. The SDK's macro needs each
/// signature spelled out; this writes them once.
macro_rules! registered {
    ($(
        $(#[$doc:meta])*
        $name:ident($wire:path, $request:ty => $response:ty) |$this:ident, $ctx:ident, $input:ident| $body:block
    )*) => {
        #[activities]
        impl OverspillActivities {
            $(
                $(#[$doc])*
                #[activity(name = $wire)]
                pub async fn $name(
                    self: Arc<Self>,
                    $ctx: ActivityContext,
                    $input: Wire<$request>,
                ) -> Result<Wire<$response>, ActivityError> {
                    let $this = self;
                    $body
                }
            )*
        }
    };
}

registered! {
    /// [`REDUCE`]: measure, pick the band, truncate / spill / summarize.
    reduce(REDUCE, ReduceRequest => ReduceResponse) |this, ctx, input| {
        let caller = Caller::of(ctx.info());
        let work = |request| this.reduce_request(request, &caller);
        this.serve(&ctx, input, &Progress::none(), work).await
    }

    /// [`SPILL`]: persist a payload under its key; handle, preview and shape.
    spill(SPILL, SpillRequest => SpillResponse) |this, ctx, input| {
        let caller = Caller::of(ctx.info());
        let work = |request| this.spill_request(request, &caller);
        this.serve(&ctx, input, &Progress::none(), work).await
    }

    /// [`SUMMARIZE`]: one model call; summary and usage.
    summarize(SUMMARIZE, SummarizeRequest => SummarizeResponse)
    |this, ctx, input| {
        // A retry resumes a chunked summary from the last chunk the previous attempt reported;
        // heartbeats keep reporting it until this attempt gets further.
        let resume = resume_from(ctx.heartbeat_details().deserialize::<serde_json::Value>());
        let latest = Progress::default();
        if let Some(resume) = &resume {
            latest.set(resume.clone());
        }
        let (beat, slot) = (ctx.clone(), latest.clone());
        this.serve(&ctx, input, &latest, |request| {
            this.summarize_resumable(request, resume, move |progress| {
                let (ctx, progress) = (beat.clone(), progress.clone());
                slot.set(progress.clone());
                async move {
                    if let Err(e) = ctx.record_heartbeat(progress).await {
                        tracing::warn!(
                            target: "overspill::activities",
                            "could not record a chunked summary's progress ({e}): a retry of \
                             this attempt starts the summary over"
                        );
                    }
                }
            })
        })
        .await
    }

    /// [`READ_TOOL_RESULT`]: the bounded read-back, from any worker, of a spill the caller's
    /// workflow may see; charged its buffers.
    read_tool_result(READ_TOOL_RESULT, ReadRequest => ReadResponse) |this, ctx, input| {
        let caller = Caller::of(ctx.info());
        let working_set = crate::read::READ_WORKING_SET;
        let work = |r| this.read_request(r, &caller);
        this.serve_charged(&ctx, input, &Progress::none(), working_set, work).await
    }

    /// [`GREP_TOOL_RESULT`]: a spill's matching lines with context, from any worker; charged its
    /// buffers.
    grep_tool_result(GREP_TOOL_RESULT, GrepRequest => GrepResponse) |this, ctx, input| {
        let caller = Caller::of(ctx.info());
        let working_set = crate::read::GREP_WORKING_SET;
        let work = |r| this.grep_request(r, &caller);
        this.serve_charged(&ctx, input, &Progress::none(), working_set, work).await
    }

    /// [`QUERY_TOOL_RESULT`]: a jq filter over a spill of JSON, from any worker; charged the
    /// query's memory bound while it runs.
    query_tool_result(QUERY_TOOL_RESULT, QueryRequest => QueryResponse) |this, ctx, input| {
        let caller = Caller::of(ctx.info());
        let working_set = this.query_memory();
        let work = |r| this.query_request(r, &caller);
        this.serve_charged(&ctx, input, &Progress::none(), working_set, work).await
    }

    /// [`LIST_TOOL_RESULTS`]: a run's spills, newest first.
    list_tool_results(LIST_TOOL_RESULTS, ListRequest => ListResponse) |this, ctx, input| {
        let caller = Caller::of(ctx.info());
        let work = |request| this.list_request(request, &caller);
        this.serve(&ctx, input, &Progress::none(), work).await
    }
}

/// The chunk progress an earlier attempt of a summary heartbeated, to resume from: none when it
/// heartbeated nothing, or only its beat count (before its first chunk finished).
///
/// Details that do not decode (another version's record, a codec failure) are logged at WARN
/// with the cause, and the summary starts over: failing instead would lose the summary for good
/// (every retry would meet the same details), while starting over only pays the model calls
/// again.
fn resume_from(
    details: Result<Option<serde_json::Value>, impl std::fmt::Display>,
) -> Option<crate::summarize::ChunkProgress> {
    let failed = |cause: &dyn std::fmt::Display| {
        tracing::warn!(
            target: "overspill::activities",
            "the previous attempt's summary progress does not decode ({cause}): the chunked \
             summary starts over, and its model calls are made again"
        );
    };
    match details {
        Ok(None | Some(serde_json::Value::Number(_))) => None,
        Ok(Some(value)) => serde_json::from_value(value)
            .inspect_err(|e| failed(e))
            .ok(),
        Err(e) => {
            failed(&e);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summarize::ChunkProgress;

    /// Progress resumes; a beat count or nothing starts afresh quietly; a record that does not
    /// decode starts afresh with a WARN that names the cause.
    #[test]
    fn undecodable_progress_is_reported() {
        let logs = crate::test_logs::Logs::default();
        let _guard = logs.capture();
        let progress = ChunkProgress {
            level: 1,
            chunks: 4,
            done: vec!["a".into()],
            ..ChunkProgress::default()
        };
        let value = serde_json::to_value(&progress).expect("encodes");
        assert_eq!(resume_from(Ok::<_, String>(Some(value))), Some(progress));
        assert_eq!(
            resume_from(Ok::<_, String>(Some(serde_json::json!(7)))),
            None
        );
        assert_eq!(resume_from(Ok::<_, String>(None)), None);
        assert_eq!(logs.text(), "");
        let bad = serde_json::json!({"level": "one"});
        assert_eq!(resume_from(Ok::<_, String>(Some(bad))), None);
        let text = logs.text();
        assert!(
            text.contains("WARN") && text.contains("starts over"),
            "{text}"
        );
        assert!(text.contains("invalid type: string \"one\""), "{text}");
        assert_eq!(resume_from(Err("no payload converter")), None);
        assert!(
            logs.text().contains("(no payload converter)"),
            "{}",
            logs.text()
        );
    }
}
