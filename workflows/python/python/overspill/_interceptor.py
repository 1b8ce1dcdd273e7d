"""The interceptor's former private interface, kept for `overspill.pydantic_ai` until it moves onto
the core (`overspill._at_source`), which then deletes this module.

It takes the former signature, `OverspillInterceptor(limits, store=None, *, tools=[...])`, with
single-output adapters (`call_site(info, args)`, `output`, `with_output`), and passes `limits` to
the engine as they are (pydantic-ai's byte-compatible path: no `DEFAULT_LIMITS`).
"""

from __future__ import annotations

import json
<<<<<<< HEAD
from collections.abc import Mapping, Sequence
from typing import Any, Protocol
=======
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
>>>>>>> h-wheels

from temporalio import activity
from temporalio.worker import ExecuteActivityInput

from overspill._at_source import OverspillInterceptor as _Core
from overspill._at_source import ToolCallSite, heartbeating
from overspill._codecs import Reduced, ToolOutputParts
from overspill._native import Limits, Model, Store

<<<<<<< HEAD
__all__ = ['OverspillInterceptor', 'Reduced', 'ToolActivities', 'ToolCallSite', 'ToolOutputParts', 'heartbeating']
=======
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
>>>>>>> h-wheels


class ToolActivities(Protocol):
    """A single-output adapter, as `overspill.pydantic_ai.PydanticAiTools` is."""

    def call_site(self, info: activity.Info, args: Sequence[Any]) -> ToolCallSite | None:
        """The tool call the activity `info` runs with `args`, or `None` if it is not one this covers."""
        ...

    def output(self, result: Any) -> ToolOutputParts | None:
        """The tool's return inside the activity's `result`, or `None` if it carries none."""
        ...

    def with_output(self, result: Any, reduced: Reduced) -> Any:
        """The activity's result, carrying the reduced return instead."""
        ...


class _OneOutput:
    """A single-output adapter as a `ToolSelection`."""

    def __init__(self, tools: ToolActivities) -> None:
        self._tools = tools

    def call_site(self, info: activity.Info, input: ExecuteActivityInput) -> ToolCallSite | None:
        return self._tools.call_site(info, input.args)

    def outputs(self, result: Any) -> Sequence[ToolOutputParts]:
        parts = self._tools.output(result)
        return [] if parts is None else [parts]

    def with_outputs(self, result: Any, reduced: Sequence[Reduced | None]) -> Any:
        (new,) = reduced
        return result if new is None else self._tools.with_output(result, new)

    def covers(self, activity_type: str) -> bool:
        return False  # such adapters check their store themselves


class OverspillInterceptor(_Core):
    """The core interceptor under its former signature (for `overspill.pydantic_ai`)."""

    def __init__(
        self,
        limits: Limits | str | Mapping[str, Any] | None,
        store: Store | str | None = None,
        *,
        tools: Sequence[ToolActivities],
        model: Model | None = None,
    ) -> None:
<<<<<<< HEAD
        if not isinstance(limits, Limits):
            limits = Limits(limits if limits is None or isinstance(limits, str) else json.dumps(limits))
        super().__init__([_OneOutput(t) for t in tools], limits, store, model=model)
=======
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
>>>>>>> h-wheels
