"""`overspill reduce` as a whole process against the reference in-process, side by side in one run.

    benches/cli.sh                 # builds the release binary, installs the reference, runs this
    benches/cli.sh --mb 100 --runs 5

The same generated log (compare.py's generator) is written to a file once. Overspill's row is the
whole process, `overspill reduce --tool run_command --store file://… < log`: start-up, mapping
stdin, reducing, the spill's write, exit. The reference's row is pydantic-ai-harness 0.62's
`ToolOutputLimits.after_tool_execute` on the log already in memory, in a Python process of its
own (a LocalFileStore for the spill), kept alive across runs; its runs and Overspill's alternate,
so both see the same moment's load. A spill row writes a new key each run, as every tool call
does (the file is deleted after the run, outside the timing); the "same key" row overwrites the
last run's spill, as a retry or a replay does, which costs both sides a filesystem flush (ext4
allocates the new data's blocks when a rename or an O_TRUNC replaces a file). Times are medians
of `--runs`; peak RSS is each process's maximum resident set (`/usr/bin/time -f %M`), the
reference's including its interpreter and the log it holds. Overspill's time includes `/usr/bin/time`'s own fork and exec (about 1 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare import MB, ROOT, log_text  # noqa: E402

ROWS = ('truncate', 'spill', 'spill, same key')


def fresh_keys(row: str) -> bool:
    """Whether each run of `row` writes a new key (and deletes it after)."""
    return row == 'spill'


def delete_files(store: Path) -> None:
    for path in store.rglob('*'):
        if path.is_file():
            path.unlink()


TARGET = 2.0


def reference_child(row: str, log: Path, store_dir: Path) -> None:
    """In a process of its own: time the reference on `log` once per line read from stdin, and
    print each run's ms, so the parent can interleave them with Overspill's runs."""
    from types import SimpleNamespace

    from pydantic_ai.messages import ToolCallPart, ToolReturn
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai_harness.tool_output_limits import Band, LocalFileStore, ToolOutputLimits, Truncate

    store = LocalFileStore(base_dir=store_dir)
    limits = (
        ToolOutputLimits(bands=[Band(over=10_000, action=Truncate())], store=store)
        if row == 'truncate'
        else ToolOutputLimits(store=store)
    )
    ctx = SimpleNamespace(run_id='bench', retry=0, tool_name_for_kind=lambda kind: None)
    tool_def = ToolDefinition(name='run_command')
    text = log.read_text()
    for i, _ in enumerate(sys.stdin):
        call_id = f'call-{i}' if fresh_keys(row) else 'call'
        call = ToolCallPart(tool_name='run_command', args={}, tool_call_id=call_id)
        start = time.perf_counter()
        out = asyncio.run(limits.after_tool_execute(ctx, call=call, tool_def=tool_def, args={}, result=text))
        print((time.perf_counter() - start) * 1000, flush=True)
        # Fail loudly rather than time a fallback.
        assert isinstance(out, ToolReturn) == (row != 'truncate'), f'the reference did not {row}'
        if fresh_keys(row):
            delete_files(store_dir)


def run_measured(command: list[str], stdin_path: Path | None = None) -> tuple[float, float, bytes]:
    """Run `command` to completion under `/usr/bin/time -f %M`: (wall ms, peak RSS MB, stdout).

    The peak is time's, not this process's wait4: a child forked from this (large) process would
    report this process's resident set as its own peak.
    """
    stdin = open(stdin_path, 'rb') if stdin_path else subprocess.DEVNULL
    with tempfile.NamedTemporaryFile() as rss, tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        done = subprocess.run(['/usr/bin/time', '-f', '%M', '-o', rss.name, *command],
                              stdin=stdin, stdout=out, stderr=subprocess.PIPE)
        wall = (time.perf_counter() - start) * 1000
        if done.returncode != 0:
            raise SystemExit(f'{command[0]} failed ({done.returncode}): {done.stderr.decode(errors="replace")}')
        out.seek(0)
        return wall, int(Path(rss.name).read_text().split()[-1]) / 1024, out.read()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == 'reference':
        reference_child(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    target = Path(os.environ.get('CARGO_TARGET_DIR', ROOT / 'target'))
    parser.add_argument('--bin', default=str(target / 'release' / 'overspill'))
    parser.add_argument('--mb', type=int, default=100)
    parser.add_argument('--runs', type=int, default=5)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix='overspill-cli-bench-'))
    log = work / 'log.txt'
    log.write_text(log_text(args.mb * MB))
    truncate_config = work / 'truncate.json'
    truncate_config.write_text(json.dumps({'bands': [{'over': 10_000, 'action': {'type': 'truncate'}}]}))
    try:
        print(f'\n`overspill reduce` whole process vs the reference in-process, {args.mb} MB log, median of {args.runs}'
              f' (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)\n')
        print('| row | reference ms | overspill ms | speed-up | target | reference peak RSS MB | overspill peak RSS MB |')
        print('|---|---:|---:|---:|---:|---:|---:|')
        for row in ROWS:
            slug = row.replace(', ', '-').replace(' ', '-')
            store = work / f'store-{slug}'
            ref_rss_file = work / f'ref-{slug}.rss'
            reference = subprocess.Popen(
                ['/usr/bin/time', '-f', '%M', '-o', str(ref_rss_file),
                 sys.executable, __file__, 'reference', row, str(log), str(work / f'ref-{slug}')],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            )
            ref_times = []
            command = [args.bin, 'reduce', '--tool', 'run_command', '--run-id', 'bench', '--store', f'file://{store}']
            if row == 'truncate':
                command += ['--config', str(truncate_config)]
            runs = []
            for i in range(args.runs):
                # One reference run, then one of ours: both see the same moment's load.
                reference.stdin.write('\n')
                reference.stdin.flush()
                line = reference.stdout.readline()
                if not line:
                    raise SystemExit(f'the reference failed on {row}')
                ref_times.append(float(line))
                call_id = f'call-{i}' if fresh_keys(row) else 'call'
                runs.append(run_measured([*command, '--call-id', call_id], log))
                if fresh_keys(row):
                    delete_files(store)
            reference.stdin.close()
            if reference.wait() != 0:
                raise SystemExit(f'the reference failed on {row}')
            ref_ms = statistics.median(ref_times)
            ref_rss = int(ref_rss_file.read_text().split()[-1]) / 1024
            our_ms = statistics.median(ms for ms, _, _ in runs)
            our_rss = max(rss for _, rss, _ in runs)
            speedup = ref_ms / our_ms
            verdict = f'{TARGET:g}x {"ok" if speedup >= TARGET else "MISS"}'
            print(f'| reduce → {row}, {args.mb} MB | {ref_ms:.1f} | {our_ms:.1f} | {speedup:.1f}x | {verdict} '
                  f'| {ref_rss:.0f} | {our_rss:.0f} |')
        print(f'\nload average at the end: {os.getloadavg()[0]:.1f}')
    finally:
        subprocess.run(['rm', '-rf', str(work)], check=False)


if __name__ == '__main__':
    main()
