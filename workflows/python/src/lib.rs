//! `overspill._native`: Overspill's engine for Python, the very code the worker runs: a binding
//! of the engine's service layer (`overspill::service`), which the worker's activities call too.
//!
//! - [`store`]: `Store`, a spill store by URL (the worker's keys, line index and writer facts),
//!   with the read-back pages `read_tool_result`, `grep_tool_result`, `query_tool_result` (run in
//!   the `overspill` command's query sandbox) and `list_tool_results`.
//! - [`reduce`]: `Limits` (the worker's `--limits` JSON), `Model` (an OpenAI-compatible
//!   summarizer) and `reduce`, one tool return reduced by size bands.
//! - `read_back_tools`: the read-back tools as a model sees them (`overspill::tools`).
//!
//! Every call that touches a store or a model returns an awaitable that runs on a Tokio runtime
//! of its own, without the GIL, so it blocks neither other Python threads nor the event loop.
//! The engine's log records (a spill that fell back, with its reason) reach Python's `logging`
//! under the logger `overspill`.

mod errors;
mod reduce;
mod store;

use pyo3::prelude::*;

/// `key`'s object path inside a store's `tool_output_limits/` folder: each `/`-separated segment
/// made safe as the worker makes it (`run-1/../call 1.0` → `run-1/_/call_1.0`).
#[pyfunction]
fn sanitize_key(key: &str) -> String {
    overspill::store::sanitize_key(key)
}

/// The read-back tools as a model sees them: for each of `read_tool_result`, `grep_tool_result`,
/// `query_tool_result` and `list_tool_results`, a dict of its `name`, the Overspill `activity`
/// that serves it, its `description` and its `parameters` (a JSON Schema object).
#[pyfunction]
fn read_back_tools(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    pythonize::pythonize(py, &overspill::tools::read_back_tools())
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))
}

/// The pydantic-ai-harness release whose text the engine speaks for the package version
/// `version` (`0.75.0` → `0.75`), for a limits configuration's `harness`; `ConfigError`, naming
/// the releases the engine knows, for any other.
#[pyfunction]
fn harness_release(version: &str) -> PyResult<&'static str> {
    overspill::limits::Harness::of_package(version)
        .map(|harness| harness.version())
        .map_err(|e| errors::ConfigError::new_err(e.to_string()))
}

/// The module: its classes, functions and exceptions.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // `log` records of the engine (its `tracing` events, with no subscriber in this process)
    // go to Python's `logging`, which decides what to show.
    let _ = pyo3_log::try_init();
    m.add_class::<store::Store>()?;
    m.add_class::<reduce::Limits>()?;
    m.add_class::<reduce::Model>()?;
    m.add_function(wrap_pyfunction!(reduce::reduce, m)?)?;
    m.add_function(wrap_pyfunction!(sanitize_key, m)?)?;
    m.add_function(wrap_pyfunction!(read_back_tools, m)?)?;
    m.add_function(wrap_pyfunction!(harness_release, m)?)?;
    errors::register(m)?;
    Ok(())
}
