//! Overspill's engine for Node.js, the very code the worker runs: the native half of the npm
//! package in `workflows/typescript`, which wraps it in typed classes and errors.
//!
//! - [`Store`] (opened by [`open_store`]): a spill store by URL, with the worker's keys, line
//!   index and writer facts, and the read-back pages `read_tool_result`, `grep_tool_result`,
//!   `query_tool_result` and `list_tool_results`.
//! - [`Limits`] (the worker's `--limits` JSON), [`Model`] (an OpenAI-compatible summarizer) and
//!   [`reduce`], one tool return reduced by size bands.
//! - [`read_back_tools`]: the read-back tools as a model sees them (`overspill::tools`).
//!
//! Every call that touches a store or a model returns a Promise settled from a task on napi's
//! Tokio runtime, off the Node event loop. A call that fails resolves to a [`Failure`] (which the
//! package throws as its typed error) rather than rejecting, so that the error keeps its kind.
//! The engine's log records (a spill that fell back, with its reason) go to stderr, filtered by
//! `OVERSPILL_LOG` (default `warn`).
//!
//! All calls into the engine are in [`engine`].

mod engine;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use napi::bindgen_prelude::{Buffer, Either, PromiseRaw};
use napi::{Env, Status};
use napi_derive::napi;
use overspill::limits::{Envelope, ToolCall, ToolOutput, ToolResult};
use overspill::summarize::{Chunked, OpenAiSummarizer};
use serde_json::Value;

use engine::{Page, Spills};

/// Why a call failed: `error` names the package's error class (`NotFound`, `StoreError`,
/// `ArgumentError`, `ConfigError`, `QuerySandboxError`); a store's failure has the engine's
/// `kind` and whether it is `retryable`.
#[napi(object)]
pub struct Failure {
    /// The error class.
    pub error: String,
    /// What happened.
    pub message: String,
    /// A store failure's kind (`StoreUnavailable`, `StoreMisconfigured`, …).
    pub kind: Option<String>,
    /// Whether a store failure may go away if tried again later.
    pub retryable: Option<bool>,
}

impl From<engine::Failure> for Failure {
    fn from(failure: engine::Failure) -> Self {
        let message = failure.to_string();
        let (error, kind, retryable) = match failure {
            engine::Failure::NotFound(_) => ("NotFound", None, None),
            engine::Failure::Store {
                kind, retryable, ..
            } => ("StoreError", Some(kind.to_owned()), Some(retryable)),
            engine::Failure::Argument(_) => ("ArgumentError", None, None),
            engine::Failure::Config(_) => ("ConfigError", None, None),
            engine::Failure::Sandbox(_) => ("QuerySandboxError", None, None),
        };
        Self {
            error: error.to_owned(),
            message,
            kind,
            retryable,
        }
    }
}

/// A value, or why there is none.
type Outcome<T> = Either<T, Failure>;

/// `result` as an [`Outcome`].
fn outcome<T>(result: Result<T, engine::Failure>) -> Outcome<T> {
    match result {
        Ok(value) => Either::A(value),
        Err(failure) => Either::B(failure.into()),
    }
}

/// Who reads or writes a spill: the namespace and workflow id of the Temporal activity the call
/// is made in (no `workflowId`: a standalone activity, which sees no scoped spill). A call with
/// no caller is a program outside Temporal: it reads every spill and writes spills of no
/// workflow.
#[napi(object)]
pub struct Caller {
    /// The activity's namespace.
    pub namespace: String,
    /// Its workflow's id.
    pub workflow_id: Option<String>,
}

/// The engine's form of a caller.
fn caller(caller: Option<Caller>) -> engine::Caller {
    caller.map(|c| (c.namespace, c.workflow_id))
}

/// A spill store by URL, written and read exactly as the worker writes and reads it.
#[napi]
pub struct Store {
    spills: Arc<Spills>,
}

/// Open the store at `url`: `file:///path`, `s3://bucket/prefix`, `gs://…`, `az://…` or
/// `memory://` (`null`: the local default, `file://$TMPDIR/overspill-<euid>`), as `overspill
/// worker --store` takes it. Reads inside an activity see the spills `readScope` admits for its
/// workflow (`workflow`, `namespace` or `any`). Queries run in `querySandbox`, the `overspill`
/// executable (started as `overspill query-sandbox`, bounded in memory and time); without one
/// they are refused rather than run unbounded in this process.
#[napi]
pub fn open_store(
    url: Option<String>,
    read_scope: String,
    query_sandbox: Option<String>,
) -> Outcome<Store> {
    let spills = Spills::open(
        url.as_deref(),
        &read_scope,
        query_sandbox.map(PathBuf::from),
    );
    outcome(spills.map(|spills| Store {
        spills: Arc::new(spills),
    }))
}

#[napi]
impl Store {
    /// The store's URL, as the worker shows it (no query parameters, no password).
    #[napi(getter)]
    pub fn url(&self) -> String {
        self.spills.url().to_owned()
    }

    /// The read scope reads inside an activity have.
    #[napi(getter)]
    pub fn read_scope(&self) -> String {
        self.spills.read_scope()
    }

    /// Check that the store can be used: a local root is created `0700` (or checked), a bucket
    /// answers a listing. `null` when it can.
    #[napi(ts_return_type = "Promise<Failure | null>")]
    pub fn check<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Option<Failure>>> {
        let spills = self.spills.clone();
        env.spawn_future(async move { Ok(spills.check().await.err().map(Failure::from)) })
    }

    /// Store `data` under `key` (an overwrite) with its line index and the facts of its writer
    /// and tool; the handle.
    #[napi(ts_return_type = "Promise<string | Failure>")]
    pub fn write<'env>(
        &self,
        env: &'env Env,
        key: String,
        data: Either<String, Buffer>,
        tool_name: Option<String>,
        by: Option<Caller>,
    ) -> napi::Result<PromiseRaw<'env, Outcome<String>>> {
        let spills = self.spills.clone();
        let data = match data {
            Either::A(text) => Bytes::from(text),
            Either::B(buffer) => Bytes::copy_from_slice(&buffer),
        };
        let by = caller(by);
        env.spawn_future(async move {
            let tool = tool_name.unwrap_or_default();
            Ok(outcome(spills.write(&key, data, &tool, &by).await))
        })
    }

    /// The whole payload of `handle`, as `by` may see it.
    #[napi(ts_return_type = "Promise<Buffer | Failure>")]
    pub fn read<'env>(
        &self,
        env: &'env Env,
        handle: String,
        by: Option<Caller>,
    ) -> napi::Result<PromiseRaw<'env, Outcome<Buffer>>> {
        let spills = self.spills.clone();
        let by = caller(by);
        env.spawn_future(async move {
            let data = spills.read(&handle, &by).await;
            Ok(outcome(data.map(|data| Buffer::from(data.to_vec()))))
        })
    }

    /// The model-visible text the worker's activity `tool_output_limits.<tool>` answers
    /// `request` (its JSON form: `{handle, offset, limit, from_end, pattern}` for
    /// `read_tool_result`, …), as `by` may see the spill.
    #[napi(ts_return_type = "Promise<string | Failure>")]
    pub fn page<'env>(
        &self,
        env: &'env Env,
        tool: String,
        request: Value,
        by: Option<Caller>,
    ) -> napi::Result<PromiseRaw<'env, Outcome<String>>> {
        let spills = self.spills.clone();
        let by = caller(by);
        env.spawn_future(async move {
            let page = match Page::parse(&tool, request) {
                Ok(page) => spills.page(page, &by).await,
                Err(failure) => Err(failure),
            };
            Ok(outcome(page))
        })
    }
}

/// Size bands and their actions: the JSON `overspill worker --limits` takes.
#[napi]
pub struct Limits {
    inner: Arc<overspill::limits::Limits>,
}

/// The limits `config` says (`null`: the defaults, one band spilling outputs over 10,000 chars
/// and truncating when the spill fails).
#[napi]
pub fn parse_limits(config: Option<String>) -> Outcome<Limits> {
    outcome(engine::limits(config.as_deref()).map(|limits| Limits {
        inner: Arc::new(limits),
    }))
}

/// An OpenAI-compatible chat-completions endpoint that writes summaries, in chunks that fit its
/// context window, as `overspill worker --model-url` does.
#[napi]
pub struct Model {
    inner: Chunked<OpenAiSummarizer>,
}

/// How to reach a summarizing model.
#[napi(object)]
pub struct ModelOptions {
    /// The chat-completions endpoint's base URL.
    pub url: String,
    /// The model to ask for.
    pub model: Option<String>,
    /// The API key, sent as a bearer token.
    pub api_key: Option<String>,
    /// Each request's timeout in seconds (default 120).
    pub timeout_seconds: Option<f64>,
    /// The model's context window in tokens: the size of each chunk summarized.
    pub context_tokens: Option<u32>,
}

/// The model `options` name.
#[napi]
pub fn open_model(options: ModelOptions) -> Outcome<Model> {
    let timeout = Duration::try_from_secs_f64(options.timeout_seconds.unwrap_or(120.0))
        .ok()
        .filter(|t| !t.is_zero())
        .ok_or_else(|| engine::Failure::Config("timeoutSeconds must be a positive number".into()));
    let model = timeout.and_then(|timeout| {
        engine::model(
            options.url,
            options.model,
            options.api_key,
            timeout,
            options.context_tokens.map(u64::from),
        )
    });
    outcome(model.map(|inner| Model { inner }))
}

/// The call a tool return came from, which names its spill: `{run_id}/{tool_call_id}.{retry}`.
#[napi(object)]
pub struct Call {
    /// The tool's name as the model called it.
    pub tool_name: String,
    /// The agent run (`run` when absent).
    pub run_id: Option<String>,
    /// The tool call (`call` when absent).
    pub tool_call_id: Option<String>,
    /// The tool call's retry by the model, never an activity attempt (default 0).
    pub retry: Option<u32>,
    /// The tool's kind, for exemptions (`tool_output_limits.read_tool_result`, …).
    pub tool_kind: Option<String>,
}

/// A tool's return value and, for a ToolReturn envelope, its `content` and `metadata`.
#[napi(object)]
pub struct Output {
    /// The return value: a string, bytes, or with `structured` the JSON text of a structured
    /// value (rendered by the limits' serializer, sketched in the spill marker).
    pub value: Either<String, Buffer>,
    /// `value` is JSON text.
    pub structured: Option<bool>,
    /// An envelope's model-visible content.
    pub content: Option<Value>,
    /// An envelope's app-side metadata.
    pub metadata: Option<Value>,
    /// There is an envelope (implied by `content` or `metadata`).
    pub envelope: Option<bool>,
}

/// Reduce one tool return, as the worker's `tool_output_limits.reduce` activity does: a spill
/// goes to `store` under the call's key for `by`; a Summarize band asks `model`, and without one
/// falls back to its `then`. Resolves to the reduce activity's reply (`kind`, `content_kind`,
/// `return_value`, `content`, `metadata`, `envelope`, `usage`, `store`), or `null` when the
/// return is left as it is.
#[napi(ts_return_type = "Promise<Record<string, any> | null | Failure>")]
pub fn reduce<'env>(
    env: &'env Env,
    limits: &Limits,
    store: &Store,
    call: Call,
    output: Output,
    by: Option<Caller>,
    model: Option<&Model>,
) -> napi::Result<PromiseRaw<'env, Outcome<Option<Value>>>> {
    let return_value = match output.value {
        Either::A(text) if output.structured.unwrap_or(false) => {
            ToolOutput::Json(serde_json::from_str(&text).map_err(|e| {
                napi::Error::new(
                    Status::InvalidArg,
                    format!("a structured output is not JSON: {e}"),
                )
            })?)
        }
        Either::A(text) => ToolOutput::Text(text.into()),
        Either::B(data) => ToolOutput::Bytes(Bytes::copy_from_slice(&data)),
    };
    let result = ToolResult {
        return_value,
        envelope: Envelope {
            content: output.content,
            metadata: output.metadata,
            wrapped: output.envelope.unwrap_or(false),
        }
        .implied(),
    };
    let call = ToolCall {
        tool_name: call.tool_name,
        tool_kind: call.tool_kind,
        run_id: call.run_id,
        tool_call_id: call.tool_call_id,
        retry: call.retry.unwrap_or(0),
        // The AI SDK's tool call ids are unique within a run: no step in the key.
        run_step: None,
    };
    let (limits, spills) = (limits.inner.clone(), store.spills.clone());
    let (by, model) = (caller(by), model.map(|m| m.inner.clone()));
    env.spawn_future(async move {
        let reduced = spills.reduce(&limits, call, result, &by, model).await;
        let reply = reduced.map(|reduced| reduced.map(serde_json::to_value).transpose());
        match reply {
            Ok(reply) => Ok(Either::A(
                reply.map_err(|e| napi::Error::from_reason(e.to_string()))?,
            )),
            Err(failure) => Ok(Either::B(Failure::from(failure))),
        }
    })
}

/// The names other processes call Overspill by.
#[napi(object)]
pub struct Names {
    /// The task queue an Overspill worker polls by default.
    pub task_queue: String,
    /// The activity that persists a payload under its key.
    pub spill: String,
}

/// The names other processes call Overspill by, as the worker registers them.
#[napi]
pub fn names() -> Names {
    Names {
        task_queue: engine::names::DEFAULT_TASK_QUEUE.to_owned(),
        spill: engine::names::SPILL.to_owned(),
    }
}

/// A read-back tool as a model sees it.
#[napi(object)]
pub struct ToolSpec {
    /// The tool's name as the model calls it.
    pub name: String,
    /// The Overspill activity that serves it (`tool_output_limits.<name>`).
    pub activity: String,
    /// What the model reads about the tool.
    pub description: String,
    /// Its arguments: a JSON Schema object, each property with its type, description, default and
    /// bounds (the engine's own checks and clamps).
    pub parameters: Value,
}

/// The read-back tools `read_tool_result`, `grep_tool_result`, `query_tool_result` and
/// `list_tool_results`, as every Overspill integration gives them to its model.
#[napi]
pub fn read_back_tools() -> Vec<ToolSpec> {
    (engine::read_back_tools().into_iter())
        .map(|tool| ToolSpec {
            name: tool.name.to_owned(),
            activity: tool.activity.to_owned(),
            description: tool.description.to_owned(),
            parameters: tool.parameters,
        })
        .collect()
}

/// `key`'s object path inside a store's `tool_output_limits/` folder: each `/`-separated segment
/// made safe as the worker makes it (`run-1/../call 1.0` → `run-1/_/call_1.0`).
#[napi]
pub fn sanitize_key(key: String) -> String {
    engine::sanitize_key(&key)
}

/// The engine's `tracing` events on stderr, at the level `OVERSPILL_LOG` says (default `warn`):
/// a spill that fell back says why there.
#[napi_derive::module_init]
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("OVERSPILL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
