"""Chars sent to the model with and without `OverspillMasking`: a scripted run of 30 tool calls.

    deploy/wheels.sh && python3 -m venv /tmp/v && /tmp/v/bin/pip install --find-links dist overspill
    /tmp/v/bin/python benches/masking.py [--budget 100000] [--keep-recent 3]

The example agent of `workflows/python/examples/masking_agent.py` (a `FunctionModel` script):
30 calls of `fetch_records`, outputs of 2,000 to 200,000 chars (geometric spread, shuffled),
1,350,478 chars in all; then it answers a question whose answer is only in batch 4's output,
reading it back with `read_tool_result` if that output was masked. Four configurations, each a
plain `agent.run()` (no Temporal: spills go straight to a `file://` store in a temporary
directory; on Temporal the same processor spills through Overspill's activity, and the chars
sent differ only by the length of the run id in each handle):

- no ToolOutputLimits band, without / with masking;
- a ToolOutputLimits band spilling outputs of 20,000 chars or more (the harness's marker with a
  1,000-char preview), without / with masking.

Prints, per configuration, the model requests, the chars of message text sent over all requests
(`OverspillMasking.measure`: every part's text, as the model gets it; instructions and tool
definitions not counted), the largest request, the objects spilled and how the answer was found.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'workflows' / 'python' / 'examples'))

from overspill.pydantic_ai import OverspillMasking, OverspillStore  # noqa: E402

import masking_agent  # noqa: E402


async def run(spill_over: int | None, masked: bool, budget: int, keep_recent: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as root:
        store = OverspillStore(f'file://{root}')
        masking = OverspillMasking(store, budget=budget, keep_recent=keep_recent) if masked else None
        sent: list[int] = []
        agent = masking_agent.build_agent(
            'bench', store, masking=masking, spill_over=spill_over, durable=False, sent=sent
        )
        result = await agent.run(f'fetch {masking_agent.CALLS} batches, then: what is the release codename?')
        spilled = sum(1 for p in Path(root).rglob('*') if p.is_file())
    return {
        'requests': len(sent),
        'sent': sum(sent),
        'largest': max(sent),
        'spilled': spilled,
        'answer': result.output.split(':')[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--budget', type=int, default=100_000, help='OverspillMasking budget, chars')
    parser.add_argument('--keep-recent', type=int, default=3, help='OverspillMasking keep_recent')
    args = parser.parse_args()
    outputs = [len(masking_agent.batch_output(b)) for b in range(masking_agent.CALLS)]
    print(
        f'{masking_agent.CALLS} calls, outputs {min(outputs):,}-{max(outputs):,} chars, {sum(outputs):,} in all; '
        f'masking: budget {args.budget:,} chars, keep_recent {args.keep_recent}\n'
    )
    print('| ToolOutputLimits | masking | requests | chars sent | largest request | objects spilled | answer |')
    print('|---|---|---:|---:|---:|---:|---|')
    baseline: dict[str | None, int] = {}
    for spill_over in (None, 20_000):
        for masked in (False, True):
            r = asyncio.run(run(spill_over, masked, args.budget, args.keep_recent))
            band = 'none' if spill_over is None else f'spill ≥ {spill_over:,}'
            sent = int(r['sent'])  # type: ignore[call-overload]
            if not masked:
                baseline[band] = sent
            saved = f' ({sent / baseline[band]:.1%})' if masked else ''
            print(
                f'| {band} | {"on" if masked else "off"} | {r["requests"]} | {sent:,}{saved} | '
                f'{r["largest"]:,} | {r["spilled"]} | {r["answer"]} |'
            )


if __name__ == '__main__':
    main()
