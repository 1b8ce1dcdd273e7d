//! `overspill._native`: Overspill's engine for Python.

use pyo3::prelude::*;

/// The module.
#[pymodule]
fn _native(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
