"""Who wrote a spill, and which spills a read may see: the Overspill worker's `--read-scope` rule.

A spill written for a workflow records its writer in the `scope` entry of its `overspill`
metadata (a local file's `user.overspill` attribute): `<namespace>/<workflow id>`, each part raw
while short, else `sha256:<hex>` of it, exactly as the worker writes it (`src/store/scope.rs`).
The workflow id, not the run id, is the scope, so continue-as-new runs read their earlier spills.

A read inside a Temporal activity is the activity's workflow's (`temporalio.activity.info()`):
with `read_scope='workflow'` it sees the spills of its own workflow id and namespace, with
`'namespace'` those of its namespace, with `'any'` every spill. A spill whose writer is unknown
(written outside a workflow, or before scopes were recorded) is seen only with `'any'`. A read
outside any activity is a program outside Temporal, like `overspill read`, and sees every spill.
A spill that is not seen reads exactly as a missing one.
"""

from __future__ import annotations

import hashlib
from urllib.parse import parse_qs

from temporalio import activity

READ_SCOPES = ('workflow', 'namespace', 'any')
"""The read scopes, as `overspill worker --read-scope` names them."""

_NAMESPACE_BYTES = 48
_WORKFLOW_BYTES = 144
_DIGEST = 'sha256:'
_UNRESERVED = frozenset(b'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789*-._ ')


def form_encode(value: str) -> str:
    """`value` in URL query (`application/x-www-form-urlencoded`) form, as the worker encodes it."""
    return ''.join(
        '+' if b == 0x20 else chr(b) if b in _UNRESERVED else f'%{b:02X}' for b in value.encode('utf-8')
    )


def _part(value: str, budget: int, namespace: bool) -> str:
    raw = (
        len(form_encode(value)) <= budget
        and value != ''
        and not value.startswith(_DIGEST)
        and not (namespace and '/' in value)
    )
    return value if raw else _DIGEST + hashlib.sha256(value.encode('utf-8')).hexdigest()


def scope_of(namespace: str, workflow_id: str) -> str:
    """The stored scope of workflow `workflow_id` in `namespace`."""
    return f'{_part(namespace, _NAMESPACE_BYTES, True)}/{_part(workflow_id, _WORKFLOW_BYTES, False)}'


def current_scope() -> tuple[bool, str | None]:
    """Whether this code runs in a Temporal activity, and the scope of its workflow (`None` for a
    standalone activity)."""
    if not activity.in_activity():
        return False, None
    info = activity.info()
    workflow_id = getattr(info, 'workflow_id', None)
    namespace = getattr(info, 'namespace', None) or getattr(info, 'workflow_namespace', None)
    if not workflow_id or not namespace:
        return True, None
    return True, scope_of(namespace, workflow_id)


def writer_of(facts: str) -> str | None:
    """The scope a spill's facts (URL query form) record, or `None` if unknown."""
    values = parse_qs(facts, keep_blank_values=True).get('scope')
    if not values:
        return None
    namespace, slash, workflow_id = values[0].partition('/')
    valid = [
        len(p) == len(_DIGEST) + 64 and all(c in '0123456789abcdefABCDEF' for c in p[len(_DIGEST) :])
        if p.startswith(_DIGEST)
        else p != ''
        for p in (namespace, workflow_id)
    ]
    return values[0] if slash and all(valid) else None


def admits(read_scope: str, facts: str | None, caller: tuple[bool, str | None] | None = None) -> bool:
    """Whether a read by `caller` (default: here, `current_scope()`) may see a spill whose facts
    are `facts` (`None`: it keeps none)."""
    in_activity, mine = current_scope() if caller is None else caller
    if not in_activity or read_scope == 'any':
        return True
    writer = writer_of(facts or '')
    if mine is None or writer is None:
        return False
    if read_scope == 'namespace':
        return mine.partition('/')[0] == writer.partition('/')[0]
    return mine == writer


def facts_entry() -> str | None:
    """The `overspill` metadata (URL query form) a spill written here records: its writer's
    scope inside an activity of a workflow, else none."""
    _, mine = current_scope()
    return None if mine is None else f'scope={form_encode(mine)}'
