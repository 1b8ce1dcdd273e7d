"""The markers masking reads and writes, the same for every framework.

- A spill marker starts `[Tool output too large ({size}); stored to handle {handle!r}.`: an
  output that starts with one was spilled already, and its handle is reused, with no new write.
- A mask marker is what replaces a masked output: the tool, its size, its handle and the tools
  that read it back.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

_SPILL_MARKER = re.compile(
    r"\[Tool output too large \((?P<size>[^)]*)\); stored to handle "
    r"""(?P<handle>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\."""
)

_MASK_MARKER = re.compile(
    r"\[Tool output of (?:'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\") cleared from context \([^)]*\); "
    r"""stored to handle (?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\. Get it back with [^\]]*\]"""
)


def mask_marker(tool_name: str, handle: str, size: str, tools: Sequence[str]) -> str:
    """The text that replaces a masked output: the tool, its size, its handle, and how to get it back.

    `[Tool output of 'fetch' cleared from context (60,000 chars); stored to handle 'run/call-1.0'.
    Get it back with read_tool_result, grep_tool_result or query_tool_result.]`
    """
    names = ', '.join(tools[:-1]) + f' or {tools[-1]}' if len(tools) > 1 else ''.join(tools)
    return (
        f'[Tool output of {tool_name!r} cleared from context ({size}); stored to handle {handle!r}. '
        f'Get it back with {names}.]'
    )


def is_masked(text: str) -> bool:
    """Whether `text` is exactly a mask marker."""
    return _MASK_MARKER.fullmatch(text) is not None


def spill_header(text: str) -> tuple[str | None, str] | None:
    """The handle (`None` when its quoting does not parse) and the size a spill marker at the start
    of `text` names, or `None` if `text` does not start with one."""
    header = _SPILL_MARKER.match(text)
    if header is None:
        return None
    try:
        handle = ast.literal_eval(header['handle'])
    except (ValueError, SyntaxError):
        handle = None
    return (handle if isinstance(handle, str) else None), header['size']
