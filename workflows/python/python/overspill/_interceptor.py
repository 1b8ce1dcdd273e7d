"""`OverspillInterceptor`: tool outputs reduced in the tool's own activity, before Temporal records them.

An agent on Temporal runs its loop in the workflow and each tool as an activity. Whatever an
activity returns is recorded in the workflow's history, travels to the workflow worker, and is
carried in every later model call's input; a hook in the workflow (pydantic-ai's
`ToolOutputLimits`, the Agents SDK's input filters) sees an output only after all that. On the
worker that runs the tools, this interceptor reduces each covered tool's output when its
activity completes, with the engine the Overspill worker runs: Truncate and Spill happen right
there (a spill is written to the store under `{run}/{call}.{retry}`, the same key a retry or a
replay derives again, so it is an overwrite, never a second object), and only the reduced form
is recorded. A Summarize band runs there only with a `model`; without one the output goes on to
the workflow unchanged, to be summarized there. A spill the store refuses falls back to its
band's `then` with a WARNING on the logger `overspill`.

Which activities are tool calls, and where their output is, is the agent framework's business: a
`ToolActivities` adapter says it (`overspill.pydantic_ai` and `overspill.openai_agents` have one
each).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from overspill._caller import current_caller
from overspill._native import Limits, Model, Store, reduce

if TYPE_CHECKING:
    from overspill._native import Reduction  # a TypedDict of the type stub only

_logger = logging.getLogger('overspill.interceptor')


@dataclass(frozen=True)
class ToolCallSite:
    """Which tool call an activity runs, and the parts of its spill key (`{run_id}/{tool_call_id}.{retry}`)."""

    tool_name: str
    run_id: str
    tool_call_id: str
    retry: int = 0


@dataclass(frozen=True)
class ToolOutputParts:
    """A tool's return, as the engine reduces it: the value, and a ToolReturn envelope's text
    `content` and `metadata` (`envelope`: there is an envelope at all)."""

    value: Any
    content: Any = None
    metadata: Any = None
    envelope: bool = False


@dataclass(frozen=True)
class Reduced:
    """What the engine made of a tool's return: the value and content the model sees (each the
    original object where it was left as it was), the metadata, and whether it is an envelope."""

    value: Any
    content: Any
    metadata: Any
    envelope: bool
    kind: str
    """What happened to the value: `truncated`, `spilled`, `summarized` or `passthrough`."""


class ToolActivities(Protocol):
    """How one agent framework runs tools as activities."""

    def call_site(self, info: activity.Info, args: Sequence[Any]) -> ToolCallSite | None:
        """The tool call the activity `info` runs with `args`, or `None` if it is not one this covers."""
        ...

    def output(self, result: Any) -> ToolOutputParts | None:
        """The tool's return inside the activity's `result`, or `None` if it carries none (an
        error or a retry request, carried as data)."""
        ...

    def with_output(self, result: Any, reduced: Reduced) -> Any:
        """The activity's result, carrying the reduced return instead."""
        ...


class OverspillInterceptor(Interceptor):
    """Reduce the outputs of the tool activities `tools` cover, in the activity, under `limits`.

    ```python
    worker = Worker(client, task_queue='agent', activities=[...],
                    interceptors=[OverspillInterceptor(limits, store, tools=[MyFrameworkTools()])])
    ```

    `limits` is a `Limits`, or its JSON (a string, or a mapping) as `overspill worker --limits`
    takes it; `store` a `Store`, or its URL (`None`: `OVERSPILL_STORE`, else the local default
    every Overspill command shares); `model`, if any, writes the summaries of Summarize bands.
    """

    def __init__(
        self,
        limits: Limits | str | Mapping[str, Any] | None,
        store: Store | str | None = None,
        *,
        tools: Sequence[ToolActivities],
        model: Model | None = None,
    ) -> None:
        if limits is None or isinstance(limits, str):
            limits = Limits(limits)
        elif not isinstance(limits, Limits):
            limits = Limits(json.dumps(limits))
        self.limits = limits
        self.store = store if isinstance(store, Store) else Store(store)
        self.tools = tuple(tools)
        self.model = model

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        """Wrap each activity's execution."""
        return _ReduceOutputs(next, self)

    async def reduce(self, tools: ToolActivities, site: ToolCallSite, result: Any) -> Any:
        """`result` with its tool output reduced, or as it is when there is nothing to reduce here."""
        parts = tools.output(result)
        if parts is None:
            return result
        try:
            # The value crosses into the engine once, as it is: a str or bytes, or a JSON value.
            reduced = await reduce(
                self.limits,
                self.store,
                tool_name=site.tool_name,
                output=parts.value,
                run_id=site.run_id,
                tool_call_id=site.tool_call_id,
                retry=site.retry,
                content=parts.content,
                metadata=parts.metadata,
                envelope=parts.envelope,
                caller=current_caller(),
                model=self.model,
            )
        except (TypeError, ValueError) as error:
            # A value, content or metadata that is not JSON: the workflow's serializer knows its
            # Python type, and renders it as the framework would.
            _logger.debug('leaving the output of tool %r to the workflow: %s', site.tool_name, error)
            return result
        if reduced is None:
            return result
        return tools.with_output(result, _reduced(parts, reduced))


class _ReduceOutputs(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, root: OverspillInterceptor) -> None:
        super().__init__(next)
        self._root = root

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        result = await super().execute_activity(input)
        info = activity.info()
        for tools in self._root.tools:
            site = tools.call_site(info, input.args)
            if site is not None:
                async with _heartbeating(info):
                    return await self._root.reduce(tools, site, result)
        return result


@asynccontextmanager
async def _heartbeating(info: activity.Info) -> AsyncIterator[None]:
    """Heartbeat at half the activity's heartbeat timeout while the body runs: a spill of a large
    output can take longer than the timeout the tool's own heartbeats were sized for."""
    if info.heartbeat_timeout is None:
        yield
        return
    interval = info.heartbeat_timeout.total_seconds() / 2

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(interval)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task


def _reduced(parts: ToolOutputParts, reduced: Reduction) -> Reduced:
    """The engine's reduced result, with the original objects where it left them."""
    value, content = reduced['return_value'], reduced['content']
    return Reduced(
        value=parts.value if value is None else value,
        content=parts.content if content is None else content,
        metadata=reduced['metadata'],
        envelope=reduced['envelope'],
        kind=reduced['kind'],
    )
