"""The interceptor's former private interface, kept for `overspill.pydantic_ai` until it moves onto
the core (`overspill._at_source`), which then deletes this module.

It takes the former signature, `OverspillInterceptor(limits, store=None, *, tools=[...])`, with
single-output adapters (`call_site(info, args)`, `output`, `with_output`), and passes `limits` to
the engine as they are (pydantic-ai's byte-compatible path: no `DEFAULT_LIMITS`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from temporalio import activity
from temporalio.worker import ExecuteActivityInput

from overspill._at_source import OverspillInterceptor as _Core
from overspill._at_source import ToolCallSite, heartbeating
from overspill._codecs import Reduced, ToolOutputParts
from overspill._native import Limits, Model, Store

__all__ = ['OverspillInterceptor', 'Reduced', 'ToolActivities', 'ToolCallSite', 'ToolOutputParts', 'heartbeating']


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
        if not isinstance(limits, Limits):
            limits = Limits(limits if limits is None or isinstance(limits, str) else json.dumps(limits))
        super().__init__([_OneOutput(t) for t in tools], limits, store, model=model)
