//! A pydantic-ai agent on Temporal delegating its spills and summaries to the `overspill worker`
//! binary, with the real Python packages (pydantic-ai-slim 2.62 `TemporalDurability`,
//! pydantic-ai-harness 0.62 `ToolOutputLimits`, `workflows/python`'s `OverspillStore`).
//!
//! The scenario lives in `tests/python/` (pytest, in the project venv that `deploy/test.sh`
//! installs); this test runs it against the Temporal dev server and SeaweedFS with the binary
//! cargo just built, and fails with pytest's report when any step does. Needs
//! `OVERSPILL_TEST_S3_URL` and the `AWS_*` variables from `.deploy/seaweedfs.env`.

use std::path::Path;
use std::process::Command;

use crate::temporal::temporal_address;

#[test]
fn pydantic_ai_agent_delegates_spills_and_summaries_to_overspill() {
    let root = env!("CARGO_MANIFEST_DIR");
    let python = Path::new(root).join(".deploy/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run deploy/test.sh (it installs deploy/requirements.txt into .deploy/venv)",
        python.display()
    );
    let output = Command::new(&python)
        .args(["-m", "pytest", "tests/python", "-v", "-p", "no:cacheprovider"])
        .current_dir(root)
        .env("OVERSPILL_BIN", env!("CARGO_BIN_EXE_overspill"))
        .env("TEMPORAL_ADDRESS", temporal_address())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run pytest in the project venv");
    let report = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "the pydantic-ai end-to-end tests failed:\n{report}");
    assert!(
        report.contains(" passed") && !report.contains(" skipped"),
        "pytest ran no test or skipped some:\n{report}"
    );
}
