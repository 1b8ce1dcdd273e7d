"""Google ADK on Temporal (`temporalio.google_adk`) with Overspill (`overspill.google_adk`).

A scripted model (`google_adk_support.ScriptedLlm`, ADK's own `BaseLlm`) drives an agent whose
tools are activities: `activity_as_tool` tools and the MCP server `mcp_pages.py` over stdio
(`TemporalMcpToolSet`). Every model call is an activity whose input carries the whole
conversation so far. Real pieces: the Temporal dev server, SeaweedFS, the `overspill worker`
binary.

Needs `TEMPORAL_ADDRESS`, `OVERSPILL_TEST_S3_URL` with the `AWS_*` variables, and `OVERSPILL_BIN`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from agents_support import (
    FailFirstAttempt,
    RunFigures,
    Stack,
    objects,
    overspill_stack,
    reduce_on_worker,
    replay,
    run_agent,
    run_id_of,
    scheduled,
    stored,
    tool_calls,
)
from google_adk_support import MEASURE, AdkAgent, AgentRequest, fetch_page, fetch_report, model_responses, plugin
from overspill import DEFAULT_LIMITS, READ_BACK_TOOLS, SPILL_ACTIVITY, Store, mask_marker
from overspill.google_adk import OverspillPlugin
from support import EXAMPLES, page_text, readme_shows, run_quickstart
from temporalio.client import Client
from temporalio.worker import Interceptor, UnsandboxedWorkflowRunner, Worker

MASK_TOOLS = ('read_tool_result', 'grep_tool_result', 'query_tool_result')


@pytest.fixture(scope='module')
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with overspill_stack(tmp_path_factory.mktemp('logs'), 'google-adk') as stack:
        yield stack


async def _client(*plugins: Any) -> Client:
    return await Client.connect(
        os.environ['TEMPORAL_ADDRESS'], namespace=os.environ.get('TEMPORAL_NAMESPACE', 'default'), plugins=[plugin(), *plugins]
    )


def _run(
    request: AgentRequest, stack: Stack | None = None, *, interceptors: Sequence[Interceptor] = (), timeout: float = 240
) -> tuple[RunFigures, Any]:
    """Run the agent on a worker in this process (workflow, tools, model) with the integration's
    plugin, and with `stack`, Overspill's in one line (at the source, into `stack`'s store)."""

    async def main() -> tuple[RunFigures, Any]:
        overspill = [OverspillPlugin([fetch_page, fetch_report], store=stack.store_url)] if stack else []
        client = await _client(*overspill)
        queue = f'adk-agent-{uuid.uuid4()}'
        async with Worker(
            client, task_queue=queue, workflows=[AdkAgent], activities=[fetch_page, fetch_report],
            interceptors=interceptors, workflow_runner=UnsandboxedWorkflowRunner(),
        ):
            return await run_agent(client, AdkAgent.run, request, task_queue=queue, timeout=timeout, measure=MEASURE)

    return asyncio.run(main())


def _replay(history: Any) -> None:
    replay(history, [AdkAgent], [plugin()])


def _completed(history: Any, activity_type: str) -> list[Any]:
    """The results of the completed activities of `activity_type`, decoded."""
    kinds = {e.event_id: e.activity_task_scheduled_event_attributes.activity_type.name
             for e in history.events if e.HasField('activity_task_scheduled_event_attributes')}
    return [
        json.loads(e.activity_task_completed_event_attributes.result.payloads[0].data)
        for e in history.events
        if e.HasField('activity_task_completed_event_attributes')
        and kinds[e.activity_task_completed_event_attributes.scheduled_event_id] == activity_type
    ]


# --- at the source --------------------------------------------------------------------------------


def test_a_40_mb_output_completes_without_external_storage_and_is_read_back_by_its_handle(stack: Stack) -> None:
    """The `activity_as_tool` tool returns 40 MB: it is spilled in the tool's activity (its return
    annotation is `str`, which the workflow decodes the marker into), so the history stays under
    100 KB without External Storage; the model reads the 4th ERROR line back by the marker's
    handle (`{run id}/{activity id}.0`); the history replays."""
    chars = 40_000_000
    figures, history = _run(AgentRequest(f'fetch 1 page of {chars} chars, then read ERROR at offset 3', overspill_queue=stack.queue), stack)
    assert figures.status == 'completed', figures
    [(activity_id, _)] = tool_calls(history)
    handle = f'{run_id_of(history)}/{activity_id}.0'
    page = page_text(0, chars)
    errors = [line for line in page.split('\n') if 'ERROR' in line]
    assert figures.result == f"[handle {handle!r}: {len(errors):,} matching line(s); showing 1]\n{errors[3]}"
    [seen] = model_responses(history)[1]
    assert seen['response']['result'].startswith(f"[Tool output too large ({chars:,} chars); stored to handle {handle!r}.")
    assert stored(stack, handle) == page.encode()
    assert figures.history_bytes < 100_000, figures.history_bytes
    _replay(history)


def test_the_model_sees_the_rust_workers_text_for_tool_and_mcp_outputs(stack: Stack) -> None:
    """A 200 KB `activity_as_tool` output and a 200 KB MCP output (`pages-call-tool`) reach the
    model as what the Overspill worker's own `tool_output_limits.reduce` makes of the same output,
    call and limits, byte for byte. The MCP result keeps its envelope and `tool_context`, is keyed
    by ADK's function call id, names the MCP tool, and has no `structuredContent` (FastMCP's second
    copy of the text); `list_tool_results` lists both; the history replays."""
    figures, history = _run(
        AgentRequest('fetch 1 page of 200000 chars, then mcp 1 page of 200000 chars, then list', mcp=True,
                     overspill_queue=stack.queue),
        stack,
    )
    assert figures.status == 'completed', figures
    run_id = run_id_of(history)
    [(activity_id, _)] = tool_calls(history)
    [mcp_result] = _completed(history, 'pages-call-tool')
    call_id = mcp_result['tool_context']['function_call_id']
    assert call_id.startswith('adk-') and set(mcp_result['result']) == {'content', 'isError'}, mcp_result
    fetched, mcp = model_responses(history)[-1][:2]
    assert mcp['response'] == mcp_result['result'] and mcp['name'] == 'mcp_page'
    cases = [('fetch_page', activity_id, fetched['response']['result']), ('mcp_page', call_id, mcp['response']['content'][0]['text'])]
    for tool, call, seen in cases:
        request = {'tool_name': tool, 'run_id': run_id, 'tool_call_id': call, 'output': {'text': page_text(0, 200_000)},
                   'config': dict(DEFAULT_LIMITS)}
        reduced = asyncio.run(_reduce(stack, request))
        assert reduced['return_value'] == {'text': seen} and seen.startswith('[Tool output too large ('), (tool, seen[:300])
        assert stored(stack, f'{run_id}/{call}.0') == page_text(0, 200_000).encode()
    listing = figures.result
    assert f"'{run_id}/{activity_id}.0': fetch_page, 200,000 chars" in listing and f"'{run_id}/{call_id}.0': mcp_page" in listing
    _replay(history)


async def _reduce(stack: Stack, request: dict[str, Any]) -> dict[str, Any]:
    return await reduce_on_worker(await _client(), stack, request)


def test_the_model_reads_back_with_read_grep_and_query(stack: Stack) -> None:
    """`grep_tool_result` and `read_tool_result` on a spilled page, and `query_tool_result` on a
    spilled report (a `dict`, spilled as JSON): the model gets the worker's pages, which are the
    engine's for the same requests."""
    figures, history = _run(AgentRequest('fetch 1 page of 20000 chars, then grep ERROR, then read ERROR',
                                         overspill_queue=stack.queue), stack)
    assert figures.status == 'completed', figures
    [(activity_id, _)] = tool_calls(history)
    handle = f'{run_id_of(history)}/{activity_id}.0'
    [grep] = _completed(history, 'tool_output_limits.grep_tool_result')

    async def engine_grep() -> str:
        page: str = await Store(stack.store_url).grep_tool_result({'handle': handle, 'pattern': 'ERROR'})
        return page

    assert grep == asyncio.run(engine_grep()) and grep.startswith(f'[handle {handle!r}: '), grep
    errors = [line for line in page_text(0, 20_000).split('\n') if 'ERROR' in line]
    assert figures.result == f"[handle {handle!r}: {len(errors):,} matching line(s); showing 1]\n{errors[0]}"
    query, history = _run(AgentRequest('report 2000, then query .records[] | select(.status == "ERROR") | .id',
                                       overspill_queue=stack.queue), stack)
    [(activity_id, _)] = tool_calls(history, 'fetch_report')
    header, *ids, more = query.result.splitlines()
    assert header.startswith(f"[handle '{run_id_of(history)}/{activity_id}.0': 154 result(s) of filter"), query.result
    assert ids == ['0', '13', '26'] and more == '[151 more result(s): call query_tool_result again with offset=3]'


def test_a_retried_tool_activity_writes_one_object(stack: Stack) -> None:
    """The tool's first attempt fails after its spill; the retry spills under the same key: one
    object, whose handle the model reads back."""
    figures, history = _run(AgentRequest('fetch 1 page of 50000 chars, then read ERROR', overspill_queue=stack.queue),
                            stack, interceptors=[FailFirstAttempt()])
    assert figures.status == 'completed', figures
    [(activity_id, attempt)] = tool_calls(history)
    handle = f'{run_id_of(history)}/{activity_id}.0'
    assert attempt == 2 and objects(stack, run_id_of(history)) == [handle]
    assert figures.result.startswith(f'[handle {handle!r}: '), figures.result
    assert stored(stack, handle) == page_text(0, 50_000).encode()


# --- masking -------------------------------------------------------------------------------------------


def test_masking_shrinks_later_inputs_and_the_model_reads_a_masked_output_back(stack: Stack) -> None:
    """8 outputs of 20 KB (no reduction at the source) under a 50,000-char budget: once over it,
    the responses the model has seen but the 3 newest reach it as markers (ADK leaves call ids out
    of the request: the key names the tool, and the hash the output), the current turn's never;
    later inputs shrink; each output is spilled once; the model reads page 0's first ERROR line
    back by its marker's handle; the history replays."""
    figures, history = _run(
        AgentRequest('fetch 8 pages of 20000 chars, then read ERROR', overspill_queue=stack.queue, masking_budget=50_000)
    )
    assert figures.status == 'completed', figures
    run_id = run_id_of(history)
    outputs = [r['response']['result'] for r in model_responses(history)[-2]]  # the read-back call's
    page = page_text(0, 20_000)
    handle = f'{run_id}/fetch_page.masked-{hashlib.sha256(page.encode()).hexdigest()[:12]}'
    assert len(outputs) == 8 and outputs[0] == mask_marker('fetch_page', handle, '20,000 chars', MASK_TOOLS)
    assert all(o.startswith("[Tool output of 'fetch_page' cleared from context") for o in outputs[:4]), outputs
    assert outputs[4:] == [page_text(n, 20_000) for n in (4, 5, 6, 7)]
    assert stored(stack, handle) == page.encode()
    sizes = [len(data) for data in scheduled(history, 'invoke_model')]
    assert max(sizes[5:]) < max(sizes[:5]) + 10_000, f'later inputs stay near the budget: {sizes}'
    assert len(scheduled(history, SPILL_ACTIVITY)) == 5, 'each output spilled once'
    errors = [line for line in page.split('\n') if 'ERROR' in line]
    assert figures.result == f"[handle {handle!r}: {len(errors):,} matching line(s); showing 1]\n{errors[0]}"
    _replay(history)


def test_no_worker_on_the_queue_ends_the_run_with_one_line(stack: Stack) -> None:
    """No Overspill worker polls the queue: the run ends within the start timeout, naming the
    queue, whether a read-back tool or masking needed it (ADK lets their `NoWorkerError` through)."""
    for request, at_source in (
        (AgentRequest('fetch 1 page of 50000 chars, then read ERROR', overspill_start_timeout=1), stack),
        (AgentRequest('fetch 5 pages of 20000 chars', masking_budget=30_000, overspill_start_timeout=1), None),
    ):
        request.overspill_queue = nobody = f'nobody-{uuid.uuid4()}'
        figures, _ = _run(request, at_source)
        activity = 'tool_output_limits.read_tool_result' if at_source else SPILL_ACTIVITY
        assert figures.status.startswith('failed: '), figures
        assert f'no Overspill worker polls task queue {nobody!r}: {activity} waited 0:00:01' in figures.status, figures.status


# --- without Temporal -----------------------------------------------------------------------------------


def test_the_tools_are_the_engines_table_as_adk_declarations() -> None:
    """Each read-back tool is declared to the model with the table's name, description and
    schema (no copy of a tool's words here), and takes the model's arguments as one request."""
    from overspill.google_adk import overspill_tools

    tools = overspill_tools()
    for tool, table in zip(tools, READ_BACK_TOOLS, strict=True):
        declaration = tool._get_declaration()
        assert declaration is not None
        assert (declaration.name, declaration.description) == (table.name, table.description)
        assert declaration.parameters_json_schema == table.parameters and '.' not in table.name


def test_the_private_apis_relied_on_are_there_and_a_missing_one_names_the_version() -> None:
    from overspill._compat import UnsupportedVersion, fields, installed
    from overspill._compat import google_adk as compat
    from temporalio.google_adk._mcp import _CallToolResult

    compat.check()  # fails on an unsupported google-adk or temporalio-google-adk, naming its version
    with pytest.raises(UnsupportedVersion) as error:
        fields(_CallToolResult, ('response',), package='temporalio-google-adk', supported=compat.SUPPORTED_INTEGRATION)
    assert str(error.value) == (
        f'temporalio-google-adk {installed("temporalio-google-adk")} has no field _CallToolResult.response, which '
        f'Overspill relies on: Overspill supports temporalio-google-adk{compat.SUPPORTED_INTEGRATION}'
    )


def test_masking_examines_only_what_is_new_and_leaves_the_session_alone() -> None:
    """`OverspillMasking` over 500 model calls whose outputs were spilled at the source: each
    content is examined once (ADK rebuilds the request at every call), the masked responses keep
    their at-source handles (no spill), the current turn's output is never masked, and the
    session's own contents (which a request's parts share nested fields with) are untouched."""
    from google.adk.models.llm_request import LlmRequest
    from google.genai import types
    from overspill.google_adk import OverspillMasking

    masking = OverspillMasking(budget=30_000)
    session: list[types.Content] = [types.Content(role='user', parts=[types.Part(text='fetch')])]

    async def run() -> list[types.Content]:
        sent: list[types.Content] = []
        for k in range(500):
            marker = f"[Tool output too large (200,000 chars); stored to handle 'run/{k}.0'. …]\n" + 'x' * 1_000
            session.append(types.Content(role='model', parts=[types.Part.from_function_call(name='fetch_page', args={'n': k})]))
            session.append(types.Content(role='user', parts=[types.Part.from_function_response(name='fetch_page', response={'result': marker})]))
            # ADK's request: a copy of each content and part, nested fields shared with the session
            contents = [c.model_copy(update={'parts': [p.model_copy() for p in c.parts or ()]}) for c in session]
            request = LlmRequest(contents=contents)
            await masking(None, request)  # type: ignore[arg-type]
            sent = request.contents
        return sent

    sent = asyncio.run(run())
    assert masking._conversations._outside is not None and masking._conversations._outside.examined == len(session) == 1_001
    outputs = [p.function_response.response['result'] for c in sent for p in c.parts or () if p.function_response]
    assert outputs[0] == mask_marker('fetch_page', 'run/0.0', '200,000 chars', MASK_TOOLS)
    assert all(o.startswith('[Tool output of') for o in outputs[:-4]) and outputs[-1].startswith('[Tool output too large')
    assert all(p.function_response.response['result'].startswith('[Tool output too large')
               for c in session for p in c.parts or () if p.function_response)


# --- the quickstart -----------------------------------------------------------------------------


def test_the_quickstart_spills_at_the_source_and_reads_back_against_overspill_dev(tmp_path: Path) -> None:
    """`examples/google_adk_quickstart.py` as pasted, against `overspill dev`, in Temporal's sandbox."""
    run_quickstart(EXAMPLES / 'google_adk_quickstart.py', tmp_path)


def test_the_package_readme_shows_the_quickstart_whole() -> None:
    assert readme_shows(EXAMPLES / 'google_adk_quickstart.py')
