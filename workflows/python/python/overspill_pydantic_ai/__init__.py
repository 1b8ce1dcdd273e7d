"""The former name of `overspill.pydantic_ai`, kept so that existing imports keep working.

The distribution is now `overspill` (one wheel with the native engine); its pydantic-ai
integration is `overspill.pydantic_ai`. Import from there: this module re-exports the same names
and warns once.
"""

import warnings

from overspill.pydantic_ai import *  # noqa: F403
from overspill.pydantic_ai import __all__ as __all__

warnings.warn(
    '`overspill_pydantic_ai` is now `overspill.pydantic_ai` (distribution `overspill`); import from there.',
    DeprecationWarning,
    stacklevel=2,
)
