"""`overspill grep` (grep_tool_result) against GNU `grep -n -C2` on the same 100 MB log, side by
side in one run, each a whole process: wall time (median of `--runs`) and peak RSS
(`/usr/bin/time -f %M`).

    benches/grep.sh                  # builds the release binary, runs this
    benches/grep.sh --mb 100 --runs 5

The log (compare.py's generator: `… INFO request id=… path=/api/v1/items/… status=200
latency=…ms` lines) is spilled once with `overspill reduce` into a `file://` store, which also
writes its line index; GNU grep reads the same bytes from a file. Both write their output to a
file (GNU grep treats `/dev/null` as `-q`). Overspill counts every match and prints one page (50
matches with their context); GNU grep prints every match with its context.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare import MB, ROOT, log_text  # noqa: E402

ROWS = (
    # (row, pattern, overspill flags, GNU grep flags)
    ('literal, 1 % of lines', 'latency=42ms', [], ['-F']),
    ('literal, ignore case', 'LATENCY=42MS', ['--ignore-case'], ['-F', '-i']),
    ('regex', r'items/9[0-9]{2} status=200 latency=1[0-9]ms', ['--regex'], ['-E']),
    ('regex, no match (backtracking trap)', r'(x+x+)+y', ['--regex'], ['-E']),
)


def timed(command: list[str], out_path: Path) -> tuple[float, float]:
    """Run `command` under `/usr/bin/time -f %M`, stdout to `out_path`: (wall ms, peak RSS MB)."""
    with tempfile.NamedTemporaryFile('r') as rss, out_path.open('wb') as out:
        start = time.perf_counter()
        done = subprocess.run(['/usr/bin/time', '-f', '%M', '-o', rss.name, *command], stdout=out, stderr=subprocess.PIPE)
        elapsed = (time.perf_counter() - start) * 1000
        if done.returncode not in (0, 1):  # GNU grep exits 1 when nothing matched
            raise SystemExit(f'{command[0]} failed: {done.stderr.decode(errors="replace")}')
        return elapsed, int(rss.read().split()[-1]) / 1024


def median(command: list[str], out_path: Path, runs: int) -> tuple[float, float]:
    results = [timed(command, out_path) for _ in range(runs)]
    return statistics.median(r[0] for r in results), max(r[1] for r in results)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--mb', type=int, default=100)
    parser.add_argument('--runs', type=int, default=5)
    args = parser.parse_args()
    binary = str(ROOT / 'target' / 'release' / 'overspill')
    with tempfile.TemporaryDirectory(prefix='overspill-grep-bench-') as work:
        work_dir = Path(work)
        log = work_dir / 'log.txt'
        log.write_text(log_text(args.mb * MB))
        store = f'file://{work_dir}/store'
        with log.open('rb') as stdin:
            subprocess.run(
                [binary, 'reduce', '--tool', 'bench', '--run-id', 'bench', '--call-id', 'c', '--store', store],
                stdin=stdin, stdout=subprocess.DEVNULL, check=True,
            )
        out = work_dir / 'out.txt'
        print(f'grep on a {args.mb} MB spill, {args.runs} runs, medians; -C 2 (context 2) everywhere')
        print(f'| pattern | overspill grep ms | GNU grep -n -C2 ms | ratio | overspill peak RSS MB | GNU grep peak RSS MB | matches |')
        print('|---|---:|---:|---:|---:|---:|---:|')
        for row, pattern, ours, theirs in ROWS:
            over = [binary, 'grep', 'bench/c.0', pattern, '-C', '2', '--store', store, *ours]
            over_ms, over_rss = median(over, out, args.runs)
            header = out.read_text().split('\n', 1)[0]
            matches = header.split(': ', 1)[1].split(' matching', 1)[0]
            gnu_ms, gnu_rss = median(['grep', '-n', '-C2', *theirs, pattern, str(log)], out, args.runs)
            counted = subprocess.run(['grep', '-c', *theirs, pattern, str(log)], capture_output=True, text=True)
            if int(counted.stdout) != int(matches.replace(',', '')):
                raise SystemExit(f'{row}: GNU grep counts {counted.stdout.strip()} matches, overspill {matches}')
            print(
                f'| {row} (`{pattern}`) | {over_ms:.1f} | {gnu_ms:.1f} | {gnu_ms / over_ms:.2f}× '
                f'| {over_rss:.1f} | {gnu_rss:.1f} | {matches} |'
            )


if __name__ == '__main__':
    main()
