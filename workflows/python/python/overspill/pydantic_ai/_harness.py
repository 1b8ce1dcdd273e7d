"""The installed pydantic-ai-harness, as Overspill's engine speaks it.

The engine produces the model-visible text of one harness release at a time (the limits'
`harness`), so that a model sees exactly what the user's own harness would show it: this module
names the installed release, and a release the engine does not know is refused here, at the
start of whatever needs it (`OverspillInterceptor`, `OverspillToolset`), naming the ones it knows.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import version

from overspill._native import harness_release

READ_KIND = 'tool_output_limits.read_tool_result'
"""The kind of the harness's `read_tool_result`, whatever the run names it."""

GREP_KIND = 'tool_output_limits.grep_tool_result'
"""The kind of the harness's own `grep_tool_result` (from 0.75 on), whatever the run names it."""


@cache
def installed_harness() -> str:
    """The release of the installed pydantic-ai-harness, as the limits' `harness` names it (`0.75`).

    Raises `overspill._native.ConfigError`, naming the releases the engine knows, for another.
    """
    return harness_release(version('pydantic-ai-harness'))


@cache
def harness_has_grep() -> bool:
    """Whether the installed harness registers its own `grep_tool_result` (0.75 does, 0.62 does not)."""
    import pydantic_ai_harness.tool_output_limits as tool_output_limits

    return hasattr(tool_output_limits, 'GREP_TOOL_RESULT_KIND')
