//! The TypeScript package's tests (`workflows/typescript`, `@overspill/temporal-ai-sdk`): an AI SDK
//! agent on Temporal (`@temporalio/ai-sdk`) with the package's plugin, read-back tools and masking,
//! the `overspill worker` binary cargo just built, SeaweedFS, and the package's native addon.
//!
//! The scenarios live in `workflows/typescript/test/` (node's test runner, compiled by tsc into
//! `build/test/` by `deploy/lib.sh`'s `ensure_typescript`, which `deploy/test.sh` runs first: Node 22
//! in `.deploy/node`, the npm dependencies, the addon built by @napi-rs/cli); a test here per file
//! runs it, so that cargo runs them beside the rest of the suite. Needs `OVERSPILL_TEST_S3_URL` and
//! the `AWS_*` variables from `.deploy/seaweedfs.env`.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::support::suite::run_suite;
use crate::support::temporal::temporal_address;

/// How long one file of the suite may take; every wait inside it is bounded, and this keeps a hang
/// inside a CI budget.
const TIMEOUT: Duration = Duration::from_secs(600);

/// The package's directory.
fn package() -> PathBuf {
    crate::root().join("workflows/typescript")
}

/// The Node.js the tests run on: `.deploy/node`'s (`deploy/lib.sh`'s `ensure_node`).
fn node() -> PathBuf {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    crate::root().join(format!(
        ".deploy/node/node_modules/node-linux-{arch}/bin/node"
    ))
}

/// One test per file of `workflows/typescript/test/`, run from its compiled form.
macro_rules! typescript_suites {
    ($($file:ident => $name:literal),* $(,)?) => {
        $(
            #[test]
            fn $file() {
                run_node_tests($name);
            }
        )*

        /// Every `*.test.ts` has its test above.
        #[test]
        fn every_typescript_suite_runs() {
            let ours = [$($name),*];
            for entry in std::fs::read_dir(package().join("test")).expect("workflows/typescript/test") {
                let name = entry.expect("an entry").file_name().to_string_lossy().into_owned();
                if let Some(stem) = name.strip_suffix(".test.ts") {
                    assert!(ours.contains(&stem), "{name} is in no typescript_suites! list");
                }
            }
        }
    };
}

typescript_suites!(
    agent => "agent",
    engine => "engine",
    quickstart => "quickstart",
);

/// Run `build/test/{name}.test.js` with node's test runner and fail with its report when any test
/// fails, or when it runs none.
fn run_node_tests(name: &str) {
    let (node, package) = (node(), package());
    let compiled = package.join(format!("build/test/{name}.test.js"));
    assert!(
        node.exists() && compiled.exists(),
        "{} or {} is missing: run deploy/test.sh (or `source deploy/lib.sh && ensure_typescript`)",
        node.display(),
        compiled.display()
    );
    let mut tests = Command::new(&node);
    tests
        .args(["--test", "--test-reporter=tap"])
        .arg(&compiled)
        .current_dir(&package)
        .env("OVERSPILL_BIN", env!("CARGO_BIN_EXE_overspill"))
        .env("OVERSPILL_PYTHON", crate::python::python())
        .env("TEMPORAL_ADDRESS", temporal_address());
    let (status, report) = run_suite(tests, TIMEOUT);
    let Some(status) = status else {
        panic!("{name}.test.js did not finish within {TIMEOUT:?}:\n{report}");
    };
    assert!(status.success(), "{name}.test.js failed:\n{report}");
    assert!(
        report.contains("\n# fail 0")
            && !report.contains("\n# pass 0")
            && report.contains("\n# skipped 0"),
        "node ran no test, or skipped some:\n{report}"
    );
}
