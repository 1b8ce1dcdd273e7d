"""`OverspillToolset`: `grep_tool_result`, `query_tool_result` and `list_tool_results` for a pydantic-ai agent whose
spills go to Overspill (`OverspillStore`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from pydantic_ai import FunctionToolset, ModelRetry, RunContext, Tool
from pydantic_ai.messages import ModelResponse, ToolCallPart
from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from overspill.pydantic_ai._activity import UnavailableError, execute_activity
from overspill._caller import current_caller
from overspill.pydantic_ai._store import OverspillStore

GREP_ACTIVITY = 'tool_output_limits.grep_tool_result'
"""The Overspill activity that searches a spill."""

QUERY_ACTIVITY = 'tool_output_limits.query_tool_result'
"""The Overspill activity that runs a jq filter over a spill."""

LIST_ACTIVITY = 'tool_output_limits.list_tool_results'
"""The Overspill activity that lists a run's spills."""

_NO_ACTIVITY: dict[str, Any] = {'temporal': False}
"""Tool metadata that keeps a tool in workflow code under `TemporalDurability`: the tool itself
runs the Overspill activity, so only the bounded page enters the history."""


class OverspillToolset(FunctionToolset[Any]):
    """Adds `grep_tool_result` and `list_tool_results` to an agent that spills through `store`.

    ```python
    store = OverspillStore('s3://spills')
    agent = Agent(model, capabilities=[ToolOutputLimits(store=store), TemporalDurability()],
                  toolsets=[OverspillToolset(store)])
    ```

    On Temporal, both tools run in workflow code and execute the Overspill worker's
    `tool_output_limits.grep_tool_result` / `tool_output_limits.list_tool_results` activities on
    `store.task_queue`: the worker streams the spill, and only the page (at most 50,000 chars)
    enters the workflow history; a replay takes it from there. Outside a workflow they run the
    same engine in this process (`store.engine`), with the same text. A bad argument or pattern is
    a `ModelRetry` with the worker's message.

    When no Overspill worker polls `store.task_queue`, the run ends (`store.on_unavailable`, see
    `OverspillStore`); with `on_unavailable='fallback'` the model is told in one line that the
    tool is unavailable in this run, and the agent logs one WARNING line.
    """

    def __init__(
        self, store: OverspillStore, *, activity_timeout: timedelta = timedelta(minutes=1), id: str = 'overspill'
    ) -> None:
        """`activity_timeout` is each activity's `schedule_to_close_timeout`, retries included."""
        self.store = store
        self.activity_timeout = activity_timeout
        super().__init__(
            [
                Tool(self.grep_tool_result, metadata=_NO_ACTIVITY),
                Tool(self.query_tool_result, metadata=_NO_ACTIVITY),
                Tool(self.list_tool_results, metadata=_NO_ACTIVITY),
            ],
            id=id,
        )

    async def grep_tool_result(
        self,
        ctx: RunContext[Any],
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
            ctx: The run context (supplied by the agent).
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
        if workflow.in_workflow():
            return await self._run(GREP_ACTIVITY, request, f'grep {handle}')
        return await _page(self.store.engine.grep_tool_result, request)

    async def query_tool_result(
        self, ctx: RunContext[Any], handle: str, filter: str, offset: int = 0, limit: int = 50
    ) -> str:
        """Run a jq filter over a spilled tool result that is JSON (one document, or JSON Lines).

        The filter runs on each JSON value of the result (each line of JSON Lines); its results
        are shown one compact JSON value per line, under a header counting them, with a note
        giving the `offset` of the next page when more exist. Use it to pull fields out of a
        large JSON result, e.g. `.items[] | select(.status == "failed") | .id`, or to see its
        shape with `keys` or `.[0]`. A result longer than 10,000 chars is cut with a marker.

        Args:
            ctx: The run context (supplied by the agent).
            handle: The handle from a "[Tool output too large ... stored to handle ...]" marker.
            filter: A jq filter (jq syntax, as implemented by jaq).
            offset: Results to skip.
            limit: Results to show (1-1000).
        """
        request = {'handle': handle, 'filter': filter, 'offset': offset, 'limit': limit}
        if workflow.in_workflow():
            return await self._run(QUERY_ACTIVITY, request, f'query {handle}')
        return await _page(self.store.engine.query_tool_result, request)

    async def list_tool_results(self, ctx: RunContext[Any], limit: int = 50) -> str:
        """List the tool results spilled in this run, newest first.

        For each: its handle, the tool that produced it, its size in chars and lines, how long ago
        it was written and its first line. Use it to find the handle of an earlier result whose
        marker is no longer in view; then search it with `grep_tool_result` or page through it
        with `read_tool_result`.

        Args:
            ctx: The run context (supplied by the agent).
            limit: Spills to show, newest first (1-1000).
        """
        run_id = ctx.run_id or 'run'
        # The harness's spills carry no tool name: the run's own calls name them.
        tool_names = {
            part.tool_call_id: part.tool_name
            for message in ctx.messages
            if isinstance(message, ModelResponse)
            for part in message.parts
            if isinstance(part, ToolCallPart)
        }
        request = {'run_id': run_id, 'limit': limit, 'tool_names': tool_names}
        if workflow.in_workflow():
            return await self._run(LIST_ACTIVITY, request, f'list spills of {run_id}')
        return await _page(self.store.engine.list_tool_results, request)

    async def _run(self, name: str, request: dict[str, Any], summary: str) -> str:
        """Run Overspill activity `name`; its `ModelRetry` failures become the model's retries.
        With no worker to run it, the run ends, or with `on_unavailable='fallback'` the model is
        told the tool is unavailable (`_unavailable_tool`)."""
        try:
            text = await execute_activity(
                name,
                [request],
                task_queue=self.store.task_queue,
                schedule_to_close_timeout=self.activity_timeout,
                start_timeout=self.store.start_timeout,
                on_unavailable=self.store.on_unavailable,
                summary=summary,
            )
        except UnavailableError as error:
            tool = name.rpartition('.')[2]
            workflow.logger.warning('%s is unavailable in this run: %s', tool, error.message)
            return _unavailable_tool(tool)
        except ActivityError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError) and cause.type == 'ModelRetry':
                raise ModelRetry(cause.message) from None
            raise
        if not isinstance(text, str):
            raise TypeError(f'{name} returned {type(text).__name__}, not the page text')
        return text


def _unavailable_tool(tool: str) -> str:
    """What the model is told when no Overspill worker runs `tool` (`on_unavailable='fallback'`):
    not to call it again, since no retry of the model's would find a worker either."""
    return f'[{tool} is unavailable in this run: do not call it again.]'


async def _page(tool: Callable[..., Awaitable[str]], request: dict[str, Any]) -> str:
    """The engine's page for `request`, as the calling activity's workflow may see the spill; a
    bad argument is the model's retry, with the worker's message."""
    from overspill._native import ArgumentError

    try:
        return await tool(request, caller=current_caller())
    except ArgumentError as error:
        raise ModelRetry(str(error)) from None
