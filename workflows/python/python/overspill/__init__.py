"""Overspill for Python: keep AI agents' oversized tool outputs out of their context windows, durably.

The engine is the Rust one the Overspill worker runs, compiled into this package, so Python
reduces, spills and pages tool outputs exactly as the worker does:

- `Store(url)`: a spill store by URL (`file://`, `s3://`, `gs://`, `az://`, `memory://`), with
  the read-back pages `read_tool_result`, `grep_tool_result`, `query_tool_result` and
  `list_tool_results`.
- `Limits(json)`, `Model(url)`: size bands, and a model for Summarize bands.

The store's methods and `reduce` run on the engine's own threads, without the GIL, and return
awaitables bound to the running event loop: await them in a coroutine
(`asyncio.run(main())` where `main` awaits `store.read(handle)`), never pass one to
`asyncio.run` directly, which has no loop yet when the call is made.

**The integration core**, framework-neutral, which every agent framework's integration is a thin
adapter over:

- At the source: `OverspillInterceptor(tools, limits=None, store=None, *, model=None)`, a
  Temporal worker interceptor that reduces tool outputs in the tools' own activities, before
  Temporal records them; `ToolActivities` selects a framework's tool activities (by name, suffix
  or predicate) with a codec for its results (`TEXT`, `UNTYPED`, `TOOL_MESSAGE`, `MCP_RESULT`,
  `STRANDS_RESULT`). `OverspillPlugin(tools, ...)`: the same in one line, for a client's plugins.
- The read-back tools: `READ_BACK_TOOLS`, the engine's table (`ReadBackTool`: name, activity,
  description, JSON Schema parameters, `request(...)`, and `await tool(arguments, worker=...)`
  from workflow code).
- Masking: `MaskingSettings` and `Conversation`, the one rule each framework's hook applies;
  `WorkflowMasking`, a hook's settings with the Overspill worker its spills go through.
- The Overspill worker from workflow code: `OverspillWorker` (task queue, timeouts,
  `on_unavailable`), `ModelRetry`, `NoWorkerError`, `OtherStoreError`, `OverspillUnavailable`.
- Long runs: `overspill.external_storage` (Temporal External Storage for model-call inputs).

Integrations: `overspill.pydantic_ai` (pydantic-ai agents), `overspill.openai_agents` (the
OpenAI Agents SDK on Temporal, with the `openai-agents` extra), `overspill.langgraph` (LangGraph,
`langgraph`), `overspill.deepagents` (Deep Agents, `deepagents`), `overspill.google_adk` (Google
ADK, `google-adk`) and `overspill.strands` (Strands Agents, `strands`).
"""

from overspill._activity import (
    ModelRetry,
    NoWorkerError,
    OnUnavailable,
    OtherStoreError,
    OverspillUnavailable,
    OverspillWorker,
    SpillError,
    UnavailableError,
    execute_activity,
    unavailable_text,
)
from overspill._at_source import DEFAULT_LIMITS, OverspillInterceptor, ToolActivities, ToolCallSite, ToolSelection
from overspill._codecs import (
    MCP_RESULT,
    STRANDS_RESULT,
    TEXT,
    TOOL_MESSAGE,
    UNTYPED,
    Codec,
    Reduced,
    ToolOutputParts,
)
from overspill._markers import mask_marker
from overspill._masking import (
    Conversation,
    Conversations,
    Entry,
    MaskingSettings,
    ToolOutput,
    WorkflowMasking,
    masked_key,
)
from overspill._names import DEFAULT_TASK_QUEUE, SPILL_ACTIVITY, SUMMARIZE_ACTIVITY, default_store_url, default_task_queue
from overspill._native import ArgumentError, ConfigError, Limits, Model, Store, StoreError, sanitize_key
from overspill._plugin import OverspillPlugin
from overspill._tools import READ_BACK_TOOLS, ReadBackTool

__all__ = [
    'ArgumentError',
    'Codec',
    'ConfigError',
    'Conversation',
    'Conversations',
    'DEFAULT_LIMITS',
    'DEFAULT_TASK_QUEUE',
    'Entry',
    'Limits',
    'MCP_RESULT',
    'MaskingSettings',
    'Model',
    'ModelRetry',
    'NoWorkerError',
    'OnUnavailable',
    'OtherStoreError',
    'OverspillInterceptor',
    'OverspillPlugin',
    'OverspillUnavailable',
    'OverspillWorker',
    'READ_BACK_TOOLS',
    'ReadBackTool',
    'Reduced',
    'SPILL_ACTIVITY',
    'STRANDS_RESULT',
    'SUMMARIZE_ACTIVITY',
    'SpillError',
    'Store',
    'StoreError',
    'TEXT',
    'TOOL_MESSAGE',
    'ToolActivities',
    'ToolCallSite',
    'ToolOutput',
    'ToolOutputParts',
    'ToolSelection',
    'UNTYPED',
    'UnavailableError',
    'WorkflowMasking',
    'default_store_url',
    'default_task_queue',
    'execute_activity',
    'mask_marker',
    'masked_key',
    'sanitize_key',
    'unavailable_text',
]
