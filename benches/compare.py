"""Overspill against the Python reference, side by side in one run.

    benches/compare.sh            # installs the reference into .deploy/bench-venv, then runs this

Runs `cargo bench --bench engine` (criterion) and times pydantic-ai-harness 0.62.0's
ToolOutputLimits on the same inputs (same text generator, same records), then prints medians and
the speed-up of Overspill over the reference for each row.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from pydantic_ai.messages import ToolCallPart, ToolReturn
from pydantic_ai.tools import ToolDefinition
from pydantic_ai_harness.tool_output_limits import Band, LocalFileStore, ToolOutputLimits, Truncate, json_lines
from pydantic_ai_harness.tool_output_limits._capability import _read_slice

ROOT = Path(__file__).resolve().parent.parent
MB = 1 << 20


def log_text(size: int) -> str:
    parts, total, i = [], 0, 0
    while total < size:
        line = f'{i:08} INFO request id={i} path=/api/v1/items/{i % 1000} status=200 latency={i % 97}ms\n'
        parts.append(line)
        total += len(line)
        i += 1
    return ''.join(parts)[:size]


def records(n: int) -> list[dict]:
    return [{'id': i, 'name': f'item {i}', 'tags': ['a', 'b'], 'ok': i % 2 == 0} for i in range(n)]


def median_ms(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def reference() -> dict[str, float]:
    ctx = SimpleNamespace(run_id='bench', retry=0, tool_name_for_kind=lambda kind: None)
    call = ToolCallPart(tool_name='run_command', args={}, tool_call_id='call')
    tool_def = ToolDefinition(name='run_command')
    store_dir = tempfile.mkdtemp(prefix='overspill-ref-bench-')
    store = LocalFileStore(base_dir=Path(store_dir))
    truncate = ToolOutputLimits(bands=[Band(over=10_000, action=Truncate())], store=store)
    spill = ToolOutputLimits(store=store)
    lines = ToolOutputLimits(bands=[Band(over=10_000, action=Truncate())], serializer=json_lines, store=store)

    def reduce(limits, value):
        return lambda: asyncio.run(limits.after_tool_execute(ctx, call=call, tool_def=tool_def, args={}, result=value))

    # Fail loudly rather than time a fallback: the spill row must really spill.
    assert isinstance(reduce(spill, 'x' * 20_000)(), ToolReturn), 'the reference spill failed'

    out = {}
    for mb, runs in ((1, 20), (10, 10), (100, 5)):
        text = log_text(mb * MB)
        out[f'reduce/truncate/{mb}'] = median_ms(reduce(truncate, text), runs)
        out[f'reduce/spill/{mb}'] = median_ms(reduce(spill, text), runs)
    out['reduce/json_lines_100k'] = median_ms(reduce(lines, records(100_000)), 5)

    asyncio.run(store.write('bench/read.0', log_text(100 * MB).encode()))

    def page(**kw):
        args = {'offset': 0, 'limit': 200, 'from_end': False, 'pattern': None, **kw}
        return lambda: asyncio.run(_read_slice(store.read, 'bench/read.0', **args))

    out['read_100mb/offset_page'] = median_ms(page(offset=500_000), 5)
    out['read_100mb/pattern_page'] = median_ms(page(pattern='path=/api/v1/items/999 '), 5)
    return out


def overspill() -> dict[str, float]:
    if os.environ.get('OVERSPILL_BENCH_SKIP_CARGO') != '1':
        subprocess.run(['cargo', 'bench', '--bench', 'engine', *sys.argv[1:]], cwd=ROOT, check=True)
    out = {}
    target = Path(os.environ.get('CARGO_TARGET_DIR', ROOT / 'target'))
    for estimates in (target / 'criterion').glob('**/new/estimates.json'):
        bench = json.loads((estimates.parent / 'benchmark.json').read_text())
        out[bench['full_id']] = json.loads(estimates.read_text())['median']['point_estimate'] / 1e6
    return out


TARGETS = {
    'reduce/truncate': 10,
    'reduce/spill': 2,
    'reduce/json_lines_100k': 5,
    'read_100mb/offset_page': 100,
    'read_100mb/pattern_page': 8,
}


def main() -> None:
    ours = overspill()
    ref = reference()
    print(f'\n{"benchmark":<28} {"reference ms":>13} {"overspill ms":>13} {"speed-up":>9} {"target":>7}')
    for name, ref_ms in ref.items():
        our_ms = ours.get(name)
        if our_ms is None:
            print(f'{name:<28} {ref_ms:>13.2f} {"-":>13}')
            continue
        target = next((t for prefix, t in TARGETS.items() if name.startswith(prefix)), None)
        speedup = ref_ms / our_ms
        verdict = '' if target is None else f'{target}x {"ok" if speedup >= target else "MISS"}'
        print(f'{name:<28} {ref_ms:>13.2f} {our_ms:>13.3f} {speedup:>8.1f}x {verdict:>7}')


if __name__ == '__main__':
    sys.exit(main())
