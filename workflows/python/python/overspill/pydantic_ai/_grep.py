"""`grep_tool_result` pages outside Temporal: the same text the Overspill worker's
`tool_output_limits.grep_tool_result` activity returns, computed from a spill's bytes.

Lines are `str.splitlines()` lines of the lossy UTF-8 decoding, numbered from 1. A matching line
is `N:text`, a context line `N-text`; with context, groups that are not adjacent are separated by
`--`. The body is cut at 50,000 chars and a note says how to get the next page. Regexes use the
`regex` package with a deadline, so no pattern can hang the agent (the worker's Rust `regex`
crate is linear-time; the syntax of the two agrees on everything but look-around and
backreferences, which the worker refuses).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pydantic_ai import ModelRetry

MAX_LINES = 1_000
MAX_CHARS = 50_000
MAX_CONTEXT = 20
MAX_PATTERN_BYTES = 4_096
DEADLINE_SECONDS = 10.0


@dataclass(frozen=True)
class GrepArgs:
    """One `grep_tool_result` call, as the model made it."""

    handle: str
    pattern: str
    regex: bool = False
    ignore_case: bool = False
    context: int = 0
    offset: int = 0
    limit: int = 50
    from_end: bool = False

    def request(self) -> dict[str, Any]:
        """The `tool_output_limits.grep_tool_result` activity's input."""
        return {
            'handle': self.handle,
            'pattern': self.pattern,
            'regex': self.regex,
            'ignore_case': self.ignore_case,
            'context': self.context,
            'offset': self.offset,
            'limit': self.limit,
            'from_end': self.from_end,
        }

    def check(self) -> None:
        """Raise `ModelRetry` for arguments the worker would refuse, before any read."""
        if self.offset < 0:
            raise ModelRetry('`offset` must be >= 0.')
        if self.limit < 1:
            raise ModelRetry('`limit` must be >= 1.')
        if self.context < 0:
            raise ModelRetry('`context` must be >= 0.')
        if not self.pattern:
            raise ModelRetry('`pattern` must not be empty. To page through every line, use read_tool_result.')
        size = len(self.pattern.encode())
        if size > MAX_PATTERN_BYTES:
            raise ModelRetry(f'`pattern` is {size} bytes long; at most {MAX_PATTERN_BYTES} are accepted.')


def window(offset: int, from_end: bool, total: int, limit: int) -> range:
    """Items `[start, end)` of `total` that `offset`, `limit` and `from_end` select."""
    if from_end:
        end = max(0, total - offset)
        return range(max(0, end - limit), end)
    start = min(offset, total)
    return range(start, min(start + limit, total))


def grep_page(data: bytes, args: GrepArgs) -> str:
    """The page `tool_output_limits.grep_tool_result` returns for `args` over `data`."""
    import regex  # imported here: never needed (nor importable) in the workflow sandbox

    args.check()
    try:
        source = args.pattern if args.regex else regex.escape(args.pattern)
        compiled = regex.compile(source, regex.IGNORECASE if args.ignore_case else 0)
    except regex.error as error:
        raise ModelRetry(
            '`pattern` is not a valid regex (Rust `regex` syntax; no look-around or backreferences). '
            f'Escape special characters or set regex=false for a literal search.\n{error}'
        ) from None
    lines = data.decode('utf-8', errors='replace').splitlines()
    deadline = time.monotonic() + DEADLINE_SECONDS
    try:
        matching = [
            i
            for i, line in enumerate(lines)
            if compiled.search(line, timeout=max(deadline - time.monotonic(), 0.001)) is not None
        ]
    except TimeoutError:
        raise ModelRetry(f'`pattern` took over {DEADLINE_SECONDS:.0f}s to search: use a simpler regex.') from None
    limit = min(args.limit, MAX_LINES)
    context = min(args.context, MAX_CONTEXT)
    shown = window(args.offset, args.from_end, len(matching), limit)
    return _render(args, lines, matching, shown, context)


def _render(args: GrepArgs, lines: list[str], matching: list[int], shown: range, context: int) -> str:
    is_match = set(matching)
    kept: dict[int, int | None] = {}  # line -> its match number when a match of the window
    for nth in shown:
        line = matching[nth]
        for n in range(max(0, line - context), min(len(lines), line + context + 1)):
            kept.setdefault(n, None)
        kept[line] = nth
    body: list[str] = []
    chars = 0
    capped = False
    last_match: int | None = None
    previous: int | None = None

    def add(text: str) -> bool:
        nonlocal chars, capped
        piece = ('\n' if body else '') + text
        if chars + len(piece) > MAX_CHARS:
            body.append(piece[: MAX_CHARS - chars])
            chars = MAX_CHARS
            capped = True
            return False
        body.append(piece)
        chars += len(piece)
        return True

    for n in sorted(kept):
        if context > 0 and previous is not None and n > previous + 1 and not add('--'):
            break
        previous = n
        match = kept[n]
        if match is not None:
            last_match = match
        mark = ':' if n in is_match else '-'
        if not add(f'{n + 1}{mark}{lines[n]}'):
            break
    out = _header(args, len(matching), shown, capped)
    text = ''.join(body)
    if text:
        out += '\n' + text
    note = _note(args, len(matching), shown, capped, last_match)
    return f'{out}\n{note}' if note else out


def _header(args: GrepArgs, total: int, shown: range, capped: bool) -> str:
    out = f'[handle {args.handle!r}: {total:,} matching line(s) for {"regex " if args.regex else ""}{args.pattern!r}'
    if args.ignore_case:
        out += ', ignoring case'
    out += f'; showing matches {shown.start + 1}-{shown.stop}' if len(shown) else '; showing none'
    return out + (', output capped]' if capped else ']')


def _note(args: GrepArgs, total: int, shown: range, capped: bool, last_match: int | None) -> str | None:
    if capped:
        following = max(shown.start if last_match is None else last_match + 1, shown.start + 1)
        from_end = 'from_end=false, ' if args.from_end else ''
        return (
            f'[output capped at {MAX_CHARS:,} chars after match {following}: call grep_tool_result again with '
            f'{from_end}offset={following} for the next matches, or read_tool_result(offset=N-1, limit=1) '
            'to see line N whole]'
        )
    if not args.from_end and shown.stop < total:
        return f'[{total - shown.stop:,} more matching line(s): call grep_tool_result again with offset={shown.stop}]'
    if args.from_end and shown.start > 0:
        return (
            f'[{shown.start:,} earlier matching line(s): call grep_tool_result again with from_end=true, '
            f'offset={total - shown.start}]'
        )
    return None
