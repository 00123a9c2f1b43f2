"""Client authentication at the token endpoint: ``client_secret_basic``,
``client_secret_post``, ``none`` and ``private_key_jwt`` (RFC 7523 §2.2)."""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

__all__ = [
    "JWT_ASSERTION_TYPE",
    "apply_client_auth",
    "basic_authorization",
    "choose_auth_method",
    "load_private_key",
    "sign_client_assertion",
]

JWT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def basic_authorization(client_id: str, client_secret: str) -> str:
    """RFC 6749 §2.3.1: both parts form-encoded, then ``id:secret`` in base64."""
    raw = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}"
    return "Basic " + base64.b64encode(raw.encode("utf-8")).decode("ascii")


def choose_auth_method(supported: Sequence[str], *, has_secret: bool, has_key: bool = False) -> str:
    """The method to use given what the AS advertises and what credentials we hold."""
    if has_key and "private_key_jwt" in supported:
        return "private_key_jwt"
    if has_secret:
        for method in ("client_secret_basic", "client_secret_post"):
            if method in supported:
                return method
        return "client_secret_basic"
    return "none"


def load_private_key(key: Any) -> Any:
    """A joserfc key from a PEM string/bytes, a JWK dict or a joserfc key."""
    from joserfc import jwk

    if isinstance(key, (str, bytes)):
        return jwk.import_key(key)
    if isinstance(key, dict):
        return jwk.import_key(key)
    return key


def sign_client_assertion(
    key: Any, *, client_id: str, audience: str, alg: str, lifetime_s: int = 300
) -> str:
    from joserfc import jwt

    now = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + lifetime_s,
        "jti": secrets.token_urlsafe(24),
    }
    header: dict[str, Any] = {"alg": alg}
    kid = getattr(key, "kid", None)
    if isinstance(kid, str):
        header["kid"] = kid
    return jwt.encode(header, claims, key, algorithms=[alg])


def apply_client_auth(
    method: str,
    form: dict[str, str],
    headers: dict[str, str],
    *,
    client_id: str,
    client_secret: str | None = None,
    private_key: Any = None,
    signing_alg: str = "ES256",
    assertion_audience: str | None = None,
) -> None:
    """Add the credentials for ``method`` to a token request's form and headers."""
    if method == "client_secret_basic":
        if client_secret is None:
            raise ValueError("client_secret_basic needs a client secret")
        headers["Authorization"] = basic_authorization(client_id, client_secret)
    elif method == "client_secret_post":
        if client_secret is None:
            raise ValueError("client_secret_post needs a client secret")
        form["client_id"] = client_id
        form["client_secret"] = client_secret
    elif method == "private_key_jwt":
        if private_key is None or assertion_audience is None:
            raise ValueError("private_key_jwt needs a private key and an audience")
        form["client_id"] = client_id
        form["client_assertion_type"] = JWT_ASSERTION_TYPE
        form["client_assertion"] = sign_client_assertion(
            private_key, client_id=client_id, audience=assertion_audience, alg=signing_alg
        )
    else:
        form["client_id"] = client_id
