"""Protocol revisions and the `_meta` keys that carry per-request protocol data."""

from __future__ import annotations

from typing import Final, Literal

Era = Literal["modern", "legacy"]
#: What a client may ask for: one era, or ``"auto"`` (probe, then fall back).
EraChoice = Literal["auto", "modern", "legacy"]

LATEST_MODERN: Final = "2026-07-28"
LATEST_LEGACY: Final = "2025-11-25"

#: Revisions served statelessly with per-request `_meta` (newest first).
MODERN_VERSIONS: Final[tuple[str, ...]] = ("2026-07-28",)
#: Revisions negotiated with the `initialize` handshake (newest first).
LEGACY_VERSIONS: Final[tuple[str, ...]] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
UI_EXTENSION: Final = "io.modelcontextprotocol/ui"

LOG_LEVELS: Final[tuple[str, ...]] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
LOG_LEVEL_RANK: Final[dict[str, int]] = {name: rank for rank, name in enumerate(LOG_LEVELS)}


def era_of(version: str) -> Era:
    """Classify a version string; unknown strings sort by date, newer-than-legacy is modern."""
    if version in MODERN_VERSIONS:
        return "modern"
    if version in LEGACY_VERSIONS:
        return "legacy"
    return "modern" if version > LATEST_LEGACY else "legacy"
