"""Record golden outputs from the reference, pydantic-ai-harness 0.62.0's ToolOutputLimits.

Run with the reference installed in a venv of its own:

    python3 -m venv /tmp/ref && /tmp/ref/bin/pip install pydantic-ai-harness==0.62.0
    /tmp/ref/bin/python tests/golden/generate.py tests/golden

Each case states its input in Overspill's JSON forms and the reference's output, so the Rust
test (tests/integration/golden.rs) checks Overspill byte for byte against the real package.
Cases that hit a documented quirk fix (preview_chars=0, strip_ansi gaps; see README) are left out.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from pathlib import Path
from types import SimpleNamespace

from pydantic_ai.messages import ToolCallPart, ToolReturn
from pydantic_ai.tools import ToolDefinition
from pydantic_ai_harness.tool_output_limits import (
    Band,
    Passthrough,
    Spill,
    Summarize,
    ToolOutputLimits,
    Truncate,
    TruncationStrategy,
    indented_json,
    json_lines,
)
from pydantic_ai_harness.tool_output_limits._capability import _read_slice
from pydantic_ai_harness.tool_output_limits._payload import truncate_text


class MemoryStore:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    async def write(self, key: str, data: bytes) -> str:
        self.objects[key] = data
        return key

    async def read(self, handle: str) -> bytes:
        return self.objects[handle]


class FailingStore:
    async def write(self, key: str, data: bytes) -> str:
        raise OSError('store is down')

    async def read(self, handle: str) -> bytes:
        raise OSError('store is down')


def summary_of(tool_name: str, text: str) -> str:
    return f'summary of {tool_name}: {len(text)} chars'


# --- JSON forms -> Python values ---------------------------------------------------------------


def py_value(value):
    if isinstance(value, dict):
        if list(value) == ['$bytes_b64']:
            return base64.b64decode(value['$bytes_b64'])
        return {k: py_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [py_value(v) for v in value]
    return value


def py_output(output):
    (kind, value), = output.items()
    if kind == 'text':
        return value
    if kind == 'bytes_b64':
        return base64.b64decode(value)
    return py_value(value)


def py_action(action):
    if action is None:
        return None
    kind = action['type']
    then = py_action(action.get('then'))
    if kind == 'passthrough':
        return Passthrough()
    if kind == 'truncate':
        return Truncate(
            strategy=TruncationStrategy(action.get('strategy', 'head_tail')),
            max_chars=action.get('max_chars', 4000),
            keep_tail_lines=action.get('keep_tail_lines', 0),
            then=then,
        )
    if kind == 'spill':
        return Spill(preview_chars=action.get('preview_chars', 1000), then=then)
    if kind == 'summarize':
        return Summarize(summarize=summary_of, then=then)
    raise ValueError(kind)


def py_bands(bands):
    return [Band(over=b['over'], action=py_action(b['action'])) for b in bands]


def py_limits(config, store):
    kwargs = {'store': store}
    if 'bands' in config:
        kwargs['bands'] = py_bands(config['bands'])
    if 'per_tool' in config:
        kwargs['per_tool'] = {k: py_bands(v) for k, v in config['per_tool'].items()}
    if 'tool_filter' in config:
        kwargs['tool_filter'] = config['tool_filter']
    for flag in ('over_tokens', 'strip_ansi'):
        if flag in config:
            kwargs[flag] = config[flag]
    if config.get('serializer'):
        kwargs['serializer'] = {'indented_json': indented_json, 'json_lines': json_lines}[config['serializer']]
    return ToolOutputLimits(**kwargs)


def json_form(value):
    """A Python tool result back in Overspill's JSON forms."""
    if isinstance(value, (bytes, bytearray)):
        return {'bytes_b64': base64.b64encode(value).decode()}
    if isinstance(value, str):
        return {'text': value}
    return {'json': value}


async def run_reduce(case):
    request = case['request']
    store = FailingStore() if case.get('store') == 'failing' else MemoryStore()
    limits = py_limits(request.get('config', {}), store)
    value = py_output(request['output'])
    envelope = request.get('envelope') or 'content' in request or 'metadata' in request
    result = (
        ToolReturn(return_value=value, content=request.get('content'), metadata=request.get('metadata'))
        if envelope
        else value
    )
    ctx = SimpleNamespace(
        run_id=request.get('run_id'),
        retry=request.get('retry', 0),
        tool_name_for_kind=lambda kind: None,
    )
    call = ToolCallPart(tool_name=request['tool_name'], args={}, tool_call_id=request.get('tool_call_id') or '')
    tool_def = ToolDefinition(name=request['tool_name'], tool_kind=request.get('tool_kind'))
    out = await limits.after_tool_execute(ctx, call=call, tool_def=tool_def, args={}, result=result)
    if out is result:
        return {'changed': False}
    if isinstance(out, ToolReturn):
        return {
            'changed': True,
            'envelope': True,
            'return_value': json_form(out.return_value),
            'content': out.content,
            'metadata': out.metadata,
            'stored': {k: base64.b64encode(v).decode() for k, v in getattr(store, 'objects', {}).items()},
        }
    return {'changed': True, 'envelope': False, 'return_value': json_form(out)}


# --- cases ---------------------------------------------------------------------------------------

LOG = ''.join(f'line {i}: status=ok value={i * 7}\n' for i in range(400))
CJK = '漢字かな交じり文' * 125
EMOJI = ''.join(f'🙂 row {i} ✓\r\n' for i in range(120))
TEXTS = {
    'log': LOG,
    'log_no_final_newline': LOG.rstrip('\n'),
    'cjk': CJK,
    'emoji_crlf': EMOJI,
    'blank_final_lines': 'x' * 300 + '\nstatus=ok\n\n',
    'one_line': 'y' * 700,
}


def truncate_cases():
    cases = []
    for name, text in TEXTS.items():
        for max_chars in (-1, 0, 1, 5, 10, 30, 45, 46, 47, 50, 60, 99, 100, 150, 333, 4000):
            for strategy in ('head', 'tail', 'head_tail'):
                for keep in (0, 1, 2, 3, 50, 10_000):
                    out = truncate_text(text, max_chars, TruncationStrategy(strategy), keep_tail_lines=keep)
                    cases.append(
                        {'text': name, 'max_chars': max_chars, 'strategy': strategy, 'keep_tail_lines': keep, 'out': out}
                    )
    return {'texts': TEXTS, 'cases': cases}


BIG = 'x' * 20_000
BIG_LOG = ''.join(f'{i:05d} GET /api/items/{i} 200 {i % 97}ms\n' for i in range(600))
RECORDS = [{'id': i, 'name': f'item {i}', 'tags': ['a', 'b'], 'ok': i % 2 == 0, 'note': None} for i in range(300)]
WIDE = {f'k{i}': i for i in range(15)}
WIDE['rows'] = RECORDS


def req(output, config=None, **extra):
    r = {'tool_name': 'run_command', 'run_id': 'run-1', 'tool_call_id': 'call-1', 'retry': 0, 'output': output}
    if config is not None:
        r['config'] = config
    r.update(extra)
    return r


def spill(then=None, **kw):
    a = {'type': 'spill', **kw}
    if then:
        a['then'] = then
    return a


def trunc(**kw):
    return {'type': 'truncate', **kw}


REDUCE_CASES = {
    'default_passthrough_below_threshold': req({'text': 'x' * 9_999}),
    'default_spill_at_threshold': req({'text': 'x' * 10_000}),
    'default_spill_log': req({'text': BIG_LOG}),
    'default_spill_retry_and_missing_ids': req({'text': BIG}, run_id=None, tool_call_id=None, retry=2),
    'spill_dict_shape': req({'json': WIDE}),
    'spill_list_shape': req({'json': RECORDS}),
    'spill_empty_list_shape': req({'json': []}, {'bands': [{'over': 0, 'action': spill()}]}),
    'spill_bytes': req({'bytes_b64': base64.b64encode(bytes(range(256)) * 50).decode()}),
    'truncate_bytes_falls_to_spill': req(
        {'bytes_b64': base64.b64encode(b'\xff' * 600).decode()},
        {'bands': [{'over': 100, 'action': trunc(then=spill())}]},
    ),
    'truncate_bytes_no_then_passthrough': req(
        {'bytes_b64': base64.b64encode(b'\xff' * 600).decode()}, {'bands': [{'over': 100, 'action': trunc()}]}
    ),
    'bands_largest_wins': req(
        {'text': BIG_LOG},
        {
            'bands': [
                {'over': 5_000, 'action': trunc(strategy='tail', max_chars=500)},
                {'over': 20_000, 'action': spill(preview_chars=200)},
                {'over': 100_000, 'action': trunc(strategy='head')},
            ]
        },
    ),
    'bands_equal_threshold_first_listed': req(
        {'text': BIG},
        {'bands': [{'over': 100, 'action': trunc(max_chars=80)}, {'over': 100, 'action': trunc(max_chars=90)}]},
    ),
    'per_tool_replaces': req(
        {'text': BIG_LOG},
        {'bands': [{'over': 10, 'action': spill()}], 'per_tool': {'run_command': [{'over': 1_000, 'action': trunc(strategy='tail', keep_tail_lines=2)}]}},
    ),
    'per_tool_other_tool_uses_global': req(
        {'text': BIG_LOG},
        {'bands': [{'over': 10, 'action': trunc(max_chars=300)}], 'per_tool': {'read_file': [{'over': 1, 'action': spill()}]}},
    ),
    'tool_filter_excludes': req({'text': BIG}, {'tool_filter': ['read_file']}),
    'tool_filter_includes': req({'text': BIG}, {'tool_filter': ['run_command', 'x']}),
    'exempt_kind': req({'text': BIG}, tool_kind='tool_output_limits.read_tool_result'),
    'over_tokens': req({'text': BIG_LOG}, {'over_tokens': True, 'bands': [{'over': 5_000, 'action': spill(preview_chars=100)}]}),
    'over_tokens_below': req({'text': 'x' * 19_999}, {'over_tokens': True, 'bands': [{'over': 5_000, 'action': spill()}]}),
    'strip_ansi_measures_after': req(
        {'text': '\x1b[31m' + 'e' * 95 + '\x1b[0m\x1b]0;title\x07'},
        {'strip_ansi': True, 'bands': [{'over': 100, 'action': trunc(max_chars=10)}]},
    ),
    'strip_ansi_then_truncate': req(
        {'text': ''.join(f'\x1b[1;32mok\x1b[0m step {i}\n' for i in range(500))},
        {'strip_ansi': True, 'bands': [{'over': 1_000, 'action': trunc(max_chars=300)}]},
    ),
    'serializer_indented_json': req(
        {'json': {'text': 'a\u2028b\u0085c\u2029', 'rows': RECORDS[:40]}},
        {'serializer': 'indented_json', 'bands': [{'over': 100, 'action': spill(preview_chars=300)}]},
    ),
    'serializer_json_lines': req(
        {'json': RECORDS}, {'serializer': 'json_lines', 'bands': [{'over': 100, 'action': spill(preview_chars=300)}]}
    ),
    'serializer_json_lines_non_list': req(
        {'json': {'rows': RECORDS[:20]}}, {'serializer': 'json_lines', 'bands': [{'over': 100, 'action': spill()}]}
    ),
    'serializer_json_lines_empty': req({'json': []}, {'serializer': 'json_lines', 'bands': [{'over': 0, 'action': trunc(max_chars=5)}]}),
    'compact_json_escapes': req(
        {'json': {'s': 'tab\there \x1b[0m /slash \u2028 é 🙂 "q" \\', 'n': [1, -2, 10**18], 'b': True, 'z': None}},
        {'bands': [{'over': 10, 'action': spill(preview_chars=40)}]},
    ),
    'bytes_leaves_utf8': req(
        {'json': {'a': {'$bytes_b64': base64.b64encode('héllo'.encode()).decode()}, 'rows': RECORDS[:50]}},
        {'bands': [{'over': 10, 'action': spill(preview_chars=120)}]},
    ),
    'bytes_leaves_base64_switch': req(
        {'json': {'ok': {'$bytes_b64': base64.b64encode(b'ok').decode()}, 'bad': {'$bytes_b64': base64.b64encode(b'\xff\x00').decode()}, 'rows': RECORDS[:50]}},
        {'bands': [{'over': 10, 'action': spill(preview_chars=120)}]},
    ),
    'bytes_leaves_json_lines_per_record': req(
        {'json': [{'b': {'$bytes_b64': base64.b64encode(b'\xff').decode()}}, {'b': {'$bytes_b64': base64.b64encode(b'ok').decode()}}] * 30},
        {'serializer': 'json_lines', 'bands': [{'over': 10, 'action': spill(preview_chars=80)}]},
    ),
    'envelope_content_and_metadata': req(
        {'text': BIG}, content='c' * 12_000, metadata={'source': 'cat', 1: 'x'} if False else {'source': 'cat', 'n': 1}
    ),
    'envelope_non_mapping_metadata': req({'text': BIG}, metadata='opaque'),
    'envelope_content_only_spills': req({'text': 'small'}, content='c' * 12_000),
    'envelope_truncated_keeps_metadata': req(
        {'text': BIG}, {'bands': [{'over': 100, 'action': trunc(max_chars=100)}]}, metadata={'k': 'v'}
    ),
    'envelope_content_parts_unreduced': req({'text': 'small'}, content=['p' * 20_000, 'q']),
    'spill_failure_falls_back_to_truncate': req({'text': BIG_LOG}),
    'spill_failure_no_then_passthrough': req({'text': BIG}, {'bands': [{'over': 1, 'action': spill()}]}),
    'spill_failure_chain_to_summarize': req({'text': BIG}, {'bands': [{'over': 1, 'action': spill(then={'type': 'summarize'})}]}),
    'summarize_custom': req({'text': BIG}, {'bands': [{'over': 1, 'action': {'type': 'summarize'}}]}),
    'summarize_binary_then_spill': req(
        {'bytes_b64': base64.b64encode(b'\x00' * 50).decode()}, {'bands': [{'over': 1, 'action': {'type': 'summarize', 'then': spill()}}]}
    ),
    'passthrough_band': req({'text': BIG}, {'bands': [{'over': 1, 'action': {'type': 'passthrough'}}]}),
    'over_zero_matches_empty': req({'text': ''}, {'bands': [{'over': 0, 'action': spill()}]}),
    'truncate_keep_tail_lines_head': req(
        {'text': BIG_LOG + 'exit=1\n'}, {'bands': [{'over': 4_000, 'action': trunc(strategy='head', keep_tail_lines=2)}]}
    ),
    'handle_with_quote_and_unicode': req({'text': BIG}, run_id="run'é", tool_call_id='call\t1'),
}
FAILING = {'spill_failure_falls_back_to_truncate', 'spill_failure_no_then_passthrough', 'spill_failure_chain_to_summarize'}


def read_cases():
    payloads = {
        'log': BIG_LOG.encode(),
        'separators': 'a\r\nb\rc\x0bd\x0ce\x1cf\x1dg\x1eh\x85i\u2028j\u2029k\n\nl\r\n'.encode(),
        'invalid_utf8': b'ok\n\xff\xfe bad\n\xe2\x80 cut\nfine \xc2\x85 nel\n\xf0\x9f\x99\x82 smile\n',
        'long_line': ('z' * 60_000 + '\n' + 'short\n').encode(),
        'many_long_lines': ''.join(f'{i}:' + 'w' * 120 + '\n' for i in range(1_500)).encode(),
        'empty_lines': b'\n\n\n',
        'empty': b'',
        'no_final_newline': b'one\ntwo',
    }
    requests = [
        {},
        {'offset': 2, 'limit': 3},
        {'offset': 0, 'limit': 5000},
        {'from_end': True, 'limit': 2},
        {'from_end': True, 'offset': 3, 'limit': 4},
        {'from_end': True, 'offset': 10_000},
        {'offset': 10_000},
        {'pattern': 'GET /api/items/1'},
        {'pattern': '00', 'from_end': True, 'limit': 5},
        {'pattern': ''},
        {'pattern': 'nel'},
        {'pattern': '\ufffd'},
        {'pattern': 'bad'},
        {'pattern': 'b\nc'},
        {'pattern': 'w' * 50, 'limit': 1000},
        {'offset': -1},
        {'limit': 0},
    ]
    cases = []
    for name, data in payloads.items():
        for r in requests:
            args = {'offset': 0, 'limit': 200, 'from_end': False, 'pattern': None, **r}

            async def read(handle: str, data=data) -> bytes:
                return data

            try:
                out = asyncio.run(_read_slice(read, 'run-1/call-1.0', **args))
                cases.append({'payload': name, 'request': args, 'out': out})
            except Exception as exc:  # ModelRetry
                cases.append({'payload': name, 'request': args, 'retry': str(exc)})
    return {'payloads': {k: base64.b64encode(v).decode() for k, v in payloads.items()}, 'cases': cases}


def main(out_dir: str) -> None:
    out = Path(out_dir)
    reduce_cases = []
    for name, request in REDUCE_CASES.items():
        case = {'name': name, 'request': request}
        if name in FAILING:
            case['store'] = 'failing'
        case['expected'] = asyncio.run(run_reduce(case))
        reduce_cases.append(case)
    dump = lambda obj: json.dumps(obj, ensure_ascii=False, indent=1)  # noqa: E731
    (out / 'reduce.json').write_text(dump(reduce_cases) + '\n', encoding='utf-8')
    (out / 'truncate.json').write_text(dump(truncate_cases()) + '\n', encoding='utf-8')
    (out / 'read.json').write_text(dump(read_cases()) + '\n', encoding='utf-8')


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).parent))
