"""Overspill for the OpenAI Agents SDK on Temporal (`temporalio.openai_agents`).

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
# the worker that runs the tool activities
worker = Worker(client, task_queue='agent', activities=[fetch], interceptors=[OverspillInterceptor([fetch])])
```

- `OverspillInterceptor(tools)`: reduces the outputs of the `activity_as_tool` activities
  `tools` in the activity, before Temporal records them: an output over a band is spilled to
  the store (or truncated) right there, and the workflow, the history and every later model
  call carry only the marker with its handle.
- `overspill_tools()`: the read-back tools `read_tool_result`, `grep_tool_result`,
  `query_tool_result` and `list_tool_results`, run by the Overspill worker's activities of those
  names, with the worker's text.
- `OverspillMasking()`: a `call_model_input_filter` that, once the model's input exceeds a
  budget, replaces older tool outputs with a marker naming the tool, the size and a handle
  (spilling an output first if Overspill had not), so the model reads them back instead of
  carrying them in every call.

Install with `pip install 'overspill[openai-agents]'`.
"""

from overspill.openai_agents._at_source import AgentsToolActivities, OverspillInterceptor
from overspill._markers import mask_marker
from overspill.openai_agents._masking import SPILL_ACTIVITY, OverspillMasking
from overspill.openai_agents._tools import (
    GREP_ACTIVITY,
    LIST_ACTIVITY,
    QUERY_ACTIVITY,
    READ_ACTIVITY,
    overspill_tools,
)
from overspill.openai_agents._worker import (
    DEFAULT_TASK_QUEUE,
    ModelRetry,
    NoWorkerError,
    OverspillWorker,
    default_task_queue,
)

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
    'OverspillInterceptor',
    'OverspillMasking',
    'OverspillWorker',
    'default_task_queue',
    'mask_marker',
    'overspill_tools',
]
