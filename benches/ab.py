#!/usr/bin/env python3
"""Two `overspill` binaries side by side, whole process: spill, page and pattern page.

    benches/ab.py --old OLD_BIN --new NEW_BIN [--sizes 100,1000] [--runs 3] [--shapes log,jsonl,json]

For a change that must keep what users notice (a refactor): both binaries spill the same
generated payload (MB sizes; shapes: a log, JSON Lines, one-line JSON) to `file://` and, with
OVERSPILL_TEST_S3_URL set (`source .deploy/seaweedfs.env`), to SeaweedFS, then read pages back,
each a fresh process (a cold page: no index in memory; on `file://`, one more page after the
index object is deleted, which rebuilds it). Runs alternate old and new; the table gives median
wall time and median peak RSS (`/usr/bin/time -f %M`) of each, and new / old.
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import time
import uuid

CONFIG = '{"bands": [{"over": 1000, "action": {"type": "spill"}}]}'


def timed(cmd, stdin=None):
    """Wall seconds and peak RSS (MiB) of `cmd`, and its stdout."""
    started = time.perf_counter()
    out = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], stdin=stdin, capture_output=True, check=True)
    wall = time.perf_counter() - started
    rss = int(out.stderr.decode().strip().splitlines()[-1])
    return wall, rss / 1024, out.stdout.decode(), out.stderr.decode()


def log_line(i):
    level = "ERROR" if i % 1000 == 7 else "INFO"
    return f"{i:09} {level} request served in {i % 97} ms by shard {i % 13}\n"


def record(i):
    note = "retried \u2014 upstream timeout" if i % 10 == 3 else "ok"
    status = "failed" if i % 100 == 0 else "ok"
    return (f'{{"id":{i},"user":{{"name":"user{i % 5000}","email":"u{i % 5000}@example.com"}},'
            f'"status":"{status}","latency_ms":{i % 300},"note":"{note}"}}')


# Each shape: its text, and two patterns: a rare one and one on (nearly) every line.
SHAPES = {
    "log": (lambda i: log_line(i), "ERROR", "INFO"),
    "jsonl": (lambda i: record(i) + "\n", '"status":"failed"', '"latency_ms"'),
    # One line: a pattern found only at its end, and one found at once.
    "json": (lambda i: ("," if i else '{"items":[') + record(i), '"last":true', '"status"'),
}


def make_payload(path, mb, shape):
    """Write `mb` MB of `shape`; returns its lines."""
    line, *_ = SHAPES[shape]
    i = 0
    with open(path, "w") as f:
        written = 0
        while written < mb * 1_000_000:
            text = line(i)
            f.write(text)
            written += len(text.encode())
            i += 1
        if shape == "json":
            f.write('],"last":true}')
            return 1
    return i


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--sizes", default="100,1000", help="log sizes in MB")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--shapes", default="log", help="payload shapes: log, jsonl, json")
    args = parser.parse_args()
    bins = {"old": args.old, "new": args.new}

    work = tempfile.mkdtemp(prefix="overspill-ab-")
    stores = {"file://": f"file://{work}/store"}
    if os.environ.get("OVERSPILL_TEST_S3_URL"):
        stores["SeaweedFS"] = f"{os.environ['OVERSPILL_TEST_S3_URL'].rstrip('/')}/ab-{uuid.uuid4().hex[:8]}"
    config = f"{work}/limits.json"
    with open(config, "w") as f:
        f.write(CONFIG)

    rows = []  # (label, {side: [(wall, rss)]})
    for shape, mb in ((shape, int(mb)) for shape in args.shapes.split(",") for mb in args.sizes.split(",")):
        log = f"{work}/{shape}-{mb}.txt"
        lines = make_payload(log, mb, shape)
        _, rare, every = SHAPES[shape]
        for store_name, store in stores.items():
            results = {}
            for run in range(args.runs):
                for side in ("old", "new") if run % 2 == 0 else ("new", "old"):
                    run_id = f"{side}-{run}-{uuid.uuid4().hex[:6]}"
                    with open(log, "rb") as stdin:
                        spill = timed([bins[side], "reduce", "--tool", "log", "--config", config,
                                       "--store", store, "--run-id", run_id, "--call-id", "c"], stdin)
                    handle = f"{run_id}/c.0"
                    assert f"handle '{handle}'" in spill[2], f"{side} did not spill: {spill[3][-2000:]}"
                    reads = {
                        "page, first": ["--offset", "0"],
                        "page, middle": ["--offset", str(lines // 2)],
                        "page, from end": ["--from-end"],
                        f"pattern page {rare}": ["--pattern", rare, "--offset", "100"],
                        # On (nearly) every line: every match is counted.
                        f"pattern page {every}": ["--pattern", every, "--from-end"],
                    }
                    measured = {"spill (reduce)": spill[:2]}
                    for label, extra in reads.items():
                        measured[label] = timed([bins[side], "read", handle, "--store", store, *extra])[:2]
                    if store.startswith("file://"):
                        root = store[len("file://"):]
                        index = [f"{d}/{n}" for d, _, names in os.walk(root) for n in names
                                 if run_id in d and n.endswith(".idx")]
                        assert len(index) == 1, index
                        os.remove(index[0])
                        read = [bins[side], "read", handle, "--store", store, "--offset", str(lines // 2)]
                        measured["page, middle, index rebuilt"] = timed(read)[:2]
                    for label, value in measured.items():
                        results.setdefault(label, {}).setdefault(side, []).append(value)
            for label, sides in results.items():
                rows.append((f"{mb} MB {shape}, {store_name}, {label}", sides))

    print("| case | old s | new s | new/old | old MiB | new MiB | new/old |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, sides in rows:
        wall = {s: statistics.median(v[0] for v in sides[s]) for s in sides}
        rss = {s: statistics.median(v[1] for v in sides[s]) for s in sides}
        print(f"| {label} | {wall['old']:.3f} | {wall['new']:.3f} | {wall['new'] / wall['old']:.2f} "
              f"| {rss['old']:.0f} | {rss['new']:.0f} | {rss['new'] / rss['old']:.2f} |")


if __name__ == "__main__":
    main()
