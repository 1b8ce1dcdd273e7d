"""`overspill.pydantic_ai` without Temporal: the key scheme, handle checks and store URLs of the
engine it runs, and the direct path `read` takes inside the `read_tool_result` activity (against
SeaweedFS and a local root).

Needs `OVERSPILL_TEST_S3_URL` and the `AWS_*` variables (`.deploy/seaweedfs.env`) for the S3 tests.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from typing import Any
from pathlib import Path

import pytest
from overspill.pydantic_ai import OverspillStore, OverspillSummarizer, SummarizeError, sanitize_key
from overspill.pydantic_ai._external_storage import default_s3_client
from pydantic_ai_harness.tool_output_limits._store import _segments
from support import harness_read

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


@pytest.mark.parametrize('url', ['file://host/x', 'ftp://x', 's3://', 's3://b?colour=red'])
def test_store_urls_the_worker_refuses_are_refused(url: str) -> None:
    from overspill import StoreError

    with pytest.raises((ValueError, StoreError)):
        OverspillStore(url).engine


@pytest.mark.parametrize(
    'handle',
    [
        '/etc/passwd',
        '\\x',
        'C:/x',
        '../x',
        'run/./x',
        'run\\..\\x',
        '%2e%2e/x',
        's3://other/x',
        'run/x\0',
        'run/call.0.idx',
        'run/call.0.idx/',
    ],
)
def test_handles_overspill_refuses_read_as_missing(handle: str, tmp_path: Path) -> None:
    store = OverspillStore(f'file://{tmp_path}')
    with pytest.raises(FileNotFoundError):
        asyncio.run(store.read(handle))


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
    url = s3_store.url
    prefix = url.split('://', 1)[1].split('/', 1)[1].split('?')[0].strip('/')
    key = f'{prefix}/tool_output_limits/{sanitize_key(handle)}'
    stored = default_s3_client(url).get_object(Bucket=url.split('/')[2], Key=key)['Body'].read()
    assert stored == data


def test_unknown_and_refused_handles_give_the_harness_its_no_result_answer(s3_store: OverspillStore) -> None:
    for handle in ('run-x/never-written.0', '../etc/passwd', 'run/call.0.idx'):
        with pytest.raises(FileNotFoundError):
            asyncio.run(s3_store.read(handle))
        page = asyncio.run(harness_read(s3_store, handle))
        assert page.startswith(f'[No stored tool result for handle {handle!r}.')


def test_a_file_store_reads_and_writes_where_overspill_dev_keeps_spills(tmp_path: Path) -> None:
    store = OverspillStore(f'file://{tmp_path}')
    data = b'a\nb ERROR\nc\n'
    assert asyncio.run(store.write('run:1/call 1.0', data)) == 'run:1/call 1.0'
    assert (tmp_path / 'tool_output_limits' / 'run_1' / 'call_1.0').read_bytes() == data
    assert asyncio.run(store.read('run:1/call 1.0')) == data
    for handle in ('run-x/never-written.0', '../../etc/passwd', '/etc/passwd'):
        page = asyncio.run(harness_read(store, handle))
        assert page.startswith(f'[No stored tool result for handle {handle!r}.')


def test_an_unreachable_store_is_not_reported_as_a_missing_result() -> None:
    store = OverspillStore('s3://spills?endpoint=http://127.0.0.1:9&region=us-east-1')
    from overspill.pydantic_ai import SpillReadError

    with pytest.raises(SpillReadError) as raised:
        asyncio.run(store.read('run/call.0'))
    # Non-retryable: the read_tool_result activity fails once instead of being retried forever.
    assert raised.value.non_retryable and raised.value.type == 'SpillReadError'
    assert f'from {store.url}: ' in str(raised.value) and 'OVERSPILL_STORE' in str(raised.value)


def test_a_file_store_root_is_created_private(tmp_path: Path) -> None:
    """The store's root is created 0700, as the worker and the CLI create it."""
    root = tmp_path / 'spills'
    asyncio.run(OverspillStore(root.as_uri()).write('run/call.0', b'x' * 20_000))
    assert root.stat().st_mode & 0o777 == 0o700


# --- OverspillToolset outside Temporal: the same pages as the worker's ---------------------------


def _overspill(*args: str, stdin: bytes | None = None) -> str:
    """What the `overspill` binary (`OVERSPILL_BIN`) prints."""
    import subprocess

    binary = os.environ.get('OVERSPILL_BIN')
    assert binary, 'set OVERSPILL_BIN to the overspill binary (tests/integration/pydantic_ai.rs does)'
    done = subprocess.run(
        [binary, *args], input=stdin, capture_output=True, timeout=60, env={**os.environ, 'AWS_ALLOW_HTTP': 'true'}
    )
    assert done.returncode == 0, done.stderr.decode(errors='replace')
    return done.stdout.decode().removesuffix('\n')


def _ages_hidden(text: str) -> str:
    import re

    return re.sub(r'written [^;\n]* ago', 'written … ago', text)


@pytest.mark.parametrize('backend', ['s3', 'file'])
def test_toolset_outside_a_workflow_gives_the_workers_pages(
    backend: str, s3_store: OverspillStore, tmp_path: Path
) -> None:
    """grep_tool_result and list_tool_results read the store directly outside Temporal, and return
    the text `overspill grep` / `overspill spills ls --run` (the activities' bodies) print."""
    from types import SimpleNamespace

    from overspill.pydantic_ai import OverspillToolset
    from pydantic_ai import ModelRetry
    from pydantic_ai.messages import ModelResponse, ToolCallPart

    store = s3_store if backend == 's3' else OverspillStore(f'file://{tmp_path}')
    log = ''.join(f'{i:05d} {"ERROR" if i % 50 == 7 else "INFO"} step {i}\n' for i in range(5_000)).encode()
    _overspill('reduce', '--tool', 'build', '--run-id', 'run-t', '--call-id', 'call-1', '--store', store.url, stdin=log)
    asyncio.run(store.write('run-t/call-2.0', b'written by the harness\nwithout metadata\n'))
    toolset = OverspillToolset(store)
    calls = [ModelResponse(parts=[ToolCallPart('fetch', {}, tool_call_id='call-2')])]
    ctx: Any = SimpleNamespace(run_id='run-t', messages=calls)

    # The harness's arguments, Overspill's `regex`, and the earlier grep's `limit`, `-i`, `--from-end`.
    for flags in (
        [],
        ['-C', '0', '--max-matches', '3'],
        ['--regex', '-i', '-C', '1', '--from-end', '--offset', '2', '--limit', '5'],
    ):
        pattern = r'^\d+7 error' if '--regex' in flags else 'ERROR'

        def flag(name: str, default: int) -> int:
            return int(flags[flags.index(name) + 1]) if name in flags else default

        kwargs: dict[str, Any] = {
            'context': flag('-C', 2),
            'max_matches': flag('--max-matches', flag('--limit', 20)),
            'offset': flag('--offset', 0),
            'regex': '--regex' in flags,
            'ignore_case': '-i' in flags,
            'from_end': '--from-end' in flags,
        }
        page = asyncio.run(toolset.grep_tool_result(ctx, 'run-t/call-1.0', pattern, **kwargs))
        assert page == _overspill('grep', 'run-t/call-1.0', pattern, *flags, '--store', store.url), flags

    listing = _ages_hidden(asyncio.run(toolset.list_tool_results(ctx)))
    worker = _ages_hidden(_overspill('spills', 'ls', '--run', 'run-t', '--store', store.url))
    # The worker's listing has no tool calls to name the harness's spill by.
    assert listing == worker.replace("'run-t/call-2.0': unknown tool", "'run-t/call-2.0': fetch")
    # A file:// store keeps the facts in an extended attribute, as S3 does in object metadata.
    assert f"- 'run-t/call-1.0': build, {len(log):,} chars, 5,000 lines" in listing, listing
    with pytest.raises(ModelRetry, match='not a valid regex'):
        asyncio.run(toolset.grep_tool_result(ctx, 'run-t/call-1.0', '(unclosed', regex=True))
    missing = asyncio.run(toolset.grep_tool_result(ctx, 'run-t/nope.0', 'x'))
    assert missing.startswith("[No stored tool result for handle 'run-t/nope.0'.")


def test_query_tool_outside_a_workflow_gives_the_workers_page(tmp_path: Path) -> None:
    """query_tool_result runs the engine's query outside Temporal, in the package's sandbox
    process: the worker's exact page, and a bad filter as the model's retry."""
    from types import SimpleNamespace

    from overspill.pydantic_ai import OverspillToolset
    from pydantic_ai import ModelRetry

    store = OverspillStore(f'file://{tmp_path}')
    asyncio.run(store.write('run-q/call-1.0', b'{"id":1,"ok":false}\n{"id":2,"ok":true}\n{"id":3,"ok":false}\n'))
    toolset = OverspillToolset(store)
    ctx: Any = SimpleNamespace(run_id='run-q', messages=[])
    page = asyncio.run(toolset.query_tool_result(ctx, 'run-q/call-1.0', 'select(.ok | not) | .id', limit=1))
    assert page == (
        "[handle 'run-q/call-1.0': 2 result(s) of filter 'select(.ok | not) | .id' over 3 JSON value(s); "
        'showing results 1-1]\n1\n[1 more result(s): call query_tool_result again with offset=1]'
    )
    assert page == _overspill('query', 'run-q/call-1.0', 'select(.ok | not) | .id', '--limit', '1', '--store', store.url)
    with pytest.raises(ModelRetry, match='not a valid jq filter: .* at char 7'):
        asyncio.run(toolset.query_tool_result(ctx, 'run-q/call-1.0', '.id | ]'))


# --- the harness's own read-back tools, answered at the source ---------------------------------


def test_the_interceptor_answers_the_harness_read_back_tools_with_its_text(tmp_path: Path) -> None:
    """With a harness that has its own `grep_tool_result` (0.75), `OverspillInterceptor` answers
    the harness's `read_tool_result` and `grep_tool_result` activities with the engine's page,
    never running the tool (which would read the spill whole): the harness's own text, byte for
    byte, over every kind of page. With 0.62 the harness's tool runs, as it always did."""
    import dataclasses

    from overspill.pydantic_ai import OverspillInterceptor
    from overspill.pydantic_ai._harness import harness_has_grep
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai_harness.tool_output_limits import ToolOutputLimits
    from support import harness_grep
    from temporalio.testing import ActivityEnvironment
    from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput

    store = OverspillStore(f'file://{tmp_path}')
    interceptor = OverspillInterceptor(ToolOutputLimits(store=store))
    if not harness_has_grep():
        assert interceptor.pages is None, 'the harness reads its spills itself'
        return
    from pydantic_ai.durable_exec._toolset import CallToolResult
    from pydantic_ai.durable_exec.temporal._toolset import CallToolParams
    from pydantic import TypeAdapter

    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, activity_type='agent__a__toolset__tool_output_limits__call_tool')
    lines = [f'{i:05d} {"ERROR" if i % 7 == 3 else "INFO"} ' + 'x' * (i % 90) for i in range(3_000)]
    data = ('\n'.join(lines) + '\n' + 'é' * 60_000 + '\nlast\n').encode()
    # Spilled by the workflow whose activity reads it back (the read scope's).
    writer = (getattr(env.info, 'namespace', None) or env.info.workflow_namespace, env.info.workflow_id)

    async def spill() -> str:
        return await store.engine.write('run-h/call-1.0', data, caller=writer)

    handle = asyncio.run(spill())

    class Untouched(ActivityInboundInterceptor):
        async def execute_activity(self, input: ExecuteActivityInput) -> Any:
            raise AssertionError('the harness tool ran: it would read the spill whole')

    pages = interceptor.intercept_activity(Untouched(None))  # type: ignore[arg-type]
    context = {'run_id': 'run-h', '_tool_names_by_kind': {'tool_output_limits.read_tool_result': 'read_tool_result'}}

    def answer(tool: str, args: dict[str, Any]) -> Any:
        tool_def = ToolDefinition(name=tool, tool_kind=f'tool_output_limits.{tool}')
        params = CallToolParams(name=tool, tool_args=args, serialized_run_context=context, tool_def=tool_def)
        call = ExecuteActivityInput(fn=lambda: None, args=[params, None], executor=None, headers={})

        async def run() -> Any:
            return await pages.execute_activity(call)

        return TypeAdapter(CallToolResult).dump_python(asyncio.run(env.run(run)), mode='json')

    reads = [
        {},
        {'offset': 5, 'limit': 3, 'pattern': 'ERROR'},
        {'from_end': True, 'limit': 4},
        {'offset': 2_990, 'limit': 1_000},  # the long line, cut
        {'unit': 'bytes', 'offset': 100, 'limit': 50},
        {'unit': 'bytes', 'pattern': 'x'},  # a retry
        {'offset': -1},
    ]
    for args in reads:
        expected = asyncio.run(harness_outcome(harness_read(store, handle, **args)))
        assert answer('read_tool_result', {'handle': handle, **args}) == expected, args
    for args in [{}, {'context': 0, 'max_matches': 500}, {'offset': 400, 'context': 10}, {'context': -1}]:
        expected = asyncio.run(harness_outcome(harness_grep(store, handle, 'ERROR', **args)))
        assert answer('grep_tool_result', {'handle': handle, 'pattern': 'ERROR', **args}) == expected, args
    missing = answer('read_tool_result', {'handle': 'run-h/nope.0'})
    assert missing['result'].startswith("[No stored tool result for handle 'run-h/nope.0'.")


async def harness_outcome(page: Any) -> dict[str, Any]:
    """The recorded result of a harness tool call that answers with `page`, as the activity does."""
    from pydantic_ai.durable_exec._toolset import CallToolResult, wrap_tool_call_result
    from pydantic import TypeAdapter

    result = await wrap_tool_call_result(page)
    dumped: dict[str, Any] = TypeAdapter(CallToolResult).dump_python(result, mode='json')
    return dumped


def test_the_read_back_tools_are_the_harness_tools_in_its_words() -> None:
    """Overspill's tool table (`read_back_tools()`) describes `read_tool_result` and
    `grep_tool_result` in the harness's own words, as pydantic-ai renders them from the harness
    0.75's functions; `grep_tool_result` adds only Overspill's `regex`. Under 0.62, whose harness
    has no grep, OverspillToolset offers it, and the table's read is 0.75's (with `unit`)."""
    from overspill._native import read_back_tools
    from overspill.pydantic_ai import OverspillToolset
    from overspill.pydantic_ai._harness import harness_has_grep
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage
    from pydantic_ai_harness.tool_output_limits import ToolOutputLimits

    ours = {spec['name']: spec for spec in read_back_tools()}
    limits = ToolOutputLimits(store=OverspillStore('file:///tmp/unused'))
    toolset = limits.get_toolset()
    assert toolset is not None

    async def definitions(toolset: Any) -> dict[str, Any]:
        from pydantic_ai._run_context import RunContext

        ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
        return {name: tool.tool_def for name, tool in (await toolset.get_tools(ctx)).items()}

    harness = asyncio.run(definitions(toolset))
    offered = asyncio.run(definitions(OverspillToolset(OverspillStore('file:///tmp/unused'))))
    assert sorted(offered) == (
        ['list_tool_results', 'query_tool_result'] if harness_has_grep() else
        ['grep_tool_result', 'list_tool_results', 'query_tool_result']
    )
    for name, tool_def in offered.items():
        assert (tool_def.description, tool_def.parameters_json_schema) == (
            ours[name]['description'],
            ours[name]['parameters'],
        ), name
    if not harness_has_grep():
        return
    for name in ('read_tool_result', 'grep_tool_result'):
        theirs, spec = harness[name], ours[name]
        assert spec['description'] == theirs.description, name
        properties = theirs.parameters_json_schema['properties']
        ours_properties = {k: v for k, v in spec['parameters']['properties'].items() if k != 'regex'}
        assert list(ours_properties) == list(properties), name
        for parameter, schema in properties.items():
            assert ours_properties[parameter]['description'] == schema['description'], (name, parameter)
            assert ours_properties[parameter].get('default') == schema.get('default'), (name, parameter)
        assert spec['parameters']['required'] == theirs.parameters_json_schema['required'], name


def test_a_query_sandbox_that_cannot_bound_itself_refuses_the_query_for_good(tmp_path: Path) -> None:
    """Queries run in the installed `overspill` command's sandbox; one that cannot bound its memory
    (here it runs where `/proc` is an empty directory, as on a system without `/proc`: a mount
    namespace of its own, the tests running as root) runs nothing, and the query fails for good
    with why: a `StoreError` that is not retryable, never a retry loop."""
    from overspill import Store, StoreError

    store = Store(f'file://{tmp_path}')
    assert store.query_sandbox == str(Path(sys.executable).parent / 'overspill'), store.query_sandbox
    wrapper = tmp_path / 'overspill-without-proc'
    wrapper.write_text(
        '#!/bin/sh\nexec /usr/bin/unshare --mount /bin/sh -c '
        f'\'/bin/mount -t tmpfs none /proc && exec "$0" "$@"\' \'{store.query_sandbox}\' "$@"\n'
    )
    wrapper.chmod(0o755)
    unbounded = Store(f'file://{tmp_path}', query_sandbox=str(wrapper))

    async def query() -> str:
        await unbounded.write('run-u/call-1.0', b'{"n":1}\n')
        return await unbounded.query_tool_result({'handle': 'run-u/call-1.0', 'filter': '.n'})

    with pytest.raises(StoreError, match='cannot read /proc/self/status to learn what it maps') as raised:
        asyncio.run(query())
    assert (raised.value.kind, raised.value.retryable) == ('QuerySandboxUnbounded', False)
    # A sandbox that fails otherwise is the same typed error, worth retrying.
    unbounded = Store(f'file://{tmp_path}', query_sandbox='/bin/false')
    with pytest.raises(StoreError, match='the query sandbox failed') as raised:
        asyncio.run(query())
    assert (raised.value.kind, raised.value.retryable) == ('QuerySandboxFailed', True)
