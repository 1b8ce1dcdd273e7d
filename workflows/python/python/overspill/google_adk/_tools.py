"""`overspill_tools()`: the read-back tools as Google ADK tools, from the engine's table (`overspill._tools`)."""

from __future__ import annotations

import copy
from typing import Any

from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from overspill._activity import ModelRetry, OverspillWorker
from overspill._tools import READ_BACK_TOOLS, ReadBackTool


def overspill_tools(worker: OverspillWorker | None = None) -> list[BaseTool]:
    """The read-back tools, for an agent's `tools`: `Agent(..., tools=[*my_tools, *overspill_tools()])`.

    `read_tool_result`, `grep_tool_result`, `query_tool_result` and `list_tool_results`, each
    declared to the model with the engine's description and JSON Schema. Each runs in workflow
    code and executes the Overspill worker's activity of its name with the model's arguments as
    one request, on `worker`'s task queue (default `OverspillWorker()`: `OVERSPILL_TASK_QUEUE`, else
    `tool-output-limits`); the model gets the worker's page byte for byte (as ADK shows a text,
    `{"result": page}`), and only the page enters the history. A bad argument (the worker's
    `ModelRetry`) goes back to the model as `{"error": message}`; no worker, or a worker on another
    store than this run's at-source spills, ends the run with one line (`worker.on_unavailable`).
    """
    worker = worker or OverspillWorker()
    return [OverspillTool(tool, worker) for tool in READ_BACK_TOOLS]


class OverspillTool(BaseTool):
    """One read-back tool as an ADK tool (a declaration of its own: ADK's `activity_as_tool` would
    call the activity with positional arguments, and the Overspill worker takes one request)."""

    def __init__(self, tool: ReadBackTool, worker: OverspillWorker) -> None:
        super().__init__(name=tool.name, description=tool.description)
        self.tool = tool
        self.worker = worker

    def _get_declaration(self) -> types.FunctionDeclaration:
        """The table's declaration, as the model gets it (`overspill._compat.google_adk`)."""
        schema = copy.deepcopy(dict(self.tool.parameters))
        return types.FunctionDeclaration(name=self.name, description=self.description, parameters_json_schema=schema)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """The worker's page for the model's arguments, or the error the model is to fix."""
        try:
            return await self.tool(args, worker=self.worker)
        except ModelRetry as error:
            return {'error': str(error)}
