//! Every call this addon makes into the engine, in one place: opening a store, who a caller reads
//! as, writing and reading spills, the four read-back pages, reducing one tool return, and what
//! an engine error becomes. The rest of the addon only converts JavaScript values.
//!
//! These are the calls the Python module (`workflows/python/src/store.rs`, `reduce.rs`,
//! `errors.rs`) makes, made the same way, so that a spill written here is the worker's and a page
//! read here is the worker's text.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use overspill::api::{GrepRequest, ListRequest, QueryRequest, ReadRequest};
use overspill::limits::{self, Limits, Reduced, SpillStore as _, ToolCall, ToolResult};
use overspill::query::{self, DEFAULT_QUERY_MEMORY, QueryPlace, QueryRunner};
use overspill::read::{self, ReadOutcomeError};
use overspill::store::{ReadScope, Reader, Scope, Store, StoreError};
use overspill::summarize::{ChunkBudget, Chunked, OpenAiSummarizer};
use serde::de::DeserializeOwned;

/// The activities' names and the default task queue, as the worker registers them.
pub(crate) use overspill::names;

/// Why a call failed, in the terms a binding reports it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    /// The store has no spill under the handle, or the caller may not see it.
    #[error("{0}")]
    NotFound(String),
    /// The store failed: `kind` is the engine's error type (`Timeout`, `Misconfigured`, …),
    /// `retryable` whether trying again later may succeed.
    #[error("{message}")]
    Store {
        /// What happened.
        message: String,
        /// The engine's error type.
        kind: &'static str,
        /// Whether a later try may succeed.
        retryable: bool,
    },
    /// A read-back tool's argument is wrong: the message tells the model what to change.
    #[error("{0}")]
    Argument(String),
    /// A limits configuration, store URL or option the engine refuses.
    #[error("{0}")]
    Config(String),
    /// The query sandbox failed, or there is none to run a query in.
    #[error("{0}")]
    Sandbox(String),
}

impl From<StoreError> for Failure {
    fn from(error: StoreError) -> Self {
        if error.is_unknown_handle() {
            return Self::NotFound(error.to_string());
        }
        Self::Store {
            kind: error.type_name(),
            retryable: error.is_retryable(),
            message: error.to_string(),
        }
    }
}

/// Who reads or writes: `None`, a program outside Temporal (reads every spill, writes spills of
/// no workflow), or an activity of `workflow_id` (`None` or empty: a standalone activity, which
/// sees no scoped spill) in `namespace`.
pub(crate) type Caller = Option<(String, Option<String>)>;

/// A read-back tool's request: the JSON the worker's activity of that name takes.
pub(crate) enum Page {
    /// `read_tool_result`.
    Read(ReadRequest),
    /// `grep_tool_result`.
    Grep(GrepRequest),
    /// `query_tool_result`.
    Query(QueryRequest),
    /// `list_tool_results`.
    List(ListRequest),
}

impl Page {
    /// The request of `tool` (a read-back tool's name) in its JSON form, unknown fields refused.
    pub(crate) fn parse(tool: &str, request: serde_json::Value) -> Result<Self, Failure> {
        Ok(match tool {
            "read_tool_result" => Self::Read(from_json(request)?),
            "grep_tool_result" => Self::Grep(from_json(request)?),
            "query_tool_result" => Self::Query(from_json(request)?),
            "list_tool_results" => Self::List(from_json(request)?),
            other => return Err(Failure::Argument(format!("no read-back tool {other:?}"))),
        })
    }
}

/// A spill store with the read scope activities read it under and the sandbox queries run in.
pub(crate) struct Spills {
    store: Arc<Store>,
    read_scope: ReadScope,
    queries: Option<QueryRunner>,
}

impl Spills {
    /// Open the store at `url` (`None`: the local default every command shares); queries run in
    /// `query_sandbox` (`exe query-sandbox`), or are refused without one.
    pub(crate) fn open(
        url: Option<&str>,
        read_scope: &str,
        query_sandbox: Option<PathBuf>,
    ) -> Result<Self, Failure> {
        let read_scope = read_scope.parse().map_err(Failure::Config)?;
        let store = Store::open(url)?;
        let queries = query_sandbox.map(|exe| QueryRunner {
            place: QueryPlace::Sandboxed {
                exe,
                memory: DEFAULT_QUERY_MEMORY,
            },
            deadline: query::QUERY_DEADLINE,
        });
        Ok(Self {
            store: Arc::new(store),
            read_scope,
            queries,
        })
    }

    /// The URL as the worker shows it (no query parameters, no password).
    pub(crate) fn url(&self) -> &str {
        self.store.url()
    }

    /// The read scope, as `overspill worker --read-scope` takes it.
    pub(crate) fn read_scope(&self) -> String {
        self.read_scope.to_string()
    }

    /// Check that the store can be used (a local root created `0700`, a bucket that lists).
    pub(crate) async fn check(&self) -> Result<(), Failure> {
        Ok(self.store.check().await?)
    }

    /// How `caller` reads and writes here.
    fn reader(&self, caller: &Caller) -> Reader {
        match caller {
            None => Reader::operator(),
            Some((namespace, workflow_id)) => {
                let scope = (workflow_id.as_deref()).and_then(|id| Scope::new(namespace, id));
                Reader::new(self.read_scope, scope)
            }
        }
    }

    /// Store `data` under `key` (an overwrite) with its line index and the facts of its writer
    /// and tool; the handle.
    pub(crate) async fn write(
        &self,
        key: &str,
        data: Bytes,
        tool_name: &str,
        caller: &Caller,
    ) -> Result<String, Failure> {
        let writer = self.reader(caller);
        let spills = self.store.for_tool(tool_name, &writer);
        Ok(spills.write(key, data).await?)
    }

    /// The whole payload of `handle`, as `caller` may see it.
    pub(crate) async fn read(&self, handle: &str, caller: &Caller) -> Result<Bytes, Failure> {
        let reader = self.reader(caller);
        Ok(self.store.read_as(&reader).read(handle).await?)
    }

    /// `page`'s model-visible text, as `caller` may see the spill: the worker's answer, an
    /// unknown handle's included.
    pub(crate) async fn page(&self, page: Page, caller: &Caller) -> Result<String, Failure> {
        let reader = self.reader(caller);
        let spills = self.store.read_as(&reader);
        let answer = match page {
            Page::Read(request) => read::read_tool_result(&spills, &request).await,
            Page::Grep(request) => read::grep_tool_result(&spills, &request).await,
            Page::Query(request) => {
                let Some(runner) = &self.queries else {
                    return Err(Failure::Sandbox(
                        "query_tool_result runs a model's jq filter only in a sandbox bounded in \
                         memory: give the store the `overspill` executable (querySandbox), or put \
                         it on PATH"
                            .into(),
                    ));
                };
                query::query_tool_result_with(&spills, &request, runner).await
            }
            Page::List(request) => (self.store.list_run(&request, &reader).await)
                .map(|listing| listing.render(SystemTime::now())),
        };
        match answer {
            Ok(page) => Ok(page),
            Err(missing @ ReadOutcomeError::NoStoredResult(_)) => Ok(missing.to_string()),
            Err(ReadOutcomeError::Retry(retry)) => Err(Failure::Argument(retry.to_string())),
            Err(ReadOutcomeError::Store(e)) => Err(e.into()),
            Err(ReadOutcomeError::Sandbox(e)) => {
                Err(Failure::Sandbox(format!("the query sandbox failed: {e}")))
            }
        }
    }
}

/// A limits configuration: the JSON `overspill worker --limits` takes (`None`: the defaults).
pub(crate) fn limits(config: Option<&str>) -> Result<Limits, Failure> {
    match config {
        None => Ok(Limits::default()),
        Some(json) => Limits::from_json(json).map_err(|e| Failure::Config(e.to_string())),
    }
}

/// An OpenAI-compatible summarizer, in chunks that fit `context_tokens`, as `overspill worker
/// --model-url` makes it.
pub(crate) fn model(
    url: String,
    model: Option<String>,
    api_key: Option<String>,
    timeout: Duration,
    context_tokens: Option<u64>,
) -> Result<Chunked<OpenAiSummarizer>, Failure> {
    let summarizer = OpenAiSummarizer::builder(url)
        .maybe_model(model)
        .maybe_api_key(api_key)
        .timeout(timeout)
        .build()
        .map_err(|e| Failure::Config(e.to_string()))?;
    let context = context_tokens.unwrap_or(ChunkBudget::DEFAULT_CONTEXT_TOKENS);
    Ok(Chunked::new(
        summarizer,
        ChunkBudget::from_context_tokens(context),
    ))
}

/// Reduce one tool return as the worker's `tool_output_limits.reduce` does, spilling to `spills`
/// under `call`'s key for `caller`; `None` when it is left as it is. A Summarize band without a
/// `model` falls back to its `then`, as on a worker without one.
pub(crate) async fn reduce(
    limits: &Limits,
    spills: &Spills,
    call: ToolCall,
    result: ToolResult,
    caller: &Caller,
    model: Option<Chunked<OpenAiSummarizer>>,
) -> Option<Reduced> {
    let writer = spills.reader(caller);
    let store = spills.store.for_tool(&call.tool_name, &writer);
    let mut reduced = limits::reduce(limits, &call, result, &store, &model).await;
    if !reduced.changed() {
        return None;
    }
    if reduced.overflow_handle().is_some() || reduced.overflow_content_handle().is_some() {
        reduced.store = Some(spills.url().to_owned());
    }
    Some(reduced)
}

/// The read-back tools as a model sees them: name, activity, description, JSON Schema parameters.
pub(crate) fn read_back_tools() -> Vec<overspill::tools::ToolSpec> {
    overspill::tools::read_back_tools()
}

/// `key`'s object path inside a store's `tool_output_limits/` folder, made safe as the worker
/// makes it.
pub(crate) fn sanitize_key(key: &str) -> String {
    overspill::store::sanitize_key(key)
}

/// A request in its JSON form, unknown fields refused, as the activity's would be.
fn from_json<T: DeserializeOwned>(request: serde_json::Value) -> Result<T, Failure> {
    serde_json::from_value(request).map_err(|e| Failure::Argument(e.to_string()))
}
