"""The Python package as users install it: the tests import the installed wheel, never the
checkout's sources, and the wheel installs into an environment that already holds the oldest
versions its dependency ranges accept, keeping them (no pin forces an upgrade or a conflict).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from support import ROOT

PACKAGE = ROOT / 'workflows' / 'python'

# Without any extra: the core and External Storage's module import, and boto3 is not installed.
CHECK_CORE = """
import importlib.util, overspill, overspill.external_storage
assert importlib.util.find_spec('boto3') is None, 'boto3 came without the external-storage extra'
"""

# Imports everything, builds a store and External Storage, and reports the versions it runs on.
CHECK = """
import importlib.metadata as m, json, sys
import overspill.pydantic_ai as o
o.OverspillStore('file:///tmp/x').engine; o.external_storage('s3://bucket')
meta = m.metadata('overspill')
print(json.dumps({n: m.version(n) for n in sys.argv[1:]}))
print(json.dumps([meta['License-Expression'], meta['Requires-Python'], meta.get_payload().splitlines()[0]]))
"""


def test_the_tests_import_the_installed_wheel() -> None:
    import overspill

    path = Path(overspill.__file__).resolve()
    # The wheel venv may live inside the checkout (.deploy/), but never the package's source tree.
    assert 'site-packages' in path.parts and PACKAGE not in path.parents, path


def test_the_wheel_keeps_the_oldest_versions_its_ranges_accept(tmp_path: Path) -> None:
    project = tomllib.loads((PACKAGE / 'pyproject.toml').read_text())['project']
    assert project['license'] and project['readme'] == 'README.md' and project['requires-python']

    def lows(requirements: list[str]) -> dict[str, str]:
        assert not any('==' in r for r in requirements), 'ranges, not pins'
        pattern = r'([\w-]+)(?:\[\w+\])?[^>]*>=([\w.]+).*'
        return dict(re.fullmatch(pattern, r).groups() for r in requirements)  # type: ignore[union-attr, misc]

    oldest = lows(project['dependencies'])
    storage = lows(project['optional-dependencies']['external-storage'])

    def run(*args: object) -> str:
        out = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, f'{args}:\n{out.stdout}\n{out.stderr}'
        return out.stdout

    # The wheel deploy/lib.sh built with maturin (the engine compiled in) for the tests' venv.
    wheels = Path(os.environ.get('OVERSPILL_DEPLOY_DIR') or ROOT / '.deploy') / 'wheels'
    (wheel,) = wheels.glob('overspill-*.whl')
    venv = tmp_path / 'venv'
    run(sys.executable, '-m', 'venv', venv)
    pip = [venv / 'bin' / 'python', '-m', 'pip', 'install', '-q', '--disable-pip-version-check']
    run(*pip, *(f'{name}=={version}' for name, version in oldest.items()))
    run(*pip, wheel)
    run(venv / 'bin' / 'python', '-c', CHECK_CORE)
    run(*pip, f'{wheel}[external-storage]', *(f'{name}=={version}' for name, version in storage.items()))
    versions, metadata = map(json.loads, run(venv / 'bin' / 'python', '-c', CHECK, *oldest, *storage).splitlines())
    assert versions == {**oldest, **storage}
    assert metadata == ['MIT OR Apache-2.0', '>=3.10', '# Overspill for Python'], 'license, Python, README'


def test_the_former_import_name_still_imports_with_a_warning() -> None:
    code = 'import warnings; warnings.simplefilter("error"); import overspill_pydantic_ai'
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=60)
    assert 'is now `overspill.pydantic_ai`' in done.stderr, done.stderr
    done = subprocess.run(
        [sys.executable, '-W', 'ignore', '-c', 'from overspill_pydantic_ai import OverspillStore, OverspillInterceptor'],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
