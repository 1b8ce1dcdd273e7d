"""Who reads or writes a spill: the workflow of the Temporal activity this code runs in.

A spill written for a workflow records its writer (`<namespace>/<workflow id>`); a read inside a
Temporal activity sees the spills its store's `read_scope` admits for the activity's workflow
(`workflow`: its own workflow id, continue-as-new runs included; `namespace`: its namespace;
`any`: every spill), and any other reads exactly as a missing one. Code outside any activity is
a program outside Temporal, like `overspill read`: it sees every spill and writes spills of no
workflow. The engine applies the rule; this module only says who is calling.
"""

from __future__ import annotations

from temporalio import activity

Caller = tuple[str, str | None] | None
"""`None` outside any activity; else the activity's namespace and workflow id (`None` for a
standalone activity, which belongs to no workflow)."""


def current_caller() -> Caller:
    """The caller of a store read or write made here."""
    if not activity.in_activity():
        return None
    info = activity.info()
    namespace = getattr(info, 'namespace', None) or getattr(info, 'workflow_namespace', None) or ''
    return namespace, getattr(info, 'workflow_id', None) or None
