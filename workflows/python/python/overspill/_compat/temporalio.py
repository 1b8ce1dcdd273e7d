"""temporalio's private APIs Overspill relies on (supported: the package's `temporalio` range)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import activity

from overspill._compat import private

SUPPORTED = '>=1.34,<2'
"""The temporalio releases whose private APIs below Overspill is tested with."""


def activity_name(fn: Callable[..., Any]) -> str | None:
    """The activity name `@activity.defn` gave `fn` (`None` when `fn` is not an activity), as
    the integrations' own `activity_as_tool` read it (`activity._Definition.from_callable`)."""
    definition = private(activity, '_Definition', package='temporalio', supported=SUPPORTED).from_callable(fn)
    return definition.name if definition is not None else None


def check() -> None:
    """Touch every private API above: `UnsupportedVersion` names the installed version if one is gone."""
    definition = private(activity, '_Definition', package='temporalio', supported=SUPPORTED)
    private(definition, 'from_callable', package='temporalio', supported=SUPPORTED)
