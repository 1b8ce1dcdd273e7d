"""`overspill_tools()`: the read-back tools as Strands tools, from the engine's table (`overspill._tools`)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from strands.hooks import AfterToolsEvent
from strands.types.events import ToolResultEvent
from strands.types.tools import AgentTool, ToolGenerator, ToolSpec, ToolUse

from overspill._activity import ModelRetry, OverspillUnavailable, OverspillWorker, UnavailableError
from overspill._tools import READ_BACK_TOOLS, ReadBackTool


def overspill_tools(worker: OverspillWorker | None = None) -> list[AgentTool]:
    """The read-back tools, for an agent's `tools`: `TemporalAgent(..., tools=[*my_tools, *overspill_tools()])`.

    `read_tool_result`, `grep_tool_result`, `query_tool_result` and `list_tool_results`, each
    with the engine's description and JSON Schema (every argument described, so Strands adds no
    `Property …` of its own). Each runs in workflow code and executes the Overspill worker's
    activity of its name with the model's input as one request, on `worker`'s task queue (default
    `OverspillWorker()`: `OVERSPILL_TASK_QUEUE`, else `tool-output-limits`); the model gets the
    worker's page byte for byte, and only the page enters the history. A bad argument (the
    worker's `ModelRetry`) goes back to the model as an error result; no worker, or a worker on
    another store than this run's at-source spills, ends the run with one line
    (`worker.on_unavailable`; `OverspillUnavailable`, since Strands turns a tool's exceptions into
    error results).
    """
    worker = worker or OverspillWorker()
    return [OverspillTool(tool, worker) for tool in READ_BACK_TOOLS]


class OverspillTool(AgentTool):
    """One read-back tool as a Strands tool (named without dots, which providers refuse: Strands'
    `activity_as_tool` would name it after its activity, and call it with positional arguments
    where the Overspill worker takes one request)."""

    def __init__(self, tool: ReadBackTool, worker: OverspillWorker) -> None:
        super().__init__()
        self.tool = tool
        self.worker = worker

    @property
    def tool_name(self) -> str:
        """The name the model calls."""
        return self.tool.name

    @property
    def tool_spec(self) -> ToolSpec:
        """The table's description and schema (a copy: Strands edits the specs it registers)."""
        return {
            'name': self.tool.name,
            'description': self.tool.description,
            'inputSchema': {'json': copy.deepcopy(dict(self.tool.parameters))},
        }

    @property
    def tool_type(self) -> str:
        """What kind of tool this is, for Strands."""
        return 'overspill'

    async def stream(self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any) -> ToolGenerator:
        """The worker's page for the model's input, or the error the model is to fix.

        Strands turns a tool's exceptions into error results, and its concurrent executor
        swallows a cancellation in a tool's task: when the run is to end, the tool answers with
        the error and has the agent's loop raise `OverspillUnavailable` once the tools are done."""
        arguments, call_id = tool_use.get('input'), tool_use['toolUseId']
        try:
            if not isinstance(arguments, dict):
                raise ModelRetry(f'Invalid input for tool {self.tool.name}: a JSON object is expected')
            page = await self.tool(arguments, worker=self.worker)
        except ModelRetry as error:
            yield ToolResultEvent({'toolUseId': call_id, 'status': 'error', 'content': [{'text': str(error)}]})
            return
        except UnavailableError as error:  # the run is to end: from the agent's loop, once the tools are done
            agent = invocation_state.get('agent')
            if agent is None:
                raise OverspillUnavailable(error.message) from None
            agent.hooks.add_callback(AfterToolsEvent, _end_run(error.message))
            yield ToolResultEvent({'toolUseId': call_id, 'status': 'error', 'content': [{'text': error.message}]})
            return
        yield ToolResultEvent({'toolUseId': call_id, 'status': 'success', 'content': [{'text': page}]})

def _end_run(message: str) -> Callable[[AfterToolsEvent], None]:
    """An `AfterToolsEvent` hook that ends the run with `message` (a cancellation, which Strands
    lets through and Temporal fails the workflow with)."""

    def end_run(event: AfterToolsEvent) -> None:
        raise OverspillUnavailable(message)

    return end_run
