"""Conformance fixture for the client ``auth/*`` scenarios.

``run_auth_scenario(scenario, server_url, context)`` builds the right
:mod:`mcpkit.auth.client` ``httpx.Auth`` for the scenario and then makes a few plain MCP
requests through an ``httpx.AsyncClient`` carrying it (the first request triggers
discovery, registration, authorization and the token request; later ones exercise step-up
and authorization-server migration).  The wire is the one the harness speaks:
``MCP_CONFORMANCE_PROTOCOL_VERSION`` 2026-07-28 -> stateless requests with ``_meta`` and
standard headers; anything else -> the 2025-11-25 initialize handshake.

Runnable on its own, the way the harness calls a client::

    python tests/conformance/auth_client.py <server-url>
    # env: MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_CONTEXT, MCP_CONFORMANCE_PROTOCOL_VERSION

The harness's mock authorization endpoint redirects at once, so the "browser" here is
:class:`~mcpkit.auth.client.HeadlessRedirectHandler`.  Everything runs on localhost, so the
SSRF policy allows loopback (and nothing else).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from mcpkit.auth.client import (
    ClientCredentialsAuth,
    EnterpriseAuth,
    HeadlessRedirectHandler,
    JwtBearerAuth,
    OAuthAuth,
    OAuthClientAuth,
    OAuthError,
    UrlPolicy,
)
from mcpkit.types.versions import EraChoice

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
CLIENT_INFO = {"name": "mcpkit-conformance-auth", "version": "0.1.0"}
SCENARIOS_WITHOUT_MCP_CALLS: frozenset[str] = frozenset()


def build_auth(scenario: str, context: dict[str, Any], policy: UrlPolicy) -> OAuthAuth:
    name = scenario.removeprefix("auth/")
    if name == "client-credentials-jwt":
        return ClientCredentialsAuth(
            context["client_id"],
            private_key=context["private_key_pem"],
            signing_alg=context.get("signing_algorithm"),
            policy=policy,
        )
    if name == "client-credentials-basic":
        return ClientCredentialsAuth(
            context["client_id"], client_secret=context["client_secret"], policy=policy
        )
    if name == "wif-jwt-bearer":
        return JwtBearerAuth(
            context["valid_jwt"], client_id=context.get("client_id"), policy=policy
        )
    if name in ("enterprise-managed-authorization", "cross-app-access-complete-flow"):
        return EnterpriseAuth(
            id_token=context["idp_id_token"],
            idp_token_endpoint=context["idp_token_endpoint"],
            client_id=context["client_id"],
            client_secret=context.get("client_secret"),
            idp_client_id=context.get("idp_client_id"),
            policy=policy,
        )
    handler = HeadlessRedirectHandler("http://localhost:3333/callback", policy=policy)
    if name == "pre-registration":
        return OAuthClientAuth(
            redirect_handler=handler,
            client_id=context["client_id"],
            client_secret=context.get("client_secret"),
            client_issuer=context.get("issuer"),
            policy=policy,
        )
    return OAuthClientAuth(
        redirect_handler=handler,
        client_name="mcpkit conformance client",
        client_metadata_url=CLIENT_METADATA_URL,
        policy=policy,
        legacy_fallback=name.startswith("2025-03-26"),
    )


class McpCalls:
    """Just enough MCP over Streamable HTTP for the auth scenarios (both wires)."""

    def __init__(self, http: httpx.AsyncClient, url: str, version: str) -> None:
        self.http = http
        self.url = url
        self.version = version
        self.modern = version == MODERN
        self.session_id: str | None = None
        self.ids = itertools.count(1)

    def _headers(self, method: str, params: dict[str, Any]) -> dict[str, str]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if self.modern:
            headers["MCP-Protocol-Version"] = self.version
            headers["Mcp-Method"] = method
            if method in ("tools/call", "prompts/get") and isinstance(params.get("name"), str):
                headers["Mcp-Name"] = params["name"]
        else:
            if method != "initialize":
                headers["MCP-Protocol-Version"] = self.version
            if self.session_id is not None:
                headers["Mcp-Session-Id"] = self.session_id
        return headers

    def _params(self, params: dict[str, Any] | None) -> dict[str, Any]:
        out = dict(params or {})
        if self.modern:
            out["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": self.version,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
            }
        return out

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        full = self._params(params)
        request_id = next(self.ids)
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": full}
        response = await self.http.post(self.url, json=body, headers=self._headers(method, full))
        if response.status_code >= 400:
            raise RuntimeError(f"{method}: HTTP {response.status_code}: {response.text[:300]}")
        session = response.headers.get("mcp-session-id")
        if session:
            self.session_id = session
        message = _find_response(response, request_id)
        if "error" in message:
            raise RuntimeError(f"{method}: {message['error']}")
        return message.get("result")

    async def notify(self, method: str) -> None:
        body = {"jsonrpc": "2.0", "method": method}
        response = await self.http.post(self.url, json=body, headers=self._headers(method, {}))
        if response.status_code >= 400:
            raise RuntimeError(f"{method}: HTTP {response.status_code}")

    async def run(self) -> None:
        if self.modern:
            await self.request("server/discover")
        else:
            await self.request(
                "initialize",
                {"protocolVersion": self.version, "capabilities": {}, "clientInfo": CLIENT_INFO},
            )
            await self.notify("notifications/initialized")
        listed = await self.request("tools/list")
        tools = listed.get("tools", []) if isinstance(listed, dict) else []
        if tools:
            await self.request("tools/call", {"name": tools[0]["name"], "arguments": {}})


def _find_response(response: httpx.Response, request_id: int) -> dict[str, Any]:
    kind = response.headers.get("content-type", "")
    if "text/event-stream" in kind:
        for line in response.text.splitlines():
            if line.startswith("data:"):
                try:
                    message = json.loads(line[5:].strip())
                except ValueError:
                    continue
                if isinstance(message, dict) and message.get("id") == request_id:
                    return message
        raise RuntimeError("no response in the SSE stream")
    message = response.json()
    if not isinstance(message, dict):
        raise RuntimeError("not a JSON-RPC response")
    return message


async def run_with_mcpkit_client(server_url: str, auth: OAuthAuth, version: str) -> None:
    """The same calls through :class:`mcpkit.client.Client` with ``auth=``."""
    from mcpkit.client import Client

    era: EraChoice = "modern" if version == MODERN else "legacy"
    async with Client(server_url, auth=auth, era=era) as client:
        tools = await client.list_tools()
        if tools:
            await client.call_tool(tools[0]["name"], {})


async def run_auth_scenario(scenario: str, server_url: str, context: dict[str, Any]) -> None:
    """Perform one ``auth/*`` scenario against the harness's mock server at ``server_url``.

    ``MCPKIT_AUTH_FIXTURE=httpx`` makes the MCP calls with plain httpx instead of the
    mcpkit client (both carry the same ``httpx.Auth``)."""
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or LEGACY
    policy = UrlPolicy.local_development()
    auth = build_auth(scenario, context, policy)
    if os.environ.get("MCPKIT_AUTH_FIXTURE", "client") != "httpx":
        await run_with_mcpkit_client(server_url, auth, version)
        return
    async with httpx.AsyncClient(auth=auth, timeout=30.0, follow_redirects=False) as http:
        await McpCalls(http, server_url, version).run()


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: auth_client.py <server-url>", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if not scenario.startswith("auth/"):
        print(f"auth_client.py handles auth/* scenarios only, not {scenario!r}", file=sys.stderr)
        return 2
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    try:
        asyncio.run(run_auth_scenario(scenario, argv[-1], context))
    except (OAuthError, httpx.HTTPError, RuntimeError) as exc:
        print(f"{scenario}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
