"""The names Overspill is found by: its task queue, its activities, its default store.

Declared once for every integration. The read-back tools' activity names come with the tools
themselves, from the engine (`overspill._tools`); the literals here are checked against the Rust
worker's by `src/names.rs`'s test.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath

DEFAULT_TASK_QUEUE = 'tool-output-limits'
"""The task queue an Overspill worker polls by default."""

SPILL_ACTIVITY = 'tool_output_limits.spill'
"""The Overspill activity that persists a payload under its key."""

SUMMARIZE_ACTIVITY = 'tool_output_limits.summarize'
"""The Overspill activity that makes one model call."""


def default_task_queue() -> str:
    """`OVERSPILL_TASK_QUEUE`, else `tool-output-limits`: the queue `overspill worker` and `overspill dev` poll."""
    return os.environ.get('OVERSPILL_TASK_QUEUE') or DEFAULT_TASK_QUEUE


def default_store_url() -> str:
    """The store every Overspill command uses without `--store`: `OVERSPILL_STORE`, else
    `file://$TMPDIR/overspill-<euid>` (`/tmp` without `TMPDIR`), as `overspill dev` and the worker."""
    tmp = os.environ.get('TMPDIR') or '/tmp'
    return os.environ.get('OVERSPILL_STORE') or PurePosixPath(tmp, f'overspill-{os.geteuid()}').as_uri()


def same_store(a: str, b: str) -> bool:
    """Whether two store URLs, as a worker reports them (no query, no password), name one place.
    Plain string work: it runs in workflow code, where no store is opened."""

    def place(url: str) -> str:
        return url.split('?', 1)[0].rstrip('/')

    return place(a) == place(b)
