"""Overspill for pydantic-ai agents on Temporal: tool outputs reduced at the source, spilled
durably, read back with bounded tools.

The worker that runs the agent's tools gets `OverspillInterceptor`: each tool's output is reduced
in its own activity, under the agent's `ToolOutputLimits`, before Temporal records it, so nothing
large reaches the history or the workflow. The agent keeps `ToolOutputLimits(store=OverspillStore())`
to read spills back (and to reduce whatever the interceptor left, such as a Summarize band
without a model):

```python
from overspill.pydantic_ai import OverspillInterceptor, OverspillStore
from pydantic_ai_harness.tool_output_limits import ToolOutputLimits

limits = ToolOutputLimits(store=OverspillStore())  # OVERSPILL_STORE, else the default of every Overspill command
agent = Agent(model, capabilities=[limits, TemporalDurability()], name='agent')
worker = Worker(client, task_queue='agent', workflows=[...], interceptors=[OverspillInterceptor(limits)])
```

- `OverspillInterceptor(limits)`: the at-source reduction, on the tools' worker.
- `OverspillStore`: the `OverflowStore` (spill through `tool_output_limits.spill`, read from the
  bucket or, in workflow code, through `OverspillStore.read_activity()`).
- `OverspillSummarizer`: the `Summarize(summarize=...)` callable (`tool_output_limits.summarize`).
- `OverspillToolset(store)`: the model tools the harness lacks, `query_tool_result` (a jq filter
  over a JSON spill) and `list_tool_results` (the run's spills, newest first), and with
  pydantic-ai-harness 0.62, which has none of its own, `grep_tool_result` (a spill's matching
  lines, with line numbers and context), run by the Overspill worker
  (`tool_output_limits.grep_tool_result` / `.query_tool_result` / `.list_tool_results`) from
  workflow code.
- `OverspillMasking(store)`: a history processor (`ProcessHistory(OverspillMasking(store))`) that,
  once the messages exceed a budget, replaces older tool returns with a marker naming the tool, the
  size and a handle in the store (spilling a return first if it was not spilled), so the model
  reads them back instead of carrying them in every request.
- `external_storage(url)`: Temporal External Storage for the agent's client, in the bucket the
  Overspill worker reads with `--external-storage`, so tool outputs of any size stay out of
  the workflow history:
  `Client.connect(..., data_converter=DataConverter(external_storage=external_storage('s3://spills')))`.

The model sees exactly the text it would see with the harness's `LocalFileStore`: the
interceptor runs Overspill's engine, whose markers and previews are the harness's byte for byte,
in the installed release's words (pydantic-ai-harness 0.62 or 0.75; another is refused at
start-up, naming those).

When no Overspill worker polls the task queue, or the worker keeps its spills in another store
than the agent reads, the run ends: its workflow fails with one line saying which
(`OverspillUnavailable`). `on_unavailable='fallback'` (on `OverspillStore`, `OverspillSummarizer`)
keeps the run going with the band's `then` instead, logging one line.

This package was `overspill_pydantic_ai` (distribution `overspill-pydantic-ai`); that name still
imports, re-exporting these names with a `DeprecationWarning`.
"""

from overspill._native import sanitize_key
from overspill.pydantic_ai._activity import (
    NoWorkerError,
    OtherStoreError,
    OverspillUnavailable,
    UnavailableError,
)
from overspill.pydantic_ai._at_source import OverspillInterceptor, PydanticAiTools, limits_config
from overspill.pydantic_ai._external_storage import Boto3StorageDriverClient, external_storage
from overspill._markers import mask_marker
from overspill.pydantic_ai._masking import OverspillMasking
from overspill._names import DEFAULT_TASK_QUEUE, SPILL_ACTIVITY, SUMMARIZE_ACTIVITY, default_store_url
from overspill._tools import GREP_ACTIVITY, LIST_ACTIVITY, QUERY_ACTIVITY
from overspill.pydantic_ai._store import READ_SPILL_ACTIVITY, OverspillStore, SpillError, SpillReadError
from overspill.pydantic_ai._summarize import OverspillSummarizer, SummarizeError
from overspill.pydantic_ai._toolset import OverspillToolset

__all__ = [
    'Boto3StorageDriverClient',
    'DEFAULT_TASK_QUEUE',
    'GREP_ACTIVITY',
    'LIST_ACTIVITY',
    'NoWorkerError',
    'OtherStoreError',
    'READ_SPILL_ACTIVITY',
    'SPILL_ACTIVITY',
    'SUMMARIZE_ACTIVITY',
    'OverspillInterceptor',
    'OverspillMasking',
    'OverspillStore',
    'OverspillSummarizer',
    'OverspillToolset',
    'OverspillUnavailable',
    'PydanticAiTools',
    'QUERY_ACTIVITY',
    'SpillError',
    'SpillReadError',
    'SummarizeError',
    'UnavailableError',
    'default_store_url',
    'external_storage',
    'limits_config',
    'mask_marker',
    'sanitize_key',
]


def __getattr__(name: str) -> object:
    """`READ_ACTIVITY`, the former name of `READ_SPILL_ACTIVITY` (the agent worker's activity that
    reads a spill whole), with a `DeprecationWarning`: `overspill.READ_ACTIVITY` is the Overspill
    worker's `read_tool_result`, another activity."""
    if name == 'READ_ACTIVITY':
        import warnings

        warnings.warn(
            'overspill.pydantic_ai.READ_ACTIVITY is now READ_SPILL_ACTIVITY', DeprecationWarning, stacklevel=2
        )
        return READ_SPILL_ACTIVITY
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
