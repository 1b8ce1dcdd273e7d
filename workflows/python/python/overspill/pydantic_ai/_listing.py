"""`list_tool_results` outside Temporal: a run's spills, newest first, as the Overspill worker's
`tool_output_limits.list_tool_results` activity lists them.

Each spill's facts come from its `overspill` object metadata (tool, chars, lines, first line, in
URL query form), which Overspill sets; the line count of a spill of 64 KiB or
more comes from the header of its line index (`….idx`). Nothing else is read: unknown facts
show as such (spills written by `OverspillStore` outside a workflow). In a `file://` store the
facts are the file's `user.overspill` extended attribute.

Inside a Temporal activity the listing holds only the spills the store's `read_scope` lets the
activity's workflow see, counted as if no others existed (as the worker lists them): every
spill's metadata is then read (one `HEAD` each on S3), not only that of the spills shown.
"""

from __future__ import annotations

import os
import struct
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from pydantic_ai import ModelRetry

from overspill.pydantic_ai._keys import INDEX_SUFFIX, sanitize_key, sanitize_segment
from overspill.pydantic_ai._scope import admits, current_scope

if TYPE_CHECKING:
    from overspill.pydantic_ai._store import OverspillStore

MAX_LIMIT = 1_000
_CONCURRENCY = 8
_INDEX_MAGIC = b'OVSPLIDX'
_INDEX_HEADER_MAX = 46 + 255


@dataclass
class ListedSpill:
    """One spill of a run and what it says about itself (`None`: unknown)."""

    handle: str
    size: int
    modified: float
    tool: str | None = None
    chars: int | None = None
    lines: int | None = None
    first_line: str | None = None
    facts: str | None = None
    """Its metadata (URL query form), once read."""


def list_page(store: OverspillStore, run_id: str, limit: int, tool_names: dict[str, str]) -> str:
    """The text `tool_output_limits.list_tool_results` returns for `run_id` in `store`; `tool_names`
    (tool call id → tool name) names the tools of spills whose metadata names none."""
    if not run_id:
        raise ModelRetry('`run_id` must not be empty.')
    if limit < 1:
        raise ModelRetry('`limit` must be >= 1.')
    spills = _local_spills(store, run_id) if store.location.root is not None else _s3_spills(store, run_id)
    spills.sort(key=lambda s: (s.modified, s.handle), reverse=True)
    caller = current_scope()
    if caller[0] and store.read_scope != 'any':
        # Every spill's writer, 8 at a time as the worker reads them; a spill gone since the
        # listing is left out, and a writer that cannot be read fails the listing
        # (`SpillReadError`) rather than leave the workflow's own spill out unsaid.
        with ThreadPoolExecutor(max_workers=_CONCURRENCY) as pool:
            writers = list(pool.map(lambda spill: store.writer_facts(spill.handle), spills))
        for spill, facts in zip(spills, writers):
            spill.facts = facts
        spills = [s for s in spills if s.facts is not None and admits(store.read_scope, s.facts, caller)]
    shown = spills[: min(limit, MAX_LIMIT)]
    named = {sanitize_segment(call): (call, tool) for call, tool in tool_names.items()}
    run_key = sanitize_key(run_id) + '/'
    for spill in shown:
        _fill(store, spill)
        last = spill.handle.rsplit('/', 1)[-1].removesuffix('.content')
        stored = last.rpartition('.')[0] if '.' in last else None
        call, tool = named.get(stored, (None, None)) if stored is not None else (None, None)
        spill.tool = spill.tool or tool
        # The handle as the marker shows it: the run id and tool call id unsanitized.
        if spill.handle.startswith(run_key):
            rest = spill.handle[len(run_key) :]
            if call is not None and stored is not None and '/' not in rest:
                rest = call + rest[len(stored) :]
            spill.handle = f'{run_id}/{rest}'
    return render(run_id, shown, len(spills), time.time())


def render(run_id: str, spills: list[ListedSpill], total: int, now: float) -> str:
    """The model-visible listing."""
    out = f'[run {run_id!r}: {total:,} spilled tool result(s); showing {len(spills)}, newest first]'
    for s in spills:

        def count(n: int | None, what: str) -> str:
            return f'{n:,} {what}' if n is not None else f'? {what}'

        age = _age(max(0, int(now - s.modified)))
        out += (
            f'\n- {s.handle!r}: {s.tool or "unknown tool"}, {count(s.chars, "chars")}, '
            f'{count(s.lines, "lines")}, written {age} ago'
        )
        if s.first_line is not None:
            out += f'; first line: {s.first_line!r}'
    if total > len(spills):
        out += f'\n[{total - len(spills):,} older spill(s) not shown: call list_tool_results again with a larger limit]'
    return out


def _age(seconds: int) -> str:
    """`seconds` as Rust's `humantime::format_duration` writes it (`1h 2m 3s`, `2days 4h`)."""
    if seconds == 0:
        return '0s'
    parts = []
    for size, name, plural in (
        (31_557_600, 'year', True),
        (2_630_016, 'month', True),
        (86_400, 'day', True),
        (3_600, 'h', False),
        (60, 'm', False),
        (1, 's', False),
    ):
        n, seconds = divmod(seconds, size)
        if n:
            parts.append(f'{n}{name}{"s" if plural and n > 1 else ""}')
    return ' '.join(parts)


def _s3_spills(store: OverspillStore, run_id: str) -> list[ListedSpill]:
    client = store.client()
    base = store.object_key('x')[: -len('x')]  # `{prefix}/tool_output_limits/`
    prefix = base + sanitize_key(run_id) + '/'
    spills = []
    for page in client.get_paginator('list_objects_v2').paginate(Bucket=store.bucket, Prefix=prefix):
        for obj in page.get('Contents', []):
            if not obj['Key'].endswith(INDEX_SUFFIX):
                modified: datetime = obj['LastModified']
                spills.append(ListedSpill(obj['Key'][len(base) :], obj['Size'], modified.timestamp()))
    return spills


def _local_spills(store: OverspillStore, run_id: str) -> list[ListedSpill]:
    base = store.location.local_dir()
    spills = []
    for dirpath, _, files in os.walk(base / sanitize_key(run_id)):
        for name in files:
            if not name.endswith(INDEX_SUFFIX) and not name.startswith('.'):
                path = Path(dirpath) / name
                stat = path.stat()
                spills.append(ListedSpill(path.relative_to(base).as_posix(), stat.st_size, stat.st_mtime))
    return spills


def _facts(store: OverspillStore, spill: ListedSpill) -> str:
    """`spill`'s metadata (URL query form; empty if it keeps none)."""
    if store.location.root is None:
        key = store.object_key(spill.handle)
        return str(store.client().head_object(Bucket=store.bucket, Key=key).get('Metadata', {}).get('overspill', ''))
    try:  # Overspill keeps a local spill's facts in the file's `user.overspill` attribute.
        return os.getxattr(store.location.local_dir() / spill.handle, 'user.overspill').decode()
    except (OSError, AttributeError):  # none kept, or no xattrs here
        return ''


def _fill(store: OverspillStore, spill: ListedSpill) -> None:
    """Fill in what `spill`'s metadata and index header say."""
    query = spill.facts if spill.facts is not None else _facts(store, spill)
    if query:
        facts = parse_qs(query, keep_blank_values=True)
        first = {name: values[0] for name, values in facts.items()}
        spill.tool = first.get('tool')
        spill.chars = int(first['chars']) if 'chars' in first else None
        spill.lines = int(first['lines']) if 'lines' in first else None
        spill.first_line = first.get('first')
    if spill.lines is None:
        spill.lines = _indexed_lines(store, spill)
    if spill.size == 0:
        spill.chars = spill.lines = 0


def _indexed_lines(store: OverspillStore, spill: ListedSpill) -> int | None:
    """The line count in the header of `spill`'s line index, if it describes this payload."""
    try:
        if store.location.root is not None:
            path = store.location.local_dir() / (spill.handle + INDEX_SUFFIX)
            with path.open('rb') as f:
                header = f.read(_INDEX_HEADER_MAX)
        else:
            key = store.object_key(spill.handle) + INDEX_SUFFIX
            response = store.client().get_object(
                Bucket=store.bucket, Key=key, Range=f'bytes=0-{_INDEX_HEADER_MAX - 1}'
            )
            header = response['Body'].read()
    except Exception:  # no index, or none readable: the count stays unknown
        return None
    if len(header) < 32 or header[:8] != _INDEX_MAGIC or struct.unpack_from('<I', header, 8)[0] != 3:
        return None
    payload_len, lines = struct.unpack_from('<QQ', header, 16)
    return lines if payload_len == spill.size else None
