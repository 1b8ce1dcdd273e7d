"""Strands on Temporal (`temporalio.strands_agents`) with Overspill (`overspill.strands`).

A scripted model (`strands_support.ScriptedModel`, Strands' own `Model`) drives an agent whose
tools are activities: `activity_as_tool` tools and the MCP server `mcp_pages.py` over stdio
(`TemporalMCPClient`). Every model call is an activity whose input carries the whole conversation
so far, twice: as its messages and in its `invocation_state`. Real pieces: the Temporal dev
server, SeaweedFS, the `overspill worker` binary.

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
    RECORD_LINES,
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
from overspill import DEFAULT_LIMITS, READ_BACK_TOOLS, SPILL_ACTIVITY, Store, mask_marker
from overspill.strands import OverspillPlugin
from strands_support import MEASURE, MODEL_ACTIVITY, AgentRequest, StrandsAgent, fetch_page, fetch_records, model_results, plugin
from support import EXAMPLES, page_text, readme_shows, run_quickstart
from temporalio.client import Client
from temporalio.worker import Interceptor, UnsandboxedWorkflowRunner, Worker

MASK_TOOLS = ('read_tool_result', 'grep_tool_result', 'query_tool_result')


@pytest.fixture(scope='module')
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with overspill_stack(tmp_path_factory.mktemp('logs'), 'strands') as stack:
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
        overspill = [OverspillPlugin([fetch_page, fetch_records], store=stack.store_url)] if stack else []
        client = await _client(*overspill)
        queue = f'strands-agent-{uuid.uuid4()}'
        async with Worker(
            client, task_queue=queue, workflows=[StrandsAgent], activities=[fetch_page, fetch_records],
            interceptors=interceptors, workflow_runner=UnsandboxedWorkflowRunner(),
        ):
            return await run_agent(client, StrandsAgent.run, request, task_queue=queue, timeout=timeout, measure=MEASURE)

    return asyncio.run(main())


def _replay(history: Any) -> None:
    replay(history, [StrandsAgent], [plugin()])


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
    """The `activity_as_tool` tool returns 40 MB: it is spilled in the tool's activity, so the
    history stays under 100 KB without External Storage; the model reads the 4th ERROR line back
    by the marker's handle (`{run id}/{activity id}.0`); the history replays."""
    chars = 40_000_000
    figures, history = _run(AgentRequest(f'fetch 1 page of {chars} chars, then read ERROR at offset 3', overspill_queue=stack.queue), stack)
    assert figures.status == 'completed', figures
    [(activity_id, _)] = tool_calls(history)
    handle = f'{run_id_of(history)}/{activity_id}.0'
    page = page_text(0, chars)
    errors = [line for line in page.split('\n') if 'ERROR' in line]
    assert figures.result == f"[handle {handle!r}: {len(errors):,} matching line(s); showing 1]\n{errors[3]}"
    [seen] = model_results(history)[1]
    assert seen['content'][0]['text'].startswith(f"[Tool output too large ({chars:,} chars); stored to handle {handle!r}.")
    assert stored(stack, handle) == page.encode()
    assert figures.history_bytes < 100_000, figures.history_bytes
    _replay(history)


def test_the_model_sees_the_rust_workers_text_for_tool_mcp_and_records_outputs(stack: Stack) -> None:
    """A 200 KB `activity_as_tool` output, a 200 KB MCP output (`pages-call-tool`) and 2,000
    records reach the model as what the Overspill worker's own `tool_output_limits.reduce` makes
    of the same output, call and limits, byte for byte. The MCP result keeps its `toolUseId` and
    status, names the MCP tool, and has no `structuredContent` (FastMCP's second copy of the
    text); `list_tool_results` lists them; the history replays."""
    figures, history = _run(
        AgentRequest('fetch 1 page of 200000 chars, then mcp 1 page of 200000 chars, then records 2000, then list',
                     mcp=True, overspill_queue=stack.queue),
        stack,
    )
    assert figures.status == 'completed', figures
    run_id = run_id_of(history)
    [(page_call, _)], [(mcp_call, _)], [(records_call, _)] = (
        tool_calls(history, tool) for tool in ('fetch_page', 'pages-call-tool', 'fetch_records')
    )
    [mcp_result] = _completed(history, 'pages-call-tool')
    assert mcp_result['toolUseId'] == 'tu-1' and set(mcp_result) == {'status', 'toolUseId', 'content', 'isError'}, mcp_result
    seen = [r['content'][0]['text'] for r in model_results(history)[-1][:3]]
    cases = [
        ('fetch_page', page_call, {'text': page_text(0, 200_000)}, page_text(0, 200_000).encode()),
        ('mcp_page', mcp_call, {'text': page_text(0, 200_000)}, page_text(0, 200_000).encode()),
        ('fetch_records', records_call, {'json': json.loads(RECORD_LINES.replace('\n', ',').join('[]'))}, RECORD_LINES.encode()),
    ]
    for (tool, call, output, spilled), text in zip(cases, seen, strict=True):
        request = {'tool_name': tool, 'run_id': run_id, 'tool_call_id': call, 'output': output, 'config': dict(DEFAULT_LIMITS)}
        reduced = asyncio.run(_reduce(stack, request))
        assert reduced['return_value'] == {'text': text} and text.startswith('[Tool output too large ('), (tool, text[:300])
        assert stored(stack, f'{run_id}/{call}.0') == spilled
        assert f"'{run_id}/{call}.0': {tool}, " in figures.result, figures.result
    _replay(history)


async def _reduce(stack: Stack, request: dict[str, Any]) -> dict[str, Any]:
    return await reduce_on_worker(await _client(), stack, request)


def test_the_model_reads_back_with_read_grep_and_query(stack: Stack) -> None:
    """`grep_tool_result` and `read_tool_result` on a spilled page, and `query_tool_result` on
    spilled records (JSON Lines): the model gets the worker's pages, the engine's for the same
    requests."""
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
    query, history = _run(AgentRequest('records 2000, then query select(.status == "ERROR") | .id',
                                       overspill_queue=stack.queue), stack)
    [(activity_id, _)] = tool_calls(history, 'fetch_records')
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


def test_masking_shrinks_both_copies_of_later_inputs_and_the_model_reads_a_masked_output_back(stack: Stack) -> None:
    """8 outputs of 20 KB (no reduction at the source) under a 50,000-char budget: once over it,
    the results the model has seen but the 3 newest reach it as markers, in its messages and in
    the copy of them Strands sends in `invocation_state`; the current turn's never; later inputs
    shrink; each output is spilled once; the model reads page 0's first ERROR line back by its
    marker's handle; the history replays."""
    figures, history = _run(
        AgentRequest('fetch 8 pages of 20000 chars, then read ERROR', overspill_queue=stack.queue, masking_budget=50_000)
    )
    assert figures.status == 'completed', figures
    run_id = run_id_of(history)
    inputs = [json.loads(data) for data in scheduled(history, MODEL_ACTIVITY)]
    read_back = inputs[-2]  # the call that read back: 7 outputs seen, the 8th its current turn's
    model_visible = [{k: v for k, v in m.items() if k in ('role', 'content')} for m in read_back['invocation_state']['messages']]
    assert model_visible == read_back['messages'], 'the copy in invocation_state is masked too'
    outputs = [r['content'][0]['text'] for r in model_results(history)[-2]]
    page = page_text(0, 20_000)
    handle = f'{run_id}/tu-0.masked-{hashlib.sha256(page.encode()).hexdigest()[:12]}'
    assert len(outputs) == 8 and outputs[0] == mask_marker('fetch_page', handle, '20,000 chars', MASK_TOOLS)
    assert all(o.startswith("[Tool output of 'fetch_page' cleared from context") for o in outputs[:4]), outputs
    assert outputs[4:] == [page_text(n, 20_000) for n in (4, 5, 6, 7)]
    assert stored(stack, handle) == page.encode()
    sizes = [len(json.dumps(i)) for i in inputs]
    assert max(sizes[5:]) < max(sizes[:5]) + 20_000, f'later inputs stay near twice the budget: {sizes}'
    assert len(scheduled(history, SPILL_ACTIVITY)) == 5, 'each output spilled once'
    errors = [line for line in page.split('\n') if 'ERROR' in line]
    assert figures.result == f"[handle {handle!r}: {len(errors):,} matching line(s); showing 1]\n{errors[0]}"
    _replay(history)


def test_no_worker_on_the_queue_ends_the_run_with_one_line(stack: Stack) -> None:
    """No Overspill worker polls the queue: the run ends within the start timeout, naming the
    queue, whether a read-back tool or masking needed it, although Strands turns a tool's and a
    middleware's exceptions into error results (`OverspillUnavailable`, raised from the agent's
    loop)."""
    for request, at_source in (
        (AgentRequest('fetch 1 page of 50000 chars, then read ERROR', overspill_start_timeout=1), stack),
        (AgentRequest('fetch 5 pages of 20000 chars', masking_budget=30_000, overspill_start_timeout=1), None),
    ):
        request.overspill_queue = nobody = f'nobody-{uuid.uuid4()}'
        figures, _ = _run(request, at_source)
        activity = 'tool_output_limits.read_tool_result' if at_source else SPILL_ACTIVITY
        assert figures.status.startswith('failed: '), figures
        assert f'no Overspill worker polls task queue {nobody!r}: {activity} waited 0:00:01' in figures.status, figures.status
        assert '\n' not in figures.status, figures.status


def test_a_bad_argument_goes_back_to_the_model_as_an_error_result(stack: Stack) -> None:
    """The worker's `ModelRetry` (`offset` < 0) reaches the model as an error result, and the run goes on."""
    figures, _ = _run(AgentRequest('fetch 1 page of 50000 chars, then read ERROR at offset -1', overspill_queue=stack.queue), stack)
    assert figures.status == 'completed' and figures.result == '`offset` must be >= 0.', figures


# --- without Temporal -----------------------------------------------------------------------------------


def test_the_tools_are_the_engines_table_as_strands_tools() -> None:
    """Each read-back tool's spec is the table's name, description and schema (no copy of a tool's
    words here; every argument described, so Strands adds none of its own), and survives Strands'
    registration unchanged."""
    from overspill.strands import overspill_tools
    from strands.tools.registry import ToolRegistry

    registry = ToolRegistry()
    for tool, table in zip(overspill_tools(), READ_BACK_TOOLS, strict=True):
        registry.register_tool(tool)
        spec = tool.tool_spec
        registry.validate_tool_spec(spec)
        assert spec == {'name': table.name, 'description': table.description, 'inputSchema': {'json': table.parameters}}
        assert '.' not in tool.tool_name
    assert [s['name'] for s in registry.get_all_tool_specs()] == [t.name for t in READ_BACK_TOOLS]


def test_the_private_apis_relied_on_are_there_and_a_missing_one_names_the_version() -> None:
    from overspill._compat import UnsupportedVersion, fields, installed
    from overspill._compat import strands as compat
    from temporalio.strands_agents._temporal_mcp_client import _CallToolArgs

    compat.check()  # fails on an unsupported temporalio-strands-agents, naming its version
    with pytest.raises(UnsupportedVersion) as error:
        fields(_CallToolArgs, ('name',), package='temporalio-strands-agents', supported=compat.SUPPORTED)
    assert str(error.value) == (
        f'temporalio-strands-agents {installed("temporalio-strands-agents")} has no field _CallToolArgs.name, which '
        f'Overspill relies on: Overspill supports temporalio-strands-agents{compat.SUPPORTED}'
    )


def test_masking_examines_only_what_is_new_and_masks_both_copies() -> None:
    """`OverspillMasking` over 500 model calls whose outputs were spilled at the source (an MCP
    result with its `structuredContent`): each message is examined once (Strands copies the
    conversation at every call), the masked results keep their at-source handles (no spill) and
    lose their `structuredContent`, the current turn's is never masked, `invocation_state`'s
    `messages` are the masked ones in a copy of the state, and the agent's own are untouched."""
    from overspill.strands import OverspillMasking
    from strands.middleware import InvokeModelContext

    masking = OverspillMasking(budget=30_000)
    messages: list[Any] = [{'role': 'user', 'content': [{'text': 'fetch'}]}]
    state: dict[str, Any] = {'messages': messages}

    async def run() -> InvokeModelContext:
        sent: Any = None
        for k in range(500):
            marker = f"[Tool output too large (200,000 chars); stored to handle 'run/{k}.0'. …]\n" + 'x' * 1_000
            messages.append({'role': 'assistant', 'content': [{'toolUse': {'toolUseId': f'tu-{k}', 'name': 'mcp_page', 'input': {}}}]})
            result = {'toolUseId': f'tu-{k}', 'status': 'success', 'content': [{'text': marker}], 'structuredContent': {'result': marker}}
            messages.append({'role': 'user', 'content': [{'toolResult': result}]})
            context = InvokeModelContext(
                agent=None, messages=json.loads(json.dumps(messages)), system_prompt='go', tool_specs=[],  # type: ignore[arg-type]
                tool_choice=None, invocation_state=state, model=None,  # type: ignore[arg-type]
            )
            sent = await masking(context)
        return sent

    sent = asyncio.run(run())
    assert masking._conversations._outside is not None and masking._conversations._outside.examined == len(messages) == 1_001
    results = [b['toolResult'] for m in sent.messages for b in m['content'] if 'toolResult' in b]
    assert results[0] == {'toolUseId': 'tu-0', 'status': 'success', 'content': [{'text': mask_marker('mcp_page', 'run/0.0', '200,000 chars', MASK_TOOLS)}]}
    assert all(r['content'][0]['text'].startswith('[Tool output of') for r in results[:-4])
    assert results[-1]['content'][0]['text'].startswith('[Tool output too large') and 'structuredContent' in results[-1]
    assert sent.invocation_state == {'messages': sent.messages} and state['messages'] is messages
    assert all('structuredContent' in b['toolResult'] for m in messages for b in m['content'] if 'toolResult' in b)


# --- the quickstart -----------------------------------------------------------------------------


def test_the_quickstart_spills_at_the_source_and_reads_back_against_overspill_dev(tmp_path: Path) -> None:
    """`examples/strands_quickstart.py` as pasted, against `overspill dev`, in Temporal's sandbox."""
    run_quickstart(EXAMPLES / 'strands_quickstart.py', tmp_path)


def test_the_package_readme_shows_the_quickstart_whole() -> None:
    assert readme_shows(EXAMPLES / 'strands_quickstart.py')
