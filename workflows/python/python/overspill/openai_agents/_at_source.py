"""The OpenAI Agents SDK's tool activities at the source: `OverspillInterceptor` for `activity_as_tool` tools.

`temporalio.openai_agents.workflow.activity_as_tool(fn)` makes activity `fn` a tool named after
the function: the workflow executes the activity, decodes its result without a type (a JSON value
as dicts and lists) and gives the model `str()` of it. The interceptor reduces the result in the
activity, before Temporal records it, so the workflow receives the reduced text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from temporalio import activity

from overspill._interceptor import OverspillInterceptor as _Interceptor
from overspill._interceptor import Reduced, ToolCallSite, ToolOutputParts
from overspill._native import Limits, Model, Store


class AgentsToolActivities:
    """The activities an OpenAI agent calls as tools through `activity_as_tool`.

    Each call's spill key is `{workflow run id}/{activity id}.0`: the activity id is the
    workflow's own numbering of its activities, the same for every attempt of the call and on
    every replay, so a retry rewrites the same object and the handle never changes.
    """

    def __init__(self, tools: Sequence[Callable[..., Any] | str]) -> None:
        """`tools`: the activity functions given to `activity_as_tool` (or their activity names)."""
        self.tool_names: dict[str, str] = {}
        """The tool name the model sees (the function's name), by activity name."""
        for tool in tools:
            if isinstance(tool, str):
                self.tool_names[tool] = tool
                continue
            definition = activity._Definition.from_callable(tool)
            if definition is None or definition.name is None:
                raise ValueError(f'{tool!r} is not an activity: decorate it with @activity.defn')
            # activity_as_tool names the tool after the function (its schema's name).
            self.tool_names[definition.name] = getattr(tool, '__name__', definition.name)

    def call_site(self, info: activity.Info, args: Sequence[Any]) -> ToolCallSite | None:
        """The tool call of a covered activity of a workflow; `None` for any other activity."""
        tool_name = self.tool_names.get(info.activity_type)
        if tool_name is None or not info.workflow_run_id:
            return None
        return ToolCallSite(tool_name=tool_name, run_id=info.workflow_run_id, tool_call_id=info.activity_id, retry=0)

    def output(self, result: Any) -> ToolOutputParts | None:
        """The tool's output as the workflow will decode it: text as itself, any other value as
        the JSON value the payload converter makes of it (a structured output is measured and
        spilled as its JSON, which `query_tool_result` reads)."""
        if isinstance(result, (str, bytes)):
            return ToolOutputParts(result)
        converter = activity.payload_converter()
        return ToolOutputParts(converter.from_payloads(converter.to_payloads([result]))[0])

    def with_output(self, result: Any, reduced: Reduced) -> Any:
        """The reduced output, which the workflow hands the model as it is (`str()` of a text is the text)."""
        return reduced.value


class OverspillInterceptor(_Interceptor):
    """Reduce an OpenAI agent's tool outputs in their activities, before Temporal records them.

    Give it to the worker that runs the agent's tool activities, naming the functions the agent
    gives `activity_as_tool`:

    ```python
    worker = Worker(client, task_queue='agent', workflows=[MyAgent], activities=[fetch],
                    interceptors=[OverspillInterceptor([fetch])])
    ```

    An output over a band of `limits` (the JSON `overspill worker --limits` takes; by default
    outputs over 10,000 chars are spilled with a 1,000-char preview) is truncated or spilled right
    there, into `store` (a `Store` or its URL; default `OVERSPILL_STORE`, else the store of
    `overspill dev`), and the model gets the marker `[Tool output too large (…); stored to handle
    '{run id}/{activity id}.0'. …]`. Give the agent `overspill_tools()` to read it back, from an
    Overspill worker on the same store. A Summarize band runs here with `model`; without one the
    output goes on to the workflow unchanged.
    """

    def __init__(
        self,
        tools: Sequence[Callable[..., Any] | str],
        limits: Limits | str | Mapping[str, Any] | None = None,
        store: Store | str | None = None,
        *,
        model: Model | None = None,
    ) -> None:
        super().__init__(limits, store, tools=[AgentsToolActivities(tools)], model=model)
