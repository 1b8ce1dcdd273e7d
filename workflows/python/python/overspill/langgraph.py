"""Overspill for LangGraph on Temporal (`temporalio.langgraph`): a thin adapter over the core.

Under `LangGraphPlugin` each node runs in the workflow or as an activity (`execute_in`), and an
activity node's input is the whole graph state: a big tool output is recorded as its tool's
result and again in every later model node's input. The layout to use (and the quickstart's):

```python
from overspill.langgraph import OverspillMasking, OverspillPlugin, activity_tool, overspill_tools, run_tool_node

TOOLS = ToolNode([activity_tool(fetch, start_to_close_timeout=timedelta(minutes=1)), *overspill_tools()])
MASKING = OverspillMasking()

async def tools(state, config: RunnableConfig, runtime: Runtime):  # execute_in='workflow' (annotated: LangGraph passes them)
    return await run_tool_node(TOOLS, state, config, runtime)

graph.add_node('mask', MASKING.node, metadata={'execute_in': 'workflow'})  # START -> mask -> model
client = await Client.connect(..., plugins=[LangGraphPlugin(graphs=...), OverspillPlugin([fetch])])
```

- `activity_tool(fn, **options)`: a LangChain tool that runs the activity `fn` from workflow
  code; `OverspillPlugin(activities)` reduces those activities' outputs at the source, keyed by
  `{run id}/{activity id}` (the model's tool call ids, which may repeat, are never a key).
- `run_tool_node(node, state, config, runtime)`: the prebuilt `ToolNode`, run from a node function
  of your own (the plugin cannot take it as a node: labelled `workflow`, `compile()` never ends;
  labelled `activity`, it gets the state as dicts and runs only sync tools). In the workflow it
  also runs the read-back tools, which an activity cannot. A `ToolNode` can run as an activity
  too (`OverspillPlugin(tool_nodes=['graph.tools'])`: each `ToolMessage` of the node's update is
  reduced in place), but the read-back tools then need a workflow-side node of their own.
- `overspill_tools()`: the read-back tools; `OverspillMasking().node`: masking, as a workflow-side
  node before the model's, whose state update replaces the masked `ToolMessage`s by id.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import convert_to_messages
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, create_schema_from_function
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import Command
from temporalio import activity, workflow

from overspill import _plugin
from overspill._activity import OverspillWorker
from overspill._at_source import OverspillInterceptor, ToolActivities, ToolSelection
from overspill._codecs import TOOL_MESSAGE
from overspill._compat.langgraph import tool_node_body
from overspill._compat.temporalio import activity_name
from overspill._langchain import MessageMasking, overspill_tools
from overspill._native import Limits, Model, Store

__all__ = [
    'OverspillInterceptor',
    'OverspillMasking',
    'OverspillPlugin',
    'OverspillWorker',
    'activity_tool',
    'overspill_tools',
    'run_tool_node',
    'tool_activities',
]


def activity_tool(fn: Callable[..., Any], *, name: str | None = None, description: str | None = None, **options: Any) -> BaseTool:
    """A LangChain tool that runs the `@activity.defn` function `fn` as its own activity, from
    workflow code (a workflow-side tool node), with `workflow.execute_activity`'s `options`
    (`start_to_close_timeout=…`). The model sees `fn`'s parameters and docstring; the activity is
    run by name and its result taken as the JSON it is, so a text or any JSON value can come back
    reduced. Named after the function unless `name`."""
    activity_type = activity_name(fn)
    if activity_type is None:
        raise ValueError(f'{fn!r} is not an activity: decorate it with @activity.defn')
    tool_name = name or fn.__name__
    signature = inspect.signature(fn)

    async def run(**arguments: Any) -> Any:
        bound = signature.bind(**arguments)
        bound.apply_defaults()
        return await workflow.execute_activity(activity_type, args=list(bound.arguments.values()), **options)

    return StructuredTool(
        name=tool_name,
        description=description or inspect.getdoc(fn) or tool_name,
        args_schema=create_schema_from_function(tool_name, fn),
        coroutine=run,
    )


async def run_tool_node(node: ToolNode, state: Mapping[str, Any], config: RunnableConfig, runtime: Runtime[Any]) -> Any:
    """The update of the prebuilt `ToolNode` `node` for `state`, from a node function of your own
    labelled `workflow` or `activity`: `async def tools(state, config: RunnableConfig, runtime:
    Runtime)` (LangGraph passes `config` and `runtime` to parameters so annotated).

    In an activity the state arrives as plain dicts: its messages are made messages again. There
    the plugin passes on a single `Command` only, so the update of a tool returning a `Command` is
    folded into one (its messages, then the other keys; a `Command` for a parent graph, or one
    resuming an interrupt, cannot be folded and raises `ValueError`).
    """
    output = await tool_node_body(node)({**state, 'messages': convert_to_messages(state['messages'])}, config, runtime)
    if not activity.in_activity() or not isinstance(output, list):
        return output
    messages: list[Any] = []
    update: dict[str, Any] = {}
    goto: list[Any] = []
    for part in output:
        command = part if isinstance(part, Command) else Command(update=part)
        if command.graph is not None or command.resume is not None or not isinstance(command.update or {}, Mapping):
            raise ValueError(f'a ToolNode activity cannot pass this Command on (run the node in the workflow): {command!r}')
        for key, value in (command.update or {}).items():
            if key == 'messages':
                messages.extend(value if isinstance(value, list) else [value])
            else:
                update[key] = value
        targets = command.goto if isinstance(command.goto, (list, tuple)) else [command.goto]
        goto.extend(target for target in targets if target)
    return Command(update={**update, 'messages': messages}, goto=goto)


def tool_activities(activities: Sequence[Callable[..., Any] | str] = (), *, tool_nodes: Sequence[str] = ()) -> list[ToolSelection]:
    """The tool activities of a graph, for `OverspillInterceptor`: `activities`, the activities of
    `activity_tool` tools (functions or names); `tool_nodes`, the activities of `ToolNode`s run as
    activity nodes, named `{graph}.{node}` as the plugin names them. A `ToolNode`'s calls share its
    activity: each `ToolMessage` is spilled under `{run id}/{activity id}-{k}` (`k` its position)."""
    selections: list[ToolSelection] = [ToolActivities.of(activities)] if activities else []
    if tool_nodes:
        selections.append(ToolActivities(names={n: n for n in tool_nodes}, codec=TOOL_MESSAGE, call_ids=False))
    return selections


class OverspillPlugin(_plugin.OverspillPlugin):
    """Reduction at the source of a graph's tool activities (`tool_activities(activities,
    tool_nodes=…)`), in one line: `Client.connect(..., plugins=[LangGraphPlugin(...),
    OverspillPlugin([fetch])])`. `limits`, `store` and `model` as `OverspillInterceptor`'s."""

    def __init__(
        self,
        activities: Sequence[Callable[..., Any] | str] = (),
        *,
        tool_nodes: Sequence[str] = (),
        limits: Limits | str | Mapping[str, Any] | None = None,
        store: Store | str | None = None,
        model: Model | None = None,
    ) -> None:
        tools = tool_activities(activities, tool_nodes=tool_nodes)
        super().__init__(tools, limits, store, model=model, name='overspill.langgraph')


class OverspillMasking(MessageMasking):
    """Masking by the rule every framework shares (`overspill.MaskingSettings`), as a workflow-side
    node before the model's: `graph.add_node('mask', OverspillMasking().node, metadata={'execute_in':
    'workflow'})`, with edges `START -> mask -> model` and `tools -> mask`.

    Once the state's messages measure more than `budget` chars, every `ToolMessage` the model has
    seen but the `keep_recent` newest becomes a marker naming the tool, its size and a handle
    (spilled first through `worker` unless Overspill spilled it already). The node's update holds
    just those messages, with their ids: `add_messages` replaces them in the state, which keeps
    the markers (and so do the model node's later inputs, continue-as-new and `cache()`).
    """

    async def node(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """The state update: the messages masked now."""
        return {'messages': await self.updates(state['messages'])}
