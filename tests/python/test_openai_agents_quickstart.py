"""The README's OpenAI Agents quickstart (`workflows/python/examples/openai_agents_quickstart.py`)
runs as pasted against `overspill dev`: the agent's 200 KB tool output is spilled in the tool's
own activity into the default store that `overspill dev` and the interceptor both derive, and the
model reads its last line back through the dev worker by the handle in the marker.

Needs `TEMPORAL_ADDRESS` and `OVERSPILL_BIN`; the package comes from the installed wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from support import EXAMPLES, Process

EXAMPLE = EXAMPLES / 'openai_agents_quickstart.py'


def test_the_quickstart_spills_at_the_source_and_reads_back_against_overspill_dev(tmp_path: Path) -> None:
    # A fresh TMPDIR gives this test its own default store, and a queue of its own keeps other
    # workers on the server away.
    env = {k: v for k, v in os.environ.items() if k not in ('OVERSPILL_STORE', 'PYTHONPATH')}
    env.update(TMPDIR=str(tmp_path), OVERSPILL_TASK_QUEUE=f'quickstart-overspill-{uuid.uuid4()}')
    env['OPENAI_AGENTS_DISABLE_TRACING'] = '1'
    dev = Process('overspill-dev', [os.environ['OVERSPILL_BIN'], 'dev', '--no-demo'], env, tmp_path)
    try:
        dev.wait_for('overspill dev: Temporal at')
        run = subprocess.run(
            [sys.executable, str(EXAMPLE)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
    finally:
        dev.stop()
    assert run.returncode == 0, f'{run.stdout}\n{run.stderr}\n{dev.output()[-3000:]}'
    assert 'Fatal Python error' not in run.stderr, run.stderr
    # The model's answer is read_tool_result's last line of the spill, by the marker's handle:
    # `{run id}/{activity id}.0`, the tool being the workflow's second activity (after the model's).
    header, line = run.stdout.strip().split('\n')
    assert header.startswith("[handle '") and header.endswith("/2.0': 9,001 matching line(s); showing 1]"), header
    assert line == 'BUILD FAILED: disk full'
    handle = header.split("'")[1]
    spilled = tmp_path / f'overspill-{os.geteuid()}' / 'tool_output_limits' / handle
    assert spilled.read_text().endswith('BUILD FAILED: disk full\n') and spilled.stat().st_size > 200_000


def test_the_package_readme_shows_the_openai_agents_quickstart_whole() -> None:
    readme = (EXAMPLES.parent / 'README.md').read_text()
    assert f'```python\n{EXAMPLE.read_text()}```' in readme
