"""Overspill for Google ADK agents on Temporal (`temporalio.google_adk`): a thin adapter over the
framework-neutral core (`overspill`).

On Temporal, an ADK agent's loop runs in the workflow, each `activity_as_tool` tool and each MCP
tool (`TemporalMcpToolSet`) runs as an activity whose result is recorded in the history, and each
model call is an activity whose input is the whole conversation so far: a big tool output is
recorded once as the tool's result and again in every later model call's input, until one passes
the 2 MiB payload limit. With this module:

```python
from overspill.google_adk import OverspillMasking, OverspillPlugin, overspill_tools

# the client (and so every worker and replayer made from it)
client = await Client.connect(..., plugins=[GoogleAdkPlugin(...), OverspillPlugin([fetch])])
# the workflow
agent = Agent(..., tools=[activity_as_tool(fetch, ...), TemporalMcpToolSet('logs'), *overspill_tools()],
              before_model_callback=OverspillMasking())
```

- `OverspillPlugin(activities)`: reduces, in the activity, before Temporal records them, the
  outputs of the `activity_as_tool` activities `activities` and of every MCP server's
  `{name}-call-tool` (`tool_activities`).
- `overspill_tools()`: the read-back tools `read_tool_result`, `grep_tool_result`,
  `query_tool_result` and `list_tool_results`, run by the Overspill worker's activities.
- `OverspillMasking()`: a `before_model_callback` that, once the request passes a budget,
  replaces the outputs the model has seen (but the newest) with a marker naming the tool, the size
  and a handle, so the model reads them back instead of carrying them in every call.

Install with `pip install 'overspill[google-adk]'`.
"""

from collections.abc import Callable, Sequence
from typing import Any

from overspill._activity import ModelRetry, NoWorkerError, OtherStoreError, OverspillWorker
from overspill._at_source import OverspillInterceptor, ToolActivities
from overspill._codecs import MCP_RESULT, TEXT
from overspill._compat.google_adk import mcp_tool_name
from overspill._plugin import AdapterPlugin
from overspill.google_adk._masking import OverspillMasking
from overspill.google_adk._tools import OverspillTool, overspill_tools


def tool_activities(activities: Sequence[Callable[..., Any] | str] = ()) -> list[ToolActivities]:
    """An ADK agent's tool activities, for `OverspillInterceptor`: the `activity_as_tool` activities
    `activities` (functions or names; each tool named after its function), whose results the
    workflow decodes into the activity's return annotation, so they are reduced only where that is
    `str`, `dict` or `Any` (`TEXT`); and every MCP server's `{name}-call-tool` (the stateful
    provider's too), keyed by ADK's function call id, its tool named by its arguments, its envelope
    and `tool_context` kept and its `structuredContent`, which repeats the text, dropped (`MCP_RESULT`)."""
    mcp = ToolActivities(suffix='-call-tool', codec=MCP_RESULT, tool_from_args=mcp_tool_name)
    return [ToolActivities.of(activities, codec=TEXT), mcp] if activities else [mcp]


class OverspillPlugin(AdapterPlugin):
    """Reduction at the source of an ADK agent's tool activities (`tool_activities(activities)`), in
    one line: `Client.connect(..., plugins=[GoogleAdkPlugin(...), OverspillPlugin([fetch])])`.
    `limits`, `store` and `model` as `OverspillInterceptor`'s."""

    plugin_name = 'overspill.google_adk'
    select = staticmethod(tool_activities)


__all__ = [
    'ModelRetry',
    'NoWorkerError',
    'OtherStoreError',
    'OverspillInterceptor',
    'OverspillMasking',
    'OverspillPlugin',
    'OverspillTool',
    'OverspillWorker',
    'overspill_tools',
    'tool_activities',
]
