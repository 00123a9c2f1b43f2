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


# ---------------------------------------------------------------------------- strictness

ONE_UPSTREAM = '[[upstream]]\nname = "a"\nurl = "http://127.0.0.1:9/mcp"\n'


def refusal(tmp_path: Path, text: str) -> str:
    """The error loading ``text`` as a gateway file gives (it must not load)."""
    path = tmp_path / "gateway.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return str(caught.value)


def test_a_misspelt_rule_key_is_refused_naming_it_and_the_key_meant(tmp_path: Path) -> None:
    # Ignored, the allow rule below would have no principals: everyone may call.
    text = 'default_effect = "deny"\n' + ONE_UPSTREAM
    text += '[[rule]]\neffect = "allow"\nprincipal = ["alice"]\n'
    message = refusal(tmp_path, text)
    assert "rule[0].principal" in message and "did you mean 'principals'" in message


@pytest.mark.parametrize(
    ("text", "named", "meant"),
    [
        (ONE_UPSTREAM + '[gatway]\nname = "x"\n', "unknown table [gatway]", "gateway"),
        (ONE_UPSTREAM + 'prefx = "a_"\n', "unknown key upstream[0].prefx", "prefix"),
        (ONE_UPSTREAM + '[[rate_limit]]\nlimit = "5/minute"\nmethod = ["x"]\n', "", "methods"),
        (
            ONE_UPSTREAM + '[auth]\nmode = "bearer"\n[auth.tokens]\n"t0ken" = { principal = "a", '
            'group = ["x"] }\n',
            "auth.tokens.t0ke....group",
            "groups",
        ),
    ],
    ids=["table-gatway", "upstream-prefx", "rate-limit-method", "token-group"],
)
def test_unknown_keys_and_tables_are_refused_with_a_hint(
    tmp_path: Path, text: str, named: str, meant: str
) -> None:
    message = refusal(tmp_path, text)
    assert named in message and f"did you mean {meant!r}" in message, message


def test_a_top_level_key_below_a_table_header_is_named_with_its_fix(tmp_path: Path) -> None:
    # TOML reads `default_effect` after [auth.tokens] as a token for principal "deny".
    text = ONE_UPSTREAM + '[auth]\nmode = "bearer"\n[auth.tokens]\n"t0ken" = "alice"\n'
    text += 'default_effect = "deny"\n'
    message = refusal(tmp_path, text)
    assert "auth.tokens.default_effect" in message and "top-level key" in message
    assert "move it above the first [table]" in message
    assert "t0ken" not in message  # a token is a credential: never in an error


def test_a_key_of_the_upstream_below_its_auth_table_is_named(tmp_path: Path) -> None:
    text = ONE_UPSTREAM + '[upstream.auth]\nkind = "client_credentials"\nclient_id = "gw"\n'
    text += 'client_secret = "s"\nprefix = "a_"\n'
    message = refusal(tmp_path, text)
    assert "upstream[0].auth.prefix" in message and "move it up into [upstream[0]]" in message


def test_every_shipped_gateway_file_loads_strictly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_CLIENT_ID", "gh-client")  # (gateway-authserver.toml)
    monkeypatch.setenv("GITHUB_CLIENT_SECRET", "gh-secret")
    files = sorted((gwkit.ROOT / "examples").glob("*.toml"))
    assert len(files) >= 4
    for file in files:
        load_config(file)  # (raises, naming the file's key, on anything unknown)


def test_every_config_block_of_the_gateway_guide_loads_strictly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRM_EXCHANGE_SECRET", "s3cret")
    monkeypatch.setenv("GITHUB_CLIENT_ID", "gh-client")
    monkeypatch.setenv("GITHUB_CLIENT_SECRET", "gh-secret")
    guide = (gwkit.ROOT / "docs" / "guides" / "gateway.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", guide, re.S)
    assert len(blocks) >= 2
    for index, block in enumerate(blocks):
        path = tmp_path / f"block{index}.toml"
        path.write_text(block)
        load_config(path)


def test_rate_limits_say_what_to_do_when_the_state_store_is_down() -> None:
    rules = [
        {"limit": "5/minute"},
        {"limit": "5/minute", "on_state_error": "allow"},
    ]
    config = parse_config({"upstream": [{"name": "a", "url": "http://x"}], "rate_limit": rules})
    assert [getattr(r, "on_state_error", None) for r in config.rate_limits] == ["deny", "allow"]
    with pytest.raises(ConfigError, match=r"rate_limit\[0\].on_state_error"):
        parse_config(
            {
                "upstream": [{"name": "a", "url": "http://x"}],
                "rate_limit": [{"limit": "5/minute", "on_state_error": "open"}],
            }
        )
