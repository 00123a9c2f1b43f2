"""``[[upstream]] methods`` and ``extensions``: the custom methods the gateway forwards to
an upstream (the wire never lists them), checked strictly at load."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_gateway_config import ONE_UPSTREAM, refusal

from mcpkit.gateway.config import load_config


def _load(tmp_path: Path, text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    path = tmp_path / "gateway.toml"
    path.write_text(text)
    upstream = load_config(path).upstreams[0]
    return upstream.methods, upstream.extensions


def test_methods_and_extensions_are_read(tmp_path: Path) -> None:
    text = ONE_UPSTREAM + 'methods = ["vendor/thing", "com.example/x/y"]\n'
    text += 'extensions = ["com.example/notes"]\n'
    assert _load(tmp_path, text) == (("vendor/thing", "com.example/x/y"), ("com.example/notes",))


def test_an_upstream_without_them_forwards_no_custom_method(tmp_path: Path) -> None:
    assert _load(tmp_path, ONE_UPSTREAM) == ((), ())


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ('methods = ["tools/call"]', "upstream[0].methods: 'tools/call' is a method of MCP"),
        ('methods = ["rpc.discover"]', "upstream[0].methods: 'rpc.discover'"),
        ('methods = ["has space"]', "upstream[0].methods: method name 'has space'"),
        ("methods = [1]", "upstream[0].methods"),
        ('extensions = ["notes"]', "upstream[0].extensions: extension identifier 'notes'"),
        ('extension = ["com.example/notes"]', "unknown key upstream[0].extension"),
    ],
)
def test_a_bad_entry_is_refused_naming_it(tmp_path: Path, line: str, named: str) -> None:
    assert named in refusal(tmp_path, ONE_UPSTREAM + line + "\n")
