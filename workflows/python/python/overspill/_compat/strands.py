"""temporalio-strands-agents' private APIs Overspill relies on (supported: the package's
`strands` extra). Strands' own (`AgentTool`, `ToolResultEvent`, `InvokeModelStage`) are public."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from overspill._compat import fields, private

SUPPORTED = '>=0.1.0,<0.2'
"""The temporalio-strands-agents releases Overspill is tested with."""


def mcp_tool_name(args: Sequence[Any]) -> str | None:
    """The MCP tool a `{server}-call-tool` activity runs: its `_CallToolArgs`' `tool_name`."""
    name = getattr(args[0], 'tool_name', None) if args else None
    return name if isinstance(name, str) else None


def check() -> None:
    """Touch every private API above: `UnsupportedVersion` names the installed version if one is gone."""
    from temporalio.strands_agents import _temporal_mcp_client

    package = 'temporalio-strands-agents'
    arguments = private(_temporal_mcp_client, '_CallToolArgs', package=package, supported=SUPPORTED)
    fields(arguments, ('tool_name',), package=package, supported=SUPPORTED)
