"""Helpers for the auth tests: the local authorization server of examples/auth and the stack of
an issuer and a protected MCP server (apps are served with ``support.servers.serve_app``)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import anyio
import httpx

from support.mcp import modern_headers, modern_request

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "auth"))

from local_as import LocalAuthorizationServer  # noqa: E402

__all__ = [
    "REDIRECT",
    "Browser",
    "LocalAuthorizationServer",
    "PersonAtTheConsentPage",
    "Stack",
    "authorize_url",
    "call_whoami",
    "consent_fields",
    "pkce_pair",
    "register",
]


@dataclass
class Stack:
    issuer: str
    authz: LocalAuthorizationServer
    mcp_url: str
    app: Any


# --------------------------------------------------------------------------- authorization server


class Browser:
    """A headless user agent for sign-ins through ``mcpkit.auth.server``: it follows
    redirects by hand (cookies kept), approves (or denies) the consent page by posting its
    form, and stops at the client's redirect URI.  As a ``RedirectHandler`` it lets the
    mcpkit client sign in without a person."""

    def __init__(
        self, redirect_uri: str = "http://127.0.0.1:53682/callback", *, approve: bool = True
    ) -> None:
        self._redirect_uri = redirect_uri
        self.approve = approve
        self.http = httpx.AsyncClient(follow_redirects=False, trust_env=False, timeout=20.0)
        #: Every URL visited, in order (for asserting where a sign-in went).
        self.visited: list[str] = []
        #: The last consent page seen (its HTML).
        self.consent_page: str | None = None

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    async def authorize(self, url: str) -> dict[str, str]:
        """Drive the sign-in from ``url`` to the client's redirect URI; its query parameters."""
        response = await self.http.get(url)
        for _ in range(20):
            self.visited.append(str(response.request.url))
            location = response.headers.get("location")
            if response.status_code in (302, 303) and location:
                target = str(response.request.url.join(location))
                if target.split("?")[0] == self._redirect_uri.split("?")[0] or target.startswith(
                    self._redirect_uri.split("?")[0]
                ):
                    return dict(parse_qsl(urlsplit(target).query))
                response = await self.http.get(target)
                continue
            if response.status_code == 200 and "name='csrf'" in response.text:
                self.consent_page = response.text
                response = await self.http.post(
                    str(response.request.url.join(consent_action(response.text))),
                    data={
                        **consent_fields(response.text),
                        "decision": "approve" if self.approve else "deny",
                    },
                )
                continue
            where = f"{response.request.url}: HTTP {response.status_code}"
            raise AssertionError(f"sign-in stopped at {where} {response.text[:300]}")
        raise AssertionError("sign-in redirected too many times")

    async def aclose(self) -> None:
        await self.http.aclose()


class PersonAtTheConsentPage:
    """The doctor's redirect handler (it walks synchronously): a headless :class:`Browser`
    per sign-in, approving the consent page as the person of ``--interactive`` would."""

    redirect_uri = "http://127.0.0.1:53682/callback"

    async def authorize(self, url: str) -> dict[str, str]:
        browser = Browser(self.redirect_uri)
        try:
            return await browser.authorize(url)
        finally:
            await browser.aclose()

    def authorize_sync(self, url: str) -> dict[str, str]:
        return anyio.run(self.authorize, url)


REDIRECT = "http://127.0.0.1:53682/callback"


async def register(http: httpx.AsyncClient, base: str, **extra: Any) -> dict[str, Any]:
    body = {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", **extra}
    response = await http.post(f"{base}/register", json=body)
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()
    return data


def authorize_url(base: str, client_id: str, challenge: str | None, **extra: str) -> str:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": "st-1",
        "resource": f"{base}/mcp",
        "scope": "mcp",
    }
    if challenge is not None:
        params.update(code_challenge=challenge, code_challenge_method="S256")
    params.update(extra)
    return f"{base}/authorize?{urlencode(params)}"


async def call_whoami(http: httpx.AsyncClient, mcp_url: str, access_token: str) -> httpx.Response:
    message = modern_request(1, "tools/call", {"name": "whoami", "arguments": {}})
    headers = modern_headers(message)
    if access_token:
        headers["Authorization"] = f"Bearer {access_token}"
    return await http.post(mcp_url, content=json.dumps(message), headers=headers)


def consent_fields(page: str) -> dict[str, str]:
    """The hidden inputs of a consent form."""
    return dict(re.findall(r"<input type='hidden' name='([^']+)' value='([^']*)'>", page))


def consent_action(page: str) -> str:
    found = re.search(r"<form method='post' action='([^']+)'>", page)
    assert found, "no consent form on the page"
    return found.group(1)


def pkce_pair() -> tuple[str, str]:
    """A PKCE ``(code_verifier, S256 code_challenge)`` pair, computed apart from mcpkit."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
