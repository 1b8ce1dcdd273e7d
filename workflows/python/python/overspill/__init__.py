"""Overspill for Python: keep AI agents' oversized tool outputs out of their context windows, durably.

The engine is the Rust one the Overspill worker runs, compiled into this package, so Python
reduces, spills and pages tool outputs exactly as the worker does:

- `Store(url)`: a spill store by URL (`file://`, `s3://`, `gs://`, `az://`, `memory://`), with
  the read-back pages `read_tool_result`, `grep_tool_result`, `query_tool_result` and
  `list_tool_results`.
- `Limits(json)`, `Model(url)`: size bands, and a model for Summarize bands.
- `OverspillInterceptor`: a Temporal worker interceptor that reduces tool outputs in the tools'
  own activities, before Temporal records them.

The store's methods and `reduce` run on the engine's own threads, without the GIL, and return
awaitables bound to the running event loop: await them in a coroutine
(`asyncio.run(main())` where `main` awaits `store.read(handle)`), never pass one to
`asyncio.run` directly, which has no loop yet when the call is made.

Integrations: `overspill.pydantic_ai` (pydantic-ai agents) and `overspill.openai_agents` (the
OpenAI Agents SDK on Temporal, with the `openai-agents` extra).
"""

from overspill._interceptor import OverspillInterceptor, Reduced, ToolActivities, ToolCallSite, ToolOutputParts
from overspill._native import ArgumentError, ConfigError, Limits, Model, Store, StoreError, sanitize_key

__all__ = [
    'ArgumentError',
    'ConfigError',
    'Limits',
    'Model',
    'OverspillInterceptor',
    'Reduced',
    'Store',
    'StoreError',
    'ToolActivities',
    'ToolCallSite',
    'ToolOutputParts',
    'sanitize_key',
]
