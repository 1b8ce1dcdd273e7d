"""Print pip constraints for the oldest pydantic-ai the Python package declares.

    python3 deploy/lowest_constraints.py workflows/python/pyproject.toml constraints.txt

The lower bounds of `pydantic-ai-harness` and `pydantic-ai-slim` in the package's dependencies,
and every other line of `constraints.txt` (requirements.txt's tested versions) as it is.
"""

import re
import sys
import tomllib

LOWEST = ('pydantic-ai-harness', 'pydantic-ai-slim')

pyproject, constraints = sys.argv[1:]
lowest = {}
with open(pyproject, 'rb') as file:
    for requirement in tomllib.load(file)['project']['dependencies']:
        match = re.fullmatch(r'([\w-]+)(?:\[\w+\])?[^>]*>=([\w.]+).*', requirement)
        if match and match[1] in LOWEST:
            lowest[match[1]] = match[2]
with open(constraints) as file:
    for line in file:
        if line.split('==')[0].strip() not in lowest:
            print(line, end='')
for name, version in lowest.items():
    print(f'{name}=={version}')
