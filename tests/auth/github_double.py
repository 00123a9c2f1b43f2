"""A GitHub-style identity provider for the tests: OAuth 2.0 without OpenID Connect.

It signs in one fixed user without asking (the authorization endpoint answers with a
redirect at once), checks PKCE and the client's secret at the token endpoint, answers a
bad code the way GitHub does (HTTP 200 with an ``error`` member), and serves the user API
(``/user`` without an address, ``/user/emails``, ``/user/orgs``) to its access tokens."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode

CLIENT_ID = "gh-client"
CLIENT_SECRET = "gh-secret"
USER = {"id": 4242, "login": "octocat", "email": None}
EMAILS = [
    {"email": "old@example.com", "primary": False, "verified": True},
    {"email": "octocat@example.com", "primary": True, "verified": True},
]
ORGS = [{"login": "mcpkit-devs"}, {"login": "octo-org"}]


class GitHubDouble:
    """The ASGI app; ``codes`` and ``tokens`` are what it issued, ``refused`` what it refused."""

    def __init__(self) -> None:
        self.codes: dict[str, dict[str, str]] = {}
        self.tokens: set[str] = set()
        self.refused: list[str] = []
        #: How each token request sent the secret: "post" or "basic".
        self.secret_by: list[str] = []
        #: Who signs in next, and their organizations (a test may switch users).
        self.user: dict[str, Any] = dict(USER)
        self.orgs: list[dict[str, str]] = list(ORGS)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path == "/login/oauth/authorize":
            await self._authorize(scope, send)
        elif path == "/login/oauth/access_token":
            await self._token(scope, receive, send)
        elif path in ("/user", "/user/emails", "/user/orgs"):
            await self._api(scope, path, send)
        else:
            await _answer(send, 404, {"message": "Not Found"})

    async def _authorize(self, scope: dict[str, Any], send: Any) -> None:
        params = dict(parse_qsl(scope["query_string"].decode()))
        if params.get("client_id") != CLIENT_ID:
            await _answer(send, 404, {"message": "unknown client"})
            return
        code = secrets.token_urlsafe(12)
        self.codes[code] = params
        target = f"{params['redirect_uri']}?{urlencode({'code': code, 'state': params['state']})}"
        await send(
            {
                "type": "http.response.start",
                "status": 302,
                "headers": [(b"location", target.encode())],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    async def _token(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        form = dict(parse_qsl(body.decode()))
        basic = dict(scope["headers"]).get(b"authorization", b"").decode()
        if basic.startswith("Basic "):
            user, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
            form.update(client_id=unquote(user), client_secret=unquote(secret))
            self.secret_by.append("basic")
        else:
            self.secret_by.append("post")
        asked = self.codes.pop(form.get("code", ""), None)
        verifier = form.get("code_verifier", "")
        digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
        if (
            asked is None
            or form.get("client_secret") != CLIENT_SECRET
            or digest.decode() != asked.get("code_challenge")
            or form.get("redirect_uri") != asked.get("redirect_uri")
        ):
            self.refused.append(form.get("code", ""))
            await _answer(send, 200, {"error": "bad_verification_code"})  # GitHub's 200
            return
        token = f"gho_{secrets.token_urlsafe(16)}"
        self.tokens.add(token)
        await _answer(
            send, 200, {"access_token": token, "token_type": "bearer", "scope": asked["scope"]}
        )

    async def _api(self, scope: dict[str, Any], path: str, send: Any) -> None:
        auth = dict(scope["headers"]).get(b"authorization", b"").decode()
        if auth.removeprefix("Bearer ") not in self.tokens:
            await _answer(send, 401, {"message": "Bad credentials"})
            return
        answer: object = {"/user": self.user, "/user/emails": EMAILS, "/user/orgs": self.orgs}[path]
        await _answer(send, 200, answer)


async def _answer(send: Any, status: int, data: object) -> None:
    body = json.dumps(data).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
