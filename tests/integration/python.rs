//! The Python package's tests: agents on Temporal (pydantic-ai, the OpenAI Agents SDK, Google ADK,
//! Strands) with the `overspill` wheel and the `overspill worker` binary, and the real Python
//! packages (pydantic-ai-slim 2.62 `TemporalDurability`, pydantic-ai-harness 0.62 `ToolOutputLimits`).
//!
//! The scenarios live in `tests/python/` (pytest, in the venv where `deploy/test.sh` installs
//! the package's wheel, `.deploy/wheel-venv`, or `$OVERSPILL_PYTHON`); a test here per file
//! runs it against the Temporal dev server and SeaweedFS with the binary cargo just built, and
//! fails with pytest's report when any test does. Needs `OVERSPILL_TEST_S3_URL` and the `AWS_*`
//! variables from `.deploy/seaweedfs.env`.

use std::io::Read as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::temporal::temporal_address;

/// How long one file of the Python suite may take (the External Storage tests move gigabytes, in
/// a few minutes on two loaded cores); a store that refuses every write makes each run wait out
/// its own timeout, and this keeps that failure inside a CI budget.
const TIMEOUT: Duration = Duration::from_secs(1200);

/// The Python the tests run: `$OVERSPILL_PYTHON`, else the wheel venv's (`deploy/lib.sh`).
pub(crate) fn python() -> PathBuf {
    std::env::var_os("OVERSPILL_PYTHON").map_or_else(
        || crate::root().join(".deploy/wheel-venv/bin/python"),
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
                run_pytest(concat!("tests/python/", stringify!($file), ".py"));
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
    test_external_storage,
    test_external_storage_gc,
    test_google_adk,
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

/// Run the pytest file `file` (relative to the checkout) and fail with pytest's report when any
/// of its tests does, or when it runs none or skips some.
fn run_pytest(file: &str) {
    let root = crate::root();
    let python = python();
    assert!(
        python.exists(),
        "{} is missing: run deploy/test.sh (it installs the package's wheel into .deploy/wheel-venv)",
        python.display()
    );
    let log = tempfile::NamedTempFile::new().expect("a temp file for pytest's output");
    let mut pytest = Command::new(&python)
        .args(["-m", "pytest", file, "-v", "-p", "no:cacheprovider"])
        .current_dir(root)
        .env("OVERSPILL_BIN", env!("CARGO_BIN_EXE_overspill"))
        .env("TEMPORAL_ADDRESS", temporal_address())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(log.reopen().expect("reopen pytest's log"))
        .stderr(log.reopen().expect("reopen pytest's log"))
        .spawn()
        .expect("run pytest in the project venv");
    // Every wait inside the suite is bounded; this backstop keeps a hang from stalling CI.
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = pytest.try_wait().expect("wait for pytest") {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = pytest.kill();
            let _ = pytest.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut report = String::new();
    log.reopen()
        .and_then(|mut file| file.read_to_string(&mut report))
        .expect("read pytest's log");
    let Some(status) = status else {
        panic!("pytest did not finish within {TIMEOUT:?}:\n{report}");
    };
    assert!(status.success(), "{file} failed:\n{report}");
    assert!(
        report.contains(" passed") && !report.contains(" skipped"),
        "pytest ran no test or skipped some:\n{report}"
    );
}
