//! Every call this addon makes into the engine, in one place, each through the engine's service
//! layer (`overspill::service`), which the worker's activities and the Python module call too:
//! opening a store, writing and reading spills, the four read-back pages, reducing one tool
//! return, and what a service failure becomes for the package's error classes. The rest of the
//! addon only converts JavaScript values.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use overspill::api::{GrepRequest, ListRequest, QueryRequest, ReadRequest};
use overspill::limits::{Limits, Reduced, ToolCall, ToolResult};
use overspill::query::{DEFAULT_QUERY_MEMORY, QueryRunner};
use overspill::service::{self, INVALID_CONFIG, INVALID_INPUT, Service, Surface};
use overspill::store::{Store, StoreError};
use overspill::summarize::{ChunkBudget, Chunked, OpenAiSummarizer};
use serde::de::DeserializeOwned;

/// The activities' names and the default task queue, as the worker registers them.
pub(crate) use overspill::names;

/// Why a call failed, as the package's error classes tell failures apart.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    /// The store has no spill under the handle, or the caller may not see it.
    #[error("{0}")]
    NotFound(String),
    /// The store failed: `kind` is the service's (`StoreUnavailable`, `StoreMisconfigured`, …),
    /// `retryable` whether trying again later may succeed.
    #[error("{message}")]
    Store {
        /// What happened.
        message: String,
        /// The failure's kind.
        kind: &'static str,
        /// Whether a later try may succeed.
        retryable: bool,
    },
    /// An argument is wrong: a read-back tool's (the message tells the model what to change), or
    /// a call's (the message names the property).
    #[error("{0}")]
    Argument(String),
    /// A limits configuration, store URL or option the engine refuses.
    #[error("{0}")]
    Config(String),
    /// The query sandbox failed, or there is none to run a query in.
    #[error("{0}")]
    Sandbox(String),
}

impl From<service::Failure> for Failure {
    fn from(failure: service::Failure) -> Self {
        let service::Failure {
            type_name,
            message,
            retryable,
            ..
        } = failure;
        match type_name {
            _ if type_name == INVALID_INPUT || type_name == service::MODEL_RETRY => {
                Self::Argument(message)
            }
            INVALID_CONFIG => Self::Config(message),
            _ if type_name.starts_with("QuerySandbox") => Self::Sandbox(message),
            kind => Self::Store {
                message,
                kind,
                retryable,
            },
        }
    }
}

impl Failure {
    /// A store that failed, in the Node API's terms.
    fn store(error: &StoreError) -> Self {
        service::Failure::store(Surface::Node, error).into()
    }
}

/// Who reads or writes: `None`, a program outside Temporal (reads every spill, writes spills of
/// no workflow), or an activity of `workflow_id` (`None` or empty: a standalone activity, which
/// sees no scoped spill) in `namespace`.
pub(crate) type Caller = Option<(String, Option<String>)>;

/// The service's caller for `caller`.
fn service_caller(caller: &Caller) -> service::Caller {
    match caller {
        None => service::Caller::Operator,
        Some((namespace, workflow_id)) => {
            service::Caller::activity(namespace, workflow_id.as_deref(), None)
        }
    }
}

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

/// A spill store, served as the worker serves it.
pub(crate) struct Spills {
    service: Service,
}

impl Spills {
    /// Open the store at `url` (`None`: the local default every command shares); reads inside an
    /// activity see what `read_scope` admits; queries run in `query_sandbox` (`exe
    /// query-sandbox`), or are refused without one.
    pub(crate) fn open(
        url: Option<&str>,
        read_scope: &str,
        query_sandbox: Option<PathBuf>,
    ) -> Result<Self, Failure> {
        let read_scope = read_scope.parse().map_err(Failure::Config)?;
        let store = Store::open(url).map_err(|e| Failure::store(&e))?;
        let queries = query_sandbox.map(|exe| QueryRunner::sandboxed(exe, DEFAULT_QUERY_MEMORY));
        let service = Service::new(Arc::new(store), Surface::Node)
            .with_read_scope(read_scope)
            .with_query_runner(queries);
        Ok(Self { service })
    }

    /// The URL as the worker shows it (no query parameters, no password).
    pub(crate) fn url(&self) -> &str {
        self.service.store().url()
    }

    /// The read scope, as `overspill worker --read-scope` takes it.
    pub(crate) fn read_scope(&self) -> String {
        self.service.read_scope().to_string()
    }

    /// Check that the store can be used (a local root created `0700`, a bucket that lists).
    pub(crate) async fn check(&self) -> Result<(), Failure> {
        (self.service.store().check().await).map_err(|e| Failure::store(&e))
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
        let caller = service_caller(caller);
        Ok(self.service.write(key, data, tool_name, &caller).await?)
    }

    /// The whole payload of `handle`, as `caller` may see it.
    pub(crate) async fn read(&self, handle: &str, caller: &Caller) -> Result<Bytes, Failure> {
        match self.service.read(handle, &service_caller(caller)).await? {
            Some(data) => Ok(data),
            None => Err(Failure::NotFound(
                StoreError::NotFound {
                    handle: handle.to_owned(),
                }
                .to_string(),
            )),
        }
    }

    /// `page`'s model-visible text, as `caller` may see the spill: the worker's answer, an
    /// unknown handle's included.
    pub(crate) async fn page(&self, page: Page, caller: &Caller) -> Result<String, Failure> {
        let (service, caller) = (&self.service, service_caller(caller));
        let answer = match page {
            Page::Read(request) => service.read_tool_result(&request, &caller).await,
            Page::Grep(request) => service.grep_tool_result(&request, &caller).await,
            Page::Query(request) => service.query_tool_result(&request, &caller).await,
            Page::List(request) => service.list_tool_results(request, &caller).await,
        };
        Ok(answer?.text)
    }

    /// Reduce one tool return as the worker's `tool_output_limits.reduce` does, spilling under
    /// `call`'s key for `caller`; `None` when it is left as it is. A Summarize band without a
    /// `model` falls back to its `then`, as on a worker without one.
    pub(crate) async fn reduce(
        &self,
        limits: &Limits,
        call: ToolCall,
        result: ToolResult,
        caller: &Caller,
        model: Option<Chunked<OpenAiSummarizer>>,
    ) -> Result<Option<Reduced>, Failure> {
        let caller = service_caller(caller);
        let reduction = (self.service)
            .reduce(limits, &call, result, &model, &caller)
            .await?;
        Ok(Some(reduction.reduced).filter(Reduced::changed))
    }
}

/// A limits configuration: the JSON `overspill worker --limits` takes (`None`: the defaults).
pub(crate) fn limits(config: Option<&str>) -> Result<Limits, Failure> {
    match config {
        None => Ok(Limits::default()),
        Some(json) => Limits::from_json(json)
            .map_err(|e| service::Failure::invalid_config(Surface::Node, &e).into()),
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
