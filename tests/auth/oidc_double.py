"""A small OpenID Provider for the ID token tests: discovery, JWKS, an authorization
endpoint that signs one user in at once, and a token endpoint whose ID token a test can
spoil (a claim changed, or signed with a key the provider does not publish)."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any
from urllib.parse import parse_qsl, urlencode

from joserfc import jwt
from joserfc.jwk import RSAKey

CLIENT_ID = "as-at-oidc-double"
CLIENT_SECRET = "oidc-double-secret"


class OidcDouble:
    """The ASGI app.  ``spoil`` (claims to override) and ``foreign_key`` (sign with a key
    not in the JWKS) shape the next ID tokens."""

    def __init__(self, issuer: str) -> None:
        self.issuer = issuer
        self.key = RSAKey.generate_key(2048, parameters={"kid": "published"})
        self.foreign = RSAKey.generate_key(2048, parameters={"kid": "published"})
        self.spoil: dict[str, Any] = {}
        self.foreign_key = False
        self.nonces: dict[str, str] = {}

    def id_token(self, nonce: str) -> str:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": "oidc-user-7",
            "aud": CLIENT_ID,
            "iat": now,
            "exp": now + 300,
            "nonce": nonce,
            "email": "dana@example.com",
            "groups": ["ops"],
            **self.spoil,
        }
        key = self.foreign if self.foreign_key else self.key
        return jwt.encode({"alg": "RS256", "kid": "published"}, claims, key)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path == "/.well-known/openid-configuration":
            await _json(
                send,
                {
                    "issuer": self.issuer,
                    "authorization_endpoint": f"{self.issuer}/authorize",
                    "token_endpoint": f"{self.issuer}/token",
                    "jwks_uri": f"{self.issuer}/jwks",
                },
            )
        elif path == "/jwks":
            await _json(send, {"keys": [self.key.as_dict(private=False)]})
        elif path == "/authorize":
            params = dict(parse_qsl(scope["query_string"].decode()))
            code = secrets.token_urlsafe(8)
            self.nonces[code] = params["nonce"]
            target = (
                f"{params['redirect_uri']}?{urlencode({'code': code, 'state': params['state']})}"
            )
            await send(
                {
                    "type": "http.response.start",
                    "status": 302,
                    "headers": [(b"location", target.encode())],
                }
            )
            await send({"type": "http.response.body", "body": b""})
        elif path == "/token":
            body = b""
            while True:
                message = await receive()
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            form = dict(parse_qsl(body.decode()))
            nonce = self.nonces.pop(form.get("code", ""), "")
            answer = {
                "access_token": "upstream-at",
                "token_type": "Bearer",
                "id_token": self.id_token(nonce),
            }
            await _json(send, answer)
        else:
            await _json(send, {"error": "not_found"}, 404)


async def _json(send: Any, data: object, status: int = 200) -> None:
    body = json.dumps(data).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})
