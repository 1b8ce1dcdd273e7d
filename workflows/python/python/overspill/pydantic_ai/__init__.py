"""Delegate pydantic-ai-harness ToolOutputLimits' spills and summaries to an Overspill worker.

An agent on Temporal (pydantic-ai's `TemporalDurability`) that uses `ToolOutputLimits` keeps its
spills in a local directory by default: other workers cannot see them and the writes are not
journaled. With this package the spills go through Overspill, a Temporal worker that stores them
in S3-compatible storage, and summaries through Overspill's model endpoint:

```python
from overspill.pydantic_ai import OverspillStore, OverspillSummarizer
from pydantic_ai_harness.tool_output_limits import Band, Spill, Summarize, ToolOutputLimits, Truncate

limits = ToolOutputLimits(
    bands=[Band(over=50_000, action=Spill(then=Truncate())),
           Band(over=10_000, action=Summarize(summarize=OverspillSummarizer(), then=Truncate()))],
    store=OverspillStore(),  # OVERSPILL_STORE, else the default of every Overspill command
)
```

- `OverspillStore`: the `OverflowStore` (spill through `tool_output_limits.spill`, read from the
  bucket or, in workflow code, through `OverspillStore.read_activity()`).
- `OverspillSummarizer`: the `Summarize(summarize=...)` callable (`tool_output_limits.summarize`).
- `OverspillToolset(store)`: the model tools `grep_tool_result` (a spill's matching lines, with
  line numbers and context), `query_tool_result` (a jq filter over a JSON spill) and
  `list_tool_results` (the run's spills, newest first), run by the Overspill worker
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

The model sees exactly the text it would see with the harness's `LocalFileStore`: the harness
still builds every marker and preview; Overspill only stores and summarizes.

When no Overspill worker polls the task queue, or the worker keeps its spills in another store
than the agent reads, the run ends: its workflow fails with one line saying which
(`OverspillUnavailable`). `on_unavailable='fallback'` (on `OverspillStore`, `OverspillSummarizer`)
keeps the run going with the band's `then` instead, logging one line.
"""

from overspill.pydantic_ai._external_storage import Boto3StorageDriverClient, external_storage
from overspill.pydantic_ai._activity import (
    NoWorkerError,
    OtherStoreError,
    OverspillUnavailable,
    UnavailableError,
)
from overspill.pydantic_ai._keys import NAMESPACE, default_store_url, sanitize_key
from overspill.pydantic_ai._masking import OverspillMasking, mask_marker
from overspill.pydantic_ai._store import (
    DEFAULT_TASK_QUEUE,
    READ_ACTIVITY,
    SPILL_ACTIVITY,
    OverspillStore,
    SpillError,
    SpillReadError,
)
from overspill.pydantic_ai._summarize import SUMMARIZE_ACTIVITY, OverspillSummarizer, SummarizeError
from overspill.pydantic_ai._toolset import GREP_ACTIVITY, LIST_ACTIVITY, QUERY_ACTIVITY, OverspillToolset

__all__ = [
    'Boto3StorageDriverClient',
    'DEFAULT_TASK_QUEUE',
    'GREP_ACTIVITY',
    'LIST_ACTIVITY',
    'NAMESPACE',
    'NoWorkerError',
    'OtherStoreError',
    'READ_ACTIVITY',
    'SPILL_ACTIVITY',
    'SUMMARIZE_ACTIVITY',
    'OverspillMasking',
    'OverspillStore',
    'OverspillSummarizer',
    'OverspillToolset',
    'OverspillUnavailable',
    'QUERY_ACTIVITY',
    'SpillError',
    'SpillReadError',
    'SummarizeError',
    'UnavailableError',
    'default_store_url',
    'external_storage',
    'mask_marker',
    'sanitize_key',
]
