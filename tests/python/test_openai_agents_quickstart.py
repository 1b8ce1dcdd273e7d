"""The README's OpenAI Agents quickstart (`workflows/python/examples/openai_agents_quickstart.py`)
runs as pasted against `overspill dev`: the agent's 200 KB tool output is spilled in the tool's
own activity into the default store that `overspill dev` and the interceptor both derive, and the
model reads its last line back through the dev worker by the handle in the marker.

Needs `TEMPORAL_ADDRESS` and `OVERSPILL_BIN`; the package comes from the installed wheel.
"""

from __future__ import annotations

from pathlib import Path

from support import EXAMPLES, quickstart_read_back, readme_shows, run_quickstart

EXAMPLE = EXAMPLES / 'openai_agents_quickstart.py'


def test_the_quickstart_spills_at_the_source_and_reads_back_against_overspill_dev(tmp_path: Path) -> None:
    stdout = run_quickstart(EXAMPLE, tmp_path, OPENAI_AGENTS_DISABLE_TRACING='1')
    # The handle is `{run id}/{activity id}.0`, the tool being the workflow's second activity (after the model's).
    assert quickstart_read_back(stdout, tmp_path).endswith('/2.0')


def test_the_package_readme_shows_the_openai_agents_quickstart_whole() -> None:
    assert readme_shows(EXAMPLE)
