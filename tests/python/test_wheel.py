"""The Python package as users install it: the tests import the installed wheel, never the
checkout's sources; and the wheels `deploy/wheels.sh` writes (the engine's abi3 module and the
`overspill` command, tagged manylinux_2_17 or older) install with `pip` where there is no Rust,
into an environment that already holds the oldest versions the package's ranges accept, keeping
them, and run: `import overspill`, the `overspill` command, a query in its sandbox, and the
quickstart against `overspill dev` started from that environment.

Needs `TEMPORAL_ADDRESS`; the wheels come from `.deploy/wheels` (deploy/lib.sh's `ensure_wheel_venv`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import uuid
from pathlib import Path

from support import EXAMPLES, ROOT, Process

PACKAGE = ROOT / 'workflows' / 'python'
DEPLOY = Path(os.environ.get('OVERSPILL_DEPLOY_DIR') or ROOT / '.deploy')

# Without any extra: the core and External Storage's module import, and boto3 is not installed.
CHECK_CORE = """
import importlib.util, overspill, overspill.external_storage
assert importlib.util.find_spec('boto3') is None, 'boto3 came without the external-storage extra'
"""

# Imports everything, builds a store and External Storage, runs a query in the sandbox the store
# finds, and reports the versions it runs on.
CHECK = """
import asyncio, importlib.metadata as m, json, sys, tempfile
import overspill.pydantic_ai as o
from overspill import Store
o.OverspillStore('file:///tmp/x').engine; o.external_storage('s3://bucket')
meta = m.metadata('overspill')

async def query():
    store = Store('file://' + tempfile.mkdtemp())
    await store.write('r/c.0', b'{"n":1}\\n{"n":2}\\n')
    return [await store.query_tool_result({'handle': 'r/c.0', 'filter': '.n'}), store.query_sandbox]

print(json.dumps({n: m.version(n) for n in sys.argv[1:]}))
print(json.dumps([meta['License-Expression'], meta['Requires-Python'], meta.get_payload().splitlines()[0]]))
print(json.dumps(asyncio.run(query())))
"""


def test_the_tests_import_the_installed_wheel() -> None:
    import overspill

    path = Path(overspill.__file__).resolve()
    # The wheel venv may live inside the checkout (.deploy/), but never the package's source tree.
    assert 'site-packages' in path.parts and PACKAGE not in path.parents, path


def run(*args: object, env: dict[str, str] | None = None, timeout: float = 900) -> str:
    out = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, env=env)
    assert out.returncode == 0, f'{args}:\n{out.stdout}\n{out.stderr}'
    return out.stdout


def test_the_wheels_are_portable_to_glibc_2_17() -> None:
    """Every wheel `deploy/wheels.sh` wrote is manylinux_2_17 or older, as `auditwheel show` reads
    the symbols its binaries need; an sdist of each distribution is beside them."""
    wheels = sorted((DEPLOY / 'wheels').glob('*.whl'))
    assert [w.name.split('-')[0] for w in wheels] == ['overspill', 'overspill_cli'], wheels
    for wheel in wheels:
        shown = run(DEPLOY / 'venv' / 'bin' / 'auditwheel', 'show', wheel)
        tag = re.search(r'consistent with the following platform tag:\s+"manylinux_2_(\d+)_\w+"', shown)
        assert tag and int(tag[1]) <= 17, shown
    sdists = sorted(p.name for p in (DEPLOY / 'wheels').glob('*.tar.gz'))
    assert sdists == ['overspill-0.1.0.tar.gz', 'overspill_cli-0.1.0.tar.gz'], sdists


def test_the_wheels_install_and_run_without_rust(tmp_path: Path) -> None:
    project = tomllib.loads((PACKAGE / 'pyproject.toml').read_text())['project']
    assert project['license'] and project['readme'] == 'README.md' and project['requires-python']
    cli = tomllib.loads((ROOT / 'src' / 'cli' / 'pyproject.toml').read_text())['project']

    def lows(requirements: list[str]) -> dict[str, str]:
        assert not any('==' in r for r in requirements), 'ranges, not pins'
        pattern = r'([\w-]+)(?:\[\w+\])?[^>]*>=([\w.]+).*'
        return dict(re.fullmatch(pattern, r).groups() for r in requirements)  # type: ignore[union-attr, misc]

    pinned = [r for r in project['dependencies'] if r.startswith('overspill-cli')]
    assert pinned == [f'overspill-cli=={project["version"]}'] == [f'overspill-cli=={cli["version"]}'], pinned
    oldest = lows([r for r in project['dependencies'] if not r.startswith('overspill-cli')])
    storage = lows(project['optional-dependencies']['external-storage'])

    # A PATH without cargo or rustc: nothing can be compiled, by pip or anyone.
    venv = tmp_path / 'venv'
    run(sys.executable, '-m', 'venv', venv)
    dirs = [d for d in os.environ['PATH'].split(os.pathsep) if not any(Path(d, t).exists() for t in ('cargo', 'rustc'))]
    env = {k: v for k, v in os.environ.items() if k not in ('OVERSPILL_STORE', 'PYTHONPATH', 'VIRTUAL_ENV')}
    env.update(PATH=os.pathsep.join([str(venv / 'bin'), *dirs]), TMPDIR=str(tmp_path))
    env['OVERSPILL_TASK_QUEUE'] = f'wheel-overspill-{uuid.uuid4()}'
    assert shutil.which('cargo', path=env['PATH']) is None and shutil.which('rustc', path=env['PATH']) is None

    # The wheels the tests' own venv was built from, as pip installs them: first without extras.
    wheels = DEPLOY / 'wheels'
    (wheel,) = wheels.glob('overspill-*.whl')
    pip = ['python', '-m', 'pip', 'install', '-q', '--disable-pip-version-check']
    run(*pip, *(f'{name}=={version}' for name, version in oldest.items()), env=env)
    run(*pip, '--only-binary', 'overspill,overspill-cli', '--find-links', wheels, wheel, env=env)
    run('python', '-c', CHECK_CORE, env=env)
    extra = (f'{wheel}[external-storage]', *(f'{name}=={version}' for name, version in storage.items()))
    run(*pip, '--find-links', wheels, *extra, env=env)
    versions, metadata, (page, sandbox) = map(json.loads, run('python', '-c', CHECK, *oldest, *storage, env=env).splitlines())
    assert versions == {**oldest, **storage}
    assert metadata == ['MIT OR Apache-2.0', '>=3.10', '# Overspill for Python'], 'license, Python, README'
    assert sandbox == str(venv / 'bin' / 'overspill'), 'queries run in the installed command'
    assert page.endswith('showing results 1-2]\n1\n2'), page
    assert 'Usage: overspill <COMMAND>' in run('overspill', '--help', env=env)

    # The quickstart, as pasted, against `overspill dev` from this environment, which names
    # itself as installed.
    dev = Process('overspill-dev', ['overspill', 'dev', '--demo-lines', '1000'], env, tmp_path)
    try:
        dev.wait_for('Serving the tool_output_limits.* activities', timeout=120)
        quickstart = run('python', EXAMPLES / 'quickstart.py', env=env, timeout=300)
    finally:
        dev.stop()
    assert "Page through it yourself: overspill read '" in dev.output(), dev.output()
    header, line = quickstart.strip().split('\n')
    assert header.endswith("/log.0': 9,001 matching line(s); showing 1]") and line == 'BUILD FAILED: disk full'


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
