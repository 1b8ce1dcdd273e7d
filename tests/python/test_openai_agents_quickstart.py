"""The README's OpenAI Agents quickstart (`workflows/python/examples/openai_agents_quickstart.py`)
runs as pasted against `overspill dev`: the agent's 200 KB tool output is spilled in the tool's
own activity into the default store that `overspill dev` and the interceptor both derive, and the
model reads its last line back through the dev worker by the handle in the marker.

Needs `TEMPORAL_ADDRESS` and `OVERSPILL_BIN`; the package comes from the installed wheel.
"""

from __future__ import annotations

from pathlib import Path

from support import EXAMPLES, readme_shows, run_quickstart

EXAMPLE = EXAMPLES / 'openai_agents_quickstart.py'


def test_the_quickstart_spills_at_the_source_and_reads_back_against_overspill_dev(tmp_path: Path) -> None:
    run_quickstart(EXAMPLE, tmp_path)


def test_the_package_readme_shows_the_openai_agents_quickstart_whole() -> None:
    assert readme_shows(EXAMPLE)
