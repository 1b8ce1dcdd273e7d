"""The package's direct store access never turns a failure into a missing spill, nor a missing
writer into a failed spill where the writer does not matter.

No services: a local directory as the store, and a stub S3 client for the listing's `HEAD`s.
The caller (the activity's workflow) is passed in or patched, as `current_scope()` would give it.
"""

from __future__ import annotations

import errno
import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

MINE = (True, 'default/wf-a')


def _store(tmp_path: Path, read_scope: str = 'workflow') -> Any:
    from overspill.pydantic_ai import OverspillStore

    return OverspillStore((tmp_path / 'spills').as_uri(), read_scope=read_scope)


def _write(store: Any, handle: str, data: bytes, writer: str | None) -> None:
    from overspill.pydantic_ai._scope import form_encode

    store._local()._write(handle, data)
    if writer is not None:
        os.setxattr(store._local_path(handle), 'user.overspill', f'scope={form_encode(writer)}'.encode())


def _fail_getxattr(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    def getxattr(*_: Any) -> bytes:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, 'getxattr', getxattr)


def test_a_failed_read_of_the_writer_is_a_store_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only "none kept" is an unknown writer; any other failure is the store's, never a missing
    spill (which would hide the workflow's own spill)."""
    from overspill.pydantic_ai import SpillReadError

    store = _store(tmp_path)
    _write(store, 'run/c.0', b'a\n', 'default/wf-a')
    assert store._local_read('run/c.0', MINE) == b'a\n'
    _fail_getxattr(monkeypatch, errno.EIO)
    with pytest.raises(SpillReadError, match='writer'):
        store._local_facts('run/c.0')
    with pytest.raises(SpillReadError, match='writer'):
        store._local_read('run/c.0', MINE)
    _fail_getxattr(monkeypatch, errno.ENODATA)
    assert store._local_facts('run/c.0') is None
    with pytest.raises(FileNotFoundError):
        store._local_read('run/c.0', MINE)


def test_a_local_read_returns_only_bytes_its_writer_check_covered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer checked is the writer of the bytes returned: read from the same open file, and a
    file that changes while it is read is not returned."""
    import overspill_pydantic_ai._store as store_module
    from overspill.pydantic_ai import SpillReadError

    store = _store(tmp_path)
    _write(store, 'run/mine.0', b'mine\n', 'default/wf-a')
    _write(store, 'run/theirs.0', b'theirs\n', 'default/wf-b')
    assert store._local_read('run/mine.0', MINE) == b'mine\n'
    with pytest.raises(FileNotFoundError):
        store._local_read('run/theirs.0', MINE)
    with pytest.raises(FileNotFoundError):
        store._local_read('run/never.0', MINE)
    # Outside an activity every spill is read.
    assert store._local_read('run/theirs.0', (False, None)) == b'theirs\n'

    versions = iter(range(1_000))
    monkeypatch.setattr(store_module, '_version', lambda fd, handle: (next(versions), 'scope=default%2Fwf-a'))
    with pytest.raises(SpillReadError, match='changing'):
        store._local_read('run/mine.0', MINE)


def test_a_writer_that_cannot_be_kept_fails_the_spill_only_when_reads_need_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from overspill.pydantic_ai import SpillError

    def setxattr(*_: Any) -> None:
        raise OSError(errno.ENOTSUP, 'Operation not supported')

    for read_scope in ('workflow', 'namespace'):
        store = _store(tmp_path / read_scope, read_scope)
        store._local()._write('run/c.0', b'x')
        monkeypatch.setattr(os, 'setxattr', setxattr)
        with pytest.raises(SpillError, match='could not record the writer'):
            store._keep_facts('run/c.0', 'scope=default%2Fwf')
        monkeypatch.undo()
    store = _store(tmp_path / 'any', 'any')
    store._local()._write('run/c.0', b'x')
    monkeypatch.setattr(os, 'setxattr', setxattr)
    store._keep_facts('run/c.0', 'scope=default%2Fwf')
    # A platform without `os.setxattr` (macOS) likewise.
    monkeypatch.delattr(os, 'setxattr')
    store._keep_facts('run/c.0', 'scope=default%2Fwf')
    with pytest.raises(SpillError):
        _store(tmp_path / 'workflow', 'workflow')._keep_facts('run/c.0', 'scope=default%2Fwf')


class _Failure(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f'HTTP {status}')
        self.response = {'ResponseMetadata': {'HTTPStatusCode': status}, 'Error': {'Code': str(status)}}


class _Bucket:
    """A stub S3 client: a listing of `keys`, and `HEAD`s answered by `head`."""

    def __init__(self, keys: list[str], head: Any) -> None:
        self.keys = keys
        self.head_object = head

    def get_paginator(self, _: str) -> Any:
        keys = self.keys

        class Pages:
            def paginate(self, **_: Any) -> list[dict[str, Any]]:
                now = datetime.now(timezone.utc)
                return [{'Contents': [{'Key': k, 'Size': 2, 'LastModified': now} for k in keys]}]

        return Pages()

    def get_object(self, **_: Any) -> Any:
        raise _Failure(404)


def _scoped_listing(monkeypatch: pytest.MonkeyPatch, head: Any, spills: int) -> str:
    import overspill_pydantic_ai._listing as listing
    from overspill.pydantic_ai import OverspillStore

    monkeypatch.setattr(listing, 'current_scope', lambda: MINE)
    keys = [f'tool_output_limits/run/c{i}.0' for i in range(spills)]
    store = OverspillStore('s3://spills', s3_client=_Bucket(keys, head))
    return listing.list_page(store, 'run', 50, {})


def test_a_scoped_listing_reads_writers_concurrently_and_fails_on_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    from overspill.pydantic_ai import SpillReadError

    # Two HEADs must be in flight at once to pass the barrier: one at a time would never do.
    barrier = threading.Barrier(2, timeout=60)
    lock, in_flight, most = threading.Lock(), [0], [0]

    def head(Bucket: str, Key: str) -> dict[str, Any]:
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        try:
            if Key.endswith('c0.0') or Key.endswith('c1.0'):
                barrier.wait()
            if Key.endswith('c2.0'):
                raise _Failure(404)  # deleted since the listing: left out
            writer = 'default%2Fwf-a' if Key.endswith(('c0.0', 'c3.0')) else 'default%2Fwf-b'
            return {'Metadata': {'overspill': f'scope={writer}&chars=2'}}
        finally:
            with lock:
                in_flight[0] -= 1

    page = _scoped_listing(monkeypatch, head, 20)
    assert page.startswith("[run 'run': 2 spilled tool result(s); showing 2"), page
    assert 2 <= most[0] <= 8, most

    def failing(Bucket: str, Key: str) -> dict[str, Any]:
        raise _Failure(500)

    with pytest.raises(SpillReadError, match='could not read the writer'):
        _scoped_listing(monkeypatch, failing, 3)
