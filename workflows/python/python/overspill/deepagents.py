"""Overspill for Deep Agents on Temporal (`temporalio.deepagents`): a thin adapter over the core.

Under `DeepAgentsPlugin` the agent's loop runs in the workflow, a tool wrapped by
`tool_as_activity` runs in the activity `deepagents.invoke_tool` (its result a `ToolMessage` in
`dumpd` form), an `activity_as_tool` tool runs its own activity, and every model call is the
activity `deepagents.invoke_model`, whose input is the whole conversation. Deep Agents' own
eviction of large results (over 80,000 chars, into the agent's files) runs in the workflow, after
the history has the output. With this module the output is reduced in the tool's activity, so
the history, the files and the model's inputs get only the marker, and that eviction never has
anything left to evict:

```python
from overspill.deepagents import OverspillMasking, OverspillPlugin, overspill_tools

agent = create_deep_agent(model=..., tools=[tool_as_activity(search, ...), activity_as_tool(fetch, ...),
                                            *overspill_tools()], middleware=[OverspillMasking()])
client = await Client.connect(..., plugins=[DeepAgentsPlugin(...), OverspillPlugin([fetch])])
```

`OverspillPlugin` sets no payload converter: it goes anywhere in `plugins`. `DeepAgentsPlugin`
refuses to follow a plugin that sets its own (`PydanticAIPlugin`, `OpenAIAgentsPlugin`: "cannot
compose with a custom data_converter"): give it before those.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.tools import BaseTool

from overspill import _langchain, _plugin
from overspill._activity import OverspillWorker
from overspill._at_source import OverspillInterceptor, ToolActivities, ToolSelection
from overspill._codecs import TEXT, TOOL_MESSAGE
from overspill._compat.deepagents import invoke_tool_activity, routed_tool_names
from overspill._langchain import MessageMasking

__all__ = ['OverspillInterceptor', 'OverspillMasking', 'OverspillPlugin', 'OverspillWorker', 'overspill_tools', 'tool_activities']


def overspill_tools(worker: OverspillWorker | None = None) -> list[BaseTool]:
    """The read-back tools, for `create_deep_agent(tools=[...])` (see `overspill._langchain`): they
    run in the workflow and execute the Overspill worker's activities on `worker`'s task queue,
    which Deep Agents' `activity_as_tool` cannot (it has no `task_queue`). They are named to Deep
    Agents as routed through Temporal, so it does not warn that they run in the workflow."""
    tools = _langchain.overspill_tools(worker)
    routed_tool_names().update(tool.name for tool in tools)
    return tools


def tool_activities(activities: Sequence[Callable[..., Any] | str] = ()) -> list[ToolSelection]:
    """The agent's tool activities, for `OverspillInterceptor`: `deepagents.invoke_tool` (every
    `tool_as_activity` tool: each output spilled under `{run id}/{its tool_call_id}`, a
    `workflow.uuid4()` the workflow chose, not the model's), and the activities of
    `activity_as_tool` tools (functions or names; a text, `dict` or `Any` result is reduced,
    spilled under `{run id}/{activity id}`)."""
    invoke_tool = ToolActivities(names={invoke_tool_activity(): 'tool_as_activity'}, codec=TOOL_MESSAGE)
    return [invoke_tool, ToolActivities.of(activities, codec=TEXT, named_by='activity')]


class OverspillPlugin(_plugin.AdapterPlugin):
    """Reduction at the source of the agent's tool activities (`tool_activities(activities)`), in
    one line: `Client.connect(..., plugins=[DeepAgentsPlugin(...), OverspillPlugin([fetch])])`.
    `limits`, `store` and `model` as `OverspillInterceptor`'s."""

    plugin_name = 'overspill.deepagents'
    select = staticmethod(tool_activities)


@dataclass
class OverspillMasking(MessageMasking, AgentMiddleware):
    """Masking by the rule every framework shares (`overspill.MaskingSettings`), as agent
    middleware: `create_deep_agent(..., middleware=[OverspillMasking()])`.

    Before each model call (`abefore_model`), once the messages measure more than `budget`
    chars, every `ToolMessage` the model has seen but the `keep_recent` newest becomes a marker
    naming the tool, its size and a handle (spilled first through `worker` unless Overspill spilled
    it already), returned as a state update with the messages' ids. The state keeps the markers:
    each output is masked once, and `run_deep_agent`'s continue-as-new carries the markers. (An
    `awrap_model_call` edit would mask the request only: the state would keep every output, and
    the edit would be redone at every call.)
    """

    tools = ()
    """Middleware tools: none (give the agent `overspill_tools()`)."""

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """The state update before a model call: the messages masked now, if any."""
        masked = await self.updates(state['messages'])
        return {'messages': masked} if masked else None
