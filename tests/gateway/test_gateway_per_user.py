"""Per-user upstream credentials: ``[upstream.auth] kind = "per_user"``.

Real processes and sockets: the local test authorization server (uvicorn in this process:
its subject is switched between sign-ins, as two people would sign in, and its request log
read), an upstream ``mcpkit serve ... --auth-issuer`` that answers with the verified token's
claims, a ``mcpkit gateway`` process (bearer front tokens for alice and bob, its state in a
real Redis) and mcpkit's client on both eras.  The connect URL the gateway elicits is
followed with an HTTP client: the gateway's page redirects to the authorization server,
which approves at once and redirects to the gateway's callback.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import gwkit
import httpx
import pytest
from anyio.streams.text import TextReceiveStream
from authkit import LocalAuthorizationServer

from mcpkit.client import Client, ElicitResult
from mcpkit.gateway.config import ConfigError, parse_config
from mcpkit.transports.client_base import ServerError
from support.npm import npm_installed
from support.servers import serve_app

IDENTITY = gwkit.IDENTITY
CLIENT_ID = "gw-connect"
TOKENS = {"alice": "alice-front-token", "bob": "bob-front-token"}
PEERS = Path(__file__).resolve().parent / "peers"
TS_CLIENT = "@modelcontextprotocol/client@2"
#: A sealed record: ``v1.<key id>.<base64url(nonce || ciphertext)>`` (protocol/sealing.py).
SEALED = re.compile(r"v1\.[0-9a-f]{12}\.[A-Za-z0-9_-]{40,}")


@pytest.fixture(scope="module")
def port() -> int:
    return gwkit.free_port()


@pytest.fixture(scope="module")
def authz(port: int) -> Iterator[LocalAuthorizationServer]:
    """The upstream's authorization server; it knows the gateway as a confidential client
    whose redirect URI is the gateway's connect callback."""
    with serve_app(lambda base: LocalAuthorizationServer(base)) as (_, app):
        callback = f"http://127.0.0.1:{port}/connect/ident/callback"
        app.add_client(CLIENT_ID, "gw-secret", redirect_uris=[callback])
        yield app


upstream = pytest.fixture(gwkit.identity_upstream, scope="module", name="upstream")


def gateway_config(
    upstream: gwkit.Proc, port: int, state: str, state_dir: Path, client_id: str = CLIENT_ID
) -> str:
    tokens = "\n".join(f'"{token}" = "{who}"' for who, token in TOKENS.items())
    return f"""
[gateway]
state = "{state}"
audit_log = "{state_dir}/audit.jsonl"

[auth]
mode = "bearer"
[auth.tokens]
{tokens}

[[upstream]]
name = "ident"
url = "{upstream.url}"
prefix = "id_"
[upstream.auth]
kind = "per_user"
client_id = "{client_id}"
client_secret = "gw-secret"
scopes = ["mcp"]
allow_loopback = true
public_url = "http://127.0.0.1:{port}"
"""


@pytest.fixture(scope="module")
def gateway(
    upstream: gwkit.Proc, port: int, redis_url: str, log_dir: Path, stack: list[gwkit.Proc]
) -> gwkit.Proc:
    config = gateway_config(upstream, port, redis_url, log_dir)
    gw = gwkit.start_gateway("gateway", log_dir, config, port=port)
    stack.append(gw)
    return gw


@pytest.fixture(scope="module")
def replica(
    gateway: gwkit.Proc, upstream: gwkit.Proc, port: int, redis_url: str, log_dir: Path
) -> Iterator[gwkit.Proc]:
    """A second gateway process on the same Redis and the same config (its public URL is
    the first gateway's: the authorization server sends every user back there)."""
    config = gateway_config(upstream, port, redis_url, log_dir)
    second = gwkit.start_gateway("replica", log_dir, config)
    yield second
    second.stop()


@pytest.fixture(scope="module")
def sqlite_pair(
    upstream: gwkit.Proc, authz: LocalAuthorizationServer, log_dir: Path
) -> Iterator[tuple[gwkit.Proc, gwkit.Proc]]:
    """Two more gateway processes on one SQLite file (the first one's URL public)."""
    port, client_id = gwkit.free_port(), "gw-connect-sqlite"
    callback = f"http://127.0.0.1:{port}/connect/ident/callback"
    authz.add_client(client_id, "gw-secret", redirect_uris=[callback])
    folder = log_dir / "sqlite"
    folder.mkdir()
    config = gateway_config(upstream, port, f"sqlite:///{folder / 'state.db'}", folder, client_id)
    first = gwkit.start_gateway("first", folder, config, port=port)
    second = gwkit.start_gateway("second", folder, config)
    yield first, second
    second.stop()
    first.stop()


@pytest.fixture(params=["redis", "sqlite"])
def replicas(request: pytest.FixtureRequest) -> tuple[gwkit.Proc, gwkit.Proc]:
    """Two gateway processes on one state backend: the public one, the other one."""
    if request.param == "redis":
        return request.getfixturevalue("gateway"), request.getfixturevalue("replica")
    pair: tuple[gwkit.Proc, gwkit.Proc] = request.getfixturevalue("sqlite_pair")
    return pair


class Connector:
    """A user who follows the connect URL the gateway elicits (signing in at the
    authorization server as ``subject``) and then accepts the elicitation."""

    def __init__(self, authz: LocalAuthorizationServer, subject: str) -> None:
        self.authz = authz
        self.subject = subject
        self.asked: list[dict[str, Any]] = []
        self.pages: list[httpx.Response] = []

    async def follow(self, url: str, **headers: str) -> httpx.Response:
        self.authz.subject = self.subject
        async with httpx.AsyncClient(follow_redirects=True, trust_env=False) as http:
            page = await http.get(url, headers=headers, timeout=30)
        self.pages.append(page)
        return page

    async def __call__(self, params: dict[str, Any]) -> ElicitResult:
        self.asked.append(params)
        page = await self.follow(params["url"])
        assert page.status_code == 200, page.text
        return {"action": "accept"}


def front(gateway: gwkit.Proc, who: str, connector: Connector | None, era: str) -> Client:
    return Client(
        gateway.url,
        url_elicitation=connector.__call__ if connector is not None else None,
        headers={"Authorization": f"Bearer {TOKENS[who]}"},
        era=era,  # type: ignore[arg-type]
    )


async def identity(client: Client) -> dict[str, Any]:
    result = await client.call_tool("id_token_info", {})
    assert not result.is_error, result
    info: dict[str, Any] = result.data or {}
    return info


def grants(authz: LocalAuthorizationServer, grant_type: str) -> list[dict[str, str]]:
    return [p for _, path, p in authz.log if path == "/token" and p.get("grant_type") == grant_type]


def connections(gateway: gwkit.Proc, who: str) -> list[dict[str, Any]]:
    reply = httpx.get(gateway.base + "/connect", headers={"Authorization": f"Bearer {TOKENS[who]}"})
    assert reply.status_code == 200, reply.text
    found: list[dict[str, Any]] = reply.json()["connections"]
    return found


def revoke(gateway: gwkit.Proc, who: str, upstream: str = "ident") -> httpx.Response:
    return httpx.delete(
        f"{gateway.base}/connect/{upstream}", headers={"Authorization": f"Bearer {TOKENS[who]}"}
    )


@pytest.mark.anyio
async def test_two_callers_each_connect_their_own_account(
    gateway: gwkit.Proc, authz: LocalAuthorizationServer
) -> None:
    """A modern caller without an account is asked (an input-required round carrying a
    URL elicitation of the gateway's connect page); after signing in, the retried round
    reaches the upstream with that caller's own token, and the next calls too."""
    alice, bob = Connector(authz, "alice@upstream"), Connector(authz, "bob@upstream")
    codes_before = len(grants(authz, "authorization_code"))
    async with (
        front(gateway, "alice", alice, "modern") as a,
        front(gateway, "bob", bob, "modern") as b,
    ):
        assert (await identity(a))["sub"] == "alice@upstream"
        assert (await identity(b))["sub"] == "bob@upstream"
        assert (await identity(a))["sub"] == "alice@upstream"  # stored: no new sign-in
    assert len(alice.asked) == len(bob.asked) == 1
    (asked,) = alice.asked
    assert asked["mode"] == "url"
    assert asked["url"].startswith(f"{gateway.base}/connect/ident?link=")
    assert len(grants(authz, "authorization_code")) == codes_before + 2
    (code,) = grants(authz, "authorization_code")[-1:]
    assert code["code_verifier"]  # PKCE
    assert code["resource"] == gateway_upstream_url(gateway)
    listed = connections(gateway, "alice")
    assert [c["upstream"] for c in listed] == ["ident"]
    assert "access_token" not in str(listed) and "refreshable" in listed[0]


def gateway_upstream_url(gateway: gwkit.Proc) -> str:
    text = (gateway.log.parent / "gateway.toml").read_text()
    return text.split('url = "', 1)[1].split('"', 1)[0]


@pytest.mark.anyio
async def test_a_connect_link_is_bound_to_its_caller_and_used_once(
    gateway: gwkit.Proc, authz: LocalAuthorizationServer
) -> None:
    """Bob replaying alice's link with his own credentials is refused (and declining the
    elicitation is a Forbidden answer); the link works once for alice, not twice."""
    assert revoke(gateway, "alice").status_code in (200, 404)
    links: list[str] = []

    async def keep(params: dict[str, Any]) -> ElicitResult:
        links.append(params["url"])
        return {"action": "decline"}

    async with Client(
        gateway.url,
        url_elicitation=keep,
        headers={"Authorization": f"Bearer {TOKENS['alice']}"},
        era="modern",
    ) as a:
        with pytest.raises(ServerError, match="not connected") as declined:
            await a.call_tool("id_token_info", {})
        assert declined.value.code == -31003
    (link,) = links[:1]
    bob = Connector(authz, "bob@upstream")
    replayed = await bob.follow(link, Authorization=f"Bearer {TOKENS['bob']}")
    assert replayed.status_code == 403, replayed.text
    assert "another caller" in replayed.text
    alice = Connector(authz, "alice@upstream")
    assert (await alice.follow(link)).status_code == 200
    again = await alice.follow(link)
    assert again.status_code == 409, again.text
    assert connections(gateway, "bob")[0]["upstream"] == "ident"  # bob's own is untouched
    lines = [json.loads(x) for x in (gateway.log.parent / "audit.jsonl").read_text().splitlines()]
    connects = [(x["principal"], x["outcome"]) for x in lines if x["method"] == "connect"]
    assert ("bob", "connect_refused:403") in connects and ("alice", "connected") in connects
    assert link.split("link=")[1] not in (gateway.log.parent / "audit.jsonl").read_text()


@pytest.mark.anyio
async def test_legacy_callers_get_the_url_elicitation_required_error(
    gateway: gwkit.Proc, authz: LocalAuthorizationServer
) -> None:
    """2025-11-25: -32042 with the spec's data; after connecting, the retried call
    succeeds."""
    assert revoke(gateway, "bob").status_code in (200, 404)
    async with front(gateway, "bob", None, "legacy") as b:
        with pytest.raises(ServerError) as caught:
            await b.call_tool("id_token_info", {})
        error: Any = caught.value
        assert error.code == -32042, error
        (elicitation,) = error.data["elicitations"]
        assert elicitation["mode"] == "url" and elicitation["elicitationId"]
        assert elicitation["url"].startswith(f"{gateway.base}/connect/ident?link=")
        assert elicitation["message"]
        page = await Connector(authz, "bob-legacy@upstream").follow(elicitation["url"])
        assert page.status_code == 200, page.text
        assert (await identity(b))["sub"] == "bob-legacy@upstream"


@pytest.mark.anyio
async def test_a_legacy_session_is_told_when_its_caller_finished_connecting(
    gateway: gwkit.Proc, authz: LocalAuthorizationServer
) -> None:
    """2025-11-25 with a URL-elicitation callback: the client opens the page of the -32042
    error and waits for ``notifications/elicitation/complete`` with its elicitationId;
    the gateway sends it on the caller's GET stream when the sign-in at the connect page
    finished (outside any request), and the client's retry reaches the upstream."""
    assert revoke(gateway, "bob").status_code in (200, 404)
    bob = Connector(authz, "bob-completed@upstream")
    async with front(gateway, "bob", bob, "legacy") as b:
        b.url_completions.timeout = 30  # (a failure here, not a hang)
        assert (await identity(b))["sub"] == "bob-completed@upstream"
    (asked,) = bob.asked
    assert asked["mode"] == "url" and asked["elicitationId"]


@pytest.mark.anyio
async def test_a_sign_in_started_on_one_replica_finishes_on_another(
    replicas: tuple[gwkit.Proc, gwkit.Proc], authz: LocalAuthorizationServer
) -> None:
    """The connect page opened on the second gateway starts the sign-in there; the
    authorization server sends the user back to the first gateway (the public URL),
    which finishes it from the state backend; the retried round on the second gateway
    carries the caller's own account."""
    gateway, replica = replicas
    assert revoke(gateway, "alice").status_code in (200, 404)
    alice = Connector(authz, "alice-replicas@upstream")

    async def on_the_replica(params: dict[str, Any]) -> ElicitResult:
        alice.asked.append(params)
        page = await alice.follow(params["url"].replace(gateway.base, replica.base))
        assert page.status_code == 200, page.text
        return {"action": "accept"}

    async with Client(
        replica.url,
        url_elicitation=on_the_replica,
        headers={"Authorization": f"Bearer {TOKENS['alice']}"},
        era="modern",
    ) as a:
        assert (await identity(a))["sub"] == "alice-replicas@upstream"
    (page,) = alice.pages
    assert str(page.history[0].url).startswith(f"{replica.base}/connect/ident?link=")
    assert str(page.url).startswith(f"{gateway.base}/connect/ident/callback")


@pytest.mark.anyio
async def test_a_legacy_session_on_one_replica_is_told_by_another(
    replicas: tuple[gwkit.Proc, gwkit.Proc], authz: LocalAuthorizationServer
) -> None:
    """A 2025-11-25 session (and its GET stream) on the second gateway; its caller signs
    in on the first (the link's public URL): the completion reaches the session through
    the backend's publish/subscribe and the client's retry on the second gateway
    succeeds."""
    gateway, replica = replicas
    assert revoke(gateway, "bob").status_code in (200, 404)
    bob = Connector(authz, "bob-replicas@upstream")
    async with front(replica, "bob", bob, "legacy") as b:
        b.url_completions.timeout = 30  # (a failure here, not a hang)
        assert (await identity(b))["sub"] == "bob-replicas@upstream"
    (asked,) = bob.asked
    assert asked["url"].startswith(f"{gateway.base}/connect/ident?link=")


@pytest.mark.anyio
async def test_stale_tokens_are_refreshed(
    gateway: gwkit.Proc, authz: LocalAuthorizationServer
) -> None:
    revoke(gateway, "alice")
    authz.token_ttl_s = 5  # inside the refresh margin: stale at once
    try:
        alice = Connector(authz, "alice@upstream")
        refreshes = len(grants(authz, "refresh_token"))
        async with front(gateway, "alice", alice, "modern") as a:
            first = await identity(a)
            second = await identity(a)
        assert first["sub"] == second["sub"] == "alice@upstream"
        assert first["jti"] != second["jti"]
        assert len(grants(authz, "refresh_token")) > refreshes
        assert len(alice.asked) == 1  # refreshed, not asked again
    finally:
        authz.token_ttl_s = 3600


@pytest.mark.anyio
async def test_revoked_or_refused_tokens_start_a_new_connect_round(
    gateway: gwkit.Proc, authz: LocalAuthorizationServer, upstream: gwkit.Proc
) -> None:
    alice = Connector(authz, "alice@upstream")
    async with front(gateway, "alice", alice, "modern") as a:
        await identity(a)
        asked = len(alice.asked)
        reply = revoke(gateway, "alice")
        assert reply.status_code == 200 and reply.json() == {"revoked": ["ident"]}
        assert connections(gateway, "alice") == []
        await identity(a)
        assert len(alice.asked) == asked + 1  # revoked: asked again
        # The upstream now refuses the stored token (its authorization server changed
        # keys and forgot every grant): not refreshable, so a new round.
        from joserfc.jwk import ECKey

        authz.key = ECKey.generate_key("P-256", private=True, parameters={"kid": "as-key-2"})
        authz.refresh_tokens.clear()
        upstream.restart()  # (reads the new keys)
        gwkit.wait_healthy_gateway(gateway)  # (reconnected in its own name)
        alice.subject = "alice-again@upstream"
        assert (await identity(a))["sub"] == "alice-again@upstream"
        assert len(alice.asked) == asked + 2


async def ts_sdk_caller(
    gateway: gwkit.Proc, who: str, era: str, user: Connector
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One call of ``id_token_info`` by the TypeScript SDK v2 client as ``who``: each time
    it prints a connect URL, ``user`` opens it (signing in at the authorization server)
    and tells it so.  Its final answer and the connect requests it printed."""
    root = npm_installed("mcpkit-ts-sdk-client", TS_CLIENT)
    # ESM resolves packages from the script's folder upwards: run a copy inside the cache.
    script = root / "ts_per_user.mjs"
    script.write_bytes((PEERS / "ts_per_user.mjs").read_bytes())
    argv = ["node", str(script), gateway.url, TOKENS[who], era, "id_token_info"]
    asked: list[dict[str, Any]] = []
    async with await anyio.open_process(argv, cwd=root) as node:
        assert node.stdout is not None and node.stdin is not None
        lines = TextReceiveStream(node.stdout)
        text = ""
        with anyio.fail_after(120):
            async for chunk in lines:
                text += chunk
                while "\n" in text:
                    line, text = text.split("\n", 1)
                    message = json.loads(line)
                    if "connect" not in message:
                        assert (await node.wait()) == 0
                        return message, asked
                    asked.append(message)
                    page = await user.follow(message["connect"])
                    assert page.status_code == 200, page.text
                    await node.stdin.send(b"done\n")
    assert node.stderr is not None
    raise AssertionError(f"the TypeScript client gave no answer: {await node.stderr.receive()!r}")


@pytest.mark.parametrize(
    ("era", "how"), [("legacy", "error -32042"), ("modern", "elicitation/create")]
)
@pytest.mark.anyio
async def test_typescript_sdk_callers_each_connect_their_own_account(
    gateway: gwkit.Proc, authz: LocalAuthorizationServer, era: str, how: str
) -> None:
    """The TypeScript SDK v2 client on each era: alice and bob, neither connected, are
    each sent to their own connect page (the -32042 error on 2025-11-25, a URL-mode
    elicitation inside an input-required round on 2026-07-28); after signing in, the
    retried call reaches the upstream with that caller's own account."""
    for who in TOKENS:
        assert revoke(gateway, who).status_code in (200, 404)
    seen = {}
    for who in TOKENS:
        answer, asked = await ts_sdk_caller(
            gateway, who, era, Connector(authz, f"{who}-ts-{era}@upstream")
        )
        assert [a["how"] for a in asked] == [how]
        assert asked[0]["connect"].startswith(f"{gateway.base}/connect/ident?link=")
        assert answer["protocolVersion"] == {"legacy": gwkit.LEGACY, "modern": gwkit.MODERN}[era]
        seen[who] = answer["result"]["structuredContent"]["sub"]
    assert seen == {"alice": f"alice-ts-{era}@upstream", "bob": f"bob-ts-{era}@upstream"}


def test_the_token_store_at_rest_is_sealed(gateway: gwkit.Proc, redis_url: str) -> None:
    """No access or refresh token (JWT, or the authorization server's refresh value) in
    any Redis key or value: each record is one sealed envelope and nothing beside it, and
    no key names the caller."""
    records = redis_values(redis_url, "*gateway-connection:*")
    assert records, "no connection records"
    for key, value in records.items():
        # (Not a search for "eyJ" in the value: random base64url holds it once in a few
        # hundred records.)
        sealed = json.loads(value)
        assert SEALED.fullmatch(sealed), value
        assert "alice" not in key and "bob" not in key


def redis_values(redis_url: str, pattern: str) -> dict[str, bytes]:
    out = subprocess.run(
        ["redis-cli", "-u", redis_url, "--scan", "--pattern", pattern],
        capture_output=True,
        text=True,
        check=True,
    )
    return {
        key: subprocess.run(
            ["redis-cli", "-u", redis_url, "--raw", "GET", key], capture_output=True, check=True
        ).stdout
        for key in out.stdout.split()
    }


@pytest.mark.anyio
async def test_a_sign_in_in_flight_is_sealed_at_rest(gateway: gwkit.Proc, redis_url: str) -> None:
    """Between the redirect to the authorization server and its callback, the sign-in
    is one Redis record that names neither its caller nor its ``state``."""
    links: list[str] = []

    async def keep(params: dict[str, Any]) -> ElicitResult:
        links.append(params["url"])
        return {"action": "decline"}

    assert revoke(gateway, "alice").status_code in (200, 404)
    async with Client(
        gateway.url,
        url_elicitation=keep,
        headers={"Authorization": f"Bearer {TOKENS['alice']}"},
        era="modern",
    ) as a:
        with pytest.raises(ServerError, match="not connected"):
            await a.call_tool("id_token_info", {})
    before = redis_values(redis_url, "*gateway-connect-flow:*")
    started = httpx.get(links[0], follow_redirects=False)
    assert started.status_code == 302, started.text
    state = dict(httpx.URL(started.headers["location"]).params)["state"]
    records = redis_values(redis_url, "*gateway-connect-flow:*")
    (key,) = set(records) - set(before)
    assert state not in key and state.encode() not in records[key]
    assert b"alice" not in records[key] and b"verifier" not in records[key]


@pytest.mark.parametrize(
    ("auth", "complaint"),
    [
        ({"kind": "per_user", "client_id": "c"}, "public_url is required"),
        ({"kind": "per_user", "client_id": "c", "public_url": "ftp://x"}, "public_url"),
        (
            {
                "kind": "client_credentials",
                "client_id": "c",
                "client_secret": "s",
                "public_url": "http://gw",
            },
            "for kind = 'per_user' only",
        ),
        (
            {"kind": "per_user", "client_id": "c", "public_url": "http://gw", "colour": "x"},
            "colour",
        ),
    ],
)
def test_per_user_config_mistakes_are_named(auth: dict[str, Any], complaint: str) -> None:
    from mcpkit.gateway.schema import check

    data = {
        "auth": {"mode": "bearer", "tokens": {"t": "alice"}},
        "upstream": [{"name": "a", "url": "http://x/mcp", "auth": auth}],
    }
    with pytest.raises(ConfigError, match=complaint):
        check(data)
        parse_config(data)


def test_per_user_needs_callers_and_a_modern_upstream() -> None:
    auth = {"kind": "per_user", "client_id": "c", "public_url": "http://gw"}
    with pytest.raises(ConfigError, match="needs \\[auth\\]"):
        parse_config({"upstream": [{"name": "a", "url": "http://x/mcp", "auth": auth}]})
    with pytest.raises(ConfigError, match="2026-07-28 upstream"):
        parse_config(
            {
                "auth": {"mode": "bearer", "tokens": {"t": "alice"}},
                "upstream": [{"name": "a", "url": "http://x/mcp", "era": "legacy", "auth": auth}],
            }
        )
    config = parse_config(
        {
            "auth": {"mode": "bearer", "tokens": {"t": "alice"}},
            "upstream": [{"name": "a", "url": "http://x/mcp", "auth": auth}],
        }
    )
    oauth = config.upstreams[0].oauth
    assert oauth is not None and oauth.kind == "per_user" and oauth.public_url == "http://gw"


def test_cli_lists_and_revokes_a_principals_connections(gateway: gwkit.Proc) -> None:
    toml = gateway.log.parent / "gateway.toml"
    run = [sys.executable, "-m", "mcpkit", "gateway", "connections", str(toml)]
    listed = subprocess.run([*run, "--principal", "bob"], capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    assert "ident" in listed.stdout
    revoked = subprocess.run(
        [*run, "--principal", "bob", "--revoke", "ident"], capture_output=True, text=True
    )
    assert revoked.returncode == 0, revoked.stderr
    assert connections(gateway, "bob") == []


@pytest.mark.anyio
async def test_a_sqlite_store_holds_no_token_and_is_bound_to_the_principal(tmp_path: Path) -> None:
    """The same records in a SQLite state file: no token in the file's bytes; a record
    moved under another principal's key does not open."""
    from mcpkit.auth.client import TokenSet
    from mcpkit.gateway.connect import Connections, Sealing
    from mcpkit.protocol.sealing import Keyring
    from mcpkit.state.base import open_backend

    backend = open_backend(f"sqlite:///{tmp_path / 'state.db'}")
    connections = Connections(Sealing(Keyring.from_secrets(["k"]), backend))
    tokens = TokenSet("access-SECRET-value", refresh_token="refresh-SECRET-value", scopes=["mcp"])
    await connections.put("alice", "ident", tokens)
    found = await connections.get("alice", "ident")
    assert found is not None and found.tokens.access_token == "access-SECRET-value"
    raw = await backend.get(Connections.key("alice", "ident"))
    assert raw is not None
    await backend.set(Connections.key("mallory", "ident"), raw)  # a copied record
    assert await connections.get("mallory", "ident") is None
    await backend.aclose()
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert b"SECRET" not in data and b"alice" not in data


def test_the_grant_is_held_to_the_pinned_authorization_server() -> None:
    """The pins of the client-credentials kind, on the authorization code grant: an
    upstream naming another server, or metadata with another token endpoint, gets
    nothing."""
    from mcpkit.auth.client import UntrustedAuthorizationServer
    from mcpkit.auth.client.metadata import parse_as_metadata
    from mcpkit.gateway.config import UpstreamOAuth
    from mcpkit.gateway.connect import ParkedRedirect, PinnedCodeGrant

    pinned = "https://as.example.com"
    oauth = UpstreamOAuth(
        "c", kind="per_user", issuer=pinned, token_endpoint=f"{pinned}/token", public_url="x"
    )
    grant = PinnedCodeGrant(ParkedRedirect("https://gw/connect/a/callback"), oauth)
    assert grant.choose_issuer(["https://evil.example.com", pinned]) == pinned
    with pytest.raises(UntrustedAuthorizationServer):
        grant.choose_issuer(["https://evil.example.com"])
    elsewhere = parse_as_metadata(
        {"issuer": pinned, "token_endpoint": f"{pinned}/other", "authorization_endpoint": "x"},
        pinned,
    )
    with pytest.raises(UntrustedAuthorizationServer):
        grant.check_destination(elsewhere)
