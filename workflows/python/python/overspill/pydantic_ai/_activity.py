"""Run an Overspill activity from workflow code, cancellation-safely, and end the run when no
Overspill can serve it.

pydantic-ai runs agent graph steps as anyio task-group children. Awaiting
`workflow.execute_activity()` straight from such a task can livelock the workflow when the
enclosing cancel scope is cancelled: anyio re-delivers `task.cancel()` on every loop turn, each
one becomes another `request_cancel_activity` command, and the activation never completes.
pydantic-ai's own `durable_exec.temporal._activity_execution` avoids it by shielding the
activity handle and forwarding exactly one cancellation; this module does the same (that helper
is private to pydantic-ai, so it is mirrored here rather than imported).

**When Overspill cannot serve the agent** (no worker polls its task queue; the worker keeps its
spills in another store than the agent reads), the run ends by default, saying why in one line
(`OverspillUnavailable`). With `on_unavailable='fallback'` the call raises an
`UnavailableError` instead: ToolOutputLimits runs the band's `then` and logs one line.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, Literal

import anyio
from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError, TimeoutType

OnUnavailable = Literal['fail', 'fallback']
"""What a spill, summary or search does when Overspill cannot serve it: `'fail'` ends the run
(`OverspillUnavailable`), `'fallback'` lets it fall back (`UnavailableError`)."""

ON_UNAVAILABLE: tuple[OnUnavailable, ...] = ('fail', 'fallback')
"""The values `on_unavailable` takes."""


class OverspillUnavailable(asyncio.CancelledError):
    """Overspill cannot serve this agent: the run ends, and its workflow fails with this one line.

    Raised (with `on_unavailable='fail'`, the default) when no Overspill worker starts a spill,
    summary or search within `start_timeout`, or when the worker that stored a spill keeps its
    spills in another store than the agent's `OverspillStore` reads.

    Why an `asyncio.CancelledError`: the harness's ToolOutputLimits catches every `Exception` a
    store or summarizer raises (it logs a WARNING with the traceback and runs the band's `then`),
    so an ordinary exception, even a Temporal `ApplicationError`, cannot end the run from a spill
    (a `UserError`, which `PydanticAIPlugin` fails workflows with, ends a summary but only makes a
    spill warn and fall back; every type in its `workflow_failure_exception_types` is an
    `Exception`). Only a `BaseException` passes it, and of those Temporal turns only a `CancelledError` that
    reaches the workflow into a failure: any other leaves the workflow open with no command
    (until its timeout). pydantic-ai passes a `CancelledError` through the run unchanged (it does
    not translate one it did not request), and Temporal, since no cancellation of the workflow was
    requested, FAILS the workflow (not cancels it) with this message; the failure's type is
    `CanceledFailure`. Workflow code that catches `asyncio.CancelledError` to clean up sees it
    too, and should re-raise it, as for any cancellation.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UnavailableError(ApplicationError):
    """Overspill cannot serve this call, and its caller chose `on_unavailable='fallback'`: a
    spill or summary runs its band's `then`. ToolOutputLimits logs it on one line (the reason, no
    traceback: see `_OneLineFallbacks`)."""

    overspill_unavailable = True
    """Marks the exceptions whose fallback the harness's WARNING states on one line."""

    def __init__(self, message: str, type: str) -> None:
        super().__init__(message, type=type, non_retryable=True)


class NoWorkerError(UnavailableError):
    """No Overspill worker started an activity within its start timeout: none polls the task
    queue (or every one is saturated). With `on_unavailable='fallback'`; by default the run ends
    (`OverspillUnavailable`)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, type='NoOverspillWorker')


class OtherStoreError(UnavailableError):
    """The Overspill worker stored a spill in another store than the agent's `OverspillStore`
    reads, where `read_tool_result` would not find it. With `on_unavailable='fallback'`; by
    default the run ends (`OverspillUnavailable`)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, type='OverspillOtherStore')


def unavailable(
    message: str, on_unavailable: OnUnavailable, fallback: Callable[[str], UnavailableError]
) -> OverspillUnavailable | UnavailableError:
    """The exception that says `message` (one line): `OverspillUnavailable`, logged at ERROR,
    which ends the run; or, with `on_unavailable='fallback'`, `fallback(message)`, which the
    caller's fallback logs."""
    if on_unavailable == 'fallback':
        return fallback(message)
    workflow.logger.error(message)
    return OverspillUnavailable(message)


class _OneLineFallbacks(logging.Filter):
    """Puts ToolOutputLimits' WARNING about a fallback caused by an `UnavailableError` on one line:
    the harness logs it with the traceback (about 200 lines through Temporal), which says nothing
    the reason does not. Records of any other exception pass unchanged."""

    overspill_one_line = True
    """Marks this filter on the harness's logger, which every import of this module shares."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if getattr(error, 'overspill_unavailable', False):
            record.msg = f'{record.getMessage()}: {getattr(error, "message", error)}'
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


_HARNESS_LOGGER = logging.getLogger('pydantic_ai_harness.tool_output_limits._capability')
# Once per process: the workflow sandbox imports this module again for each workflow, and the
# logger (the `logging` module's) is shared by all of them.
if not any(getattr(f, 'overspill_one_line', False) for f in _HARNESS_LOGGER.filters):
    _HARNESS_LOGGER.addFilter(_OneLineFallbacks())


async def execute_activity(
    name: str,
    args: Sequence[Any],
    *,
    task_queue: str | None,
    schedule_to_close_timeout: timedelta,
    start_timeout: timedelta | None = None,
    on_unavailable: OnUnavailable = 'fail',
    result_type: type | None = None,
    summary: str | None = None,
) -> Any:
    """Run activity `name` with `args` and return its result, like `workflow.execute_activity`.

    `schedule_to_close_timeout` is required on purpose: Temporal's default retry policy retries
    forever, so without it a worker that is down would make the agent run hang. `start_timeout`
    (schedule-to-start) says within seconds that no worker polls the queue: the call raises
    `unavailable(...)`'s exception for `on_unavailable`, naming the queue.
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
            message = (
                f'no Overspill worker polls task queue {queue!r}: {name} waited {start_timeout} for one to '
                'start it. Start `overspill dev`, or `overspill worker --task-queue` with that queue.'
            )
            raise unavailable(message, on_unavailable, NoWorkerError) from None
        raise
    except asyncio.CancelledError:
        # The shield kept the Temporal handle alive: hand exactly one cancellation to Temporal,
        # then wait for its resolution without anyio re-delivering cancellation every turn.
        if not handle.done():
            handle.cancel()
            with anyio.CancelScope(shield=True):
                await asyncio.wait([handle])
        raise
