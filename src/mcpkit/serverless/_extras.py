"""One-line errors for a missing ``[serverless]`` extra.

mangum and functions-framework are optional: ``import mcpkit`` and even
``import mcpkit.serverless`` work without them; only the adapter that needs one asks for it.
"""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, adapter: str) -> ModuleType:
    """Import ``module`` or say, in one line, which extra provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".", 1)[0]
        raise ModuleNotFoundError(
            f"mcpkit.serverless.{adapter} needs {top}: pip install 'mcpkit[serverless]'",
            name=top,
        ) from exc
