"""Overspill's token counting against OpenAI's tiktoken, side by side in one run.

    benches/tokens.sh             # ensures the project venv (tiktoken pinned), then runs this

Builds `cargo bench --bench tokens` (release), which writes a mixed corpus (logs, JSON, code,
English and CJK prose) and its compiled-in vocabularies as `.tiktoken` files. tiktoken is served
those files instead of downloading its own, and checks them against OpenAI's published SHA-256,
so both sides count the same text with the same vocabulary. Each side runs in its own process
under `/usr/bin/time`, for its peak memory. Then the reduce rows: what counting costs a reduce of
100 MB, and that a band the length decides costs nothing.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENCODINGS = ('o200k_base', 'cl100k_base')


def bench_binary() -> str:
    build = subprocess.run(
        ['cargo', 'bench', '--bench', 'tokens', '--no-run', '--message-format=json'],
        cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True,
    )
    for line in build.stdout.splitlines():
        message = json.loads(line)
        if message.get('reason') == 'compiler-artifact' and message['target']['name'] == 'tokens':
            if message.get('executable'):
                return message['executable']
    raise SystemExit('cargo built no tokens bench')


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[list[dict], int]:
    """Run `command` under /usr/bin/time; its JSON lines and its peak RSS in KiB."""
    with tempfile.NamedTemporaryFile('r') as peak:
        run = subprocess.run(
            ['/usr/bin/time', '-o', peak.name, '-f', '%M', *command],
            check=True, stdout=subprocess.PIPE, text=True, env=env,
        )
        rss = int(peak.read().strip().splitlines()[-1])
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith('{')], rss


def count_with_tiktoken(data_dir: Path) -> None:
    """The Python side (run as a child): tiktoken on the corpus, one JSON line per encoding."""
    import tiktoken
    import tiktoken.load

    def read_file(blobpath: str) -> bytes:
        # Serve the vocabulary Overspill embeds; nothing is downloaded. tiktoken checks its hash.
        return (data_dir / Path(blobpath).name).read_bytes()

    tiktoken.load.read_file = read_file
    text = (data_dir / 'corpus.txt').read_text(encoding='utf-8')
    size = len(text.encode('utf-8'))
    for name in ENCODINGS:
        start = time.perf_counter()
        enc = tiktoken.get_encoding(name)
        enc.encode_ordinary('load the vocabulary')
        load_ms = (time.perf_counter() - start) * 1e3
        tokens = len(enc.encode_ordinary(text))
        times = []
        for _ in range(5):
            start = time.perf_counter()
            len(enc.encode_ordinary(text))
            times.append(time.perf_counter() - start)
        mb_per_s = size / 1e6 / statistics.median(times)
        print(json.dumps({'encoding': name, 'bytes': size, 'tokens': tokens, 'mb_per_s': mb_per_s,
                          'load_ms': load_ms}))


def main() -> None:
    binary = bench_binary()
    with tempfile.TemporaryDirectory(prefix='overspill-tokens-') as tmp:
        data_dir = Path(tmp)
        subprocess.run([binary, 'prepare', tmp], check=True)
        ours, our_rss = timed([binary, 'count', tmp])
        env = {**os.environ, 'TIKTOKEN_CACHE_DIR': str(data_dir / 'cache')}
        theirs, their_rss = timed([sys.executable, __file__, '--tiktoken', tmp], env)
        reduce_rows, _ = timed([binary, 'reduce'])

    size_mb = ours[0]['bytes'] / 1e6
    print(f'\nToken counting, {size_mb:.1f} MB corpus, single thread, median of 5')
    print(f'{"encoding":<12} {"tokens":>10} {"Overspill MB/s":>15} {"tiktoken MB/s":>14} '
          f'{"ratio":>7} {"counts equal":>13} {"first load ms (ours/theirs)":>28}')
    for mine, ref in zip(ours, theirs, strict=True):
        equal = 'yes' if mine['tokens'] == ref['tokens'] else f'NO ({ref["tokens"]})'
        print(f'{mine["encoding"]:<12} {mine["tokens"]:>10,} {mine["mb_per_s"]:>15.1f} '
              f'{ref["mb_per_s"]:>14.1f} {mine["mb_per_s"] / ref["mb_per_s"]:>6.1f}x {equal:>13} '
              f'{mine["load_ms"]:>14.0f} / {ref["load_ms"]:<10.0f}')
    print(f'peak RSS, both encodings loaded and the corpus in memory: Overspill {our_rss / 1024:.0f} MiB, '
          f'tiktoken (Python) {their_rss / 1024:.0f} MiB')

    print('\nreduce → truncate, 100 MB of log text, median of 5')
    for row in reduce_rows:
        print(f'{row["reduce_100mb"]:<58} {row["ms"]:>9.2f} ms')


if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == '--tiktoken':
        count_with_tiktoken(Path(sys.argv[2]))
    else:
        main()
