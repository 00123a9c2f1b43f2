"""Era detection and version negotiation.

Rules (2026-07-28 versioning, with the 2025-11-25 handshake kept for old clients):

* A request whose ``params._meta`` names a protocol version is *modern*: stateless, checked
  on its own.  The version must be one we serve, else ``-32022`` with ``data.supported`` and
  ``data.requested`` (``supported`` lists modern versions only: a legacy version cannot be
  used in ``_meta``).  ``clientCapabilities`` must be present, else ``-32602``.
* ``initialize`` is *legacy*: we answer with the client's version when we serve it and with
  our newest legacy version otherwise (the client then decides).  A client that asks
  ``initialize`` for a modern version is negotiated down to the newest legacy one.
* Anything else without a modern ``_meta`` belongs to a legacy session (or is an error when
  there is none; the transport decides).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..types.errors import invalid_params, object_param, unsupported_version
from ..types.versions import (
    LATEST_LEGACY,
    LEGACY_VERSIONS,
    LOG_LEVEL_RANK,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    MODERN_VERSIONS,
    Era,
)


@dataclass(slots=True)
class RequestMeta:
    """What a request says about its sender: era, version, capabilities, logging, progress.

    (parse_modern_meta builds it with positional arguments: keep the field order.)"""

    era: Era
    protocol_version: str
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    client_info: dict[str, Any] | None = None
    log_level: str | None = None
    progress_token: str | int | None = None
    raw: dict[str, Any] = field(default_factory=dict)


def modern_version_of(params: dict[str, Any] | None) -> Any:
    """The ``_meta`` protocol version of a request, or None when it has none."""
    if not params:
        return None
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return None
    return meta.get(META_PROTOCOL_VERSION)


def parse_modern_meta(
    params: dict[str, Any] | None,
    supported: tuple[str, ...] | None = MODERN_VERSIONS,
) -> RequestMeta:
    """Check the per-request ``_meta`` of a modern request and return its contents.

    Order matters and follows the conformance suite: missing keys (-32602) first, then
    (when ``supported`` is given) the version (-32022).  HTTP compares the header with
    ``_meta`` in between, so it passes ``supported=None`` and calls
    :func:`check_modern_version` itself.
    """
    meta = params.get("_meta") if params else None
    if not isinstance(meta, dict):
        raise invalid_params("Missing required _meta with protocol version and client capabilities")
    version = meta.get(META_PROTOCOL_VERSION)
    if not isinstance(version, str):
        raise invalid_params(f"Missing or invalid _meta[{META_PROTOCOL_VERSION!r}]")
    caps = meta.get(META_CLIENT_CAPABILITIES)
    if not isinstance(caps, dict):
        raise invalid_params(f"Missing or invalid _meta[{META_CLIENT_CAPABILITIES!r}]")
    if supported is not None:
        check_modern_version(version, supported)
    info = meta.get(META_CLIENT_INFO)
    level = meta.get(META_LOG_LEVEL)
    if level is not None and level not in LOG_LEVEL_RANK:
        raise invalid_params(f"Invalid log level: {level!r}")
    token = meta.get("progressToken")
    # Positional: a class called with keywords costs twice as much on CPython 3.11 (a
    # kwargs dict per call), and this runs once per modern request.
    return RequestMeta(
        "modern",  # era
        version,  # protocol_version
        caps,  # client_capabilities
        info if isinstance(info, dict) else None,  # client_info
        level,  # log_level
        None if token is None or not _valid_token(token) else token,  # progress_token
        meta,  # raw
    )


def check_modern_version(version: str, supported: tuple[str, ...]) -> None:
    if version not in supported:
        raise unsupported_version(version, list(supported))


def legacy_progress_token(params: dict[str, Any] | None) -> str | int | None:
    meta = params.get("_meta") if params else None
    if isinstance(meta, dict):
        token = meta.get("progressToken")
        if _valid_token(token):
            return token
    return None


def _valid_token(token: object) -> bool:
    return (isinstance(token, (str, int))) and not isinstance(token, bool)


def negotiate_legacy_version(
    requested: object, supported: tuple[str, ...] = LEGACY_VERSIONS
) -> str:
    """The version an ``initialize`` response carries for a requested version."""
    if isinstance(requested, str) and requested in supported:
        return requested
    return supported[0] if supported else LATEST_LEGACY


def check_initialize_params(params: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Validate ``initialize`` params; return (requested version, capabilities, clientInfo)."""
    version = params.get("protocolVersion")
    if not isinstance(version, str):
        raise invalid_params("initialize requires a string protocolVersion")
    caps = object_param(params, "capabilities", "initialize capabilities must be an object")
    info = params.get("clientInfo")
    if not isinstance(info, dict):
        info = {}
    return version, caps, info


def client_has(capabilities: dict[str, Any], path: str) -> bool:
    """True when the dotted capability ``path`` (e.g. ``"elicitation.url"``) is declared.

    ``elicitation: {}`` declares form mode (the spec's rule for the empty object).
    """
    parts = path.split(".")
    node: Any = capabilities
    for index, part in enumerate(parts):
        if not isinstance(node, dict) or part not in node:
            if parts[0] == "elicitation" and index == 1 and part == "form":
                return isinstance(node, dict) and not node
            return False
        node = node[part]
    return node is not None and node is not False
