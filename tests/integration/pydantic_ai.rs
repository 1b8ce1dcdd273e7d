//! A pydantic-ai agent on Temporal delegating its spills and summaries to the `overspill worker`
//! binary, with the real Python packages (pydantic-ai-slim 2.62 `TemporalDurability`,
//! pydantic-ai-harness 0.62 `ToolOutputLimits`, `workflows/python`'s `OverspillStore`).
//!
//! The scenarios live in `tests/python/` (pytest, in the venv where `deploy/test.sh` installs
//! the package's wheel, `.deploy/wheel-venv`, or `$OVERSPILL_PYTHON`); this test runs every file there against the Temporal dev server and SeaweedFS
//! with the binary cargo just built, and fails with pytest's report when any test does. Needs
//! `OVERSPILL_TEST_S3_URL` and the `AWS_*` variables from `.deploy/seaweedfs.env`.

use std::io::Read as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::temporal::temporal_address;

/// How long the whole Python suite may take: it needs under six minutes on two loaded cores (the
/// External Storage tests move gigabytes); a store that refuses every write makes each run wait
/// out its own timeout, and this keeps that failure inside a CI budget.
const TIMEOUT: Duration = Duration::from_secs(1200);

/// The Python the tests run: `$OVERSPILL_PYTHON`, else the wheel venv's (`deploy/lib.sh`).
pub(crate) fn python() -> PathBuf {
    std::env::var_os("OVERSPILL_PYTHON").map_or_else(
        || crate::root().join(".deploy/wheel-venv/bin/python"),
        PathBuf::from,
    )
}

#[test]
fn pydantic_ai_agent_delegates_spills_and_summaries_to_overspill() {
    let root = crate::root();
    let python = python();
    assert!(
        python.exists(),
        "{} is missing: run deploy/test.sh (it installs the package's wheel into .deploy/wheel-venv)",
        python.display()
    );
    let log = tempfile::NamedTempFile::new().expect("a temp file for pytest's output");
    let mut pytest = Command::new(&python)
        .args([
            "-m",
            "pytest",
            "tests/python",
            "-v",
            "-p",
            "no:cacheprovider",
        ])
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
    assert!(
        status.success(),
        "the pydantic-ai end-to-end tests failed:\n{report}"
    );
    assert!(
        report.contains(" passed") && !report.contains(" skipped"),
        "pytest ran no test or skipped some:\n{report}"
    );
}
