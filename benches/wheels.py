"""The Python wheels as a user installs them: the time from `pip install` to a first quickstart
answer in a fresh environment, the wheels' sizes, and, side by side in one run on the same store,
the interceptor's reduction of a 1, 10 and 40 MB output against `overspill reduce` of the same
bytes (target: within 1.2x).

    deploy/wheels.sh                 # the release wheels, into dist/ (fat LTO: slow on 2 cores)
    deploy/wheels.sh --dev           # (optional) the dev wheels, for their sizes: --dev-wheels DIR
    source .deploy/temporal.env      # a Temporal server answering at TEMPORAL_ADDRESS
    python3 benches/wheels.py [--wheels dist] [--sizes 1 10 40] [--runs 5]

A fresh virtual environment gets the wheels with `pip install --find-links dist overspill` (pip's
cache warm, as on a machine that installed anything before); `overspill dev --no-demo` starts from
it against the running Temporal server, and `examples/quickstart.py` runs until it prints the
model's answer.

Then, in that environment, for each size and kind (a build log as `str`; order records as a
`list` of `dict`s, whose compact JSON is the size): the interceptor's row is
`OverspillInterceptor.reduce` on the value already in memory (a spill at the default 10,000 chars
to a `file://` store), timed in a Python process of its own kept alive across runs; the `overspill
reduce` row is the installed command as a whole process on the same bytes (`--tool` with the log
on stdin, `--request` with the records), start-up and exit included. Their runs alternate, so both
see the same moment's load; each run writes a new key, deleted after it, outside the timing. Times
are medians; peak RSS is each process's maximum resident set (`/usr/bin/time -f %M`), the
interceptor's including the interpreter, its imports and the value it holds (shown apart).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MB = 1 << 20
TARGET = 1.2


def log_text(size: int) -> str:
    """`size` bytes of a service's log."""
    lines = (f'{i:08} INFO request id={i} path=/api/v1/items/{i % 1000} status=200\n' for i in range(size))
    text, total = [], 0
    for line in lines:
        if total >= size:
            break
        text.append(line)
        total += len(line)
    return ''.join(text)[:size]


def records_of(size: int) -> list[dict[str, Any]]:
    """Records whose compact JSON is about `size` bytes."""
    record = {'id': 0, 'name': 'item 0', 'tags': ['a', 'b'], 'ok': True, 'price': 9.99}
    count = max(1, round(size / (len(json.dumps(record, separators=(',', ':'))) + 1)))
    return [{**record, 'id': i, 'name': f'item {i}', 'ok': i % 2 == 0} for i in range(count)]


def child(kind: str, path: Path, store: str) -> None:
    """In a process of its own: reduce the value at `path` once per line read from stdin through
    `OverspillInterceptor.reduce`, printing each run's ms."""
    from overspill import OverspillInterceptor, ToolCallSite, ToolOutputParts

    class Plain:
        def call_site(self, info: Any, args: Any) -> None:
            return None

        def output(self, result: Any) -> ToolOutputParts:
            return ToolOutputParts(result)

        def with_output(self, result: Any, reduced: Any) -> Any:
            return reduced

    value: Any = path.read_text() if kind == 'text' else json.loads(path.read_bytes())
    interceptor = OverspillInterceptor(None, store, tools=[Plain()])
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, flush=True)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        i = 0
        while await loop.run_in_executor(None, sys.stdin.readline):
            site = ToolCallSite('fetch', run_id='bench', tool_call_id=f'py-{i}')
            start = time.perf_counter()
            reduced = await interceptor.reduce(Plain(), site, value)
            ms = (time.perf_counter() - start) * 1000
            assert reduced.kind == 'spilled', reduced
            print(ms, flush=True)
            i += 1

    asyncio.run(main())


def run(*args: object, env: dict[str, str] | None = None, timeout: float = 900, **kw: Any) -> str:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, env=env, **kw)
    assert done.returncode == 0, f'{args}:\n{done.stdout}\n{done.stderr}'
    return done.stdout


def clear(store_dir: Path) -> None:
    spills = store_dir / 'tool_output_limits'
    if spills.exists():
        shutil.rmtree(spills)


def install(wheels: Path, venv: Path, env: dict[str, str], tmp: Path) -> tuple[float, float, float]:
    """A fresh environment from the wheels, and the quickstart's first answer against `overspill
    dev` from it: seconds to install the two wheels alone (into another fresh environment, no
    dependencies), to install them with their dependencies, and from that install's start to the
    answer."""
    pip = ['-m', 'pip', 'install', '-q', '--disable-pip-version-check', '--find-links', wheels]
    alone = tmp / 'alone'
    run(sys.executable, '-m', 'venv', alone)
    start = time.perf_counter()
    run(alone / 'bin' / 'python', *pip, '--no-deps', *wheels.glob('*.whl'))
    wheels_alone = time.perf_counter() - start
    shutil.rmtree(alone)
    run(sys.executable, '-m', 'venv', venv)
    start = time.perf_counter()
    run('python', *pip, '--only-binary', 'overspill,overspill-cli', 'overspill', env=env)
    installed = time.perf_counter() - start
    log = (tmp / 'dev.log').open('wb')
    dev = subprocess.Popen(['overspill', 'dev', '--no-demo'], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        while b'overspill dev: Temporal at' not in (tmp / 'dev.log').read_bytes():
            assert dev.poll() is None, (tmp / 'dev.log').read_text()
            time.sleep(0.05)
        answer = run('python', ROOT / 'workflows/python/examples/quickstart.py', env=env, cwd=tmp)
    finally:
        dev.terminate()
        dev.wait(30)
    assert answer.strip().endswith('BUILD FAILED: disk full'), answer
    return wheels_alone, installed, time.perf_counter() - start


def bench(venv: Path, env: dict[str, str], tmp: Path, sizes: list[int], runs: int) -> list[list[str]]:
    store_dir = tmp / 'store'
    store = f'file://{store_dir}'
    rows = []
    for kind in ('text', 'records'):
        for mb in sizes:
            value_path, request_path = tmp / f'{kind}-{mb}', tmp / 'request.json'
            if kind == 'text':
                value_path.write_text(log_text(mb * MB))
            else:
                value_path.write_text(json.dumps(records_of(mb * MB), separators=(',', ':')))
            size = value_path.stat().st_size
            proc = subprocess.Popen(
                ['/usr/bin/time', '-f', '%M', str(venv / 'bin' / 'python'), __file__, '--child', kind, str(value_path), store],
                env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            assert proc.stdin and proc.stdout and proc.stderr
            idle_kib = int(proc.stdout.readline())
            py_ms, cli_ms, cli_kib = [], [], 0
            for i in range(runs):
                proc.stdin.write('\n')
                proc.stdin.flush()
                py_ms.append(float(proc.stdout.readline()))
                clear(store_dir)
                args = ['/usr/bin/time', '-f', '%M', str(venv / 'bin' / 'overspill'), 'reduce', '--store', store]
                if kind == 'text':
                    args += ['--tool', 'fetch', '--run-id', 'bench', '--call-id', f'cli-{i}']
                    stdin = value_path.open('rb')
                else:
                    request = b'{"tool_name":"fetch","run_id":"bench","tool_call_id":"cli-%d","output":{"json":' % i
                    request_path.write_bytes(request + value_path.read_bytes() + b'}}')
                    args += ['--request', str(request_path)]
                    stdin = open(os.devnull, 'rb')
                start = time.perf_counter()
                done = subprocess.run(args, stdin=stdin, capture_output=True, env=env)
                cli_ms.append((time.perf_counter() - start) * 1000)
                stdin.close()
                assert done.returncode == 0 and b'stored to handle' in done.stdout, done.stderr
                cli_kib = max(cli_kib, int(done.stderr.decode().strip().splitlines()[-1]))
                clear(store_dir)
            proc.stdin.close()
            err = proc.stderr.read()
            proc.wait(120)
            py_kib = int(err.strip().splitlines()[-1])
            py, cli = statistics.median(py_ms), statistics.median(cli_ms)
            ratio = py / cli
            mark = '✓' if ratio <= TARGET else '✗'
            rows.append([
                f'{kind}, {size / MB:.1f} MiB', f'{py:,.0f} ms', f'{cli:,.0f} ms', f'{ratio:.2f}× {mark}',
                f'{py_kib / 1024:,.0f} MiB ({idle_kib / 1024:,.0f} MiB before)', f'{cli_kib / 1024:,.0f} MiB',
            ])
    return rows


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    return '\n'.join(lines + ['| ' + ' | '.join(row) + ' |' for row in rows])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--wheels', type=Path, default=ROOT / 'dist')
    parser.add_argument('--dev-wheels', type=Path, default=ROOT / '.deploy' / 'wheels')
    parser.add_argument('--sizes', type=int, nargs='+', default=[1, 10, 40])
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--child', nargs=3, metavar=('KIND', 'PATH', 'STORE'))
    args = parser.parse_args()
    if args.child:
        kind, path, store = args.child
        child(kind, Path(path), store)
        return
    sizes = []
    for name, directory in (('release', args.wheels), ('dev', args.dev_wheels)):
        for wheel in sorted(directory.glob('*.whl')):
            sizes.append([name, wheel.name, f'{wheel.stat().st_size / MB:.1f} MiB'])
    print(table(['profile', 'wheel', 'size'], sizes), flush=True)
    with tempfile.TemporaryDirectory(prefix='overspill-wheels-') as tmp_name:
        tmp = Path(tmp_name)
        venv = tmp / 'venv'
        env = {k: v for k, v in os.environ.items() if k not in ('OVERSPILL_STORE', 'PYTHONPATH', 'VIRTUAL_ENV')}
        env.update(PATH=f'{venv / "bin"}{os.pathsep}{env["PATH"]}', TMPDIR=str(tmp))
        env['OVERSPILL_TASK_QUEUE'] = f'bench-wheels-{uuid.uuid4()}'
        alone, installed, answered = install(args.wheels, venv, env, tmp)
        print(
            f'\npip install of the two wheels alone: {alone:.1f} s; with their dependencies: {installed:.1f} s; '
            f'the first quickstart answer {answered:.1f} s after that install began\n',
            flush=True,
        )
        header = ['output', 'interceptor', '`overspill reduce`', 'ratio', 'interceptor peak RSS', '`overspill reduce` peak RSS']
        print(table(header, bench(venv, env, tmp, args.sizes, args.runs)))


if __name__ == '__main__':
    main()
