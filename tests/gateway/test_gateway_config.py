"""The gateway's TOML: the shipped example and the gateway guide's parse, mistakes are named."""

from __future__ import annotations

import re
from pathlib import Path

import gwkit
import pytest

from mcpkit.gateway.config import ConfigError, load_config, parse_config, parse_rate


def test_example_config_parses() -> None:
    config = load_config(gwkit.ROOT / "examples" / "gateway.toml")
    assert [u.name for u in config.upstreams] == ["demo", "jobs"]
    assert config.auth.mode == "bearer"
    assert parse_rate(config.rate_limits[1].limit, "rate_limit[1]") == (5, 600)


def test_guide_config_parses(tmp_path: Path) -> None:
    section = (gwkit.ROOT / "docs" / "guides" / "gateway.md").read_text()
    match = re.search(r"```toml\n(.*?)```", section, re.S)
    assert match is not None
    path = tmp_path / "gateway.toml"
    path.write_text(match.group(1))
    config = load_config(path)
    assert config.auth.mode == "jwt"
    assert [u.prefix for u in config.upstreams] == ["fs_", "jobs_"]


@pytest.mark.parametrize(
    ("data", "complaint"),
    [
        ({}, "at least one"),
        ({"upstream": [{"name": "a"}]}, "exactly one of url or command"),
        ({"upstream": [{"name": "a", "url": "http://x", "health_interval": -1}]}, "seconds"),
        ({"upstream": [{"name": "a", "url": "http://x"}], "auth": {"mode": "jwt"}}, "issuer"),
        (
            {
                "upstream": [{"name": "a", "url": "http://x"}],
                "auth": {"mode": "jwt", "issuer": "https://as", "audience": "not-a-url"},
            },
            "needs resource",
        ),
        (
            {"upstream": [{"name": "a", "url": "http://x"}], "gateway": {"ready": ["b"]}},
            "unknown upstreams",
        ),
        (
            {"upstream": [{"name": "a", "url": "http://x"}], "result_caps": {"a_*": 0}},
            "result_caps.a_\\*.max_result_bytes",
        ),
        (
            {"upstream": [{"name": "a", "url": "http://x"}], "rate_limit": [{"limit": "lots"}]},
            "10/minute",
        ),
    ],
)
def test_mistakes_are_named(data: dict[str, object], complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint):
        parse_config(data)


def test_several_upstreams_may_share_the_empty_prefix() -> None:
    # (issue #20: allowed; a name offered by two of them stops the start instead, see
    # test_gateway_naming.py)
    config = parse_config(
        {
            "upstream": [
                {"name": "a", "url": "http://x", "prefix": ""},
                {"name": "b", "url": "http://y", "prefix": ""},
            ]
        }
    )
    assert [u.prefix for u in config.upstreams] == ["", ""]


def test_an_unset_variable_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPKIT_TEST_UNSET_TOKEN", raising=False)
    monkeypatch.setenv("MCPKIT_TEST_HOST", "127.0.0.1")
    data = {
        "upstream": [
            {
                "name": "a",
                "url": "http://${MCPKIT_TEST_HOST}:9/mcp",
                "headers": {"Authorization": "Bearer ${MCPKIT_TEST_UNSET_TOKEN}"},
            }
        ]
    }
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    message = str(caught.value)
    assert "MCPKIT_TEST_UNSET_TOKEN" in message and "upstream[0].headers.Authorization" in message
    monkeypatch.setenv("MCPKIT_TEST_UNSET_TOKEN", "s3cret")
    upstream = parse_config(data).upstreams[0]
    assert upstream.url == "http://127.0.0.1:9/mcp"
    assert upstream.headers == {"Authorization": "Bearer s3cret"}


def test_result_caps_match_the_first_glob() -> None:
    config = parse_config(
        {
            "upstream": [{"name": "a", "url": "http://x"}],
            "gateway": {"max_result_bytes": 1000},
            "result_caps": {"report": 10, "rep*": 20},
        }
    )
    assert config.result_cap("report") == 10
    assert config.result_cap("reply") == 20
    assert config.result_cap("other") == 1000


def test_every_value_is_expanded_once_but_commands_split_first(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MCPKIT_TEST_DIR", str(tmp_path))
    monkeypatch.setenv("MCPKIT_TEST_FILE", "my server.py")  # a space: still one argument
    monkeypatch.setenv("MCPKIT_TEST_DOLLAR", "$HOME")  # expanded once: stays "$HOME"
    config = parse_config(
        {
            "gateway": {"audit_log": "${MCPKIT_TEST_DIR}/audit.jsonl"},
            "upstream": [
                {
                    "name": "a",
                    "command": "python ${MCPKIT_TEST_FILE} --x ${MCPKIT_TEST_DOLLAR}",
                    "prefix": "${MCPKIT_TEST_PREFIX:-p_}",
                }
            ],
            "rule": [{"effect": "deny", "when": "name.startsWith('$X')"}],
        }
    )
    assert config.audit_log == f"{tmp_path}/audit.jsonl"
    upstream = config.upstreams[0]
    assert upstream.command[1:] == ("my server.py", "--x", "$HOME")
    assert upstream.prefix == "p_"
    assert config.rules[0].when == "name.startsWith('$X')"
