"""`OverspillStore`: a pydantic-ai-harness `OverflowStore` backed by an Overspill worker."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from temporalio import activity, workflow
from temporalio.exceptions import ApplicationError

from overspill._caller import current_caller
from overspill._names import DEFAULT_TASK_QUEUE, SPILL_ACTIVITY, default_store_url, default_task_queue
from overspill.pydantic_ai._activity import ON_UNAVAILABLE, OnUnavailable, OtherStoreError, execute_activity, unavailable

if TYPE_CHECKING:
    from overspill._native import Store

READ_SCOPES = ('workflow', 'namespace', 'any')
"""The read scopes, as `overspill worker --read-scope` names them."""

READ_SPILL_ACTIVITY = 'overspill.read_spill'
"""The default name of the activity that reads a spill whole on the agent's worker
(`OverspillStore.read_activity`): not one of the Overspill worker's read-back tools."""


class SpillError(Exception):
    """A spill was not stored: the store refused the write, or the Overspill worker's answer was
    not the handle of exactly these bytes. ToolOutputLimits then runs the band's `then`."""


class SpillReadError(ApplicationError):
    """The store could not be asked for a spill (credentials, bucket, endpoint), not an unknown handle.

    Deliberately not an `OSError`: the harness turns an `OSError` into its "No stored tool result"
    answer, which would tell the model a spill is gone when the store could not be asked. It is
    non-retryable: the engine already retried a transient failure within its timeouts, and a
    configuration error does not heal, so the `read_tool_result` activity fails once and the run ends with this
    message instead of retrying forever.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, type='SpillReadError', non_retryable=True)


@dataclass
class OverspillStore:
    """Spill ToolOutputLimits payloads through Overspill: journaled writes, shared S3 reads.

    Pass it as `ToolOutputLimits(store=OverspillStore())` on an agent that runs on Temporal
    (`TemporalDurability`). The URL must name the Overspill worker's store, in any form the worker
    takes: `s3://bucket[/prefix]` (`?endpoint=…&region=…` accepted), `gs://…`, `az://…`, or
    `file:///path` (when the agent's workers run on the Overspill worker's machine; its root is
    created `0700`). Without one it is the default every
    Overspill command takes: `OVERSPILL_STORE`, else `file://$TMPDIR/overspill-<euid>` (the store
    of `overspill dev` and of a worker started without `--store`).

    When no Overspill worker polls `task_queue`, or the worker's store (each spill's result names
    it) is not this one, the run ends: its workflow fails with one line naming the queue, or both
    stores (`OverspillUnavailable`, which says how). `on_unavailable='fallback'` lets the spill
    fall back to its band's `then` instead, with one WARNING line.

    - `write(key, data)` in workflow code (where pydantic-ai-harness 0.62's `after_tool_execute`
      writes) executes `tool_output_limits.spill` on Overspill's task queue and returns the handle
      from its result: the write is journaled, a replay returns the recorded handle without
      writing again, and a write retried after a crash overwrites the same object. Outside a
      workflow (a plain `agent.run()`, a tool's activity under `OverspillInterceptor`, or
      pydantic-ai-harness 0.75's own `spill` durable operation, an activity
      `agent__<agent>__capability__tool_output_limits__spill` on the agent's worker, which
      journals the write itself), it writes the object into the store directly, under the same
      key, exactly as the worker does (line index and writer included). Under 0.75 the agent's
      worker therefore needs the store's credentials, and the output to spill travels in that
      activity's input (the tool's own result already did).
    - `read(handle)` outside workflow code, which includes the activity in which the harness runs
      its `read_tool_result` tool, reads the object straight from the store. In workflow code
      (when `read_tool_result` is configured to run in the workflow) it executes the Python
      activity `read_activity()` returns, which the agent's worker must register; the whole
      payload then enters the workflow history on every read.

    Reads from the store are scoped as the Overspill worker's (see `read_scope`): inside a
    Temporal activity, which includes the harness's `read_tool_result` and `read_activity()`, a
    spill another workflow wrote reads exactly as a missing one.

    Handles are the harness's keys, unchanged (`{run_id}/{tool_call_id}.{retry}[.content]`, and
    0.75's `{run_id}/{run_step}/{tool_call_id}.{retry}` for a call id an earlier step spilled), so
    they are identical to the handles `LocalFileStore` (`LocalFileOverflowStore`) produces. Objects live at
    `{prefix}/tool_output_limits/{sanitized handle}` in the bucket (`{path}/tool_output_limits/…`
    for `file://`), where Overspill's own `read_tool_result` and `overspill read` find them too.

    Reads and writes outside workflow code go through `engine`, Overspill's own store (the Rust
    engine in `overspill._native`): S3 endpoint, region and credentials come from the URL's
    `?endpoint=…&region=…` or the usual `AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`,
    `AWS_SECRET_ACCESS_KEY` variables, as for the worker.
    """

    url: str = field(default_factory=default_store_url)
    """The Overspill worker's store URL, `s3://bucket[/prefix]` or `file:///path` (default above)."""

    task_queue: str = field(default_factory=default_task_queue)
    """The task queue the Overspill worker polls (`OVERSPILL_TASK_QUEUE`, else `tool-output-limits`)."""

    spill_timeout: timedelta = timedelta(minutes=2)
    """`schedule_to_close_timeout` of a spill, retries included. When it passes, the spill fails
    and ToolOutputLimits runs the band's `then` (logging a WARNING) instead of hanging the run."""

    start_timeout: timedelta = timedelta(seconds=10)
    """How long a spill (or a workflow-side read) waits for a worker to start it: then no Overspill
    worker polls `task_queue`, and `on_unavailable` says what happens."""

    on_unavailable: OnUnavailable = 'fail'
    """When no Overspill worker polls `task_queue` within `start_timeout`, or the worker stores
    spills in another store than `url`: `'fail'` ends the run, its workflow failing with one line
    that says which (`OverspillUnavailable`); `'fallback'` makes the spill fail with an
    `UnavailableError`, so ToolOutputLimits runs the band's `then` (a truncation, say) and logs
    one WARNING line, and the run goes on without the spill."""

    read_timeout: timedelta = timedelta(minutes=1)
    """`schedule_to_close_timeout` of a workflow-side read through `read_activity()`."""

    read_activity_name: str = READ_SPILL_ACTIVITY
    """The activity name `read_activity()` registers under and workflow-side reads call
    (`overspill.read_spill`); set it when two stores' read activities share one worker."""

    read_task_queue: str | None = None
    """The task queue of the worker that registered `read_activity()` (default: the workflow's)."""

    read_scope: str = 'workflow'
    """Which spills a read inside a Temporal activity sees, as `overspill worker --read-scope`:
    `'workflow'` those its own workflow id wrote (continue-as-new runs included), `'namespace'`
    those of its namespace, `'any'` every spill. A spill written outside a workflow is seen only
    with `'any'`; a read outside any activity (a plain `agent.run()`) sees every spill."""

    def __post_init__(self) -> None:
        if self.read_scope not in READ_SCOPES:
            raise ValueError(f'read_scope {self.read_scope!r} is not one of {", ".join(READ_SCOPES)}')
        if self.on_unavailable not in ON_UNAVAILABLE:
            raise ValueError(f'on_unavailable {self.on_unavailable!r} is not one of {", ".join(ON_UNAVAILABLE)}')

    @cached_property
    def engine(self) -> Store:
        """Overspill's store at `url`, for reads and writes outside workflow code. Opened on first
        use, never in workflow code, where only activities touch the store."""
        from overspill._native import Store

        return Store(self.url, read_scope=self.read_scope)

    async def write(self, key: str, data: bytes) -> str:
        """Persist `data` under `key` and return its handle (the `OverflowStore` protocol)."""
        if not workflow.in_workflow():
            try:
                return await self.engine.write(key, data, caller=current_caller())
            except OSError as error:  # a refused key: the harness falls back, as for any store error
                raise SpillError(f'could not store {key!r} in {self.url}: {error}') from error
            except Exception as error:  # the engine's StoreError
                raise SpillError(f'could not store {key!r} in {self.url}: {error}') from error
        try:
            output: dict[str, str] = {'text': data.decode('utf-8')}
        except UnicodeDecodeError:
            output = {'bytes_b64': base64.b64encode(data).decode('ascii')}
        request = {
            'key': key,
            'output': output,
            # The reference's defaults (no strip_ansi, no serializer), whatever the worker's
            # `--limits` say: the stored bytes must be exactly `data`.
            'config': {},
        }
        response = await execute_activity(
            SPILL_ACTIVITY,
            [request],
            task_queue=self.task_queue,
            schedule_to_close_timeout=self.spill_timeout,
            start_timeout=self.start_timeout,
            on_unavailable=self.on_unavailable,
            summary=f'spill {key}',
        )
        if not isinstance(response, dict) or not isinstance(handle := response.get('handle'), str):
            raise SpillError(f'{SPILL_ACTIVITY} returned {type(response).__name__}, not a spill response')
        if response.get('overflow_bytes') != len(data):
            raise SpillError(
                f'{SPILL_ACTIVITY} stored {response.get("overflow_bytes")} bytes for {key!r}, not {len(data)}'
            )
        if isinstance(theirs := response.get('store'), str) and not self.same_place(theirs):
            message = (
                f'The Overspill worker on task queue {self.task_queue!r} stores spills in {theirs}, but this '
                f'OverspillStore reads {self.url}: read_tool_result would not find them. Give both the same '
                'store (OVERSPILL_STORE).'
            )
            raise unavailable(message, self.on_unavailable, OtherStoreError)
        return handle

    async def read(self, handle: str) -> bytes:
        """Return the payload stored for `handle` (the `OverflowStore` protocol).

        Raises `FileNotFoundError` for an unknown or refused handle (the harness then tells the
        model there is no such result) and `SpillReadError` when the store cannot be reached. In
        workflow code, a read no worker starts within `start_timeout` ends the run whatever
        `on_unavailable` says (a read has no `then`): `OverspillUnavailable`, or `NoWorkerError`.
        """
        if workflow.in_workflow():
            data = await execute_activity(
                self.read_activity_name,
                [handle],
                task_queue=self.read_task_queue,
                result_type=bytes,
                schedule_to_close_timeout=self.read_timeout,
                start_timeout=self.start_timeout,
                on_unavailable=self.on_unavailable,
                summary=f'read {handle}',
            )
            if not isinstance(data, bytes):
                raise SpillReadError(
                    f'{self.read_activity_name} returned {type(data).__name__}, not the bytes of {handle!r}'
                )
            return data
        return await self._get(handle)

    async def _get(self, handle: str) -> bytes:
        """The payload of `handle` from the store, as the calling activity's workflow may see it."""
        from overspill._native import StoreError

        try:
            data: bytes = await self.engine.read(handle, caller=current_caller())
        except StoreError as error:
            raise SpillReadError(
                f'could not read {handle!r} from {self.url}: {error}. Check the store URL '
                "(OVERSPILL_STORE, the same as the Overspill worker's) and its credentials."
            ) from error
        return data

    def same_place(self, url: str) -> bool:
        """Whether the store URL a worker reports (as it shows it: no query, no password) is this
        one. Plain string work: it runs in workflow code, where the engine is never opened."""

        def place(url: str) -> str:
            return url.split('?', 1)[0].rstrip('/')

        return place(url) == place(self.url)

    def read_activity(self) -> Any:
        """The Python activity that serves workflow-side reads; register it on the agent's worker.

        Only needed when the harness's `read_tool_result` tool runs in workflow code; by default it
        runs in an activity, where `read` goes to the store directly. It returns the raw bytes
        (`binary/plain`).
        """

        async def read_spill(handle: str) -> bytes:
            return await self._get(handle)

        read_spill.__doc__ = f'Read the spill `handle` from {self.url}.'
        return activity.defn(name=self.read_activity_name)(read_spill)

