"""The spec's own examples (tests/spec/2026-07-28/examples/<Definition>/*.json) through our codec.

Each example is a message or fragment the spec authors consider valid, so it is the cheapest
corpus of real wire shapes: the codec must round-trip every one of them without changing a
value, and every one must validate against the definition its folder is named after (which
also proves the schema helper accepts what the spec calls valid).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from support.schema import MODERN, SPEC_DIR, definitions, validate_definition

EXAMPLES_DIR = SPEC_DIR / MODERN / "examples"
EXAMPLES = sorted(EXAMPLES_DIR.rglob("*.json"))


def _example_id(path: Path) -> str:
    folder = path.parent.name
    name = path.relative_to(EXAMPLES_DIR).with_suffix("").as_posix()
    return name if folder in definitions(MODERN) else f"{name}[folder-not-a-$defs-name]"


IDS = [_example_id(p) for p in EXAMPLES]


@pytest.fixture(scope="module")
def codec() -> ModuleType:
    """mcpkit's JSON codec; a missing module is a failure, not a skip."""
    import mcpkit.types.codec as module

    return module


def test_examples_are_present() -> None:
    # Guards against a broken copy turning every parametrized test into zero tests.
    assert len(EXAMPLES) >= 100, f"only {len(EXAMPLES)} examples under {EXAMPLES_DIR}"


@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_example_round_trips(path: Path, codec: ModuleType) -> None:
    raw = path.read_bytes()
    expected = json.loads(raw)
    decoded = codec.decode(raw)
    assert decoded == expected
    assert codec.decode(raw.decode("utf-8")) == expected  # str input too
    encoded = codec.encode(decoded)
    assert isinstance(encoded, bytes)
    assert codec.decode(encoded) == expected
    assert json.loads(encoded.decode("utf-8")) == expected
    compact = json.dumps(expected, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    assert len(encoded) <= len(compact), f"not compact: {encoded[:200]!r}"


@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_example_matches_its_definition(path: Path) -> None:
    definition = path.parent.name
    if definition not in definitions(MODERN):
        pytest.skip(f"folder {definition!r} is not a $defs name in the {MODERN} schema")
    validate_definition(MODERN, definition, json.loads(path.read_bytes()))


@pytest.mark.parametrize("bad", [b"{", b"", b'{"a": }', "[1, 2", b"\xff\xfe"])
def test_decode_rejects_invalid_json(bad: bytes | str, codec: ModuleType) -> None:
    with pytest.raises(codec.DecodeError):
        codec.decode(bad)
