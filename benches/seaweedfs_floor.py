"""What one ranged GET costs SeaweedFS itself, by object size and chunk size: the floor under a
page by offset through S3, measured without Overspill.

    .deploy/venv/bin/python benches/seaweedfs_floor.py                 # 100 MB, 1 GB, 2 GB; 1 MB chunks
    .deploy/venv/bin/python benches/seaweedfs_floor.py --sizes 1000 --chunk-mb 1,16

Run `deploy/seaweedfs.sh start` once first (it installs `weed`). For each chunk size this starts
a `weed mini` of its own (S3 on port 28333, a scratch directory, the S3 flags of
`deploy/seaweedfs.sh` but `-filer.maxMB`), uploads each size of ~1,000-byte lines in 8 MiB parts
as the store does (multipart, no Content-Type), and times ranged GETs of 1 KiB, 64 KiB and
330 KiB (a 200-line page of long lines with its checkpoints) at random offsets over one
keep-alive connection, median of 40, with the standard library's HTTP client and
`deploy/sigv4.py`. One
small object stands for a spill's index. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import http.client
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'deploy'))
from sigv4 import signed  # noqa: E402
WEED = ROOT / '.deploy/venv/bin/weed'
# SeaweedFS takes each port + 10000 for gRPC: 28333 and its derived ports clear those of the
# server deploy/seaweedfs.sh starts on 8333.
ACCESS_KEY, SECRET_KEY, BUCKET, PORT = 'floor', 'floor-secret', 'spills', 28333
PART = 8 << 20
RANGES = (1024, 64 * 1024, 330 * 1024)


class S3:
    """One keep-alive connection to the probe's server."""

    def __init__(self) -> None:
        self.conn = http.client.HTTPConnection('127.0.0.1', PORT, timeout=120)

    def call(self, method: str, path: str, query: str = '', headers=None, body: bytes | None = None):
        headers = dict(headers or {})
        if body is not None:
            headers['content-length'] = str(len(body))
        self.conn.request(method, path + (f'?{query}' if query else ''), body=body,
                          headers=signed(method, f'127.0.0.1:{PORT}', path, query, headers,
                                                 ACCESS_KEY, SECRET_KEY))
        response = self.conn.getresponse()
        return response.status, response.read(), response

    def put(self, key: str, size: int, line: bytes) -> int:
        """Upload about `size` bytes of `line` to `key` as the store does; the bytes written."""
        part = (line * (PART // len(line) + 1))[:PART]
        if size < PART:
            status, body, _ = self.call('PUT', key, body=part[:size])
            assert status == 200, body
            return size
        status, body, _ = self.call('POST', key, 'uploads=')
        assert status == 200, body
        upload = body.split(b'<UploadId>')[1].split(b'</UploadId>')[0].decode()
        tags = []
        for number in range(1, size // PART + 1):
            status, body, response = self.call('PUT', key, f'partNumber={number}&uploadId={upload}', body=part)
            assert status == 200, body
            tags.append(response.getheader('ETag'))
        done = ''.join(f'<Part><PartNumber>{i}</PartNumber><ETag>{t}</ETag></Part>' for i, t in enumerate(tags, 1))
        status, body, _ = self.call('POST', key, f'uploadId={upload}',
                                    body=f'<CompleteMultipartUpload>{done}</CompleteMultipartUpload>'.encode())
        assert status == 200, body
        return len(tags) * PART

    def ranged_ms(self, key: str, size: int, length: int, rounds: int = 40) -> float:
        """The median time of `rounds` GETs of `length` bytes at random offsets of `key`."""
        rng, times = random.Random(7), []
        for _ in range(rounds):
            start = rng.randrange(0, size - length)
            began = time.perf_counter()
            status, body, _ = self.call('GET', key, headers={'range': f'bytes={start}-{start + length - 1}'})
            times.append((time.perf_counter() - began) * 1000)
            assert status == 206 and len(body) == length, (status, len(body))
        return statistics.median(times)


def serve(chunk_mb: int, scratch: Path) -> subprocess.Popen:
    """A `weed mini` with `chunk_mb` chunks, ready for signed requests."""
    (scratch / 'data').mkdir(parents=True)
    (scratch / 's3.json').write_text(
        '{"identities": [{"name": "floor", "credentials": [{"accessKey": "%s", "secretKey": "%s"}],'
        ' "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}' % (ACCESS_KEY, SECRET_KEY)
    )
    off = PORT - 8333
    weed = subprocess.Popen(
        [str(WEED), 'mini', f'-dir={scratch}/data', '-ip=127.0.0.1', '-ip.bind=127.0.0.1',
         f'-s3.port={PORT}', f'-s3.config={scratch}/s3.json', f'-bucket={BUCKET}',
         f'-master.port={9333 + off}', f'-volume.port={8080 + off}', f'-filer.port={8888 + off}',
         f'-admin.port={23646 + off}', '-webdav=false', '-admin.ui=false', f'-filer.maxMB={chunk_mb}',
         '-s3.port.iceberg=0', '-s3.port.lance=0', '-s3.autoCreateBucket=false'],
        stdout=open(scratch / 'weed.log', 'wb'), stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and weed.poll() is None:
        try:
            if S3().call('GET', f'/{BUCKET}', 'list-type=2')[0] == 200:
                return weed
        except OSError:
            pass
        time.sleep(0.5)
    weed.kill()
    raise SystemExit(f'weed did not answer; see {scratch}/weed.log')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sizes', default='100,1000,2000', help='object sizes in MB')
    parser.add_argument('--chunk-mb', default='1', help='-filer.maxMB values to compare')
    args = parser.parse_args()
    if not WEED.exists():
        raise SystemExit(f'{WEED} is missing: run deploy/seaweedfs.sh start once')
    fill = b'the quick brown fox jumps over the lazy dog '
    line = (b'0000000000 level=info component=indexer msg="' + fill * 23)[:998] + b'"\n'
    print('| chunk MB | object | ' + ' | '.join(f'{r // 1024} KiB GET ms' for r in RANGES) + ' |')
    print('|---:|---|' + '---:|' * len(RANGES))
    for chunk_mb in (int(c) for c in args.chunk_mb.split(',')):
        scratch = Path(tempfile.mkdtemp(prefix='seaweedfs-floor-'))
        weed = serve(chunk_mb, scratch)
        try:
            s3 = S3()
            objects = [(f'{s * 1_000_000 // PART * PART / 1e6:.0f} MB', s * 1_000_000) for s in map(int, args.sizes.split(','))]
            for name, size in [('130 KiB (an index)', 130 * 1024), *objects]:
                key = f'/{BUCKET}/floor-{size}'
                written = s3.put(key, size, line)
                cells = [f'{s3.ranged_ms(key, written, r):.2f}' if r < written else '—' for r in RANGES]
                print(f'| {chunk_mb} | {name} | ' + ' | '.join(cells) + ' |', flush=True)
        finally:
            weed.terminate()
            weed.wait(timeout=30)
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == '__main__':
    main()
