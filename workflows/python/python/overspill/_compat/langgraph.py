"""LangGraph's private APIs Overspill relies on (supported: langgraph-prebuilt's range below)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.prebuilt import ToolNode

from overspill._compat import UnsupportedVersion, installed, private

SUPPORTED = '>=1.1.3,<2'
"""The langgraph-prebuilt releases whose private APIs below Overspill is tested with."""


def tool_node_body(node: ToolNode) -> Callable[..., Awaitable[Any]]:
    """The prebuilt `ToolNode`'s async body, `afunc(input, config, runtime)` (its `RunnableCallable`
    attribute): it runs the node's tool calls outside the Pregel loop, which `ToolNode.ainvoke`
    cannot (it needs the loop's config), as a node function wrapping it must."""
    body = private(node, 'afunc', package='langgraph-prebuilt', supported=SUPPORTED)
    if not callable(body):
        raise UnsupportedVersion(
            f'langgraph-prebuilt {installed("langgraph-prebuilt")} has no async ToolNode.afunc, which Overspill '
            f'relies on: Overspill supports langgraph-prebuilt{SUPPORTED}'
        )
    return body  # type: ignore[no-any-return]


def check() -> None:
    """Touch every private API above: `UnsupportedVersion` names the installed version if one is gone."""
    tool_node_body(ToolNode([]))
