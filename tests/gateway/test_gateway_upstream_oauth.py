"""Credentials to an upstream: ``[upstream.oauth]`` (client credentials through
``mcpkit.auth.client``) against an upstream that is itself an OAuth protected resource.

Real processes and sockets: the local test authorization server (uvicorn in this process,
so its request log can be read), ``mcpkit serve ... --auth-issuer`` as the upstream, and a
``mcpkit gateway`` process whose own front uses static bearer tokens.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import gwkit
import httpx
import pytest

sys.path.insert(0, str(gwkit.ROOT / "tests" / "auth"))
from authkit import LocalAuthorizationServer

from mcpkit.auth.client.grants import ClientCredentialsGrant
from mcpkit.gateway.config import ConfigError, parse_config
from support.servers import serve_app


@pytest.fixture(scope="module")
def authz() -> Iterator[LocalAuthorizationServer]:
    with serve_app(lambda base: LocalAuthorizationServer(base)) as (_, app):
        app.add_client("gateway", "gw-secret")
        yield app


@pytest.fixture(scope="module")
def upstream(authz: LocalAuthorizationServer, log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    flags = ("--auth-issuer", authz.issuer, "--auth-scope", "mcp")
    p = gwkit.start_upstream("sec", log_dir, gwkit.ECHO, *flags)
    stack.append(p)
    return p


@pytest.fixture(scope="module")
def gateway(upstream: gwkit.Proc, log_dir: Path, stack: list[gwkit.Proc]) -> gwkit.Proc:
    config = f"""
[gateway]
state = "memory:"

[auth]
mode = "bearer"
[auth.tokens]
"front-token" = "alice"

[[upstream]]
name = "sec"
url = "{upstream.url}"
prefix = "sec_"
[upstream.oauth]
client_id = "gateway"
client_secret = "${{GW_UPSTREAM_SECRET}}"
scopes = ["mcp"]
allow_loopback = true                 # the test authorization server is on 127.0.0.1
"""
    gw = gwkit.start_gateway("gateway", log_dir, config, GW_UPSTREAM_SECRET="gw-secret")
    stack.append(gw)
    return gw


def token_requests(authz: LocalAuthorizationServer) -> list[dict[str, str]]:
    return [params for _, path, params in authz.log if path == "/token"]


def test_the_upstream_refuses_callers_without_a_token(upstream: gwkit.Proc) -> None:
    reply = gwkit.call(upstream.url, "tools/list", token="front-token")
    assert reply.status == 401  # the front token means nothing there


def test_the_gateway_calls_the_upstream_with_its_own_token(
    gateway: gwkit.Proc, upstream: gwkit.Proc, authz: LocalAuthorizationServer
) -> None:
    for _ in range(5):
        reply = gwkit.call(gateway.url, "tools/call", {"name": "sec_whoami"}, token="front-token")
        assert reply.text() == "sec"
    grants = token_requests(authz)
    assert len(grants) == 1, grants  # obtained once, cached for every later call
    (grant,) = grants
    assert grant["grant_type"] == "client_credentials"
    assert grant["resource"] == upstream.url  # RFC 8707: a token for that upstream only
    assert grant["scope"] == "mcp"
    assert httpx.get(gateway.base + "/readyz").status_code == 200


@pytest.mark.parametrize(
    ("oauth", "complaint"),
    [
        ({"client_secret": "x"}, "client_id is required"),
        ({"client_id": "a"}, "exactly one of client_secret or private_key_file"),
        ({"client_id": "a", "client_secret": "x", "private_key_file": "k"}, "exactly one"),
    ],
)
def test_oauth_mistakes_are_named(oauth: dict[str, str], complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint):
        parse_config({"upstream": [{"name": "a", "url": "http://x/mcp", "oauth": oauth}]})
    with pytest.raises(ConfigError, match="for URL upstreams"):
        parse_config({"upstream": [{"name": "a", "command": "x", "oauth": {"client_id": "a"}}]})


def test_private_key_jwt_keys_are_read_at_load(tmp_path: Path) -> None:
    """PEM or JWK files (relative to the config's folder); the key signs a client
    assertion that its public half verifies; a bad file is a config error naming it."""
    from joserfc import jwt
    from joserfc.jwk import ECKey

    from mcpkit.auth.client.clientauth import sign_client_assertion
    from mcpkit.gateway.credentials import upstream_auth

    key = ECKey.generate_key("P-256", private=True, parameters={"kid": "gw"})
    (tmp_path / "key.pem").write_bytes(key.as_pem(private=True))
    (tmp_path / "key.jwk").write_text(json.dumps(key.as_dict(private=True)))
    (tmp_path / "bad.pem").write_text("not a key")
    for name in ("key.pem", "key.jwk"):
        data = {
            "upstream": [
                {
                    "name": "a",
                    "url": "https://up.example/mcp",
                    "oauth": {"client_id": "gw", "private_key_file": name},
                }
            ]
        }
        oauth = parse_config(data, tmp_path).upstreams[0].oauth
        assert oauth is not None and oauth.private_key_file == str(tmp_path / name)
        grant = upstream_auth(oauth, "https://up.example/mcp").grant
        assert isinstance(grant, ClientCredentialsGrant) and grant.private_key is not None
        assertion = sign_client_assertion(
            grant.private_key, client_id="gw", audience="https://as.example", alg=grant.signing_alg
        )
        claims = jwt.decode(assertion, ECKey.import_key(key.as_dict(private=False))).claims
        assert claims["iss"] == claims["sub"] == "gw"
    bad = {
        "upstream": [
            {
                "name": "a",
                "url": "https://up.example/mcp",
                "oauth": {"client_id": "gw", "private_key_file": "bad.pem"},
            }
        ]
    }
    with pytest.raises(ConfigError, match=r"private_key_file .*bad\.pem"):
        parse_config(bad, tmp_path)
