"""Run an activity of the Overspill worker by name, from workflow code."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError, TimeoutType

DEFAULT_TASK_QUEUE = 'tool-output-limits'
"""The task queue an Overspill worker polls by default."""


def default_task_queue() -> str:
    """`OVERSPILL_TASK_QUEUE`, else `tool-output-limits`: the queue `overspill worker` and `overspill dev` poll."""
    return os.environ.get('OVERSPILL_TASK_QUEUE') or DEFAULT_TASK_QUEUE


class NoWorkerError(ApplicationError):
    """No Overspill worker started an activity within its start timeout: none polls the task
    queue. Non-retryable: the run ends with this message instead of waiting forever."""

    def __init__(self, message: str) -> None:
        super().__init__(message, type='NoOverspillWorker', non_retryable=True)


class ModelRetry(Exception):
    """The Overspill worker refused the model's arguments (its `ModelRetry` failure): the message
    tells the model what to change, and goes back to it as the tool's error."""


@dataclass(frozen=True)
class OverspillWorker:
    """Where the Overspill worker's activities run, and how long a call may take."""

    task_queue: str = field(default_factory=default_task_queue)
    """The task queue the Overspill worker polls (`OVERSPILL_TASK_QUEUE`, else `tool-output-limits`)."""

    timeout: timedelta = timedelta(minutes=1)
    """Each activity's `schedule_to_close_timeout`, retries included."""

    start_timeout: timedelta = timedelta(seconds=10)
    """How long an activity waits for a worker to start it before `NoWorkerError`."""

    async def run(self, name: str, request: dict[str, Any], summary: str) -> Any:
        """Run activity `name` with `request` (its JSON form) and return its result.

        Raises `ModelRetry` for the worker's `ModelRetry` failure, `NoWorkerError` when no worker
        polls the queue, and the `ActivityError` of any other failure.
        """
        try:
            return await workflow.execute_activity(
                name,
                request,
                task_queue=self.task_queue,
                schedule_to_close_timeout=self.timeout,
                schedule_to_start_timeout=self.start_timeout,
                summary=summary,
            )
        except ActivityError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError) and cause.type == 'ModelRetry':
                raise ModelRetry(cause.message) from None
            if isinstance(cause, TimeoutError) and cause.type == TimeoutType.SCHEDULE_TO_START:
                message = (
                    f'no Overspill worker polls task queue {self.task_queue!r}: {name} waited '
                    f'{self.start_timeout} for one to start it. Start `overspill dev`, or '
                    '`overspill worker --task-queue` with that queue.'
                )
                workflow.logger.error(message)
                raise NoWorkerError(message) from error
            raise
