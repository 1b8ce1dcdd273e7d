//! `reduce`: one tool return reduced by the engine under a `Limits`, spilling to a `Store` and
//! summarizing with a `Model`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use overspill::limits::{self, Action, Envelope, ToolCall, ToolOutput, ToolResult, Unit, bands};
use overspill::summarize::{ChunkBudget, Chunked, OpenAiSummarizer};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use pythonize::{depythonize, pythonize};
use serde_json::Value;

use crate::errors::ConfigError;
use crate::store::{Caller, Store, run};

/// Size bands and their actions: the JSON `overspill worker --limits` takes (`None`: the
/// defaults, one band spilling outputs over 10,000 chars and truncating when the spill fails).
#[pyclass(frozen, module = "overspill._native")]
pub(crate) struct Limits {
    inner: Arc<limits::Limits>,
}

#[pymethods]
impl Limits {
    #[new]
    #[pyo3(signature = (config=None))]
    fn new(config: Option<&str>) -> PyResult<Self> {
        let inner = match config {
            None => limits::Limits::default(),
            Some(json) => {
                limits::Limits::from_json(json).map_err(|e| ConfigError::new_err(e.to_string()))?
            }
        };
        Ok(Self {
            inner: Arc::new(inner),
        })
    }
}

/// An OpenAI-compatible chat-completions endpoint that writes summaries, in chunks that fit its
/// context window, as `overspill worker --model-url` does.
#[pyclass(frozen, module = "overspill._native")]
pub(crate) struct Model {
    inner: Chunked<OpenAiSummarizer>,
}

#[pymethods]
impl Model {
    #[new]
    #[pyo3(signature = (url, *, model=None, api_key=None, timeout=120.0, context_tokens=ChunkBudget::DEFAULT_CONTEXT_TOKENS))]
    fn new(
        url: String,
        model: Option<String>,
        api_key: Option<String>,
        timeout: f64,
        context_tokens: u64,
    ) -> PyResult<Self> {
        let timeout = Duration::try_from_secs_f64(timeout)
            .ok()
            .filter(|t| !t.is_zero())
            .ok_or_else(|| PyValueError::new_err("timeout must be a positive number of seconds"))?;
        let summarizer = OpenAiSummarizer::builder(url)
            .maybe_model(model)
            .maybe_api_key(api_key)
            .timeout(timeout)
            .build()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        let budget = ChunkBudget::from_context_tokens(context_tokens);
        Ok(Self {
            inner: Chunked::new(summarizer, budget),
        })
    }
}

/// Reduce one tool return, as the worker's `tool_output_limits.reduce` activity does.
///
/// `output` is the return value: `str`, `bytes`, or with `structured` the JSON text of a
/// structured value (rendered by the limits' serializer, sketched in the spill marker). `content`
/// and `metadata` are a ToolReturn envelope's (`envelope` says there is one). A spill goes to
/// `store` under `{run_id}/{tool_call_id}.{retry}` for `caller` (under
/// `{run_id}/{run_step}/{tool_call_id}.{retry}` when the harness keys by step and an earlier
/// step of the run spilled that key).
///
/// Returns the engine's reduced result as a dict (`kind`, `content_kind`, `return_value`,
/// `content`, `metadata`, `envelope`, `usage`, `store`), or `None` when the return is left as it
/// is: nothing was reduced, or its band summarizes and no `model` was given (the caller leaves
/// the summary to whoever has one).
#[pyfunction]
#[pyo3(signature = (limits, store, *, tool_name, output, structured=false, run_id=None, tool_call_id=None, retry=0, run_step=None, tool_kind=None, content=None, metadata=None, envelope=false, caller=None, model=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce<'py>(
    py: Python<'py>,
    limits: &Limits,
    store: &Store,
    tool_name: String,
    output: &Bound<'py, PyAny>,
    structured: bool,
    run_id: Option<String>,
    tool_call_id: Option<String>,
    retry: u32,
    run_step: Option<u64>,
    tool_kind: Option<String>,
    content: Option<&Bound<'py, PyAny>>,
    metadata: Option<&Bound<'py, PyAny>>,
    envelope: bool,
    caller: Caller,
    model: Option<&Model>,
) -> PyResult<Bound<'py, PyAny>> {
    let return_value = tool_output(output, structured)?;
    let json = |value: Option<&Bound<'py, PyAny>>| -> PyResult<Option<Value>> {
        value
            .map(|v| depythonize(v).map_err(|e| PyTypeError::new_err(e.to_string())))
            .transpose()
    };
    let result = ToolResult {
        return_value,
        envelope: Envelope {
            content: json(content)?,
            metadata: json(metadata)?,
            wrapped: envelope,
        }
        .implied(),
    };
    let call = ToolCall {
        tool_name,
        tool_kind,
        run_id,
        tool_call_id,
        retry,
        run_step,
    };
    let (limits, writer) = (limits.inner.clone(), store.reader(&caller));
    let (store, model) = (store.inner.clone(), model.map(|m| m.inner.clone()));
    if model.is_none() && summarizes(&limits, &call.tool_name, &result) {
        return run(py, async { Ok(None::<Py<PyAny>>) });
    }
    run(py, async move {
        let spills = store.for_tool(&call.tool_name, &writer);
        let mut reduced = limits::reduce(&limits, &call, result, &spills, &model).await;
        if !reduced.changed() {
            return Ok(None);
        }
        if reduced.overflow_handle().is_some() || reduced.overflow_content_handle().is_some() {
            reduced.store = Some(store.url().to_owned());
        }
        Python::attach(|py| {
            Ok(Some(
                pythonize(py, &reduced)
                    .map_err(|e| PyValueError::new_err(e.to_string()))?
                    .unbind(),
            ))
        })
    })
}

/// The engine's form of a Python return value.
fn tool_output(output: &Bound<'_, PyAny>, structured: bool) -> PyResult<ToolOutput> {
    if let Ok(text) = output.cast::<PyString>() {
        let text = text.to_str()?;
        return if structured {
            serde_json::from_str(text)
                .map(ToolOutput::Json)
                .map_err(|e| PyValueError::new_err(format!("structured output is not JSON: {e}")))
        } else {
            Ok(ToolOutput::Text(text.to_owned().into()))
        };
    }
    if let Ok(data) = output.cast::<PyBytes>() {
        return Ok(ToolOutput::Bytes(Bytes::copy_from_slice(data.as_bytes())));
    }
    Err(PyTypeError::new_err(format!(
        "output must be str or bytes (JSON text with structured=True), not {}",
        output.get_type().name()?
    )))
}

/// Whether the band the return value (or a text content) falls in summarizes.
fn summarizes(limits: &limits::Limits, tool_name: &str, result: &ToolResult) -> bool {
    let bands = limits.bands_for(tool_name);
    if !bands.iter().any(|band| band.action.can_summarize()) {
        return false;
    }
    let content = (result.envelope.content.as_ref())
        .and_then(Value::as_str)
        .map(|text| ToolOutput::Text(text.to_owned().into()));
    std::iter::once(&result.return_value)
        .chain(content.as_ref())
        .any(|output| {
            let unit = Unit::new(output, limits);
            matches!(
                bands::select(bands, &unit, limits),
                Some(Action::Summarize(_))
            )
        })
}
