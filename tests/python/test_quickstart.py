"""The README's quickstart (`workflows/python/examples/quickstart.py`) runs as pasted against
`overspill dev`: its agent's tool output (200 KB, or 40 MB) is spilled at the source by the
tools' worker's `OverspillInterceptor`, into the default store that `overspill dev` and
`OverspillStore()` both derive, and the model reads it back by the handle in the marker; the
script then exits cleanly.

Needs `TEMPORAL_ADDRESS` and `OVERSPILL_BIN`; the package comes from the installed wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from support import EXAMPLES, Process


@pytest.mark.parametrize('megabytes', [None, '40'])
def test_quickstart_spills_and_reads_back_against_overspill_dev(tmp_path: Path, megabytes: str | None) -> None:
    """The default size (200 KB), and 40 MB: at the source, the default dev path (no bucket, no
    External Storage) takes it as pasted."""
    # The default store of both sides is `file://$TMPDIR/overspill-<euid>`: a fresh TMPDIR gives
    # this test its own, and a queue of its own keeps other workers on the server away.
    env = {k: v for k, v in os.environ.items() if k not in ('OVERSPILL_STORE', 'PYTHONPATH')}
    env.update(TMPDIR=str(tmp_path), OVERSPILL_TASK_QUEUE=f'quickstart-overspill-{uuid.uuid4()}')
    dev = Process('overspill-dev', [os.environ['OVERSPILL_BIN'], 'dev', '--no-demo'], env, tmp_path)
    try:
        dev.wait_for('overspill dev: Temporal at')
        run = subprocess.run(
            [sys.executable, str(EXAMPLES / 'quickstart.py'), *([megabytes] if megabytes else [])],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        dev.stop()
    assert run.returncode == 0, f'{run.stdout}\n{run.stderr}\n{dev.output()[-3000:]}'
    assert 'Fatal Python error' not in run.stderr, run.stderr
    root = tmp_path / f'overspill-{os.geteuid()}'
    assert f'store file://{root}/' in dev.output(), 'overspill dev took the default store'
    # The model's answer is read_tool_result's last line of the spill, by the marker's handle.
    header, line = run.stdout.strip().split('\n')
    lines = 1_800_001 if megabytes else 9_001
    assert header.startswith("[handle '") and header.endswith(f"/log.0': {lines:,} matching line(s); showing 1]"), header
    assert line == 'BUILD FAILED: disk full'
    handle = header.split("'")[1]
    spilled = root / 'tool_output_limits' / handle.replace(':', '_')
    assert spilled.read_text().endswith('BUILD FAILED: disk full\n')
    assert spilled.stat().st_size > (40_000_000 if megabytes else 200_000)


def test_the_package_readme_shows_the_quickstart_whole() -> None:
    readme = (EXAMPLES.parent / 'README.md').read_text()
    assert f"```python\n{(EXAMPLES / 'quickstart.py').read_text()}```" in readme


def test_the_masking_quickstart_masks_and_reads_back_without_temporal(tmp_path: Path) -> None:
    """`examples/masking_quickstart.py`, as the README shows it: page 0 was masked (its handle is in
    the default store) and the model read its first line back."""
    readme = (EXAMPLES.parent / 'README.md').read_text()
    assert f"```python\n{(EXAMPLES / 'masking_quickstart.py').read_text()}```" in readme
    env = {k: v for k, v in os.environ.items() if k not in ('OVERSPILL_STORE', 'PYTHONPATH')}
    env['TMPDIR'] = str(tmp_path)
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / 'masking_quickstart.py')],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    marker, header, line = run.stdout.strip().split('\n')
    handle = header.split("'")[1]
    assert marker.startswith("[Tool output of 'report_page' cleared from context (19,996 chars); stored to handle")
    assert f'{handle!r}' in marker and header.endswith(': 1,111 matching line(s); showing 1]')
    assert line == 'page 0: total=0'
    spilled = tmp_path / f'overspill-{os.geteuid()}' / 'tool_output_limits' / handle
    assert spilled.read_text().startswith('page 0: total=0\nrow 0 of page 0\n')
