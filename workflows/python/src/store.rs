//! `Store`: spills by URL, written and read exactly as the worker writes and reads them, through
//! the engine's service layer.

use std::path::PathBuf;
use std::sync::Arc;

use overspill::api::{GrepRequest, ListRequest, QueryRequest, ReadRequest};
use overspill::query::{DEFAULT_QUERY_MEMORY, QueryPlace, QueryRunner};
use overspill::service::{Caller as ServiceCaller, Failure, Service, Surface};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use pythonize::depythonize;
use serde::de::DeserializeOwned;

use crate::errors;

/// Who reads or writes: `None`, an operator (sees every spill, writes spills of no workflow), or
/// `(namespace, workflow_id)`, an activity of that workflow (`workflow_id` `None` or empty for a
/// standalone activity, which sees no scoped spill).
pub(crate) type Caller = Option<(String, Option<String>)>;

/// The service's caller for a Python `caller`.
pub(crate) fn caller(caller: Caller) -> ServiceCaller {
    match caller {
        None => ServiceCaller::Operator,
        Some((namespace, workflow_id)) => {
            ServiceCaller::activity(&namespace, workflow_id.as_deref(), None)
        }
    }
}

/// A spill store: `file:///path`, `s3://bucket/prefix`, `gs://…`, `az://…` or `memory://`
/// (`None`: the local default, `file://$TMPDIR/overspill-<euid>`), as `overspill worker --store`
/// takes it. Reads inside an activity see the spills `read_scope` admits for its workflow
/// (`workflow`, `namespace` or `any`); any other reads as a missing one.
#[pyclass(frozen, module = "overspill._native")]
pub(crate) struct Store {
    pub(crate) service: Arc<Service>,
}

impl Store {
    /// The awaitable of `page`'s text, as `caller` may see the spill.
    fn page<'py>(
        &self,
        py: Python<'py>,
        page: Page,
        caller: Caller,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (service, caller) = (self.service.clone(), self::caller(caller));
        run(py, async move {
            let answer = match page {
                Page::Read(request) => service.read_tool_result(&request, &caller).await,
                Page::Grep(request) => service.grep_tool_result(&request, &caller).await,
                Page::Query(request) => service.query_tool_result(&request, &caller).await,
                Page::List(request) => service.list_tool_results(request, &caller).await,
            };
            answer.map(|answer| answer.text).map_err(errors::failure)
        })
    }
}

/// A read-back tool's request.
enum Page {
    Read(ReadRequest),
    Grep(GrepRequest),
    Query(QueryRequest),
    List(ListRequest),
}

#[pymethods]
impl Store {
    /// Open the store at `url`. `query_sandbox` is the executable each `query_tool_result` runs
    /// in, as `overspill query-sandbox`, bounded in memory and time (default: the `overspill`
    /// command the `overspill-cli` package installs beside this Python, else on `PATH`): without
    /// one, queries are refused rather than run unbounded in this process.
    #[new]
    #[pyo3(signature = (url=None, *, read_scope="workflow", query_sandbox=None))]
    fn new(
        py: Python<'_>,
        url: Option<&str>,
        read_scope: &str,
        query_sandbox: Option<PathBuf>,
    ) -> PyResult<Self> {
        let read_scope = read_scope.parse().map_err(PyValueError::new_err)?;
        let store = overspill::store::Store::open(url)
            .map_err(|e| errors::failure(Failure::store(Surface::Python, &e)))?;
        let query_sandbox = match query_sandbox {
            Some(exe) => Some(exe),
            None => default_sandbox(py)?,
        };
        let queries = query_sandbox.map(|exe| QueryRunner::sandboxed(exe, DEFAULT_QUERY_MEMORY));
        let service = Service::new(Arc::new(store), Surface::Python)
            .with_read_scope(read_scope)
            .with_query_runner(queries);
        Ok(Self {
            service: Arc::new(service),
        })
    }

    /// The store's URL, as the worker shows it (no query parameters, no password).
    #[getter]
    fn url(&self) -> &str {
        self.service.store().url()
    }

    /// The read scope reads inside an activity have (`workflow`, `namespace` or `any`).
    #[getter]
    fn read_scope(&self) -> String {
        self.service.read_scope().to_string()
    }

    /// The executable queries run in, if any (`None`: queries are refused).
    #[getter]
    fn query_sandbox(&self) -> Option<String> {
        match &self.service.query_runner()?.place {
            QueryPlace::Sandboxed { exe, .. } => Some(exe.display().to_string()),
            QueryPlace::InProcess => None,
        }
    }

    /// Check that the store can be used: a local root is created `0700` (or checked), a bucket
    /// answers a listing.
    fn check<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let service = self.service.clone();
        run(py, async move {
            let checked = service.store().check().await;
            checked.map_err(|e| errors::failure(Failure::store(Surface::Python, &e)))
        })
    }

    /// Store `data` under `key` (an overwrite) with its line index and the facts of its writer
    /// and tool; returns the handle.
    #[pyo3(signature = (key, data, *, tool_name=None, caller=None))]
    fn write<'py>(
        &self,
        py: Python<'py>,
        key: String,
        data: Vec<u8>,
        tool_name: Option<String>,
        caller: Caller,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (service, caller) = (self.service.clone(), self::caller(caller));
        run(py, async move {
            let tool = tool_name.unwrap_or_default();
            let written = service.write(&key, data.into(), &tool, &caller).await;
            written.map_err(errors::failure)
        })
    }

    /// The whole payload of `handle`, as `caller` may see it (`FileNotFoundError` otherwise).
    #[pyo3(signature = (handle, *, caller=None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        handle: String,
        caller: Caller,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (service, caller) = (self.service.clone(), self::caller(caller));
        run(py, async move {
            let data = service.read(&handle, &caller).await;
            let data = data.map_err(errors::failure)?;
            let data = data.ok_or_else(|| errors::not_found(&handle))?;
            Ok(Python::attach(|py| PyBytes::new(py, &data).unbind()))
        })
    }

    /// `read_tool_result`'s page for `request` (`{'handle': …, 'offset': …, 'limit': …,
    /// 'from_end': …, 'pattern': …}`).
    #[pyo3(signature = (request, *, caller=None))]
    fn read_tool_result<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyDict>,
        caller: Caller,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.page(py, Page::Read(from_dict(request)?), caller)
    }

    /// `grep_tool_result`'s page for `request` (`{'handle': …, 'pattern': …, 'regex': …,
    /// 'ignore_case': …, 'context': …, 'offset': …, 'limit': …, 'from_end': …}`).
    #[pyo3(signature = (request, *, caller=None))]
    fn grep_tool_result<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyDict>,
        caller: Caller,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.page(py, Page::Grep(from_dict(request)?), caller)
    }

    /// `query_tool_result`'s page for `request` (`{'handle': …, 'filter': …, 'offset': …,
    /// 'limit': …}`), the filter run in the query sandbox.
    #[pyo3(signature = (request, *, caller=None))]
    fn query_tool_result<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyDict>,
        caller: Caller,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.page(py, Page::Query(from_dict(request)?), caller)
    }

    /// `list_tool_results`' page for `request` (`{'run_id': …, 'limit': …, 'tool_names': …}`):
    /// the run's spills `caller` may see, newest first.
    #[pyo3(signature = (request, *, caller=None))]
    fn list_tool_results<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyDict>,
        caller: Caller,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.page(py, Page::List(from_dict(request)?), caller)
    }

    fn __repr__(&self) -> String {
        format!(
            "Store({:?}, read_scope={:?})",
            self.service.store().url(),
            self.service.read_scope().to_string()
        )
    }
}

/// The `overspill` command, whose `query-sandbox` runs each query (the `overspill-cli`
/// package's script).
const SANDBOX_COMMAND: &str = "overspill";

/// The `overspill` command: in this Python's scripts directory (a virtual environment's `bin/`),
/// else on `PATH`.
fn default_sandbox(py: Python<'_>) -> PyResult<Option<PathBuf>> {
    let scripts: PathBuf = (py
        .import("sysconfig")?
        .call_method1("get_path", ("scripts",))?)
    .extract()?;
    let beside = scripts.join(SANDBOX_COMMAND);
    if beside.is_file() {
        return Ok(Some(beside));
    }
    py.import("shutil")?
        .call_method1("which", (SANDBOX_COMMAND,))?
        .extract()
}

/// `future` as an awaitable of the running event loop, run on the module's Tokio runtime.
pub(crate) fn run<'py, T>(
    py: Python<'py>,
    future: impl Future<Output = PyResult<T>> + Send + 'static,
) -> PyResult<Bound<'py, PyAny>>
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    pyo3_async_runtimes::tokio::future_into_py(py, future)
}

/// A request dict as the activity's JSON request would deserialize (unknown fields refused).
fn from_dict<T: DeserializeOwned>(request: &Bound<'_, PyDict>) -> PyResult<T> {
    depythonize(request.as_any()).map_err(|e| errors::ArgumentError::new_err(e.to_string()))
}
