"""Google ADK's and temporalio-google-adk's private APIs Overspill relies on (supported: the
package's `google-adk` extra)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.adk.tools.base_tool import BaseTool

from overspill._compat import fields, private

SUPPORTED_ADK = '>=2.14.1,<3'
"""The google-adk releases Overspill is tested with."""

SUPPORTED_INTEGRATION = '>=0.0.1,<0.1'
"""The temporalio-google-adk releases Overspill is tested with."""


def mcp_tool_name(args: Sequence[Any]) -> str | None:
    """The MCP tool a `{server}-call-tool` activity runs: its `_CallToolArguments`' `name`."""
    name = getattr(args[0], 'name', None) if args else None
    return name if isinstance(name, str) else None


def check() -> None:
    """Touch every private API above: `UnsupportedVersion` names the installed version if one is gone."""
    from temporalio.google_adk import _mcp  # here: it needs MCP, which an agent without MCP tools may lack

    # The method a tool overrides to give the model its own declaration (`OverspillTool`): ADK's
    # extension point for a tool whose schema is not a Python signature, despite its underscore.
    private(BaseTool, '_get_declaration', package='google-adk', supported=SUPPORTED_ADK)
    package, supported = 'temporalio-google-adk', SUPPORTED_INTEGRATION
    # The MCP envelope the core's MCP_RESULT codec rewrites, and where the call id and tool name are.
    result = private(_mcp, '_CallToolResult', package=package, supported=supported)
    fields(result, ('result', 'tool_context'), package=package, supported=supported)
    fields(_mcp.TemporalToolContext, ('function_call_id',), package=package, supported=supported)
    for arguments in ('_CallToolArguments', '_StatefulCallToolArguments'):
        owner = private(_mcp, arguments, package=package, supported=supported)
        fields(owner, ('name',), package=package, supported=supported)
