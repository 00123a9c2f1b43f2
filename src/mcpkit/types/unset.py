"""The one "not given" marker, for parameters where ``None`` already means something.

``timeout=None`` waits forever, so "the caller said nothing" needs its own value.  A
one-member enum rather than a bare ``object()``: mypy narrows ``x is UNSET`` away, so the
parameter keeps its real type (``float | None | Unset``) instead of ``Any``.
"""

from __future__ import annotations

import enum
from typing import Final


class Unset(enum.Enum):
    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = Unset.UNSET
