"""Run an Overspill activity from workflow code, cancellation-safely, and end the run when no
Overspill can serve it.

The call and its failures are the core's (`overspill._activity`: cancellation-safe under
pydantic-ai's anyio task groups, `NoWorkerError` and `OtherStoreError` the same classes for every
framework); what is pydantic-ai's own is how a failure ends the run, since pydantic-ai-harness
catches every `Exception` a store or summarizer raises.

**When Overspill cannot serve the agent** (no worker polls its task queue; the worker keeps its
spills in another store than the agent reads), the run ends by default, saying why in one line
(`OverspillUnavailable`). With `on_unavailable='fallback'` the call raises an
`UnavailableError` instead: ToolOutputLimits runs the band's `then` and logs one line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from temporalio import workflow

from overspill._activity import (
    ON_UNAVAILABLE,
    NoWorkerError,
    OnUnavailable,
    OtherStoreError,
    OverspillUnavailable,
    UnavailableError,
)
from overspill._activity import execute_activity as _execute_activity

__all__ = [
    'ON_UNAVAILABLE',
    'NoWorkerError',
    'OnUnavailable',
    'OtherStoreError',
    'OverspillUnavailable',
    'UnavailableError',
    'execute_activity',
    'unavailable',
]


def unavailable(
    message: str, on_unavailable: OnUnavailable, fallback: Callable[[str], UnavailableError]
) -> OverspillUnavailable | UnavailableError:
    """The exception that says `message` (one line): `OverspillUnavailable`, logged at ERROR,
    which ends the run (pydantic-ai-harness would catch any `Exception` and fall back); or, with
    `on_unavailable='fallback'`, `fallback(message)`, marked not to end it (`ends_run`, which the
    masking core reads), which the harness's fallback logs."""
    if on_unavailable == 'fallback':
        error = fallback(message)
        error.ends_run = False
        return error
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
    """The core's `execute_activity` (see `overspill._activity`), with no worker within
    `start_timeout` raised as `unavailable(...)`'s exception for `on_unavailable`."""
    try:
        return await _execute_activity(
            name,
            args,
            task_queue=task_queue,
            schedule_to_close_timeout=schedule_to_close_timeout,
            start_timeout=start_timeout,
            result_type=result_type,
            summary=summary,
        )
    except NoWorkerError as error:
        raise unavailable(error.message, on_unavailable, NoWorkerError) from None
