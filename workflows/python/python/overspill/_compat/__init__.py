"""Every private API of a framework or of temporalio that Overspill relies on, one module per
framework, so that an upgrade that moves one breaks in one place, with a message naming the
installed version (`UnsupportedVersion`), instead of deep inside an agent run.

Each module's `check()` touches all of its private APIs; `tests/python/test_core.py` calls every
one, so the suite fails on an unsupported version with that message.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
from typing import Any


class UnsupportedVersion(ImportError):
    """An installed package lacks a private API Overspill relies on: the message names the package,
    its version, the API and the versions Overspill supports."""


def private(owner: Any, attribute: str, *, package: str, supported: str) -> Any:
    """`owner.attribute`, a private API of `package`, or `UnsupportedVersion` naming the installed
    version when it is gone."""
    try:
        return getattr(owner, attribute)
    except AttributeError:
        raise UnsupportedVersion(
            f'{package} {installed(package)} has no {getattr(owner, "__name__", owner)}.{attribute}, '
            f'which Overspill relies on: Overspill supports {package}{supported}'
        ) from None


def installed(package: str) -> str:
    """The installed version of distribution `package` (`unknown` when it has no metadata)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return 'unknown'


def fields(owner: Any, names: tuple[str, ...], *, package: str, supported: str) -> None:
    """Check that the dataclass `owner`, a private API of `package`, still has the fields `names`:
    `UnsupportedVersion` naming the installed version when one is gone."""
    have = {f.name for f in dataclasses.fields(owner)} if dataclasses.is_dataclass(owner) else set()
    for name in names:
        if name not in have:
            raise UnsupportedVersion(
                f'{package} {installed(package)} has no field {getattr(owner, "__name__", owner)}.{name}, '
                f'which Overspill relies on: Overspill supports {package}{supported}'
            )
