"""`OverspillSummarizer`: a `Summarize(summarize=...)` callable backed by an Overspill worker."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from temporalio import workflow

from overspill.pydantic_ai._activity import ON_UNAVAILABLE, OnUnavailable, execute_activity
from overspill._names import SUMMARIZE_ACTIVITY, default_task_queue


class SummarizeError(Exception):
    """The summary could not be produced (outside a workflow, or a malformed response)."""


@dataclass
class OverspillSummarizer:
    """Summarize oversized tool output with the Overspill worker's model, as a journaled activity.

    Pass it as `Summarize(summarize=OverspillSummarizer())` in a ToolOutputLimits band. Called
    from workflow code (where the harness runs its bands), it executes `tool_output_limits.summarize`
    on Overspill's task queue: the worker renders the prompt (the reference's template unless
    `prompt` is set), calls its OpenAI-compatible endpoint (`OVERSPILL_MODEL_URL`, `OVERSPILL_MODEL`)
    and returns the stripped summary. The call is journaled, so a replay returns the recorded
    summary instead of calling the model again -- unlike an ordinary custom `summarize` callable,
    which the harness documents as possibly re-run on replay.

    When no Overspill worker polls `task_queue`, the run ends, its workflow failing with one line
    naming the queue (`OverspillUnavailable`); `on_unavailable='fallback'` runs the band's `then`
    instead, with one WARNING line. A worker that answers with an error (no model configured, the
    model's endpoint down) makes the band run its `then`, the harness logging a WARNING.

    Outside a workflow there is no activity to run: the call raises `SummarizeError`, which the
    harness logs at WARNING before running the band's `then`. The model's token usage is reported
    by the activity but, as for any custom `summarize` callable, not folded into the run's usage.
    """

    task_queue: str = field(default_factory=default_task_queue)
    """The task queue the Overspill worker polls (`OVERSPILL_TASK_QUEUE`, else `tool-output-limits`)."""

    model: str | None = None
    """The model name to ask for (default: the worker's `OVERSPILL_MODEL`)."""

    prompt: str | None = None
    """A prompt template with `{tool_name}` and `{output}` (default: the harness's own)."""

    timeout: timedelta = timedelta(minutes=5)
    """`schedule_to_close_timeout` of the call, retries included; then the band's `then` runs."""

    start_timeout: timedelta = timedelta(seconds=10)
    """How long the call waits for a worker to start it; then no Overspill worker polls
    `task_queue`, and `on_unavailable` says what happens."""

    on_unavailable: OnUnavailable = 'fail'
    """When no Overspill worker starts the call within `start_timeout`: `'fail'` ends the run, its
    workflow failing with one line naming the queue (`OverspillUnavailable`); `'fallback'` makes
    the call fail with `NoWorkerError`, so ToolOutputLimits runs the band's `then` and logs one
    WARNING line."""

    def __post_init__(self) -> None:
        if self.on_unavailable not in ON_UNAVAILABLE:
            raise ValueError(f'on_unavailable {self.on_unavailable!r} is not one of {", ".join(ON_UNAVAILABLE)}')

    async def __call__(self, tool_name: str, text: str) -> str:
        """Return the summary of `text`, the output of tool `tool_name`."""
        if not workflow.in_workflow():
            raise SummarizeError(
                'OverspillSummarizer runs the summary as a Temporal activity: call it from workflow code'
            )
        request: dict[str, str] = {'tool_name': tool_name, 'output': text}
        if self.model is not None:
            request['model'] = self.model
        if self.prompt is not None:
            request['prompt'] = self.prompt
        response = await execute_activity(
            SUMMARIZE_ACTIVITY,
            [request],
            task_queue=self.task_queue,
            schedule_to_close_timeout=self.timeout,
            start_timeout=self.start_timeout,
            on_unavailable=self.on_unavailable,
            summary=f'summarize {tool_name}',
        )
        if not isinstance(response, dict) or not isinstance(summary := response.get('summary'), str):
            raise SummarizeError(f'{SUMMARIZE_ACTIVITY} returned {type(response).__name__}, not a summary')
        return summary
