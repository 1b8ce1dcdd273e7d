//! The Temporal activities, registered under the names other languages call:
//!
//! | name | request → response |
//! |---|---|
//! | [`REDUCE`] `tool_output_limits.reduce` | [`ReduceRequest`] → [`ReduceResponse`] |
//! | [`SPILL`] `tool_output_limits.spill` | [`SpillRequest`] → [`SpillResponse`] |
//! | [`SUMMARIZE`] `tool_output_limits.summarize` | [`SummarizeRequest`] → [`SummarizeResponse`] |
//! | [`READ_TOOL_RESULT`] `tool_output_limits.read_tool_result` | [`ReadRequest`] → model-visible text |
//! | [`GREP_TOOL_RESULT`] `tool_output_limits.grep_tool_result` | [`GrepRequest`] → model-visible text |
//! | [`QUERY_TOOL_RESULT`] `tool_output_limits.query_tool_result` | [`QueryRequest`] → model-visible text |
//! | [`LIST_TOOL_RESULTS`] `tool_output_limits.list_tool_results` | [`ListRequest`] → model-visible text |
//!
//! Keys come from the request's `run_id` (default: the calling workflow's) / `tool_call_id` /
//! `retry`, never from the activity attempt, so a retry or replay returns the same handle.
//! Who calls ([`Caller`]) comes from the activity's own info, never from its request: a spill
//! records its workflow, and the read-backs see only the spills the worker's [`ReadScope`]
//! admits for the caller (see [`crate::store::Reader`]); any other reads as a missing one.
//! The bodies are the [`Service`]'s calls, which the Python module and the Node addon make too;
//! failures are typed ([`errors`]) and logged at WARN ([`LogFailures`]). An input may be an
//! External Storage reference, fetched inside the activity after charging the
//! [`InflightBudget`]; a reply over the threshold is offloaded ([`crate::external_storage`]).

mod encoding;
pub mod errors;
mod failure_log;
mod guard;
pub(crate) use guard::Progress;
pub use guard::guarded;
mod inflight;
mod intake;
pub mod metrics;
pub mod payload;
pub mod proto;
mod registered;

use std::sync::Arc;

use crate::api::{
    GrepRequest, ListRequest, QueryRequest, ReadRequest, ReadResponse, ReduceRequest,
    ReduceResponse, SpillRequest, SpillResponse, SummarizeRequest, SummarizeResponse,
};
pub use crate::api::{GrepResponse, ListResponse, QueryResponse};
use crate::external_storage::ExternalStorage;
use crate::limits::{
    self, Limits, NoSummarizer, ReductionKind, Summarizer, SummaryRequest, Unit, preview, prompt,
    pyfmt,
};
pub use crate::names::{
    DEFAULT_TASK_QUEUE, GREP_TOOL_RESULT, LIST_TOOL_RESULTS, QUERY_TOOL_RESULT, READ_TOOL_RESULT,
    REDUCE, SPILL, SUMMARIZE,
};
use crate::query::QueryRunner;
pub use crate::service::{Caller, Failure};
use crate::service::{Service, Surface};
use crate::store::{ReadScope, Store};
use crate::summarize::{ChunkProgress, Chunked, OpenAiSummarizer};
pub use encoding::Encoding;
pub use failure_log::LogFailures;
pub use inflight::{InflightBudget, InflightPermit, available_memory};
pub use metrics::Metrics;
pub use payload::Wire;

/// The `tool_output_limits.*` activities over one store, one summarizer and default limits.
#[derive(Debug, Clone)]
pub struct OverspillActivities {
    service: Service,
    limits: Arc<Limits>,
    summarizer: Option<Chunked<OpenAiSummarizer>>,
    metrics: Metrics,
    external_storage: Option<Arc<ExternalStorage>>,
    budget: InflightBudget,
}

impl Caller {
    /// The caller an activity's info names; an empty workflow id (or run id) is none, so that
    /// callers without one never share a scope.
    pub fn of(info: &temporalio_sdk::activities::ActivityInfo) -> Self {
        let (workflow_id, run_id) = (info.workflow_id.as_deref(), info.workflow_run_id.as_deref());
        Self::activity(&info.namespace, workflow_id, run_id)
    }
}

impl OverspillActivities {
    /// Activities over `store`: default limits, no model, no External Storage, a budget of
    /// half the available memory, queries in this process.
    pub fn new(store: Arc<Store>) -> Self {
        let service =
            Service::new(store, Surface::Activity).with_query_runner(Some(QueryRunner::default()));
        Self {
            service,
            limits: Arc::new(Limits::default()),
            summarizer: None,
            metrics: Metrics::default(),
            external_storage: None,
            budget: InflightBudget::default(),
        }
    }

    /// Let activities read the spills `scope` admits (default [`ReadScope::Workflow`]).
    pub fn with_read_scope(mut self, scope: ReadScope) -> Self {
        self.service = self.service.with_read_scope(scope);
        self
    }

    /// Run queries as `runner` says (the worker runs each in a child process bounded in memory;
    /// the default, in this process, bounds time only).
    pub fn with_query_runner(mut self, runner: QueryRunner) -> Self {
        self.service = self.service.with_query_runner(Some(runner));
        self
    }

    /// The memory one query holds while it runs, as the in-flight budget charges it.
    pub(crate) fn query_memory(&self) -> u64 {
        (self.service.query_runner()).map_or(0, QueryRunner::memory)
    }

    /// Resolve input references from `storage`, and offload replies over its threshold to it.
    pub fn with_external_storage(mut self, storage: Arc<ExternalStorage>) -> Self {
        self.external_storage = Some(storage);
        self
    }

    /// Bound the payload bytes running activities hold by `budget`.
    pub fn with_inflight_budget(mut self, budget: InflightBudget) -> Self {
        self.budget = budget;
        self
    }

    /// The External Storage the activities use, if any.
    pub fn external_storage(&self) -> Option<&Arc<ExternalStorage>> {
        self.external_storage.as_ref()
    }

    /// Summarize with an OpenAI-compatible model (chunked; the summarize activity heartbeats
    /// each chunk and a retry resumes). Without one, every Summarize falls back to its `then`.
    pub fn with_summarizer(mut self, summarizer: Chunked<OpenAiSummarizer>) -> Self {
        self.summarizer = Some(summarizer);
        self
    }

    /// Use `limits` for requests that carry no `config`.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = Arc::new(limits);
        self
    }

    /// Count reductions, spills and fallbacks in `metrics`.
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// Reduce one tool result (the body of [`REDUCE`]) for `caller`, whose workflow run id fills
    /// a missing `run_id`.
    pub async fn reduce_request(
        &self,
        request: ReduceRequest,
        caller: &Caller,
    ) -> Result<ReduceResponse, Failure> {
        let reduction = (self.service)
            .reduce_request(request, &self.limits, &self.summarizer, caller)
            .await?;
        let reduced = reduction.reduced;
        if let Some(failure) = reduction.failure {
            self.metrics.fallback();
            if reduced.exhausted {
                return Err(failure);
            }
        }
        self.metrics.reduced(reduced.kind);
        if reduced.content_kind != ReductionKind::Passthrough {
            self.metrics.reduced(reduced.content_kind);
        }
        if reduced.kind == ReductionKind::Spilled {
            self.metrics.spilled(reduced.overflow_bytes());
        }
        Ok(reduced)
    }

    /// Spill one payload for `caller` (the body of [`SPILL`], without Temporal).
    pub async fn spill_request(
        &self,
        mut request: SpillRequest,
        caller: &Caller,
    ) -> Result<SpillResponse, Failure> {
        let limits = match request.config.take() {
            Some(config) => Limits::from_value(config)
                .map_err(|e| Failure::invalid_config(Surface::Activity, &e))?,
            None => (*self.limits).clone(),
        };
        if !matches!(request.suffix.as_str(), "" | limits::CONTENT_SUFFIX) {
            let problem = "must be \"\" or \".content\"";
            return Err(Failure::invalid_input(Surface::Activity, "suffix", problem));
        }
        if request.preview_chars < 0 {
            let problem = "preview_chars must be non-negative.";
            return Err(Failure::invalid_input(
                Surface::Activity,
                "preview_chars",
                problem,
            ));
        }
        let key = match request.key.take().filter(|k| !k.is_empty()) {
            Some(key) => key,
            None => request
                .call(caller.workflow_run_id())
                .spill_key(&request.suffix),
        };
        // The unit shares the output, so the store gets the request's own buffer.
        let unit = Unit::new(&request.output, &limits);
        let data = unit.data();
        let bytes = data.len() as u64;
        let tool = &request.call.tool_name;
        let handle = self.service.write(&key, data, tool, caller).await?;
        self.metrics.spilled(bytes);
        Ok(SpillResponse {
            preview: preview::spill_message(&unit, &handle, request.preview_chars, &limits),
            shape: unit.sketch.clone(),
            handle,
            overflow_bytes: bytes,
            store: self.service.store().url().to_owned(),
        })
    }

    /// Summarize one text (the body of [`SUMMARIZE`], without Temporal).
    pub async fn summarize_request(
        &self,
        request: SummarizeRequest,
    ) -> Result<SummarizeResponse, Failure> {
        self.summarize_resumable(request, None, |_| std::future::ready(()))
            .await
    }

    /// [`Self::summarize_request`], resuming a chunked summary from `resume` and reporting
    /// progress after every chunk to `on_chunk` (the activity heartbeats it).
    pub async fn summarize_resumable<F>(
        &self,
        request: SummarizeRequest,
        resume: Option<ChunkProgress>,
        on_chunk: impl FnMut(&ChunkProgress) -> F,
    ) -> Result<SummarizeResponse, Failure>
    where
        F: std::future::Future<Output = ()>,
    {
        let template = request
            .template
            .as_deref()
            .unwrap_or(&self.limits.summary_prompt);
        let rendered = prompt::Template::parse(template)
            .map_err(|e| Failure::invalid_input(Surface::Activity, "prompt", e))?
            .render(&request.tool_name, &request.output);
        let summary_request = SummaryRequest {
            tool_name: &request.tool_name,
            output: &request.output,
            prompt: &rendered,
            model: request.model.as_deref(),
        };
        let summary = match &self.summarizer {
            Some(chunked) => (chunked.summarize_resumable(summary_request, resume, on_chunk)).await,
            None => NoSummarizer.summarize(summary_request).await,
        };
        let summary = summary.map_err(|e| Failure::model(&e))?;
        self.metrics.reduced(ReductionKind::Summarized);
        Ok(SummarizeResponse {
            summary: pyfmt::py_strip(&summary.text).to_owned(),
            usage: summary.usage,
        })
    }

    /// Read a page back for `caller` (the body of [`READ_TOOL_RESULT`], without Temporal).
    pub async fn read_request(
        &self,
        request: ReadRequest,
        caller: &Caller,
    ) -> Result<ReadResponse, Failure> {
        let answer = self.service.read_tool_result(&request, caller).await?;
        Ok(ReadResponse(answer.text))
    }

    /// Grep a spill for `caller` (the body of [`GREP_TOOL_RESULT`], without Temporal).
    pub async fn grep_request(
        &self,
        request: GrepRequest,
        caller: &Caller,
    ) -> Result<GrepResponse, Failure> {
        let answer = self.service.grep_tool_result(&request, caller).await?;
        Ok(GrepResponse(answer.text))
    }

    /// Run a jq filter over a spill for `caller` (the body of [`QUERY_TOOL_RESULT`], without
    /// Temporal).
    pub async fn query_request(
        &self,
        request: QueryRequest,
        caller: &Caller,
    ) -> Result<QueryResponse, Failure> {
        let answer = self.service.query_tool_result(&request, caller).await?;
        Ok(QueryResponse(answer.text))
    }

    /// List a run's spills that `caller` may see, newest first (the body of
    /// [`LIST_TOOL_RESULTS`]); its workflow run id fills a missing `run_id`.
    pub async fn list_request(
        &self,
        request: ListRequest,
        caller: &Caller,
    ) -> Result<ListResponse, Failure> {
        let answer = self.service.list_tool_results(request, caller).await?;
        Ok(ListResponse(answer.text))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::limits::ToolOutput;
    use crate::store::StoreOptions;

    /// A store whose endpoint refuses connections.
    fn down_store() -> Arc<Store> {
        let options = StoreOptions::builder()
            .endpoint("http://127.0.0.1:9")
            .allow_http(true)
            .credentials("key", "secret")
            .max_retries(0)
            .timeout(Duration::from_secs(2))
            .connect_timeout(Duration::from_millis(500))
            .build();
        Arc::new(Store::open_with(Some("s3://spills"), options).expect("store"))
    }

    fn request(config: serde_json::Value) -> ReduceRequest {
        serde_json::from_value(serde_json::json!({
            "tool_name": "cat", "run_id": "r", "tool_call_id": "c",
            "output": {"text": "x".repeat(2_000)}, "config": config,
        }))
        .expect("request")
    }

    #[tokio::test]
    async fn store_outage_is_retryable_only_without_then() {
        let acts = OverspillActivities::new(down_store());
        let no_then = json_band(serde_json::json!({"type": "spill"}));
        let failure = acts
            .reduce_request(request(no_then), &Caller::Operator)
            .await
            .expect_err("no then: the activity fails");
        assert_eq!(failure.type_name, "StoreUnavailable");
        assert!(failure.retryable);

        let with_then = json_band(
            serde_json::json!({"type": "spill", "then": {"type": "truncate", "max_chars": 100}}),
        );
        let reduced = acts
            .reduce_request(request(with_then), &Caller::Operator)
            .await
            .expect("then runs");
        assert_eq!(reduced.kind, ReductionKind::Truncated);

        let explicit =
            json_band(serde_json::json!({"type": "spill", "then": {"type": "passthrough"}}));
        let reduced = acts
            .reduce_request(request(explicit), &Caller::Operator)
            .await
            .expect("an explicit passthrough is honoured");
        assert_eq!(reduced.kind, ReductionKind::Passthrough);
    }

    /// A prompt that would copy the output 60,000 times is refused before anything renders.
    #[tokio::test]
    async fn an_amplifying_summarize_prompt_is_invalid_input() {
        let acts =
            OverspillActivities::new(Arc::new(Store::open(Some("memory://")).expect("store")));
        let request = SummarizeRequest {
            tool_name: "cat".into(),
            output: "x".repeat(1_500),
            model: None,
            template: Some(format!("{{tool_name}}{}", "{output}".repeat(60_000))),
        };
        let failure = acts.summarize_request(request).await.expect_err("refused");
        assert_eq!(failure.type_name, "InvalidInput");
        assert!(!failure.retryable);
        assert!(failure.message.contains("`prompt`"), "{}", failure.message);
        assert!(
            failure.message.contains("{output} only once"),
            "{}",
            failure.message
        );
    }

    #[tokio::test]
    async fn spill_hands_the_store_the_request_buffer() {
        let store = Arc::new(Store::open(Some("memory://")).expect("store"));
        let acts = OverspillActivities::new(store.clone());
        let mut request: SpillRequest = serde_json::from_value(serde_json::json!({
            "tool_name": "cat", "run_id": "r", "tool_call_id": "c", "output": {"text": ""},
        }))
        .expect("request");
        let text = "x".repeat(50_000);
        let buffer = text.as_ptr();
        request.output = ToolOutput::Text(text.into());
        let spilled = acts
            .spill_request(request, &Caller::Operator)
            .await
            .expect("spilled");
        let stored = store.read(&spilled.handle).await.expect("stored");
        assert_eq!(stored.len(), 50_000);
        assert_eq!(
            stored.as_ptr(),
            buffer,
            "the store got the request's buffer, not a copy"
        );
    }

    fn json_band(action: serde_json::Value) -> serde_json::Value {
        serde_json::json!({"bands": [{"over": 100, "action": action}]})
    }
}
