//! The exceptions the engine's errors become in Python.
//!
//! - An unknown, refused or unseen handle: `FileNotFoundError` (what an `OverflowStore` raises).
//! - A store that failed: `StoreError`, with `retryable` (a timeout, a store that is down) and
//!   `kind` (the engine's error type: `Timeout`, `Misconfigured`, …).
//! - A bad argument of a read-back tool: `ArgumentError`, whose message the model gets to retry.
//! - A limits configuration the engine refuses: `ConfigError`.

use overspill::read::ReadOutcomeError;
use overspill::store::StoreError as EngineStoreError;
use pyo3::exceptions::{PyException, PyFileNotFoundError, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    overspill,
    StoreError,
    PyException,
    "A spill store failed: it is down, slow, refuses the credentials, or is misconfigured."
);
pyo3::create_exception!(
    overspill,
    ArgumentError,
    PyValueError,
    "A read-back tool's argument is wrong: the message tells the model what to change."
);
pyo3::create_exception!(
    overspill,
    ConfigError,
    PyValueError,
    "A limits configuration the engine refuses (the message names the field)."
);

/// Add the exceptions to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("StoreError", py.get_type::<StoreError>())?;
    m.add("ArgumentError", py.get_type::<ArgumentError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    Ok(())
}

/// A store's error as Python sees it.
pub(crate) fn store_error(error: EngineStoreError) -> PyErr {
    if error.is_unknown_handle() {
        return PyFileNotFoundError::new_err(error.to_string());
    }
    let (kind, retryable) = (error.type_name(), error.is_retryable());
    let raised = StoreError::new_err(error.to_string());
    Python::attach(|py| {
        let value = raised.value(py);
        // Plain attributes on a fresh exception instance: setting them cannot fail.
        let _ = value.setattr("kind", kind);
        let _ = value.setattr("retryable", retryable);
    });
    raised
}

/// A read-back page, or why there is none: an unknown handle is an answer the model sees, as the
/// worker's activities answer it.
pub(crate) fn page(page: Result<String, ReadOutcomeError>) -> PyResult<String> {
    match page {
        Ok(page) => Ok(page),
        Err(missing @ ReadOutcomeError::NoStoredResult(_)) => Ok(missing.to_string()),
        Err(ReadOutcomeError::Retry(retry)) => Err(ArgumentError::new_err(retry.to_string())),
        Err(ReadOutcomeError::Store(e)) => Err(store_error(e)),
        Err(ReadOutcomeError::Sandbox(e)) => Err(StoreError::new_err(format!(
            "the query sandbox failed: {e}"
        ))),
    }
}
