"""`OverspillPlugin`: Overspill at the source in one line on a Temporal client, for every framework."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from temporalio.plugin import SimplePlugin

from overspill._at_source import OverspillInterceptor, ToolActivities, ToolSelection
from overspill._native import Limits, Model, Store


class OverspillPlugin(SimplePlugin):
    """Reduces tool outputs at the source in every worker made from the client (and the
    `Replayer`): `Client.connect(..., plugins=[<the framework's plugin>, OverspillPlugin([fetch])])`.

    Each gets `OverspillInterceptor(self.tool_activities(activities), limits, store, model=model)`
    (see `OverspillInterceptor`: by default outputs over 10,000 chars are spilled to
    `OVERSPILL_STORE`, else the store of `overspill dev`, with a 1,000-char preview), which also
    notes, on the worker that runs the workflow, the handles this run's spills gave, so that an
    Overspill worker on another store ends the run with one line. A framework's adapter says which
    activities are its tools (`tool_activities`) and names the plugin; here, `activities` are
    activity functions (or names) whose results the workflow decodes without a type.
    """

    plugin_name: ClassVar[str] = 'overspill'
    """The plugin's name, as Temporal lists it."""

    tool_activities: ClassVar[Callable[[Sequence[Callable[..., Any] | str]], Sequence[ToolSelection]]] = staticmethod(
        lambda activities: [ToolActivities.of(activities)]
    )
    """The framework's tool activities, given the activities its tools run (`activity_as_tool`'s)."""

    def __init__(
        self,
        activities: Sequence[Callable[..., Any] | str] = (),
        limits: Limits | str | Mapping[str, Any] | None = None,
        store: Store | str | None = None,
        *,
        model: Model | None = None,
    ) -> None:
        self.interceptor = OverspillInterceptor(type(self).tool_activities(activities), limits, store, model=model)
        super().__init__(self.plugin_name, interceptors=[self.interceptor])
