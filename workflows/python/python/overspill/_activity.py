"""Run an activity of the Overspill worker from workflow code, and say what its failures mean.

Every integration calls the worker the same way (`OverspillWorker.run`): on its task queue, with
a schedule-to-close timeout (Temporal's default retry policy retries forever, so without one a
worker that is down would hang the run) and a schedule-to-start timeout that says within seconds
that no worker polls the queue. The failures are typed, the same for every framework:

- `ModelRetry`: the worker refused the model's arguments (its `ModelRetry` failure); the message
  says what to change, and each adapter hands it back to the model in its framework's form.
- `NoWorkerError`, `OtherStoreError` (both `UnavailableError`): Overspill cannot serve the run.
  With `on_unavailable='fail'` (the default) the run should end, saying why in one line: these
  are non-retryable `ApplicationError`s, which fail the workflow wherever the framework lets an
  exception through. A framework that catches every `Exception` (pydantic-ai-harness does) ends
  the run with `OverspillUnavailable` instead. With `on_unavailable='fallback'` the caller goes on
  without Overspill (a read-back tool answers `unavailable_text`, masking leaves the output).

The call itself is cancellation-safe (`execute_activity`).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError, TimeoutType

from overspill._names import SPILL_ACTIVITY, default_task_queue, same_store

try:  # anyio is there with every framework that runs steps in anyio task groups (pydantic-ai)
    import anyio
except ImportError:  # pragma: no cover - then no anyio cancel scope can be cancelling us either
    anyio = None  # type: ignore[assignment]

OnUnavailable = Literal['fail', 'fallback']
"""What a call does when Overspill cannot serve it: `'fail'` ends the run, `'fallback'` goes on
without it."""

ON_UNAVAILABLE: tuple[OnUnavailable, ...] = ('fail', 'fallback')
"""The values `on_unavailable` takes."""


class ModelRetry(Exception):
    """The Overspill worker refused the model's arguments (its `ModelRetry` failure): the message
    tells the model what to change. Each adapter hands it back to the model as its framework's
    retry or tool error."""


class UnavailableError(ApplicationError):
    """Overspill cannot serve this run: no worker polls its queue, or the worker keeps its spills
    in another store. Non-retryable: raised in workflow code, it fails the workflow with its one
    line where the framework lets it through."""

    overspill_unavailable = True
    """Marks the exceptions whose fallback a framework's log states on one line."""

    ends_run = True
    """Whether the run is to end (`on_unavailable='fail'`) rather than go on without Overspill."""

    def __init__(self, message: str, type: str) -> None:
        super().__init__(message, type=type, non_retryable=True)


class NoWorkerError(UnavailableError):
    """No Overspill worker started an activity within its start timeout: none polls the task
    queue (or every one is saturated)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, type='NoOverspillWorker')


class OtherStoreError(UnavailableError):
    """The Overspill worker keeps its spills in another store than the one this run's spills were
    written to, or are read from: `read_tool_result` would not find them."""

    def __init__(self, message: str) -> None:
        super().__init__(message, type='OverspillOtherStore')


class OverspillUnavailable(asyncio.CancelledError):
    """Overspill cannot serve this run, and the run ends: its workflow fails with this one line.

    For frameworks that catch every `Exception` a hook raises and go on (pydantic-ai-harness's
    ToolOutputLimits logs it and runs the band's `then`), where an `UnavailableError` could not end
    the run. Only a `BaseException` passes such a handler, and of those Temporal turns only a
    `CancelledError` that reaches the workflow into a failure (any other leaves the workflow open
    with no command until its timeout). Since no cancellation of the workflow was requested,
    Temporal FAILS the workflow (not cancels it) with this message; the failure's type is
    `CanceledFailure`. Workflow code that catches `asyncio.CancelledError` to clean up sees it
    too, and should re-raise it, as for any cancellation.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def unavailable_text(tool: str) -> str:
    """What the model is told when a read-back tool cannot be served and its caller chose
    `on_unavailable='fallback'`: not to call it again, since no retry would find a worker either."""
    return f'[{tool} is unavailable in this run: do not call it again.]'


async def execute_activity(
    name: str,
    args: Sequence[Any],
    *,
    task_queue: str | None,
    schedule_to_close_timeout: timedelta,
    start_timeout: timedelta | None = None,
    result_type: type | None = None,
    summary: str | None = None,
) -> Any:
    """Run activity `name` with `args` from workflow code and return its result, like
    `workflow.execute_activity`, but cancellation-safe; `NoWorkerError` when no worker starts it
    within `start_timeout` (schedule-to-start).

    Frameworks that run agent steps as anyio task-group children (pydantic-ai) would otherwise
    livelock the workflow when the enclosing cancel scope is cancelled: anyio re-delivers
    `task.cancel()` on every loop turn, each one becomes another `request_cancel_activity`
    command, and the activation never completes. So the activity handle is shielded and exactly
    one cancellation is forwarded to it, as pydantic-ai's own (private) `_activity_execution` does.
    """
    handle = workflow.start_activity(
        name,
        args=args,
        task_queue=task_queue,
        result_type=result_type,
        schedule_to_close_timeout=schedule_to_close_timeout,
        schedule_to_start_timeout=start_timeout,
        summary=summary,
    )
    try:
        return await asyncio.shield(handle)
    except ActivityError as error:
        cause = error.cause
        if isinstance(cause, TimeoutError) and cause.type == TimeoutType.SCHEDULE_TO_START:
            queue = task_queue or workflow.info().task_queue
            raise NoWorkerError(
                f'no Overspill worker polls task queue {queue!r}: {name} waited {start_timeout} for one to '
                'start it. Start `overspill dev`, or `overspill worker --task-queue` with that queue.'
            ) from None
        raise
    except asyncio.CancelledError:
        # The shield kept the Temporal handle alive: hand exactly one cancellation to Temporal,
        # then wait for its resolution without anyio re-delivering cancellation every turn.
        if not handle.done():
            handle.cancel()
            if anyio is not None:
                with anyio.CancelScope(shield=True):
                    await asyncio.wait([handle])
            else:
                await asyncio.wait([handle])
        raise


@dataclass(frozen=True)
class OverspillWorker:
    """The Overspill worker a workflow calls (for read-back pages and spills): its task queue,
    how long a call may take, and what the run does when the worker cannot serve it.

    ```python
    OverspillWorker()  # OVERSPILL_TASK_QUEUE, else tool-output-limits; 1 min a call; 10 s to start
    OverspillWorker(task_queue='overspill', timeout=timedelta(minutes=5), on_unavailable='fallback')
    ```
    """

    task_queue: str = field(default_factory=default_task_queue)
    """The task queue the Overspill worker polls (`OVERSPILL_TASK_QUEUE`, else `tool-output-limits`),
    as `overspill worker --task-queue` and `overspill dev` take it."""

    timeout: timedelta = timedelta(minutes=1)
    """Each call's `schedule_to_close_timeout`, retries included: then the call fails."""

    start_timeout: timedelta = timedelta(seconds=10)
    """How long a call waits for a worker to start it: then no Overspill worker polls
    `task_queue` (`NoWorkerError`), and `on_unavailable` says what happens."""

    on_unavailable: OnUnavailable = 'fail'
    """When no worker polls `task_queue`, or the worker keeps its spills in another store than this
    run's spills went to: `'fail'` ends the run with one line saying which (`NoWorkerError`,
    `OtherStoreError`, logged at ERROR); `'fallback'` goes on without Overspill (a read-back tool
    tells the model it is unavailable, masking leaves the output in context), with one WARNING."""

    def __post_init__(self) -> None:
        if self.on_unavailable not in ON_UNAVAILABLE:
            raise ValueError(f'on_unavailable {self.on_unavailable!r} is not one of {", ".join(ON_UNAVAILABLE)}')

    async def run(self, name: str, request: dict[str, Any], summary: str) -> Any:
        """Run the worker's activity `name` with `request` (its JSON form) from workflow code.

        Raises `ModelRetry` for the worker's `ModelRetry` failure, `NoWorkerError` when no worker
        polls the queue, and the `ActivityError` of any other failure.
        """
        try:
            return await execute_activity(
                name,
                [request],
                task_queue=self.task_queue,
                schedule_to_close_timeout=self.timeout,
                start_timeout=self.start_timeout,
                summary=summary,
            )
        except UnavailableError as error:
            raise self.unavailable(error) from None
        except ActivityError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError) and cause.type == 'ModelRetry':
                raise ModelRetry(cause.message) from None
            raise

    async def spill(self, key: str, data: bytes, *, store: str | None = None) -> str:
        """Store `data` under `key` through the worker's `tool_output_limits.spill` and return its
        handle: the write is journaled, so a replay gets the recorded handle back without writing,
        and a retry overwrites the same object.

        `store`, when known, is the store this run's spills are read from or were written to: a
        worker that keeps its spills elsewhere raises `OtherStoreError` (see `on_unavailable`).
        Raises `SpillError` when the worker's answer is not the handle of exactly these bytes.
        """
        try:
            output: dict[str, str] = {'text': data.decode('utf-8')}
        except UnicodeDecodeError:
            output = {'bytes_b64': base64.b64encode(data).decode('ascii')}
        # The reference's defaults (no strip_ansi, no serializer), whatever the worker's `--limits`
        # say: the stored bytes must be exactly `data`.
        request = {'key': key, 'output': output, 'config': {}}
        response = await self.run(SPILL_ACTIVITY, request, f'spill {key}')
        if not isinstance(response, dict) or not isinstance(handle := response.get('handle'), str):
            raise SpillError(f'{SPILL_ACTIVITY} returned {type(response).__name__}, not a spill response')
        if response.get('overflow_bytes') != len(data):
            raise SpillError(f'{SPILL_ACTIVITY} stored {response.get("overflow_bytes")} bytes for {key!r}, not {len(data)}')
        theirs = response.get('store')
        if store is not None and isinstance(theirs, str) and not same_store(theirs, store):
            raise self.unavailable(
                OtherStoreError(
                    f'The Overspill worker on task queue {self.task_queue!r} stores spills in {theirs}, but this '
                    f"run's spills are in {store}: read_tool_result would not find them. Give both the same store "
                    '(OVERSPILL_STORE).'
                )
            )
        return handle

    def unavailable(self, error: UnavailableError) -> UnavailableError:
        """`error`, marked and logged as `on_unavailable` says: at ERROR when it ends the run (the
        fallback's caller logs its own WARNING)."""
        error.ends_run = self.on_unavailable == 'fail'
        if error.ends_run:
            workflow.logger.error(error.message)
        return error


class SpillError(Exception):
    """A spill was not stored: the store refused the write, or the Overspill worker's answer was
    not the handle of exactly these bytes."""
