"""temporalio-deepagents' private APIs Overspill relies on (supported: its range below)."""

from __future__ import annotations

from temporalio.deepagents import _activity, _tools

from overspill._compat import private

SUPPORTED = '>=0.0.3,<0.1'
"""The temporalio-deepagents releases whose private APIs below Overspill is tested with."""


def invoke_tool_activity() -> str:
    """The activity `tool_as_activity` tools run in (`deepagents.invoke_tool`)."""
    name: str = private(_activity, 'INVOKE_TOOL', package='temporalio-deepagents', supported=SUPPORTED)
    return name


def routed_tool_names() -> set[str]:
    """The names of the tools `create_deep_agent` takes as routed through Temporal (it warns about
    any other tool that is not one of its own)."""
    names: set[str] = private(_tools, '_ROUTED_TOOL_NAMES', package='temporalio-deepagents', supported=SUPPORTED)
    return names


def check() -> None:
    """Touch every private API above: `UnsupportedVersion` names the installed version if one is gone."""
    invoke_tool_activity()
    routed_tool_names()
