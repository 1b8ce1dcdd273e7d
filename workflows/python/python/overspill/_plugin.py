"""`OverspillPlugin`: reduction at the source in one line, for frameworks that set up Temporal
through plugins.

Given to the client, a plugin reaches every worker built from it and the `Replayer`: the one
`OverspillInterceptor` then reduces the tool activities' outputs on the workers that run them and
notes its handles on the workers that run the workflows. It sets no data converter, so it
composes with each framework's plugin in any order, and a client's External Storage is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from temporalio.plugin import SimplePlugin

from overspill._at_source import OverspillInterceptor, ToolSelection
from overspill._native import Limits, Model, Store


class OverspillPlugin(SimplePlugin):
    """A plugin putting `OverspillInterceptor(tools, limits, store, model=model)` on every worker
    built from the client, and on the `Replayer`.

    ```python
    client = await Client.connect('localhost:7233', plugins=[LangGraphPlugin(...), OverspillPlugin(tools)])
    ```
    """

    def __init__(
        self,
        tools: Sequence[ToolSelection | Callable[..., Any] | str],
        limits: Limits | str | Mapping[str, Any] | None = None,
        store: Store | str | None = None,
        *,
        model: Model | None = None,
        name: str = 'overspill',
    ) -> None:
        self.interceptor = OverspillInterceptor(tools, limits, store, model=model)
        """The interceptor every worker gets."""
        super().__init__(name, interceptors=[self.interceptor])


class AdapterPlugin(OverspillPlugin):
    """A framework adapter's `OverspillPlugin`: the framework's tool activities come from the
    activities its tools run (`select`), and the plugin has the adapter's `plugin_name`.

    ```python
    class OverspillPlugin(AdapterPlugin):
        plugin_name = 'overspill.google_adk'
        select = staticmethod(tool_activities)
    ```
    """

    plugin_name: ClassVar[str]
    """The plugin's name, as Temporal lists it."""

    select: ClassVar[Callable[[Sequence[Callable[..., Any] | str]], Sequence[ToolSelection]]]
    """The framework's tool activities, given the activities its tools run."""

    def __init__(
        self,
        activities: Sequence[Callable[..., Any] | str] = (),
        *,
        limits: Limits | str | Mapping[str, Any] | None = None,
        store: Store | str | None = None,
        model: Model | None = None,
    ) -> None:
        cls = type(self)
        super().__init__(cls.select(activities), limits, store, model=model, name=cls.plugin_name)
