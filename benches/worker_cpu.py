"""Worker CPU per activity: the Overspill worker against Python workers, side by side in one run.

    benches/worker_cpu.sh                       # builds the release binary, starts the dev server
    benches/worker_cpu.sh --rust tuned= --rust gzip=--grpc-compression=gzip --rounds 5

Each worker under test is its own process on its own task queue, serving an activity named
`tool_output_limits.reduce`:

- `overspill`: the release `overspill worker` (one row per `--rust LABEL=FLAGS`, flags split on
  spaces, so a tuning can be compared with another in the same run);
- `python no-op`: a temporalio 1.35 worker whose activity returns a constant;
- `python reference`: a temporalio worker whose activity runs pydantic-ai-harness 0.62's
  `ToolOutputLimits` (default bands, a LocalFileStore).

The workflows run in this process (a driver worker on a queue of its own), so a measured worker
does nothing but its activities. For each case, `--workflows` workflows run at once, each making
`--calls` sequential calls; the CPU a worker spends is its utime+stime (`/proc/PID/stat`, every
thread) over that phase, divided by the calls. Workers take turns (one phase at a time, the order
rotated every round) and the table shows the median over `--rounds`. CPU time, not wall time, is
what is compared: the machine may be busy with other work.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

ROOT = Path(__file__).resolve().parent.parent
ACTIVITY = 'tool_output_limits.reduce'
CASES = {
    # label -> the tool output's text
    'spill 50 KB': ''.join(f'{i:06} INFO request path=/api/items/{i % 97} status=200\n' for i in range(1000))[:50_000],
    'passthrough 10 B': 'ok: 10 B\n\n',
}
TICK_MS = 1000 / os.sysconf('SC_CLK_TCK')


@workflow.defn(name='OverspillCpuBench')
class Drive:
    """`calls` sequential calls of the activity on `queue`, each with its own tool call id."""

    @workflow.run
    async def run(self, args: dict[str, Any]) -> int:
        for i in range(args['calls']):
            request = {**args['request'], 'tool_call_id': f'{args["call_prefix"]}-{i}'}
            await workflow.execute_activity(
                ACTIVITY, request, task_queue=args['queue'], start_to_close_timeout=timedelta(seconds=60)
            )
        return args['calls']


@dataclass
class Subject:
    """One worker process under test."""

    label: str
    command: list[str]
    queue: str
    process: subprocess.Popen | None = None
    cpu_ms: dict[str, list[float]] = field(default_factory=dict)
    wall_s: dict[str, list[float]] = field(default_factory=dict)

    def start(self, log_dir: Path) -> None:
        log = open(log_dir / f'{self.queue}.log', 'wb')
        self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT)

    def cpu(self) -> float:
        """utime + stime of every thread so far, in ms."""
        assert self.process is not None
        stat = Path(f'/proc/{self.process.pid}/stat').read_text()
        fields = stat[stat.rindex(')') + 2 :].split()
        return (int(fields[11]) + int(fields[12])) * TICK_MS

    def peak_rss_mb(self) -> float:
        assert self.process is not None
        for line in Path(f'/proc/{self.process.pid}/status').read_text().splitlines():
            if line.startswith('VmHWM:'):
                return int(line.split()[1]) / 1024
        return float('nan')

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()


async def drive(client: Client, driver_queue: str, subject: Subject, text: str, workflows: int, calls: int) -> None:
    run = uuid.uuid4().hex[:8]

    async def one(i: int) -> None:
        args = {
            'queue': subject.queue,
            'calls': calls,
            'call_prefix': f'c{run}-{i}',
            'request': {'tool_name': 'cat', 'run_id': f'bench-{run}', 'output': {'text': text}},
        }
        await client.execute_workflow(
            Drive.run, args, id=f'cpu-bench-{run}-{i}', task_queue=driver_queue, execution_timeout=timedelta(minutes=5)
        )

    await asyncio.gather(*(one(i) for i in range(workflows)))


async def bench(args: argparse.Namespace) -> None:
    address = os.environ.get('TEMPORAL_ADDRESS', '127.0.0.1:7233')
    client = await Client.connect(address)
    tag = uuid.uuid4().hex[:8]
    work = Path(tempfile.mkdtemp(prefix='overspill-cpu-bench-'))
    subjects = [
        Subject(
            f'overspill {label}'.strip(),
            [args.bin, 'worker', '--address', address, '--task-queue', f'cpu-rust{n}-{tag}',
             '--store', f'file://{work}/spills-rust{n}', *shlex.split(flags)],
            f'cpu-rust{n}-{tag}',
        )
        for n, (label, flags) in enumerate(args.rust)
    ]
    if args.base_bin:
        # The same worker from another build (a change's base), beside this one in the same run.
        subjects.append(Subject(
            'overspill (base build)',
            [args.base_bin, 'worker', '--address', address, '--task-queue', f'cpu-base-{tag}',
             '--store', f'file://{work}/spills-base'],
            f'cpu-base-{tag}',
        ))
    subjects.append(Subject('python no-op', [sys.executable, __file__, 'serve', 'noop', f'cpu-noop-{tag}'], f'cpu-noop-{tag}'))
    if not args.no_reference:
        subjects.append(
            Subject(
                'python reference',
                [sys.executable, __file__, 'serve', 'reference', f'cpu-ref-{tag}', str(work / 'spills-ref')],
                f'cpu-ref-{tag}',
            )
        )
    driver_queue = f'cpu-driver-{tag}'
    try:
        for subject in subjects:
            subject.start(work)
        async with Worker(
            client,
            task_queue=driver_queue,
            workflows=[Drive],
            workflow_runner=UnsandboxedWorkflowRunner(),
            max_concurrent_workflow_tasks=200,
            max_concurrent_workflow_task_polls=20,
        ):
            for subject in subjects:  # warm-up: every worker serving, connections open
                for text in CASES.values():
                    await drive(client, driver_queue, subject, text, 4, 5)
            for round_ in range(args.rounds):
                order = subjects[round_ % len(subjects) :] + subjects[: round_ % len(subjects)]
                for case, text in CASES.items():
                    for subject in order:
                        before, started = subject.cpu(), time.perf_counter()
                        await drive(client, driver_queue, subject, text, args.workflows, args.calls)
                        wall, spent = time.perf_counter() - started, subject.cpu() - before
                        per_call = spent / (args.workflows * args.calls)
                        subject.cpu_ms.setdefault(case, []).append(per_call)
                        subject.wall_s.setdefault(case, []).append(wall)
                        print(f'round {round_ + 1}, {case}, {subject.label}: {per_call:.2f} CPU-ms/call, {wall:.1f} s',
                              file=sys.stderr, flush=True)
        print(
            f'\n{args.workflows} workflows x {args.calls} `reduce` calls per phase, median of {args.rounds} rounds; '
            f'CPU = utime+stime of the worker process per call (clock tick {TICK_MS:.0f} ms).\n'
        )
        header = '| worker | ' + ' | '.join(f'{c} CPU-ms/call | {c} wall s' for c in CASES) + ' | peak RSS MB |'
        print(header)
        print('|---' * (header.count('|') - 1) + '|')
        for s in subjects:
            cells = ' | '.join(
                f'{statistics.median(s.cpu_ms[c]):.2f} | {statistics.median(s.wall_s[c]):.2f}' for c in CASES
            )
            print(f'| {s.label} | {cells} | {s.peak_rss_mb():.0f} |')
    finally:
        for subject in subjects:
            subject.stop()


def serve(kind: str, queue: str, store_dir: str | None) -> None:
    """Run one Python worker under test until terminated."""
    if kind == 'noop':

        @activity.defn(name=ACTIVITY)
        async def reduce(request: dict) -> dict:
            return {'kind': 'passthrough'}

    else:
        from types import SimpleNamespace

        from pydantic_ai.messages import ToolCallPart, ToolReturn
        from pydantic_ai.tools import ToolDefinition
        from pydantic_ai_harness.tool_output_limits import LocalFileStore, ToolOutputLimits

        assert store_dir is not None
        limits = ToolOutputLimits(store=LocalFileStore(base_dir=Path(store_dir)))

        @activity.defn(name=ACTIVITY)
        async def reduce(request: dict) -> dict:
            ctx = SimpleNamespace(run_id=request['run_id'], retry=0, tool_name_for_kind=lambda kind: None)
            call = ToolCallPart(tool_name=request['tool_name'], args={}, tool_call_id=request['tool_call_id'])
            out = await limits.after_tool_execute(
                ctx, call=call, tool_def=ToolDefinition(name=request['tool_name']), args={}, result=request['output']['text']
            )
            if isinstance(out, ToolReturn):
                return {'kind': 'spilled', 'return_value': {'text': out.return_value}, 'metadata': out.metadata}
            return {'kind': 'passthrough', 'return_value': {'text': out}}

    async def main() -> None:
        client = await Client.connect(os.environ.get('TEMPORAL_ADDRESS', '127.0.0.1:7233'))
        await Worker(client, task_queue=queue, activities=[reduce], max_concurrent_activities=100).run()

    asyncio.run(main())


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == 'serve':
        serve(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    target = Path(os.environ.get('CARGO_TARGET_DIR', ROOT / 'target'))
    parser.add_argument('--bin', default=str(target / 'release' / 'overspill'))
    parser.add_argument(
        '--rust', action='append', type=lambda s: tuple(s.split('=', 1)) if '=' in s else (s, ''),
        help='LABEL=FLAGS: an overspill worker with these extra flags (repeatable; default: one, no flags)',
    )
    parser.add_argument('--base-bin', help='also measure this overspill binary (e.g. a change\'s base build)')
    parser.add_argument('--workflows', type=int, default=40)
    parser.add_argument('--calls', type=int, default=10)
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--no-reference', action='store_true', help='skip the pydantic-ai-harness worker')
    args = parser.parse_args()
    args.rust = args.rust or [('', '')]
    asyncio.run(bench(args))


if __name__ == '__main__':
    main()
