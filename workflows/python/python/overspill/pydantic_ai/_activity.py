"""Run an Overspill activity from workflow code, cancellation-safely.

pydantic-ai runs agent graph steps as anyio task-group children. Awaiting
`workflow.execute_activity()` straight from such a task can livelock the workflow when the
enclosing cancel scope is cancelled: anyio re-delivers `task.cancel()` on every loop turn, each
one becomes another `request_cancel_activity` command, and the activation never completes.
pydantic-ai's own `durable_exec.temporal._activity_execution` avoids it by shielding the
activity handle and forwarding exactly one cancellation; this module does the same (that helper
is private to pydantic-ai, so it is mirrored here rather than imported).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import anyio
from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError, TimeoutType


class NoWorkerError(ApplicationError):
    """No Overspill worker started an activity within its start timeout: none polls the task
    queue (or every one is saturated). Non-retryable; a spill or summary then runs its band's `then`."""

    def __init__(self, message: str) -> None:
        super().__init__(message, type='NoOverspillWorker', non_retryable=True)


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
    """Run activity `name` with `args` and return its result, like `workflow.execute_activity`.

    `schedule_to_close_timeout` is required on purpose: Temporal's default retry policy retries
    forever, so without it a worker that is down would make the agent run hang instead of
    letting ToolOutputLimits fall back to the band's `then`. `start_timeout` (schedule-to-start)
    says within seconds that no worker polls the queue: the call raises `NoWorkerError`, logged.
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
            workflow.logger.error(message)
            raise NoWorkerError(message) from error
        raise
    except asyncio.CancelledError:
        # The shield kept the Temporal handle alive: hand exactly one cancellation to Temporal,
        # then wait for its resolution without anyio re-delivering cancellation every turn.
        if not handle.done():
            handle.cancel()
            with anyio.CancelScope(shield=True):
                await asyncio.wait([handle])
        raise
