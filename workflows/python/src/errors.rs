//! The exceptions the service's failures become in Python.
//!
//! - An unknown, refused or unseen handle: `FileNotFoundError` (what an `OverflowStore` raises).
//! - A bad argument, the model's to retry (a read-back tool's) or the caller's (a keyword the
//!   message names): `ArgumentError`.
//! - A limits configuration the engine refuses: `ConfigError`.
//! - Anything else the service failed at (the store, the query sandbox): `StoreError`, with
//!   `kind` (the failure's kind, as the worker's activities name it: `StoreUnavailable`,
//!   `QuerySandboxUnbounded`, …) and `retryable` (whether the same call may succeed later).

use overspill::service::{Failure, INVALID_CONFIG, INVALID_INPUT};
use overspill::store::StoreError as Missing;
use pyo3::exceptions::{PyException, PyFileNotFoundError, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    overspill,
    StoreError,
    PyException,
    "A spill store or the query sandbox failed: `kind` says how, `retryable` whether the same \
     call may succeed later."
);
pyo3::create_exception!(
    overspill,
    ArgumentError,
    PyValueError,
    "An argument is wrong: a read-back tool's (the message tells the model what to change), or \
     a call's (the message names the keyword)."
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

/// A service failure as Python sees it.
pub(crate) fn failure(failure: Failure) -> PyErr {
    if failure.is_model_retry() || failure.type_name == INVALID_INPUT {
        return ArgumentError::new_err(failure.message);
    }
    if failure.type_name == INVALID_CONFIG {
        return ConfigError::new_err(failure.message);
    }
    let (kind, retryable) = (failure.type_name, failure.retryable);
    let raised = StoreError::new_err(failure.message);
    Python::attach(|py| {
        let value = raised.value(py);
        // Plain attributes on a fresh exception instance: setting them cannot fail.
        let _ = value.setattr("kind", kind);
        let _ = value.setattr("retryable", retryable);
    });
    raised
}

/// The `FileNotFoundError` of a handle the store does not have (or the caller may not see).
pub(crate) fn not_found(handle: &str) -> PyErr {
    let handle = handle.to_owned();
    PyFileNotFoundError::new_err(Missing::NotFound { handle }.to_string())
}
