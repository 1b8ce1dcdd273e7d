//! The Python package's tests: agents on Temporal (pydantic-ai, the OpenAI Agents SDK, LangGraph,
//! Deep Agents, Google ADK, Strands) with the `overspill` wheel and the `overspill worker` binary,
//! and the real Python packages (pydantic-ai-slim `TemporalDurability`, pydantic-ai-harness
//! `ToolOutputLimits`).
//!
//! The scenarios live in `tests/python/` (pytest, in the venv where `deploy/test.sh` installs
//! the package's wheel, `.deploy/wheel-venv`, or `$OVERSPILL_PYTHON`); a test here per file
//! runs it against the Temporal dev server and SeaweedFS with the binary cargo just built, and
//! fails with pytest's report when any test does. Needs `OVERSPILL_TEST_S3_URL` and the `AWS_*`
//! variables from `.deploy/seaweedfs.env`.
//!
//! The pydantic-ai suites run twice: on the newest pydantic-ai-harness the package declares
//! (`.deploy/wheel-venv`, deploy/requirements.txt's), and in `lowest::` on the oldest
//! (`.deploy/wheel-venv-lowest`, the package's lower bounds, or `$OVERSPILL_LOWEST_PYTHON`).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::support::suite::run_suite;
use crate::support::temporal::temporal_address;

/// How long one file of the Python suite may take (the External Storage tests move gigabytes, in
/// a few minutes on two loaded cores); a store that refuses every write makes each run wait out
/// its own timeout, and this keeps that failure inside a CI budget.
const TIMEOUT: Duration = Duration::from_secs(1200);

/// The Python the tests run: `$OVERSPILL_PYTHON`, else the wheel venv's (`deploy/lib.sh`).
pub(crate) fn python() -> PathBuf {
    venv_python("OVERSPILL_PYTHON", ".deploy/wheel-venv")
}

/// The Python of the oldest pydantic-ai the package declares: `$OVERSPILL_LOWEST_PYTHON`, else
/// `deploy/lib.sh`'s `ensure_lowest_wheel_venv`'s.
fn lowest_python() -> PathBuf {
    venv_python("OVERSPILL_LOWEST_PYTHON", ".deploy/wheel-venv-lowest")
}

/// `$variable`, else the Python of the venv at `venv` in the checkout.
fn venv_python(variable: &str, venv: &str) -> PathBuf {
    std::env::var_os(variable).map_or_else(
        || crate::root().join(venv).join("bin/python"),
        PathBuf::from,
    )
}

/// One test per file of `tests/python/`, so that cargo runs them beside each other and beside
/// the rest of the suite (each takes from seconds to minutes).
macro_rules! python_suites {
    ($($file:ident),* $(,)?) => {
        $(
            #[test]
            fn $file() {
                run_pytest(&python(), concat!("tests/python/", stringify!($file), ".py"));
            }
        )*

        /// Every `tests/python/test_*.py` has its test above.
        #[test]
        fn every_python_suite_runs() {
            let ours = [$(concat!(stringify!($file), ".py")),*];
            let dir = crate::root().join("tests/python");
            for entry in std::fs::read_dir(&dir).expect("tests/python") {
                let name = entry.expect("an entry").file_name().to_string_lossy().into_owned();
                if name.starts_with("test_") && name.ends_with(".py") {
                    assert!(ours.contains(&name.as_str()), "{name} is in no python_suites! list");
                }
            }
        }
    };
}

python_suites!(
    test_activities_by_name,
    test_at_source,
    test_core,
    test_deepagents,
    test_external_storage,
    test_external_storage_gc,
    test_google_adk,
    test_langchain_quickstarts,
    test_langgraph,
    test_masking,
    test_newcomer,
    test_openai_agents,
    test_openai_agents_quickstart,
    test_overspill_pydantic_ai,
    test_pydantic_ai_e2e,
    test_quickstart,
    test_read_scope,
    test_strands,
    test_wheel,
);

/// The pydantic-ai suites again, on the oldest pydantic-ai-harness and pydantic-ai-slim the
/// package declares (the rest of the suite runs on the newest only).
mod lowest {
    use super::{lowest_python, run_pytest};

    macro_rules! lowest_suites {
        ($($file:ident),* $(,)?) => {
            $(
                #[test]
                fn $file() {
                    run_pytest(&lowest_python(), concat!("tests/python/", stringify!($file), ".py"));
                }
            )*
        };
    }

    lowest_suites!(
        test_at_source,
        test_masking,
        test_newcomer,
        test_overspill_pydantic_ai,
        test_pydantic_ai_e2e,
        test_quickstart,
        test_read_scope,
    );
}

/// Run the pytest file `file` (relative to the checkout) with `python` and fail with pytest's
/// report when any of its tests does, or when it runs none or skips some.
fn run_pytest(python: &std::path::Path, file: &str) {
    let root = crate::root();
    assert!(
        python.exists(),
        "{} is missing: run deploy/test.sh (it installs the package's wheel into .deploy/wheel-venv \
         and .deploy/wheel-venv-lowest)",
        python.display()
    );
    let mut pytest = Command::new(python);
    pytest
        .args(["-m", "pytest", file, "-v", "-p", "no:cacheprovider"])
        .current_dir(root)
        .env("OVERSPILL_BIN", env!("CARGO_BIN_EXE_overspill"))
        .env("TEMPORAL_ADDRESS", temporal_address())
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let (status, report) = run_suite(pytest, TIMEOUT);
    let Some(status) = status else {
        panic!("pytest did not finish within {TIMEOUT:?}:\n{report}");
    };
    assert!(status.success(), "{file} failed:\n{report}");
    assert!(
        report.contains(" passed") && !report.contains(" skipped"),
        "pytest ran no test or skipped some:\n{report}"
    );
}
