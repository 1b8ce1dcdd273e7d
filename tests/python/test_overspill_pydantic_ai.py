"""`overspill_pydantic_ai` without Temporal: key scheme, handle checks, store URLs, and the direct
S3 path that `read` takes inside the `read_tool_result` activity (against SeaweedFS).

Needs `OVERSPILL_TEST_S3_URL` and the `AWS_*` variables (`.deploy/seaweedfs.env`) for the S3 tests.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'workflows' / 'python' / 'src'))

from overspill_pydantic_ai import OverspillStore, OverspillSummarizer, SummarizeError, sanitize_key
from overspill_pydantic_ai._keys import StoreLocation, refusal
from pydantic_ai_harness.tool_output_limits._capability import _read_slice
from pydantic_ai_harness.tool_output_limits._store import _segments

KEYS = [
    'run-1/call-1.0',
    'run-1/call-1.0.content',
    '01a2-b3:0c4d/pyd_ai_tool_call_x.2',
    'run-1/../call 1.0',
    '',
    '///',
    'a b!@#',
    'é€/ok',
    './x/./y',
    'a%2Fb',
    '...',
]


@pytest.mark.parametrize('key', KEYS)
def test_object_keys_sanitize_like_the_harness(key: str) -> None:
    assert sanitize_key(key) == '/'.join(_segments(key))


def test_object_key_sits_under_the_namespace_and_prefix() -> None:
    assert OverspillStore('s3://spills').object_key('run-1/call-1.0') == 'tool_output_limits/run-1/call-1.0'
    store = OverspillStore('s3://spills/team/a/?region=eu-west-1&endpoint=http://127.0.0.1:9000&allow_http=true')
    assert store.bucket == 'spills'
    assert store.object_key('r:1/c 1.0') == 'team/a/tool_output_limits/r_1/c_1.0'
    assert StoreLocation.parse('s3://b?region=x') == StoreLocation('b', '', None, 'x')


def test_file_urls_name_a_local_root() -> None:
    assert StoreLocation.parse('file:///var/spills/').root == '/var/spills'
    assert StoreLocation.parse('file:///a%20b').root == '/a b'
    assert OverspillStore('file:///var/spills').object_key('r/c.0') == 'tool_output_limits/r/c.0'


@pytest.mark.parametrize(
    'url', ['file://host/x', 'file:relative', 'file:///x?y=1', 'memory://', 's3://', 's3://b/../x', 's3://b?colour=red']
)
def test_store_urls_it_cannot_serve_are_refused(url: str) -> None:
    with pytest.raises(ValueError):
        OverspillStore(url)


@pytest.mark.parametrize(
    ('handle', 'why'),
    [
        ('/etc/passwd', 'absolute path'),
        ('\\x', 'absolute path'),
        ('C:/x', 'absolute path'),
        ('../x', 'path traversal'),
        ('run/./x', 'path traversal'),
        ('run\\..\\x', 'path traversal'),
        ('%2e%2e/x', 'percent-encoded escape'),
        ('s3://other/x', 'foreign prefix'),
        ('run/x\0', 'control character'),
        ('run/call.0.idx', 'index object'),
        ('run/call.0.idx/', 'index object'),
        ('run/call.0.idx//', 'index object'),
        ('run-1/call-1.0', None),
        ('run-1/call 1.0.content', None),
        ('100%/x.0', None),
    ],
)
def test_handles_are_refused_as_overspill_refuses_them(handle: str, why: str | None) -> None:
    assert refusal(handle) == why


def test_summarizer_outside_a_workflow_raises_so_the_band_falls_back() -> None:
    with pytest.raises(SummarizeError):
        asyncio.run(OverspillSummarizer()('cat', 'text'))


@pytest.fixture
def s3_store() -> OverspillStore:
    missing = [
        v
        for v in ('OVERSPILL_TEST_S3_URL', 'AWS_ENDPOINT_URL', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY')
        if not os.environ.get(v)
    ]
    assert not missing, f'{missing} not set: source .deploy/seaweedfs.env (deploy/test.sh does)'
    return OverspillStore(f'{os.environ["OVERSPILL_TEST_S3_URL"].rstrip("/")}/py-unit-{uuid.uuid4().hex[:12]}')


def test_outside_a_workflow_write_and_read_go_to_the_bucket(s3_store: OverspillStore) -> None:
    data = b'line 1\nline 2 ERROR\r\nline 3\n' + bytes([0xFF, 0x0A])
    handle = asyncio.run(s3_store.write('run:1/call 1.0', data))
    assert handle == 'run:1/call 1.0', 'the handle is the key, as with LocalFileStore'
    assert asyncio.run(s3_store.read(handle)) == data
    stored = s3_store._client().get_object(Bucket=s3_store.bucket, Key=s3_store.object_key(handle))['Body'].read()
    assert stored == data


def test_unknown_and_refused_handles_give_the_harness_its_no_result_answer(s3_store: OverspillStore) -> None:
    for handle in ('run-x/never-written.0', '../etc/passwd', 'run/call.0.idx'):
        with pytest.raises(FileNotFoundError):
            asyncio.run(s3_store.read(handle))
        page = asyncio.run(_read_slice(s3_store.read, handle, 0, 200, False, None))
        assert page.startswith(f'[No stored tool result for handle {handle!r}.')


def test_a_file_store_reads_and_writes_where_overspill_dev_keeps_spills(tmp_path: Path) -> None:
    store = OverspillStore(f'file://{tmp_path}')
    data = b'a\nb ERROR\nc\n'
    assert asyncio.run(store.write('run:1/call 1.0', data)) == 'run:1/call 1.0'
    assert (tmp_path / 'tool_output_limits' / 'run_1' / 'call_1.0').read_bytes() == data
    assert asyncio.run(store.read('run:1/call 1.0')) == data
    for handle in ('run-x/never-written.0', '../../etc/passwd', '/etc/passwd'):
        page = asyncio.run(_read_slice(store.read, handle, 0, 200, False, None))
        assert page.startswith(f'[No stored tool result for handle {handle!r}.')


def test_an_unreachable_store_is_not_reported_as_a_missing_result() -> None:
    store = OverspillStore('s3://spills?endpoint=http://127.0.0.1:9&region=us-east-1')
    from overspill_pydantic_ai import SpillReadError

    with pytest.raises(SpillReadError):
        asyncio.run(store.read('run/call.0'))
