//! `reduce`: one tool return reduced by the engine under a `Limits`, spilling to a `Store` and
//! summarizing with a `Model`, through the engine's service layer.
//!
//! The return value crosses into Rust once: a `str` or `bytes` is copied as it is, any other
//! value is converted, in one walk, into the JSON value the engine renders (no JSON text in
//! between). What comes back is a small dict (`Reduction` in `_native.pyi`): the replacement
//! texts, never the value itself.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use overspill::limits::{
    self, Deferred, Envelope, ReductionKind, ToolCall, ToolOutput, ToolResult,
};
use overspill::service::{Failure, Surface};
use overspill::summarize::{ChunkBudget, Chunked, OpenAiSummarizer};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString};
use pythonize::{depythonize, pythonize};
use serde_json::{Map, Number, Value};

use crate::errors;
use crate::store::{Caller, Store, caller, run};

/// The deepest nesting of a structured return the engine takes (as deep as it parses JSON).
const MAX_DEPTH: usize = 128;

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
            Some(json) => limits::Limits::from_json(json)
                .map_err(|e| errors::failure(Failure::invalid_config(Surface::Python, &e)))?,
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
/// `output` is the return value: a `str`, `bytes`, or a JSON value (dicts with string keys,
/// lists, strings, finite floats, integers within 64 bits, booleans, `None`; a `TypeError` names
/// anything else), rendered by the limits' serializer and sketched in the spill marker. `content`
/// and `metadata` are a ToolReturn envelope's (`envelope` says there is one). A spill goes to
/// `store` under `{run_id}/{tool_call_id}.{retry}` for `caller` (under
/// `{run_id}/{run_step}/{tool_call_id}.{retry}` when the harness keys by step and an earlier
/// step of the run spilled that key).
///
/// Returns a `Reduction` (what happened to the value and the content, their replacement texts,
/// the metadata, the usage and the store a spill went to), or `None` when the return is left as
/// it is: nothing was reduced, or a part's band summarizes and no `model` was given (the caller
/// leaves the summary to whoever has one).
#[pyfunction]
#[pyo3(signature = (limits, store, *, tool_name, output, run_id=None, tool_call_id=None, retry=0, run_step=None, tool_kind=None, content=None, metadata=None, envelope=false, caller=None, model=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce<'py>(
    py: Python<'py>,
    limits: &Limits,
    store: &Store,
    tool_name: String,
    output: &Bound<'py, PyAny>,
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
    let json = |value: Option<&Bound<'py, PyAny>>| -> PyResult<Option<Value>> {
        value
            .map(|v| depythonize(v).map_err(|e| PyTypeError::new_err(e.to_string())))
            .transpose()
    };
    let result = ToolResult {
        return_value: tool_output(output)?,
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
    let (limits, service) = (limits.inner.clone(), store.service.clone());
    let (model, caller) = (model.map(|m| m.inner.clone()), self::caller(caller));
    run(py, async move {
        let reduction = match &model {
            Some(model) => service.reduce(&limits, &call, result, model, &caller).await,
            None => {
                service
                    .reduce(&limits, &call, result, &Deferred, &caller)
                    .await
            }
        };
        let reduced = reduction.map_err(errors::failure)?.reduced;
        if !reduced.changed() {
            return Ok(None);
        }
        Python::attach(|py| {
            let dict = PyDict::new(py);
            let replaced = |kind: ReductionKind, text: Option<&str>| {
                text.filter(|_| kind != ReductionKind::Passthrough)
                    .map(str::to_owned)
            };
            dict.set_item("kind", pythonize(py, &reduced.kind)?)?;
            dict.set_item("content_kind", pythonize(py, &reduced.content_kind)?)?;
            let value = replaced(reduced.kind, reduced.return_value.as_text());
            dict.set_item("return_value", value)?;
            let content = (reduced.envelope.content.as_ref()).and_then(Value::as_str);
            dict.set_item("content", replaced(reduced.content_kind, content))?;
            dict.set_item("metadata", pythonize(py, &reduced.envelope.metadata)?)?;
            dict.set_item("envelope", reduced.envelope.wrapped)?;
            dict.set_item("usage", pythonize(py, &reduced.usage)?)?;
            dict.set_item("store", reduced.store)?;
            Ok(Some(dict.into_any().unbind()))
        })
        .map_err(|e: pythonize::PythonizeError| PyValueError::new_err(e.to_string()))
    })
}

/// The engine's form of a Python return value: text and bytes copied as they are, anything else
/// converted as a JSON value.
fn tool_output(output: &Bound<'_, PyAny>) -> PyResult<ToolOutput> {
    if let Ok(text) = output.cast::<PyString>() {
        return Ok(ToolOutput::Text(text.to_str()?.to_owned().into()));
    }
    if let Ok(data) = output.cast::<PyBytes>() {
        return Ok(ToolOutput::Bytes(Bytes::copy_from_slice(data.as_bytes())));
    }
    json_value(output, 0).map(ToolOutput::Json)
}

/// `value` as a JSON value, if it is one: `None`, a `bool`, an `int` within 64 bits, a finite
/// `float`, a `str`, a `list` of them or a `dict` with `str` keys (exactly those containers, as
/// a JSON serializer takes them without a default), nested at most [`MAX_DEPTH`] deep.
fn json_value(value: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        let deep = format!("output is nested deeper than {MAX_DEPTH} levels");
        return Err(PyTypeError::new_err(deep));
    }
    if value.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(Value::String(text.to_str()?.to_owned()));
    }
    if let Ok(number) = value.cast::<PyInt>() {
        if let Ok(n) = number.extract::<i64>() {
            return Ok(Value::from(n));
        }
        if let Ok(n) = number.extract::<u64>() {
            return Ok(Value::from(n));
        }
        return Err(PyTypeError::new_err(
            "output holds an integer beyond 64 bits",
        ));
    }
    if let Ok(number) = value.cast::<PyFloat>() {
        let finite = Number::from_f64(number.value());
        let finite =
            finite.ok_or_else(|| PyTypeError::new_err("output holds a NaN or infinity"))?;
        return Ok(Value::Number(finite));
    }
    if let Ok(list) = value.cast_exact::<PyList>() {
        let items = list.iter().map(|item| json_value(&item, depth + 1));
        return items.collect::<PyResult<_>>().map(Value::Array);
    }
    if let Ok(dict) = value.cast_exact::<PyDict>() {
        let mut map = Map::with_capacity(dict.len());
        for (key, item) in dict.iter() {
            let key = key.cast::<PyString>().map_err(|_| {
                PyTypeError::new_err("output holds a dict with a key that is not a str")
            })?;
            map.insert(key.to_str()?.to_owned(), json_value(&item, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    Err(PyTypeError::new_err(format!(
        "output is not a JSON value: it holds a {}",
        value.get_type().name()?
    )))
}
