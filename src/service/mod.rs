//! The one layer between a caller and the engine, for every caller: the worker's activities, the
//! `overspill` command, the Python module and the Node addon call it, and none keeps a copy.
//!
//! A [`Service`] is a store with the rules of reading it: the [`ReadScope`] reads inside a
//! workflow have, the [`QueryRunner`] a jq filter runs under, and the [`Surface`] whose terms a
//! failure names its fix in. Each call takes a request and a [`Caller`] (who reads or writes,
//! never taken from the request) and answers:
//!
//! - the four read-back tools' model-visible [`Answer`] (`read_tool_result`, `grep_tool_result`,
//!   `query_tool_result`, `list_tool_results`), or a typed [`Failure`] that says whether it is
//!   the model's to retry ([`Failure::is_model_retry`]) or, with its kind and retryability, the
//!   store's or the sandbox's;
//! - a reduction ([`Service::reduce`]), the store it spilled to stamped on it, with the first
//!   store or model failure it fell back from;
//! - a spill's bytes written or read as the caller may.
//!
//! Nothing here knows Temporal: the activities add heartbeats, budgets and External Storage
//! around it.

mod failure;

use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use bytes::Bytes;

use crate::api::{GrepRequest, ListRequest, QueryRequest, ReadRequest, ReduceRequest};
use crate::limits::{
    self, Limits, Reduced, SpillStore, SummarizeError, Summarizer, Summary, SummaryRequest,
    ToolCall, ToolResult,
};
use crate::query::QueryRunner;
use crate::read::{self, ReadOutcomeError};
use crate::store::{ReadScope, Reader, Scope, Store, StoreError};
pub use failure::{
    Failure, INVALID_CONFIG, INVALID_INPUT, MODEL_RETRY, QUERY_SANDBOX_UNBOUNDED, Surface,
};

/// Who calls: the workflow an activity runs for (from the activity's own info, never from its
/// request), or an operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// An operator, or a program outside Temporal: writes spills of no workflow and reads every
    /// spill.
    Operator,
    /// An activity of the workflow its info names.
    Activity {
        /// The namespace it runs in.
        namespace: String,
        /// Its workflow's id; `None` for a standalone activity, whose spills belong to no
        /// workflow.
        workflow_id: Option<String>,
        /// Its workflow's run id, which stands in for a request's missing `run_id`.
        workflow_run_id: Option<String>,
    },
}

impl Caller {
    /// An activity in `namespace` of workflow `workflow_id` at run `run_id` (each `None` or empty:
    /// none, so that callers without one never share a scope).
    pub fn activity(namespace: &str, workflow_id: Option<&str>, run_id: Option<&str>) -> Self {
        let given = |id: Option<&str>| id.filter(|id| !id.is_empty()).map(str::to_owned);
        Self::Activity {
            namespace: namespace.to_owned(),
            workflow_id: given(workflow_id),
            workflow_run_id: given(run_id),
        }
    }

    /// The workflow run id that fills a request's missing `run_id`.
    pub fn workflow_run_id(&self) -> Option<&str> {
        match self {
            Self::Operator => None,
            Self::Activity {
                workflow_run_id, ..
            } => workflow_run_id.as_deref(),
        }
    }
}

/// A read-back tool's answer: the model-visible text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The text the model reads.
    pub text: String,
    /// `false` when nothing was found: the handle is unknown (or not the caller's to see) and the
    /// text says so, or the run has no spill the caller may see.
    pub found: bool,
}

/// A reduction, and the first store or model failure it fell back from.
#[derive(Debug, Clone)]
pub struct Reduction {
    /// The reduced result, with the store it spilled to (if it did).
    pub reduced: Reduced,
    /// The first spill or summary that failed (its action's `then` ran), if any.
    pub failure: Option<Failure>,
}

/// Spills read and written for callers (see the module).
#[derive(Debug, Clone)]
pub struct Service {
    store: Arc<Store>,
    read_scope: ReadScope,
    queries: Option<QueryRunner>,
    surface: Surface,
}

impl Service {
    /// The service of `store` for callers on `surface`: reads scoped to the caller's workflow
    /// ([`ReadScope::Workflow`]), and no query sandbox (queries are refused until
    /// [`Self::with_query_runner`] gives one).
    pub fn new(store: Arc<Store>, surface: Surface) -> Self {
        Self {
            store,
            read_scope: ReadScope::default(),
            queries: None,
            surface,
        }
    }

    /// Let activities' reads see the spills `scope` admits.
    pub fn with_read_scope(mut self, scope: ReadScope) -> Self {
        self.read_scope = scope;
        self
    }

    /// Run queries as `runner` says (`None`: refuse them, with a failure naming the fix).
    pub fn with_query_runner(mut self, runner: Option<QueryRunner>) -> Self {
        self.queries = runner;
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The read scope of reads inside a workflow.
    pub fn read_scope(&self) -> ReadScope {
        self.read_scope
    }

    /// How queries run, if they do.
    pub fn query_runner(&self) -> Option<&QueryRunner> {
        self.queries.as_ref()
    }

    /// The surface whose terms failures name fixes in.
    pub fn surface(&self) -> Surface {
        self.surface
    }

    /// How `caller` reads and writes spills.
    pub fn reader(&self, caller: &Caller) -> Reader {
        match caller {
            Caller::Operator => Reader::operator(),
            Caller::Activity {
                namespace,
                workflow_id,
                ..
            } => {
                let scope = (workflow_id.as_deref()).and_then(|id| Scope::new(namespace, id));
                Reader::new(self.read_scope, scope)
            }
        }
    }

    /// `read_tool_result`'s page for `caller`.
    pub async fn read_tool_result(
        &self,
        request: &ReadRequest,
        caller: &Caller,
    ) -> Result<Answer, Failure> {
        let reader = self.reader(caller);
        self.answer(read::read_tool_result(&self.store.read_as(&reader), request).await)
    }

    /// `grep_tool_result`'s page for `caller`.
    pub async fn grep_tool_result(
        &self,
        request: &GrepRequest,
        caller: &Caller,
    ) -> Result<Answer, Failure> {
        let reader = self.reader(caller);
        self.answer(read::grep_tool_result(&self.store.read_as(&reader), request).await)
    }

    /// `query_tool_result`'s page for `caller`, the filter run by the query runner; without one
    /// the query is refused ([`QUERY_SANDBOX_UNBOUNDED`]).
    pub async fn query_tool_result(
        &self,
        request: &QueryRequest,
        caller: &Caller,
    ) -> Result<Answer, Failure> {
        let Some(runner) = &self.queries else {
            return Err(Failure::no_query_sandbox(self.surface));
        };
        let reader = self.reader(caller);
        let spills = self.store.read_as(&reader);
        self.answer(crate::query::query_tool_result_with(&spills, request, runner).await)
    }

    /// `list_tool_results`' page for `caller`: the run's spills it may see, newest first; its
    /// workflow run id fills a missing `run_id`.
    pub async fn list_tool_results(
        &self,
        mut request: ListRequest,
        caller: &Caller,
    ) -> Result<Answer, Failure> {
        if request.run_id.is_empty() {
            request.run_id = caller.workflow_run_id().unwrap_or_default().to_owned();
        }
        let listing = self.store.list_run(&request, &self.reader(caller)).await;
        let found = listing.as_ref().is_ok_and(|l| l.total > 0);
        let answer = self.answer(listing.map(|l| l.render(SystemTime::now())))?;
        Ok(Answer { found, ..answer })
    }

    /// Reduce `result` of `call` under `limits` for `caller`, spilling to the store and
    /// summarizing with `summarizer`; a spill's result names the store (its URL, as the worker
    /// shows it). An empty tool name is refused.
    pub async fn reduce<M: Summarizer>(
        &self,
        limits: &Limits,
        call: &ToolCall,
        result: ToolResult,
        summarizer: &M,
        caller: &Caller,
    ) -> Result<Reduction, Failure> {
        if call.tool_name.is_empty() {
            let problem = "must not be empty";
            return Err(Failure::invalid_input(self.surface, "tool_name", problem));
        }
        let writer = self.reader(caller);
        let spills = self.store.for_tool(&call.tool_name, &writer);
        let store = Watched::new(&spills, self.surface);
        let summarizer = Watched::new(summarizer, self.surface);
        let mut reduced = limits::reduce(limits, call, result, &store, &summarizer).await;
        if reduced.overflow_handle().is_some() || reduced.overflow_content_handle().is_some() {
            reduced.store = Some(self.store.url().to_owned());
        }
        let failure = (store.failure.into_inner()).or(summarizer.failure.into_inner());
        Ok(Reduction { reduced, failure })
    }

    /// Reduce the tool result `request` carries for `caller`, under the request's limits or
    /// `defaults`; the caller's workflow run id fills a missing `run_id` (the reduce activity's
    /// body, and a binding's that takes the activity's request).
    pub async fn reduce_request<M: Summarizer>(
        &self,
        request: ReduceRequest,
        defaults: &Limits,
        summarizer: &M,
        caller: &Caller,
    ) -> Result<Reduction, Failure> {
        let limits =
            (request.limits(defaults)).map_err(|e| Failure::invalid_config(self.surface, &e))?;
        let call = request.call(caller.workflow_run_id());
        (self.reduce(&limits, &call, request.into_result(), summarizer, caller)).await
    }

    /// Store `data` under `key` for `caller`, with its line index and the facts of its writer and
    /// `tool`; returns the handle.
    pub async fn write(
        &self,
        key: &str,
        data: Bytes,
        tool: &str,
        caller: &Caller,
    ) -> Result<String, Failure> {
        let writer = self.reader(caller);
        let spills = self.store.for_tool(tool, &writer);
        (spills.write(key, data).await).map_err(|e| Failure::store(self.surface, &e))
    }

    /// The whole payload of `handle`, as `caller` may see it: `None` when the handle is unknown
    /// or not the caller's to see (the two read alike).
    pub async fn read(&self, handle: &str, caller: &Caller) -> Result<Option<Bytes>, Failure> {
        let reader = self.reader(caller);
        match self.store.read_as(&reader).read(handle).await {
            Ok(data) => Ok(Some(data)),
            Err(e) if e.is_unknown_handle() => Ok(None),
            Err(e) => Err(Failure::store(self.surface, &e)),
        }
    }

    /// What a read-back answers: its page, or the text for a handle the store does not have; a
    /// bad argument is the model's to retry, else a store (or query sandbox) failure.
    fn answer(&self, page: Result<String, ReadOutcomeError>) -> Result<Answer, Failure> {
        match page {
            Ok(text) => Ok(Answer { text, found: true }),
            Err(missing @ ReadOutcomeError::NoStoredResult(_)) => Ok(Answer {
                text: missing.to_string(),
                found: false,
            }),
            Err(ReadOutcomeError::Retry(retry)) => Err(Failure::model_retry(retry.to_string())),
            Err(ReadOutcomeError::Store(e)) => Err(Failure::store(self.surface, &e)),
            Err(ReadOutcomeError::Sandbox(e)) => Err(Failure::query_sandbox(e.as_ref())),
        }
    }
}

/// A store or summarizer that remembers its first failure, so that a caller can tell a reduction
/// that fell back from one that ran out of fallbacks.
struct Watched<'a, T> {
    inner: &'a T,
    surface: Surface,
    /// The first failure noted, if any.
    failure: OnceLock<Failure>,
}

impl<'a, T> Watched<'a, T> {
    fn new(inner: &'a T, surface: Surface) -> Self {
        Self {
            inner,
            surface,
            failure: OnceLock::new(),
        }
    }

    fn note(&self, failure: Failure) {
        let _ = self.failure.set(failure);
    }
}

impl<T: SpillStore<Error = StoreError>> SpillStore for Watched<'_, T> {
    type Error = StoreError;

    async fn write(&self, key: &str, data: Bytes) -> Result<String, StoreError> {
        self.noted(self.inner.write(key, data).await)
    }

    async fn write_at_step(&self, key: &str, data: Bytes, step: u64) -> Result<String, StoreError> {
        self.noted(self.inner.write_at_step(key, data, step).await)
    }

    async fn step_of(&self, key: &str) -> Result<Option<Option<u64>>, StoreError> {
        self.noted(self.inner.step_of(key).await)
    }
}

impl<T> Watched<'_, T> {
    /// `result`, its failure noted.
    fn noted<R>(&self, result: Result<R, StoreError>) -> Result<R, StoreError> {
        if let Err(e) = &result {
            self.note(Failure::store(self.surface, e));
        }
        result
    }
}

impl<T: Summarizer> Summarizer for Watched<'_, T> {
    async fn summarize(&self, request: SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        let result = self.inner.summarize(request).await;
        if let Err(e) = &result
            && !matches!(e, SummarizeError::NotConfigured(_))
        {
            self.note(Failure::model(e));
        }
        result
    }

    fn defers(&self) -> bool {
        self.inner.defers()
    }
}

#[cfg(test)]
mod tests;
