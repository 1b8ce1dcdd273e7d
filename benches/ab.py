#!/usr/bin/env python3
"""Two `overspill` binaries side by side, whole process: spill, page and pattern page.

    benches/ab.py --old OLD_BIN --new NEW_BIN [--sizes 100,1000] [--runs 3]

For a change that must keep what users notice (a refactor): both binaries spill the same
generated log (MB sizes) to `file://` and, with OVERSPILL_TEST_S3_URL set (`source
.deploy/seaweedfs.env`), to SeaweedFS, then read pages back, each a fresh process (a cold page:
no index in memory). Runs alternate old and new; the table gives median wall time and median peak
RSS (`/usr/bin/time -f %M`) of each, and new / old.
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


def make_log(path, mb):
    line_no = 0
    with open(path, "w") as f:
        written = 0
        while written < mb * 1_000_000:
            level = "ERROR" if line_no % 1000 == 7 else "INFO"
            line = f"{line_no:09} {level} request served in {line_no % 97} ms by shard {line_no % 13}\n"
            f.write(line)
            written += len(line)
            line_no += 1
    return line_no


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--sizes", default="100,1000", help="log sizes in MB")
    parser.add_argument("--runs", type=int, default=3)
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
    for mb in map(int, args.sizes.split(",")):
        log = f"{work}/log-{mb}.txt"
        lines = make_log(log, mb)
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
                        "pattern page ERROR": ["--pattern", "ERROR", "--offset", "100"],
                        # 999 lines in 1,000 match: every match is counted.
                        "pattern page INFO": ["--pattern", "INFO", "--from-end"],
                    }
                    measured = {"spill (reduce)": spill[:2]}
                    for label, extra in reads.items():
                        measured[label] = timed([bins[side], "read", handle, "--store", store, *extra])[:2]
                    for label, value in measured.items():
                        results.setdefault(label, {}).setdefault(side, []).append(value)
            for label, sides in results.items():
                rows.append((f"{mb} MB, {store_name}, {label}", sides))

    print("| case | old s | new s | new/old | old MiB | new MiB | new/old |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, sides in rows:
        wall = {s: statistics.median(v[0] for v in sides[s]) for s in sides}
        rss = {s: statistics.median(v[1] for v in sides[s]) for s in sides}
        print(f"| {label} | {wall['old']:.3f} | {wall['new']:.3f} | {wall['new'] / wall['old']:.2f} "
              f"| {rss['old']:.0f} | {rss['new']:.0f} | {rss['new'] / rss['old']:.2f} |")


if __name__ == "__main__":
    main()
