"""`overspill_tools()`: the read-back tools as the OpenAI Agents SDK's `FunctionTool`s, from the
engine's table (`overspill._tools`)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from agents import FunctionTool, ModelBehaviorError, RunContextWrapper, default_tool_error_function

from overspill._activity import ModelRetry, OnUnavailable, OverspillWorker
from overspill._names import default_task_queue
from overspill._tools import READ_BACK_TOOLS, ReadBackTool


def overspill_tools(
    *,
    task_queue: str | None = None,
    timeout: timedelta = timedelta(minutes=1),
    start_timeout: timedelta = timedelta(seconds=10),
    on_unavailable: OnUnavailable = 'fail',
) -> list[FunctionTool]:
    """The read-back tools, for an agent's `tools`: `Agent(..., tools=[*my_tools, *overspill_tools()])`.

    `read_tool_result`, `grep_tool_result`, `query_tool_result` and `list_tool_results`, with the
    engine's descriptions and parameters (strict schemas: an optional argument may be `null`, its
    default). Each runs in workflow code and executes the Overspill worker's activity of its name
    on `task_queue` (default `OVERSPILL_TASK_QUEUE`, else `tool-output-limits`); the model gets
    the worker's page byte for byte, and only the page enters the history. A bad argument (the
    worker's `ModelRetry`, or arguments that are not JSON) goes back to the model as the SDK's tool
    error. No worker polling the queue within `start_timeout`, or a worker that keeps its spills
    in another store than `OverspillInterceptor` wrote this run's to, ends the run with one line
    (`on_unavailable='fallback'`: the model is told the tool is unavailable); any other failure
    ends it with its message. `timeout` bounds each call, retries included. `list_tool_results`
    lists the spills of the workflow's current run (the run segment of at-source handles).
    """
    worker = OverspillWorker(task_queue or default_task_queue(), timeout, start_timeout, on_unavailable)
    return [_function_tool(tool, worker) for tool in READ_BACK_TOOLS]


def _function_tool(tool: ReadBackTool, worker: OverspillWorker) -> FunctionTool:
    """`tool` as a `FunctionTool` whose failures are the model's to retry, or end the run."""

    async def invoke(ctx: RunContextWrapper[Any], arguments: str) -> str:
        try:
            try:
                parsed = json.loads(arguments or '{}')
            except ValueError as error:
                raise ModelBehaviorError(f'Invalid JSON input for tool {tool.name}: {error}') from error
            if not isinstance(parsed, dict):
                raise ModelBehaviorError(f'Invalid input for tool {tool.name}: a JSON object is expected')
            return await tool(parsed, worker=worker)
        except (ModelRetry, ModelBehaviorError) as error:
            # The model's own mistakes go back to it as the SDK's tool error text. Anything else
            # fails the run: a store or a worker that is not there does not heal by calling again.
            return default_tool_error_function(ctx, error)

    return FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=tool.strict_parameters(),
        on_invoke_tool=invoke,
        strict_json_schema=True,
    )
