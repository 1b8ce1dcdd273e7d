//! `Store`: spills by URL, written and read exactly as the worker writes and reads them.

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use overspill::api::{GrepRequest, ListRequest, QueryRequest, ReadRequest};
use overspill::limits::SpillStore as _;
use overspill::query::{self, DEFAULT_QUERY_MEMORY, QueryPlace, QueryRunner};
use overspill::read;
use overspill::store::{ReadScope, Reader, Scope};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use pythonize::depythonize;
use serde::de::DeserializeOwned;

use crate::errors;

/// Who reads or writes: `None`, an operator (sees every spill, writes spills of no workflow), or
/// `(namespace, workflow_id)`, an activity of that workflow (`workflow_id` `None` or empty for a
/// standalone activity, which sees no scoped spill).
pub(crate) type Caller = Option<(String, Option<String>)>;

/// A spill store: `file:///path`, `s3://bucket/prefix`, `gs://…`, `az://…` or `memory://`
/// (`None`: the local default, `file://$TMPDIR/overspill-<euid>`), as `overspill worker --store`
/// takes it. Reads inside an activity see the spills `read_scope` admits for its workflow
/// (`workflow`, `namespace` or `any`); any other reads as a missing one.
#[pyclass(frozen, module = "overspill._native")]
pub(crate) struct Store {
    pub(crate) inner: Arc<overspill::store::Store>,
    read_scope: ReadScope,
    queries: Option<QueryRunner>,
}

impl Store {
    /// The awaitable of `page`'s text, as `caller` may see the spill.
    fn page<'py>(
        &self,
        py: Python<'py>,
        page: Page,
        caller: Caller,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (store, reader) = (self.inner.clone(), self.reader(&caller));
        run(py, async move {
            let spills = store.read_as(&reader);
            errors::page(match page {
                Page::Read(request) => read::read_tool_result(&spills, &request).await,
                Page::Grep(request) => read::grep_tool_result(&spills, &request).await,
                Page::Query(request, runner) => {
                    query::query_tool_result_with(&spills, &request, &runner).await
                }
                Page::List(request) => (store.list_run(&request, &reader).await)
                    .map(|listing| listing.render(std::time::SystemTime::now())),
            })
        })
    }

    /// How `caller` reads and writes here.
    pub(crate) fn reader(&self, caller: &Caller) -> Reader {
        match caller {
            None => Reader::operator(),
            Some((namespace, workflow_id)) => {
                let scope = (workflow_id.as_deref()).and_then(|id| Scope::new(namespace, id));
                Reader::new(self.read_scope, scope)
            }
        }
    }
}

#[pymethods]
impl Store {
    /// Open the store at `url`. `query_sandbox` is the executable each `query_tool_result` runs
    /// in, bounded in memory and time (default: the package's `overspill-query-sandbox` script
    /// beside this Python, else on `PATH`; the `overspill` binary serves too): without one,
    /// queries are refused rather than run unbounded in this process.
    #[new]
    #[pyo3(signature = (url=None, *, read_scope="workflow", query_sandbox=None))]
    fn new(
        py: Python<'_>,
        url: Option<&str>,
        read_scope: &str,
        query_sandbox: Option<PathBuf>,
    ) -> PyResult<Self> {
        let read_scope = read_scope.parse().map_err(PyValueError::new_err)?;
        let inner = overspill::store::Store::open(url).map_err(errors::store_error)?;
        let query_sandbox = match query_sandbox {
            Some(exe) => Some(exe),
            None => default_sandbox(py)?,
        };
        let queries = query_sandbox.map(|exe| QueryRunner {
            place: QueryPlace::Sandboxed {
                exe,
                memory: DEFAULT_QUERY_MEMORY,
            },
            deadline: query::QUERY_DEADLINE,
        });
        Ok(Self {
            inner: Arc::new(inner),
            read_scope,
            queries,
        })
    }

    /// The store's URL, as the worker shows it (no query parameters, no password).
    #[getter]
    fn url(&self) -> &str {
        self.inner.url()
    }

    /// The read scope reads inside an activity have (`workflow`, `namespace` or `any`).
    #[getter]
    fn read_scope(&self) -> String {
        self.read_scope.to_string()
    }

    /// Check that the store can be used: a local root is created `0700` (or checked), a bucket
    /// answers a listing.
    fn check<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let store = self.inner.clone();
        run(py, async move {
            store.check().await.map_err(errors::store_error)
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
        let (store, writer) = (self.inner.clone(), self.reader(&caller));
        run(py, async move {
            let tool = tool_name.unwrap_or_default();
            let spills = store.for_tool(&tool, &writer);
            spills
                .write(&key, Bytes::from(data))
                .await
                .map_err(errors::store_error)
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
        let (store, reader) = (self.inner.clone(), self.reader(&caller));
        run(py, async move {
            let data = store
                .read_as(&reader)
                .read(&handle)
                .await
                .map_err(errors::store_error)?;
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
        let Some(runner) = self.queries.clone() else {
            return Err(PyRuntimeError::new_err(
                "query_tool_result runs a model's jq filter only in a sandbox bounded in memory: \
                 give Store(query_sandbox=…) the `overspill-query-sandbox` executable",
            ));
        };
        self.page(py, Page::Query(from_dict(request)?, runner), caller)
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
            self.inner.url(),
            self.read_scope.to_string()
        )
    }
}

/// A read-back tool's request.
enum Page {
    Read(ReadRequest),
    Grep(GrepRequest),
    Query(QueryRequest, QueryRunner),
    List(ListRequest),
}

/// The executable name of the package's query sandbox (`[project.scripts]`).
const SANDBOX_SCRIPT: &str = "overspill-query-sandbox";

/// The package's query sandbox: in this Python's scripts directory (a virtual environment's
/// `bin/`), else on `PATH`.
fn default_sandbox(py: Python<'_>) -> PyResult<Option<PathBuf>> {
    let scripts: PathBuf = (py
        .import("sysconfig")?
        .call_method1("get_path", ("scripts",))?)
    .extract()?;
    let beside = scripts.join(SANDBOX_SCRIPT);
    if beside.is_file() {
        return Ok(Some(beside));
    }
    py.import("shutil")?
        .call_method1("which", (SANDBOX_SCRIPT,))?
        .extract()
}

/// The query sandbox's side: read one query and the spill's bytes on stdin, bound this
/// process's memory, and answer on stdout (the `overspill-query-sandbox` script's body).
#[pyfunction]
pub(crate) fn serve_query_sandbox() -> PyResult<()> {
    query::serve_sandbox().map_err(|e| PyRuntimeError::new_err(e.to_string()))
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
