"""Overspill for the OpenAI Agents SDK on Temporal (`temporalio.openai_agents`): a thin adapter
over the framework-neutral core (`overspill`).

On Temporal, an OpenAI agent's loop runs in the workflow, each `activity_as_tool` tool runs as an
activity whose result is recorded in the history, and each model call is an activity whose input
is the whole conversation so far: a big tool output is recorded once as the tool's result and
again in every later model call's input, until a model call's input passes the 2 MiB payload
limit and the run stops. With this module:

```python
from overspill.openai_agents import OverspillInterceptor, OverspillMasking, overspill_tools

# the workflow
agent = Agent(name='crawler', tools=[activity_as_tool(fetch, ...), *overspill_tools()])
result = await Runner.run(agent, prompt, run_config=RunConfig(call_model_input_filter=OverspillMasking()))
# the worker that runs the workflow and the tool activities
worker = Worker(client, task_queue='agent', workflows=[...], activities=[fetch], interceptors=[OverspillInterceptor([fetch])])
```

- `OverspillInterceptor(tools)` (`overspill.OverspillInterceptor`): reduces the outputs of the
  `activity_as_tool` activities `tools` in the activity, before Temporal records them: an output
  over a band is spilled to the store (or truncated) right there, and the workflow, the history
  and every later model call carry only the marker with its handle.
- `overspill_tools()`: the read-back tools `read_tool_result`, `grep_tool_result`,
  `query_tool_result` and `list_tool_results`, run by the Overspill worker's activities of those
  names, with the worker's text.
- `OverspillMasking()`: a `call_model_input_filter` that, once the model's input passes a budget,
  replaces the outputs the model has seen (but the newest) with a marker naming the tool, the size
  and a handle (spilling an output first if Overspill had not), so the model reads them back
  instead of carrying them in every call.
- `OverspillWorker`: where the Overspill worker runs (task queue, timeouts, `on_unavailable`).

Install with `pip install 'overspill[openai-agents]'`.
"""

from collections.abc import Callable, Sequence
from typing import Any

from overspill._activity import ModelRetry, NoWorkerError, OtherStoreError, OverspillWorker
from overspill._at_source import OverspillInterceptor, ToolActivities
from overspill._markers import mask_marker
from overspill._names import DEFAULT_TASK_QUEUE, SPILL_ACTIVITY, default_task_queue
from overspill._tools import GREP_ACTIVITY, LIST_ACTIVITY, QUERY_ACTIVITY, READ_ACTIVITY
from overspill.openai_agents._masking import OverspillMasking
from overspill.openai_agents._tools import overspill_tools


def AgentsToolActivities(tools: Sequence[Callable[..., Any] | str]) -> ToolActivities:  # noqa: N802 - the former class
    """The former name of `ToolActivities.of(tools)`: the `activity_as_tool` activities `tools`."""
    return ToolActivities.of(tools)


__all__ = [
    'AgentsToolActivities',
    'DEFAULT_TASK_QUEUE',
    'GREP_ACTIVITY',
    'LIST_ACTIVITY',
    'QUERY_ACTIVITY',
    'READ_ACTIVITY',
    'SPILL_ACTIVITY',
    'ModelRetry',
    'NoWorkerError',
    'OtherStoreError',
    'OverspillInterceptor',
    'OverspillMasking',
    'OverspillWorker',
    'default_task_queue',
    'mask_marker',
    'overspill_tools',
]
