"""`overspill_tools()`: `read_tool_result`, `grep_tool_result`, `query_tool_result` and
`list_tool_results` for an OpenAI agent on Temporal, run by the Overspill worker."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from agents import FunctionTool, ModelBehaviorError, RunContextWrapper, function_tool
from agents.tool import default_tool_error_function
from temporalio import workflow

from overspill.openai_agents._worker import ModelRetry, OverspillWorker, default_task_queue

READ_ACTIVITY = 'tool_output_limits.read_tool_result'
"""The Overspill activity that pages a spill."""

GREP_ACTIVITY = 'tool_output_limits.grep_tool_result'
"""The Overspill activity that searches a spill."""

QUERY_ACTIVITY = 'tool_output_limits.query_tool_result'
"""The Overspill activity that runs a jq filter over a spill."""

LIST_ACTIVITY = 'tool_output_limits.list_tool_results'
"""The Overspill activity that lists a run's spills."""


def overspill_tools(
    *,
    task_queue: str | None = None,
    timeout: timedelta = timedelta(minutes=1),
    start_timeout: timedelta = timedelta(seconds=10),
) -> list[FunctionTool]:
    """The read-back tools, for an agent's `tools`: `Agent(..., tools=[*my_tools, *overspill_tools()])`.

    Each runs in workflow code and executes the Overspill worker's activity of the same name
    (`tool_output_limits.read_tool_result`, `.grep_tool_result`, `.query_tool_result`,
    `.list_tool_results`) on `task_queue` (default `OVERSPILL_TASK_QUEUE`, else
    `tool-output-limits`): the worker reads the spill from its store, and only the page it
    returns (at most 50,000 chars) enters the workflow history, where a replay takes it from. The
    model sees the worker's text, byte for byte. A bad argument (the worker's `ModelRetry`) goes
    back to the model as the tool's error, as the SDK reports a tool's failure; any other failure
    (no worker polls the queue within `start_timeout`, a store that cannot be read) fails the run
    with its message. `timeout` bounds each call, retries included.

    The spills of a run are listed by the workflow's run id, the run segment of the handles
    `OverspillInterceptor` writes for `activity_as_tool` tools.
    """
    worker = OverspillWorker(task_queue or default_task_queue(), timeout, start_timeout)

    async def read_tool_result(
        handle: str, offset: int = 0, limit: int = 200, from_end: bool = False, pattern: str | None = None
    ) -> str:
        """Read a slice of a spilled tool result.

        Args:
            handle: The handle from the overflowed tool return.
            offset: Number of matching lines to skip from the start (or end). Must be >= 0.
            limit: Maximum number of lines to return (>= 1; clamped to a built-in cap).
            from_end: Count `offset`/`limit` from the end of the result.
            pattern: Optional literal substring; only lines containing it are returned.
        """
        request = {'handle': handle, 'offset': offset, 'limit': limit, 'from_end': from_end, 'pattern': pattern}
        return await _page(worker, READ_ACTIVITY, request, f'read {handle}')

    async def grep_tool_result(
        handle: str,
        pattern: str,
        regex: bool = False,
        ignore_case: bool = False,
        context: int = 0,
        offset: int = 0,
        limit: int = 50,
        from_end: bool = False,
    ) -> str:
        """Search a spilled tool result for lines containing `pattern`, like `grep -n -C`.

        Returns a header with the total number of matching lines, then the matches as
        `N:line` (N = 1-based line number) with `context` lines around each as `N-line`,
        groups separated by `--`, and a note with the `offset` of the next page when more
        matches exist. Use it to find where something is in a large result (errors, a name,
        an id); then use `read_tool_result(handle, offset=N-1)` to read the lines around line N.
        `read_tool_result`'s own `pattern` only filters lines, without line numbers or context.

        Args:
            handle: The handle from a "[Tool output too large ... stored to handle ...]" marker.
            pattern: Text a line must contain (a regular expression when `regex` is true).
            regex: Treat `pattern` as a regex (Rust `regex` syntax: no look-around or backreferences).
            ignore_case: Match regardless of letter case.
            context: Lines to show before and after each match (0-20).
            offset: Matches to skip (from the first, or from the last with `from_end`).
            limit: Matches to show (1-1000).
            from_end: Count `offset` back from the last match (the page stays in file order).
        """
        request = {
            'handle': handle,
            'pattern': pattern,
            'regex': regex,
            'ignore_case': ignore_case,
            'context': context,
            'offset': offset,
            'limit': limit,
            'from_end': from_end,
        }
        return await _page(worker, GREP_ACTIVITY, request, f'grep {handle}')

    async def query_tool_result(handle: str, filter: str, offset: int = 0, limit: int = 50) -> str:
        """Run a jq filter over a spilled tool result that is JSON (one document, or JSON Lines).

        The filter runs on each JSON value of the result (each line of JSON Lines); its results
        are shown one compact JSON value per line, under a header counting them, with a note
        giving the `offset` of the next page when more exist. Use it to pull fields out of a
        large JSON result, e.g. `.items[] | select(.status == "failed") | .id`, or to see its
        shape with `keys` or `.[0]`. A result longer than 10,000 chars is cut with a marker.

        Args:
            handle: The handle from a "[Tool output too large ... stored to handle ...]" marker.
            filter: A jq filter (jq syntax, as implemented by jaq).
            offset: Results to skip.
            limit: Results to show (1-1000).
        """
        request = {'handle': handle, 'filter': filter, 'offset': offset, 'limit': limit}
        return await _page(worker, QUERY_ACTIVITY, request, f'query {handle}')

    async def list_tool_results(limit: int = 50) -> str:
        """List the tool results spilled in this run, newest first.

        For each: its handle, the tool that produced it, its size in chars and lines, how long ago
        it was written and its first line. Use it to find the handle of an earlier result whose
        marker is no longer in view; then search it with `grep_tool_result` or page through it
        with `read_tool_result`.

        Args:
            limit: Spills to show, newest first (1-1000).
        """
        run_id = _run_id()
        request = {'run_id': run_id, 'limit': limit, 'tool_names': {}}
        return await _page(worker, LIST_ACTIVITY, request, f'list spills of {run_id}')

    return [
        function_tool(tool, failure_error_function=_model_retry_to_model)
        for tool in (read_tool_result, grep_tool_result, query_tool_result, list_tool_results)
    ]


async def _page(worker: OverspillWorker, name: str, request: dict[str, Any], summary: str) -> str:
    """The page activity `name` returns for `request`."""
    if not workflow.in_workflow():
        raise RuntimeError(f'{name.rsplit(".", 1)[-1]} runs in a Temporal workflow (an agent on OpenAIAgentsPlugin)')
    text = await worker.run(name, request, summary)
    if not isinstance(text, str):
        raise TypeError(f'{name} returned {type(text).__name__}, not the page text')
    return text


def _run_id() -> str:
    """The run segment of this run's handles: the workflow's run id."""
    return workflow.info().run_id


def _model_retry_to_model(ctx: RunContextWrapper[Any], error: Exception) -> str:
    """The model's own mistakes go back to it as the SDK's tool error text: arguments the worker
    refused (its `ModelRetry`) or the SDK could not parse. Anything else fails the run: a store or
    a worker that is not there does not heal by the model calling again."""
    if isinstance(error, (ModelRetry, ModelBehaviorError)):
        return default_tool_error_function(ctx, error)
    raise error
