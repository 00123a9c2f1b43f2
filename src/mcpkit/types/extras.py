"""Optional features and the extras that bring them.

The base install (``pip install mcpkit``) serves and calls MCP servers over stdio and HTTP.
Everything else sits behind an extra.  When a feature's library is missing, the user gets
one line naming the extra to install, never a ``ModuleNotFoundError`` traceback from deep
inside: :func:`require` raises :class:`MissingExtra` (a ``ModuleNotFoundError``, so code that
already guards an optional import keeps working) and the command line prints its message.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Final

#: extra -> the modules it provides, for messages and for the install test.
EXTRAS: Final[dict[str, tuple[str, ...]]] = {
    "fast": ("uvloop", "httptools"),
    "redis": ("redis",),
    "gateway": ("limits", "prometheus_client", "joserfc", "cel"),
    "host": ("starlette", "markdown_it", "keyring"),
    "auth": ("joserfc",),
    "authserver": ("joserfc",),
    "cli": ("rich", "watchfiles", "dotenv"),
    "serverless": ("mangum", "functions_framework"),
    "otel": ("opentelemetry", "prometheus_client"),
    "testing": ("pytest",),
    "openapi": ("yaml",),
    "search": ("rank_bm25",),
}


class MissingExtra(ModuleNotFoundError):
    """An optional feature was used without the extra that provides its library."""

    def __init__(self, feature: str, extra: str, module: str) -> None:
        self.feature = feature
        self.extra = extra
        super().__init__(
            f"{feature} needs the {extra!r} extra (missing module {module!r}): "
            f"pip install 'mcpkit[{extra}]'",
            name=module,
        )


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtra` naming ``extra``.

    Only a missing ``module`` itself is translated: an ImportError raised *inside* an
    installed library is a real bug and propagates unchanged.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        if exc.name is not None and exc.name.split(".")[0] == top:
            raise MissingExtra(feature, extra, top) from None
        raise


def available(module: str) -> bool:
    """Whether ``module`` can be imported (without importing it)."""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
