//! The names other processes call Overspill by: the activities' names and the default task queue,
//! declared once for the worker, workflow code and the engine. The Python package takes the
//! read-back tools' activity names from the engine's tool table (`overspill::tools`, built from
//! these); its own literals (the task queue, spill, summarize) are checked against these by a test.

/// The reduce activity's name.
pub const REDUCE: &str = "tool_output_limits.reduce";
/// The spill activity's name.
pub const SPILL: &str = "tool_output_limits.spill";
/// The summarize activity's name.
pub const SUMMARIZE: &str = "tool_output_limits.summarize";
/// The read-back activity's name (also the read-back tool's kind, which is never reduced).
pub const READ_TOOL_RESULT: &str = "tool_output_limits.read_tool_result";
/// The grep activity's name.
pub const GREP_TOOL_RESULT: &str = "tool_output_limits.grep_tool_result";
/// The jq query activity's name.
pub const QUERY_TOOL_RESULT: &str = "tool_output_limits.query_tool_result";
/// The listing activity's name.
pub const LIST_TOOL_RESULTS: &str = "tool_output_limits.list_tool_results";
/// The default task queue.
pub const DEFAULT_TASK_QUEUE: &str = "tool-output-limits";

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `NAME = '…'` the Python package declares for an activity or the task queue is one
    /// of the names above, and the package declares the ones it calls that are not the read-back
    /// tools' (those come from the engine's tool table).
    #[test]
    fn the_python_package_uses_these_names() {
        let ours = [
            REDUCE,
            SPILL,
            SUMMARIZE,
            READ_TOOL_RESULT,
            GREP_TOOL_RESULT,
            QUERY_TOOL_RESULT,
            LIST_TOOL_RESULTS,
            DEFAULT_TASK_QUEUE,
        ];
        let package = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/workflows/python/python/overspill"
        );
        let mut declared = Vec::new();
        let mut sources = Vec::new();
        let mut folders = vec![std::path::PathBuf::from(package)];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(folder).expect("the Python package") {
                let path = entry.expect("a directory entry").path();
                if path.is_dir() {
                    folders.push(path);
                } else if path.extension().is_some_and(|e| e == "py") {
                    sources.push(path);
                }
            }
        }
        for path in sources {
            let source = std::fs::read_to_string(&path).expect("a Python source");
            for line in source.lines() {
                let Some((name, value)) = line.split_once(" = '") else {
                    continue;
                };
                let value = value.trim_end().trim_end_matches('\'');
                let constant = name.chars().all(|c| c.is_ascii_uppercase() || c == '_');
                if constant
                    && (value.starts_with("tool_output_limits.") || name.ends_with("_QUEUE"))
                {
                    assert!(
                        ours.contains(&value),
                        "{}: {name} = {value:?}",
                        path.display()
                    );
                    declared.push(value.to_owned());
                }
            }
        }
        for called in [SPILL, SUMMARIZE, DEFAULT_TASK_QUEUE] {
            assert!(
                declared.iter().any(|d| d == called),
                "{called} not declared"
            );
        }
    }
}
