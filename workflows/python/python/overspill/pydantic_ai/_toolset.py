"""`OverspillToolset`: the read-back tools the agent's harness lacks, for a pydantic-ai agent whose
spills go to Overspill (`OverspillStore`): `query_tool_result` and `list_tool_results`, and,
with a harness that has no `grep_tool_result` of its own (0.62), that too."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pydantic_ai import FunctionToolset, ModelRetry, RunContext, Tool
from pydantic_ai.messages import ModelResponse, ToolCallPart
from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from overspill._caller import current_caller
from overspill._native import read_back_tools
from overspill.pydantic_ai._activity import UnavailableError, execute_activity
from overspill.pydantic_ai._harness import READ_KIND, harness_has_grep, installed_harness
from overspill._tools import GREP_ACTIVITY, LIST_ACTIVITY, QUERY_ACTIVITY
from overspill.pydantic_ai._store import OverspillStore

if TYPE_CHECKING:
    from overspill._native import ToolSpec

_NO_ACTIVITY: dict[str, Any] = {'temporal': False}
"""Tool metadata that keeps a tool in workflow code under `TemporalDurability`: the tool itself
runs the Overspill activity, so only the bounded page enters the history."""


class OverspillToolset(FunctionToolset[Any]):
    """The read-back tools an agent that spills through `store` lacks: `query_tool_result` (a jq
    filter over a JSON spill) and `list_tool_results` (the run's spills, newest first), and
    `grep_tool_result` (a spill's matching lines with their line numbers) when the harness has
    none of its own (pydantic-ai-harness 0.62; 0.75's `ToolOutputLimits` registers it).

    ```python
    store = OverspillStore('s3://spills')
    agent = Agent(model, capabilities=[ToolOutputLimits(store=store), TemporalDurability()],
                  toolsets=[OverspillToolset(store)])
    ```

    The tools' names, descriptions and parameters are Overspill's read-back tools'
    (`overspill._native.read_back_tools()`): `grep_tool_result` is the harness 0.75's, with
    Overspill's `regex`. On Temporal, they run in workflow code and execute the Overspill
    worker's activities (`tool_output_limits.grep_tool_result`, `.query_tool_result`,
    `.list_tool_results`) on `store.task_queue`: the worker streams the spill, and only the page
    (at most 50,000 chars) enters the workflow history; a replay takes it from there. Outside a
    workflow they run the same engine in this process (`store.engine`), with the same text. A bad
    argument or pattern is a `ModelRetry` with the worker's message.

    When no Overspill worker polls `store.task_queue`, the run ends (`store.on_unavailable`, see
    `OverspillStore`); with `on_unavailable='fallback'` the model is told in one line that the
    tool is unavailable in this run, and the agent logs one WARNING line.

    A pydantic-ai-harness release Overspill does not know is refused here, naming the known ones.
    """

    def __init__(
        self, store: OverspillStore, *, activity_timeout: timedelta = timedelta(minutes=1), id: str = 'overspill'
    ) -> None:
        """`activity_timeout` is each activity's `schedule_to_close_timeout`, retries included."""
        installed_harness()
        self.store = store
        self.activity_timeout = activity_timeout
        pages: dict[str, Callable[..., Awaitable[str]]] = {
            'grep_tool_result': self.grep_tool_result,
            'query_tool_result': self.query_tool_result,
            'list_tool_results': self.list_tool_results,
        }
        if harness_has_grep():
            del pages['grep_tool_result']
        specs = [spec for spec in read_back_tools() if spec['name'] in pages]
        super().__init__([_tool(spec, pages[spec['name']]) for spec in specs], id=id)

    async def grep_tool_result(self, ctx: RunContext[Any], handle: str, pattern: str, **args: Any) -> str:
        """The page of lines of spill `handle` that contain `pattern` (the tool's other arguments in `args`)."""
        request = {'handle': handle, 'pattern': pattern, **args, **_reader_name(ctx)}
        if workflow.in_workflow():
            return await self._run(GREP_ACTIVITY, request, f'grep {handle}')
        return await _page(self.store.engine.grep_tool_result, request)

    async def query_tool_result(self, ctx: RunContext[Any], handle: str, filter: str, **args: Any) -> str:
        """The page of results of jq filter `filter` over spill `handle`."""
        request = {'handle': handle, 'filter': filter, **args}
        if workflow.in_workflow():
            return await self._run(QUERY_ACTIVITY, request, f'query {handle}')
        return await _page(self.store.engine.query_tool_result, request)

    async def list_tool_results(self, ctx: RunContext[Any], limit: int | None = None) -> str:
        """The run's spills, newest first (at most `limit`)."""
        run_id = ctx.run_id or 'run'
        # The harness's spills carry no tool name: the run's own calls name them.
        tool_names = {
            part.tool_call_id: part.tool_name
            for message in ctx.messages
            if isinstance(message, ModelResponse)
            for part in message.parts
            if isinstance(part, ToolCallPart)
        }
        request: dict[str, Any] = {'run_id': run_id, 'tool_names': tool_names}
        if limit is not None:
            request['limit'] = limit
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


def _tool(spec: ToolSpec, page: Callable[..., Awaitable[str]]) -> Tool[Any]:
    """The tool `spec` describes, answered by `page`, kept in workflow code under Temporal."""
    tool: Tool[Any] = Tool.from_schema(
        page, name=spec['name'], description=spec['description'], json_schema=spec['parameters'], takes_ctx=True
    )
    tool.metadata = _NO_ACTIVITY
    return tool


def _reader_name(ctx: RunContext[Any] | None) -> dict[str, str]:
    """`read_tool_result` as the run names it, for the pointers a capped page gives (`{}`: the
    default name, or a context that cannot tell)."""
    name_for_kind = getattr(ctx, 'tool_name_for_kind', None)
    name = name_for_kind(READ_KIND) if name_for_kind is not None else None
    return {'read_tool_name': name} if isinstance(name, str) else {}


async def _page(tool: Callable[..., Awaitable[str]], request: dict[str, Any]) -> str:
    """The engine's page for `request`, as the calling activity's workflow may see the spill; a
    bad argument is the model's retry, with the worker's message."""
    from overspill._native import ArgumentError

    try:
        return await tool(request, caller=current_caller())
    except ArgumentError as error:
        raise ModelRetry(str(error)) from None
