"""Overspill for Strands agents on Temporal (`temporalio.strands_agents`): a thin adapter over the
framework-neutral core (`overspill`).

On Temporal, a Strands agent's loop runs in the workflow, each `activity_as_tool` tool and each MCP
tool (`TemporalMCPClient`) runs as an activity whose result is recorded in the history, and each
model call is an activity whose input carries the whole conversation so far, twice (as `messages`
and again in `invocation_state`): a big tool output is recorded once as the tool's result and
twice in every later model call's input, until one passes the 2 MiB payload limit. With this module:

```python
from overspill.strands import OverspillMasking, OverspillPlugin, overspill_tools

# the client (and so every worker and replayer made from it)
client = await Client.connect(..., plugins=[StrandsPlugin(...), OverspillPlugin([fetch])])
# the workflow
agent = TemporalAgent(..., tools=[activity_as_tool(fetch, ...), TemporalMCPClient('logs'), *overspill_tools()])
agent.add_middleware(InvokeModelStage.Input, OverspillMasking())
```

- `OverspillPlugin(activities)`: reduces, in the activity, before Temporal records them, the
  outputs of the `activity_as_tool` activities `activities` and of every MCP server's
  `{server}-call-tool` (`tool_activities`).
- `overspill_tools()`: the read-back tools `read_tool_result`, `grep_tool_result`,
  `query_tool_result` and `list_tool_results`, run by the Overspill worker's activities.
- `OverspillMasking()`: an `InvokeModelStage.Input` middleware that, once the input passes a
  budget, replaces the outputs the model has seen (but the newest) with a marker naming the tool,
  the size and a handle, so the model reads them back instead of carrying them in every call.

Install with `pip install 'overspill[strands]'`.
"""

from collections.abc import Callable, Sequence
from typing import Any

from overspill._activity import ModelRetry, NoWorkerError, OtherStoreError, OverspillUnavailable, OverspillWorker
from overspill._at_source import OverspillInterceptor, ToolActivities
from overspill._codecs import STRANDS_RESULT, UNTYPED
from overspill._compat.strands import mcp_tool_name
from overspill._plugin import AdapterPlugin
from overspill.strands._masking import OverspillMasking
from overspill.strands._tools import OverspillTool, overspill_tools


def tool_activities(activities: Sequence[Callable[..., Any] | str] = ()) -> list[ToolActivities]:
    """A Strands agent's tool activities, for `OverspillInterceptor`: the `activity_as_tool`
    activities `activities` (functions or names; each tool named after its activity, as Strands
    names it), whose results the workflow takes without a type and turns into text, so any result
    is reduced (`UNTYPED`); and every MCP server's `{server}-call-tool`, its tool named by its
    arguments, its `ToolResult` kept but for the text and the `structuredContent` that repeats it
    (`STRANDS_RESULT`). Both keyed by the activity (`{run id}/{activity id}`): a `toolUseId` is the
    model's, and may repeat within a run."""
    mcp = ToolActivities(suffix='-call-tool', codec=STRANDS_RESULT, tool_from_args=mcp_tool_name, call_ids=False)
    return [ToolActivities.of(activities, named_by='activity'), mcp] if activities else [mcp]


class OverspillPlugin(AdapterPlugin):
    """Reduction at the source of a Strands agent's tool activities (`tool_activities(activities)`), in
    one line: `Client.connect(..., plugins=[StrandsPlugin(...), OverspillPlugin([fetch])])`.
    `limits`, `store` and `model` as `OverspillInterceptor`'s."""

    plugin_name = 'overspill.strands'
    select = staticmethod(tool_activities)


__all__ = [
    'ModelRetry',
    'NoWorkerError',
    'OtherStoreError',
    'OverspillInterceptor',
    'OverspillMasking',
    'OverspillPlugin',
    'OverspillTool',
    'OverspillUnavailable',
    'OverspillWorker',
    'overspill_tools',
    'tool_activities',
]
