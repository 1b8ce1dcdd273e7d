"""The README's LangGraph and Deep Agents quickstarts (`workflows/python/examples/
{langgraph,deepagents}_quickstart.py`) run as pasted against `overspill dev`: the agent's 200 KB
tool output is spilled in the tool's own activity into the default store that `overspill dev` and
`OverspillPlugin` both derive, and the model reads its last line back through the dev worker by
the handle in the marker.

Needs `TEMPORAL_ADDRESS` and `OVERSPILL_BIN`; the package comes from the installed wheel.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import EXAMPLES, quickstart_read_back, run_quickstart

QUICKSTARTS = {
    # `{run id}/{activity id}.0`: the tool is the workflow's second activity (after the model node's).
    'langgraph_quickstart.py': r'[^/]+/2\.0',
    # `{run id}/{tool_call_id}.0`: the call id `deepagents.invoke_tool` got from the workflow, a uuid.
    'deepagents_quickstart.py': r'[^/]+/[0-9a-f]{32}\.0',
}


@pytest.mark.parametrize('example', QUICKSTARTS)
def test_the_quickstart_spills_at_the_source_and_reads_back_against_overspill_dev(example: str, tmp_path: Path) -> None:
    handle = quickstart_read_back(run_quickstart(EXAMPLES / example, tmp_path), tmp_path)
    assert re.fullmatch(QUICKSTARTS[example], handle), handle


@pytest.mark.parametrize('example', QUICKSTARTS)
def test_the_package_readme_shows_the_quickstart_whole(example: str) -> None:
    readme = (EXAMPLES.parent / 'README.md').read_text()
    assert f'```python\n{(EXAMPLES / example).read_text()}```' in readme
