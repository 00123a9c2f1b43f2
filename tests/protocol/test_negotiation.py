"""Era detection and version negotiation: protocol/negotiation (and types/versions)."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit.protocol.negotiation import (
    check_initialize_params,
    client_has,
    modern_version_of,
    negotiate_legacy_version,
    parse_modern_meta,
)
from mcpkit.types import jsonrpc
from mcpkit.types.errors import McpError
from mcpkit.types.versions import (
    LATEST_LEGACY,
    LEGACY_VERSIONS,
    MODERN_VERSIONS,
    era_of,
)
from support.schema import MODERN, validate_outgoing

VERSION = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"
LEVEL = "io.modelcontextprotocol/logLevel"


def meta(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {VERSION: "2026-07-28", CAPS: {"sampling": {}}}
    for key, value in overrides.items():
        if value is None:
            base.pop(key, None)
        else:
            base[key] = value
    return {"_meta": base}


def expect(code: int, params: Any, **kw: Any) -> McpError:
    with pytest.raises(McpError) as info:
        parse_modern_meta(params, **kw)
    assert info.value.code == code
    assert info.value.http_status == 400
    # whatever we raise must be a schema-valid error response on the wire
    validate_outgoing(MODERN, jsonrpc.error(1, info.value))
    return info.value


def test_valid_meta_is_parsed() -> None:
    params = meta(**{INFO: {"name": "c", "version": "1"}, LEVEL: "warning", "progressToken": "p1"})
    parsed = parse_modern_meta(params)
    assert parsed.era == "modern"
    assert parsed.protocol_version == "2026-07-28"
    assert parsed.client_capabilities == {"sampling": {}}
    assert parsed.client_info == {"name": "c", "version": "1"}
    assert parsed.log_level == "warning"
    assert parsed.progress_token == "p1"
    assert parsed.raw is params["_meta"]


def test_optional_fields_default() -> None:
    parsed = parse_modern_meta(meta(**{INFO: "not-an-object", "progressToken": True}))
    assert parsed.client_info is None
    assert parsed.progress_token is None  # booleans are not tokens
    assert parsed.log_level is None
    assert parse_modern_meta(meta(progressToken=7)).progress_token == 7


@pytest.mark.parametrize(
    "params",
    [
        None,
        {},
        {"_meta": None},
        {"_meta": []},
        {"_meta": "2026-07-28"},
        meta(**{VERSION: None}),
        meta(**{VERSION: 20260728}),
        meta(**{CAPS: None}),
        meta(**{CAPS: []}),
        meta(**{CAPS: "all"}),
        meta(**{LEVEL: "verbose"}),
        meta(**{LEVEL: "WARNING"}),
    ],
)
def test_missing_or_invalid_meta_is_invalid_params(params: Any) -> None:
    expect(-32602, params)


@pytest.mark.parametrize("version", ["1900-01-01", "2025-11-25", "2024-11-05", "DRAFT-2026-v1", ""])
def test_unsupported_version_is_32022_with_supported_and_requested(version: str) -> None:
    err = expect(-32022, meta(**{VERSION: version}))
    assert err.data == {"supported": list(MODERN_VERSIONS), "requested": version}
    assert err.message == "Unsupported protocol version"


def test_supported_versions_can_be_narrowed_or_skipped() -> None:
    err = expect(-32022, meta(), supported=("2027-01-01",))
    assert err.data == {"supported": ["2027-01-01"], "requested": "2026-07-28"}
    # HTTP compares the header first and checks the version itself
    assert parse_modern_meta(meta(**{VERSION: "1900-01-01"}), supported=None).protocol_version


def test_missing_keys_are_reported_before_the_version() -> None:
    expect(-32602, meta(**{VERSION: "1900-01-01", CAPS: None}))


def test_modern_version_of() -> None:
    assert modern_version_of(None) is None
    assert modern_version_of({}) is None
    assert modern_version_of({"_meta": "x"}) is None
    assert modern_version_of({"_meta": {"progressToken": 1}}) is None
    assert modern_version_of(meta()) == "2026-07-28"


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_legacy_version_that_we_serve_is_echoed(version: str) -> None:
    assert negotiate_legacy_version(version) == version


@pytest.mark.parametrize("requested", ["2026-07-28", "2099-01-01", "1.0.0", "", None, 20251125])
def test_other_requests_get_the_newest_legacy_version(requested: Any) -> None:
    # a modern version asked in initialize is negotiated down (mcp-toolbox#3841)
    assert negotiate_legacy_version(requested) == LATEST_LEGACY == "2025-11-25"


def test_negotiation_with_a_narrower_server() -> None:
    supported = ("2025-06-18", "2025-03-26")
    assert negotiate_legacy_version("2025-11-25", supported) == "2025-06-18"
    assert negotiate_legacy_version("2025-03-26", supported) == "2025-03-26"


def test_check_initialize_params() -> None:
    assert check_initialize_params(
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "c"},
        }
    ) == ("2025-11-25", {"roots": {}}, {"name": "c"})
    assert check_initialize_params({"protocolVersion": "x"}) == ("x", {}, {})
    assert check_initialize_params({"protocolVersion": "x", "clientInfo": 3}) == ("x", {}, {})
    for bad in ({}, {"protocolVersion": 1}, {"protocolVersion": "x", "capabilities": []}):
        with pytest.raises(McpError) as info:
            check_initialize_params(bad)
        assert info.value.code == -32602


@pytest.mark.parametrize(
    ("caps", "path", "expected"),
    [
        ({"elicitation": {}}, "elicitation", True),
        ({"elicitation": {}}, "elicitation.form", True),  # {} means form mode
        ({"elicitation": {}}, "elicitation.url", False),
        ({"elicitation": {"url": {}}}, "elicitation.form", False),
        ({"elicitation": {"url": {}}}, "elicitation.url", True),
        ({"elicitation": {"form": {}, "url": {}}}, "elicitation.form", True),
        ({"elicitation": {"form": {}}}, "elicitation.url", False),
        ({"elicitation": None}, "elicitation.form", False),
        ({}, "elicitation", False),
        ({}, "elicitation.form", False),
        ({"sampling": {}}, "sampling", True),
        ({"sampling": {}}, "sampling.tools", False),
        ({"sampling": {"tools": {}}}, "sampling.tools", True),
        ({"sampling": None}, "sampling", False),
        ({"sampling": False}, "sampling", False),
        ({"roots": {}}, "roots", True),
        ({"roots": {}}, "sampling", False),
        ({"extensions": {"io.modelcontextprotocol/ui": {}}}, "extensions", True),
    ],
)
def test_client_has(caps: dict[str, Any], path: str, expected: bool) -> None:
    assert client_has(caps, path) is expected


def test_version_tables() -> None:
    assert MODERN_VERSIONS[0] == "2026-07-28"
    assert LEGACY_VERSIONS[0] == "2025-11-25"
    assert era_of("2026-07-28") == "modern"
    assert era_of("2025-06-18") == "legacy"
    assert era_of("2027-01-01") == "modern"  # unknown and newer: modern
    assert era_of("2025-01-01") == "legacy"
