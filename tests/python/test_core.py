"""The framework-neutral core every integration is a thin adapter over, without Temporal: the
compat checks, the codecs (on the frameworks' real objects where they are installed, else on their
documented shapes), the interceptor's engine path, the read-back table's renderings, and the
masking rule with its cost.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from typing import Any

import pytest
from pydantic import BaseModel

import overspill
from overspill import (
    MCP_RESULT,
    READ_BACK_TOOLS,
    STRANDS_RESULT,
    TEXT,
    TOOL_MESSAGE,
    UNTYPED,
    Conversation,
    Entry,
    MaskingSettings,
    OverspillInterceptor,
    Store,
    ToolActivities,
    ToolCallSite,
    ToolOutput,
    mask_marker,
)
from overspill._codecs import NO_ANNOTATION

# --- the frameworks' objects, or their documented shapes --------------------------------------

try:  # langchain-core (LangGraph, Deep Agents)
    from langchain_core.load import dumpd
    from langchain_core.messages import AIMessage, ToolMessage
except ImportError:  # `ToolMessage` and its `dumpd` form, as langchain-core 1.x documents them

    class ToolMessage(BaseModel):  # type: ignore[no-redef]
        content: Any
        tool_call_id: str
        name: str | None = None
        status: str = 'success'
        type: str = 'tool'

    class AIMessage(BaseModel):  # type: ignore[no-redef]
        content: Any
        type: str = 'ai'

    def dumpd(message: Any) -> dict[str, Any]:  # type: ignore[misc]
        kwargs = {k: v for k, v in message.model_dump().items() if v is not None}
        return {'lc': 1, 'type': 'constructor', 'id': ['langchain', 'schema', 'messages', 'ToolMessage'], 'kwargs': kwargs}


try:  # temporalio-langgraph, temporalio-deepagents, temporalio-google-adk
    from temporalio.deepagents._activity import ToolActivityOutput
    from temporalio.google_adk._mcp import TemporalToolContext, _CallToolResult
    from temporalio.langgraph._activity import ActivityOutput
except ImportError:  # their dataclasses, field for field

    @dataclasses.dataclass
    class ActivityOutput:  # type: ignore[no-redef]
        result: Any = None
        langgraph_command: Any = None
        langgraph_interrupts: Any = None

    @dataclasses.dataclass
    class ToolActivityOutput:  # type: ignore[no-redef]
        message: Any

    @dataclasses.dataclass
    class TemporalToolContext:  # type: ignore[no-redef]
        tool_confirmation: Any
        function_call_id: str | None
        event_actions: Any

    @dataclasses.dataclass
    class _CallToolResult:  # type: ignore[no-redef]
        result: Any
        tool_context: Any


def _reduced(text: str) -> overspill.Reduced:
    return overspill.Reduced(value=text, content=None, metadata=None, envelope=False, kind='spilled')


# --- compat -------------------------------------------------------------------------------------


def test_the_private_apis_relied_on_are_there_and_a_missing_one_names_the_version() -> None:
    import importlib
    import pkgutil

    import overspill._compat
    from overspill._compat import UnsupportedVersion, installed, private
    from overspill._compat import temporalio as compat

    # Each framework's module: fails on an unsupported version of it, naming that version.
    for module in pkgutil.iter_modules(overspill._compat.__path__):
        importlib.import_module(f'overspill._compat.{module.name}').check()

    class Gone:
        pass

    with pytest.raises(UnsupportedVersion) as error:
        private(Gone, '_Definition', package='temporalio', supported=compat.SUPPORTED)
    assert str(error.value) == (
        f'temporalio {installed("temporalio")} has no Gone._Definition, which Overspill relies on: '
        f'Overspill supports temporalio{compat.SUPPORTED}'
    )


# --- codecs -------------------------------------------------------------------------------------


def test_the_text_codec_fits_only_annotations_a_text_decodes_into() -> None:
    for annotation in (NO_ANNOTATION, Any, str, dict, dict[str, Any], str | None, dict[str, int] | None):
        assert TEXT.fits(annotation), annotation
    for annotation in (list[dict[str, Any]], int, BaseModel, str | int):
        assert not TEXT.fits(annotation) and UNTYPED.fits(annotation), annotation
    assert TEXT.rebuild({'rows': [1]}, [_reduced('[marker]')]) == {'result': '[marker]'}
    assert UNTYPED.rebuild({'rows': [1]}, [_reduced('[marker]')]) == '[marker]'
    assert TEXT.outputs('text')[0].value == 'text'


def test_tool_messages_live_in_a_node_update_and_dumped_in_a_tool_activity_output() -> None:
    big = 'x' * 100
    update = ActivityOutput(
        result={
            'messages': [
                AIMessage(content='calling'),
                ToolMessage(content=big, tool_call_id='call-a', name='fetch'),
                ToolMessage(content=[{'type': 'text', 'text': 'one '}, {'type': 'text', 'text': 'two'}], tool_call_id='call-b'),
                ToolMessage(content='boom', tool_call_id='call-c', status='error'),
            ]
        }
    )
    found = TOOL_MESSAGE.outputs(update)
    assert [(p.value, p.call_id, p.tool_name) for p in found] == [(big, 'call-a', 'fetch'), ('one two', 'call-b', None)]
    rebuilt = TOOL_MESSAGE.rebuild(update, [_reduced('[spilled a]'), None])
    messages = rebuilt.result['messages']
    assert type(rebuilt) is type(update) and messages[1].content == '[spilled a]' and messages[1].tool_call_id == 'call-a'
    assert messages[1].name == 'fetch' and messages[2] is update.result['messages'][2] and messages[3].status == 'error'
    assert update.result['messages'][1].content == big, 'the original is left as it was'

    dumped = ToolActivityOutput(message=dumpd(ToolMessage(content=big, tool_call_id='uuid-1', name='search')))
    [part] = TOOL_MESSAGE.outputs(dumped)
    assert (part.value, part.call_id, part.tool_name) == (big, 'uuid-1', 'search')
    again = TOOL_MESSAGE.rebuild(dumped, [_reduced('[spilled]')])
    assert again.message['kwargs']['content'] == '[spilled]' and again.message['kwargs']['tool_call_id'] == 'uuid-1'
    assert again.message['id'] == dumped.message['id'] and dumped.message['kwargs']['content'] == big


def test_an_adk_mcp_result_and_a_strands_tool_result() -> None:
    mcp = {'content': [{'type': 'text', 'text': 'a'}, {'type': 'text', 'text': 'b'}], 'structuredContent': {'rows': 2}, 'isError': False}
    adk = _CallToolResult(result=mcp, tool_context=TemporalToolContext(None, 'fc-1', None))
    [part] = MCP_RESULT.outputs(adk)
    assert (part.value, part.call_id) == ('a\nb', 'fc-1')
    rebuilt = MCP_RESULT.rebuild(adk, [_reduced('[spilled]')])
    assert rebuilt.tool_context is adk.tool_context
    assert rebuilt.result == {'content': [{'type': 'text', 'text': '[spilled]'}], 'isError': False}
    assert MCP_RESULT.outputs(_CallToolResult({**mcp, 'isError': True}, adk.tool_context)) == []

    strands = {'toolUseId': 'tu-1', 'status': 'success', 'content': [{'text': 'a'}, {'text': 'b'}], 'structuredContent': {}}
    [part] = STRANDS_RESULT.outputs(strands)
    assert (part.value, part.call_id) == ('a\nb', 'tu-1')
    assert STRANDS_RESULT.rebuild(strands, [_reduced('[spilled]')]) == {'toolUseId': 'tu-1', 'status': 'success', 'content': [{'text': '[spilled]'}]}
    [records] = STRANDS_RESULT.outputs({'toolUseId': 'tu-2', 'status': 'success', 'content': [{'json': [{'id': 1}]}]})
    assert records.value == [{'id': 1}]
    assert STRANDS_RESULT.outputs({**strands, 'status': 'error'}) == []


def test_one_activity_running_several_tools_names_each_call_as_its_arguments_say() -> None:
    """An MCP server's `-call-tool` runs each of its tools: the call's tool is the one its
    arguments name (`tool_from_args`), else the selection's."""
    from types import SimpleNamespace

    def named(args: Any) -> Any:
        return getattr(args[0], 'name', None) if args else None

    selection = ToolActivities(suffix='-call-tool', codec=MCP_RESULT, tool_from_args=named)
    info = SimpleNamespace(activity_type='pages-call-tool', workflow_run_id='run', activity_id='3')
    for args, tool in (((SimpleNamespace(name='mcp_page'),), 'mcp_page'), ((), 'pages'), ((SimpleNamespace(name=7),), 'pages')):
        site = selection.call_site(info, SimpleNamespace(args=args, fn=None))  # type: ignore[arg-type]
        assert site == ToolCallSite(tool_name=tool, run_id='run', tool_call_id='3'), args


def test_the_interceptor_spills_each_tool_message_under_its_call_id(tmp_path: Any) -> None:
    """The engine path outside any activity: each ToolMessage over the band is spilled under
    `{run}/{tool_call_id}.0`, the other left as it was."""
    store = Store(tmp_path.as_uri())
    interceptor = OverspillInterceptor([ToolActivities(suffix='.tools', codec=TOOL_MESSAGE)], store=store)
    big = ''.join(f'line {i:05d}\n' for i in range(2_000))
    update = {'messages': [ToolMessage(content=big, tool_call_id='call-a', name='fetch'), ToolMessage(content='ok', tool_call_id='call-b')]}
    [tools] = interceptor.tools
    site = ToolCallSite(tool_name='graph', run_id='run-1', tool_call_id='7')

    async def main() -> Any:
        reduced = await interceptor.reduce(tools, site, update)
        return reduced, await store.read('run-1/call-a.0')

    reduced, stored = asyncio.run(main())
    first, second = reduced['messages']
    assert first.content.startswith(f"[Tool output too large ({len(big):,} chars); stored to handle 'run-1/call-a.0'.")
    assert stored == big.encode() and second is update['messages'][1]

    by_activity = OverspillInterceptor([ToolActivities(suffix='.tools', codec=TOOL_MESSAGE, call_ids=False)], store=store)
    reduced = asyncio.run(by_activity.reduce(by_activity.tools[0], site, update))
    assert "stored to handle 'run-1/7-0.0'." in reduced['messages'][0].content, 'keyed by the activity, then the index'



def test_records_spill_as_json_lines_by_default_and_as_given_otherwise(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A list of records reads back one record per line; `OVERSPILL_STORE` names the default store."""
    monkeypatch.setenv('OVERSPILL_STORE', (tmp_path / 'env').as_uri())
    records = [{'id': i, 'status': 'ok'} for i in range(1_000)]
    site = ToolCallSite(tool_name='rows', run_id='run', tool_call_id='1')

    async def spill(limits: Any) -> bytes:
        interceptor = OverspillInterceptor(['rows'], limits)
        [tools] = interceptor.tools
        await interceptor.reduce(tools, site, records)
        return bytes(await interceptor.store.read('run/1.0'))

    assert OverspillInterceptor(['rows']).store.url.rstrip('/') == (tmp_path / 'env').as_uri()
    lines = asyncio.run(spill(None)).decode().split('\n')
    assert lines[:2] == ['{"id":0,"status":"ok"}', '{"id":1,"status":"ok"}'] and len(lines) == 1_000
    compact = asyncio.run(spill({'serializer': None})).decode()
    assert compact == json.dumps(records, separators=(',', ':'))


def test_external_storage_needs_boto3_only_when_it_makes_a_client(monkeypatch: pytest.MonkeyPatch) -> None:
    from overspill import external_storage

    monkeypatch.setitem(sys.modules, 'boto3', None)
    with pytest.raises(ImportError, match=r"pip install 'overspill\[external-storage\]'"):
        external_storage.external_storage('s3://bucket')
    assert external_storage.external_storage('s3://bucket', s3_client=object()) is not None


# --- the read-back tools ------------------------------------------------------------------------


def test_the_read_back_tools_are_the_engines_table_rendered() -> None:
    from overspill._native import read_back_tools

    assert [(t.name, t.activity, t.description, dict(t.parameters)) for t in READ_BACK_TOOLS] == [
        (s['name'], s['activity'], s['description'], s['parameters']) for s in read_back_tools()
    ]
    read = overspill._tools.TOOLS['read_tool_result']
    strict = read.strict_parameters()
    assert strict['required'] == list(read.parameters['properties']) and strict['additionalProperties'] is False
    assert strict['properties']['handle'] == read.parameters['properties']['handle']
    assert 'null' in strict['properties']['offset']['type'] and 'null' not in read.parameters['properties']['offset']['type']
    assert read.request({'handle': 'h', 'offset': None, 'pattern': None}) == {'handle': 'h'}
    listing = overspill._tools.TOOLS['list_tool_results']
    assert listing.lists and listing.request({'limit': 5}, run_id='r', tool_names={'c': 't'}) == {
        'limit': 5, 'run_id': 'r', 'tool_names': {'c': 't'}
    }


# --- masking ------------------------------------------------------------------------------------


Item = dict[str, Any]


def _describe(item: Item) -> Entry:
    outputs = [ToolOutput(item['call'], 'fetch', item['text'])] if item['kind'] == 'output' else []
    return Entry(texts=(item['text'],), from_model=item['kind'] == 'call', outputs=outputs)


def _conversation(**settings: Any) -> Conversation[Item]:
    return Conversation(
        MaskingSettings(**settings), lambda i: (i['kind'], i['call']), _describe, lambda i, _, m: {**i, 'text': m}
    )


def _turn(k: int, chars: int) -> list[Item]:
    return [{'kind': 'call', 'call': f'c{k}', 'text': '{}'}, {'kind': 'output', 'call': f'c{k}', 'text': f'{k:04d}' + 'x' * (chars - 4)}]


class _Spills:
    def __init__(self) -> None:
        self.keys: list[str] = []

    async def __call__(self, key: str, data: bytes) -> str:
        self.keys.append(key)
        return key


def test_masking_batches_at_the_budget_and_never_masks_what_the_model_has_not_seen() -> None:
    """12 turns of 10,000 chars under a 65,000-char budget, keeping 2: masking happens in batches
    (every seen output but the 2 newest at once), so between batches each input is the previous one
    plus new items (a provider's prompt cache keeps matching); the current turn's output is never
    masked nor counted among the 2 kept; each output is spilled once."""
    conversation, spills = _conversation(budget=65_000, keep_recent=2), _Spills()
    items: list[Item] = [{'kind': 'user', 'call': '', 'text': 'go'}]
    sent: list[list[Item]] = []
    masked_now: list[list[int]] = []
    for k in range(12):
        items += _turn(k, 10_000)
        sent.append(asyncio.run(conversation.mask(items, run_id='run', spill=spills)))
        masked_now.append(conversation.masked_now)
    masked = [[i['call'] for i in s if i['kind'] == 'output' and i['text'].startswith('[Tool output of')] for s in sent]
    batches = [k for k in range(1, 12) if sent[k][: len(sent[k - 1])] != sent[k - 1]]
    assert batches == [6, 10], masked  # 7 outputs (70,000 chars) pass the budget
    assert masked[6] == ['c0', 'c1', 'c2', 'c3'] and masked[10] == ['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7']
    assert [i['call'] for i in sent[6] if i['kind'] == 'output' and i['call'] not in masked[6]] == ['c4', 'c5', 'c6']
    assert masked_now[6] == [2, 4, 6, 8] and masked_now[7] == [] and masked_now[10] == [10, 12, 14, 16]
    assert all(s[-1]['text'].startswith(f'{k:04d}') for k, s in enumerate(sent)), 'the current turn is never masked'
    assert spills.keys == [k for k in dict.fromkeys(spills.keys)], 'each output spilled once'
    marker = sent[10][2]['text']
    assert marker == mask_marker('fetch', spills.keys[0], '10,000 chars', ('read_tool_result', 'grep_tool_result', 'query_tool_result'))


def test_masking_examines_each_item_once_however_long_the_conversation() -> None:
    """1,000 model calls on a conversation that grows by a call and an output each: the items
    examined are the items (each once), not the ~1,000,000 a per-call pass over the conversation
    would examine; another conversation starts over."""
    conversation, spills = _conversation(budget=20_000, keep_recent=3), _Spills()
    items: list[Item] = [{'kind': 'user', 'call': '', 'text': 'go'}]

    async def run() -> None:
        for k in range(1_000):
            items.extend(_turn(k, 2_000))
            await conversation.mask(items, run_id='run', spill=spills)

    asyncio.run(run())
    assert conversation.examined == len(items) == 2_001
    assert len(spills.keys) == 1_000 - 3 - 1, 'all but the 3 kept and the current turn'
    other = [{'kind': 'user', 'call': 'x', 'text': 'another'}]
    assert asyncio.run(conversation.mask(other, run_id='run', spill=spills)) == other
    assert conversation.examined == 2_002


def test_masking_settings_are_validated_once_for_every_framework() -> None:
    for bad in ({'budget': -1}, {'keep_recent': -1}, {'unit': 'bytes'}, {'read_tools': ()}):
        with pytest.raises(ValueError):
            MaskingSettings(**bad)


def test_every_integration_names_the_core_s_classes_and_activities() -> None:
    """The integrations re-export the core's failures, names and External Storage rather than
    define their own: one `NoWorkerError` to catch whichever framework raised it, one spill
    activity, and pydantic-ai's former `READ_ACTIVITY` (its agent-side read, another activity than
    the OpenAI Agents SDK's `READ_ACTIVITY`) kept as a deprecated alias of `READ_SPILL_ACTIVITY`."""
    import overspill
    import overspill.external_storage
    import overspill.openai_agents
    import overspill.pydantic_ai as pydantic_ai

    for name in ('NoWorkerError', 'OtherStoreError', 'UnavailableError', 'OverspillUnavailable'):
        assert getattr(pydantic_ai, name) is getattr(overspill, name), name
    assert overspill.openai_agents.NoWorkerError is overspill.NoWorkerError
    assert pydantic_ai.SPILL_ACTIVITY == overspill.SPILL_ACTIVITY == overspill.openai_agents.SPILL_ACTIVITY
    assert pydantic_ai.DEFAULT_TASK_QUEUE == overspill.DEFAULT_TASK_QUEUE
    assert pydantic_ai.GREP_ACTIVITY == overspill.READ_BACK_TOOLS[1].activity
    assert pydantic_ai.external_storage is overspill.external_storage.external_storage
    assert pydantic_ai.READ_SPILL_ACTIVITY == 'overspill.read_spill' != overspill.openai_agents.READ_ACTIVITY
    with pytest.warns(DeprecationWarning, match='READ_SPILL_ACTIVITY'):
        assert pydantic_ai.READ_ACTIVITY == pydantic_ai.READ_SPILL_ACTIVITY
